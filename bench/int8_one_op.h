// One-op int8 models of real layer shapes for the benchmarks (bench/micro/int8_conv_bench.cc,
// bench/thread_scaling.cc): per-channel int8 weights, int32 bias, RELU6.
#pragma once

#include <random>
#include <vector>

#include "graph/builder.h"

namespace edgeopt::bench {

inline QuantParams PerChannel(int channels, int dim, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0.002f, 0.02f);
  QuantParams q;
  for (int c = 0; c < channels; ++c) {
    q.scale.push_back(u(rng));
    q.zero_point.push_back(0);
  }
  q.quantized_dimension = dim;
  return q;
}

enum class Kind { kConv, kDepthwise, kFc };

// One int8 op: conv (k x k, stride s, `in_c` -> `out_c`), depthwise (k x k, stride s, in_c
// channels) or FC ([h, in_c] x [out_c, in_c]).
// Convolutions may have a kh x kw (non-square) kernel.
// full_range: the output quantized as real RELU6 layers are (scale 6/255, zero point -128), so
// the activation range is the whole int8 range; else scale 0.05, zero point 5 (a narrower range).
inline Graph OneOp(Kind kind, int h, int w, int in_c, int out_c, int kh, int kw, int stride, double* macs,
            bool full_range = false) {
  GraphBuilder b(5);
  std::mt19937_64& rng = b.rng();
  const int oh = (h + stride - 1) / stride, ow = (w + stride - 1) / stride;
  const int k = kh;
  const float in_scale = 0.02f, out_scale = full_range ? 6.0f / 255 : 0.05f;
  const int64_t out_zp = full_range ? -128 : 5;
  if (kind == Kind::kFc) {
    const auto x = b.Input("x", DType::kInt8, {h, in_c}, Quant(in_scale, -3));
    const auto wt = b.ConstRandom("w", DType::kInt8, {out_c, in_c}, -127, 127, Quant(0.01f, 0));
    QuantParams bq = Quant(in_scale * 0.01f, 0);
    const auto bias = b.ConstRandom("bias", DType::kInt32, {out_c}, -2000, 2000, bq);
    const auto y = b.Tensor("y", DType::kInt8, {h, out_c}, Quant(out_scale, out_zp));
    tflite::FullyConnectedOptionsT o;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, wt, bias}, {y}, o);
    b.Output(y);
    *macs = double(h) * in_c * out_c;
    return b.Finish();
  }
  const auto x = b.Input("x", DType::kInt8, {1, h, w, in_c}, Quant(in_scale, -3));
  const int oc = kind == Kind::kDepthwise ? in_c : out_c;
  QuantParams wq = PerChannel(oc, kind == Kind::kDepthwise ? 3 : 0, rng);
  const std::vector<int32_t> wshape =
      kind == Kind::kDepthwise ? std::vector<int32_t>{1, k, k, oc} : std::vector<int32_t>{oc, kh, kw, in_c};
  const auto wt = b.ConstRandom("w", DType::kInt8, wshape, -127, 127, wq);
  QuantParams bq;
  for (float s : wq.scale) {
    bq.scale.push_back(in_scale * s);
    bq.zero_point.push_back(0);
  }
  const auto bias = b.ConstRandom("bias", DType::kInt32, {oc}, -2000, 2000, bq);
  const auto y = b.Tensor("y", DType::kInt8, {1, oh, ow, oc}, Quant(out_scale, out_zp));
  if (kind == Kind::kDepthwise) {
    tflite::DepthwiseConv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_h = o.stride_w = stride;
    o.dilation_h_factor = o.dilation_w_factor = 1;
    o.depth_multiplier = 1;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, wt, bias}, {y}, o);
    *macs = double(oh) * ow * oc * k * k;
  } else {
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_h = o.stride_w = stride;
    o.dilation_h_factor = o.dilation_w_factor = 1;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, wt, bias}, {y}, o);
    *macs = double(oh) * ow * oc * kh * kw * in_c;
  }
  b.Output(y);
  return b.Finish();
}

}  // namespace edgeopt::bench
