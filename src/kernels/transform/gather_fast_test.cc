// The fast GATHER (gather_fast.cc) against the reference kernel: the same bytes over row sizes
// with and without a fixed-size copy, int32 and int64 indices, axes, batch_dims, repeated and
// boundary indices; out-of-range indices give the reference kernel's error.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/fast_vs_reference.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

struct GatherCase {
  DType type;
  std::vector<int32_t> shape;      // params
  int axis, batch_dims;
  std::vector<int32_t> idx_shape;  // indices (batch_dims leading dimensions equal to the params')
  bool i64;
};

Graph MakeGather(const GatherCase& c) {
  const int rank = static_cast<int>(c.shape.size());
  const int a = c.axis < 0 ? c.axis + rank : c.axis;
  std::vector<int32_t> out;
  for (int i = 0; i < a; ++i) out.push_back(c.shape[i]);
  for (size_t i = static_cast<size_t>(c.batch_dims); i < c.idx_shape.size(); ++i) out.push_back(c.idx_shape[i]);
  for (int i = a + 1; i < rank; ++i) out.push_back(c.shape[i]);
  GraphBuilder b;
  const int32_t x = b.Input("x", c.type, c.shape);
  const int32_t i = b.Input("i", c.i64 ? DType::kInt64 : DType::kInt32, c.idx_shape);
  const int32_t y = b.Tensor("y", c.type, out);
  tflite::GatherOptionsT o;
  o.axis = c.axis;
  o.batch_dims = c.batch_dims;
  b.Op(tflite::BuiltinOperator_GATHER, {x, i}, {y}, o);
  b.Output(y);
  return b.Finish();
}

// Valid indices for c: random, with the first and last row of the axis among them.
testing::TensorValue Indices(const GatherCase& c, std::mt19937& rng) {
  const int rank = static_cast<int>(c.shape.size());
  const int axis_dim = c.shape[static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis)];
  int64_t n = 1;
  for (int32_t d : c.idx_shape) n *= d;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = k == 0 ? axis_dim - 1 : k == 1 ? 0 : static_cast<int64_t>(rng() % axis_dim);
  if (c.i64) return testing::MakeValue<int64_t>("i", DType::kInt64, c.idx_shape, v);
  return testing::MakeValue<int32_t>("i", DType::kInt32, c.idx_shape, std::vector<int32_t>(v.begin(), v.end()));
}

TEST(GatherFast, MatchesReference) {
  const std::vector<GatherCase> cases = {
      {DType::kFloat32, {10003, 16}, 0, 0, {1, 256}, false},  // an embedding (movie_review_text): 64-byte rows
      {DType::kFloat32, {50, 8}, 0, 0, {7, 9}, true},          // 32-byte rows
      {DType::kFloat32, {40, 4}, 0, 0, {33}, false},           // 16
      {DType::kInt8, {40, 8}, 0, 0, {5, 3}, false},            // 8
      {DType::kInt16, {9, 2}, 0, 0, {12}, true},               // 4
      {DType::kUInt8, {31, 3}, 0, 0, {17}, false},             // 3: the general copy
      {DType::kFloat32, {12, 25}, 0, 0, {6}, false},           // 100
      {DType::kInt32, {6, 7, 5}, 1, 0, {4, 2}, false},         // an inner axis: outer rows of 20 bytes
      {DType::kFloat32, {3, 5, 4}, -1, 0, {6}, true},          // the last axis: rows of one element
      {DType::kFloat32, {3, 11, 16}, 1, 1, {3, 4}, false},     // batch_dims 1
      {DType::kInt8, {2, 3, 9, 2}, 2, 2, {2, 3, 5}, true},     // batch_dims 2, int64
      {DType::kBool, {8, 5}, 0, 0, {4}, false},
      {DType::kFloat32, {6, 0}, 0, 0, {3}, false},             // empty rows
  };
  std::mt19937 rng(77);
  int k = 0;
  for (const GatherCase& c : cases) {
    const Graph g = MakeGather(c);
    testing::FastCheck check;
    check.op_type = "GATHER";
    check.variant = "gather/any/rows";
    check.threads = 1 + k++ % 2;
    check.seed = static_cast<uint64_t>(rng());
    check.inputs = testing::RandomInputs(g, testing::ExactOptions());
    check.inputs[1] = Indices(c, rng);
    EXPECT_TRUE(testing::ExpectFastMatchesReference(
        g, "GATHER " + std::string(DTypeName(c.type)) + " case " + std::to_string(k), check));
  }
}

TEST(GatherFast, OutOfRangeIndexIsTheReferenceError) {
  const GatherCase c{DType::kFloat32, {4, 16}, 0, 0, {3}, false};
  const Graph g = MakeGather(c);
  for (const std::vector<int32_t>& bad : {std::vector<int32_t>{1, 4, 0}, std::vector<int32_t>{0, 2, -1}}) {
    auto in = testing::RandomInputs(g, testing::ExactOptions());
    in[1] = testing::MakeValue<int32_t>("i", DType::kInt32, {3}, bad);
    auto model = rt::Model::FromGraph(g);
    ASSERT_TRUE(model.ok());
    const auto out = testing::RunEdgeopt(*model, in);  // fast kernels
    ASSERT_FALSE(out.ok());
    const Status& st = out.status();
    const std::string want = "index " + std::to_string(bad[1] == 4 ? 4 : -1) + " is out of range [0, 4)";
    EXPECT_NE(st.message().find(want), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("GATHER"), std::string::npos) << st.ToString();
  }
}

}  // namespace
}  // namespace edgeopt
