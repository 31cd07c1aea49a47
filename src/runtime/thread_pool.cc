#include "runtime/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace edgeopt::rt {
namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// About 50-100 microseconds of spinning before a worker sleeps.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
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
      _mm_pause();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    RunJob(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::RunOnAll(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    job_ = &fn;
    RunJob(0);
    job_ = nullptr;
    return;
  }
  job_ = &fn;
  pending_.store(num_threads_ - 1, std::memory_order_release);
  {
    // Taking the lock orders the generation bump with sleeping workers' predicate checks.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  RunJob(0);
  while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
  job_ = nullptr;
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t parts = std::min<int64_t>(num_threads_, (n + min_chunk - 1) / min_chunk);
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  RunOnAll([&](int t) {
    if (t >= parts) return;
    const int64_t begin = n * t / parts;
    const int64_t end = n * (t + 1) / parts;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace edgeopt::rt
