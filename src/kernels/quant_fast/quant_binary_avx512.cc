// AVX-512 quantized int8 / uint8 ADD / SUB runs (see quant_binary.h): 16 lanes of int32 a step,
// bit-exact with the scalar steps of quant_binary.h under the bounds AddSubAvx512Applies checks.
//
// Input step, exact in 32-bit lanes. v = offset + x with |v| <= 255 and left_shift = 20, so the
// reference's SaturatingRoundingDoublingHighMul(v * 2^20, m) is
//   h = floor((v*m*2^20 + 2^30) / 2^31) = floor((v*m + 2^10) / 2^11)
// (no saturation: m >= 0). Splitting m = mh*2^11 + ml (ml < 2^11) gives
//   h = v*mh + floor((v*ml + 2^10) / 2^11),
// where |v*mh| < 255*2^20 < 2^28 and |v*ml + 2^10| < 2^19: two 32-bit vpmulld, no 64-bit
// products. v*mh = x*mh + offset*mh and v*ml = x*ml + offset*ml fold the offset into constants.
//
// RoundingDivideByPOT(y, e) for e >= 1 is (y + 2^(e-1) - [y < 0]) >> e (ties away from zero),
// and y for e = 0 (half = corr = 0 below). It needs y + 2^(e-1) in int32: |h| < 2^28 and
// e <= 31; for the output, |raw| = |r1 ± r2| < 2^29, so |SRDHM(raw, M)| <= 2^29 when no left
// shift precedes it (a left shift only comes with e = 0). The sign test may use the sign of the
// value before the multiply (v, raw): a negative one gives a result <= 0, a non-negative one a
// result >= 0, and for a result of 0 both branches give 0.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::qbin {

bool AddSubAvx512Applies(const QuantBinaryParams& p) {
  if (p.pot_int16 || p.left_shift != 20) return false;
  for (auto [mult, shift] : {std::pair{p.in1_mult, p.in1_shift}, std::pair{p.in2_mult, p.in2_shift}})
    if (mult < 0 || shift > 0 || shift < -31) return false;
  // Offsets of 8-bit types: |offset + x| <= 255.
  for (int32_t off : {p.in1_offset, p.in2_offset})
    if (off < -255 || off > 255) return false;
  return p.out_mult >= 0 && p.out_shift >= -31 && p.out_shift <= 31;
}

namespace {

// SaturatingRoundingDoublingHighMul(x, m) for m >= 0 (no saturating case), 16 lanes: the 64-bit
// products of the even and the odd lanes, floor((x*m + 2^30) / 2^31) taken from bits 31..62.
inline __m512i Srdhm(__m512i x, __m512i m) {
  const __m512i nudge = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, m), nudge);
  const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m), nudge);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
}

// RoundingDivideByPOT by a fixed e in [0, 31] for values y with |y| + 2^(e-1) < 2^31; `neg`
// marks lanes whose y is < 0 (or 0).
// `extra` (a multiple of 2^e) rides in the rounding constant and comes out as extra >> e added.
struct Pot {
  __m512i half, corr;
  __m128i count;
  explicit Pot(int e, int32_t extra = 0)
      : half(_mm512_set1_epi32((e > 0 ? int32_t{1} << (e - 1) : 0) + extra)), corr(_mm512_set1_epi32(e > 0 ? 1 : 0)),
        count(_mm_cvtsi32_si128(e)) {}
  __m512i operator()(__m512i y, __mmask16 neg) const { return Halved(_mm512_add_epi32(y, half), neg); }
  // The same given t = y + half.
  __m512i Halved(__m512i t, __mmask16 neg) const {
    return _mm512_sra_epi32(_mm512_mask_sub_epi32(t, neg, t, corr), count);
  }
};

// One input's step: x (16 values widened) -> RoundingDivideByPOT(h, e). The constant c_hi
// carries offset*mh and the rounding half 2^(e-1) (|h| + 2^(e-1) < 2^31).
struct InputScale {
  __m512i mh, ml, c_hi, c_lo, neg_below;
  Pot pot;
  InputScale(int32_t offset, int32_t mult, int shift)
      : mh(_mm512_set1_epi32(mult >> 11)), ml(_mm512_set1_epi32(mult & 2047)),
        c_hi(_mm512_set1_epi32(offset * (mult >> 11) + (shift < 0 ? int32_t{1} << (-shift - 1) : 0))),
        c_lo(_mm512_set1_epi32(offset * (mult & 2047) + 1024)), neg_below(_mm512_set1_epi32(-offset)), pot(-shift) {}
  __m512i operator()(__m512i x) const {
    const __m512i lo = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, ml), c_lo), 11);
    const __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, mh), c_hi), lo);
    return pot.Halved(t, _mm512_cmplt_epi32_mask(x, neg_below));
  }
};

template <typename T>
inline __m512i Widen(__m128i v) {
  if constexpr (static_cast<T>(-1) < 0) return _mm512_cvtepi8_epi32(v);
  else return _mm512_cvtepu8_epi32(v);
}

