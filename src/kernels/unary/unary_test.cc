// Unary elementwise ops against TFLite 2.9 (SIGN, absent from 2.9, against LiteRT.js).
// Tolerances: float ops rtol 1e-6 (both sides call the same single-precision libm functions);
// quantized ABS/RSQRT bit-exact (their byte-table form also against the per-value reference
// loops, without TFLite).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/common/byte_table.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using namespace testing;
using Op = tflite::BuiltinOperator;

const std::vector<std::vector<int32_t>> kShapes = {{}, {1}, {7}, {3, 5}, {2, 3, 4, 5}, {1, 2, 3, 4, 5}};

class UnaryConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

std::string Name(Op op, DType t, const std::vector<int32_t>& shape) {
  return std::string(tflite::EnumNameBuiltinOperator(op)) + " " + std::string(DTypeName(t)) + " " + ShapeText(shape);
}

TEST_F(UnaryConformance, Float) {
  struct C {
    Op op;
    double lo, hi;
  };
  const C cases[] = {{tflite::BuiltinOperator_EXP, -10, 10},   {tflite::BuiltinOperator_LOG, 0.001, 100},
                     {tflite::BuiltinOperator_SQRT, 0, 100},   {tflite::BuiltinOperator_RSQRT, 0.001, 100},
                     {tflite::BuiltinOperator_ABS, -10, 10},   {tflite::BuiltinOperator_NEG, -10, 10},
                     {tflite::BuiltinOperator_SIN, -20, 20},   {tflite::BuiltinOperator_COS, -20, 20},
                     {tflite::BuiltinOperator_FLOOR, -10, 10}, {tflite::BuiltinOperator_CEIL, -10, 10},
                     {tflite::BuiltinOperator_ROUND, -10, 10}, {tflite::BuiltinOperator_SQUARE, -10, 10}};
  uint64_t seed = 1000;
  for (const C& c : cases) {
    for (const auto& shape : kShapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      const Graph g = OneOpGraph(c.op, {s}, {s});
      std::mt19937_64 rng(++seed);
      CompareOptions o;
      o.rtol = 1e-6;
      o.atol = 0;
      EXPECT_EQ(CheckCase29(Name(c.op, DType::kFloat32, shape), g, o, {RandomValue(s, rng, c.lo, c.hi)}), "");
    }
  }
  // ROUND: ties go to even, as TFLite's RoundToNearest.
  const TensorSpec s = Spec(DType::kFloat32, {12});
  const std::vector<float> ties = {-3.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 0.49999997f, -0.49999997f, 1e7f + 0.5f, -0.0f};
  EXPECT_EQ(CheckCase29("ROUND ties", OneOpGraph(tflite::BuiltinOperator_ROUND, {s}, {s}), {}, {Value(s, ties)}), "");
}

TEST_F(UnaryConformance, NegInt) {
  for (DType t : {DType::kInt32, DType::kInt64}) {
    for (const auto& shape : kShapes) {
      const TensorSpec s = Spec(t, shape);
      CompareOptions o;
      o.max_lsb = 0;
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_NEG, t, shape), OneOpGraph(tflite::BuiltinOperator_NEG, {s}, {s}), o), "");
    }
  }
}

struct QP {
  float in_scale;
  int in_zp;
  float out_scale;
  int out_zp;
};

// Every int8 value once (plus the given shape's random values).
TensorValue AllInt8(const TensorSpec& s) {
  std::vector<int8_t> v(256);
  for (int i = 0; i < 256; ++i) v[i] = static_cast<int8_t>(i - 128);
  return Value(s, v);
}

TEST_F(UnaryConformance, AbsQuantized) {
  const QP int8_params[] = {{0.05f, 0, 0.05f, 0}, {0.05f, -20, 0.05f, 10}, {0.05f, 3, 0.02f, -128},
                            {0.1f, 127, 0.3f, -50}, {0.01f, -128, 0.01f, -128}};
  for (const QP& q : int8_params) {
    const TensorSpec in = QSpec(DType::kInt8, {256}, q.in_scale, q.in_zp), out = QSpec(DType::kInt8, {256}, q.out_scale, q.out_zp);
    CompareOptions o;
    o.max_lsb = 0;
    EXPECT_EQ(CheckCase29("ABS int8 all values zp " + std::to_string(q.in_zp) + "->" + std::to_string(q.out_zp),
                          OneOpGraph(tflite::BuiltinOperator_ABS, {in}, {out}), o, {AllInt8(in)}),
              "");
  }
  const QP int16_params[] = {{0.001f, 0, 0.001f, 0}, {0.001f, 0, 0.0007f, 0}, {0.0001f, 0, 0.003f, 0}};
  uint64_t seed = 1100;
  for (const QP& q : int16_params) {
    for (const auto& shape : kShapes) {
      const TensorSpec in = QSpec(DType::kInt16, shape, q.in_scale, 0), out = QSpec(DType::kInt16, shape, q.out_scale, 0);
      CompareOptions o;
      o.max_lsb = 0;
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_ABS, DType::kInt16, shape), OneOpGraph(tflite::BuiltinOperator_ABS, {in}, {out}), o), "");
    }
  }
}

