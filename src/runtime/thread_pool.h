// A small fork-join pool for parallelism inside ops. The calling thread takes part, so a pool
// of N threads starts N-1 workers. Workers spin briefly after each job (ops come back to back
// during an invoke) and then sleep on a condition variable, so an idle interpreter costs nothing.
//
// Shared and oversubscribed CPUs (CI machines, phones with busy cores) deschedule workers for a
// whole time slice. ParallelTasks and ParallelFor therefore never wait for a worker that has not
// started: the caller takes tasks from the same counter as the workers, and returns as soon as
// every task is done, whoever ran it. A spinning worker yields its CPU now and then, so that
// when it shares a CPU with the caller it does not take half of the caller's time.
//
// The caller takes tasks from the front of a job and workers from the back. Kernels cut tasks
// in output order, so with two threads each thread computes the same part of every op's output
// (the top or the bottom of the image), and reads input its own core has just written: one op
// to the next, the activations stay in that core's L2 instead of crossing cores (vww_96 float at
// 2 threads 0.92x, MobileNetV1 0.25 0.89x the time of first-come claiming).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

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

  // The threads jobs run on now: 1 while serial (SetSerial), else the pool's size.
  int num_threads() const { return serial_ ? 1 : num_threads_; }
  // The pool's size, serial or not (per-slot scratch, reports).
  int pool_threads() const { return num_threads_; }

  // While set, every job runs on the calling thread alone and num_threads() is 1, so kernels
  // cut their work as for one thread: the interpreter sets it around ops that measured faster
  // unsplit (SubgraphExec's thread tuning). Set and cleared only by the thread that calls jobs.
  void SetSerial(bool on) { serial_ = on; }
  bool serial() const { return serial_; }

  // The job functions take a FunctionRef: any callable, referenced without a copy, so that no
  // job allocates memory (Invoke must not allocate).

  // Runs fn(thread_index) once on every thread (caller is index 0) and waits for all.
  void RunOnAll(FunctionRef<void(int)> fn);

  // Splits [0, n) into at most num_threads() contiguous ranges of at least `min_chunk` items
  // and runs fn(begin, end) on each in parallel. Runs inline when there is one range.
  void ParallelFor(int64_t n, int64_t min_chunk, FunctionRef<void(int64_t, int64_t)> fn);

  // Runs fn(task) once for every task in [0, n), on whichever threads are free to take tasks
  // (the caller too); returns when all have run. Cut work into a few tasks per thread so a
  // thread that starts late, or runs slower, does fewer of them. Runs inline for one thread.
  void ParallelTasks(int64_t n, FunctionRef<void(int64_t)> fn);

  // While set, every job's per-thread slices are appended here (caller owns and clears it).
  void SetSliceSink(std::vector<Slice>* sink) { sink_ = sink; }

  // Per-slot scratch: kernels that give each share of an op its own buffer (slot s: the s-th
  // of at most num_threads() shares, e.g. ParallelFor's ranges) take slot s's buffer here
  // instead of cutting one block of the arena into adjacent pieces. Every slot's buffer lies
  // kSlotGap bytes away from the others' and from any other memory: on a Zen 5 VM, two threads
  // writing buffers that are close in the address space slowed each other down even with no
  // cache line in common (a one-op int8 DEPTHWISE_CONV_2D at 2 threads took 1.9-2x the time with
  // its two 66 KB rings adjacent than with them 128 KB or more apart: 1.06x slower at a 4 KB gap,
  // 1.35x at 16 KB, 1.7x at 64 KB; not on every run of the host, and not when two processes ran
  // the same op at once; in-process A/B, medians of 200 alternated pairs).
  // Reserve at Prepare (it allocates when the buffers grow; the memory is touched then, not at
  // invoke); kernels of one interpreter share the buffers, since its ops run one at a time.
  // False when the memory could not be mapped (the buffers are then as before).
  static constexpr size_t kSlotGap = size_t{256} << 10;
  bool ReserveSlotScratch(size_t bytes);
  // Slot s's buffer (page aligned, slot_scratch_bytes() bytes; s < num_threads()). The gaps
  // around the slots are mapped inaccessible: a kernel that runs past its slot faults.
  uint8_t* SlotScratch(int slot) const { return slot_base_ + static_cast<size_t>(slot) * slot_stride_; }
  size_t slot_scratch_bytes() const { return slot_bytes_; }

 private:
  void WorkerLoop(int index);
  void RunJob(int index);
  void Wake(bool tasks);
  // Takes and runs tasks of job `job` until none are left (or a newer job replaced it).
  void StealTasks(int index, uint32_t job);

  const int num_threads_;
  bool serial_ = false;  // SetSerial
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Low bit: the job is a task job (ParallelTasks), whose caller does not wait for workers.
  // Each counter that threads write has its own cache line: spinning workers read generation_
  // while the caller and workers update task_word_ / tasks_done_ / pending_, and sharing a line
  // would make every task claim wait for the line to come back from a spinning worker.
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};  // workers blocked (or about to block) on cv_
  std::atomic<bool> stop_{false};
  const FunctionRef<void(int)>* job_ = nullptr;  // RunOnAll's function, while it runs
  // Task jobs: the job id (the generation's counter, 24 bits) and the unclaimed range [front,
  // end) of tasks (thread_pool.cc). A worker may claim a task only while the word still names
  // its job, so a late worker never touches a finished job; the caller empties the range when
  // the job completes.
  alignas(64) std::atomic<uint64_t> task_word_{0};
  alignas(64) std::atomic<int64_t> tasks_done_{0};
  alignas(64) std::atomic<const FunctionRef<void(int64_t)>*> task_fn_{nullptr};
  std::vector<Slice>* sink_ = nullptr;
  std::mutex sink_mu_;
  // ReserveSlotScratch's mapping: [gap][slot 0][gap][slot 1]...[gap].
  void* slot_map_ = nullptr;
  size_t slot_map_bytes_ = 0;
  uint8_t* slot_base_ = nullptr;
  size_t slot_stride_ = 0, slot_bytes_ = 0;
};

}  // namespace edgeopt::rt
