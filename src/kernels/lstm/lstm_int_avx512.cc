// AVX-512 requantization of the integer LSTM's matrix-vector products (lstm_math.h,
// RequantRowsAvx512): out[i] = clamp(out[i] + MultiplyByQuantizedMultiplier(bias[i] + sums[i]) + zp),
// 16 rows at a time, the same integers as quant_utils.h's scalar functions:
// - SaturatingRoundingDoublingHighMul(a, m) = (a*m + nudge) / 2^31 truncated, with nudge 2^30
//   for a*m >= 0 and 1 - 2^30 below: for both signs that is floor((a*m + 2^30) / 2^31), one
//   64-bit add and arithmetic shift (a*m < 0 gives a*m + 1 - 2^30 < 0, whose truncated quotient
//   is floor((a*m + 1 - 2^30 + 2^31 - 1) / 2^31)); its saturating case (a = m = INT32_MIN)
//   cannot occur: m = INT32_MIN (and right shifts past 31) take lstm_math.h's RequantRows.
// - RoundingDivideByPOT(x, e) as written there (remainder against the threshold), e <= 31.
#include "kernels/common/avx512_intrin.h"

#include <algorithm>
#include <limits>

#include "kernels/lstm/lstm_math.h"

namespace edgeopt::kernels::lstm {
namespace {

template <typename Out>
void RequantRows512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                    Out* out) {
  if (multiplier == std::numeric_limits<int32_t>::min() || shift < -31)
    return RequantRows(sums, bias, n, multiplier, shift, zp, out);
  const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  const __m512i m = _mm512_set1_epi64(multiplier);
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i vleft = _mm512_set1_epi32(left);
  const __m128i vright = _mm_cvtsi32_si128(right);
  const __m512i mask = _mm512_set1_epi32(static_cast<int32_t>((int64_t{1} << right) - 1));
  const __m512i half_mask = _mm512_srai_epi32(mask, 1);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i vzp = _mm512_set1_epi32(zp);
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<Out>::min());
  const __m512i hi = _mm512_set1_epi32(std::numeric_limits<Out>::max());
  // The last rows under a mask (a scalar tail took as long as the vectors for 20 rows).
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512i x = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, sums + i), _mm512_maskz_loadu_epi32(k, bias + i));
    x = _mm512_sllv_epi32(x, vleft);
    const __m512i pe = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), half), 31);
    const __m512i po = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m), half), 31);
    // Lane 2j: pe's low dword j; lane 2j + 1: po's low dword j.
    const __m512i h = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
    const __m512i rem = _mm512_and_si512(h, mask);
    const __m512i threshold = _mm512_add_epi32(half_mask, _mm512_srli_epi32(h, 31));
    __m512i r = _mm512_sra_epi32(h, vright);
    r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(rem, threshold), r, one);
    r = _mm512_add_epi32(r, vzp);
    if constexpr (sizeof(Out) == 2) {
      r = _mm512_add_epi32(r, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, out + i)));
      r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
      _mm256_mask_storeu_epi16(out + i, k, _mm512_cvtepi32_epi16(r));
    } else {
      r = _mm512_add_epi32(r, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, out + i)));
      r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
      _mm_mask_storeu_epi8(out + i, k, _mm512_cvtepi32_epi8(r));
    }
  }
}

}  // namespace

void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int16_t* out) {
  RequantRows512(sums, bias, n, multiplier, shift, zp, out);
}
void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int8_t* out) {
  RequantRows512(sums, bias, n, multiplier, shift, zp, out);
}

}  // namespace edgeopt::kernels::lstm