template <typename T>
inline __m512i Load16(const T* p) {
  return Widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <typename T>
inline __m512i Load16(const T* p, __mmask16 k) {
  return Widen<T>(_mm_maskz_loadu_epi8(k, p));
}

// Whether the output offset can ride in the output rounding constant: no left shift, and
// |q| + 2^(e-1) + |out_offset| * 2^e < 2^31 for |q| <= 2^29. Then
// (q + 2^(e-1) + out_offset * 2^e - [q < 0]) >> e = RoundingDivideByPOT(q, e) + out_offset.
bool OutputOffsetFolds(const QuantBinaryParams& p) {
  if (p.out_shift > 0) return false;
  const int e = -p.out_shift;
  const int64_t half = e > 0 ? int64_t{1} << (e - 1) : 0;
  return (int64_t{1} << 29) + half + std::abs(int64_t{p.out_offset}) * (int64_t{1} << e) < (int64_t{1} << 31);
}

// The output step: raw = v1 ± v2 -> clamp(MultiplyByQuantizedMultiplier(raw) + out_offset).
// kFold (OutputOffsetFolds): no left shift and the offset inside the rounding constant.
template <bool kFold>
struct OutputStage {
  __m512i mult, out_off, lo, hi;
  __m128i left;
  Pot pot;
  bool sub;
  explicit OutputStage(const QuantBinaryParams& p)
      : mult(_mm512_set1_epi32(p.out_mult)), out_off(_mm512_set1_epi32(p.out_offset)),
        lo(_mm512_set1_epi32(p.act_min)), hi(_mm512_set1_epi32(p.act_max)),
        left(_mm_cvtsi32_si128(std::max(p.out_shift, 0))),
        pot(std::max(-p.out_shift, 0), kFold ? p.out_offset * (int32_t{1} << -p.out_shift) : 0), sub(p.sub) {}
  __m512i operator()(__m512i v1, __m512i v2) const {
    const __m512i raw = sub ? _mm512_sub_epi32(v1, v2) : _mm512_add_epi32(v1, v2);
    const __mmask16 neg = _mm512_cmplt_epi32_mask(raw, _mm512_setzero_si512());
    __m512i v;
    if constexpr (kFold) v = pot(Srdhm(raw, mult), neg);
    else v = _mm512_add_epi32(pot(Srdhm(_mm512_sll_epi32(raw, left), mult), neg), out_off);
    return _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
  }
};

template <typename T>
inline void Store16(T* p, __m512i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
}

template <typename T>
inline void Store16(T* p, __m512i v, __mmask16 k) {
  _mm512_mask_cvtepi32_storeu_epi8(p, k, v);
}

inline __mmask16 TailMask(int64_t rest) { return static_cast<__mmask16>((1u << rest) - 1); }

template <typename T, bool kFold>
void Run512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  const InputScale s1(p.in1_offset, p.in1_mult, p.in1_shift), s2(p.in2_offset, p.in2_mult, p.in2_shift);
  const OutputStage<kFold> out(p);
  // A broadcast input: its one scaled value, splatted.
  const __m512i c1 = _mm512_set1_epi32(a_step ? 0 : AddSubScaledInput(a[0], p.in1_offset, p.left_shift, p.in1_mult, p.in1_shift));
  const __m512i c2 = _mm512_set1_epi32(b_step ? 0 : AddSubScaledInput(b[0], p.in2_offset, p.left_shift, p.in2_mult, p.in2_shift));
  int64_t i = 0;
  if (a_step && b_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, out(s1(Load16(a + i)), s2(Load16(b + i))));
  } else if (a_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, out(s1(Load16(a + i)), c2));
  } else if (b_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, out(c1, s2(Load16(b + i))));
  } else {
    const __m512i v = out(c1, c2);
    for (; i + 16 <= n; i += 16) Store16(o + i, v);
  }
  if (i < n) {
    const __mmask16 k = TailMask(n - i);
    const __m512i v1 = a_step ? s1(Load16(a + i, k)) : c1;
    const __m512i v2 = b_step ? s2(Load16(b + i, k)) : c2;
    Store16(o + i, out(v1, v2), k);
  }
}

template <typename T, bool kFold>
void ChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                    const QuantBinaryParams& p) {
  const InputScale sf = full_is_first ? InputScale(p.in1_offset, p.in1_mult, p.in1_shift)
                                      : InputScale(p.in2_offset, p.in2_mult, p.in2_shift);
  const OutputStage<kFold> out(p);
  const int c16 = channels / 16 * 16;
  const __mmask16 k = TailMask(channels - c16);
  for (int64_t r = 0; r < rows; ++r, full += channels, o += channels) {
    int c = 0;
    for (; c < c16; c += 16) {
      const __m512i vf = sf(Load16(full + c));
      const __m512i vv = _mm512_loadu_si512(vec + c);
      Store16(o + c, full_is_first ? out(vf, vv) : out(vv, vf));
    }
    if (k) {
      const __m512i vf = sf(Load16(full + c, k));
      const __m512i vv = _mm512_maskz_loadu_epi32(k, vec + c);
      Store16(o + c, full_is_first ? out(vf, vv) : out(vv, vf), k);
    }
  }
}

}  // namespace

template <typename T>
void AddSubRun512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  if (OutputOffsetFolds(p)) Run512<T, true>(a, a_step, b, b_step, o, n, p);
  else Run512<T, false>(a, a_step, b, b_step, o, n, p);
}

template <typename T>
void AddSubChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                          const QuantBinaryParams& p) {
  if (OutputOffsetFolds(p)) ChannelRows512<T, true>(full, full_is_first, vec, o, rows, channels, p);
  else ChannelRows512<T, false>(full, full_is_first, vec, o, rows, channels, p);
}

#define EDGEOPT_QBIN512_INSTANTIATE(T)                                                                    \
  template void AddSubRun512<T>(const T*, int, const T*, int, T*, int64_t, const QuantBinaryParams&); \
  template void AddSubChannelRows512<T>(const T*, bool, const int32_t*, T*, int64_t, int, const QuantBinaryParams&);
EDGEOPT_QBIN512_INSTANTIATE(int8_t)
EDGEOPT_QBIN512_INSTANTIATE(uint8_t)
#undef EDGEOPT_QBIN512_INSTANTIATE

}  // namespace edgeopt::kernels::qbin
