#include <immintrin.h>

#include <chrono>

#include "peak.h"

namespace edgeopt::bench {

double PeakInt8AvxVnni() {
  // 12 independent accumulators, as PeakInt8Avx512Vnni (5-cycle latency, 2 per cycle).
  constexpr int64_t kIters = 40'000'000;
  const __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
          a9 = a0, a10 = a0, a11 = a0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm256_dpbusd_avx_epi32(a0, u, s); a1 = _mm256_dpbusd_avx_epi32(a1, u, s);
    a2 = _mm256_dpbusd_avx_epi32(a2, u, s); a3 = _mm256_dpbusd_avx_epi32(a3, u, s);
    a4 = _mm256_dpbusd_avx_epi32(a4, u, s); a5 = _mm256_dpbusd_avx_epi32(a5, u, s);
    a6 = _mm256_dpbusd_avx_epi32(a6, u, s); a7 = _mm256_dpbusd_avx_epi32(a7, u, s);
    a8 = _mm256_dpbusd_avx_epi32(a8, u, s); a9 = _mm256_dpbusd_avx_epi32(a9, u, s);
    a10 = _mm256_dpbusd_avx_epi32(a10, u, s); a11 = _mm256_dpbusd_avx_epi32(a11, u, s);
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                     "+x"(a9), "+x"(a10), "+x"(a11));
  }
  auto t1 = std::chrono::steady_clock::now();
  volatile int sink = _mm256_extract_epi32(_mm256_add_epi32(a0, a11), 0);
  (void)sink;
  return static_cast<double>(kIters) * 12 * 32 * 2 / std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace edgeopt::bench
