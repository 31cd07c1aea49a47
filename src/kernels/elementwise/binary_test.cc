// Binary arithmetic against TFLite 2.9: every op x dtype it supports, broadcasting shapes of
// rank 0-5 (size-1 dimensions on either side, odd sizes), every fused activation, quantized
// inputs with different scales and zero points, and the error paths.
// Tolerances: integer outputs bit-exact (max_lsb 0); float outputs rtol 1e-6 (POW 1e-5: powf
// is the same libm call on both sides, the margin only covers any other math library).
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

// Broadcast pairs TFLite 2.9 handles (its quantized broadcast kernels are 4-D; 5-D pairs with
// broadcasting are checked against LiteRT.js, see Rank5Broadcast).
const std::vector<ShapePair> kShapes = {
    {{}, {}, {}},
    {{}, {3}, {3}},
    {{5}, {}, {5}},
    {{7}, {7}, {7}},
    {{2, 3}, {3}, {2, 3}},
    {{3, 1}, {1, 5}, {3, 5}},
    {{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
    {{1}, {2, 3, 4}, {2, 3, 4}},
    {{3, 1, 5, 1}, {1, 4, 1, 6}, {3, 4, 5, 6}},
    {{2, 7, 9, 3}, {2, 7, 9, 3}, {2, 7, 9, 3}},
    {{1, 1, 1, 3}, {4, 2, 5, 1}, {4, 2, 5, 3}},
    {{2, 3, 1, 4, 5}, {2, 3, 1, 4, 5}, {2, 3, 1, 4, 5}},
};

const int kActivations[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                            tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1};

tflite::BuiltinOptionsUnion ActOptions(Op op, int act, bool pot_scale_int16 = true) {
  const auto a = static_cast<tflite::ActivationFunctionType>(act);
  switch (op) {
    case tflite::BuiltinOperator_ADD: {
      tflite::AddOptionsT o;
      o.fused_activation_function = a;
      o.pot_scale_int16 = pot_scale_int16;
      return Opts(o);
    }
    case tflite::BuiltinOperator_SUB: {
      tflite::SubOptionsT o;
      o.fused_activation_function = a;
      o.pot_scale_int16 = pot_scale_int16;
      return Opts(o);
    }
    case tflite::BuiltinOperator_MUL: {
      tflite::MulOptionsT o;
      o.fused_activation_function = a;
      return Opts(o);
    }
    case tflite::BuiltinOperator_DIV: {
      tflite::DivOptionsT o;
      o.fused_activation_function = a;
      return Opts(o);
    }
    case tflite::BuiltinOperator_SQUARED_DIFFERENCE: return Opts(tflite::SquaredDifferenceOptionsT{});
    case tflite::BuiltinOperator_MAXIMUM:
    case tflite::BuiltinOperator_MINIMUM: return Opts(tflite::MaximumMinimumOptionsT{});
    case tflite::BuiltinOperator_POW: return Opts(tflite::PowOptionsT{});
    case tflite::BuiltinOperator_FLOOR_DIV: return Opts(tflite::FloorDivOptionsT{});
    case tflite::BuiltinOperator_FLOOR_MOD: return Opts(tflite::FloorModOptionsT{});
    default: return {};
  }
}

bool HasActivation(Op op) {
  return op == tflite::BuiltinOperator_ADD || op == tflite::BuiltinOperator_SUB || op == tflite::BuiltinOperator_MUL ||
         op == tflite::BuiltinOperator_DIV;
}

std::string Label(Op op, DType t, const ShapePair& s, int act) {
  return std::string(tflite::EnumNameBuiltinOperator(op)) + " " + std::string(DTypeName(t)) + " " + ShapeText(s.a) +
         "x" + ShapeText(s.b) + " act=" + std::to_string(act);
}

// Random values, with the second input kept away from zero for divisions.
std::vector<TensorValue> Inputs(const TensorSpec& a, const TensorSpec& b, uint64_t seed, double lo, double hi,
                                bool nonzero_b, double b_lo, double b_hi) {
  std::mt19937_64 rng(seed);
  TensorValue va = RandomValue(a, rng, lo, hi);
  TensorValue vb = RandomValue(b, rng, b_lo, b_hi);
  if (nonzero_b) {
    for (int64_t i = 0; i < vb.num_elements(); ++i) {
      if (b.type == DType::kFloat32) {
        float f;
        std::memcpy(&f, vb.data.data() + 4 * i, 4);
        if (std::fabs(f) < 0.05f) f = 0.5f;
        std::memcpy(vb.data.data() + 4 * i, &f, 4);
      } else if (b.type == DType::kInt32) {
        int32_t v;
        std::memcpy(&v, vb.data.data() + 4 * i, 4);
        if (v == 0) v = 3;
        std::memcpy(vb.data.data() + 4 * i, &v, 4);
      } else if (b.type == DType::kInt64) {
        int64_t v;
        std::memcpy(&v, vb.data.data() + 8 * i, 8);
        if (v == 0) v = -7;
        std::memcpy(vb.data.data() + 8 * i, &v, 8);
      } else if (b.type == DType::kUInt8) {
        // The raw value 0 and the zero point (a real 0) are both avoided.
        uint8_t& v = vb.data[i];
        if (v == 0 || v == b.quant->zero_point[0]) v = static_cast<uint8_t>(b.quant->zero_point[0] + 17);
      }
    }
  }
  return {va, vb};
}

class BinaryConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

TEST_F(BinaryConformance, Float) {
  const Op ops[] = {tflite::BuiltinOperator_ADD,     tflite::BuiltinOperator_SUB,     tflite::BuiltinOperator_MUL,
                    tflite::BuiltinOperator_DIV,     tflite::BuiltinOperator_MAXIMUM, tflite::BuiltinOperator_MINIMUM,
                    tflite::BuiltinOperator_POW,     tflite::BuiltinOperator_SQUARED_DIFFERENCE,
                    tflite::BuiltinOperator_FLOOR_DIV, tflite::BuiltinOperator_FLOOR_MOD};
  uint64_t seed = 100;
  for (Op op : ops) {
    for (size_t si = 0; si < kShapes.size(); ++si) {
      const ShapePair& s = kShapes[si];
      if (s.a.size() == 5) continue;  // see Rank5
      for (int act : kActivations) {
        if (!HasActivation(op) && act != 0) continue;
        if (HasActivation(op) && act != 0 && si % 3 != 0) continue;  // activations on a subset of shapes
        const TensorSpec a = Spec(DType::kFloat32, s.a), b = Spec(DType::kFloat32, s.b);
        const Graph g = OneOpGraph(op, {a, b}, {Spec(DType::kFloat32, s.out)}, ActOptions(op, act));
        const bool div = op == tflite::BuiltinOperator_DIV || op == tflite::BuiltinOperator_FLOOR_DIV ||
                         op == tflite::BuiltinOperator_FLOOR_MOD;
        const bool pow = op == tflite::BuiltinOperator_POW;
        CompareOptions o;
        o.rtol = pow ? 1e-5 : 1e-6;
        o.atol = 0;
        // POW: positive bases, exponents in [-3, 3].
        auto in = Inputs(a, b, ++seed, pow ? 0.1 : -8.0, pow ? 4.0 : 8.0, div, pow ? -3.0 : -8.0, pow ? 3.0 : 8.0);
        EXPECT_EQ(CheckCase29(Label(op, DType::kFloat32, s, act), g, o, in), "");
      }
    }
  }
}

TEST_F(BinaryConformance, Int32Int64) {
  struct C {
    Op op;
    DType t;
  };
  const C cases[] = {{tflite::BuiltinOperator_ADD, DType::kInt32},        {tflite::BuiltinOperator_SUB, DType::kInt32},
                     {tflite::BuiltinOperator_MUL, DType::kInt32},        {tflite::BuiltinOperator_DIV, DType::kInt32},
                     {tflite::BuiltinOperator_MAXIMUM, DType::kInt32},    {tflite::BuiltinOperator_MINIMUM, DType::kInt32},
                     {tflite::BuiltinOperator_POW, DType::kInt32},        {tflite::BuiltinOperator_SQUARED_DIFFERENCE, DType::kInt32},
                     {tflite::BuiltinOperator_FLOOR_DIV, DType::kInt32},  {tflite::BuiltinOperator_FLOOR_MOD, DType::kInt32},
                     {tflite::BuiltinOperator_ADD, DType::kInt64},        {tflite::BuiltinOperator_SUB, DType::kInt64},
                     {tflite::BuiltinOperator_MUL, DType::kInt64},        {tflite::BuiltinOperator_MAXIMUM, DType::kInt64},
                     {tflite::BuiltinOperator_MINIMUM, DType::kInt64},    {tflite::BuiltinOperator_FLOOR_MOD, DType::kInt64}};
  uint64_t seed = 200;
  for (const C& c : cases) {
    for (size_t si = 0; si < kShapes.size(); si += 2) {
      const ShapePair& s = kShapes[si];
      if (s.a.size() == 5) continue;
      for (int act : kActivations) {
        if (!HasActivation(c.op) && act != 0) continue;
        if (act != 0 && si % 4 != 0) continue;
        const TensorSpec a = Spec(c.t, s.a), b = Spec(c.t, s.b);
        const Graph g = OneOpGraph(c.op, {a, b}, {Spec(c.t, s.out)}, ActOptions(c.op, act));
        const bool div = c.op == tflite::BuiltinOperator_DIV || c.op == tflite::BuiltinOperator_FLOOR_DIV ||
                         c.op == tflite::BuiltinOperator_FLOOR_MOD;
        const bool pow = c.op == tflite::BuiltinOperator_POW;
        CompareOptions o;
        o.max_lsb = 0;
        auto in = Inputs(a, b, ++seed, pow ? -6 : -1000, pow ? 6 : 1000, div, pow ? 0 : -50, pow ? 7 : 50);
        EXPECT_EQ(CheckCase29(Label(c.op, c.t, s, act), g, o, in), "");
      }
    }
  }
}

struct QuantParamsSet {
  float s1;
  int z1;
  float s2;
  int z2;
  float so;
  int zo;
};

TEST_F(BinaryConformance, Quantized8Bit) {
  const QuantParamsSet int8_params[] = {
      {0.05f, 3, 0.02f, -10, 0.07f, 5}, {0.1f, -128, 0.1f, 127, 0.2f, 0}, {0.003f, 0, 0.5f, -50, 0.4f, -20},
      {0.0078125f, -1, 0.0078125f, -1, 0.015625f, -1}};
  const QuantParamsSet uint8_params[] = {
      {0.05f, 128, 0.02f, 100, 0.07f, 131}, {0.1f, 0, 0.1f, 255, 0.2f, 0}, {0.003f, 17, 0.5f, 200, 0.4f, 90}};
  const Op ops[] = {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL,
                    tflite::BuiltinOperator_MAXIMUM, tflite::BuiltinOperator_MINIMUM};
  uint64_t seed = 300;
  for (DType t : {DType::kInt8, DType::kUInt8}) {
    const auto* params = t == DType::kInt8 ? int8_params : uint8_params;
    const size_t np = t == DType::kInt8 ? std::size(int8_params) : std::size(uint8_params);
    for (Op op : ops) {
      for (size_t pi = 0; pi < np; ++pi) {
        const QuantParamsSet& q = params[pi];
        for (size_t si = pi % 2; si < kShapes.size(); si += 2) {
          const ShapePair& s = kShapes[si];
          for (int act : kActivations) {
            if (!HasActivation(op) && act != 0) continue;
            if (act != 0 && (si + pi) % 3 != 0) continue;
            if (s.a.size() == 5 && s.a != s.b) continue;
            const TensorSpec a = QSpec(t, s.a, q.s1, q.z1), b = QSpec(t, s.b, q.s2, q.z2);
            const Graph g = OneOpGraph(op, {a, b}, {QSpec(t, s.out, q.so, q.zo)}, ActOptions(op, act));
            CompareOptions o;
            o.max_lsb = 0;
            o.seed = ++seed;
            EXPECT_EQ(CheckCase29(Label(op, t, s, act) + " q#" + std::to_string(pi), g, o), "");
          }
        }
      }
    }
  }
}

TEST_F(BinaryConformance, DivUint8AndSquaredDifferenceInt8) {
  uint64_t seed = 400;
  const QuantParamsSet div_params[] = {{0.05f, 128, 0.02f, 100, 0.07f, 131}, {0.1f, 0, 0.03f, 2, 0.5f, 10}};
  for (const auto& q : div_params) {
    for (size_t si = 0; si < kShapes.size(); ++si) {
      const ShapePair& s = kShapes[si];
      if (s.a.size() == 5) continue;
      for (int act : kActivations) {
        if (act != 0 && si % 3 != 0) continue;
        const TensorSpec a = QSpec(DType::kUInt8, s.a, q.s1, q.z1), b = QSpec(DType::kUInt8, s.b, q.s2, q.z2);
        const Graph g = OneOpGraph(tflite::BuiltinOperator_DIV, {a, b}, {QSpec(DType::kUInt8, s.out, q.so, q.zo)},
                                   ActOptions(tflite::BuiltinOperator_DIV, act));
        CompareOptions o;
        o.max_lsb = 0;
        auto in = Inputs(a, b, ++seed, 0, 255, true, 0, 255);
        EXPECT_EQ(CheckCase29(Label(tflite::BuiltinOperator_DIV, DType::kUInt8, s, act), g, o, in), "");
      }
    }
  }
  const QuantParamsSet sqd_params[] = {{0.05f, 3, 0.02f, -10, 0.07f, 5}, {0.1f, -128, 0.1f, 127, 1.5f, -128}};
  for (const auto& q : sqd_params) {
    for (const ShapePair& s : kShapes) {
      if (s.a.size() == 5) continue;
      const TensorSpec a = QSpec(DType::kInt8, s.a, q.s1, q.z1), b = QSpec(DType::kInt8, s.b, q.s2, q.z2);
      const Graph g = OneOpGraph(tflite::BuiltinOperator_SQUARED_DIFFERENCE, {a, b},
                                 {QSpec(DType::kInt8, s.out, q.so, q.zo)},
                                 ActOptions(tflite::BuiltinOperator_SQUARED_DIFFERENCE, 0));
      CompareOptions o;
      o.max_lsb = 0;
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29(Label(tflite::BuiltinOperator_SQUARED_DIFFERENCE, DType::kInt8, s, 0), g, o), "");
    }
  }
}

TEST_F(BinaryConformance, Int16) {
  uint64_t seed = 500;
  // General scales (pot_scale_int16 = false, or scales that are not powers of two).
  const QuantParamsSet general[] = {{0.001f, 0, 0.0007f, 0, 0.0015f, 0}, {0.0002f, 0, 0.0002f, 0, 0.0003f, 0}};
  for (Op op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL,
                tflite::BuiltinOperator_MAXIMUM, tflite::BuiltinOperator_MINIMUM}) {
    for (const auto& q : general) {
      for (size_t si = 0; si < kShapes.size(); si += 2) {
        const ShapePair& s = kShapes[si];
        if (s.a.size() == 5 && s.a != s.b) continue;
        for (int act : kActivations) {
          if (!HasActivation(op) && act != 0) continue;
          if (act != 0 && si % 4 != 0) continue;
          const TensorSpec a = QSpec(DType::kInt16, s.a, q.s1, q.z1), b = QSpec(DType::kInt16, s.b, q.s2, q.z2);
          const Graph g = OneOpGraph(op, {a, b}, {QSpec(DType::kInt16, s.out, q.so, q.zo)}, ActOptions(op, act, false));
          CompareOptions o;
          o.max_lsb = 0;
          o.seed = ++seed;
          EXPECT_EQ(CheckCase29(Label(op, DType::kInt16, s, act) + " general", g, o), "");
        }
      }
    }
  }
  // Power-of-two scales with pot_scale_int16 (the default): same shapes only, as 2.9 does not
  // broadcast on this path.
  const QuantParamsSet pot[] = {{1.0f / 1024, 0, 1.0f / 4096, 0, 1.0f / 1024, 0},
                                {1.0f / 32768, 0, 1.0f / 2048, 0, 1.0f / 2048, 0},
                                {1.0f / 256, 0, 1.0f / 256, 0, 1.0f / 256, 0}};
  for (Op op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB}) {
    for (const auto& q : pot) {
      for (const ShapePair& s : kShapes) {
        if (s.a != s.b) continue;
        for (int act : kActivations) {
          const TensorSpec a = QSpec(DType::kInt16, s.a, q.s1, q.z1), b = QSpec(DType::kInt16, s.b, q.s2, q.z2);
          const Graph g = OneOpGraph(op, {a, b}, {QSpec(DType::kInt16, s.out, q.so, q.zo)}, ActOptions(op, act, true));
          CompareOptions o;
          o.max_lsb = 0;
          o.seed = ++seed;
          EXPECT_EQ(CheckCase29(Label(op, DType::kInt16, s, act) + " pot", g, o), "");
        }
      }
    }
  }
}

