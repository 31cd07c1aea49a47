// TransformTensorBilinear's per-pixel channel blend on AVX-512 (ref.cc runs it when the CPU has
// AVX-512 and reference kernels are not forced): 8 channels per step in double lanes, the same
// operations in the same precisions as the scalar loop, so the same bits:
//   upper = float((1.0 - right) * q11 + float(right * q21))
//   lower = float((1.0 - right) * q12 + float(right * q22))
//   out   = float(float(lower_w * lower) + (1.0 - lower_w) * upper)
// Each product stays a separate rounding (Opaque: no fused multiply-add), as in the scalar code,
// which is compiled without FMA.
#include "kernels/common/avx512_intrin.h"
#include "kernels/common/opaque.h"
#include "kernels/mediapipe/mediapipe.h"

namespace edgeopt::kernels::mediapipe {

void BilinearChannelsAvx512(const float* p11, const float* p21, const float* p12, const float* p22, float right,
                            float lower_w, int channels, float* out) {
  const __m512d one_minus_right = _mm512_set1_pd(1.0 - static_cast<double>(right));
  const __m512d one_minus_lower = _mm512_set1_pd(1.0 - static_cast<double>(lower_w));
  const __m256 vright = _mm256_set1_ps(right), vlower = _mm256_set1_ps(lower_w);
  for (int z = 0; z < channels; z += 8) {
    const __mmask8 k = channels - z >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << (channels - z)) - 1);
    const __m256 zero = _mm256_setzero_ps();
    const __m256 q11 = _mm256_maskz_loadu_ps(k, p11 + z);
    const __m256 q21 = p21 ? _mm256_maskz_loadu_ps(k, p21 + z) : zero;
    const __m256 q12 = p12 ? _mm256_maskz_loadu_ps(k, p12 + z) : zero;
    const __m256 q22 = p22 ? _mm256_maskz_loadu_ps(k, p22 + z) : zero;
    const __m512d upper_sum = _mm512_add_pd(Opaque(_mm512_mul_pd(one_minus_right, _mm512_cvtps_pd(q11))),
                                            _mm512_cvtps_pd(Opaque(_mm256_mul_ps(vright, q21))));
    const __m512d lower_sum = _mm512_add_pd(Opaque(_mm512_mul_pd(one_minus_right, _mm512_cvtps_pd(q12))),
                                            _mm512_cvtps_pd(Opaque(_mm256_mul_ps(vright, q22))));
    const __m256 upper = _mm512_cvtpd_ps(upper_sum), lower = _mm512_cvtpd_ps(lower_sum);
    const __m512d sum = _mm512_add_pd(_mm512_cvtps_pd(Opaque(_mm256_mul_ps(vlower, lower))),
                                      Opaque(_mm512_mul_pd(one_minus_lower, _mm512_cvtps_pd(upper))));
    _mm256_mask_storeu_ps(out + z, k, _mm512_cvtpd_ps(sum));
  }
}

}  // namespace edgeopt::kernels::mediapipe
