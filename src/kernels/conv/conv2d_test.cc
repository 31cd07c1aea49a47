// CONV_2D against TFLite 2.9 over generated cases: every dtype path (float32, uint8, int8 per
// channel and per tensor, 16x8, hybrid per channel and per tensor), odd shapes, batch 2,
// SAME/VALID, strides, dilations, fused activations, groups; plus the error paths.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

using testing::ExactOptions;
using testing::ExpectMatches;
using testing::ExpectRejected;

enum class Path { kFloat, kHybrid, kUInt8, kInt8, kInt16 };

const char* PathName(Path p) {
  switch (p) {
    case Path::kFloat: return "float32";
    case Path::kHybrid: return "hybrid";
    case Path::kUInt8: return "uint8";
    case Path::kInt8: return "int8";
    case Path::kInt16: return "int16x8";
  }
  return "?";
}

struct ConvCase {
  Path path = Path::kFloat;
  bool per_channel = true;
  bool equal_scales = false;  // hybrid: per-channel scales that are all equal
  DType bias_type = DType::kInt32;
  bool has_bias = true;
  int n = 1, h = 5, w = 5, k_c = 3, groups = 1, out_c = 4, kh = 3, kw = 3;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;

  int in_c() const { return k_c * groups; }
  std::string Describe() const {
    std::ostringstream s;
    s << "conv2d " << PathName(path) << (per_channel ? " per-channel" : " per-tensor")
      << (equal_scales ? " (equal scales)" : "") << " in [" << n << "," << h << "," << w << "," << in_c()
      << "] filter [" << out_c << "," << kh << "," << kw << "," << k_c << "] groups " << groups << " stride "
      << stride_h << "x" << stride_w << " dilation " << dil_h << "x" << dil_w << " "
      << (padding == tflite::Padding_SAME ? "SAME" : "VALID") << " act " << act << " bias "
      << (has_bias ? DTypeName(bias_type) : "none");
    return s.str();
  }
};

int OutSize(int padding, int in, int k, int stride, int dil) {
  stride = std::max(stride, 1);
  const int eff = (k - 1) * dil + 1;
  return padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in + stride - eff) / stride;
}

// What TFLite 2.9 runs instead when it cannot run a case directly (see ExpectMatchesTwin).
enum class Twin {
  kNone,           // the graph itself
  kBlockDiagonal,  // grouped filter expanded to a full filter with zeros outside each group
  kZeroBias,       // a missing bias given as zeros
  kPerTensor,      // equal per-channel weight scales given as one scale
  kInt64Bias,      // 16x8 with the int32 bias values stored as int64
};

