#include <immintrin.h>

#include <chrono>

#include "peak.h"

namespace edgeopt::bench {

double PeakFp32FmaAvx512() {
  constexpr int64_t kIters = 50'000'000;
  __m512 a0 = _mm512_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm512_fmadd_ps(a0, x, y); a1 = _mm512_fmadd_ps(a1, x, y); a2 = _mm512_fmadd_ps(a2, x, y);
    a3 = _mm512_fmadd_ps(a3, x, y); a4 = _mm512_fmadd_ps(a4, x, y); a5 = _mm512_fmadd_ps(a5, x, y);
    a6 = _mm512_fmadd_ps(a6, x, y); a7 = _mm512_fmadd_ps(a7, x, y); a8 = _mm512_fmadd_ps(a8, x, y);
    a9 = _mm512_fmadd_ps(a9, x, y);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9));
  }
  auto t1 = std::chrono::steady_clock::now();
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(a0, a9));
  volatile float sink = lanes[0];
  (void)sink;
  return static_cast<double>(kIters) * 10 * 16 * 2 / std::chrono::duration<double>(t1 - t0).count();
}

double PeakInt8Avx512Vnni() {
  // 12 independent accumulators: vpdpbusd has a 5-cycle latency at 2 per cycle on Intel cores
  // (Sapphire Rapids), so 8 chains measured only ~0.7 of the peak there.
  constexpr int64_t kIters = 40'000'000;
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
          a9 = a0, a10 = a0, a11 = a0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm512_dpbusd_epi32(a0, u, s); a1 = _mm512_dpbusd_epi32(a1, u, s);
    a2 = _mm512_dpbusd_epi32(a2, u, s); a3 = _mm512_dpbusd_epi32(a3, u, s);
    a4 = _mm512_dpbusd_epi32(a4, u, s); a5 = _mm512_dpbusd_epi32(a5, u, s);
    a6 = _mm512_dpbusd_epi32(a6, u, s); a7 = _mm512_dpbusd_epi32(a7, u, s);
    a8 = _mm512_dpbusd_epi32(a8, u, s); a9 = _mm512_dpbusd_epi32(a9, u, s);
    a10 = _mm512_dpbusd_epi32(a10, u, s); a11 = _mm512_dpbusd_epi32(a11, u, s);
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8),
                     "+v"(a9), "+v"(a10), "+v"(a11));
  }
  auto t1 = std::chrono::steady_clock::now();
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, _mm512_add_epi32(a0, a11));
  volatile int sink = lanes[0];
  (void)sink;
  return static_cast<double>(kIters) * 12 * 64 * 2 / std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace edgeopt::bench
