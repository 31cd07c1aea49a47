#include <immintrin.h>

#include <chrono>

#include "peak.h"

namespace edgeopt::bench {
namespace {
double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

double PeakFp32FmaAvx2() {
  constexpr int64_t kIters = 50'000'000;
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm256_fmadd_ps(a0, x, y); a1 = _mm256_fmadd_ps(a1, x, y); a2 = _mm256_fmadd_ps(a2, x, y);
    a3 = _mm256_fmadd_ps(a3, x, y); a4 = _mm256_fmadd_ps(a4, x, y); a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y); a7 = _mm256_fmadd_ps(a7, x, y); a8 = _mm256_fmadd_ps(a8, x, y);
    a9 = _mm256_fmadd_ps(a9, x, y);
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9));
  }
  auto t1 = std::chrono::steady_clock::now();
  volatile float sink = _mm256_cvtss_f32(_mm256_add_ps(_mm256_add_ps(a0, a5), a9));
  (void)sink;
  return static_cast<double>(kIters) * 10 * 8 * 2 / Seconds(t0, t1);
}

double PeakInt8Avx2() {
  constexpr int64_t kIters = 50'000'000;
  const __m256i ones = _mm256_set1_epi16(1);
  // Six different signed operands passed through an empty asm every iteration: with one
  // loop-invariant pair the compiler would compute vpmaddubsw / vpmaddwd once (or once per
  // iteration for all six chains) and the loop would measure mostly the vpaddd.
  __m256i u = _mm256_set1_epi8(3), s0 = _mm256_set1_epi8(-2), s1 = _mm256_set1_epi8(-3), s2 = _mm256_set1_epi8(4),
          s3 = _mm256_set1_epi8(-5), s4 = _mm256_set1_epi8(6), s5 = _mm256_set1_epi8(-7);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s0), ones));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s1), ones));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s2), ones));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s3), ones));
    a4 = _mm256_add_epi32(a4, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s4), ones));
    a5 = _mm256_add_epi32(a5, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s5), ones));
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(u), "+x"(s0), "+x"(s1),
                     "+x"(s2), "+x"(s3), "+x"(s4), "+x"(s5));
  }
  auto t1 = std::chrono::steady_clock::now();
  volatile int sink = _mm256_extract_epi32(_mm256_add_epi32(a0, a5), 0);
  (void)sink;
  return static_cast<double>(kIters) * 6 * 32 * 2 / Seconds(t0, t1);
}

}  // namespace edgeopt::bench
