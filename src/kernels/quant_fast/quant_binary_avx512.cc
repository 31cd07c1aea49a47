// AVX-512 quantized int8 / uint8 / int16 ADD / SUB runs (see quant_binary.h): 16 lanes of int32 a
// step, bit-exact with the scalar steps of quant_binary.h under the bounds AddSubAvx512Applies
// checks.
//
// Input step, exact in 32-bit lanes. v = offset + x with |v| <= 255 and left_shift = 20, so the
// reference's SaturatingRoundingDoublingHighMul(v * 2^20, m) is
//   h = floor((v*m*2^20 + 2^30) / 2^31) = floor((v*m + 2^10) / 2^11)
// (no saturation: m >= 0). Splitting m = mh*2^11 + ml (ml < 2^11) gives
//   h = v*mh + floor((v*ml + 2^10) / 2^11),
// where |v*mh| < 255*2^20 < 2^28 and |v*ml + 2^10| < 2^19: two 32-bit vpmulld, no 64-bit
// products. v*mh = x*mh + offset*mh and v*ml = x*ml + offset*ml fold the offset into constants.
// int16 (left_shift = 15, offsets 0): the same with the split at 2^16, h = x*mh +
// floor((x*ml + 2^15) / 2^16), |x*mh| <= 2^15 * 2^15 and |x*ml + 2^15| <= 2^31 - 2^15 (|x| <=
// 2^15, ml < 2^16): still exact in int32, and |h| <= 2^29 (m * 2^shift <= 2^30: the input scale
// over twice the larger one is at most 1/2).
//
// RoundingDivideByPOT(y, e) for e >= 1 is (y + 2^(e-1) - [y < 0]) >> e (ties away from zero),
// and y for e = 0 (half = corr = 0 below). It needs y + 2^(e-1) in int32: |h| < 2^28 and
// e <= 31; for the output, |raw| = |r1 ± r2| < 2^29, so |SRDHM(raw, M)| <= 2^29 when no left
// shift precedes it (a left shift only comes with e = 0); int16: |raw| < 2^30, so e <= 30. The sign test may use the sign of the
// value before the multiply (v, raw): a negative one gives a result <= 0, a non-negative one a
// result >= 0, and for a result of 0 both branches give 0.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant_fast/quant_avx512_util.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::qbin {

bool AddSubAvx512Applies(const QuantBinaryParams& p) {
  if (p.pot_int16 || (p.left_shift != 20 && p.left_shift != 15)) return false;
  const bool int16 = p.left_shift == 15;
  for (auto [mult, shift] : {std::pair{p.in1_mult, p.in1_shift}, std::pair{p.in2_mult, p.in2_shift}})
    if (mult < 0 || shift > 0 || shift < -31) return false;
  // Offsets of 8-bit types: |offset + x| <= 255; int16 has none.
  for (int32_t off : {p.in1_offset, p.in2_offset})
    if (off < -255 || off > 255 || (int16 && off != 0)) return false;
  if (int16 && p.out_offset != 0) return false;
  return p.out_mult >= 0 && p.out_shift >= (int16 ? -30 : -31) && p.out_shift <= 31;
}

namespace {

using avx512q::Srdhm;

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

// The multiplier of the input with the larger scale (ComputeAddSubMultipliers and
// ComputeSquaredDifferenceMultipliers give it 1/2): MBQM(v << L, 2^30, 0) = v << (L - 1) exactly.
inline bool HalfMultiplier(int32_t mult, int shift) { return mult == (int32_t{1} << 30) && shift == 0; }

// One input's step: x (16 values widened) -> RoundingDivideByPOT(h, e), the multiplier split at
// 2^kSplit (31 - left_shift: 11 for 8-bit types, 16 for int16). The constant c_hi carries
// offset*mh and the rounding half 2^(e-1) (|h| + 2^(e-1) < 2^31).
// `linear`: the input with the larger scale (multiplier 2^30, no shift, as ComputeAddSubMultipliers
// gives it), whose h = (x + offset) * 2^(30 - kSplit) exactly (ml = 0: the low part is
// floor(2^(kSplit-1) / 2^kSplit) = 0) and e = 0: one add and one shift.
template <int kSplit>
struct InputScale {
  static constexpr int32_t kLow = (int32_t{1} << kSplit) - 1;
  __m512i mh, ml, c_hi, c_lo, neg_below;
  Pot pot;
  bool linear;
  InputScale(int32_t offset, int32_t mult, int shift)
      : mh(_mm512_set1_epi32(mult >> kSplit)), ml(_mm512_set1_epi32(mult & kLow)),
        c_hi(_mm512_set1_epi32(offset * (mult >> kSplit) + (shift < 0 ? int32_t{1} << (-shift - 1) : 0))),
        c_lo(_mm512_set1_epi32(offset * (mult & kLow) + (int32_t{1} << (kSplit - 1)))),
        neg_below(_mm512_set1_epi32(-offset)), pot(-shift), linear(HalfMultiplier(mult, shift)) {}
  __m512i operator()(__m512i x) const {
    if (linear) return _mm512_slli_epi32(_mm512_sub_epi32(x, neg_below), 30 - kSplit);
    const __m512i lo = _mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, ml), c_lo), kSplit);
    const __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(x, mh), c_hi), lo);
    return pot.Halved(t, _mm512_cmplt_epi32_mask(x, neg_below));
  }
};

