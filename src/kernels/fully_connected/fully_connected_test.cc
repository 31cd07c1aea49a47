// FULLY_CONNECTED against TFLite 2.9 over generated cases: float32, uint8, int8 (with and
// without a weight zero point), 16x8, hybrid symmetric and asymmetric; input ranks 1-4, batch
// flattening and keep_num_dims, optional bias, activations. Per-channel weights (newer LiteRT)
// are checked against 2.9's per-channel CONV_2D 1x1, the same arithmetic. Plus error paths.
#include <gtest/gtest.h>

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

struct FcCase {
  Path path = Path::kFloat;
  std::vector<int32_t> in_shape = {2, 8};
  int units = 5;
  bool keep_num_dims = false;
  bool has_bias = true;
  bool per_channel = false;
  bool weight_zero_point = false;   // int8 weights with a non-zero (per-tensor) zero point
  bool asymmetric = false;          // hybrid asymmetric_quantize_inputs
  DType bias_type = DType::kInt64;  // 16x8 bias
  int act = tflite::ActivationFunctionType_NONE;

  int depth() const { return in_shape.back(); }
  int64_t batches() const { return rt::NumElements(in_shape) / depth(); }
  std::string Describe() const {
    std::ostringstream s;
    s << "fully_connected " << PathName(path) << (per_channel ? " per-channel" : " per-tensor")
      << (weight_zero_point ? " weight-zp" : "") << (asymmetric ? " asymmetric" : "") << " in "
      << rt::ShapeToString(in_shape) << " units " << units << (keep_num_dims ? " keep_num_dims" : "") << " act " << act
      << (has_bias ? (path == Path::kInt16 ? std::string(" bias ") + std::string(DTypeName(bias_type)) : "")
                   : std::string(" no bias"));
    return s.str();
  }
};

std::vector<int32_t> OutShape(const FcCase& c) {
  if (c.keep_num_dims) {
    auto s = c.in_shape;
    s.back() = c.units;
    return s;
  }
  return {static_cast<int32_t>(c.batches()), c.units};
}

// How TFLite 2.9 runs a case it cannot run directly (see ExpectMatchesTwin).
enum class Twin {
  kNone,
  kConv,        // RESHAPE to [B,1,1,K], CONV_2D 1x1 with the same weights and quantization, RESHAPE back
  kSplitUnits,  // hybrid per-channel: one per-tensor FC per unit (its own scale), CONCATENATION
};