Graph BuildConv(const ConvCase& c, uint64_t seed, Twin twin = Twin::kNone) {
  GraphBuilder b(seed);
  auto& rng = b.rng();
  const int oh = OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h);
  const int ow = OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w);
  const std::vector<int32_t> in_shape = {c.n, c.h, c.w, c.in_c()};
  const std::vector<int32_t> w_shape = {c.out_c, c.kh, c.kw, c.k_c};
  const std::vector<int32_t> out_shape = {c.n, oh, ow, c.out_c};
  int32_t x, w, bias = kNoTensor, y;
  DType bias_type = c.bias_type;
  if (c.path == Path::kFloat) {
    x = b.Input("x", DType::kFloat32, in_shape);
    w = b.ConstRandom("w", DType::kFloat32, w_shape, -1, 1);
    if (c.has_bias) bias = b.ConstRandom("bias", DType::kFloat32, {c.out_c}, -1, 1);
    y = b.Tensor("y", DType::kFloat32, out_shape);
    bias_type = DType::kFloat32;
  } else if (c.path == Path::kHybrid) {
    x = b.Input("x", DType::kFloat32, in_shape);
    auto scales = testing::RandomWeightScales(rng, c.out_c, c.per_channel);
    if (c.equal_scales) std::fill(scales.begin(), scales.end(), scales[0]);
    if (twin == Twin::kPerTensor) scales.resize(1);
    w = b.ConstRandom("w", DType::kInt8, w_shape, -127, 127, testing::WeightQuant(rng, DType::kInt8, scales, 0));
    if (c.has_bias) bias = b.ConstRandom("bias", DType::kFloat32, {c.out_c}, -1, 1);
    y = b.Tensor("y", DType::kFloat32, out_shape);
    bias_type = DType::kFloat32;
  } else {
    const DType t = c.path == Path::kUInt8 ? DType::kUInt8 : c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
    const DType wt = c.path == Path::kUInt8 ? DType::kUInt8 : DType::kInt8;
    QuantParams in_q = testing::RandomActivationQuant(rng, t);
    auto scales = testing::RandomWeightScales(rng, c.out_c, c.per_channel);
    const double lo = wt == DType::kUInt8 ? 0 : -127, hi = wt == DType::kUInt8 ? 255 : 127;
    w = b.ConstRandom("w", wt, w_shape, lo, hi, testing::WeightQuant(rng, wt, scales, 0));
    const float out_scale = testing::OutputScaleFor(t, int64_t{c.kh} * c.kw * c.k_c, in_q.scale[0], scales[0]);
    QuantParams out_q = testing::RandomActivationQuant(rng, t);
    out_q.scale[0] = out_scale;
    x = b.Input("x", t, in_shape, in_q);
    if (c.has_bias) {
      bias = testing::QuantizedBias(b, "bias", c.bias_type, c.out_c, in_q.scale[0], scales, out_scale * 40, rng);
      if (twin == Twin::kInt64Bias) {
        Tensor& bt = b.current().tensors[bias];
        auto v32 = b.graph().buffers[bt.buffer].as<int32_t>();
        std::vector<int64_t> v64(v32.begin(), v32.end());
        bt.type = DType::kInt64;
        b.graph().buffers[bt.buffer] = Buffer::FromValues<int64_t>(v64);
      }
    }
    y = b.Tensor("y", t, out_shape, out_q);
  }
  if (twin == Twin::kBlockDiagonal && c.groups > 1) {
    // Same weights, each output channel's filter placed at its group's input channels.
    Tensor& wt = b.current().tensors[w];
    const size_t esize = DTypeSize(wt.type);
    auto src = b.graph().buffers[wt.buffer].bytes();
    // "Zero" weights are the zero point (uint8 weights are asymmetric).
    const auto zero = static_cast<uint8_t>(wt.type == DType::kUInt8 ? wt.quant->zero_point[0] : 0);
    std::vector<uint8_t> full(static_cast<size_t>(c.out_c) * c.kh * c.kw * c.in_c() * esize, zero);
    const int per_group = c.out_c / c.groups;
    for (int oc = 0; oc < c.out_c; ++oc)
      for (int k = 0; k < c.kh * c.kw; ++k)
        std::memcpy(&full[((static_cast<size_t>(oc) * c.kh * c.kw + k) * c.in_c() + (oc / per_group) * c.k_c) * esize],
                    &src[((static_cast<size_t>(oc) * c.kh * c.kw + k) * c.k_c) * esize], c.k_c * esize);
    wt.shape = {c.out_c, c.kh, c.kw, c.in_c()};
    b.graph().buffers[wt.buffer] = Buffer::Owned(std::move(full));
  }
  if (twin == Twin::kZeroBias && !c.has_bias) {
    const size_t n = static_cast<size_t>(c.out_c) * DTypeSize(bias_type);
    bias = b.ConstBytes("bias", bias_type, {c.out_c}, std::vector<uint8_t>(n, 0));
  }
  tflite::Conv2DOptionsT o;
  o.padding = static_cast<tflite::Padding>(c.padding);
  o.stride_h = c.stride_h;
  o.stride_w = c.stride_w;
  o.dilation_h_factor = c.dil_h;
  o.dilation_w_factor = c.dil_w;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  int32_t version = 1;
  if (c.path == Path::kInt16 && c.has_bias && bias_type == DType::kInt32 && twin != Twin::kInt64Bias) {
    o.quantized_bias_type = tflite::TensorType_INT32;  // how newer converters mark it (version 8)
    version = 8;
  }
  std::vector<int32_t> inputs = {x, w};
  if (bias != kNoTensor) inputs.push_back(bias);
  b.Op(tflite::BuiltinOperator_CONV_2D, inputs, {y}, o, version);
  b.Output(y);
  return b.Finish();
}

