#include "core_link.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace edgeopt::bench {
namespace {
using Clock = std::chrono::steady_clock;

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// Sum of one byte per cache line: the read that the bandwidth figures time.
int64_t TouchLines(const std::vector<char>& buf) {
  int64_t sum = 0;
  for (size_t i = 0; i < buf.size(); i += 64) sum += buf[i];
  return sum;
}
}  // namespace

std::string CoreLink::ToString() const {
  if (!measured) return "core-to-core: not measured (this process may run on one CPU only)";
  char line[200];
  std::snprintf(line, sizeof(line),
                "core-to-core (CPU %d <-> %d): cache-line round trip %.0f ns; reading 4 MiB the other CPU wrote "
                "%.0f GB/s (own writes %.0f GB/s)",
                cpu_a, cpu_b, roundtrip_ns, remote_read_gbs, local_read_gbs);
  return line;
}

CoreLink MeasureCoreLink() {
  CoreLink r;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return r;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) return r;
  r.cpu_a = cpus[0];
  r.cpu_b = cpus[1];

  // Everything runs on two fresh threads, so the caller's own affinity is left alone.
  std::thread main_side([&] {
    if (!PinTo(r.cpu_a)) return;
    constexpr int kTrips = 20000;
    constexpr int kRounds = 12;
    constexpr size_t kBytes = size_t{4} << 20;
    alignas(64) std::atomic<int> flag{0};
    std::atomic<int> stage{0};
    std::vector<char> buf(kBytes);
    bool pinned_b = true;
    std::thread other([&] {
      pinned_b = PinTo(r.cpu_b);
      for (int i = 0; i < kTrips * 5; ++i) {
        while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
        }
        flag.store(2 * i + 2, std::memory_order_release);
      }
      for (int k = 0; k < kRounds; ++k) {
        while (stage.load(std::memory_order_acquire) != 2 * k + 1) {
        }
        std::memset(buf.data(), k + 1, buf.size());
        stage.store(2 * k + 2, std::memory_order_release);
      }
    });
    std::vector<double> trips;
    for (int run = 0; run < 5; ++run) {
      const auto b = Clock::now();
      for (int i = run * kTrips; i < (run + 1) * kTrips; ++i) {
        flag.store(2 * i + 1, std::memory_order_release);
        while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
        }
      }
      trips.push_back(std::chrono::duration<double, std::nano>(Clock::now() - b).count() / kTrips);
    }
    std::sort(trips.begin(), trips.end());
    r.roundtrip_ns = trips[2];
    int64_t sink = 0;
    double remote_s = 1e30, local_s = 1e30;
    for (int k = 0; k < kRounds; ++k) {
      stage.store(2 * k + 1, std::memory_order_release);
      while (stage.load(std::memory_order_acquire) != 2 * k + 2) {
      }
      const auto b = Clock::now();
      sink += TouchLines(buf);
      remote_s = std::min(remote_s, std::chrono::duration<double>(Clock::now() - b).count());
    }
    other.join();
    for (int k = 0; k < kRounds; ++k) {
      std::memset(buf.data(), k + 2, buf.size());
      const auto b = Clock::now();
      sink += TouchLines(buf);
      local_s = std::min(local_s, std::chrono::duration<double>(Clock::now() - b).count());
    }
    r.remote_read_gbs = sink == -1 ? 0 : kBytes / remote_s / 1e9;
    r.local_read_gbs = kBytes / local_s / 1e9;
    r.measured = pinned_b;
  });
  main_side.join();
  return r;
}

}  // namespace edgeopt::bench
