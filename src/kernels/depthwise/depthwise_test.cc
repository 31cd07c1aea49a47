// DEPTHWISE_CONV_2D against TFLite 2.9 over generated cases: float32, uint8, int8 per channel and
// per tensor, 16x8, hybrid; depth multipliers, odd shapes, batch 2, SAME/VALID, strides,
// dilations, fused activations; plus the error paths.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/nn_test_util.h"
#include "support/scoped_env.h"

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

enum class Twin { kNone, kZeroBias, kEqualPerChannel };

struct DwCase {
  Path path = Path::kFloat;
  bool per_channel = true;
  bool has_bias = true;
  DType bias_type = DType::kInt32;
  int n = 1, h = 6, w = 5, c = 3, m = 1, kh = 3, kw = 3;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;
  int options_multiplier = -1;  // -1: the real multiplier

  std::string Describe() const {
    std::ostringstream s;
    s << "depthwise " << PathName(path) << (per_channel ? " per-channel" : " per-tensor") << " in [" << n << "," << h
      << "," << w << "," << c << "] multiplier " << m << " filter " << kh << "x" << kw << " stride " << stride_h << "x"
      << stride_w << " dilation " << dil_h << "x" << dil_w << " "
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

Graph BuildDepthwise(const DwCase& c, uint64_t seed, Twin twin = Twin::kNone) {
  GraphBuilder b(seed);
  auto& rng = b.rng();
  const int oc = c.c * c.m;
  const std::vector<int32_t> in_shape = {c.n, c.h, c.w, c.c};
  const std::vector<int32_t> w_shape = {1, c.kh, c.kw, oc};
  const std::vector<int32_t> out_shape = {c.n, OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h),
                                          OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w), oc};
  int32_t x, w, bias = kNoTensor, y;
  DType bias_type = c.bias_type;
  if (c.path == Path::kFloat || c.path == Path::kHybrid) {
    x = b.Input("x", DType::kFloat32, in_shape);
    if (c.path == Path::kFloat) {
      w = b.ConstRandom("w", DType::kFloat32, w_shape, -1, 1);
    } else {
      auto scales = testing::RandomWeightScales(rng, oc, c.per_channel);
      if (twin == Twin::kEqualPerChannel) scales.assign(oc, scales[0]);
      w = b.ConstRandom("w", DType::kInt8, w_shape, -127, 127, testing::WeightQuant(rng, DType::kInt8, scales, 3));
    }
    if (c.has_bias) bias = b.ConstRandom("bias", DType::kFloat32, {oc}, -1, 1);
    y = b.Tensor("y", DType::kFloat32, out_shape);
    bias_type = DType::kFloat32;
  } else {
    const DType t = c.path == Path::kUInt8 ? DType::kUInt8 : c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
    const DType wt = c.path == Path::kUInt8 ? DType::kUInt8 : DType::kInt8;
    QuantParams in_q = testing::RandomActivationQuant(rng, t);
    auto scales = testing::RandomWeightScales(rng, oc, c.per_channel);
    const double lo = wt == DType::kUInt8 ? 0 : -127, hi = wt == DType::kUInt8 ? 255 : 127;
    w = b.ConstRandom("w", wt, w_shape, lo, hi, testing::WeightQuant(rng, wt, scales, 3));
    const float out_scale = testing::OutputScaleFor(t, int64_t{c.kh} * c.kw, in_q.scale[0], scales[0]);
    QuantParams out_q = testing::RandomActivationQuant(rng, t);
    out_q.scale[0] = out_scale;
    x = b.Input("x", t, in_shape, in_q);
    if (c.has_bias)
      bias = testing::QuantizedBias(b, "bias", c.bias_type, oc, in_q.scale[0], scales, out_scale * 20, rng);
    y = b.Tensor("y", t, out_shape, out_q);
  }
  if (twin == Twin::kZeroBias && !c.has_bias)
    bias =
        b.ConstBytes("bias", bias_type, {oc}, std::vector<uint8_t>(static_cast<size_t>(oc) * DTypeSize(bias_type), 0));
  tflite::DepthwiseConv2DOptionsT o;
  o.padding = static_cast<tflite::Padding>(c.padding);
  o.stride_h = c.stride_h;
  o.stride_w = c.stride_w;
  o.dilation_h_factor = c.dil_h;
  o.dilation_w_factor = c.dil_w;
  o.depth_multiplier = c.options_multiplier >= 0 ? c.options_multiplier : c.m;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  std::vector<int32_t> inputs = {x, w};
  if (bias != kNoTensor) inputs.push_back(bias);
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, inputs, {y}, o);
  b.Output(y);
  return b.Finish();
}

DwCase RandomCase(std::mt19937_64& rng, Path path) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  DwCase c;
  c.path = path;
  for (;;) {
    c.n = pick({1, 1, 2});
    c.h = pick({1, 2, 4, 5, 7, 9, 12});
    c.w = pick({1, 3, 4, 6, 8, 11});
    c.c = pick({1, 2, 3, 5, 8, 13, 16, 17, 32});
    c.m = pick({1, 1, 1, 2, 3, 4});
    c.kh = pick({1, 2, 3, 3, 5});
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

class DepthwiseConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
  template <typename Tweak>
  void RunRandom(Path path, int count, uint64_t seed, Tweak tweak, Twin twin = Twin::kNone,
                 testing::CompareOptions opts = ExactOptions()) {
    std::mt19937_64 rng(seed);
    int failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      DwCase c = RandomCase(rng, path);
      tweak(c, rng);
      const uint64_t s = seed * 1000 + i;
      const std::string what = "case " + std::to_string(i) + ": " + c.Describe();
      const bool ok = twin == Twin::kNone
                          ? ExpectMatches(BuildDepthwise(c, s), what, opts)
                          : testing::ExpectMatchesTwin(BuildDepthwise(c, s), BuildDepthwise(c, s, twin), what, opts);
      if (!ok) ++failures;
    }
  }
};

