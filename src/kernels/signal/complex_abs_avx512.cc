// COMPLEX_ABS of complex64 on AVX-512: |re + i·im| as glibc's cabsf/hypotf computes it (which
// std::abs of the reference kernel calls): in double, sqrt(re² + im²) rounded to float — both
// squares are exact in double and the sum rounds once, so the values are the reference's bit
// for bit; an infinite part gives +inf even next to a NaN (as hypotf).
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/signal/signal.h"

namespace edgeopt::kernels {

void ComplexAbsAvx512(const float* interleaved, float* out, int64_t n) {
  const __m512d inf = _mm512_set1_pd(__builtin_inf());
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t left = n - i;
    const __mmask8 m = left >= 8 ? static_cast<__mmask8>(0xff) : static_cast<__mmask8>((1u << left) - 1u);
    const __mmask16 m2 = left >= 8 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (2 * left)) - 1u);
    // 8 complex values: re0 im0 re1 im1 ... -> doubles, squares, pairwise sums.
    const __m512 v = _mm512_maskz_loadu_ps(m2, interleaved + 2 * i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    const __m512d lo2 = _mm512_mul_pd(lo, lo), hi2 = _mm512_mul_pd(hi, hi);
    // re² + im² of each pair: even lanes + odd lanes, in value order.
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512d re2 = _mm512_permutex2var_pd(lo2, even, hi2), im2 = _mm512_permutex2var_pd(lo2, odd, hi2);
    __m512d r = _mm512_sqrt_pd(_mm512_add_pd(re2, im2));
    // An infinite part: +inf (the squares are then +inf too, but a NaN beside it would win).
    const __m512d re = _mm512_permutex2var_pd(lo, even, hi), im = _mm512_permutex2var_pd(lo, odd, hi);
    const __mmask8 any_inf = _mm512_cmp_pd_mask(_mm512_abs_pd(re), inf, _CMP_EQ_OQ) |
                             _mm512_cmp_pd_mask(_mm512_abs_pd(im), inf, _CMP_EQ_OQ);
    r = _mm512_mask_mov_pd(r, any_inf, inf);
    _mm256_mask_storeu_ps(out + i, m, _mm512_cvtpd_ps(r));
  }
}

}  // namespace edgeopt::kernels