TEST_F(BinaryConformance, Rank5Broadcast) {
  // TFLite 2.9 aborts on 5-D broadcasting (its broadcast kernels are 4-D), so these cases use
  // LiteRT.js (current LiteRT kernels, up to 6-D) as the reference: one model computing every
  // op on the same pair, since each LiteRT.js run starts a Node process.
  if (!LiteRtJsAvailable()) GTEST_SKIP() << "LiteRT.js absent (run scripts/setup.sh)";
  const ShapePair s = {{2, 3, 1, 4, 5}, {2, 1, 3, 1, 1}, {2, 3, 3, 4, 5}};
  GraphBuilder b;
  const auto x = b.Input("a", DType::kFloat32, s.a);
  const auto y = b.Input("b", DType::kFloat32, s.b);
  int k = 0;
  for (Op op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL,
                tflite::BuiltinOperator_DIV, tflite::BuiltinOperator_MAXIMUM, tflite::BuiltinOperator_MINIMUM}) {
    const auto out = b.Tensor("out" + std::to_string(k++), DType::kFloat32, s.out);
    b.AddOp(op, {x, y}, {out}, ActOptions(op, 0));
    b.Output(out);
  }
  CompareOptions o;
  o.rtol = 1e-6;
  o.atol = 0;
  o.oracle = Oracle::kLiteRtJs;
  auto in = Inputs(Spec(DType::kFloat32, s.a), Spec(DType::kFloat32, s.b), 600, -4, 4, true, -4, 4);
  EXPECT_EQ(CheckCase("ADD/SUB/MUL/DIV/MAXIMUM/MINIMUM float32 [2,3,1,4,5]x[2,1,3,1,1]", b.Finish(), o, in), "");
}

