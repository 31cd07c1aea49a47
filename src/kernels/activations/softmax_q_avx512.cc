// SOFTMAX int8 / uint8 input (int8 / uint8 / int16 output) on AVX-512, bit-exact with
// ref_softmax.cc's Quantized rows: the row maximum in 64-byte vectors; the row's sum of table
// values in float, in order, four rows' chains interleaved (each row still adds its own
// values one after the other); the outputs 16 at a time (table gather, the same float product,
// cap and rounding as the reference, then the clamp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/activations/softmax_q.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/lut.h"
#include "kernels/quant_fast/quant_avx512_util.h"

namespace edgeopt::kernels::activations {
namespace {

template <typename In>
int32_t RowMax(const In* x, int64_t depth) {
  constexpr bool kSigned = std::is_signed_v<In>;
  __m512i m = kSigned ? _mm512_set1_epi8(-128) : _mm512_setzero_si512();
  int64_t j = 0;
  for (; j + 64 <= depth; j += 64) {
    const __m512i v = _mm512_loadu_si512(x + j);
    m = kSigned ? _mm512_max_epi8(m, v) : _mm512_max_epu8(m, v);
  }
  int32_t best = std::numeric_limits<In>::min();
  alignas(64) In lanes[64];
  _mm512_store_si512(lanes, m);
  for (int i = 0; i < 64; ++i) best = std::max(best, static_cast<int32_t>(lanes[i]));
  for (; j < depth; ++j) best = std::max(best, static_cast<int32_t>(x[j]));
  return best;
}

template <typename In>
inline __m512i Load16(const In* p, __mmask16 k) {
  const __m128i b = _mm_maskz_loadu_epi8(k, p);
  return std::is_signed_v<In> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
}

template <typename Out>
inline void Store16(Out* p, __m512i v, __mmask16 k) {
  if constexpr (sizeof(Out) == 2) _mm512_mask_cvtepi32_storeu_epi16(p, k, v);
  else _mm512_mask_cvtepi32_storeu_epi8(p, k, v);
}

template <typename In, typename Out>
void OutputRow(const In* x, Out* y, int64_t depth, const float* table_offset, float inv_sum_exp, int32_t out_zp) {
  const __m512 inv = _mm512_set1_ps(inv_sum_exp), cap = _mm512_set1_ps(1073741824.0f), half = _mm512_set1_ps(0.5f);
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<Out>::min()), hi = _mm512_set1_epi32(std::numeric_limits<Out>::max());
  const __m512i zp = _mm512_set1_epi32(out_zp), one = _mm512_set1_epi32(1);
  for (int64_t j = 0; j < depth; j += 16) {
    const auto k = static_cast<__mmask16>(depth - j >= 16 ? 0xFFFF : (1u << (depth - j)) - 1u);
    const __m512i idx = Load16(x + j, k);
    const __m512 prob = _mm512_min_ps(_mm512_mul_ps(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, idx, table_offset, 4), inv), cap);
    __m512i q;
    if constexpr (std::is_same_v<Out, uint8_t>) {
      q = _mm512_cvttps_epi32(_mm512_add_ps(prob, half));
    } else {
      // RoundNonNegative: the integer part, plus one when the fraction (exact) is at least 1/2.
      const __m512i t = _mm512_cvttps_epi32(prob);
      const __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(prob, _mm512_cvtepi32_ps(t)), half, _CMP_GE_OQ);
      q = _mm512_add_epi32(_mm512_mask_add_epi32(t, up, t, one), zp);
    }
    Store16(y + j, _mm512_min_epi32(_mm512_max_epi32(q, lo), hi), k);
  }
}

}  // namespace

template <typename In, typename Out>
void SoftmaxQuantRowsAvx512(const In* x, Out* y, int64_t outer, int64_t depth, const float* table, float out_scale,
                            int32_t out_zp) {
  constexpr int kRows = 4;
  for (int64_t i = 0; i < outer; i += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, outer - i));
    const float* t[kRows];
    float sum[kRows] = {};
    for (int r = 0; r < rows; ++r) t[r] = table + 255 - RowMax(x + (i + r) * depth, depth);
    if (rows == kRows) {
      const In* x0 = x + i * depth;
      const In *x1 = x0 + depth, *x2 = x1 + depth, *x3 = x2 + depth;
      for (int64_t j = 0; j < depth; ++j) {
        sum[0] += t[0][x0[j]];
        sum[1] += t[1][x1[j]];
        sum[2] += t[2][x2[j]];
        sum[3] += t[3][x3[j]];
      }
    } else {
      for (int r = 0; r < rows; ++r) {
        const In* xr = x + (i + r) * depth;
        for (int64_t j = 0; j < depth; ++j) sum[r] += t[r][xr[j]];
      }
    }
    for (int r = 0; r < rows; ++r)
      OutputRow(x + (i + r) * depth, y + (i + r) * depth, depth, t[r], 1.0f / (sum[r] * out_scale), out_zp);
  }
}

