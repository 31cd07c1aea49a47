// gemmlowp-style fixed-point arithmetic (int16 and int32 raw values), as LiteRT's quantized
// kernels use it, so results match TFLite 2.9 bit for bit: exp on negative values, 1/(1+x),
// logistic, tanh, reciprocal and inverse square root multipliers.
//
// FixedPoint<Raw, IntBits> holds a value v as raw = v * 2^(bits(Raw) - 1 - IntBits). Products add
// integer bits; Rescale moves to another format with saturating rounding shifts. Constants are
// given as int32 raws (Q0.31 / Q2.29 ...) and rounded down to 16 bits for int16, exactly as
// gemmlowp's RescaleConstantInitializer does.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels::fp {

// ----------------------------------------------------------------------------------------------
// Scalar primitives for Raw = int16_t / int32_t.

template <typename Raw>
inline Raw SRDHM(Raw a, Raw b) {
  if constexpr (std::is_same_v<Raw, int32_t>) {
    return SaturatingRoundingDoublingHighMul(a, b);
  } else {
    const bool overflow = a == b && a == std::numeric_limits<int16_t>::min();
    const int32_t ab = static_cast<int32_t>(a) * static_cast<int32_t>(b);
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    const auto high = static_cast<int16_t>((ab + nudge) / (1 << 15));
    return overflow ? std::numeric_limits<int16_t>::max() : high;
  }
}

// x / 2^exponent, rounding half away from zero (gemmlowp RoundingDivideByPOT).
template <typename Raw>
inline Raw RoundingDivByPOT(Raw x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t xi = x;
  const int32_t remainder = xi & mask;
  const int32_t threshold = (mask >> 1) + (xi < 0 ? 1 : 0);
  return static_cast<Raw>((xi >> exponent) + (remainder > threshold ? 1 : 0));
}

