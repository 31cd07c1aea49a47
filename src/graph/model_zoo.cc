#include "graph/model_zoo.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace edgeopt {
namespace {

// Channel rounding of the reference MobileNetV2 (`_make_divisible`): nearest multiple of 8, never
// below 8 and never more than 10% under the requested value.
int MakeDivisible(float v, int divisor = 8) {
  int n = std::max(divisor, static_cast<int>(v + divisor / 2.0f) / divisor * divisor);
  if (n < 0.9f * v) n += divisor;
  return n;
}

int SameOut(int in, int stride) { return (in + stride - 1) / stride; }

// Quantization of the activations: RELU6 outputs use [0, 6]; linear outputs a symmetric range.
constexpr float kRelu6Scale = 6.0f / 255.0f;
constexpr int64_t kRelu6ZeroPoint = -128;
constexpr float kInputScale = 1.0f / 128.0f;  // [-1, 1)
constexpr float kLinearScale = 16.0f / 255.0f;  // about [-8, 8]
constexpr float kLogitScale = 24.0f / 255.0f;  // about [-12, 12]

// An activation tensor and its quantization (used in int8 mode only).
struct Act {
  int32_t tensor = -1;
  std::vector<int32_t> shape;  // NHWC, or [N, C] after pooling
  float scale = 0;
  int64_t zero_point = 0;
  int channels() const { return shape.back(); }
};

// Builds float or int8 networks from the same layer calls, the way the TFLite converter lays
// them out (OHWI conv filters, [1, H, W, C] depthwise filters, [O, I] FC weights).
class NetBuilder {
 public:
  NetBuilder(const ZooOptions& o, bool int8) : b_(o.seed), int8_(int8) {}

  GraphBuilder& builder() { return b_; }
  bool int8() const { return int8_; }

  Act NewAct(const std::string& name, std::vector<int32_t> shape, float scale, int64_t zero_point) {
    Act a;
    a.shape = shape;
    a.scale = scale;
    a.zero_point = zero_point;
    a.tensor = int8_ ? b_.Tensor(name, DType::kInt8, std::move(shape), Quant(scale, zero_point))
                     : b_.Tensor(name, DType::kFloat32, std::move(shape));
    return a;
  }

