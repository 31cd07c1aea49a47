// Comparisons, logical ops, SELECT / SELECT_V2, ADD_N, ZEROS_LIKE and FILL against TFLite 2.9.
// Every output is bool or integer-exact, floats exact (selection and summation in order).
#include <gtest/gtest.h>

#include <cmath>

#include "support/op_cases.h"

namespace edgeopt {
namespace {

using namespace testing;
using Op = tflite::BuiltinOperator;

struct ShapePair {
  std::vector<int32_t> a, b, out;
};

const std::vector<ShapePair> kShapes = {
    {{}, {}, {}},          {{}, {3}, {3}},          {{7}, {7}, {7}},                   {{2, 3}, {3}, {2, 3}},
    {{3, 1}, {1, 5}, {3, 5}}, {{1}, {2, 3, 4}, {2, 3, 4}}, {{3, 1, 5, 1}, {1, 4, 1, 6}, {3, 4, 5, 6}},
    {{2, 3, 1, 4, 5}, {2, 3, 1, 4, 5}, {2, 3, 1, 4, 5}},
};

class ComparisonConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

CompareOptions Exact() {
  CompareOptions o;
  o.max_lsb = 0;
  o.rtol = 0;
  o.atol = 0;
  return o;
}

// Values from a small set so that equal elements occur: integers in [-3, 3] (halves for floats).
TensorValue SmallValues(const TensorSpec& s, std::mt19937_64& rng) {
  TensorValue v = RandomValue(s, rng, -3, 3);
  if (s.type == DType::kFloat32) {
    for (int64_t i = 0; i < v.num_elements(); ++i) {
      float f;
      std::memcpy(&f, v.data.data() + 4 * i, 4);
      f = std::round(f * 2) / 2;
      std::memcpy(v.data.data() + 4 * i, &f, 4);
    }
  }
  return v;
}

const Op kComparisons[] = {tflite::BuiltinOperator_EQUAL, tflite::BuiltinOperator_NOT_EQUAL, tflite::BuiltinOperator_LESS,
                           tflite::BuiltinOperator_LESS_EQUAL, tflite::BuiltinOperator_GREATER,
                           tflite::BuiltinOperator_GREATER_EQUAL};

TEST_F(ComparisonConformance, Comparisons) {
  uint64_t seed = 5000;
  for (Op op : kComparisons) {
    const bool eq = op == tflite::BuiltinOperator_EQUAL || op == tflite::BuiltinOperator_NOT_EQUAL;
    std::vector<DType> types = {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8};
    if (eq) types.push_back(DType::kBool);
    for (DType t : types) {
      for (const ShapePair& s : kShapes) {
        const bool q = t == DType::kUInt8 || t == DType::kInt8;
        const int z = t == DType::kUInt8 ? 128 : 0;
        // Quantized: the same parameters (equal raw values compare equal), then different ones.
        for (int variant = 0; variant < (q ? 2 : 1); ++variant) {
          const TensorSpec a = q ? QSpec(t, s.a, 0.1f, z) : Spec(t, s.a);
          const TensorSpec b = q ? (variant ? QSpec(t, s.b, 0.05f, 7 + z) : QSpec(t, s.b, 0.1f, z)) : Spec(t, s.b);
          const Graph g = OneOpGraph(op, {a, b}, {Spec(DType::kBool, s.out)});
          std::mt19937_64 rng(++seed);
          std::vector<TensorValue> in = {SmallValues(a, rng), SmallValues(b, rng)};
          if (variant) in = {RandomValue(a, rng, -1e9, 1e9), RandomValue(b, rng, -1e9, 1e9)};
          const std::string label = std::string(tflite::EnumNameBuiltinOperator(op)) + " " + std::string(DTypeName(t)) + " " +
                                    ShapeText(s.a) + "x" + ShapeText(s.b) + (variant ? " different quantization" : "");
          EXPECT_EQ(CheckCase29(label, g, Exact(), in), "");
        }
      }
    }
  }
  // Quantized inputs whose real values coincide although raw values differ.
  for (Op op : kComparisons) {
    const TensorSpec a = QSpec(DType::kInt8, {8}, 0.1f, 0), b = QSpec(DType::kInt8, {8}, 0.05f, 10);
    const std::vector<TensorValue> in = {Value(a, std::vector<int8_t>{-5, 0, 3, 7, -128, 127, 1, 2}),
                                         Value(b, std::vector<int8_t>{0, 10, 16, 24, -128, 127, 12, 14})};
    EXPECT_EQ(CheckCase29(std::string(tflite::EnumNameBuiltinOperator(op)) + " int8 equal reals",
                          OneOpGraph(op, {a, b}, {Spec(DType::kBool, {8})}), Exact(), in),
              "");
  }
}

TEST_F(ComparisonConformance, Logical) {
  uint64_t seed = 5100;
  for (Op op : {tflite::BuiltinOperator_LOGICAL_AND, tflite::BuiltinOperator_LOGICAL_OR}) {
    for (const ShapePair& s : kShapes) {
      const TensorSpec a = Spec(DType::kBool, s.a), b = Spec(DType::kBool, s.b);
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29(std::string(tflite::EnumNameBuiltinOperator(op)) + " " + ShapeText(s.a) + "x" + ShapeText(s.b),
                            OneOpGraph(op, {a, b}, {Spec(DType::kBool, s.out)}), o),
                "");
    }
  }
  for (const ShapePair& s : kShapes) {
    const TensorSpec a = Spec(DType::kBool, s.a);
    CompareOptions o = Exact();
    o.seed = ++seed;
    EXPECT_EQ(CheckCase29("LOGICAL_NOT " + ShapeText(s.a), OneOpGraph(tflite::BuiltinOperator_LOGICAL_NOT, {a}, {a}), o), "");
  }
}

const DType kSelectTypes[] = {DType::kBool, DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64};

TensorSpec SelectSpec(DType t, std::vector<int32_t> shape) {
  if (t == DType::kUInt8 || t == DType::kInt8 || t == DType::kInt16) return QSpec(t, std::move(shape), 0.1f, 0);
  return Spec(t, std::move(shape));
}

TEST_F(ComparisonConformance, Select) {
  struct S {
    std::vector<int32_t> cond, x, y, out;
  };
  // SELECT (v1): equal shapes, a scalar condition, or a 1-D condition over the first dimension.
  const S v1[] = {{{7}, {7}, {7}, {7}},          {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                  {{}, {3, 5}, {3, 5}, {3, 5}},    {{4}, {4, 3, 2}, {4, 3, 2}, {4, 3, 2}},
                  {{2}, {2, 1, 5, 3}, {2, 1, 5, 3}, {2, 1, 5, 3}}, {{}, {}, {}, {}}};
  // SELECT_V2: all three broadcast.
  const S v2[] = {{{7}, {7}, {7}, {7}},           {{}, {3, 5}, {3, 5}, {3, 5}},        {{3, 1}, {1, 5}, {5}, {3, 5}},
                  {{2, 1, 4}, {1, 3, 1}, {}, {2, 3, 4}}, {{1, 1, 1, 6}, {2, 3, 4, 1}, {1, 3, 1, 6}, {2, 3, 4, 6}},
                  {{4, 1}, {4, 5}, {1}, {4, 5}}};
  uint64_t seed = 5200;
  for (int version = 1; version <= 2; ++version) {
    const Op op = version == 1 ? tflite::BuiltinOperator_SELECT : tflite::BuiltinOperator_SELECT_V2;
    const S* cases = version == 1 ? v1 : v2;
    const size_t n = version == 1 ? std::size(v1) : std::size(v2);
    for (size_t i = 0; i < n; ++i) {
      for (DType t : kSelectTypes) {
        const S& s = cases[i];
        const Graph g = OneOpGraph(op, {Spec(DType::kBool, s.cond), SelectSpec(t, s.x), SelectSpec(t, s.y)}, {SelectSpec(t, s.out)},
                                   version == 1 ? Opts(tflite::SelectOptionsT{}) : Opts(tflite::SelectV2OptionsT{}));
        CompareOptions o = Exact();
        o.seed = ++seed;
        o.float_lo = -100;
        o.float_hi = 100;
        EXPECT_EQ(CheckCase29(std::string(tflite::EnumNameBuiltinOperator(op)) + " " + std::string(DTypeName(t)) + " cond " +
                                  ShapeText(s.cond) + " x " + ShapeText(s.x) + " y " + ShapeText(s.y),
                              g, o),
                  "");
      }
    }
  }
}

TEST_F(ComparisonConformance, AddNZerosLikeFill) {
  uint64_t seed = 5300;
  for (DType t : {DType::kFloat32, DType::kInt32}) {
    for (int k : {2, 3, 5}) {
      for (const auto& shape : std::vector<std::vector<int32_t>>{{}, {7}, {2, 3, 4}, {1, 2, 3, 4, 5}}) {
        std::vector<TensorSpec> ins(k, Spec(t, shape));
        std::mt19937_64 rng(++seed);
        std::vector<TensorValue> vals;
        for (int i = 0; i < k; ++i) vals.push_back(RandomValue(ins[i], rng, -1000, 1000));
        CompareOptions o = Exact();
        o.rtol = 1e-6;
        EXPECT_EQ(CheckCase29("ADD_N " + std::string(DTypeName(t)) + " x" + std::to_string(k) + " " + ShapeText(shape),
                              OneOpGraph(tflite::BuiltinOperator_ADD_N, ins, {Spec(t, shape)}, Opts(tflite::AddNOptionsT{})), o, vals),
                  "");
      }
    }
  }
  for (DType t : {DType::kFloat32, DType::kInt32, DType::kInt64}) {
    for (const auto& shape : std::vector<std::vector<int32_t>>{{}, {7}, {2, 3, 4}}) {
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29("ZEROS_LIKE " + std::string(DTypeName(t)) + " " + ShapeText(shape),
                            OneOpGraph(tflite::BuiltinOperator_ZEROS_LIKE, {Spec(t, shape)}, {Spec(t, shape)}, Opts(tflite::ZerosLikeOptionsT{})), o),
                "");
    }
  }
  // FILL with constant dims (int32 and int64) and with dims given at run time.
  for (DType t : {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kBool, DType::kInt8, DType::kInt16}) {
    const TensorSpec value = SelectSpec(t, {});
    const std::vector<int32_t> shape = {2, 3, 4};
    {
      const auto dims = Bytes(std::vector<int32_t>{2, 3, 4});
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29("FILL " + std::string(DTypeName(t)) + " const int32 dims",
                            OneOpGraph(tflite::BuiltinOperator_FILL, {Spec(DType::kInt32, {3}), value}, {SelectSpec(t, shape)},
                                       Opts(tflite::FillOptionsT{}), {dims, {}}),
                            o),
                "");
    }
    {
      const auto dims = Bytes(std::vector<int64_t>{4, 1, 3});
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29("FILL " + std::string(DTypeName(t)) + " const int64 dims",
                            OneOpGraph(tflite::BuiltinOperator_FILL, {Spec(DType::kInt64, {3}), value}, {SelectSpec(t, {4, 1, 3})},
                                       Opts(tflite::FillOptionsT{}), {dims, {}}),
                            o),
                "");
    }
    {
      const TensorSpec dims = Spec(DType::kInt32, {2});
      std::mt19937_64 rng(++seed);
      const std::vector<TensorValue> in = {Value(dims, std::vector<int32_t>{3, 5}), RandomValue(value, rng, -50, 50)};
      EXPECT_EQ(CheckCase29("FILL " + std::string(DTypeName(t)) + " dims from an input",
                            OneOpGraph(tflite::BuiltinOperator_FILL, {dims, value}, {SelectSpec(t, {3, 5})}, Opts(tflite::FillOptionsT{})),
                            Exact(), in),
                "");
    }
  }
}

