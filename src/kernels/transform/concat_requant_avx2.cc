// CONCATENATION's requantization (ref_concat.cc) 8 values at a time with AVX2, bit-exact with
// the scalar formula q_out = clamp(int(round(q_in * s + b)) + zp_out). AVX2 has no explicitly
// rounded mul/add, so an empty asm statement keeps the product in a register between the two:
// the compiler cannot contract them into one FMA (one rounding instead of the scalar code's
// two). std::round (half away from zero) as in concat_requant_avx512.cc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/transform/concat_requant.h"

namespace edgeopt::kernels::transform {
namespace {

template <typename T>
__m256i Load8(const T* p) {
  if constexpr (sizeof(T) == 1) {
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return std::is_signed_v<T> ? _mm256_cvtepi8_epi32(raw) : _mm256_cvtepu8_epi32(raw);
  } else {
    return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// Values are already clamped to T's range, so the saturating packs are exact.
template <typename T>
void Store8(T* p, __m256i v) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  if constexpr (sizeof(T) == 2) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), w);
  } else {
    const __m128i b = std::is_signed_v<T> ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), b);
  }
}

template <typename T>
void Run(const T* in, T* out, int64_t n, float in_scale, int32_t in_zp, float inverse_out_scale, int32_t out_zp) {
  const float s = in_scale * inverse_out_scale;
  const float b = -in_zp * s;
  const __m256 scale = _mm256_set1_ps(s), bias = _mm256_set1_ps(b);
  const __m256 half = _mm256_set1_ps(0.5f), minus_half = _mm256_set1_ps(-0.5f), one = _mm256_set1_ps(1.0f);
  const __m256i zp = _mm256_set1_epi32(out_zp);
  const __m256i lo = _mm256_set1_epi32(std::numeric_limits<T>::min());
  const __m256i hi = _mm256_set1_epi32(std::numeric_limits<T>::max());
  auto requantize = [&](__m256i q) {
    __m256 prod = _mm256_mul_ps(_mm256_cvtepi32_ps(q), scale);
    __asm__("" : "+x"(prod));  // no FMA contraction across this point
    const __m256 v = _mm256_add_ps(prod, bias);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_sub_ps(v, t);  // exact
    t = _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, half, _CMP_GE_OQ), one));
    t = _mm256_sub_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, minus_half, _CMP_LE_OQ), one));
    const __m256i r = _mm256_add_epi32(_mm256_cvttps_epi32(t), zp);
    return _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) Store8(out + i, requantize(Load8(in + i)));
  if (i < n) {
    T bi[8] = {}, bo[8];
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(T);
    std::memcpy(bi, in + i, bytes);
    Store8(bo, requantize(Load8(bi)));
    std::memcpy(out + i, bo, bytes);
  }
}

}  // namespace

void ConcatRequantizeAvx2(DType type, const uint8_t* in, uint8_t* out, int64_t n, float in_scale, int32_t in_zp,
                          float inverse_out_scale, int32_t out_zp) {
  WithRequantType(type, in, out,
                  [&](const auto* i, auto* o) { Run(i, o, n, in_scale, in_zp, inverse_out_scale, out_zp); });
}

}  // namespace edgeopt::kernels::transform
