#include "optimize/quantize/weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"

namespace edgeopt::optimize {

std::vector<float> ConstantAsFloat(const Graph& g, const Tensor& t) {
  auto bytes = g.TensorData(t);
  const size_t n = static_cast<size_t>(t.num_elements());
  std::vector<float> out;
  if (t.type == DType::kFloat32 && bytes.size() >= n * 4) {
    out.resize(n);
    std::memcpy(out.data(), bytes.data(), n * 4);
  } else if (t.type == DType::kFloat16 && bytes.size() >= n * 2) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = HalfToFloat(h);
    }
  }
  return out;
}

QuantizedWeights QuantizeSymmetricInt8(std::span<const float> w, const std::vector<int32_t>& shape, bool per_axis,
                                       int axis, std::span<const float> min_scales) {
  QuantizedWeights q;
  q.axis = per_axis ? axis : 0;
  int64_t channels = 1, inner = 1;
  if (per_axis) {
    channels = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  std::vector<float> absmax(static_cast<size_t>(channels), 0.0f);
  for (size_t i = 0; i < w.size(); ++i) {
    const size_t c = per_axis ? static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels) : 0;
    absmax[c] = std::max(absmax[c], std::fabs(w[i]));
  }
  q.scales.resize(absmax.size());
  for (size_t c = 0; c < absmax.size(); ++c) {
    q.scales[c] = absmax[c] > 0 ? absmax[c] / 127.0f : 1.0f;
    if (!min_scales.empty()) q.scales[c] = std::max(q.scales[c], min_scales[min_scales.size() == 1 ? 0 : c]);
  }
  q.values.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const size_t c = per_axis ? static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels) : 0;
    const float v = std::round(w[i] / q.scales[c]);
    q.values[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  return q;
}

std::vector<float> MinWeightScalesForBias(std::span<const float> bias, float input_scale, bool per_axis,
                                          double max_magnitude) {
  std::vector<float> out(per_axis ? bias.size() : (bias.empty() ? 0 : 1), 0.0f);
  if (!(input_scale > 0)) return out;
  for (size_t c = 0; c < bias.size(); ++c) {
    // Slightly above the exact bound so float rounding cannot push the quotient past it.
    const double need = std::fabs(static_cast<double>(bias[c])) / (static_cast<double>(input_scale) * max_magnitude) * 1.0001;
    float& s = out[per_axis ? c : 0];
    s = std::max(s, static_cast<float>(need));
  }
  return out;
}

void SetInt8Weights(Graph& g, Tensor& t, const QuantizedWeights& q) {
  t.buffer = g.AddBuffer(Buffer::FromValues<int8_t>(q.values));
  t.type = DType::kInt8;
  QuantParams p;
  p.scale = q.scales;
  p.zero_point.assign(q.scales.size(), 0);
  p.quantized_dimension = q.axis;
  t.quant = std::move(p);
}

void SetQuantizedBias(Graph& g, Tensor& bias, float input_scale, const std::vector<float>& weight_scales, bool int64) {
  std::vector<float> b = ConstantAsFloat(g, bias);
  const size_t n = b.size();
  QuantParams p;
  p.scale.resize(weight_scales.size());
  for (size_t c = 0; c < weight_scales.size(); ++c) p.scale[c] = input_scale * weight_scales[c];
  p.zero_point.assign(p.scale.size(), 0);
  p.quantized_dimension = 0;
  auto scale_of = [&](size_t i) { return p.scale[p.scale.size() == 1 ? 0 : i]; };
  if (int64) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) {
      const double s = scale_of(i);
      v[i] = s > 0 ? static_cast<int64_t>(std::llround(b[i] / s)) : 0;
    }
    bias.buffer = g.AddBuffer(Buffer::FromValues<int64_t>(v));
    bias.type = DType::kInt64;
  } else {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) {
      const double s = scale_of(i);
      const double r = s > 0 ? std::round(b[i] / s) : 0.0;
      v[i] = static_cast<int32_t>(std::clamp(r, -2147483647.0, 2147483647.0));
    }
    bias.buffer = g.AddBuffer(Buffer::FromValues<int32_t>(v));
    bias.type = DType::kInt32;
  }
  bias.quant = std::move(p);
}

std::vector<uint8_t> ToFloat16Bytes(std::span<const float> values) {
  std::vector<uint8_t> out(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = FloatToHalf(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

}  // namespace edgeopt::optimize
