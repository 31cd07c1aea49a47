// A small fork-join pool for parallelism inside ops. The calling thread takes part, so a pool
// of N threads starts N-1 workers. Workers spin briefly after each job (ops come back to back
// during an invoke) and then sleep on a condition variable, so an idle interpreter costs nothing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace edgeopt::rt {

class ThreadPool {
 public:
  // Time slices each thread spent in jobs, for traces (recorded only when a sink is set).
  struct Slice {
    int thread = 0;
    int64_t begin_ns = 0;  // steady_clock nanoseconds
    int64_t end_ns = 0;
  };

  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(thread_index) once on every thread (caller is index 0) and waits for all.
  void RunOnAll(const std::function<void(int)>& fn);

  // Splits [0, n) into at most num_threads() contiguous ranges of at least `min_chunk` items
  // and runs fn(begin, end) on each in parallel. Runs inline when there is one range.
  void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

  // While set, every job's per-thread slices are appended here (caller owns and clears it).
  void SetSliceSink(std::vector<Slice>* sink) { sink_ = sink; }

 private:
  void WorkerLoop(int index);
  void RunJob(int index);

  const int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* job_ = nullptr;
  std::vector<Slice>* sink_ = nullptr;
  std::mutex sink_mu_;
};

}  // namespace edgeopt::rt
