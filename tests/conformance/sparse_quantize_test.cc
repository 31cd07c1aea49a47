// Quantizing a model whose weights are stored sparse behind DENSIFY (a pruned model, MediaPipe's
// *_sparse models): the DENSIFY of each constant is folded into dense weights first
// (FoldConstantDensify), so the weights are quantized and their ops run integer kernels, with no
// float island and QUANTIZE / DEQUANTIZE pair per sparse layer; the files written run in TFLite 2.9
// with our outputs. Also DequantizeModel on sparse float16 weights (only the stored values are
// converted).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "eval/agreement.h"
#include "eval/inputs.h"
#include "core/half.h"
#include "graph/builder.h"
#include "optimize/quantize/dequantize.h"
#include "optimize/quantize/quantize.h"
#include "optimize/sparse_encoding.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/random_samples.h"

namespace edgeopt {
namespace {

// x [1,8,8,8] -> 3x3 CONV_2D (16 outputs, RELU) -> 1x1 CONV_2D (4 outputs). The first
// convolution's weights are ~75% zeros (pruned).
Graph TwoConvs(DType weight_type = DType::kFloat32) {
  GraphBuilder b(3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  const int32_t x = b.Input("x", DType::kFloat32, {1, 8, 8, 8});
  std::vector<float> w1(16 * 3 * 3 * 8);
  for (float& v : w1) v = (rng() % 4 == 0) ? d(rng) : 0.0f;
  std::vector<float> b1(16), w2(4 * 16), b2(4);
  for (float& v : b1) v = 0.1f * d(rng);
  for (float& v : w2) v = d(rng);
  for (float& v : b2) v = 0.1f * d(rng);
  int32_t w1t;
  if (weight_type == DType::kFloat16) {
    std::vector<uint16_t> half(w1.size());
    for (size_t i = 0; i < w1.size(); ++i) half[i] = FloatToHalf(w1[i]);
    const int32_t h = b.Const("w1_fp16", DType::kFloat16, {16, 3, 3, 8}, half);
    w1t = b.Tensor("w1", DType::kFloat32, {16, 3, 3, 8});
    b.Op(tflite::BuiltinOperator_DEQUANTIZE, {h}, {w1t}, 3);
  } else {
    w1t = b.Const("w1", DType::kFloat32, {16, 3, 3, 8}, w1);
  }
  const int32_t h1 = b.Tensor("h1", DType::kFloat32, {1, 8, 8, 16});
  tflite::Conv2DOptionsT c;
  c.padding = tflite::Padding_SAME;
  c.stride_w = c.stride_h = 1;
  c.dilation_w_factor = c.dilation_h_factor = 1;
  c.fused_activation_function = tflite::ActivationFunctionType_RELU;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w1t, b.Const("b1", DType::kFloat32, {16}, b1)}, {h1}, c);
  const int32_t y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 4});
  c.fused_activation_function = tflite::ActivationFunctionType_NONE;
  b.Op(tflite::BuiltinOperator_CONV_2D, {h1, b.Const("w2", DType::kFloat32, {4, 1, 1, 16}, w2),
                                          b.Const("b2", DType::kFloat32, {4}, b2)}, {y}, c);
  b.Output(y);
  return b.Finish();
}

// The graph with tensor `name`'s constant re-encoded sparse behind a DENSIFY.
Graph Sparse(Graph g, const std::string& name) {
  auto r = optimize::EncodeSparseWeight(g, 0, g.main().FindTensor(name));
  EXPECT_TRUE(r.ok() && r->encoded) << name << (r.ok() ? ": not encoded" : ": " + r.status().ToString());
  return g;
}

int CountOps(const Graph& g, tflite::BuiltinOperator code) {
  int n = 0;
  for (const Operator& op : g.main().ops) n += op.code == code ? 1 : 0;
  return n;
}

std::vector<std::vector<eval::HostTensor>> Samples(const Graph& g, int n, uint64_t seed) {
  return testing::RandomSamples(g, n, seed, -1, 1);
}

eval::AgreementReport Compare(const Graph& reference, const Graph& candidate) {
  auto rm = rt::Model::FromGraph(reference);
  auto cm = rt::Model::FromGraph(candidate);
  EXPECT_TRUE(rm.ok() && cm.ok());
  auto a = eval::CompareModels(*rm, *cm, Samples(reference, 4, 900));
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? *a : eval::AgreementReport{};
}

