// IsConstantOrFoldable / IsConstantOp give the same answers with a ScopedProducerIndex alive as
// with the scan of the subgraph's ops, for every tensor and op of a graph that mixes foldable
// chains (float16 weights through DEQUANTIZE, a RESHAPE of a constant, a chain of both) with
// activations; the index is found only for its own subgraph and only while it lives.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "runtime/constant_fold.h"

namespace edgeopt::rt {
namespace {

Graph MixedGraph() {
  GraphBuilder b(3);
  auto x = b.Input("x", DType::kFloat32, {2, 8});
  auto w16 = b.ConstRandom("w16", DType::kFloat16, {8, 8});
  auto w = b.Tensor("w", DType::kFloat32, {8, 8});
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w16}, {w});
  auto shape = b.Const("shape", DType::kInt32, {2}, std::vector<int32_t>{8, 8});
  auto w2 = b.Tensor("w2", DType::kFloat32, {8, 8});
  b.Op(tflite::BuiltinOperator_RESHAPE, {w, shape}, {w2});  // foldable: from a foldable tensor
  auto y = b.Tensor("y", DType::kFloat32, {2, 8});
  tflite::FullyConnectedOptionsT fc;
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w2, -1}, {y}, fc);
  auto z = b.Tensor("z", DType::kFloat32, {2, 8});
  tflite::AddOptionsT add;
  b.Op(tflite::BuiltinOperator_ADD, {y, x}, {z}, add);  // activations: not foldable
  b.Output(z);
  return b.Finish();
}

TEST(ConstantFold, ProducerIndexGivesTheScansAnswers) {
  const Graph g = MixedGraph();
  const Subgraph& s = g.subgraphs[0];
  std::vector<bool> tensors, ops;
  for (size_t t = 0; t < s.tensors.size(); ++t) tensors.push_back(IsConstantOrFoldable(g, s, static_cast<int32_t>(t)));
  for (size_t k = 0; k < s.ops.size(); ++k) ops.push_back(IsConstantOp(g, s, static_cast<int>(k)));
  // The graph has both answers.
  EXPECT_TRUE(ops[0] && ops[1]);   // DEQUANTIZE, RESHAPE
  EXPECT_FALSE(ops[2] || ops[3]);  // FULLY_CONNECTED, ADD
  EXPECT_EQ(ScopedProducerIndex::For(s), nullptr);
  {
    const ScopedProducerIndex index(s);
    ASSERT_EQ(ScopedProducerIndex::For(s), &index);
    for (size_t t = 0; t < s.tensors.size(); ++t) {
      EXPECT_EQ(index.producer(static_cast<int32_t>(t)), s.FindProducer(static_cast<int32_t>(t))) << "tensor " << t;
      EXPECT_EQ(IsConstantOrFoldable(g, s, static_cast<int32_t>(t)), tensors[t]) << "tensor " << t;
    }
    for (size_t k = 0; k < s.ops.size(); ++k) EXPECT_EQ(IsConstantOp(g, s, static_cast<int>(k)), ops[k]) << "op " << k;
    EXPECT_EQ(index.producer(-1), -1);
    EXPECT_EQ(index.producer(static_cast<int32_t>(s.tensors.size())), -1);
    // An index of another subgraph, inner: each subgraph finds its own.
    const Graph other = MixedGraph();
    const ScopedProducerIndex inner(other.subgraphs[0]);
    EXPECT_EQ(ScopedProducerIndex::For(s), &index);
    EXPECT_EQ(ScopedProducerIndex::For(other.subgraphs[0]), &inner);
  }
  EXPECT_EQ(ScopedProducerIndex::For(s), nullptr);
}

}  // namespace
}  // namespace edgeopt::rt