// The input step of T's ADD/SUB (see AddSubAvx512Applies).
template <typename T>
using InputScaleOf = InputScale<sizeof(T) == 2 ? 16 : 11>;

template <typename T>
inline __m512i Load16(const T* p) {
  if constexpr (sizeof(T) == 2) return _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else if constexpr (static_cast<T>(-1) < 0) return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <typename T>
inline __m512i Load16(const T* p, __mmask16 k) {
  if constexpr (sizeof(T) == 2) return _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, p));
  else if constexpr (static_cast<T>(-1) < 0) return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, p));
  else return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, p));
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

// 16 values already within T's range.
template <typename T>
inline void Store16(T* p, __m512i v) {
  if constexpr (sizeof(T) == 2) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
  else _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
}

template <typename T>
inline void Store16(T* p, __m512i v, __mmask16 k) {
  if constexpr (sizeof(T) == 2) _mm512_mask_cvtepi32_storeu_epi16(p, k, v);
  else _mm512_mask_cvtepi32_storeu_epi8(p, k, v);
}

inline __mmask16 TailMask(int64_t rest) { return static_cast<__mmask16>((1u << rest) - 1); }

// o[i] = f(in1(a[i]), in2(b[i])) for i < n, 16 lanes at a time (the tail masked), a[i] and
// b[i] widened to int32. An input with step 0 is broadcast: its one value, already through its
// step, is c1 / c2 (each case has its own loop).
template <typename T, typename In1, typename In2, typename F>
void RunLanes512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const In1& in1, const In2& in2,
                 __m512i c1, __m512i c2, const F& f) {
  int64_t i = 0;
  if (a_step && b_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, f(in1(Load16(a + i)), in2(Load16(b + i))));
  } else if (a_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, f(in1(Load16(a + i)), c2));
  } else if (b_step) {
    for (; i + 16 <= n; i += 16) Store16(o + i, f(c1, in2(Load16(b + i))));
  } else {
    const __m512i v = f(c1, c2);
    for (; i + 16 <= n; i += 16) Store16(o + i, v);
  }
  if (i < n) {
    const __mmask16 k = TailMask(n - i);
    const __m512i v1 = a_step ? in1(Load16(a + i, k)) : c1;
    const __m512i v2 = b_step ? in2(Load16(b + i, k)) : c2;
    Store16(o + i, f(v1, v2), k);
  }
}

// Each of `rows` rows of `channels` values: o = f(full's values widened to int32, vec's), 16
// channels at a time (the tail masked).
template <typename T, typename F>
void ChannelLanes512(const T* full, const int32_t* vec, T* o, int64_t rows, int channels, const F& f) {
  const int c16 = channels / 16 * 16;
  const __mmask16 k = TailMask(channels - c16);
  for (int64_t r = 0; r < rows; ++r, full += channels, o += channels) {
    int c = 0;
    for (; c < c16; c += 16) Store16(o + c, f(Load16(full + c), _mm512_loadu_si512(vec + c)));
    if (k) Store16(o + c, f(Load16(full + c, k), _mm512_maskz_loadu_epi32(k, vec + c)), k);
  }
}

template <typename T, bool kFold>
void Run512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  const InputScaleOf<T> s1(p.in1_offset, p.in1_mult, p.in1_shift), s2(p.in2_offset, p.in2_mult, p.in2_shift);
  // A broadcast input: its one scaled value, splatted.
  const __m512i c1 = _mm512_set1_epi32(a_step ? 0 : AddSubScaledInput(a[0], p.in1_offset, p.left_shift, p.in1_mult, p.in1_shift));
  const __m512i c2 = _mm512_set1_epi32(b_step ? 0 : AddSubScaledInput(b[0], p.in2_offset, p.left_shift, p.in2_mult, p.in2_shift));
  RunLanes512(a, a_step, b, b_step, o, n, s1, s2, c1, c2, OutputStage<kFold>(p));
}

