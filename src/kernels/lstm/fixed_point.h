// Fixed-point arithmetic with the exact rounding and saturation of gemmlowp's fixedpoint.h,
// which TFLite 2.9's integer LSTM uses for its gate activations (int16 logistic/tanh) and for the
// layer-norm inverse square root (int32). Integer LSTM results must match TFLite bit for bit, so
// these follow gemmlowp's algorithms step by step (own code, same math).
//
// FixedPoint<T, I>: a value in [-2^I, 2^I) stored in the raw integer type T (int16_t or int32_t)
// with sizeof(T)*8 - 1 - I fractional bits.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace edgeopt::kernels::fxp {

template <typename T>
constexpr int kBits = 8 * static_cast<int>(sizeof(T));

// Wrapping conversion back to T (gemmlowp's plain integer ops on int16 wrap the same way).
template <typename T>
constexpr T Wrap(int64_t v) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<uint64_t>(v)));
}

// (a * b * 2) / 2^bits rounded to nearest, saturating -1 * -1.
template <typename T>
T Srdhm(T a, T b) {
  const bool overflow = a == b && a == std::numeric_limits<T>::min();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t half = int64_t{1} << (kBits<T> - 2);
  const int64_t nudge = ab >= 0 ? half : 1 - half;
  const T high = static_cast<T>((ab + nudge) / (int64_t{1} << (kBits<T> - 1)));
  return overflow ? std::numeric_limits<T>::max() : high;
}

// Division by 2^exponent rounding half away from zero.
template <typename T>
T RoundingDivideByPOT(T x, int exponent) {
  const int64_t mask = (int64_t{1} << exponent) - 1;
  const int64_t remainder = static_cast<int64_t>(x) & mask;
  const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return Wrap<T>((static_cast<int64_t>(x) >> exponent) + (remainder > threshold ? 1 : 0));
}

// x * 2^E: saturating for E > 0, rounding for E < 0.
template <int E, typename T>
T SaturatingRoundingMultiplyByPOT(T x) {
  if constexpr (E == 0) {
    return x;
  } else if constexpr (E > 0) {
    const int64_t threshold = (int64_t{1} << (kBits<T> - 1 - E)) - 1;
    if (x > threshold) return std::numeric_limits<T>::max();
    if (x < -threshold) return std::numeric_limits<T>::min();
    return Wrap<T>(static_cast<int64_t>(x) * (int64_t{1} << E));
  } else {
    return RoundingDivideByPOT<T>(x, -E);
  }
}

template <typename T>
T RoundingHalfSum(T a, T b) {
  const int64_t sum = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  const int64_t sign = sum >= 0 ? 1 : -1;
  return static_cast<T>((sum + sign) / 2);
}

// Adds, saturating when T is 16-bit (gemmlowp's AddSaturatingIf16Bit).
template <typename T>
T AddSaturatingIf16Bit(T a, T b) {
  const int64_t sum = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  if constexpr (sizeof(T) == 2) {
    return static_cast<T>(sum > 32767 ? 32767 : (sum < -32768 ? -32768 : sum));
  } else {
    return Wrap<T>(sum);
  }
}

template <typename T, int I>
struct FixedPoint {
  static constexpr int kIntegerBits = I;
  static constexpr int kFractionalBits = kBits<T> - 1 - I;
  T raw = 0;

  static FixedPoint FromRaw(T r) { return FixedPoint{r}; }
  template <int E>
  static FixedPoint ConstantPOT() {
    return FromRaw(static_cast<T>(T{1} << (kFractionalBits + E)));
  }
  static FixedPoint Zero() { return FromRaw(0); }
  static FixedPoint One() {
    return FromRaw(I == 0 ? std::numeric_limits<T>::max() : static_cast<T>(T{1} << (I == 0 ? 0 : kFractionalBits)));
  }
  // A constant given as gemmlowp writes it: the raw value of a 32-bit fixed-point number,
  // rounding-shifted down for 16-bit types.
  static FixedPoint FromInt32Constant(int32_t v) {
    return FromRaw(static_cast<T>(RoundingDivideByPOT<int32_t>(v, 32 - kBits<T>)));
  }
};

