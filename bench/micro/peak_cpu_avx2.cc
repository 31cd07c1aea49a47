// The AVX2 FMA peak of bench/peak_avx2.cc's loop, timed in this thread's CPU time, so kernel
// benchmarks timed in CPU time can state their share of peak on a loaded machine.
#include <immintrin.h>
#include <time.h>

#include <cstdint>

namespace edgeopt::bench {

double PeakFp32FmaAvx2CpuTime() {
  constexpr int64_t kIters = 20'000'000;
  __m256 a0 = _mm256_set1_ps(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  timespec t0, t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm256_fmadd_ps(a0, x, y); a1 = _mm256_fmadd_ps(a1, x, y); a2 = _mm256_fmadd_ps(a2, x, y);
    a3 = _mm256_fmadd_ps(a3, x, y); a4 = _mm256_fmadd_ps(a4, x, y); a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y); a7 = _mm256_fmadd_ps(a7, x, y); a8 = _mm256_fmadd_ps(a8, x, y);
    a9 = _mm256_fmadd_ps(a9, x, y);
    __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9));
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  volatile float sink = _mm256_cvtss_f32(_mm256_add_ps(_mm256_add_ps(a0, a5), a9));
  (void)sink;
  const double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  return static_cast<double>(kIters) * 10 * 8 * 2 / s;
}

}  // namespace edgeopt::bench
