// DiffGraphsSemantic: ignores renumbering and unused data, catches changes in what is computed.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/compare.h"

namespace edgeopt {
namespace {

// y = (x + c1) * c2 with c1 == c2 byte for byte, plus an unused constant.
Graph MakeRedundant() {
  GraphBuilder b(5);
  const auto x = b.Input("x", DType::kFloat32, {1, 4});
  const std::vector<float> same = {1, 2, 3, 4};
  const auto c1 = b.Const<float>("c1", DType::kFloat32, {1, 4}, same);
  b.ConstRandom("unused", DType::kFloat32, {16});
  const auto c2 = b.Const<float>("c2", DType::kFloat32, {1, 4}, same);
  const auto y1 = b.Tensor("y1", DType::kFloat32, {1, 4});
  const auto y2 = b.Tensor("y2", DType::kFloat32, {1, 4});
  b.Op(tflite::BuiltinOperator_ADD, {x, c1}, {y1}, tflite::AddOptionsT());
  b.Op(tflite::BuiltinOperator_MUL, {y1, c2}, {y2}, tflite::MulOptionsT());
  b.Output(y2);
  b.AddSignature("serving_default");
  return b.Finish();
}

TEST(DiffGraphsSemantic, StripAndDedupeChangeNothingThatMatters) {
  Graph a = MakeRedundant();
  Graph b = MakeRedundant();
  EXPECT_EQ(b.DropUnused().tensors, 1);
  EXPECT_EQ(b.DedupeBuffers(), 1);
  EXPECT_FALSE(DiffGraphs(a, b).empty()) << "index-based comparison sees the renumbering";
  auto diffs = DiffGraphsSemantic(a, b);
  for (const auto& d : diffs) ADD_FAILURE() << d;
  EXPECT_TRUE(DiffGraphsSemantic(b, a).empty());
}

TEST(DiffGraphsSemantic, ConstantBytesMatter) {
  Graph a = MakeRedundant();
  Graph b = MakeRedundant();
  const int c2 = b.main().FindTensor("c2");
  std::vector<float> other = {1, 2, 3, 5};
  b.main().tensors[c2].buffer = b.AddBuffer(Buffer::FromValues<float>(other));
  auto diffs = DiffGraphsSemantic(a, b);
  ASSERT_FALSE(diffs.empty());
  EXPECT_NE(diffs[0].find("tensor 'c2' constant bytes"), std::string::npos) << diffs[0];
}

TEST(DiffGraphsSemantic, WiringMatters) {
  Graph a = MakeRedundant();
  Graph b = MakeRedundant();
  // MUL reads x instead of y1: every tensor keeps its content, the wiring differs.
  b.main().ops[1].inputs[0] = b.main().FindTensor("x");
  auto diffs = DiffGraphsSemantic(a, b);
  ASSERT_FALSE(diffs.empty());
  EXPECT_NE(diffs[0].find("wiring"), std::string::npos) << diffs[0];
}

TEST(DiffGraphsSemantic, OptionsAndOpsMatter) {
  Graph a = MakeRedundant();
  Graph b = MakeRedundant();
  b.main().ops[0].options.AsAddOptions()->fused_activation_function = tflite::ActivationFunctionType_RELU;
  EXPECT_FALSE(DiffGraphsSemantic(a, b).empty());
  Graph c = MakeRedundant();
  c.main().RemoveOp(1);
  EXPECT_FALSE(DiffGraphsSemantic(a, c).empty());
}

}  // namespace
}  // namespace edgeopt