TEST_F(UnaryConformance, RsqrtInt8) {
  const QP params[] = {{0.05f, -128, 0.05f, -128}, {0.01f, -100, 0.1f, -128}, {0.5f, 0, 0.02f, -20}, {0.003f, -128, 0.2f, 5}};
  for (const QP& q : params) {
    const TensorSpec in = QSpec(DType::kInt8, {256 - (q.in_zp + 128)}, q.in_scale, q.in_zp);
    const TensorSpec out = QSpec(DType::kInt8, in.shape, q.out_scale, q.out_zp);
    std::vector<int8_t> v;
    for (int x = q.in_zp; x <= 127; ++x) v.push_back(static_cast<int8_t>(x));  // every valid (>= zero point) input
    CompareOptions o;
    o.max_lsb = 0;
    EXPECT_EQ(CheckCase29("RSQRT int8 scale " + std::to_string(q.in_scale) + " zp " + std::to_string(q.in_zp),
                          OneOpGraph(tflite::BuiltinOperator_RSQRT, {in}, {out}), o, {Value(in, v)}),
              "");
  }
}

// int8 ABS and RSQRT outside the reference kernels look every value up in a table built from the
// reference's per-value code: the same bytes as the reference loops on every input value (RSQRT:
// every value at or above the zero point), 1-2 threads, the table variant chosen.
TEST(UnaryInt8Table, MatchesTheReferenceLoops) {
  const std::string isa = kernels::ByteTableFn(rt::Cpu(), false) == kernels::ApplyByteTableVbmi ? "avx512vbmi" : "table";
  struct Q {
    float in_scale;
    int64_t in_zp;
    float out_scale;
    int64_t out_zp;
  };
  const Q params[] = {{0.05f, -128, 0.05f, -128}, {0.01f, -100, 0.1f, -128}, {0.5f, 0, 0.02f, -20},
                      {0.003f, -128, 0.2f, 5}, {0.2f, 17, 0.05f, 3}};
  int n_case = 0;
  for (Op op : {tflite::BuiltinOperator_ABS, tflite::BuiltinOperator_RSQRT})
    for (const Q& q : params) {
      const TensorSpec in = QSpec(DType::kInt8, {3, 1000}, q.in_scale, q.in_zp);
      const Graph g = OneOpGraph(op, {in}, {QSpec(DType::kInt8, {3, 1000}, q.out_scale, q.out_zp)});
      std::vector<int8_t> v(3000);
      for (size_t i = 0; i < v.size(); ++i) {
        const int lo = op == tflite::BuiltinOperator_RSQRT ? static_cast<int>(q.in_zp) : -128;
        v[i] = static_cast<int8_t>(lo + static_cast<int>(i * 7919 % static_cast<size_t>(128 - lo)));
      }
      FastCheck check;
      check.threads = 1 + n_case++ % 2;
      check.op_type = tflite::EnumNameBuiltinOperator(op);
      check.variant = std::string(op == tflite::BuiltinOperator_ABS ? "abs" : "rsqrt") + "/int8/" + isa;
      check.inputs = {Value(in, v)};
      EXPECT_TRUE(ExpectFastMatchesReference(g, Name(op, DType::kInt8, {3, 1000}) + " zp " +
                                                             std::to_string(q.in_zp), check));
    }
}

TEST_F(UnaryConformance, Sign) {
  if (!LiteRtJsAvailable()) GTEST_SKIP() << "SIGN is newer than TFLite 2.9 and LiteRT.js is absent";
  // One model with both dtypes: each LiteRT.js run starts a Node process.
  GraphBuilder b;
  const auto xf = b.Input("xf", DType::kFloat32, {9});
  const auto xi = b.Input("xi", DType::kInt32, {9});
  const auto yf = b.Tensor("yf", DType::kFloat32, {9});
  const auto yi = b.Tensor("yi", DType::kInt32, {9});
  b.Op(tflite::BuiltinOperator_SIGN, {xf}, {yf});
  b.Op(tflite::BuiltinOperator_SIGN, {xi}, {yi});
  b.Output(yf);
  b.Output(yi);
  CompareOptions o;
  o.oracle = Oracle::kLiteRtJs;
  o.max_lsb = 0;
  const std::vector<TensorValue> in = {
      Value(Spec(DType::kFloat32, {9}), std::vector<float>{-3.5f, -0.0f, 0.0f, 1e-30f, 2.f, -1e-30f, 7.f, -7.f, 0.25f}),
      Value(Spec(DType::kInt32, {9}), std::vector<int32_t>{-3, 0, 5, -2147483647, 2147483647, 1, -1, 0, 9})};
  EXPECT_EQ(CheckCase("SIGN float32 and int32", b.Finish(), o, in), "");
}

TEST_F(UnaryConformance, Errors) {
  {
    const TensorSpec s = QSpec(DType::kUInt8, {4}, 0.1f, 3);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ABS, {s}, {s});
    EXPECT_EQ(ExpectRejected("ABS uint8", g, "ABS: input type uint8 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec s = Spec(DType::kInt32, {4});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_EXP, {s}, {s});
    EXPECT_EQ(ExpectRejected("EXP int32", g, "EXP: input type int32 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SQRT, {Spec(DType::kFloat32, {4})}, {Spec(DType::kInt32, {4})});
    EXPECT_EQ(ExpectRejected("SQRT float->int32", g, "SQRT: output"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    // A quantized input below the zero point is a negative real input: RSQRT fails at invoke.
    const TensorSpec s = QSpec(DType::kInt8, {3}, 0.1f, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_RSQRT, {s}, {s});
    const std::vector<TensorValue> in = {Value(s, std::vector<int8_t>{4, -1, 9})};
    EXPECT_EQ(ExpectRejected("RSQRT int8 negative", g, "RSQRT: ", in), "");
    EXPECT_TRUE(Tflite29Rejects(g, in));
  }
  {
    const TensorSpec in = QSpec(DType::kInt16, {3}, 0.1f, 4), out = QSpec(DType::kInt16, {3}, 0.1f, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ABS, {in}, {out});
    EXPECT_EQ(ExpectRejected("ABS int16 zp", g, "ABS: int16 input and output must have zero point 0"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
}

}  // namespace
}  // namespace edgeopt
