// AVX-512 pieces of LiteRT's fixed-point requantization, bit-exact with quant_utils.h, for the
// *_avx512.cc files that need them (include only from sources built with AVX-512 flags); the
// 16-lane counterparts of quant_avx2_util.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace edgeopt::kernels::avx512q {

// SaturatingRoundingDoublingHighMul(x, m) for m >= 0 (no saturating case), 16 lanes: the 64-bit
// products of the even and the odd lanes, floor((x*m + 2^30) / 2^31) taken from bits 31..62.
inline __m512i Srdhm(__m512i x, __m512i m) {
  const __m512i nudge = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, m), nudge);
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m), nudge);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
}

// MultiplyByQuantizedMultiplier(x, mult, shift) for 16 lanes (mult > 0; x << left shift must stay
// in int32): Srdhm, then RoundingDivideByPOT by the right shift (ties away from zero).
struct Requant {
  __m512i m, mask, half;
  __m128i left, right;
  Requant(int32_t mult, int shift)
      : m(_mm512_set1_epi32(mult)),
        mask(_mm512_set1_epi32(static_cast<int32_t>((int64_t{1} << std::max(-shift, 0)) - 1))),
        half(_mm512_set1_epi32(static_cast<int32_t>(((int64_t{1} << std::max(-shift, 0)) - 1) >> 1))),
        left(_mm_cvtsi32_si128(std::max(shift, 0))), right(_mm_cvtsi32_si128(std::max(-shift, 0))) {}
  __m512i operator()(__m512i x) const {
    const __m512i h = Srdhm(_mm512_sll_epi32(x, left), m);
    const __m512i rem = _mm512_and_si512(h, mask);
    const __m512i threshold = _mm512_sub_epi32(half, _mm512_srai_epi32(h, 31));  // half + (h < 0)
    const __m512i q = _mm512_sra_epi32(h, right);
    return _mm512_mask_add_epi32(q, _mm512_cmpgt_epi32_mask(rem, threshold), q, _mm512_set1_epi32(1));
  }
};

}  // namespace edgeopt::kernels::avx512q