TEST_F(BinaryConformance, ResizedAndEmptyInputs) {
  // Inputs of other shapes than the model declares: Prepare must rebuild its broadcast plan.
  for (Op op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_MUL}) {
    const Graph g = OneOpGraph(op, {Spec(DType::kFloat32, {2, 3}), Spec(DType::kFloat32, {3})}, {Spec(DType::kFloat32, {2, 3})},
                               ActOptions(op, 0));
    std::mt19937_64 rng(700);
    const std::vector<TensorValue> in = {RandomValue(Spec(DType::kFloat32, {5, 1, 3}), rng, -2, 2),
                                         RandomValue(Spec(DType::kFloat32, {4, 1}), rng, -2, 2)};
    CompareOptions o;
    o.rtol = 1e-6;
    o.atol = 0;
    EXPECT_EQ(CheckCase29(std::string(tflite::EnumNameBuiltinOperator(op)) + " resized to [5,1,3]x[4,1]", g, o, in), "");
    // Zero elements.
    const std::vector<TensorValue> empty = {RandomValue(Spec(DType::kFloat32, {0, 3}), rng, -2, 2),
                                            RandomValue(Spec(DType::kFloat32, {3}), rng, -2, 2)};
    EXPECT_EQ(CheckCase29(std::string(tflite::EnumNameBuiltinOperator(op)) + " [0,3]x[3]", g, o, empty), "");
  }
}