TEST_F(ComparisonConformance, Rank5Broadcast) {
  // 2.9's broadcast comparisons and SELECT_V2 stop at 4-D (5-D aborts), so rank 5 is checked
  // against LiteRT.js: one model, since each LiteRT.js run starts a Node process.
  if (!LiteRtJsAvailable()) GTEST_SKIP() << "LiteRT.js absent (run scripts/setup.sh)";
  const std::vector<int32_t> sa = {2, 3, 1, 4, 5}, sb = {2, 1, 3, 1, 1}, so = {2, 3, 3, 4, 5};
  GraphBuilder b;
  const auto x = b.Input("a", DType::kFloat32, sa);
  const auto y = b.Input("b", DType::kFloat32, sb);
  const auto c = b.Input("c", DType::kBool, {3, 1, 1});
  int k = 0;
  for (Op op : kComparisons) {
    const auto out = b.Tensor("cmp" + std::to_string(k++), DType::kBool, so);
    b.Op(op, {x, y}, {out});
    b.Output(out);
  }
  const auto sel = b.Tensor("select", DType::kFloat32, so);
  b.Op(tflite::BuiltinOperator_SELECT_V2, {c, x, y}, {sel}, tflite::SelectV2OptionsT{});
  b.Output(sel);
  const auto land = b.Tensor("and", DType::kBool, {2, 1, 3, 1, 1});
  const auto c5 = b.Input("c5", DType::kBool, {2, 1, 1, 1, 1});
  b.Op(tflite::BuiltinOperator_LOGICAL_AND, {c, c5}, {land});
  b.Output(land);
  const Graph g = b.Finish();
  std::mt19937_64 rng(5400);
  const std::vector<TensorValue> in = {SmallValues(Spec(DType::kFloat32, sa), rng), SmallValues(Spec(DType::kFloat32, sb), rng),
                                       RandomValue(Spec(DType::kBool, {3, 1, 1}), rng, 0, 1),
                                       RandomValue(Spec(DType::kBool, {2, 1, 1, 1, 1}), rng, 0, 1)};
  CompareOptions o = Exact();
  o.oracle = Oracle::kLiteRtJs;
  EXPECT_EQ(CheckCase("comparisons, SELECT_V2, LOGICAL_AND rank 5", g, o, in), "");
}