// x * 2^exponent with saturation for exponent > 0, rounding division for exponent < 0.
template <typename Raw>
inline Raw SaturatingRoundingMulByPOT(Raw x, int exponent) {
  if (exponent == 0) return x;
  if (exponent < 0) return RoundingDivByPOT<Raw>(x, -exponent);
  constexpr int kBits = 8 * sizeof(Raw);
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (kBits - 1 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<Raw>::max();
  if (x < -threshold) return std::numeric_limits<Raw>::min();
  return static_cast<Raw>(static_cast<int64_t>(x) * (int64_t{1} << exponent));
}

// Wrapping add/sub/neg as gemmlowp does on the raw type.
template <typename Raw>
inline Raw WrapAdd(Raw a, Raw b) {
  return static_cast<Raw>(static_cast<std::make_unsigned_t<Raw>>(a) + static_cast<std::make_unsigned_t<Raw>>(b));
}
template <typename Raw>
inline Raw WrapSub(Raw a, Raw b) {
  return static_cast<Raw>(static_cast<std::make_unsigned_t<Raw>>(a) - static_cast<std::make_unsigned_t<Raw>>(b));
}
template <typename Raw>
inline Raw WrapNeg(Raw a) {
  return static_cast<Raw>(std::make_unsigned_t<Raw>(0) - static_cast<std::make_unsigned_t<Raw>>(a));
}

template <typename Raw>
inline Raw RoundingHalfSum(Raw a, Raw b) {
  const int64_t sum = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  const int64_t sign = sum >= 0 ? 1 : -1;
  return static_cast<Raw>((sum + sign) / 2);
}

// An int32 constant (raw in 32-bit precision) brought to the raw type's precision.
template <typename Raw>
constexpr Raw RescaleConstant(int32_t raw32) {
  if constexpr (std::is_same_v<Raw, int32_t>) {
    return raw32;
  } else {
    return RoundingDivByPOT<int32_t>(raw32, 16);
  }
}

// ----------------------------------------------------------------------------------------------
// FixedPoint values.

template <typename Raw, int IntBits>
struct FixedPoint {
  static constexpr int kTotalBits = 8 * sizeof(Raw);
  static constexpr int kIntegerBits = IntBits;
  static constexpr int kFractionalBits = kTotalBits - 1 - IntBits;
  Raw raw = 0;

  static FixedPoint FromRaw(Raw r) { return FixedPoint{r}; }
  static FixedPoint Zero() { return FixedPoint{0}; }
  static FixedPoint One() {
    return FixedPoint{IntBits == 0 ? std::numeric_limits<Raw>::max() : static_cast<Raw>(Raw(1) << kFractionalBits)};
  }
  template <int Exponent>
  static FixedPoint ConstantPOT() {
    static_assert(kFractionalBits + Exponent >= 0 && kFractionalBits + Exponent < kTotalBits - 1);
    return FixedPoint{static_cast<Raw>(Raw(1) << (kFractionalBits + Exponent))};
  }
  // A constant given in 32-bit raw precision for this format.
  static FixedPoint Constant32(int32_t raw32) { return FixedPoint{RescaleConstant<Raw>(raw32)}; }
};

template <typename Raw, int A, int B>
inline FixedPoint<Raw, A + B> operator*(FixedPoint<Raw, A> a, FixedPoint<Raw, B> b) {
  return FixedPoint<Raw, A + B>{SRDHM<Raw>(a.raw, b.raw)};
}
template <typename Raw, int I>
inline FixedPoint<Raw, I> operator+(FixedPoint<Raw, I> a, FixedPoint<Raw, I> b) {
  return FixedPoint<Raw, I>{WrapAdd(a.raw, b.raw)};
}
template <typename Raw, int I>
inline FixedPoint<Raw, I> operator-(FixedPoint<Raw, I> a, FixedPoint<Raw, I> b) {
  return FixedPoint<Raw, I>{WrapSub(a.raw, b.raw)};
}
template <typename Raw, int I>
inline FixedPoint<Raw, I> operator-(FixedPoint<Raw, I> a) {
  return FixedPoint<Raw, I>{WrapNeg(a.raw)};
}

// Same value in another format (saturating).
template <int DstBits, typename Raw, int SrcBits>
inline FixedPoint<Raw, DstBits> Rescale(FixedPoint<Raw, SrcBits> x) {
  return FixedPoint<Raw, DstBits>{SaturatingRoundingMulByPOT<Raw>(x.raw, SrcBits - DstBits)};
}

// x * 2^Exponent, exact: only the number of integer bits changes.
template <int Exponent, typename Raw, int I>
inline FixedPoint<Raw, I + Exponent> ExactMulByPot(FixedPoint<Raw, I> x) {
  return FixedPoint<Raw, I + Exponent>{x.raw};
}

template <int Exponent, typename Raw, int I>
inline FixedPoint<Raw, I> SaturatingRoundingMultiplyByPOT(FixedPoint<Raw, I> x) {
  return FixedPoint<Raw, I>{SaturatingRoundingMulByPOT<Raw>(x.raw, Exponent)};
}

// Saturating add for int16, plain add for int32 (gemmlowp AddSaturatingIf16Bit).
template <typename Raw, int I>
inline FixedPoint<Raw, I> AddSaturatingIf16Bit(FixedPoint<Raw, I> a, FixedPoint<Raw, I> b) {
  if constexpr (std::is_same_v<Raw, int16_t>) {
    const int32_t s = static_cast<int32_t>(a.raw) + b.raw;
    return FixedPoint<Raw, I>{static_cast<int16_t>(s > 32767 ? 32767 : (s < -32768 ? -32768 : s))};
  } else {
    return a + b;
  }
}

// exp(a) for a in [-1/4, 0).
template <typename Raw>
inline FixedPoint<Raw, 0> ExpOnIntervalNegQuarterTo0(FixedPoint<Raw, 0> a) {
  using F = FixedPoint<Raw, 0>;
  const F constant_term = F::Constant32(1895147668);     // exp(-1/8)
  const F constant_1_over_3 = F::Constant32(715827883);  // 1/3
  // Taylor expansion around -1/8: x = a + 1/8.
  const F x = a + F::template ConstantPOT<-3>();
  const F x2 = x * x;
  const F x3 = x2 * x;
  const F x4 = x2 * x2;
  const F x4_over_4 = SaturatingRoundingMultiplyByPOT<-2>(x4);
  const F poly = SaturatingRoundingMultiplyByPOT<-1>(((x4_over_4 + x3) * constant_1_over_3) + x2);
  return AddSaturatingIf16Bit(constant_term, constant_term * (x + poly));
}

// exp(a) for a <= 0.
template <typename Raw, int I>
inline FixedPoint<Raw, 0> ExpOnNegativeValues(FixedPoint<Raw, I> a) {
  using InputF = FixedPoint<Raw, I>;
  using ResultF = FixedPoint<Raw, 0>;
  constexpr int kFractionalBits = InputF::kFractionalBits;
  const InputF one_quarter = InputF::template ConstantPOT<-2>();
  const InputF mask = one_quarter - InputF::FromRaw(1);
  const InputF a_mod_quarter_minus_one_quarter = InputF::FromRaw(static_cast<Raw>(a.raw & mask.raw)) - one_quarter;
  ResultF result = ExpOnIntervalNegQuarterTo0(Rescale<0>(a_mod_quarter_minus_one_quarter));
  const Raw remainder = (a_mod_quarter_minus_one_quarter - a).raw;

  // Barrel shifter: multiply by exp(-2^k) for each set bit of the remainder.
  struct Step {
    int exponent;
    int32_t multiplier;
  };
  constexpr Step kSteps[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                             {2, 39332535},    {3, 720401},      {4, 242}};
  for (const Step& s : kSteps) {
    if (I > s.exponent) {
      const int shift = kFractionalBits + s.exponent;
      const ResultF m = ResultF::Constant32(s.multiplier);
      if ((static_cast<int32_t>(remainder) >> shift) & 1) result = result * m;
    }
  }
  if constexpr (I > 5) {
    const int clamp_b = 36 - I;
    const InputF clamp = InputF::Constant32(-(1 << clamp_b));
    if (a.raw < clamp.raw) result = ResultF::Zero();
  }
  if (a.raw == 0) result = ResultF::One();
  return result;
}

// 1 / (1 + a) for a in [0, 1).
template <typename Raw>
inline FixedPoint<Raw, 0> OneOverOnePlusXForXIn01(FixedPoint<Raw, 0> a) {
  using F0 = FixedPoint<Raw, 0>;
  using F2 = FixedPoint<Raw, 2>;
  const F0 half_denominator = F0::FromRaw(RoundingHalfSum<Raw>(a.raw, F0::One().raw));
  const F2 constant_48_over_17 = F2::Constant32(1515870810);
  const F2 constant_neg_32_over_17 = F2::Constant32(-1010580540);
  F2 x = constant_48_over_17 + half_denominator * constant_neg_32_over_17;
  for (int i = 0; i < 3; ++i) {
    const F2 half_denominator_times_x = half_denominator * x;
    const F2 one_minus = F2::One() - half_denominator_times_x;
    x = x + Rescale<2>(x * one_minus);
  }
  return Rescale<0>(ExactMulByPot<-1>(x));
}

// (1 - a) / (1 + a) for a in [0, 1).
template <typename Raw>
inline FixedPoint<Raw, 0> OneMinusXOverOnePlusXForXIn01(FixedPoint<Raw, 0> a) {
  using F0 = FixedPoint<Raw, 0>;
  using F2 = FixedPoint<Raw, 2>;
  const F0 half_denominator = F0::FromRaw(RoundingHalfSum<Raw>(a.raw, F0::One().raw));
  const F2 constant_48_over_17 = F2::Constant32(1515870810);
  const F2 constant_neg_32_over_17 = F2::Constant32(-1010580540);
  F2 x = constant_48_over_17 + half_denominator * constant_neg_32_over_17;
  for (int i = 0; i < 3; ++i) {
    const F2 half_denominator_times_x = half_denominator * x;
    const F2 one_minus = F2::One() - half_denominator_times_x;
    x = x + Rescale<2>(x * one_minus);
  }
  return Rescale<0>(x - F2::One());
}

template <typename Raw, int I>
inline FixedPoint<Raw, 0> Logistic(FixedPoint<Raw, I> a) {
  using InputF = FixedPoint<Raw, I>;
  using ResultF = FixedPoint<Raw, 0>;
  const bool positive = a.raw > 0;
  const InputF abs_input = positive ? a : -a;
  const ResultF result_if_positive = OneOverOnePlusXForXIn01(ExpOnNegativeValues(-abs_input));
  const ResultF result_if_negative = ResultF::One() - result_if_positive;
  if (a.raw == 0) return ResultF::Constant32(1 << 30);
  return positive ? result_if_positive : result_if_negative;
}

template <typename Raw, int I>
inline FixedPoint<Raw, 0> Tanh(FixedPoint<Raw, I> a) {
  using ResultF = FixedPoint<Raw, 0>;
  const bool negative = a.raw < 0;
  const FixedPoint<Raw, I> n = negative ? a : -a;
  const ResultF t = OneMinusXOverOnePlusXForXIn01(ExpOnNegativeValues(ExactMulByPot<1>(n)));
  if (a.raw == 0) return ResultF::Zero();
  return negative ? -t : t;
}

// ----------------------------------------------------------------------------------------------
// Helpers built on the above (LiteRT kernels/internal/common.h).

inline int CountLeadingZeros32(uint32_t x) { return x == 0 ? 32 : __builtin_clz(x); }

// Redundant sign bits of a signed 32-bit value (31 for 0 and -1).
inline int CountLeadingSignBits32(int32_t x) { return __builtin_clrsb(x); }

// 1/x as a Q0.31 multiplier; *num_bits_over_unit receives the extra exponent.
inline int32_t GetReciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit) {
  const int headroom_plus_one = CountLeadingZeros32(static_cast<uint32_t>(x));
  *num_bits_over_unit = x_integer_digits - headroom_plus_one;
  const auto shifted_sum_minus_one =
      static_cast<int32_t>((static_cast<uint32_t>(x) << headroom_plus_one) - (static_cast<uint32_t>(1) << 31));
  return OneOverOnePlusXForXIn01(FixedPoint<int32_t, 0>::FromRaw(shifted_sum_minus_one)).raw;
}