template <typename T, bool kFold>
void ChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                    const QuantBinaryParams& p) {
  const InputScaleOf<T> sf = full_is_first ? InputScaleOf<T>(p.in1_offset, p.in1_mult, p.in1_shift)
                                            : InputScaleOf<T>(p.in2_offset, p.in2_mult, p.in2_shift);
  const OutputStage<kFold> out(p);
  ChannelLanes512(full, vec, o, rows, channels, [&](__m512i x, __m512i vv) {
    const __m512i vf = sf(x);
    return full_is_first ? out(vf, vv) : out(vv, vf);
  });
}

// MUL: raw = (x1 + offset1) * (x2 + offset2), |raw| <= 2^30, through OutputStage (an add of 0).
template <bool kFold>
struct MulStage {
  OutputStage<kFold> out;
  explicit MulStage(const QuantBinaryParams& p) : out(p) {}
  __m512i operator()(__m512i v1, __m512i v2) const { return out(_mm512_mullo_epi32(v1, v2), _mm512_setzero_si512()); }
};

// x + offset, for MUL's inputs.
struct AddOffset {
  __m512i off;
  explicit AddOffset(int32_t offset) : off(_mm512_set1_epi32(offset)) {}
  __m512i operator()(__m512i x) const { return _mm512_add_epi32(x, off); }
};

template <typename T, bool kFold>
void MulRun512Impl(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  const __m512i c1 = _mm512_set1_epi32(a_step ? 0 : p.in1_offset + a[0]);
  const __m512i c2 = _mm512_set1_epi32(b_step ? 0 : p.in2_offset + b[0]);
  RunLanes512(a, a_step, b, b_step, o, n, AddOffset(p.in1_offset), AddOffset(p.in2_offset), c1, c2, MulStage<kFold>(p));
}

template <typename T, bool kFold>
void MulChannelRows512Impl(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                           const QuantBinaryParams& p) {
  const AddOffset in(full_is_first ? p.in1_offset : p.in2_offset);
  const MulStage<kFold> mul(p);
  ChannelLanes512(full, vec, o, rows, channels, [&](__m512i x, __m512i vv) { return mul(in(x), vv); });
}

}  // namespace

bool MulAvx512Applies(const QuantBinaryParams& p) {
  for (int32_t off : {p.in1_offset, p.in2_offset})
    if (off < -255 || off > 255) return false;
  return !p.sub && p.out_mult >= 0 && p.out_shift >= -31 && p.out_shift <= 31;
}

template <typename T>
void MulRun512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  if (OutputOffsetFolds(p)) MulRun512Impl<T, true>(a, a_step, b, b_step, o, n, p);
  else MulRun512Impl<T, false>(a, a_step, b, b_step, o, n, p);
}

template <typename T>
void MulChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                       const QuantBinaryParams& p) {
  if (OutputOffsetFolds(p)) MulChannelRows512Impl<T, true>(full, full_is_first, vec, o, rows, channels, p);
  else MulChannelRows512Impl<T, false>(full, full_is_first, vec, o, rows, channels, p);
}

template void MulRun512<int8_t>(const int8_t*, int, const int8_t*, int, int8_t*, int64_t, const QuantBinaryParams&);
template void MulRun512<uint8_t>(const uint8_t*, int, const uint8_t*, int, uint8_t*, int64_t, const QuantBinaryParams&);
template void MulRun512<int16_t>(const int16_t*, int, const int16_t*, int, int16_t*, int64_t, const QuantBinaryParams&);
template void MulChannelRows512<int8_t>(const int8_t*, bool, const int32_t*, int8_t*, int64_t, int,
                                        const QuantBinaryParams&);
template void MulChannelRows512<uint8_t>(const uint8_t*, bool, const int32_t*, uint8_t*, int64_t, int,
                                         const QuantBinaryParams&);
template void MulChannelRows512<int16_t>(const int16_t*, bool, const int32_t*, int16_t*, int64_t, int,
                                         const QuantBinaryParams&);