  // He-initialized weights: normal with variance 2 / fan_in.
  std::vector<float> HeWeights(size_t n, int fan_in) {
    std::normal_distribution<float> d(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
    std::vector<float> w(n);
    for (auto& x : w) x = d(b_.rng());
    return w;
  }
  std::vector<float> SmallBiases(size_t n) { return RandomFloats(b_.rng(), n, -0.05f, 0.05f); }

  // Weights with one scale per channel along `axis` (or one in total when !per_channel), and
  // their bias quantized with scale input_scale x weight_scale.
  int32_t Weights(const std::string& name, std::vector<int32_t> shape, int axis, bool per_channel, int fan_in,
                  const Act& input, int32_t* bias_tensor) {
    size_t n = 1;
    for (int32_t d : shape) n *= static_cast<size_t>(d);
    std::vector<float> w = HeWeights(n, fan_in);
    const int channels = shape[axis];
    std::vector<float> bias = SmallBiases(static_cast<size_t>(channels));
    if (!int8_) {
      *bias_tensor = b_.Const<float>(name + "/bias", DType::kFloat32, {channels}, bias);
      return b_.Const<float>(name + "/weights", DType::kFloat32, std::move(shape), w);
    }
    // Position of element i along `axis`: (i / inner) % channels.
    size_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
    std::vector<float> max_abs(per_channel ? channels : 1, 0.0f);
    auto channel_of = [&](size_t i) { return per_channel ? (i / inner) % static_cast<size_t>(channels) : 0; };
    for (size_t i = 0; i < n; ++i) max_abs[channel_of(i)] = std::max(max_abs[channel_of(i)], std::fabs(w[i]));
    std::vector<float> scales(max_abs.size());
    for (size_t c = 0; c < scales.size(); ++c) scales[c] = std::max(max_abs[c], 1e-6f) / 127.0f;
    std::vector<int8_t> q(n);
    for (size_t i = 0; i < n; ++i)
      q[i] = static_cast<int8_t>(std::clamp(std::lround(w[i] / scales[channel_of(i)]), -127L, 127L));
    std::vector<float> bias_scales(static_cast<size_t>(channels));
    std::vector<int32_t> qbias(static_cast<size_t>(channels));
    for (int c = 0; c < channels; ++c) {
      bias_scales[c] = input.scale * scales[per_channel ? c : 0];
      qbias[c] = static_cast<int32_t>(std::lround(bias[c] / bias_scales[c]));
    }
    QuantParams wq = per_channel ? QuantPerAxis(scales, axis) : Quant(scales[0], 0);
    QuantParams bq = per_channel ? QuantPerAxis(bias_scales, 0) : Quant(bias_scales[0], 0);
    *bias_tensor = b_.Const<int32_t>(name + "/bias", DType::kInt32, {channels}, qbias, bq);
    return b_.Const<int8_t>(name + "/weights", DType::kInt8, std::move(shape), q, wq);
  }

  Act Conv(const Act& x, int out_c, int k, int stride, bool relu6, const std::string& name) {
    const int in_c = x.channels();
    int32_t bias;
    int32_t w = Weights(name, {out_c, k, k, in_c}, 0, true, k * k * in_c, x, &bias);
    Act y = NewAct(name + (relu6 ? "/Relu6" : "/BiasAdd"),
                   {x.shape[0], SameOut(x.shape[1], stride), SameOut(x.shape[2], stride), out_c},
                   relu6 ? kRelu6Scale : kLinearScale, relu6 ? kRelu6ZeroPoint : 0);
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_w = o.stride_h = stride;
    o.fused_activation_function = relu6 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
    b_.Op(tflite::BuiltinOperator_CONV_2D, {x.tensor, w, bias}, {y.tensor}, o, int8_ ? 3 : 1);
    return y;
  }

  Act Depthwise(const Act& x, int k, int stride, bool relu6, const std::string& name) {
    const int c = x.channels();
    int32_t bias;
    int32_t w = Weights(name, {1, k, k, c}, 3, true, k * k, x, &bias);
    Act y = NewAct(name + (relu6 ? "/Relu6" : "/BiasAdd"),
                   {x.shape[0], SameOut(x.shape[1], stride), SameOut(x.shape[2], stride), c},
                   relu6 ? kRelu6Scale : kLinearScale, relu6 ? kRelu6ZeroPoint : 0);
    tflite::DepthwiseConv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_w = o.stride_h = stride;
    o.depth_multiplier = 1;
    o.fused_activation_function = relu6 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
    b_.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x.tensor, w, bias}, {y.tensor}, o, int8_ ? 3 : 1);
    return y;
  }

  Act Add(const Act& a, const Act& c, const std::string& name) {
    Act y = NewAct(name, a.shape, std::max(a.scale, c.scale) * 1.5f, 0);
    tflite::AddOptionsT o;
    b_.Op(tflite::BuiltinOperator_ADD, {a.tensor, c.tensor}, {y.tensor}, o, int8_ ? 2 : 1);
    return y;
  }

