// Lookup tables as TFLite 2.9 builds them, and small numeric helpers shared by the
// elementwise, activation and conversion kernels.
//
// - 8-bit tables (LOGISTIC/TANH/ELU/GELU on int8/uint8): the function is evaluated in float on
//   every dequantized input value, rounded and clamped (activations.cc PopulateLookupTable).
// - int16 interpolation tables (SOFTMAX int16): 513 entries over [min, max], with a midpoint
//   bias correction (common.h gen_lut / lut_lookup).
// - The Q0.16 sigmoid table used by the non-power-of-two int16 LOGISTIC/TANH kernels.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace edgeopt::kernels {

// float -> int32 as the reference runtime's x86-64 build converts (cvttss2si): truncation,
// NaN and out-of-range values give INT32_MIN. C++ leaves the latter undefined; spelling it out
// keeps our kernels deterministic and equal to TFLite where TFLite relies on it.
inline int32_t TruncateToInt32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}
inline int64_t TruncateToInt64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// A 256-entry table mapping every 8-bit input value (indexed by its byte) to the quantized
// f(dequantized input). T is int8_t or uint8_t.
template <typename T, typename F>
std::array<uint8_t, 256> BuildLut8(float input_scale, int32_t input_zero_point, float output_scale,
                                   int32_t output_zero_point, F&& f) {
  std::array<uint8_t, 256> table{};
  const float inverse_scale = 1 / output_scale;
  const int32_t minval = std::numeric_limits<T>::min();
  const int32_t maxval = std::numeric_limits<T>::max();
  for (int32_t val = minval; val <= maxval; ++val) {
    const float dequantized = input_scale * static_cast<float>(val - input_zero_point);
    const float transformed = f(dequantized);
    const float rescaled = std::round(transformed * inverse_scale);
    int32_t quantized = TruncateToInt32(rescaled + static_cast<float>(output_zero_point));
    quantized = quantized < minval ? minval : (quantized > maxval ? maxval : quantized);
    table[static_cast<uint8_t>(static_cast<T>(val))] = static_cast<uint8_t>(static_cast<T>(quantized));
  }
  return table;
}

inline constexpr int kInt16LutSize = 513;

// 512 interpolation intervals of func over [input_min, input_max] (plus one entry for the last
// slope), outputs scaled from [output_min, output_max] to int16.
void BuildInt16Lut(double (*func)(double), double input_min, double input_max, double output_min, double output_max,
                   int16_t* lut);

// Interpolated lookup in a 513-entry table: the top 9 bits of value select the interval.
inline int16_t Int16LutLookup(int16_t value, const int16_t* lut) {
  const auto index = static_cast<uint16_t>(256 + (value >> 7));
  const int16_t offset = static_cast<int16_t>(value & 0x7f);
  const int16_t base = lut[index];
  const auto slope = static_cast<int16_t>(lut[index + 1] - lut[index]);
  const int delta = (slope * offset + 64) >> 7;
  return static_cast<int16_t>(base + delta);
}

// sigmoid(i / 24) in Q0.16 for i in [0, 256), as LiteRT tabulates it (sigmoid_table_uint16).
const std::array<uint16_t, 256>& SigmoidTableQ016();

// TFLite's CheckedLog2: true if x is a power of two (within 1e-3 in log2).
bool CheckedLog2(float x, int* log2_result);

}  // namespace edgeopt::kernels