// The linear form (AddSubLinear512). With the linear input L (step v_L * 2^k, exact) and the
// other input G (multiplier m = mh * 2^11 + ml, right shift e), the scaled G value is
//   g = RoundingDivideByPOT(floor((v*m + 2^10) / 2^11), e)
//     = floor((v*mh + floor((v*ml + 2^10 - 2^11 [v < 0]) / 2^11) + 2^(e-1)) / 2^e)   (e >= 1)
// (nested floors with integer addends; [v < 0] stands for [h < 0] as in InputScale). v lies in
// [-255, 255], so its int32 lane holds v as int16 in the low word and -[v < 0] in the high word:
// one vpmaddwd by the pair (ml, 2^11) gives v*ml - 2^11 [v < 0].
// The output step of raw = ±v_L*2^k ± g, with M = out_mult and E = -out_shift >= 0, is
//   floor((raw*M + 2^30 + 2^(30+E) - 2^31 [q < 0] + zo*2^(31+E)) / 2^(31+E)),
// q = SaturatingRoundingDoublingHighMul(raw, M) (2^(30+E) only for E >= 1): the two roundings
// and the zero point in one 64-bit sum. Computed on 2 raw so that floor(y / 2^31) is the high
// dword of 2y (one vpermt2d picks the high dwords of the even and the odd products); the
// offset of L rides in the 64-bit constant. [q < 0] matters only for E >= 1, and not at all
// when act_min >= zo: any q < 0 then gives a value <= zo that the clamp raises to act_min.
//
// The table form: 2 raw = TG[x_G] ± (x_L << lin_shift), TG[x] = ±2 g(x) + 2D with D the linear
// input's offset term. TG is looked up in four byte planes (vpermi2b over 128 entries, the top
// index bit choosing between two of them), and the planes are interleaved into words and dwords
// by in-lane unpacks; x_L << lin_shift has zero low words (lin_shift >= 16), so it is added to
// the high words as (x_L << (lin_shift - 16)) in 16 bits, which wraps exactly as the int32 sum
// does. The unpacks order each 128-bit lane's 16 values as 4 dword vectors of 4, and the
// saturating packs (dword -> word -> byte) put them back in order.
template <typename T>
AddSubLinear512 PlanAddSubLinear512(const QuantBinaryParams& p, bool allow_lut) {
  AddSubLinear512 q;
  if (!AddSubAvx512Applies(p) || p.left_shift != 20 || p.out_shift > 0) return q;
  // k where the step of an input is v * 2^k exactly (multiplier 2^(11+k), no right shift), or -1.
  auto linear_k = [](int32_t mult, int shift) {
    const int32_t mh = mult >> 11;
    if (shift != 0 || (mult & 2047) != 0 || mh <= 0 || (mh & (mh - 1)) != 0) return -1;
    return std::countr_zero(static_cast<uint32_t>(mh));
  };
  const int k1 = linear_k(p.in1_mult, p.in1_shift), k2 = linear_k(p.in2_mult, p.in2_shift);
  if (k1 < 0 && k2 < 0) return q;
  q.lin_first = k1 >= 0;
  const int k = q.lin_first ? k1 : k2;
  const int32_t lin_offset = q.lin_first ? p.in1_offset : p.in2_offset;
  const int32_t gen_mult = q.lin_first ? p.in2_mult : p.in1_mult;
  const int gen_shift = q.lin_first ? p.in2_shift : p.in1_shift;
  const int e = -gen_shift;
  if (e > 20) return q;  // 2^(e-1) * 2^11 must fit the vpmaddwd sum's rounding constant
  q.gen_offset = q.lin_first ? p.in2_offset : p.in1_offset;
  q.lin_sign = p.sub && !q.lin_first ? -1 : 1;
  q.gen_sign = p.sub && q.lin_first ? -1 : 1;
  q.lin_shift = k + 1;
  q.gen_mh = gen_mult >> 11;
  q.gen_madd = (gen_mult & 2047) | (e > 0 ? int32_t{2048} << 16 : 0);
  q.gen_round = 1024 + (e > 0 ? int32_t{1} << (e + 10) : 0);
  q.gen_shift = e;
  // Bounds over every value of T: |2 raw - 2D| < 2^31 and |2y| < 2^63. scaled_gen[x as byte] is
  // the other input's scaled value g(x) (the table form reuses it).
  std::array<int64_t, 256> scaled_gen;
  int64_t max_lin = 0, max_gen = 0;
  for (int x = std::numeric_limits<T>::min(); x <= std::numeric_limits<T>::max(); ++x) {
    const int64_t g = AddSubScaledInput(x, q.gen_offset, 20, gen_mult, gen_shift);
    scaled_gen[static_cast<uint8_t>(x)] = g;
    max_lin = std::max<int64_t>(max_lin, std::abs(int64_t{x} << (k + 1)));
    max_gen = std::max<int64_t>(max_gen, std::abs(g));
  }
  const int64_t max_raw2 = max_lin + 2 * max_gen;
  if (max_raw2 >= (int64_t{1} << 31)) return q;
  const int E = -p.out_shift;
  const __int128 d = static_cast<__int128>(q.lin_sign) * lin_offset * (int64_t{1} << k);
  const __int128 kconst = (__int128{1} << 30) + (E > 0 ? __int128{1} << (30 + E) : 0) +
                          static_cast<__int128>(p.out_offset) * (__int128{1} << (31 + E));
  const __int128 out2 = 2 * d * p.out_mult + 2 * kconst;
  const __int128 out2_abs = out2 < 0 ? -out2 : out2;
  if (static_cast<__int128>(max_raw2) * p.out_mult + out2_abs >= (__int128{1} << 63)) return q;
  q.out_mult = p.out_mult;
  q.out_const = static_cast<int64_t>(out2);
  q.out_shift = E;
  q.correct_neg = E > 0 && p.act_min < p.out_offset && p.out_mult > 0;
  if (q.correct_neg) {
    // q < 0 <=> raw*M < -2^30 <=> raw < -floor(2^30 / M); on 2 raw - 2D.
    const int64_t below = 2 * -((int64_t{1} << 30) / p.out_mult) - static_cast<int64_t>(2 * d);
    q.neg_below = static_cast<int32_t>(std::clamp<int64_t>(below, INT32_MIN, INT32_MAX));
  }
  q.clamp = p.act_min > std::numeric_limits<T>::min() || p.act_max < std::numeric_limits<T>::max();
  q.act_min = p.act_min;
  q.act_max = p.act_max;
  q.ok = true;
  if (allow_lut && q.lin_shift >= 16 && q.lin_shift <= 24) {
    std::array<int64_t, 256> table;
    int64_t max_table = 0;
    for (int j = 0; j < 256; ++j) {
      table[j] = 2 * q.gen_sign * scaled_gen[j] + static_cast<int64_t>(2 * d);
      max_table = std::max(max_table, std::abs(table[j]));
    }
    const int64_t max_sum = max_table + max_lin;
    const __int128 k2_abs = 2 * (kconst < 0 ? -kconst : kconst);
    if (max_sum < (int64_t{1} << 31) && static_cast<__int128>(max_sum) * p.out_mult + k2_abs < (__int128{1} << 63)) {
      for (int j = 0; j < 256; ++j)
        for (int b = 0; b < 4; ++b) q.lut_bytes[b * 256 + j] = static_cast<uint8_t>(static_cast<uint64_t>(table[j]) >> (8 * b));
      q.lut_out_const = static_cast<int64_t>(2 * kconst);
      if (q.correct_neg)
        q.lut_neg_below = static_cast<int32_t>(std::max<int64_t>(2 * -((int64_t{1} << 30) / p.out_mult), INT32_MIN));
      q.lut = true;
    }
  }
  return q;
}

