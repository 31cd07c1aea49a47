// A cheap monotonic clock for profiling: the x86 time-stamp counter when it runs at a constant
// rate (invariant TSC), otherwise std::chrono::steady_clock. Reading it costs a few nanoseconds
// (a steady_clock read costs several times more), which matters when ops take 100 ns.
//
// Ticks convert to nanoseconds on the steady_clock time line, so profiler timestamps and other
// steady_clock timestamps (thread-pool slices, trace origins) can be mixed. The rate is
// calibrated once per process, on first use, against steady_clock (about 2 ms).
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace edgeopt {

class TickClock {
 public:
  // The current tick count. Inline and branch-free apart from the one-time choice of source.
  static inline uint64_t Now() { return Read(Calibration().use_tsc); }
  // Now() for a caller that cached UsesTsc(): no check of the calibration, so a read in a hot
  // loop is the clock read and nothing else. The TSC read waits for the instructions before it
  // (LFENCE; RDTSC, as Linux's ordered read): a plain RDTSC may run while the work before it is
  // still executing, so each op boundary smeared part of an op into its neighbour and the tail
  // of the last op out of the invoke (measured, bench --profile on hello_world_float, 3 ops of
  // ~25 ns, AMD Zen 5 VM: per-op sum 91-96.5% of the unprofiled invoke with plain reads, 6-7 ns
  // of it outside every op; 96.5-98.6% in 11 runs with this read, 2-3 ns outside; models of
  // 4 us and more within 0.2% either way). It costs ~17 ns per read instead of ~11 back to back.
  static inline uint64_t Read(bool use_tsc) {
#if defined(__x86_64__) || defined(__i386__)
    if (use_tsc) {
      _mm_lfence();
      return __rdtsc();
    }
#else
    (void)use_tsc;
#endif
    return static_cast<uint64_t>(SteadyNs());
  }
  static bool UsesTsc() { return Calibration().use_tsc; }
  // Converts tick counts read by Now() to nanoseconds on the steady_clock time line; get one
  // with Conversion() and reuse it to convert many ticks cheaply.
  struct Converter {
    uint64_t base_ticks = 0;
    int64_t base_ns = 0;
    double ns_per_tick = 1.0;
    int64_t ToSteadyNs(uint64_t ticks) const {
      return base_ns + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(ticks - base_ticks)) * ns_per_tick);
    }
  };
  static Converter Conversion() {
    const Calib& c = Calibration();
    return Converter{c.base_ticks, c.base_ns, c.ns_per_tick};
  }
  static int64_t ToSteadyNs(uint64_t ticks) { return Conversion().ToSteadyNs(ticks); }
  // Length of a tick interval in nanoseconds.
  static double ToNs(uint64_t ticks) { return static_cast<double>(ticks) * Calibration().ns_per_tick; }
  // "tsc" or "steady_clock".
  static const char* Source() { return Calibration().use_tsc ? "tsc" : "steady_clock"; }

  static int64_t SteadyNs();

 private:
  struct Calib {
    bool use_tsc = false;
    double ns_per_tick = 1.0;
    uint64_t base_ticks = 0;
    int64_t base_ns = 0;
  };
  static const Calib& Calibration();
};

}  // namespace edgeopt
