// Fixed-point requantization exactly as LiteRT (TFLite 2.9, default double-rounding build)
// computes it, so integer kernels match the reference runtime bit for bit.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/tensor.h"

namespace edgeopt::kernels {

// Splits a positive real multiplier into a Q31 integer and a power-of-two exponent:
// real ≈ quantized_multiplier * 2^(shift - 31).
inline void QuantizeMultiplier(double multiplier, int32_t* quantized_multiplier, int* shift) {
  if (multiplier == 0.0) {
    *quantized_multiplier = 0;
    *shift = 0;
    return;
  }
  const double q = std::frexp(multiplier, shift);
  auto q_fixed = static_cast<int64_t>(std::round(q * (int64_t{1} << 31)));
  if (q_fixed == (int64_t{1} << 31)) {
    q_fixed /= 2;
    ++*shift;
  }
  if (*shift < -31) {
    *shift = 0;
    q_fixed = 0;
  }
  *quantized_multiplier = static_cast<int32_t>(q_fixed);
}

// For multipliers < 1: shift is <= 0 (a right shift).
inline void QuantizeMultiplierSmallerThanOneExp(double multiplier, int32_t* quantized_multiplier, int* left_shift) {
  QuantizeMultiplier(multiplier, quantized_multiplier, left_shift);
}

// For multipliers > 1: shift is >= 0.
inline void QuantizeMultiplierGreaterThanOne(double multiplier, int32_t* quantized_multiplier, int* left_shift) {
  QuantizeMultiplier(multiplier, quantized_multiplier, left_shift);
}

// gemmlowp's SaturatingRoundingDoublingHighMul: (a*b*2 + 2^31) >> 32 with ties away from zero.
inline int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  const int32_t high = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
  return overflow ? std::numeric_limits<int32_t>::max() : high;
}

// Division by 2^exponent rounding half away from zero.
inline int32_t RoundingDivideByPOT(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

inline int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t quantized_multiplier, int shift) {
  const int left_shift = shift > 0 ? shift : 0;
  const int right_shift = shift > 0 ? 0 : -shift;
  return RoundingDivideByPOT(
      SaturatingRoundingDoublingHighMul(static_cast<int32_t>(static_cast<uint32_t>(x) << left_shift), quantized_multiplier),
      right_shift);
}

inline int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t quantized_multiplier, int left_shift) {
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, quantized_multiplier), -left_shift);
}

inline int32_t MultiplyByQuantizedMultiplierGreaterThanOne(int32_t x, int32_t quantized_multiplier, int left_shift) {
  return SaturatingRoundingDoublingHighMul(static_cast<int32_t>(static_cast<uint32_t>(x) << left_shift),
                                           quantized_multiplier);
}

// The 64-bit accumulator variant used by 16x8 kernels (int64 bias).
inline int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift) {
  const int32_t reduced_multiplier =
      quantized_multiplier < 0x7FFF0000 ? ((quantized_multiplier + (1 << 15)) >> 16) : 0x7FFF;
  const int total_shift = 15 - shift;
  x = x * static_cast<int64_t>(reduced_multiplier) + (int64_t{1} << (total_shift - 1));
  return static_cast<int32_t>(x >> total_shift);
}

// An int64 accumulator wrapped to int32, as LiteRT's int32 accumulators wrap.
inline int32_t WrapToInt32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

// Requantization as TFLite 2.9's GEMM-based int8/uint8 kernels do it on x86 (CONV_2D, and the
// other ops routed through cpu_backend_gemm): ruy's AVX2 8-bit kernel rounds both steps half
// toward +infinity, (x * m + 2^30) >> 31 and then (v + 2^(s-1)) >> s, instead of the reference
// MultiplyByQuantizedMultiplier's ties away from zero. The two differ by 1 LSB on exact ties of
// the second step (about 1 output in 500), so kernels whose 2.9 counterpart runs through ruy use
// this one to stay bit-exact with it.
inline int32_t MultiplyByQuantizedMultiplierRuy(int32_t x, int32_t quantized_multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const auto shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  const int64_t product = static_cast<int64_t>(shifted) * quantized_multiplier;
  const auto high = static_cast<int32_t>((product + (int64_t{1} << 30)) >> 31);
  if (right == 0) return high;
  const int32_t nudge = int32_t{1} << (right - 1);
  if (high > INT32_MAX - nudge) return int32_t{1} << (31 - right);  // ruy's overflow lane
  return (high + nudge) >> right;
}