namespace {

// The output step on 2 raw (16 lanes): the high dwords of 2 raw * M + out_const, the tie
// correction, the final shift and (kClamp) the activation range.
template <bool kCorrect, bool kClamp>
struct LinearOutput {
  __m512i mult, kout, neg_below, one, lo, hi, high_dwords;
  __m128i count;
  LinearOutput(const AddSubLinear512& q, int64_t out_const, int32_t below)
      : mult(_mm512_set1_epi32(q.out_mult)), kout(_mm512_set1_epi64(out_const)), neg_below(_mm512_set1_epi32(below)),
        one(_mm512_set1_epi32(1)), lo(_mm512_set1_epi32(q.act_min)), hi(_mm512_set1_epi32(q.act_max)),
        // Output lane 2j: high dword of the even product j; lane 2j + 1: of the odd product j.
        high_dwords(_mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31)),
        count(_mm_cvtsi32_si128(q.out_shift)) {}
  __m512i operator()(__m512i raw2) const {
    const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(raw2, mult), kout);
    const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(raw2, 32), mult), kout);
    __m512i h = _mm512_permutex2var_epi32(even, high_dwords, odd);
    if constexpr (kCorrect) h = _mm512_mask_sub_epi32(h, _mm512_cmplt_epi32_mask(raw2, neg_below), h, one);
    h = _mm512_sra_epi32(h, count);
    if constexpr (kClamp) h = _mm512_min_epi32(_mm512_max_epi32(h, lo), hi);
    return h;
  }
};

