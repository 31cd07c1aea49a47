#include "runtime/thread_pool.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "core/tick_clock.h"

namespace edgeopt::rt {
namespace {
// Trace slices: the profiler's cheap clock, on the steady_clock time line.
int64_t NowNs() { return TickClock::ToSteadyNs(TickClock::Now()); }
// About 50-100 microseconds of spinning before a worker sleeps.
constexpr int kSpinIterations = 20000;
// An idle worker gives its CPU away every ~2 microseconds while it spins: if it shares the CPU
// with the caller it would otherwise keep the caller off for a time slice.
constexpr int kSpinsPerYield = 64;
// A caller waiting for tasks that workers are running spins longer (~50 us) before it yields:
// on a busy machine a yield can cost it the CPU for a whole scheduling period.
constexpr int kCallerSpins = 2000;
// Task word of a task job: job id (24 bits) | next front task (20 bits) | end of the unclaimed
// range (20 bits). The caller claims from the front, workers from the back.
constexpr int kEndBits = 20;
constexpr uint64_t kEndMask = (uint64_t{1} << kEndBits) - 1;
constexpr int64_t kMaxTasks = int64_t{1} << kEndBits;
constexpr uint64_t kJobMask = (uint64_t{1} << 24) - 1;
inline uint64_t TaskWord(uint32_t job, uint64_t front, uint64_t end) {
  return (uint64_t{job} & kJobMask) << (2 * kEndBits) | front << kEndBits | end;
}
inline uint32_t WordJob(uint64_t w) { return static_cast<uint32_t>(w >> (2 * kEndBits)); }

inline void Relax(int spin) {
  if (spin % kSpinsPerYield == kSpinsPerYield - 1)
    std::this_thread::yield();
  else
    _mm_pause();
}

inline void CallerRelax(int spin) {
  if (spin >= kCallerSpins)
    Relax(spin);
  else
    _mm_pause();
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  Wake(false);
  for (auto& t : workers_) t.join();
  if (slot_map_) munmap(slot_map_, slot_map_bytes_);
}

bool ThreadPool::ReserveSlotScratch(size_t bytes) {
  if (bytes <= slot_bytes_) return true;
  constexpr size_t kPage = 4096;
  const size_t slot = (bytes + kPage - 1) / kPage * kPage;
  const size_t stride = slot + kSlotGap;
  const size_t total = kSlotGap + stride * static_cast<size_t>(num_threads_);
  // An anonymous mapping of its own: no other allocation shares the pages around the slots, and
  // the gaps stay inaccessible (address space only; a kernel that overruns its slot faults).
  void* map = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return false;
  for (int s = 0; s < num_threads_; ++s) {
    if (mprotect(static_cast<uint8_t*>(map) + kSlotGap + stride * static_cast<size_t>(s), slot, PROT_READ | PROT_WRITE) != 0) {
      munmap(map, total);
      return false;
    }
  }
  if (slot_map_) munmap(slot_map_, slot_map_bytes_);
  slot_map_ = map;
  slot_map_bytes_ = total;
  slot_base_ = static_cast<uint8_t*>(map) + kSlotGap;
  slot_stride_ = stride;
  slot_bytes_ = slot;
  // Touch the slots now so that the first invoke does not take their page faults.
  for (int s = 0; s < num_threads_; ++s) std::memset(SlotScratch(s), 0, slot);
  return true;
}

void ThreadPool::Wake(bool tasks) {
  const uint64_t counter = (generation_.load(std::memory_order_relaxed) >> 1) + 1;
  generation_.store(counter << 1 | (tasks ? 1 : 0), std::memory_order_seq_cst);
  // Only a sleeping worker needs the condition variable (a futex call); spinning ones see the
  // new generation. A worker counts itself in `sleepers_` before its last check of the
  // generation (both seq_cst), so either it sees the new generation or we see it sleeping; the
  // lock then waits until it is really blocked in wait() before notifying.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }
}

void ThreadPool::RunJob(int index) {
  if (sink_) {
    int64_t b = NowNs();
    (*job_)(index);
    int64_t e = NowNs();
    std::lock_guard<std::mutex> lock(sink_mu_);
    sink_->push_back({index, b, e});
  } else {
    (*job_)(index);
  }
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  while (true) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      Relax(spin);
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    if (g & 1) {
      StealTasks(index, static_cast<uint32_t>(g >> 1));
    } else {
      RunJob(index);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

void ThreadPool::RunOnAll(FunctionRef<void(int)> fn) {
  if (num_threads() == 1) {
    job_ = &fn;
    RunJob(0);
    job_ = nullptr;
    return;
  }
  job_ = &fn;
  pending_.store(num_threads_ - 1, std::memory_order_release);
  Wake(false);
  RunJob(0);
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) CallerRelax(spin);
  job_ = nullptr;
}

void ThreadPool::StealTasks(int index, uint32_t job) {
  // The caller takes tasks from the front of the range and workers from the back, so with two
  // threads each keeps the same part of the output from op to op (tasks are cut in output
  // order): what one op wrote stays in that core's cache for the next op to read.
  const bool front = index == 0;
  job &= kJobMask;
  while (true) {
    uint64_t w = task_word_.load(std::memory_order_acquire);
    if (WordJob(w) != job) break;
    const uint64_t f = (w >> kEndBits) & kEndMask, e = w & kEndMask;
    if (f >= e) break;
    const uint64_t t = front ? f : e - 1;
    const uint64_t claimed = front ? TaskWord(job, f + 1, e) : TaskWord(job, f, e - 1);
    if (!task_word_.compare_exchange_weak(w, claimed, std::memory_order_acq_rel)) continue;
    // The task is ours: the caller waits for it, so the job's function and the slice sink stay
    // valid until we count it done (and not a moment longer).
    std::vector<Slice>* sink = sink_;
    const int64_t begin = sink ? NowNs() : 0;
    (*task_fn_.load(std::memory_order_relaxed))(static_cast<int64_t>(t));
    if (sink) {
      const int64_t end = NowNs();
      std::lock_guard<std::mutex> lock(sink_mu_);
      sink->push_back({index, begin, end});
    }
    tasks_done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::ParallelTasks(int64_t n, FunctionRef<void(int64_t)> fn) {
  if (n <= 0) return;
  if (num_threads() == 1 || n == 1 || n >= kMaxTasks) {
    const int64_t b = sink_ ? NowNs() : 0;
    for (int64_t t = 0; t < n; ++t) fn(t);
    if (sink_) {
      std::lock_guard<std::mutex> lock(sink_mu_);
      sink_->push_back({0, b, NowNs()});
    }
    return;
  }
  // Publish the job (its id is the generation counter it runs under), then wake the workers.
  const uint32_t job = static_cast<uint32_t>((generation_.load(std::memory_order_relaxed) >> 1) + 1);
  task_fn_.store(&fn, std::memory_order_relaxed);
  tasks_done_.store(0, std::memory_order_relaxed);
  task_word_.store(TaskWord(job, 0, static_cast<uint64_t>(n)), std::memory_order_release);
  Wake(true);
  StealTasks(0, job);
  // Only tasks a worker has claimed remain; wait for those, not for idle workers.
  for (int spin = 0; tasks_done_.load(std::memory_order_acquire) != n; ++spin) CallerRelax(spin);
  task_word_.store(TaskWord(job, 0, 0), std::memory_order_release);
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t parts = std::min<int64_t>(num_threads(), (n + min_chunk - 1) / min_chunk);
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  ParallelTasks(parts, [&](int64_t t) {
    const int64_t begin = n * t / parts;
    const int64_t end = n * (t + 1) / parts;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace edgeopt::rt