namespace {

// Int16LutLookup (lut.h) of 16 int32 lanes holding int16 values: entries index = 256 + (v >> 7)
// and index + 1 in one 4-byte gather, then base + ((slope * (v & 127) + 64) >> 7) in int16.
inline __m512i Lut16(__m512i v, const int16_t* lut) {
  const __m512i index = _mm512_add_epi32(_mm512_srai_epi32(v, 7), _mm512_set1_epi32(256));
  const __m512i offset = _mm512_and_si512(v, _mm512_set1_epi32(0x7f));
  const __m512i pair = _mm512_i32gather_epi32(index, lut, 2);
  const __m512i base = _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16);
  const __m512i next = _mm512_srai_epi32(pair, 16);
  const __m512i slope = _mm512_srai_epi32(_mm512_slli_epi32(_mm512_sub_epi32(next, base), 16), 16);  // int16 wrap
  const __m512i delta = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(slope, offset), _mm512_set1_epi32(64)), 7);
  return _mm512_srai_epi32(_mm512_slli_epi32(_mm512_add_epi32(base, delta), 16), 16);
}

inline __mmask16 Tail16(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1); }

}  // namespace

void SoftmaxInt16RowsAvx512(const int16_t* x, int16_t* y, int64_t outer, int64_t depth, const int16_t* exp_lut,
                            const int16_t* one_over_lut, int32_t mult, int shift) {
  const avx512q::Requant scale(mult, shift);
  const __m512i lo16 = _mm512_set1_epi32(-32768), hi16 = _mm512_set1_epi32(32767), zero = _mm512_setzero_si512();
  for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
    __m512i mx = lo16;
    for (int64_t j = 0; j < depth; j += 16) {
      const __mmask16 k = Tail16(depth - j);
      mx = _mm512_mask_max_epi32(mx, k, mx, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, x + j)));
    }
    const __m512i row_max = _mm512_set1_epi32(_mm512_reduce_max_epi32(mx));
    // exp of x - max in Q0.15 (the reference's exp_q015), lanes outside the row zeroed.
    const auto exp_q015 = [&](int64_t j, __mmask16 k) {
      const __m512i d = _mm512_sub_epi32(_mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, x + j)), row_max);
      const __m512i sym = _mm512_add_epi32(scale(d), hi16);
      return _mm512_maskz_mov_epi32(k, Lut16(_mm512_min_epi32(_mm512_max_epi32(sym, lo16), hi16), exp_lut));
    };
    __m512i sum = zero;
    for (int64_t j = 0; j < depth; j += 16) sum = _mm512_add_epi32(sum, exp_q015(j, Tail16(depth - j)));
    // The reference's scalar steps on the sum (wrapping int32 adds: the same total in any order).
    const int32_t sum_of_exps = _mm512_reduce_add_epi32(sum);
    const int headroom_plus_one = fp::CountLeadingZeros32(static_cast<uint32_t>(sum_of_exps));
    const auto shifted_sum =
        static_cast<int32_t>(((static_cast<int64_t>(sum_of_exps) << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
    const int32_t sym_shifted_sum = shifted_sum + (-((1 << 15) + (1 << 16)));
    const int32_t sat_sum = std::min(std::max(sym_shifted_sum, -32768), 32767);
    const int32_t reciprocal = Int16LutLookup(static_cast<int16_t>(sat_sum), one_over_lut);
    const int right_shift = 31 - headroom_plus_one;
    const __m512i recip = _mm512_set1_epi32(reciprocal), round = _mm512_set1_epi32(1 << (right_shift - 1));
    const __m128i rcount = _mm_cvtsi32_si128(right_shift);
    for (int64_t j = 0; j < depth; j += 16) {
      const __mmask16 k = Tail16(depth - j);
      const __m512i r = _mm512_sra_epi32(_mm512_add_epi32(_mm512_mullo_epi32(exp_q015(j, k), recip), round), rcount);
      _mm256_mask_storeu_epi16(y + j, k, _mm512_cvtepi32_epi16(_mm512_min_epi32(_mm512_max_epi32(r, zero), hi16)));
    }
  }
}

template void SoftmaxQuantRowsAvx512<int8_t, int8_t>(const int8_t*, int8_t*, int64_t, int64_t, const float*, float, int32_t);
template void SoftmaxQuantRowsAvx512<int8_t, int16_t>(const int8_t*, int16_t*, int64_t, int64_t, const float*, float, int32_t);
template void SoftmaxQuantRowsAvx512<int8_t, uint8_t>(const int8_t*, uint8_t*, int64_t, int64_t, const float*, float, int32_t);
template void SoftmaxQuantRowsAvx512<uint8_t, uint8_t>(const uint8_t*, uint8_t*, int64_t, int64_t, const float*, float, int32_t);
template void SoftmaxQuantRowsAvx512<uint8_t, int16_t>(const uint8_t*, int16_t*, int64_t, int64_t, const float*, float, int32_t);
template void SoftmaxQuantRowsAvx512<uint8_t, int8_t>(const uint8_t*, int8_t*, int64_t, int64_t, const float*, float, int32_t);

}  // namespace edgeopt::kernels::activations