// ruy's portable path (its kernels for sources wider than 8 bits, e.g. 16x8 FULLY_CONNECTED in
// 2.9): one rounding, half toward +infinity, of x * m * 2^(shift - 31).
inline int32_t MultiplyByQuantizedMultiplierSingleRound(int32_t x, int32_t quantized_multiplier, int shift) {
  const int total_shift = 31 - shift;
  const int64_t round = int64_t{1} << (total_shift - 1);
  return static_cast<int32_t>((static_cast<int64_t>(x) * quantized_multiplier + round) >> total_shift);
}

// Range of a quantized type.
template <typename T>
constexpr int32_t QMin() { return std::numeric_limits<T>::min(); }
template <typename T>
constexpr int32_t QMax() { return std::numeric_limits<T>::max(); }
inline int32_t QMinOf(DType t) {
  switch (t) {
    case DType::kInt8: return -128;
    case DType::kUInt8: return 0;
    case DType::kInt16: return -32768;
    case DType::kInt4: return -8;
    default: return std::numeric_limits<int32_t>::min();
  }
}
inline int32_t QMaxOf(DType t) {
  switch (t) {
    case DType::kInt8: return 127;
    case DType::kUInt8: return 255;
    case DType::kInt16: return 32767;
    case DType::kInt4: return 7;
    default: return std::numeric_limits<int32_t>::max();
  }
}

// Clamp bounds for a fused activation on a quantized output (LiteRT's
// CalculateActivationRangeQuantized). Returns false for activations that cannot be fused
// (TANH, SIGN_BIT).
bool QuantizedActivationRange(int activation, const rt::RtTensor& output, int32_t* act_min, int32_t* act_max);
// Float clamp bounds for a fused activation. Returns false for unsupported activations.
bool FloatActivationRange(int activation, float* act_min, float* act_max);

inline float ApplyFloatActivation(float x, float lo, float hi) { return std::min(std::max(x, lo), hi); }

// Output size and padding for convolution/pooling windows (LiteRT's ComputeOutSize and
// ComputePaddingWithOffset). `padding` is tflite::Padding (SAME = 0, VALID = 1).
int ComputeOutSize(int padding, int image_size, int filter_size, int stride, int dilation = 1);
// Returns the leading padding; *offset gets the extra trailing pixel when total padding is odd.
int ComputePadding(int stride, int dilation, int in_size, int filter_size, int out_size, int* offset);

// Per-channel requantization parameters for conv/fc: multiplier = in_scale*w_scale[c]/out_scale.
struct PerChannelQuant {
  std::vector<int32_t> multiplier;
  std::vector<int> shift;
};
// As LiteRT's PopulateConvolutionQuantizationParams: double(in) * double(w[c]) / double(out).
PerChannelQuant ComputePerChannelQuant(float input_scale, const rt::RtTensor& filter, float output_scale,
                                       int num_channels);
// LiteRT's legacy per-tensor multiplier (GetQuantizedConvolutionMultipler), used by uint8
// CONV_2D/DEPTHWISE and by FULLY_CONNECTED: the product in_scale*w_scale is taken in float first.
double LegacyConvMultiplier(float input_scale, float filter_scale, float output_scale);

// Rounding as TFLite's TfLiteRound / std::round (half away from zero).
inline float Round(float x) { return std::round(x); }

// std::round(v) as an int32 for 0 <= v < 2^31, without the library call: the integer part, plus
// one at a fraction >= 0.5 (v - trunc(v) is exact).
inline int32_t RoundNonNegative(float v) {
  const auto t = static_cast<int32_t>(v);
  return t + (v - static_cast<float>(t) >= 0.5f ? 1 : 0);
}

}  // namespace edgeopt::kernels
