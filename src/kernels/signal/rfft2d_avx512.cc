// RowStagesAvx512 (signal.h): the butterflies of span 8 with 4-lane vectors, wider spans with
// 8-lane vectors over k (the twiddles of a stage are contiguous).
#include <immintrin.h>

#include "kernels/signal/signal.h"

namespace edgeopt::kernels {

void RowStagesAvx512(double* re, double* im, int n, const double* tw_re, const double* tw_im) {
  {
    const __m256d wr = _mm256_loadu_pd(tw_re + 3), wi = _mm256_loadu_pd(tw_im + 3);
    for (int i = 0; i < n; i += 8) {
      const __m256d ar = _mm256_loadu_pd(re + i), ai = _mm256_loadu_pd(im + i);
      const __m256d br = _mm256_loadu_pd(re + i + 4), bi = _mm256_loadu_pd(im + i + 4);
      const __m256d vr = _mm256_fmsub_pd(br, wr, _mm256_mul_pd(bi, wi));
      const __m256d vi = _mm256_fmadd_pd(br, wi, _mm256_mul_pd(bi, wr));
      _mm256_storeu_pd(re + i, _mm256_add_pd(ar, vr));
      _mm256_storeu_pd(im + i, _mm256_add_pd(ai, vi));
      _mm256_storeu_pd(re + i + 4, _mm256_sub_pd(ar, vr));
      _mm256_storeu_pd(im + i + 4, _mm256_sub_pd(ai, vi));
    }
  }
  for (int len = 16; len <= n; len <<= 1) {
    const int half = len / 2;
    const double* wr = tw_re + half - 1;
    const double* wi = tw_im + half - 1;
    for (int i = 0; i < n; i += len) {
      double* ar = re + i;
      double* ai = im + i;
      double* br = re + i + half;
      double* bi = im + i + half;
      for (int k = 0; k < half; k += 8) {
        const __m512d w_r = _mm512_loadu_pd(wr + k), w_i = _mm512_loadu_pd(wi + k);
        const __m512d b_r = _mm512_loadu_pd(br + k), b_i = _mm512_loadu_pd(bi + k);
        const __m512d a_r = _mm512_loadu_pd(ar + k), a_i = _mm512_loadu_pd(ai + k);
        const __m512d vr = _mm512_fmsub_pd(b_r, w_r, _mm512_mul_pd(b_i, w_i));
        const __m512d vi = _mm512_fmadd_pd(b_r, w_i, _mm512_mul_pd(b_i, w_r));
        _mm512_storeu_pd(ar + k, _mm512_add_pd(a_r, vr));
        _mm512_storeu_pd(ai + k, _mm512_add_pd(a_i, vi));
        _mm512_storeu_pd(br + k, _mm512_sub_pd(a_r, vr));
        _mm512_storeu_pd(bi + k, _mm512_sub_pd(a_i, vi));
      }
    }
  }
}

}  // namespace edgeopt::kernels