TEST_F(BinaryConformance, Errors) {
  // Shapes that do not broadcast.
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ADD, {Spec(DType::kFloat32, {2, 3}), Spec(DType::kFloat32, {4})},
                               {Spec(DType::kFloat32, {2, 3})}, ActOptions(tflite::BuiltinOperator_ADD, 0));
    EXPECT_EQ(ExpectRejected("ADD [2,3]x[4]", g, "ADD: shapes [2,3] and [4] are not broadcastable"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  // Mismatched input types.
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_MUL, {Spec(DType::kFloat32, {3}), Spec(DType::kInt32, {3})},
                               {Spec(DType::kFloat32, {3})}, ActOptions(tflite::BuiltinOperator_MUL, 0));
    EXPECT_EQ(ExpectRejected("MUL float x int32", g, "MUL: inputs must have the same type"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  // Unsupported dtype.
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_POW, {QSpec(DType::kInt8, {3}, 0.1f, 0), QSpec(DType::kInt8, {3}, 0.1f, 0)},
                               {QSpec(DType::kInt8, {3}, 0.1f, 0)}, ActOptions(tflite::BuiltinOperator_POW, 0));
    EXPECT_EQ(ExpectRejected("POW int8", g, "POW: input type int8 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  // Unsupported fused activation.
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ADD, {Spec(DType::kFloat32, {3}), Spec(DType::kFloat32, {3})},
                               {Spec(DType::kFloat32, {3})}, ActOptions(tflite::BuiltinOperator_ADD, tflite::ActivationFunctionType_SIGN_BIT));
    EXPECT_EQ(ExpectRejected("ADD sign_bit", g, "ADD: fused activation SIGN_BIT is not supported"), "");
  }
  // Integer division by zero is an error, as in 2.9.
  {
    const TensorSpec a = Spec(DType::kInt32, {3}), b = Spec(DType::kInt32, {3});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_FLOOR_DIV, {a, b}, {Spec(DType::kInt32, {3})},
                               ActOptions(tflite::BuiltinOperator_FLOOR_DIV, 0));
    const std::vector<TensorValue> in = {Value(a, std::vector<int32_t>{1, 2, 3}), Value(b, std::vector<int32_t>{1, 0, 3})};
    EXPECT_EQ(ExpectRejected("FLOOR_DIV by 0", g, "FLOOR_DIV: division by zero", in), "");
    EXPECT_TRUE(Tflite29Rejects(g, in));
    const Graph g2 = OneOpGraph(tflite::BuiltinOperator_DIV, {a, b}, {Spec(DType::kInt32, {3})},
                                ActOptions(tflite::BuiltinOperator_DIV, 0));
    // (2.9 itself does not check here and traps on the division.)
    EXPECT_EQ(ExpectRejected("DIV by 0", g2, "DIV: division by zero", in), "");
  }
  // int16 with a non-zero zero point.
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ADD,
                               {QSpec(DType::kInt16, {3}, 0.001f, 5), QSpec(DType::kInt16, {3}, 0.001f, 0)},
                               {QSpec(DType::kInt16, {3}, 0.001f, 0)}, ActOptions(tflite::BuiltinOperator_ADD, 0));
    EXPECT_EQ(ExpectRejected("ADD int16 zp", g, "ADD: int16 inputs and output must have zero point 0"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  // POW int32 with a negative exponent.
  {
    const TensorSpec a = Spec(DType::kInt32, {2}), b = Spec(DType::kInt32, {2});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_POW, {a, b}, {Spec(DType::kInt32, {2})},
                               ActOptions(tflite::BuiltinOperator_POW, 0));
    const std::vector<TensorValue> in = {Value(a, std::vector<int32_t>{2, 3}), Value(b, std::vector<int32_t>{1, -1})};
    EXPECT_EQ(ExpectRejected("POW negative exponent", g, "POW: negative exponents", in), "");
    EXPECT_TRUE(Tflite29Rejects(g, in));
  }
}

}  // namespace
}  // namespace edgeopt