template <typename T, bool kCorrect, bool kClamp>
void LinearRun512(const T* a, const T* b, T* o, int64_t n, const AddSubLinear512& q) {
  const T* lin = q.lin_first ? a : b;
  const T* gen = q.lin_first ? b : a;
  const __m128i lin_count = _mm_cvtsi32_si128(q.lin_shift), gen_count = _mm_cvtsi32_si128(q.gen_shift);
  const __m512i goff = _mm512_set1_epi32(q.gen_offset), gmh = _mm512_set1_epi32(q.gen_mh),
                gmadd = _mm512_set1_epi32(q.gen_madd), ground = _mm512_set1_epi32(q.gen_round);
  const LinearOutput<kCorrect, kClamp> out(q, q.out_const, q.neg_below);
  const int mode = q.lin_sign < 0 ? 2 : q.gen_sign < 0 ? 1 : 0;
  auto step = [&](__m512i xl, __m512i xg) {
    const __m512i v = _mm512_add_epi32(xg, goff);
    const __m512i low = _mm512_srai_epi32(_mm512_add_epi32(_mm512_madd_epi16(v, gmadd), ground), 11);
    const __m512i g = _mm512_sra_epi32(_mm512_add_epi32(_mm512_mullo_epi32(v, gmh), low), gen_count);
    const __m512i l = _mm512_sll_epi32(xl, lin_count);
    const __m512i raw2 = mode == 0   ? _mm512_add_epi32(_mm512_add_epi32(l, g), g)
                         : mode == 1 ? _mm512_sub_epi32(_mm512_sub_epi32(l, g), g)
                                     : _mm512_sub_epi32(_mm512_add_epi32(g, g), l);
    return out(raw2);
  };
  // Without kClamp the activation range is the type's: the saturating narrowing clamps.
  auto narrow = [](__m512i h) {
    if constexpr (kClamp) return _mm512_cvtepi32_epi8(h);
    else if constexpr (std::is_unsigned_v<T>) return _mm512_cvtusepi32_epi8(_mm512_max_epi32(h, _mm512_setzero_si512()));
    else return _mm512_cvtsepi32_epi8(h);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), narrow(step(Load16(lin + i), Load16(gen + i))));
  if (i < n) {
    const __mmask16 k = TailMask(n - i);
    _mm_mask_storeu_epi8(o + i, k, narrow(step(Load16(lin + i, k), Load16(gen + i, k))));
  }
}

// AVX-512 VBMI (vpermi2b) is outside this file's ISA flags: only this function uses it, chosen
// when the caller allowed the table form (rt::CpuFeatures::avx512vbmi).
template <typename T, bool kCorrect, bool kClamp>
__attribute__((target("avx512vbmi"))) void LinearLutRun512(const T* a, const T* b, T* o, int64_t n,
                                                            const AddSubLinear512& q) {
  const T* lin = q.lin_first ? a : b;
  const T* gen = q.lin_first ? b : a;
  __m512i tab[4][4];
  for (int p = 0; p < 4; ++p)
    for (int r = 0; r < 4; ++r) tab[p][r] = _mm512_loadu_si512(q.lut_bytes.data() + p * 256 + r * 64);
  const LinearOutput<kCorrect, kClamp> out(q, q.lut_out_const, q.lut_neg_below);
  const __m128i lin_count = _mm_cvtsi32_si128(24 - q.lin_shift);
  const bool lin_add = q.lin_sign > 0;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t i = 0; i < n; i += 64) {
    const bool full = n - i >= 64;
    const __mmask64 k = full ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    // (Plain loads for whole vectors: a masked load costs one more vector uop.)
    const __m512i xg = full ? _mm512_loadu_si512(gen + i) : _mm512_maskz_loadu_epi8(k, gen + i);
    const __m512i xl = full ? _mm512_loadu_si512(lin + i) : _mm512_maskz_loadu_epi8(k, lin + i);
    const __mmask64 top = _mm512_movepi8_mask(xg);
    __m512i plane[4];
    for (int p = 0; p < 4; ++p)
      plane[p] = _mm512_mask_blend_epi8(top, _mm512_permutex2var_epi8(tab[p][0], xg, tab[p][1]),
                                        _mm512_permutex2var_epi8(tab[p][2], xg, tab[p][3]));
    // x_L << 8 in each word, shifted down to x_L << (lin_shift - 16).
    __m512i l_lo = _mm512_unpacklo_epi8(zero, xl), l_hi = _mm512_unpackhi_epi8(zero, xl);
    if constexpr (std::is_unsigned_v<T>) {
      l_lo = _mm512_srl_epi16(l_lo, lin_count);
      l_hi = _mm512_srl_epi16(l_hi, lin_count);
    } else {
      l_lo = _mm512_sra_epi16(l_lo, lin_count);
      l_hi = _mm512_sra_epi16(l_hi, lin_count);
    }
    const __m512i w01_lo = _mm512_unpacklo_epi8(plane[0], plane[1]), w01_hi = _mm512_unpackhi_epi8(plane[0], plane[1]);
    __m512i w23_lo = _mm512_unpacklo_epi8(plane[2], plane[3]), w23_hi = _mm512_unpackhi_epi8(plane[2], plane[3]);
    w23_lo = lin_add ? _mm512_add_epi16(w23_lo, l_lo) : _mm512_sub_epi16(w23_lo, l_lo);
    w23_hi = lin_add ? _mm512_add_epi16(w23_hi, l_hi) : _mm512_sub_epi16(w23_hi, l_hi);
    const __m512i h0 = out(_mm512_unpacklo_epi16(w01_lo, w23_lo)), h1 = out(_mm512_unpackhi_epi16(w01_lo, w23_lo));
    const __m512i h2 = out(_mm512_unpacklo_epi16(w01_hi, w23_hi)), h3 = out(_mm512_unpackhi_epi16(w01_hi, w23_hi));
    const __m512i w0 = _mm512_packs_epi32(h0, h1), w1 = _mm512_packs_epi32(h2, h3);
    const __m512i bytes = std::is_unsigned_v<T> ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1);
    if (full) _mm512_storeu_si512(o + i, bytes);
    else _mm512_mask_storeu_epi8(o + i, k, bytes);
  }
}