Graph BuildFc(const FcCase& c, uint64_t seed, Twin twin = Twin::kNone) {
  const bool as_conv = twin == Twin::kConv;
  GraphBuilder b(seed);
  auto& rng = b.rng();
  const int depth = c.depth();
  const std::vector<int32_t> out_shape = OutShape(c);
  int32_t x, w, bias = kNoTensor, y;
  std::optional<QuantParams> in_q, out_q;
  const std::vector<int32_t> w_shape =
      as_conv ? std::vector<int32_t>{c.units, 1, 1, depth} : std::vector<int32_t>{c.units, depth};
  if (c.path == Path::kFloat || c.path == Path::kHybrid) {
    x = b.Input("x", DType::kFloat32, c.in_shape);
    if (c.path == Path::kFloat) {
      w = b.ConstRandom("w", DType::kFloat32, w_shape, -1, 1);
    } else {
      auto scales = testing::RandomWeightScales(rng, c.units, c.per_channel);
      w = b.ConstRandom("w", DType::kInt8, w_shape, -127, 127, testing::WeightQuant(rng, DType::kInt8, scales, 0));
    }
    if (c.has_bias) bias = b.ConstRandom("bias", DType::kFloat32, {c.units}, -1, 1);
    y = b.Tensor("y", DType::kFloat32, out_shape);
  } else {
    const DType t = c.path == Path::kUInt8 ? DType::kUInt8 : c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
    const DType wt = c.path == Path::kUInt8 ? DType::kUInt8 : DType::kInt8;
    in_q = testing::RandomActivationQuant(rng, t);
    auto scales = testing::RandomWeightScales(rng, c.units, c.per_channel);
    const double lo = wt == DType::kUInt8 ? 0 : -127, hi = wt == DType::kUInt8 ? 255 : 127;
    QuantParams wq = testing::WeightQuant(rng, wt, scales, 0);
    if (c.weight_zero_point) wq.zero_point = {std::uniform_int_distribution<int>(-20, 20)(rng)};
    w = b.ConstRandom("w", wt, w_shape, lo, hi, wq);
    const float out_scale = testing::OutputScaleFor(t, depth, in_q->scale[0], scales[0]);
    out_q = testing::RandomActivationQuant(rng, t);
    out_q->scale[0] = out_scale;
    x = b.Input("x", t, c.in_shape, in_q);
    if (c.has_bias)
      bias = testing::QuantizedBias(b, "bias", t == DType::kInt16 ? c.bias_type : DType::kInt32, c.units,
                                    in_q->scale[0], scales, out_scale * 30, rng);
    y = b.Tensor("y", t, out_shape, out_q);
  }
  const DType t = b.current().tensors[x].type;
  if (as_conv) {
    const int32_t rows = static_cast<int32_t>(c.batches());
    auto s1 = b.Const<int32_t>("s1", DType::kInt32, {4}, {rows, 1, 1, depth});
    auto x4 = b.Tensor("x4", t, {rows, 1, 1, depth}, in_q);
    tflite::ReshapeOptionsT r1;
    r1.new_shape = {rows, 1, 1, depth};
    b.Op(tflite::BuiltinOperator_RESHAPE, {x, s1}, {x4}, r1);
    auto y4 = b.Tensor("y4", t, {rows, 1, 1, c.units}, out_q);
    tflite::Conv2DOptionsT co;
    co.padding = tflite::Padding_VALID;
    co.stride_h = co.stride_w = 1;
    co.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
    std::vector<int32_t> inputs = {x4, w};
    if (bias != kNoTensor) inputs.push_back(bias);
    b.Op(tflite::BuiltinOperator_CONV_2D, inputs, {y4}, co);
    auto s2 = b.Const<int32_t>("s2", DType::kInt32, {static_cast<int32_t>(out_shape.size())}, out_shape);
    tflite::ReshapeOptionsT r2;
    r2.new_shape = out_shape;
    b.Op(tflite::BuiltinOperator_RESHAPE, {y4, s2}, {y}, r2);
  } else if (twin == Twin::kSplitUnits) {
    const Tensor wt = b.current().tensors[w];
    auto wv = b.graph().buffers[wt.buffer].as<int8_t>();
    std::vector<float> bv;
    if (c.has_bias) {
      auto v = b.graph().buffers[b.current().tensors[bias].buffer].as<float>();
      bv.assign(v.begin(), v.end());
    }
    std::vector<int32_t> parts;
    for (int u = 0; u < c.units; ++u) {
      const std::string n = std::to_string(u);
      std::vector<int8_t> row(wv.begin() + int64_t{u} * depth, wv.begin() + int64_t{u + 1} * depth);
      auto wu = b.Const<int8_t>("w" + n, DType::kInt8, {1, depth}, row, Quant(wt.quant->scale[u], 0));
      const int32_t bu = c.has_bias ? b.Const<float>("b" + n, DType::kFloat32, {1}, {bv[u]}) : kNoTensor;
      auto shape = out_shape;
      shape.back() = 1;
      auto yu = b.Tensor("y" + n, DType::kFloat32, shape);
      tflite::FullyConnectedOptionsT o;
      o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
      o.keep_num_dims = c.keep_num_dims;
      o.asymmetric_quantize_inputs = c.asymmetric;
      b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, wu, bu}, {yu}, o);
      parts.push_back(yu);
    }
    tflite::ConcatenationOptionsT co;
    co.axis = static_cast<int32_t>(out_shape.size()) - 1;
    b.Op(tflite::BuiltinOperator_CONCATENATION, parts, {y}, co);
  } else {
    tflite::FullyConnectedOptionsT o;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
    o.keep_num_dims = c.keep_num_dims;
    o.asymmetric_quantize_inputs = c.asymmetric;
    b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, bias}, {y}, o);
  }
  b.Output(y);
  return b.Finish();
}

FcCase RandomCase(std::mt19937_64& rng, Path path) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  FcCase c;
  c.path = path;
  const int depth = pick({1, 3, 8, 13, 16, 31, 64, 100});
  switch (pick({1, 2, 2, 3, 4})) {
    case 1: c.in_shape = {depth}; break;
    case 2: c.in_shape = {pick({1, 2, 3, 7}), depth}; break;
    case 3: c.in_shape = {pick({1, 2}), pick({1, 3, 5}), depth}; break;
    default: c.in_shape = {pick({1, 2}), pick({1, 2}), pick({2, 3}), depth}; break;
  }
  c.units = pick({1, 2, 5, 8, 10, 17, 33});
  c.keep_num_dims = pick({0, 0, 1}) == 1;
  c.has_bias = pick({1, 1, 1, 0}) == 1;
  c.act = pick({tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1});
  return c;
}

class FullyConnectedConformance : public ::testing::Test {
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
      FcCase c = RandomCase(rng, path);
      tweak(c, rng);
      const uint64_t s = seed * 1000 + i;
      const std::string what = "case " + std::to_string(i) + ": " + c.Describe();
      const bool ok = twin != Twin::kNone ? testing::ExpectMatchesTwin(BuildFc(c, s), BuildFc(c, s, twin), what, opts)
                                          : ExpectMatches(BuildFc(c, s), what, opts);
      if (!ok) ++failures;
    }
  }
};

TEST_F(FullyConnectedConformance, Float32) {
  RunRandom(Path::kFloat, 50, 31, [](FcCase&, std::mt19937_64&) {});
}

TEST_F(FullyConnectedConformance, Int8) {
  RunRandom(Path::kInt8, 60, 32, [](FcCase&, std::mt19937_64&) {});
}

TEST_F(FullyConnectedConformance, Int8WeightZeroPoint) {
  RunRandom(Path::kInt8, 20, 33, [](FcCase& c, std::mt19937_64&) { c.weight_zero_point = true; });
}

