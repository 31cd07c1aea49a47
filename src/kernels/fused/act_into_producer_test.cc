// Standalone RELU / RELU6 / RELU_N1_TO_1 folded into the op before them (act_into_producer.cc):
// generated producer -> activation pairs run fused and unfused (InterpreterOptions::fuse_ops) in
// one process give the same bytes (the producer's kernel clamps what the RELU kernel would), the
// fused run is shown as "fused/<variant>+<activation>", a few cases also match TFLite 2.9, and
// the pairs that must stay apart (an activation of the producer's own, another reader, a
// subgraph output, different quantization) do.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

struct PairCase {
  tflite::BuiltinOperator producer;
  tflite::BuiltinOperator act;
  DType type;
  bool other_out_quant = false;   // the activation's output quantized differently (no fusion)
  bool producer_act = false;      // the producer has RELU6 already (no fusion)
  bool shared = false;            // the producer's output is also a subgraph output (no fusion)
  bool Fuses() const { return !other_out_quant && !producer_act && !shared; }
  std::string Name() const {
    return std::string(tflite::EnumNameBuiltinOperator(producer)) + " -> " + tflite::EnumNameBuiltinOperator(act) +
           " " + std::string(DTypeName(type)) + (other_out_quant ? " other quant" : "") +
           (producer_act ? " producer RELU6" : "") + (shared ? " shared" : "");
  }
};

Graph MakePair(const PairCase& c) {
  GraphBuilder b(11);
  const bool q = c.type != DType::kFloat32;
  auto quant = [&](float scale, int zp) { return q ? std::optional<QuantParams>(Quant(scale, zp)) : std::nullopt; };
  const auto own = c.producer_act ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
  const int32_t x = b.Input("x", c.type, {1, 9, 11, 12}, quant(0.05f, 3));
  int32_t y = -1;
  std::vector<int32_t> shape = {1, 9, 11, 12};
  switch (c.producer) {
    case tflite::BuiltinOperator_CONV_2D: {
      const int32_t w = b.ConstRandom("w", q ? DType::kInt8 : DType::kFloat32, {16, 3, 3, 12}, -1, 1, quant(0.02f, 0));
      const int32_t bias = b.ConstRandom("b", q ? DType::kInt32 : DType::kFloat32, {16}, -50, 50, quant(0.001f, 0));
      shape = {1, 9, 11, 16};
      y = b.Tensor("y", c.type, shape, quant(0.04f, -2));
      tflite::Conv2DOptionsT o;
      o.padding = tflite::Padding_SAME;
      o.stride_h = o.stride_w = 1;
      o.fused_activation_function = own;
      b.Op(c.producer, {x, w, bias}, {y}, o);
      break;
    }
    case tflite::BuiltinOperator_DEPTHWISE_CONV_2D: {
      const int32_t w = b.ConstRandom("w", q ? DType::kInt8 : DType::kFloat32, {1, 3, 3, 12}, -1, 1, quant(0.02f, 0));
      const int32_t bias = b.ConstRandom("b", q ? DType::kInt32 : DType::kFloat32, {12}, -50, 50, quant(0.001f, 0));
      y = b.Tensor("y", c.type, shape, quant(0.04f, -2));
      tflite::DepthwiseConv2DOptionsT o;
      o.padding = tflite::Padding_SAME;
      o.stride_h = o.stride_w = 1;
      o.depth_multiplier = 1;
      o.fused_activation_function = own;
      b.Op(c.producer, {x, w, bias}, {y}, o);
      break;
    }
    case tflite::BuiltinOperator_FULLY_CONNECTED: {
      const int32_t w = b.ConstRandom("w", q ? DType::kInt8 : DType::kFloat32, {20, 12}, -1, 1, quant(0.02f, 0));
      const int32_t bias = b.ConstRandom("b", q ? DType::kInt32 : DType::kFloat32, {20}, -50, 50, quant(0.001f, 0));
      shape = {1, 9, 11, 20};
      y = b.Tensor("y", c.type, shape, quant(0.04f, -2));
      tflite::FullyConnectedOptionsT o;
      o.keep_num_dims = true;
      o.fused_activation_function = own;
      b.Op(c.producer, {x, w, bias}, {y}, o);
      break;
    }
    default: {  // ADD / SUB / MUL with a per-channel constant
      const int32_t k = b.ConstRandom("k", c.type, {12}, q ? -120 : -1, q ? 120 : 1, quant(0.03f, 1));
      y = b.Tensor("y", c.type, shape, quant(0.04f, -2));
      if (c.producer == tflite::BuiltinOperator_ADD) {
        tflite::AddOptionsT o;
        o.fused_activation_function = own;
        b.Op(c.producer, {x, k}, {y}, o);
      } else if (c.producer == tflite::BuiltinOperator_SUB) {
        tflite::SubOptionsT o;
        o.fused_activation_function = own;
        b.Op(c.producer, {x, k}, {y}, o);
      } else {
        tflite::MulOptionsT o;
        o.fused_activation_function = own;
        b.Op(c.producer, {x, k}, {y}, o);
      }
    }
  }
  const int32_t z = b.Tensor("z", c.type, shape, c.other_out_quant ? quant(0.03f, -1) : quant(0.04f, -2));
  b.Op(c.act, {y}, {z});
  b.Output(z);
  if (c.shared) b.Output(y);
  return b.Finish();
}