// A random case for `path`; spatial sizes, channels, window and activation vary.
ConvCase RandomCase(std::mt19937_64& rng, Path path) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  ConvCase c;
  c.path = path;
  for (;;) {
    c.n = pick({1, 1, 2});
    c.h = pick({1, 2, 3, 5, 7, 8, 11});
    c.w = pick({1, 3, 4, 6, 9, 10});
    c.k_c = pick({1, 2, 3, 5, 8, 13, 17});
    c.out_c = pick({1, 3, 4, 7, 16, 19});
    c.kh = pick({1, 1, 2, 3, 3, 5});
    c.kw = pick({1, 2, 3, 3, 4});
    c.stride_h = pick({1, 1, 2, 3});
    c.stride_w = pick({1, 1, 2});
    c.dil_h = pick({1, 1, 1, 2});
    c.dil_w = pick({1, 1, 1, 2, 3});
    c.padding = pick({tflite::Padding_SAME, tflite::Padding_VALID});
    c.act = pick({tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                  tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1});
    if (OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h) >= 1 &&
        OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w) >= 1)
      return c;
  }
}

class Conv2DConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
  // Runs `count` random cases of one path; `tweak` adjusts each case. With a twin, TFLite 2.9
  // runs the equivalent graph instead.
  template <typename Tweak>
  void RunRandom(Path path, int count, uint64_t seed, Tweak tweak, Twin twin = Twin::kNone,
                 testing::CompareOptions opts = ExactOptions()) {
    std::mt19937_64 rng(seed);
    int failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      ConvCase c = RandomCase(rng, path);
      tweak(c, rng);
      const uint64_t s = seed * 1000 + i;
      const std::string what = "case " + std::to_string(i) + ": " + c.Describe();
      const bool ok = twin == Twin::kNone
                          ? ExpectMatches(BuildConv(c, s), what, opts)
                          : testing::ExpectMatchesTwin(BuildConv(c, s), BuildConv(c, s, twin), what, opts);
      if (!ok) ++failures;
    }
  }
};

TEST_F(Conv2DConformance, Float32) {
  RunRandom(Path::kFloat, 60, 11, [](ConvCase&, std::mt19937_64&) {});
}

TEST_F(Conv2DConformance, Int8PerChannel) {
  RunRandom(Path::kInt8, 60, 12, [](ConvCase& c, std::mt19937_64&) { c.per_channel = true; });
}

TEST_F(Conv2DConformance, Int8PerTensor) {
  RunRandom(Path::kInt8, 30, 13, [](ConvCase& c, std::mt19937_64&) { c.per_channel = false; });
}

TEST_F(Conv2DConformance, UInt8) {
  RunRandom(Path::kUInt8, 40, 14, [](ConvCase& c, std::mt19937_64&) { c.per_channel = false; });
}

TEST_F(Conv2DConformance, Int16x8Int64Bias) {
  RunRandom(Path::kInt16, 30, 15, [](ConvCase& c, std::mt19937_64&) {
    c.bias_type = DType::kInt64;
    c.per_channel = true;
  });
}

TEST_F(Conv2DConformance, HybridPerChannel) {
  RunRandom(Path::kHybrid, 30, 16, [](ConvCase& c, std::mt19937_64&) { c.per_channel = true; });
}

TEST_F(Conv2DConformance, HybridPerTensor) {
  RunRandom(Path::kHybrid, 30, 17, [](ConvCase& c, std::mt19937_64&) { c.per_channel = false; });
}

// Per-channel scales that are all equal take LiteRT's symmetric per-tensor path. TFLite 2.9
// then reads the filter's legacy single scale, which its loader leaves 0 for per-axis
// tensors, and outputs the bias alone; edgeopt uses the (common) scale, so it is compared with
// 2.9 running the same weights quantized per tensor.
TEST_F(Conv2DConformance, HybridEqualPerChannelScales) {
  RunRandom(
      Path::kHybrid, 15, 19,
      [](ConvCase& c, std::mt19937_64&) {
        c.per_channel = true;
        c.equal_scales = true;
      },
      Twin::kPerTensor);
}

// TFLite 2.9 has no grouped convolution; it runs the block-diagonal equivalent.
TEST_F(Conv2DConformance, Grouped) {
  int i = 0;
  for (Path p : {Path::kFloat, Path::kInt8, Path::kUInt8, Path::kInt16, Path::kHybrid}) {
    RunRandom(
        p, 8, 30 + i++,
        [p](ConvCase& c, std::mt19937_64& rng) {
          c.groups = 2 + static_cast<int>(rng() % 3);
          c.out_c = c.groups * (1 + static_cast<int>(rng() % 4));
          c.per_channel = p != Path::kUInt8;
          c.bias_type = p == Path::kInt16 ? DType::kInt64 : DType::kInt32;
        },
        Twin::kBlockDiagonal);
  }
}