TEST_F(ComparisonConformance, Errors) {
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LESS, {Spec(DType::kFloat32, {2, 3}), Spec(DType::kFloat32, {4})},
                               {Spec(DType::kBool, {2, 3})});
    EXPECT_EQ(ExpectRejected("LESS [2,3]x[4]", g, "LESS: shapes [2,3] and [4] are not broadcastable"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_EQUAL, {Spec(DType::kFloat32, {3}), Spec(DType::kInt32, {3})},
                               {Spec(DType::kBool, {3})});
    EXPECT_EQ(ExpectRejected("EQUAL float x int32", g, "EQUAL: inputs must have the same type"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_GREATER, {Spec(DType::kBool, {3}), Spec(DType::kBool, {3})},
                               {Spec(DType::kBool, {3})});
    EXPECT_EQ(ExpectRejected("GREATER bool", g, "GREATER: input type bool is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LOGICAL_AND, {Spec(DType::kInt32, {3}), Spec(DType::kInt32, {3})},
                               {Spec(DType::kBool, {3})});
    EXPECT_EQ(ExpectRejected("LOGICAL_AND int32", g, "LOGICAL_AND: input 0 must be bool"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SELECT,
                               {Spec(DType::kBool, {3}), Spec(DType::kFloat32, {2, 3}), Spec(DType::kFloat32, {2, 3})},
                               {Spec(DType::kFloat32, {2, 3})}, Opts(tflite::SelectOptionsT{}));
    EXPECT_EQ(ExpectRejected("SELECT cond [3] for x [2,3]", g, "SELECT: condition [3] must match x [2,3]"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SELECT_V2,
                               {Spec(DType::kFloat32, {3}), Spec(DType::kFloat32, {3}), Spec(DType::kFloat32, {3})},
                               {Spec(DType::kFloat32, {3})}, Opts(tflite::SelectV2OptionsT{}));
    EXPECT_EQ(ExpectRejected("SELECT_V2 float condition", g, "SELECT_V2: condition must be bool"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SELECT_V2,
                               {Spec(DType::kBool, {2}), Spec(DType::kFloat32, {3}), Spec(DType::kFloat32, {3})},
                               {Spec(DType::kFloat32, {3})}, Opts(tflite::SelectV2OptionsT{}));
    EXPECT_EQ(ExpectRejected("SELECT_V2 [2],[3],[3]", g, "SELECT_V2: shapes [2], [3] and [3] are not broadcastable"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ADD_N, {Spec(DType::kFloat32, {3}), Spec(DType::kFloat32, {4})},
                               {Spec(DType::kFloat32, {3})}, Opts(tflite::AddNOptionsT{}));
    EXPECT_EQ(ExpectRejected("ADD_N shapes", g, "ADD_N: input 1"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const auto dims = Bytes(std::vector<int32_t>{2, -3});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_FILL, {Spec(DType::kInt32, {2}), Spec(DType::kFloat32, {})},
                               {Spec(DType::kFloat32, {2, 3})}, Opts(tflite::FillOptionsT{}), {dims, {}});
    EXPECT_EQ(ExpectRejected("FILL negative dim", g, "FILL: dimension 1 of the requested shape is -3"), "");
  }
  {
    const auto dims = Bytes(std::vector<int32_t>{2, 3});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_FILL, {Spec(DType::kInt32, {2}), Spec(DType::kFloat32, {2})},
                               {Spec(DType::kFloat32, {2, 3})}, Opts(tflite::FillOptionsT{}), {dims, {}});
    EXPECT_EQ(ExpectRejected("FILL vector value", g, "FILL: value must be a scalar"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const auto dims = Bytes(std::vector<int64_t>{1 << 20, 1 << 20, 1 << 20});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_FILL, {Spec(DType::kInt64, {3}), Spec(DType::kFloat32, {})},
                               {Spec(DType::kFloat32, {1})}, Opts(tflite::FillOptionsT{}), {dims, {}});
    EXPECT_EQ(ExpectRejected("FILL 2^60 elements", g, "FILL: the requested shape"), "");
  }
}

}  // namespace
}  // namespace edgeopt