std::vector<PairCase> Cases() {
  std::vector<PairCase> v;
  const tflite::BuiltinOperator producers[] = {
      tflite::BuiltinOperator_CONV_2D, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, tflite::BuiltinOperator_FULLY_CONNECTED,
      tflite::BuiltinOperator_ADD,     tflite::BuiltinOperator_SUB,               tflite::BuiltinOperator_MUL};
  const tflite::BuiltinOperator acts[] = {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6,
                                          tflite::BuiltinOperator_RELU_N1_TO_1};
  for (auto p : producers)
    for (auto a : acts)
      for (DType t : {DType::kFloat32, DType::kInt8}) v.push_back({p, a, t});
  v.push_back({tflite::BuiltinOperator_CONV_2D, tflite::BuiltinOperator_RELU, DType::kInt8, true});
  v.push_back({tflite::BuiltinOperator_CONV_2D, tflite::BuiltinOperator_RELU, DType::kFloat32, false, true});
  v.push_back({tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_RELU6, DType::kFloat32, false, false, true});
  v.push_back({tflite::BuiltinOperator_DEPTHWISE_CONV_2D, tflite::BuiltinOperator_RELU, DType::kInt8, false, false, true});
  return v;
}

TEST(FusedActivation, MatchesUnfusedAndSaysSo) {
  int k = 0;
  for (const PairCase& c : Cases()) {
    const Graph g = MakePair(c);
    auto model = rt::Model::FromGraph(Graph(g));
    ASSERT_TRUE(model.ok()) << c.Name() << ": " << model.status().ToString();
    testing::CompareOptions co;
    co.seed = 100 + k++;
    co.float_lo = -3;
    co.float_hi = 3;
    const auto inputs = testing::RandomInputs(g, co);
    for (int threads : {1, 2}) {
      EXPECT_EQ(testing::FusedDiffersFromUnfused(*model, inputs, threads), "") << c.Name() << " threads " << threads;
      rt::InterpreterOptions fused;
      fused.num_threads = threads;
      auto interp = rt::Interpreter::Create(*model, fused);
      ASSERT_TRUE(interp.ok());
      const auto ops = (*interp)->ops();
      const std::string suffix = std::string("+") + (c.act == tflite::BuiltinOperator_RELU    ? "relu"
                                                     : c.act == tflite::BuiltinOperator_RELU6 ? "relu6"
                                                                                              : "relu_n1_to_1");
      const std::string& v = ops.front().variant;
      if (c.Fuses()) {
        EXPECT_EQ(v.rfind("fused/", 0), 0u) << c.Name() << ": " << v;
        EXPECT_EQ(v.size() >= suffix.size() && v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0, true)
            << c.Name() << ": " << v;
        EXPECT_EQ(ops.back().variant, "fused into #0") << c.Name();
      } else {
        EXPECT_EQ(v.rfind("fused/", 0), std::string::npos) << c.Name() << ": fused (" << v << ")";
      }
    }
  }
}

// The fused pairs against TFLite 2.9 (which runs them as two ops).
TEST(FusedActivation, MatchesTflite29) {
  SKIP_WITHOUT_ORACLE();
  int k = 0;
  for (const PairCase& c : Cases()) {
    if (!c.Fuses() || k++ % 3 != 0) continue;
    testing::CompareOptions co;
    co.seed = 7 + k;
    co.float_lo = -3;
    co.float_hi = 3;
    const testing::CompareReport r = testing::CompareGraph(MakePair(c), co);
    EXPECT_TRUE(r.ok) << c.Name() << ": " << r.error << r.Summary();
  }
}

}  // namespace
}  // namespace edgeopt
