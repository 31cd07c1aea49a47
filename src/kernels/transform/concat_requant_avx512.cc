// CONCATENATION's requantization (ref_concat.cc) 16 values at a time, bit-exact with the scalar
// formula q_out = clamp(int(round(q_in * s + b)) + zp_out):
// - the product and the sum use the explicitly rounded AVX-512 forms, so the compiler cannot
//   contract them into one FMA (which would round once instead of twice as the scalar code);
// - std::round (half away from zero) is trunc(v) plus sign(v) where |v - trunc(v)| >= 0.5
//   (v - trunc(v) is exact), not trunc(v + 0.5), which rounds 0.49999997 up.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/transform/concat_requant.h"

namespace edgeopt::kernels::transform {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
// All lanes: the maskz forms avoid GCC 12's maybe-uninitialized warnings on the plain
// intrinsics, whose expansions pass an undefined source vector.
constexpr __mmask16 kAll = 0xFFFF;

inline __m512i RequantizeLanes(__m512i q, __m512 scale, __m512 bias, __m512i zp, __m512i lo, __m512i hi) {
  const __m512 product = _mm512_maskz_mul_round_ps(kAll, _mm512_maskz_cvtepi32_ps(kAll, q), scale, kRound);
  const __m512 v = _mm512_maskz_add_round_ps(kAll, product, bias, kRound);
  __m512 t = _mm512_maskz_roundscale_ps(kAll, v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);  // exact
  const __m512 half = _mm512_set1_ps(0.5f);
  const __mmask16 up = _mm512_cmp_ps_mask(frac, half, _CMP_GE_OQ);
  const __mmask16 down = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(-0.5f), _CMP_LE_OQ);
  t = _mm512_mask_add_ps(t, up, t, _mm512_set1_ps(1.0f));
  t = _mm512_mask_sub_ps(t, down, t, _mm512_set1_ps(1.0f));
  const __m512i r = _mm512_add_epi32(_mm512_maskz_cvttps_epi32(kAll, t), zp);
  return _mm512_maskz_min_epi32(kAll, _mm512_maskz_max_epi32(kAll, r, lo), hi);
}

template <typename T>
__m512i Load16(const T* p, int n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
  if constexpr (sizeof(T) == 1) {
    const __m128i raw = _mm_maskz_loadu_epi8(m, p);
    return std::is_signed_v<T> ? _mm512_maskz_cvtepi8_epi32(kAll, raw) : _mm512_maskz_cvtepu8_epi32(kAll, raw);
  } else {
    return _mm512_maskz_cvtepi16_epi32(kAll, _mm256_maskz_loadu_epi16(m, p));
  }
}

template <typename T>
void Store16(T* p, __m512i v, int n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
  // Values are already clamped to T's range: truncating packs are exact.
  if constexpr (sizeof(T) == 1)
    _mm_mask_storeu_epi8(p, m, _mm512_maskz_cvtepi32_epi8(kAll, v));
  else
    _mm256_mask_storeu_epi16(p, m, _mm512_maskz_cvtepi32_epi16(kAll, v));
}

template <typename T>
void Run(const T* in, T* out, int64_t n, float in_scale, int32_t in_zp, float inverse_out_scale, int32_t out_zp) {
  const float s = in_scale * inverse_out_scale;
  const float b = -in_zp * s;
  const __m512 scale = _mm512_set1_ps(s), bias = _mm512_set1_ps(b);
  const __m512i zp = _mm512_set1_epi32(out_zp);
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<T>::min());
  const __m512i hi = _mm512_set1_epi32(std::numeric_limits<T>::max());
  for (int64_t i = 0; i < n; i += 16) {
    const int count = static_cast<int>(std::min<int64_t>(16, n - i));
    Store16(out + i, RequantizeLanes(Load16(in + i, count), scale, bias, zp, lo, hi), count);
  }
}

}  // namespace

void ConcatRequantizeAvx512(DType type, const uint8_t* in, uint8_t* out, int64_t n, float in_scale, int32_t in_zp,
                            float inverse_out_scale, int32_t out_zp) {
  WithRequantType(type, in, out,
                  [&](const auto* i, auto* o) { Run(i, o, n, in_scale, in_zp, inverse_out_scale, out_zp); });
}

void ConcatShortRowsAvx512(const uint8_t* const* srcs, const int* row_bytes, int inputs, int64_t outer, uint8_t* out,
                           int64_t out_bytes) {
  uint8_t* const end = out + out_bytes;
  uint8_t* dst = out;
  for (int64_t k = 0; k < outer; ++k) {
    for (int i = 0; i < inputs; ++i) {
      const int bytes = row_bytes[i];
      const auto m = static_cast<__mmask64>(bytes >= 64 ? ~uint64_t{0} : (uint64_t{1} << bytes) - 1);
      const __m512i v = _mm512_maskz_loadu_epi8(m, srcs[i] + k * bytes);
      if (end - dst >= 64) _mm512_storeu_si512(dst, v);
      else _mm512_mask_storeu_epi8(dst, m, v);
      dst += bytes;
    }
  }
}

}  // namespace edgeopt::kernels::transform