template <typename T, bool kCorrect, bool kClamp>
void LinearDispatch512(const T* a, const T* b, T* o, int64_t n, const AddSubLinear512& q) {
  if (q.lut) LinearLutRun512<T, kCorrect, kClamp>(a, b, o, n, q);
  else LinearRun512<T, kCorrect, kClamp>(a, b, o, n, q);
}

}  // namespace

template <typename T>
void AddSubLinearRun512(const T* a, const T* b, T* o, int64_t n, const AddSubLinear512& q) {
  if (q.correct_neg) {
    if (q.clamp) LinearDispatch512<T, true, true>(a, b, o, n, q);
    else LinearDispatch512<T, true, false>(a, b, o, n, q);
  } else {
    if (q.clamp) LinearDispatch512<T, false, true>(a, b, o, n, q);
    else LinearDispatch512<T, false, false>(a, b, o, n, q);
  }
}

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

namespace {

// One SQUARED_DIFFERENCE input's scaled value MBQM((x + offset) << left_shift, mult, shift). The
// input with the larger scale has the multiplier 2^30 without shift (ComputeSquaredDifferenceMultipliers
// gives it 1/2): exactly (x + offset) << (left_shift - 1), as for ADD's `linear` input (InputScale).
struct SquaredDifferenceInput {
  avx512q::Requant r;
  __m512i off;
  __m128i left, half_left;
  bool linear;
  SquaredDifferenceInput(int32_t offset, int32_t mult, int shift, int left_shift)
      : r(mult, shift), off(_mm512_set1_epi32(offset)), left(_mm_cvtsi32_si128(left_shift)),
        half_left(_mm_cvtsi32_si128(left_shift - 1)),
        linear(HalfMultiplier(mult, shift) && left_shift >= 1) {}
  template <bool kLinear>
  __m512i Scaled(__m512i x) const {
    const __m512i v = _mm512_add_epi32(x, off);
    if constexpr (kLinear) return _mm512_sll_epi32(v, half_left);
    else return r(_mm512_sll_epi32(v, left));
  }
};

// MultiplyByQuantizedMultiplier(x, mult, shift) of non-negative x (the squared differences) with
// shift <= 0 (e = -shift): SRDHM's floor((x·mult + 2^30) / 2^31) and the rounding shift's
// floor((h + 2^(e-1)) / 2^e) (ties up for h >= 0) nest into one 64-bit floor division,
// (x·mult + 2^30 + 2^(e-1)·2^31) >> (31 + e), per even and odd lane.
struct NonNegativeRequant {
  __m512i m, c;
  __m128i even_right, odd_shift;
  bool odd_left;  // e = 0: the odd lanes' result moves up one bit instead of down
  NonNegativeRequant(int32_t mult, int shift)
      : m(_mm512_set1_epi32(mult)),
        c(_mm512_set1_epi64((int64_t{1} << 30) + (shift < 0 ? int64_t{1} << (30 - shift) : 0))),
        even_right(_mm_cvtsi32_si128(31 - shift)), odd_shift(_mm_cvtsi32_si128(shift < 0 ? -shift - 1 : 1)),
        odd_left(shift == 0) {}
  static bool Applies(int32_t mult, int shift) { return mult >= 0 && shift <= 0 && shift >= -31; }
  __m512i operator()(__m512i x) const {
    const __m512i even = _mm512_srl_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), c), even_right);
    // The odd lanes' 64-bit results, shifted so that their low 32 bits land in the high dword.
    const __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m), c);
    const __m512i odd = odd_left ? _mm512_sll_epi64(po, odd_shift) : _mm512_srl_epi64(po, odd_shift);
    return _mm512_mask_blend_epi32(0xAAAA, even, odd);
  }
};