TEST_F(DepthwiseConformance, Float32) {
  RunRandom(Path::kFloat, 50, 21, [](DwCase&, std::mt19937_64&) {});
}

TEST_F(DepthwiseConformance, Int8PerChannel) {
  RunRandom(Path::kInt8, 50, 22, [](DwCase& c, std::mt19937_64&) { c.per_channel = true; });
}

TEST_F(DepthwiseConformance, Int8PerTensor) {
  RunRandom(Path::kInt8, 25, 23, [](DwCase& c, std::mt19937_64&) { c.per_channel = false; });
}

TEST_F(DepthwiseConformance, UInt8) {
  RunRandom(Path::kUInt8, 40, 24, [](DwCase& c, std::mt19937_64&) { c.per_channel = false; });
}

TEST_F(DepthwiseConformance, Int16x8) {
  RunRandom(Path::kInt16, 30, 25, [](DwCase& c, std::mt19937_64&) { c.bias_type = DType::kInt64; });
}

TEST_F(DepthwiseConformance, Hybrid) {
  // TFLite's hybrid depthwise quantizes its input; by default edgeopt's runs the float kernel on
  // dequantized weights (kernels/hybrid, tested there), so the bit-exact one is asked for here.
  const testing::ScopedEnv quantized_input("EDGEOPT_HYBRID_DEQUANT", "0");
  RunRandom(Path::kHybrid, 30, 26, [](DwCase& c, std::mt19937_64&) { c.per_channel = true; });
}

// Hybrid with one weight scale (edgeopt broadcasts it; 2.9 would read past it), compared with 2.9
// given that scale repeated per channel.
TEST_F(DepthwiseConformance, HybridPerTensor) {
  // The bit-exact hybrid kernel, as in Hybrid.
  const testing::ScopedEnv quantized_input("EDGEOPT_HYBRID_DEQUANT", "0");
  RunRandom(
      Path::kHybrid, 15, 28, [](DwCase& c, std::mt19937_64&) { c.per_channel = false; }, Twin::kEqualPerChannel);
}

// TFLite 2.9 requires a bias; edgeopt also accepts none, compared with 2.9 given zeros.
TEST_F(DepthwiseConformance, NoBias) {
  // The bit-exact hybrid kernel, as in Hybrid.
  const testing::ScopedEnv quantized_input("EDGEOPT_HYBRID_DEQUANT", "0");
  int i = 0;
  for (Path p : {Path::kFloat, Path::kInt8, Path::kUInt8, Path::kInt16, Path::kHybrid}) {
    RunRandom(
        p, 5, 60 + i++,
        [p](DwCase& c, std::mt19937_64&) {
          c.has_bias = false;
          c.per_channel = p != Path::kUInt8;
          c.bias_type = p == Path::kInt16 ? DType::kInt64 : DType::kInt32;
        },
        Twin::kZeroBias);
  }
}

// A depth_multiplier of 0 in the options (some converters) is taken from the filter shape.
TEST_F(DepthwiseConformance, ZeroOptionsMultiplier) {
  DwCase c;
  c.m = 2;
  c.options_multiplier = 0;
  DwCase twin = c;
  twin.options_multiplier = -1;
  testing::ExpectMatchesTwin(BuildDepthwise(c, 5), BuildDepthwise(twin, 5), c.Describe(), ExactOptions());
}

TEST_F(DepthwiseConformance, Errors) {
  DwCase base;
  {
    Graph g = BuildDepthwise(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {1, 6, 5, 2};  // filter has 3 channels
    ExpectRejected(g, "not a multiple", "channel mismatch");
  }
  {
    DwCase c = base;
    c.options_multiplier = 2;
    ExpectRejected(BuildDepthwise(c, 1), "depth_multiplier", "inconsistent depth_multiplier");
  }
  {
    Graph g = BuildDepthwise(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {6, 5, 3};
    ExpectRejected(g, "rank 4", "rank-3 input");
  }
  {
    DwCase c = base;
    c.act = tflite::ActivationFunctionType_SIGN_BIT;
    ExpectRejected(BuildDepthwise(c, 1), "SIGN_BIT", "SIGN_BIT activation");
  }
  {
    DwCase c = base;
    c.path = Path::kInt8;
    Graph g = BuildDepthwise(c, 1);
    Tensor& w = g.main().tensors[g.main().ops[0].inputs[1]];
    w.quant->quantized_dimension = 0;
    ExpectRejected(g, "axis", "per-channel along the wrong axis");
  }
  {
    // No LiteRT version runs 16x8 depthwise with an int32 bias (newer ones only for CONV_2D).
    DwCase c = base;
    c.path = Path::kInt16;
    c.bias_type = DType::kInt32;
    ExpectRejected(BuildDepthwise(c, 1), "not supported", "16x8 with an int32 bias");
  }
  {
    DwCase c = base;
    c.dil_w = 0;
    ExpectRejected(BuildDepthwise(c, 1), "dilation", "zero dilation");
  }
}

}  // namespace
}  // namespace edgeopt