TEST_F(FullyConnectedConformance, UInt8) {
  RunRandom(Path::kUInt8, 40, 34, [](FcCase&, std::mt19937_64&) {});
}

// 2.9 runs 16x8 with an int64 bias through the reference kernel (64-bit requantization) and
// without a bias (or with an int32 one) through ruy with int32 accumulators.
TEST_F(FullyConnectedConformance, Int16x8) {
  RunRandom(Path::kInt16, 30, 35, [](FcCase& c, std::mt19937_64&) { c.bias_type = DType::kInt64; });
}

TEST_F(FullyConnectedConformance, Int16x8Int32Bias) {
  RunRandom(Path::kInt16, 20, 41, [](FcCase& c, std::mt19937_64&) { c.bias_type = DType::kInt32; });
}

TEST_F(FullyConnectedConformance, HybridSymmetric) {
  RunRandom(Path::kHybrid, 30, 36, [](FcCase& c, std::mt19937_64&) { c.asymmetric = false; });
}

TEST_F(FullyConnectedConformance, HybridAsymmetric) {
  RunRandom(Path::kHybrid, 30, 37, [](FcCase& c, std::mt19937_64&) { c.asymmetric = true; });
}

// Per-channel int8 weights: 2.9's FULLY_CONNECTED reads the legacy per-tensor scale (0 for
// per-axis tensors); newer LiteRT and edgeopt requantize per unit exactly like a 1x1 CONV_2D.
TEST_F(FullyConnectedConformance, Int8PerChannelAsConv) {
  RunRandom(
      Path::kInt8, 30, 38,
      [](FcCase& c, std::mt19937_64&) {
        c.per_channel = true;
        c.has_bias = true;  // 2.9's CONV_2D needs one
      },
      Twin::kConv);
}

TEST_F(FullyConnectedConformance, Int16x8PerChannelAsConv) {
  RunRandom(
      Path::kInt16, 15, 39,
      [](FcCase& c, std::mt19937_64&) {
        c.per_channel = true;
        c.has_bias = true;
      },
      Twin::kConv);
}

// Hybrid per-channel with asymmetric inputs equals 2.9's hybrid per-channel CONV_2D 1x1 (which
// always quantizes its input asymmetrically, per batch row here).
TEST_F(FullyConnectedConformance, HybridPerChannelAsConv) {
  RunRandom(
      Path::kHybrid, 20, 40,
      [](FcCase& c, std::mt19937_64&) {
        c.per_channel = true;
        c.asymmetric = true;
        c.has_bias = true;
        c.keep_num_dims = false;
        c.in_shape = {static_cast<int32_t>(c.batches()), c.depth()};  // one quantization row per batch row
        c.units = std::max(c.units, 2);  // one unit would make the CONV_2D twin per-tensor (symmetric)
      },
      Twin::kConv);
}

// Hybrid per-channel, symmetric or asymmetric inputs: each unit is a per-tensor hybrid FC with
// that unit's scale on the same quantized input, so 2.9 runs one FC per unit and concatenates.
TEST_F(FullyConnectedConformance, HybridPerChannelAsSplitUnits) {
  RunRandom(
      Path::kHybrid, 20, 42,
      [](FcCase& c, std::mt19937_64& rng) {
        c.per_channel = true;
        c.units = std::max(c.units, 2);
        c.asymmetric = rng() % 2 == 0;
      },
      Twin::kSplitUnits);
}

TEST_F(FullyConnectedConformance, Errors) {
  FcCase base;
  {
    Graph g = BuildFc(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {3, 7};  // 21 elements, depth 8
    ExpectRejected(g, "not a multiple", "depth mismatch");
  }
  {
    FcCase c = base;
    c.keep_num_dims = true;
    Graph g = BuildFc(c, 1);
    g.main().tensors[g.main().inputs[0]].shape = {4, 4};
    ExpectRejected(g, "keep_num_dims", "keep_num_dims with another last dimension");
  }
  {
    Graph g = BuildFc(base, 1);
    g.main().tensors[g.main().ops[0].inputs[1]].shape = {5, 4, 2};
    ExpectRejected(g, "rank 2", "rank-3 weights");
  }
  {
    Graph g = BuildFc(base, 1);
    auto* o = g.main().ops[0].options.AsFullyConnectedOptions();
    o->weights_format = tflite::FullyConnectedOptionsWeightsFormat_SHUFFLED4x16INT8;
    ExpectRejected(g, "SHUFFLED4x16INT8", "shuffled weights");
  }
  {
    FcCase c = base;
    c.path = Path::kInt16;
    Graph g = BuildFc(c, 1);
    g.main().tensors[g.main().outputs[0]].quant->zero_point = {5};
    ExpectRejected(g, "zero point 0", "int16 output zero point");
  }
  {
    FcCase c = base;
    c.act = tflite::ActivationFunctionType_TANH;
    ExpectRejected(BuildFc(c, 1), "TANH", "TANH activation");
  }
  {
    Graph g = BuildFc(base, 1);
    g.main().tensors[g.main().ops[0].inputs[2]].shape = {4};
    ExpectRejected(g, "bias", "bias size");
  }
}

}  // namespace
}  // namespace edgeopt
