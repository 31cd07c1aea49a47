// AVX2 pieces of LiteRT's fixed-point requantization, bit-exact with quant_utils.h, for the
// *_avx2.cc files of this folder (include only from sources built with -mavx2).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace edgeopt::kernels::avx2q {

// SaturatingRoundingDoublingHighMul(x, m) for a multiplier m > 0 broadcast in `m` (its only
// saturating case, x == m == INT32_MIN, cannot occur). gemmlowp's nudge (2^30 for a non-negative
// product, 1 - 2^30 otherwise) followed by a division truncating toward zero equals
// floor((x*m + 2^30) / 2^31) for every product; bits 31..62 of the 64-bit sum are that value's
// low 32 bits, which is all that is kept (the result always fits in int32).
inline __m256i Srdhm(__m256i x, __m256i m) {
  const __m256i nudge = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, m), nudge);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), m), nudge);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
}

// RoundingDivideByPOT(x, e) for 0 <= e <= 31 (mask = 2^e - 1, half = mask >> 1, count = e).
struct RoundingShift {
  __m256i mask, half;
  __m128i count;
  explicit RoundingShift(int e)
      : mask(_mm256_set1_epi32(static_cast<int32_t>((int64_t{1} << e) - 1))),
        half(_mm256_set1_epi32(static_cast<int32_t>(((int64_t{1} << e) - 1) >> 1))),
        count(_mm_cvtsi32_si128(e)) {}
  __m256i operator()(__m256i x) const {
    const __m256i remainder = _mm256_and_si256(x, mask);
    // threshold = half + (x < 0); cmpgt gives -1 where x < 0.
    const __m256i threshold = _mm256_sub_epi32(half, _mm256_cmpgt_epi32(_mm256_setzero_si256(), x));
    return _mm256_sub_epi32(_mm256_sra_epi32(x, count), _mm256_cmpgt_epi32(remainder, threshold));
  }
};

// MultiplyByQuantizedMultiplier(x, mult, shift) with the constants prepared once.
struct Requant {
  __m256i mult;
  __m128i left;
  RoundingShift right;
  Requant(int32_t multiplier, int shift)
      : mult(_mm256_set1_epi32(multiplier)), left(_mm_cvtsi32_si128(shift > 0 ? shift : 0)),
        right(shift > 0 ? 0 : -shift) {}
  __m256i operator()(__m256i x) const { return right(Srdhm(_mm256_sll_epi32(x, left), mult)); }
};

// 8 values of T widened to int32.
template <typename T>
inline __m256i Load8(const T* p) {
  if constexpr (sizeof(T) == 1) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (static_cast<T>(-1) < 0) return _mm256_cvtepi8_epi32(v);
    else return _mm256_cvtepu8_epi32(v);
  } else {
    static_assert(sizeof(T) == 2 && static_cast<T>(-1) < 0, "int8, uint8 or int16");
    return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// Stores 8 int32 values that are already within T's range.
template <typename T>
inline void Store8(T* p, __m256i v) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  if constexpr (sizeof(T) == 1) {
    const __m128i b = static_cast<T>(-1) < 0 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), b);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), w);
  }
}

}  // namespace edgeopt::kernels::avx2q