template <bool kALinear, bool kBLinear, typename OutRequant>
void SquaredDifferenceLanes(const int8_t* a, int a_step, const int8_t* b, int b_step, int8_t* o, int64_t n,
                            const SquaredDifferenceInput& in1, const SquaredDifferenceInput& in2,
                            const OutRequant& ro, __m512i out_off) {
  // A broadcast input: its one scaled value.
  const __m512i a_const = a_step ? __m512i{} : in1.Scaled<false>(_mm512_set1_epi32(a[0]));
  const __m512i b_const = b_step ? __m512i{} : in2.Scaled<false>(_mm512_set1_epi32(b[0]));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : TailMask(n - i);
    const __m512i va = a_step ? in1.Scaled<kALinear>(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, a + i))) : a_const;
    const __m512i vb = b_step ? in2.Scaled<kBLinear>(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, b + i))) : b_const;
    const __m512i d = _mm512_sub_epi32(va, vb);
    // The type's range: the saturating narrowing clamps.
    const __m512i y = _mm512_add_epi32(ro(_mm512_mullo_epi32(d, d)), out_off);
    _mm_mask_storeu_epi8(o + i, k, _mm512_cvtsepi32_epi8(y));
  }
}

}  // namespace

bool SquaredDifferenceAvx512Applies(const QuantBinaryParams& p) {
  if (p.in1_mult <= 0 || p.in2_mult <= 0 || p.out_mult <= 0 || p.in1_shift > 0 || p.in2_shift > 0 || p.out_shift > 30)
    return false;
  // Requant's int32 lanes: (x - zp) << 7 on the inputs, d * d << out_shift on the output.
  int64_t max1 = 0, max2 = 0;
  for (int x = -128; x <= 127; ++x) {
    const int32_t left = 1 << p.left_shift;
    max1 = std::max<int64_t>(max1, std::abs(MultiplyByQuantizedMultiplier((p.in1_offset + x) * left, p.in1_mult, p.in1_shift)));
    max2 = std::max<int64_t>(max2, std::abs(MultiplyByQuantizedMultiplier((p.in2_offset + x) * left, p.in2_mult, p.in2_shift)));
  }
  const int64_t d = max1 + max2;
  return ((d * d) << std::max(p.out_shift, 0)) < (int64_t{1} << 31);
}

void SquaredDifferenceRun512(const int8_t* a, int a_step, const int8_t* b, int b_step, int8_t* o, int64_t n,
                             const QuantBinaryParams& p) {
  const SquaredDifferenceInput in1(p.in1_offset, p.in1_mult, p.in1_shift, p.left_shift);
  const SquaredDifferenceInput in2(p.in2_offset, p.in2_mult, p.in2_shift, p.left_shift);
  const __m512i out_off = _mm512_set1_epi32(p.out_offset);
  // Only a streamed input's form matters (a broadcast one is scaled once).
  const bool l1 = a_step && in1.linear, l2 = b_step && in2.linear;
  const auto run = [&](const auto& ro) {
    if (l1 && l2) SquaredDifferenceLanes<true, true>(a, a_step, b, b_step, o, n, in1, in2, ro, out_off);
    else if (l1) SquaredDifferenceLanes<true, false>(a, a_step, b, b_step, o, n, in1, in2, ro, out_off);
    else if (l2) SquaredDifferenceLanes<false, true>(a, a_step, b, b_step, o, n, in1, in2, ro, out_off);
    else SquaredDifferenceLanes<false, false>(a, a_step, b, b_step, o, n, in1, in2, ro, out_off);
  };
  if (NonNegativeRequant::Applies(p.out_mult, p.out_shift)) run(NonNegativeRequant(p.out_mult, p.out_shift));
  else run(avx512q::Requant(p.out_mult, p.out_shift));
}

bool RequantizeNonNegativeBatch512(const int32_t* x, int32_t* y, int64_t n, int32_t mult, int shift) {
  if (!NonNegativeRequant::Applies(mult, shift)) return false;
  const NonNegativeRequant r(mult, shift);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : TailMask(n - i);
    _mm512_mask_storeu_epi32(y + i, k, r(_mm512_maskz_loadu_epi32(k, x + i)));
  }
  return true;
}

#define EDGEOPT_QBIN512_INSTANTIATE(T)                                                                    \
  template void AddSubRun512<T>(const T*, int, const T*, int, T*, int64_t, const QuantBinaryParams&); \
  template void AddSubChannelRows512<T>(const T*, bool, const int32_t*, T*, int64_t, int, const QuantBinaryParams&); \
  template AddSubLinear512 PlanAddSubLinear512<T>(const QuantBinaryParams&, bool);                            \
  template void AddSubLinearRun512<T>(const T*, const T*, T*, int64_t, const AddSubLinear512&);
EDGEOPT_QBIN512_INSTANTIATE(int8_t)
EDGEOPT_QBIN512_INSTANTIATE(uint8_t)
#undef EDGEOPT_QBIN512_INSTANTIATE
template void AddSubRun512<int16_t>(const int16_t*, int, const int16_t*, int, int16_t*, int64_t,
                                    const QuantBinaryParams&);
template void AddSubChannelRows512<int16_t>(const int16_t*, bool, const int32_t*, int16_t*, int64_t, int,
                                            const QuantBinaryParams&);

}  // namespace edgeopt::kernels::qbin
