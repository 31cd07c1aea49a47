// Exact fp32 requantization constants.
//
// The integer output stages of the int8 kernels compute, per output channel, a result of the form
//   F(a) = floor((a * m + C) / 2^(31 + r)),  clamped to [lo, hi],
// for accumulators a (ruy's single rounding for any a, TFLite's two roundings of depthwise layers
// wherever the clamp hides the negative half; see the callers). In fp32 the same results take
// three instructions per 16 outputs: y = floor(float(a) * s + c), with the multiply-add and the
// conversion back both rounding down (AVX-512 embedded rounding). That is exact, not an
// approximation, once s and c are chosen right:
//  - float(a) is a exactly for |a| <= 2^24, and floor(RD(z)) = floor(z) for the exact real
//    z = a * s + c (RD(z) lies in [floor(z), z] when |z| < 2^24; beyond, both are clamped);
//  - F and G(a) = floor(a * s + c) are non-decreasing in a, so they agree on [-B, B] after the
//    clamp iff they cross every level v in (lo, hi] at the same accumulator: with F's threshold
//    T(v) = ceil((v 2^(31+r) - C) / m), G(T) >= v and G(T - 1) < v, i.e. c in [L, U) with
//    L = max(v - s T(v)), U = min(v - s T(v) + s), computed exactly in integers.
// FloatRequantConstants tries s at the float nearest m / 2^(31 + r) and its neighbours and picks
// c on the float grid inside [L, U); it fails (the caller keeps its integer stage) when none fits,
// typically for large right shifts r, whose thresholds need more than 24 bits of slope.
#pragma once

#include <cstdint>

namespace edgeopt::kernels {

// Limits of FloatRequantConstants: accumulator bound (exact float conversion) and levels hi - lo.
constexpr int64_t kFloatRequantMaxBound = int64_t{1} << 24;
constexpr int kFloatRequantMaxLevels = 255;

// Fills s, c with floor(a * s + c) clamped to [lo, hi] equal to F(a) above clamped to [lo, hi]
// for every |a| <= B, and with |a * s + c| < 2^30 there; false when no such pair was found or
// outside the limits (m >= 0; 0 <= r <= 29; B <= kFloatRequantMaxBound; hi - lo <=
// kFloatRequantMaxLevels). m = 0 (or lo == hi): s = 0 and c the clamped constant.
// The "bits" form of the same s: accumulators started kFloatBitsBase + M higher (M an integer
// with M + a in [2^23, 2^24) over the range) hold, read as floats, exactly M + a (their exponent
// field is 2^23's), so no conversion is needed: y = floor((M + a) * s + c_bits) with c_bits a
// float and M s + c_bits inside the same window [L, U) as c (one rounding, as above). M is
// solved for directly: (M ms - L) mod (the float grid's step at c_bits) < U - L. ok is false
// when no M in range gives one (or the range spans 2^23 or more); the searches fill it only
// where asked and only for the s they return.
constexpr uint32_t kFloatBitsBase = 0x4A800000u;  // the bits of 2^23 minus 2^23
struct FloatBits {
  float c = 0.f;
  uint32_t offset = 0;  // kFloatBitsBase + M: added (wrapping) to the accumulators' start
  bool ok = false;
};

bool FloatRequantConstants(int64_t m, int right, __int128 C, int64_t B, int32_t lo, int32_t hi, float* s, float* c,
                           FloatBits* bits = nullptr);

// The same for an integer stage whose constant depends on the accumulator's sign: C_pos for a >= 0,
// C_neg for a < 0 (TFLite's two roundings, ties away from zero, below the zero point too). The
// fp32 form then picks c_pos or c_neg by the sign of acc (one more compare and blend); both sides
// share s and are proved as above over [0, B] and [-B, -1].
bool FloatRequantConstantsSplit(int64_t m, int right, __int128 C_pos, __int128 C_neg, int64_t B, int32_t lo,
                                int32_t hi, float* s, float* c_pos, float* c_neg);

// The same over an accumulator range [amin, amax] (|amin|, |amax| <= kFloatRequantMaxBound). The
// kernels run it on accumulators shifted by an integer K (added to their start values) with C -
// K m for C, which makes c small: near the output zero point a float's last bit (2^-16 at 128)
// can be wider than the window [L, U) of a channel with a large right shift, near 0 it is not.
bool FloatRequantConstantsRange(int64_t m, int right, __int128 C, int64_t amin, int64_t amax, int32_t lo, int32_t hi,
                                float* s, float* c,
                                FloatBits* bits = nullptr);

// The two-multiply-add form for channels where no single float s places every threshold:
//   y = floor(a * s_hi + RN(a * s_lo + c))
// (the inner multiply-add rounding to nearest, the outer one and the conversion rounding down),
// where s_hi + s_lo is m / 2^(31 + r) exactly (m has at most 31 significant bits: s_hi takes the
// top 24, s_lo the rest). The only inexact step is the inner rounding, whose error e is below one
// ulp of max |a s_lo + c| (0 when a s_lo + c is always a multiple of 2^-(31 + r) below 2^24 of
// them); c is chosen with L + e <= c and c + e < U (in exact integers), which proves the result
// as above (the real argument a m / 2^(31 + r) + c + e(a) grows with a since m / 2^(31 + r) >
// 2 e). Over [amin, amax] as FloatRequantConstantsRange (c then near 0, so e is tiny): false when
// outside the limits or no c fits.
bool FloatRequantConstants2(int64_t m, int right, __int128 C, int64_t amin, int64_t amax, int32_t lo, int32_t hi,
                            float* s_hi, float* s_lo, float* c);

// Whether the int8 kernels look for these constants when they prepare (default: yes). Tests turn
// it off around an interpreter's creation to keep covering the integer stages the fp32 form
// replaces (the bytes are the same either way).
bool FloatRequantEnabled();
void SetFloatRequantEnabled(bool on);
// The same for the bits form (FloatBits) where the kernels would take it (tests cover the plain
// fp32 form with it off).
bool FloatBitsEnabled();
void SetFloatBitsEnabled(bool on);

}  // namespace edgeopt::kernels