// TFLite 2.9 requires a bias; edgeopt also accepts none, compared with 2.9 given zeros.
TEST_F(Conv2DConformance, NoBias) {
  int i = 0;
  for (Path p : {Path::kFloat, Path::kInt8, Path::kUInt8, Path::kInt16, Path::kHybrid}) {
    RunRandom(
        p, 6, 40 + i++,
        [p](ConvCase& c, std::mt19937_64&) {
          c.has_bias = false;
          c.per_channel = p != Path::kUInt8;
          c.bias_type = p == Path::kInt16 ? DType::kInt64 : DType::kInt32;
        },
        Twin::kZeroBias);
  }
}

// 16x8 with an int32 bias (newer LiteRT, CONV_2D version 8) accumulates in int32 and
// requantizes with the 32-bit multiplier; 2.9 only has the int64 form, whose 64-bit
// requantization rounds the multiplier to 16 bits, so the two may differ by 1 LSB.
TEST_F(Conv2DConformance, Int16x8Int32Bias) {
  auto opts = ExactOptions();
  opts.max_lsb = 1;
  RunRandom(
      Path::kInt16, 20, 50,
      [](ConvCase& c, std::mt19937_64&) {
        c.bias_type = DType::kInt32;
        c.per_channel = true;
      },
      Twin::kInt64Bias, opts);
}

// The same against LiteRT.js (newer LiteRT, which has the int32-bias form): bit-exact.
TEST_F(Conv2DConformance, Int16x8Int32BiasLiteRtJs) {
  if (!testing::LiteRtJsAvailable()) GTEST_SKIP() << "LiteRT.js absent (run scripts/setup.sh)";
  std::mt19937_64 rng(51);
  auto opts = ExactOptions();
  opts.oracle = testing::Oracle::kLiteRtJs;
  for (int i = 0; i < 5; ++i) {
    ConvCase c = RandomCase(rng, Path::kInt16);
    c.bias_type = DType::kInt32;
    ExpectMatches(BuildConv(c, 51000 + i), "case " + std::to_string(i) + ": " + c.Describe(), opts);
  }
}

TEST_F(Conv2DConformance, Errors) {
  ConvCase base;
  {
    ConvCase c = base;
    c.k_c = 3;
    Graph g = BuildConv(c, 1);
    g.main().tensors[g.main().inputs[0]].shape = {1, 5, 5, 4};  // 4 input channels, filter has 3
    ExpectRejected(g, "not a multiple", "channel mismatch");
  }
  {
    Graph g = BuildConv(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {5, 5, 3};
    ExpectRejected(g, "rank 4", "rank-3 input");
  }
  {
    ConvCase c = base;
    c.act = tflite::ActivationFunctionType_TANH;
    ExpectRejected(BuildConv(c, 1), "TANH", "TANH activation");
  }
  {
    ConvCase c = base;
    c.stride_h = 0;
    ExpectRejected(BuildConv(c, 1), "strides must be positive", "zero stride");
  }
  {
    Graph g = BuildConv(base, 1);
    g.main().tensors[g.main().ops[0].inputs[2]].shape = {5};
    ExpectRejected(g, "bias", "bias size");
  }
  {
    ConvCase c = base;
    c.path = Path::kInt8;
    Graph g = BuildConv(c, 1);
    g.main().tensors[g.main().ops[0].inputs[1]].quant->scale = {0.01f, 0.02f};  // 2 scales for 4 channels
    ExpectRejected(g, "scales", "per-channel scale count");
  }
  {
    ConvCase c = base;
    c.path = Path::kInt16;
    c.bias_type = DType::kInt64;
    Graph g = BuildConv(c, 1);
    g.main().tensors[g.main().inputs[0]].quant->zero_point = {3};
    ExpectRejected(g, "zero point 0", "int16 zero point");
  }
  {
    // int8 activations with float weights: no such kernel.
    ConvCase c = base;
    c.path = Path::kInt8;
    Graph g = BuildConv(c, 1);
    Tensor& w = g.main().tensors[g.main().ops[0].inputs[1]];
    w.type = DType::kFloat32;
    w.quant.reset();
    g.buffers[w.buffer] = Buffer::Owned(std::vector<uint8_t>(4 * w.num_elements(), 0));
    ExpectRejected(g, "not supported", "int8 input with float filter");
  }
  {
    ConvCase c = base;
    c.padding = tflite::Padding_VALID;
    c.kh = 7;  // 7x3 window over a 5x5 input
    Graph g = BuildConv(c, 1);
    ExpectRejected(g, "does not fit", "window larger than the input");
  }
}

}  // namespace
}  // namespace edgeopt