  // Global average pool over H and W: [N, H, W, C] -> [N, C], keeping the input quantization.
  Act GlobalPool(const Act& x, bool mean, const std::string& name) {
    const int n = x.shape[0], c = x.channels();
    if (mean) {
      int32_t axes = b_.Const<int32_t>(name + "/reduction_indices", DType::kInt32, {2}, std::vector<int32_t>{1, 2});
      Act y = NewAct(name, {n, c}, x.scale, x.zero_point);
      tflite::ReducerOptionsT o;
      o.keep_dims = false;
      b_.Op(tflite::BuiltinOperator_MEAN, {x.tensor, axes}, {y.tensor}, o, int8_ ? 2 : 1);
      return y;
    }
    Act pooled = NewAct(name + "/AvgPool", {n, 1, 1, c}, x.scale, x.zero_point);
    tflite::Pool2DOptionsT p;
    p.padding = tflite::Padding_VALID;
    p.stride_w = p.stride_h = 1;
    p.filter_height = x.shape[1];
    p.filter_width = x.shape[2];
    b_.Op(tflite::BuiltinOperator_AVERAGE_POOL_2D, {x.tensor}, {pooled.tensor}, p, int8_ ? 2 : 1);
    int32_t shape = b_.Const<int32_t>(name + "/shape", DType::kInt32, {2}, std::vector<int32_t>{n, c});
    Act y = NewAct(name + "/Reshape", {n, c}, x.scale, x.zero_point);
    tflite::ReshapeOptionsT r;
    r.new_shape = {n, c};
    b_.Op(tflite::BuiltinOperator_RESHAPE, {pooled.tensor, shape}, {y.tensor}, r);
    return y;
  }

  Act FullyConnected(const Act& x, int out, float out_scale, tflite::ActivationFunctionType act,
                     const std::string& name) {
    int32_t bias;
    // Per-tensor weight scale: per-channel FULLY_CONNECTED needs a newer runtime than TFLite 2.9.
    int32_t w = Weights(name, {out, x.channels()}, 0, false, x.channels(), x, &bias);
    const bool relu = act == tflite::ActivationFunctionType_RELU;
    Act y = NewAct(name + "/MatMul", {x.shape[0], out}, relu ? out_scale / 2 : out_scale, relu ? -128 : 0);
    tflite::FullyConnectedOptionsT o;
    o.fused_activation_function = act;
    b_.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x.tensor, w, bias}, {y.tensor}, o, int8_ ? 4 : 1);
    return y;
  }

  Act Tanh(const Act& x, const std::string& name) {
    // The int8 tanh kernel requires output scale 1/128 and zero point 0.
    Act y = NewAct(name, x.shape, 1.0f / 128.0f, 0);
    b_.Op(tflite::BuiltinOperator_TANH, {x.tensor}, {y.tensor}, int8_ ? 2 : 1);
    return y;
  }

  Act Softmax(const Act& x, const std::string& name) {
    // The int8 softmax kernel requires output scale 1/256 and zero point -128.
    Act y = NewAct(name, x.shape, 1.0f / 256.0f, -128);
    tflite::SoftmaxOptionsT o;
    o.beta = 1.0f;
    b_.Op(tflite::BuiltinOperator_SOFTMAX, {x.tensor}, {y.tensor}, o, int8_ ? 2 : 1);
    return y;
  }

  // Graph input: float (quantized on entry in int8 mode unless int8_io) or int8.
  Act Input(const std::string& name, std::vector<int32_t> shape, bool int8_io) {
    if (!int8_) {
      Act a;
      a.shape = shape;
      a.tensor = b_.Input(name, DType::kFloat32, std::move(shape));
      return a;
    }
    if (int8_io) {
      Act a;
      a.shape = shape;
      a.scale = kInputScale;
      a.tensor = b_.Input(name, DType::kInt8, std::move(shape), Quant(kInputScale, 0));
      return a;
    }
    int32_t f = b_.Input(name, DType::kFloat32, shape);
    Act q = NewAct(name + "_int8", std::move(shape), kInputScale, 0);
    b_.Op(tflite::BuiltinOperator_QUANTIZE, {f}, {q.tensor}, 2);
    return q;
  }

  void Output(const Act& y, const std::string& name, bool int8_io) {
    if (!int8_ || int8_io) {
      b_.graph().main().tensors[y.tensor].name = name;
      b_.Output(y.tensor);
      return;
    }
    int32_t f = b_.Tensor(name, DType::kFloat32, y.shape);
    b_.Op(tflite::BuiltinOperator_DEQUANTIZE, {y.tensor}, {f}, 2);
    b_.Output(f);
  }

  Graph Finish(const std::string& description) {
    b_.SetDescription(description);
    b_.AddSignature("serving_default");
    return b_.Finish();
  }

 private:
  GraphBuilder b_;
  bool int8_;
};

