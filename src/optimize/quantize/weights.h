// Weight quantization primitives shared by the quantization modes: symmetric int8 per-tensor
// or per-axis, bias quantization, float16 conversion, and reading constants as floats.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

// Float values of a float32/float16 constant (empty span if not a float constant).
std::vector<float> ConstantAsFloat(const Graph& g, const Tensor& t);

struct QuantizedWeights {
  std::vector<int8_t> values;
  std::vector<float> scales;  // one, or one per channel along `axis`
  int axis = 0;
};

// Symmetric int8 in [-127, 127]: scale = max|w| / 127 (per channel along `axis` when
// per_axis). All-zero channels get scale 1 so dequantization stays exact. `min_scales` (empty,
// one value, or one per channel) is a floor under each scale: a channel whose weights are tiny
// next to its bias needs a larger weight scale, or its int32 bias (scale input x weight)
// saturates (see MinWeightScalesForBias).
QuantizedWeights QuantizeSymmetricInt8(std::span<const float> w, const std::vector<int32_t>& shape, bool per_axis,
                                       int axis, std::span<const float> min_scales = {});

// The smallest weight scale per channel (one value when !per_axis) that keeps
// round(bias / (input_scale * weight_scale)) within +-kMaxBiasMagnitude, leaving the rest of the
// int32 accumulator for the products. Without it a near-dead channel (weights ~1e-5, bias ~-500)
// gets a bias that clamps at 2^31 and an output that is wrong by orders of magnitude.
inline constexpr double kMaxBiasMagnitude = 1073741824.0;  // 2^30
std::vector<float> MinWeightScalesForBias(std::span<const float> bias, float input_scale, bool per_axis,
                                          double max_magnitude = kMaxBiasMagnitude);

// Replaces constant tensor `t` with int8 data (new buffer) and its quantization.
void SetInt8Weights(Graph& g, Tensor& t, const QuantizedWeights& q);

// Quantizes a bias to int32 (or int64) with scale input_scale * weight_scale[c].
void SetQuantizedBias(Graph& g, Tensor& bias, float input_scale, const std::vector<float>& weight_scales, bool int64);

// Float32 constant -> float16 bytes (round to nearest even).
std::vector<uint8_t> ToFloat16Bytes(std::span<const float> values);

}  // namespace edgeopt::optimize
