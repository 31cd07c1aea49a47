// Splitting a kernel's work into tasks over the interpreter's thread pool.
//
// Machines are shared and threads get preempted, so instead of one static range per thread every
// thread takes the next task from a shared counter (ThreadPool::ParallelTasks): a thread that was
// descheduled simply does fewer tasks, and the caller never waits for one that did not start.
// Callers size tasks (a few per thread) so the counter costs nothing next to the work.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/thread_pool.h"

namespace edgeopt::kernels {

template <typename Fn>
void RunTasks(rt::ThreadPool* pool, int64_t num_tasks, Fn&& fn) {
  if (num_tasks <= 0) return;
  if (!pool || pool->num_threads() == 1 || num_tasks == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  pool->ParallelTasks(num_tasks, fn);
}

// Number of tasks to cut `units` of work into: one when single-threaded, otherwise about
// `per_thread` per thread, never more than `units` and never a task below `min_units`.
inline int64_t TaskCount(int threads, int64_t units, int64_t min_units, int per_thread = 4) {
  if (threads <= 1 || units <= 1) return 1;
  const int64_t by_size = std::max<int64_t>(1, units / std::max<int64_t>(1, min_units));
  return std::max<int64_t>(1, std::min<int64_t>({units, by_size, int64_t{threads} * per_thread}));
}

}  // namespace edgeopt::kernels