template <typename T, int A, int B>
FixedPoint<T, A + B> operator*(FixedPoint<T, A> a, FixedPoint<T, B> b) {
  return FixedPoint<T, A + B>::FromRaw(Srdhm<T>(a.raw, b.raw));
}
template <typename T, int I>
FixedPoint<T, I> operator+(FixedPoint<T, I> a, FixedPoint<T, I> b) {
  return FixedPoint<T, I>::FromRaw(Wrap<T>(static_cast<int64_t>(a.raw) + b.raw));
}
template <typename T, int I>
FixedPoint<T, I> operator-(FixedPoint<T, I> a, FixedPoint<T, I> b) {
  return FixedPoint<T, I>::FromRaw(Wrap<T>(static_cast<int64_t>(a.raw) - b.raw));
}
template <typename T, int I>
FixedPoint<T, I> operator-(FixedPoint<T, I> a) {
  return FixedPoint<T, I>::FromRaw(Wrap<T>(-static_cast<int64_t>(a.raw)));
}
template <typename T, int I>
FixedPoint<T, I> operator&(FixedPoint<T, I> a, FixedPoint<T, I> b) {
  return FixedPoint<T, I>::FromRaw(static_cast<T>(a.raw & b.raw));
}

template <int E, typename T, int I>
FixedPoint<T, I + E> ExactMulByPot(FixedPoint<T, I> a) {
  return FixedPoint<T, I + E>::FromRaw(a.raw);
}
template <int E, typename T, int I>
FixedPoint<T, I> SaturatingRoundingMultiplyByPOT(FixedPoint<T, I> a) {
  return FixedPoint<T, I>::FromRaw(SaturatingRoundingMultiplyByPOT<E, T>(a.raw));
}
template <int Dst, typename T, int Src>
FixedPoint<T, Dst> Rescale(FixedPoint<T, Src> x) {
  return FixedPoint<T, Dst>::FromRaw(SaturatingRoundingMultiplyByPOT<Src - Dst, T>(x.raw));
}
template <typename T, int I>
FixedPoint<T, I> RoundingHalfSum(FixedPoint<T, I> a, FixedPoint<T, I> b) {
  return FixedPoint<T, I>::FromRaw(RoundingHalfSum<T>(a.raw, b.raw));
}

// exp(x) for x in [-1/4, 0).
template <typename T>
FixedPoint<T, 0> ExpOnIntervalNegativeQuarterTo0(FixedPoint<T, 0> a) {
  using F = FixedPoint<T, 0>;
  const F constant_term = F::FromInt32Constant(1895147668);     // exp(-1/8)
  const F constant_1_over_3 = F::FromInt32Constant(715827883);  // 1/3
  const F x = a + F::template ConstantPOT<-3>();
  const F x2 = x * x;
  const F x3 = x2 * x;
  const F x4 = x2 * x2;
  const F x4_over_4 = SaturatingRoundingMultiplyByPOT<-2>(x4);
  const F poly = SaturatingRoundingMultiplyByPOT<-1>(((x4_over_4 + x3) * constant_1_over_3) + x2);
  return F::FromRaw(AddSaturatingIf16Bit<T>(constant_term.raw, (constant_term * (x + poly)).raw));
}

// exp(x) for x <= 0.
template <typename T, int I>
FixedPoint<T, 0> ExpOnNegativeValues(FixedPoint<T, I> a) {
  using InputF = FixedPoint<T, I>;
  using ResultF = FixedPoint<T, 0>;
  constexpr int kFrac = InputF::kFractionalBits;
  const InputF one_quarter = InputF::template ConstantPOT<-2>();
  const InputF mask = one_quarter - InputF::FromRaw(1);
  const InputF a_mod_quarter_minus_quarter = (a & mask) - one_quarter;
  ResultF result = ExpOnIntervalNegativeQuarterTo0<T>(Rescale<0>(a_mod_quarter_minus_quarter));
  const T remainder = (a_mod_quarter_minus_quarter - a).raw;
  auto barrel = [&](int exponent, int32_t multiplier) {
    if (I > exponent) {
      const int shift = kFrac + exponent;
      if (static_cast<int64_t>(remainder) & (int64_t{1} << shift))
        result = result * ResultF::FromInt32Constant(multiplier);
    }
  };
  barrel(-2, 1672461947);
  barrel(-1, 1302514674);
  barrel(0, 790015084);
  barrel(1, 290630308);
  barrel(2, 39332535);
  barrel(3, 720401);
  barrel(4, 242);
  if constexpr (I > 5) {
    constexpr int clamp_bits = 36 - I;
    const InputF clamp = InputF::FromInt32Constant(-(int32_t{1} << clamp_bits));  // -32
    if (a.raw < clamp.raw) result = ResultF::Zero();
  }
  if (a.raw == 0) result = ResultF::One();
  return result;
}

