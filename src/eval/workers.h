// Runs one job per worker: worker 0 on the calling thread, workers 1..n-1 on threads of their
// own, and returns once all have finished. The per-sample loops of eval and compare use it.
#pragma once

#include <thread>
#include <vector>

namespace edgeopt::eval {

template <typename Work>
void RunWorkers(int workers, Work&& work) {
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back([&work, w] { work(w); });
  work(0);
  for (auto& t : pool) t.join();
}

}  // namespace edgeopt::eval