// 1/sqrt(input) as a multiplier and shift (LiteRT GetInvSqrtQuantizedMultiplierExp).
// reverse_shift = -1 gives the shift in MultiplyByQuantizedMultiplier's convention.
inline void GetInvSqrtQuantizedMultiplierExp(int32_t input, int reverse_shift, int32_t* output_inv_sqrt,
                                             int* output_shift) {
  if (input <= 1) {
    *output_inv_sqrt = std::numeric_limits<int32_t>::max();
    *output_shift = 0;
    return;
  }
  *output_shift = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++*output_shift;
  }
  const unsigned max_left_shift_bits = static_cast<unsigned>(CountLeadingZeros32(static_cast<uint32_t>(input))) - 1;
  const unsigned max_left_shift_bit_pairs = max_left_shift_bits / 2;
  const unsigned left_shift_bit_pairs = max_left_shift_bit_pairs - 1;
  *output_shift -= static_cast<int>(left_shift_bit_pairs);
  input <<= 2 * left_shift_bit_pairs;
  using F3 = FixedPoint<int32_t, 3>;
  using F0 = FixedPoint<int32_t, 0>;
  const F3 fixedpoint_input = F3::FromRaw(input >> 1);
  const F3 fixedpoint_half_input = SaturatingRoundingMultiplyByPOT<-1>(fixedpoint_input);
  const F3 fixedpoint_half_three = F3::FromRaw((1 << 28) + (1 << 27));
  F3 x = F3::One();
  for (int i = 0; i < 5; ++i) {
    const F3 x3 = Rescale<3>(x * x * x);
    x = Rescale<3>(fixedpoint_half_three * x - fixedpoint_half_input * x3);
  }
  const F0 fixedpoint_half_sqrt_2 = F0::FromRaw(1518500250);
  x = x * fixedpoint_half_sqrt_2;
  *output_inv_sqrt = x.raw;
  if (*output_shift < 0) {
    *output_inv_sqrt <<= -*output_shift;
    *output_shift = 0;
  }
  *output_shift *= reverse_shift;
}

}  // namespace edgeopt::kernels::fp