TEST(FoldConstantDensify, GivesTheDenseModel) {
  const Graph dense = TwoConvs();
  Graph g = Sparse(dense, "w1");
  ASSERT_EQ(CountOps(g, tflite::BuiltinOperator_DENSIFY), 1);
  auto folded = optimize::FoldConstantDensify(g);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(*folded, 1);
  EXPECT_EQ(CountOps(g, tflite::BuiltinOperator_DENSIFY), 0);
  const int32_t w = g.main().ops[0].inputs[1];
  EXPECT_EQ(g.main().tensors[w].name, "w1");
  EXPECT_FALSE(g.main().tensors[w].sparsity);
  EXPECT_TRUE(g.IsConstant(g.main().tensors[w]));
  const auto a = Compare(dense, g);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_EQ(a.outputs[0].max_abs_error, 0.0);  // the same weights: the same float outputs
  auto again = optimize::FoldConstantDensify(g);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

// A sparse constant with fewer stored values than its layout needs: an error naming it, the graph
// unchanged.
TEST(FoldConstantDensify, TruncatedValuesNameTheTensor) {
  Graph g = Sparse(TwoConvs(), "w1");
  const int32_t sparse = g.main().FindTensor("w1_sparse");
  ASSERT_GE(sparse, 0);
  const auto values = g.TensorData(g.main().tensors[sparse]);
  ASSERT_GT(values.size(), 4u);
  g.main().tensors[sparse].buffer =
      g.AddBuffer(Buffer::Owned(std::vector<uint8_t>(values.begin(), values.begin() + values.size() / 2)));
  auto folded = optimize::FoldConstantDensify(g);
  ASSERT_FALSE(folded.ok());
  EXPECT_NE(folded.status().message().find("sparse constant 'w1_sparse'"), std::string::npos) << folded.status().ToString();
  EXPECT_EQ(CountOps(g, tflite::BuiltinOperator_DENSIFY), 1);
}

TEST(QuantizeSparse, Int8QuantizesTheSparseLayer) {
  const Graph dense = TwoConvs();
  for (auto mode : {optimize::QuantMode::kInt8, optimize::QuantMode::kInt16x8, optimize::QuantMode::kDynamic}) {
    SCOPED_TRACE(optimize::QuantModeName(mode));
    optimize::QuantizeOptions o;
    o.mode = mode;
    if (mode != optimize::QuantMode::kDynamic) o.calibration = Samples(dense, 8, 100);
    o.dynamic_min_elements = 16;
    Graph from_dense = dense, from_sparse = Sparse(dense, "w1");
    auto rd = optimize::QuantizeModel(from_dense, o);
    auto rs = optimize::QuantizeModel(from_sparse, o);
    ASSERT_TRUE(rd.ok() && rs.ok()) << (rs.ok() ? rd.status().ToString() : rs.status().ToString());
    EXPECT_EQ(rs->densified, 1);
    EXPECT_EQ(rd->densified, 0);
    EXPECT_EQ(CountOps(from_sparse, tflite::BuiltinOperator_DENSIFY), 0);
    EXPECT_TRUE(rs->float_ops.empty()) << rs->float_ops.size() << " float ops, first " << rs->float_ops[0];
    EXPECT_EQ(rs->weights_quantized, rd->weights_quantized);
    EXPECT_EQ(rs->ops_quantized, rd->ops_quantized);
    // Quantized from the same weights: the same model.
    const auto a = Compare(from_dense, from_sparse);
    ASSERT_EQ(a.outputs.size(), 1u);
    EXPECT_EQ(a.outputs[0].max_abs_error, 0.0);
    // And the reference runtime runs it with our outputs.
    if (!testing::Tflite29Available()) {
      std::printf("[skip] TFLite 2.9 library absent (run scripts/setup.sh): %s model not run in the reference runtime\n",
                  optimize::QuantModeName(mode));
      continue;
    }
    const testing::CompareReport r = testing::CompareGraph(from_sparse);
    EXPECT_TRUE(r.ok) << r.Summary() << r.error;
    EXPECT_EQ(r.oracle, "tflite-2.9");
  }
}

TEST(DequantizeSparse, Float16SparseWeightsConvertOnlyTheirStoredValues) {
  const Graph dense = TwoConvs(DType::kFloat16);
  Graph g = Sparse(dense, "w1_fp16");
  const int32_t sparse = g.main().FindTensor("w1_fp16_sparse");
  ASSERT_GE(sparse, 0);
  const size_t stored = g.TensorData(g.main().tensors[sparse]).size() / 2;
  ASSERT_LT(stored, size_t{16 * 3 * 3 * 8});
  Graph f = g;
  auto r = optimize::DequantizeModel(f);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int32_t t = f.main().FindTensor("w1_fp16_sparse");
  ASSERT_GE(t, 0);
  EXPECT_EQ(f.main().tensors[t].type, DType::kFloat32);
  EXPECT_TRUE(f.main().tensors[t].sparsity);
  EXPECT_EQ(f.TensorData(f.main().tensors[t]).size(), stored * 4);
  const auto a = Compare(g, f);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_EQ(a.outputs[0].max_abs_error, 0.0);
}

}  // namespace
}  // namespace edgeopt
