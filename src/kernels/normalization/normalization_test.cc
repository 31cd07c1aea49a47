// L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION against TFLite 2.9.
// Tolerances: quantized L2 bit-exact; float L2 rtol 1e-6; LRN rtol 1e-5 (2.9 accumulates the
// window with a running sum that adds and subtracts squares, so its float rounding differs from
// a direct window sum; pow is the same libm call).
#include <gtest/gtest.h>

#include "support/op_cases.h"

namespace edgeopt {
namespace {

using namespace testing;

class NormalizationConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

TEST_F(NormalizationConformance, L2Float) {
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 5}, {2, 3, 17}, {2, 3, 4, 9}, {1, 1, 1, 64}};
  uint64_t seed = 3000;
  for (const auto& shape : shapes) {
    const TensorSpec s = Spec(DType::kFloat32, shape);
    std::mt19937_64 rng(++seed);
    TensorValue v = RandomValue(s, rng, -3, 3);
    // A row of zeros (norm below epsilon) in the first row.
    const int64_t depth = shape.back();
    if (v.num_elements() > depth) std::fill(v.data.begin(), v.data.begin() + 4 * depth, 0);
    CompareOptions o;
    o.rtol = 1e-6;
    o.atol = 0;
    EXPECT_EQ(CheckCase29("L2_NORMALIZATION float32 " + ShapeText(shape),
                          OneOpGraph(tflite::BuiltinOperator_L2_NORMALIZATION, {s}, {s}, Opts(tflite::L2NormOptionsT{})), o, {v}),
              "");
  }
}

TEST_F(NormalizationConformance, L2Quantized) {
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 5}, {2, 3, 17}, {2, 3, 4, 9}, {2, 300}};
  uint64_t seed = 3100;
  for (DType t : {DType::kInt8, DType::kUInt8}) {
    for (const auto& shape : shapes) {
      for (int zp : {0, -5, 100}) {
        const int in_zp = t == DType::kUInt8 ? zp + 128 : zp;
        const TensorSpec in = QSpec(t, shape, 0.05f, in_zp);
        const TensorSpec out = QSpec(t, shape, 1.0f / 128, t == DType::kUInt8 ? 128 : 0);
        std::mt19937_64 rng(++seed);
        TensorValue v = RandomValue(in, rng, -1e9, 1e9);
        // The first row all at the zero point (a zero vector).
        const int64_t depth = shape.back();
        if (v.num_elements() > depth) std::fill(v.data.begin(), v.data.begin() + depth, static_cast<uint8_t>(in_zp));
        CompareOptions o;
        o.max_lsb = 0;
        EXPECT_EQ(CheckCase29("L2_NORMALIZATION " + std::string(DTypeName(t)) + " " + ShapeText(shape) + " zp " + std::to_string(in_zp),
                              OneOpGraph(tflite::BuiltinOperator_L2_NORMALIZATION, {in}, {out}, Opts(tflite::L2NormOptionsT{})), o, {v}),
                  "");
      }
    }
  }
}

TEST_F(NormalizationConformance, LocalResponseNormalization) {
  struct P {
    int radius;
    float bias, alpha, beta;
  };
  const P params[] = {{0, 1.0f, 1.0f, 0.5f}, {2, 1.0f, 0.0001f, 0.75f}, {5, 2.0f, 0.5f, 1.0f}, {1, 0.5f, 0.2f, 0.5f}, {3, 1.0f, 1e-3f, 0.3f}};
  const std::vector<std::vector<int32_t>> shapes = {{1, 1, 1, 7}, {1, 3, 4, 16}, {2, 2, 3, 5}, {1, 1, 1, 1}};
  uint64_t seed = 3200;
  for (const P& p : params) {
    tflite::LocalResponseNormalizationOptionsT lo;
    lo.radius = p.radius;
    lo.bias = p.bias;
    lo.alpha = p.alpha;
    lo.beta = p.beta;
    for (const auto& shape : shapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      std::mt19937_64 rng(++seed);
      CompareOptions o;
      o.rtol = 1e-5;
      o.atol = 0;
      EXPECT_EQ(CheckCase29("LRN " + ShapeText(shape) + " radius " + std::to_string(p.radius) + " beta " + std::to_string(p.beta),
                            OneOpGraph(tflite::BuiltinOperator_LOCAL_RESPONSE_NORMALIZATION, {s}, {s}, Opts(lo)), o,
                            {RandomValue(s, rng, -4, 4)}),
                "");
    }
  }
}

TEST_F(NormalizationConformance, Errors) {
  {
    const TensorSpec s = Spec(DType::kFloat32, {1, 2, 3, 4, 5});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_L2_NORMALIZATION, {s}, {s}, Opts(tflite::L2NormOptionsT{}));
    EXPECT_EQ(ExpectRejected("L2 rank 5", g, "L2_NORMALIZATION: input must have 1 to 4 dimensions"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = QSpec(DType::kInt8, {4}, 0.1f, 0), out = QSpec(DType::kInt8, {4}, 1.0f / 256, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_L2_NORMALIZATION, {in}, {out}, Opts(tflite::L2NormOptionsT{}));
    EXPECT_EQ(ExpectRejected("L2 int8 output scale", g, "L2_NORMALIZATION: output quantization must be scale 1/128"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec s = Spec(DType::kFloat32, {2, 3, 4});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LOCAL_RESPONSE_NORMALIZATION, {s}, {s},
                               Opts(tflite::LocalResponseNormalizationOptionsT{}));
    EXPECT_EQ(ExpectRejected("LRN rank 3", g, "LOCAL_RESPONSE_NORMALIZATION: input must be 4-D"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec s = QSpec(DType::kInt8, {1, 1, 1, 4}, 0.1f, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LOCAL_RESPONSE_NORMALIZATION, {s}, {s},
                               Opts(tflite::LocalResponseNormalizationOptionsT{}));
    EXPECT_EQ(ExpectRejected("LRN int8", g, "LOCAL_RESPONSE_NORMALIZATION: input type int8 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
}

}  // namespace
}  // namespace edgeopt
