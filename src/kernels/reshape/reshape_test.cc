// RESHAPE / SQUEEZE / EXPAND_DIMS against the reference runtime.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

using testing::CompareGraph;

TEST(ReshapeConformance, ShapesFromOptionsAndTensor) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  struct Case {
    std::vector<int32_t> in, out;
    bool shape_tensor;
  };
  const Case cases[] = {{{2, 3, 4}, {6, 4}, false}, {{2, 3, 4}, {4, -1}, true}, {{1, 8}, {2, 2, 2}, true},
                        {{5}, {5, 1}, false},       {{1, 1, 3}, {3}, true}};
  for (const auto& c : cases) {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, c.in);
    rt::Shape resolved = c.out;
    int64_t n = 1, known = 1;
    for (int32_t d : c.in) n *= d;
    for (int32_t d : c.out) known *= d == -1 ? 1 : d;
    for (auto& d : resolved)
      if (d == -1) d = static_cast<int32_t>(n / known);
    auto y = b.Tensor("y", DType::kFloat32, resolved);
    tflite::ReshapeOptionsT o;
    o.new_shape = c.out;
    if (c.shape_tensor) {
      auto s = b.Const<int32_t>("shape", DType::kInt32, {static_cast<int32_t>(c.out.size())}, c.out);
      b.Op(tflite::BuiltinOperator_RESHAPE, {x, s}, {y}, o);
    } else {
      b.Op(tflite::BuiltinOperator_RESHAPE, {x}, {y}, o);
    }
    b.Output(y);
    auto report = CompareGraph(b.Finish());
    EXPECT_TRUE(report.ok) << report.Summary();
  }
}

TEST(ReshapeConformance, SqueezeAndExpandDims) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {1, 3, 1, 2}, Quant(0.5f, 3));
    auto y = b.Tensor("y", DType::kInt8, {3, 2}, Quant(0.5f, 3));
    tflite::SqueezeOptionsT o;
    b.Op(tflite::BuiltinOperator_SQUEEZE, {x}, {y}, o);
    b.Output(y);
    auto report = CompareGraph(b.Finish());
    EXPECT_TRUE(report.ok) << report.Summary();
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 2});
    auto a = b.Const<int32_t>("axis", DType::kInt32, {1}, {-1});
    auto y = b.Tensor("y", DType::kFloat32, {3, 2, 1});
    tflite::ExpandDimsOptionsT o;
    b.Op(tflite::BuiltinOperator_EXPAND_DIMS, {x, a}, {y}, o);
    b.Output(y);
    auto report = CompareGraph(b.Finish());
    EXPECT_TRUE(report.ok) << report.Summary();
  }
}

}  // namespace
}  // namespace edgeopt
