// The AVX-512 loop of the ADD + PRELU fusion (add_prelu_f32.cc).
#include "kernels/common/avx512_intrin.h"
#include <algorithm>
#include <cmath>

#include "kernels/common/vec_f32.h"
#include "kernels/fused/fused.h"

namespace edgeopt::kernels::fused {
namespace {

// s * alpha where s is not >= 0 (NaN included: NaN * alpha is NaN, as the reference's select).
inline __m512 Prelu(__m512 s, __m512 alpha) {
  const __mmask16 neg = static_cast<__mmask16>(~_mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GE_OQ));
  return _mm512_mask_mul_ps(s, neg, s, alpha);
}

// Prelu(clamp(a + b)) (the clamp for kClamp).
template <bool kClamp>
inline __m512 AddPrelu(__m512 a, __m512 b, __m512 alpha, __m512 lo, __m512 hi) {
  __m512 s = _mm512_add_ps(a, b);
  if constexpr (kClamp) s = _mm512_min_ps(hi, _mm512_max_ps(lo, s));
  return Prelu(s, alpha);
}

template <bool kClamp>
void Run(const float* a, const float* b, const float* alpha, int c, float* out, int64_t pixels, __m512 lo, __m512 hi) {
  if (c % 16 == 0) {
    // Whole vectors, no masks; 16 channels: one alpha vector for the flat arrays.
    if (c == 16) {
      const __m512 al = _mm512_loadu_ps(alpha);
      for (int64_t v = 0; v < pixels; ++v)
        _mm512_storeu_ps(out + 16 * v, AddPrelu<kClamp>(_mm512_loadu_ps(a + 16 * v), _mm512_loadu_ps(b + 16 * v), al, lo, hi));
      return;
    }
    for (int64_t p = 0; p < pixels; ++p, a += c, b += c, out += c)
      for (int j = 0; j < c; j += 16)
        _mm512_storeu_ps(out + j, AddPrelu<kClamp>(_mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j), _mm512_loadu_ps(alpha + j), lo, hi));
    return;
  }
  for (int64_t p = 0; p < pixels; ++p, a += c, b += c, out += c) {
    for (int j = 0; j < c; j += 16) {
      const __mmask16 valid = Avx512F32::TailMask(std::min(16, c - j));
      _mm512_mask_storeu_ps(out + j, valid,
                            AddPrelu<kClamp>(_mm512_maskz_loadu_ps(valid, a + j), _mm512_maskz_loadu_ps(valid, b + j),
                                             _mm512_maskz_loadu_ps(valid, alpha + j), lo, hi));
    }
  }
}

}  // namespace

void PreluChannelsAvx512(float* x, const float* alpha, int c, int64_t pixels) {
  for (int64_t p = 0; p < pixels; ++p, x += c) {
    for (int j = 0; j < c; j += 16) {
      const __mmask16 valid = Avx512F32::TailMask(std::min(16, c - j));
      _mm512_mask_storeu_ps(x + j, valid,
                            Prelu(_mm512_maskz_loadu_ps(valid, x + j), _mm512_maskz_loadu_ps(valid, alpha + j)));
    }
  }
}

void AddPreluAvx512(const float* a, const float* b, const float* alpha, int c, float* out, int64_t pixels,
                    gemm::MinMax mm) {
  const __m512 lo = _mm512_set1_ps(mm.min), hi = _mm512_set1_ps(mm.max);
  if (!std::isinf(mm.min) || !std::isinf(mm.max)) return Run<true>(a, b, alpha, c, out, pixels, lo, hi);
  Run<false>(a, b, alpha, c, out, pixels, lo, hi);
}

}  // namespace edgeopt::kernels::fused