Graph BuildMobileNetV2(const ZooOptions& o, bool int8) {
  NetBuilder net(o, int8);
  const float alpha = o.width_multiplier;
  Act x = net.Input("input", {o.batch, o.input_size, o.input_size, 3}, o.int8_io);
  x = net.Conv(x, MakeDivisible(32 * alpha), 3, 2, true, "MobilenetV2/Conv");
  // (expansion t, output channels c, repeats n, first stride s) of the reference network.
  struct Stage {
    int t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 0;
  for (const Stage& st : stages) {
    const int out_c = MakeDivisible(st.c * alpha);
    for (int r = 0; r < st.n; ++r, ++block) {
      const std::string name = block == 0 ? "MobilenetV2/expanded_conv" : "MobilenetV2/expanded_conv_" + std::to_string(block);
      const int stride = r == 0 ? st.s : 1;
      Act in = x;
      Act h = in;
      if (st.t != 1) h = net.Conv(h, in.channels() * st.t, 1, 1, true, name + "/expand");
      h = net.Depthwise(h, 3, stride, true, name + "/depthwise");
      h = net.Conv(h, out_c, 1, 1, false, name + "/project");
      if (stride == 1 && in.channels() == out_c) h = net.Add(h, in, name + "/add");
      x = h;
    }
  }
  // The last conv is not thinned for alpha < 1 (as in the reference network).
  x = net.Conv(x, alpha > 1.0f ? MakeDivisible(1280 * alpha) : 1280, 1, 1, true, "MobilenetV2/Conv_1");
  x = net.GlobalPool(x, o.pool_with_mean, "MobilenetV2/Logits/AvgPool");
  x = net.FullyConnected(x, o.num_classes, kLogitScale, tflite::ActivationFunctionType_NONE, "MobilenetV2/Logits");
  x = net.Softmax(x, "MobilenetV2/Predictions/Softmax");
  net.Output(x, "MobilenetV2/Predictions", o.int8_io);
  return net.Finish(std::string("edgeopt model zoo: MobileNetV2-like ") + (int8 ? "int8" : "float32") + ", random weights");
}

}  // namespace

Graph MobileNetV2Like(const ZooOptions& options) { return BuildMobileNetV2(options, false); }

Graph MobileNetV2LikeInt8(const ZooOptions& options) { return BuildMobileNetV2(options, true); }

Graph TinyCnn(const ZooOptions& o) {
  NetBuilder net(o, false);
  Act x = net.Input("input", {o.batch, o.input_size, o.input_size, 3}, false);
  x = net.Conv(x, 8, 3, 1, true, "conv1");
  Act d = net.Depthwise(x, 3, 2, true, "dw");
  Act p = net.Conv(d, 8, 1, 1, false, "project");
  x = net.Add(p, d, "residual");
  x = net.GlobalPool(x, o.pool_with_mean, "pool");
  x = net.FullyConnected(x, o.num_classes, kLogitScale, tflite::ActivationFunctionType_NONE, "logits");
  x = net.Softmax(x, "probabilities");
  net.Output(x, "probabilities", false);
  return net.Finish("edgeopt model zoo: TinyCnn, random weights");
}

Graph TinyMlp(const ZooOptions& o) {
  NetBuilder net(o, false);
  Act x = net.Input("input", {o.batch, o.input_size}, false);
  x = net.FullyConnected(x, 32, kLinearScale, tflite::ActivationFunctionType_RELU, "fc1");
  x = net.FullyConnected(x, 32, kLinearScale, tflite::ActivationFunctionType_NONE, "fc2");
  x = net.Tanh(x, "fc2/Tanh");
  x = net.FullyConnected(x, o.num_classes, kLogitScale, tflite::ActivationFunctionType_NONE, "logits");
  x = net.Softmax(x, "probabilities");
  net.Output(x, "probabilities", false);
  return net.Finish("edgeopt model zoo: TinyMlp, random weights");
}

}  // namespace edgeopt