// (1 - x) / (1 + x) for x in (0, 1).
template <typename T>
FixedPoint<T, 0> OneMinusXOverOnePlusX(FixedPoint<T, 0> a) {
  using F0 = FixedPoint<T, 0>;
  using F2 = FixedPoint<T, 2>;
  const F0 half_denominator = RoundingHalfSum(a, F0::One());
  const F2 c48_17 = F2::FromInt32Constant(1515870810);
  const F2 c_neg32_17 = F2::FromInt32Constant(-1010580540);
  F2 x = c48_17 + half_denominator * c_neg32_17;
  for (int i = 0; i < 3; ++i) {
    const F2 hd_x = half_denominator * x;
    const F2 one_minus = F2::One() - hd_x;
    x = x + Rescale<2>(x * one_minus);
  }
  return Rescale<0>(x - F2::One());
}

// 1 / (1 + x) for x in (0, 1).
template <typename T>
FixedPoint<T, 0> OneOverOnePlusX(FixedPoint<T, 0> a) {
  using F0 = FixedPoint<T, 0>;
  using F2 = FixedPoint<T, 2>;
  const F0 half_denominator = RoundingHalfSum(a, F0::One());
  const F2 c48_17 = F2::FromInt32Constant(1515870810);
  const F2 c_neg32_17 = F2::FromInt32Constant(-1010580540);
  F2 x = c48_17 + half_denominator * c_neg32_17;
  for (int i = 0; i < 3; ++i) {
    const F2 hd_x = half_denominator * x;
    const F2 one_minus = F2::One() - hd_x;
    x = x + Rescale<2>(x * one_minus);
  }
  return Rescale<0>(ExactMulByPot<-1>(x));
}

template <typename T, int I>
FixedPoint<T, 0> Tanh(FixedPoint<T, I> a) {
  using ResultF = FixedPoint<T, 0>;
  const bool negative = a.raw < 0;
  const FixedPoint<T, I> n = negative ? a : -a;
  const ResultF t = OneMinusXOverOnePlusX<T>(ExpOnNegativeValues(ExactMulByPot<1>(n)));
  if (a.raw == 0) return ResultF::Zero();
  return negative ? -t : t;
}

template <typename T, int I>
FixedPoint<T, 0> Logistic(FixedPoint<T, I> a) {
  using InputF = FixedPoint<T, I>;
  using ResultF = FixedPoint<T, 0>;
  const bool positive = a.raw > 0;
  const InputF abs_input = positive ? a : -a;
  const ResultF if_positive = OneOverOnePlusX<T>(ExpOnNegativeValues(-abs_input));
  const ResultF if_negative = ResultF::One() - if_positive;
  if (a.raw == 0) return ResultF::FromInt32Constant(1 << 30);  // 0.5
  return positive ? if_positive : if_negative;
}

// TFLite's GetInvSqrtQuantizedMultiplierExp: 1/sqrt(input) as a Q31 multiplier and shift.
inline void InvSqrtQuantizedMultiplierExp(int32_t input, int reverse_shift, int32_t* multiplier, int* shift) {
  if (input <= 1) {
    *multiplier = std::numeric_limits<int32_t>::max();
    *shift = 0;
    return;
  }
  *shift = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++*shift;
  }
  const unsigned max_left_shift_bits = static_cast<unsigned>(std::countl_zero(static_cast<uint32_t>(input))) - 1;
  const unsigned left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
  *shift -= static_cast<int>(left_shift_bit_pairs);
  input <<= 2 * left_shift_bit_pairs;
  using F3 = FixedPoint<int32_t, 3>;
  using F0 = FixedPoint<int32_t, 0>;
  const F3 fixedpoint_input = F3::FromRaw(input >> 1);
  const F3 half_input = SaturatingRoundingMultiplyByPOT<-1>(fixedpoint_input);
  const F3 half_three = F3::FromRaw((1 << 28) + (1 << 27));
  F3 x = F3::One();
  for (int i = 0; i < 5; ++i) {
    const F3 x3 = Rescale<3>(x * x * x);
    x = Rescale<3>(half_three * x - half_input * x3);
  }
  const F0 half_sqrt_2 = F0::FromRaw(1518500250);
  x = x * half_sqrt_2;
  *multiplier = x.raw;
  if (*shift < 0) {
    *multiplier <<= -*shift;
    *shift = 0;
  }
  *shift *= reverse_shift;
}

}  // namespace edgeopt::kernels::fxp
