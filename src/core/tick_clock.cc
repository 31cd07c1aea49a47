#include "core/tick_clock.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace edgeopt {
namespace {

// CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every P-/C-state.
bool HasInvariantTsc() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;  // int in clang, unsigned in GCC
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

}  // namespace

int64_t TickClock::SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const TickClock::Calib& TickClock::Calibration() {
  // Computed once (thread-safe static initialisation) and never changed: a constant of the
  // machine, not mutable state.
  static const Calib calib = [] {
    Calib c;
#if defined(__x86_64__) || defined(__i386__)
    if (HasInvariantTsc()) {
      // Pair a TSC read with the steady_clock read it brackets most tightly, twice, ~2 ms apart.
      auto pair = [](uint64_t& ticks, int64_t& ns) {
        uint64_t best = ~uint64_t{0};
        for (int i = 0; i < 5; ++i) {
          const uint64_t t0 = __rdtsc();
          const int64_t n = SteadyNs();
          const uint64_t t1 = __rdtsc();
          if (t1 - t0 < best) {
            best = t1 - t0;
            ticks = t0 + (t1 - t0) / 2;
            ns = n;
          }
        }
      };
      uint64_t tick0 = 0, tick1 = 0;
      int64_t ns0 = 0, ns1 = 0;
      pair(tick0, ns0);
      while (SteadyNs() - ns0 < 2'000'000) {
      }
      pair(tick1, ns1);
      if (tick1 > tick0 && ns1 > ns0) {
        c.use_tsc = true;
        c.ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(tick1 - tick0);
        c.base_ticks = tick1;
        c.base_ns = ns1;
      }
    }
#endif
    return c;
  }();
  return calib;
}

}  // namespace edgeopt
