// Activations against TFLite 2.9 (RELU_0_TO_1, absent from 2.9, against LiteRT.js).
// Tolerances: integer outputs bit-exact (max_lsb 0) everywhere, including the quantized
// LOGISTIC/TANH (8-bit tables, int16 fixed point and int16 tables) and SOFTMAX paths. Float
// outputs: rtol 1e-6 of the output range, except the transcendental ones
// (LOGISTIC/TANH/SOFTMAX/LOG_SOFTMAX/ELU/GELU): rtol 2e-6 plus atol 1e-6, because 2.9 evaluates
// them with Eigen's vectorized exp/tanh/erf approximations (its tanh saturates to +-1 below
// -7.9, so GELU's negative tail is 0 there where libm gives -4e-7).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>

#include "kernels/common/byte_table.h"
#include "kernels/common/quant_utils.h"
#include "runtime/cpu.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using namespace testing;
using Op = tflite::BuiltinOperator;
using kernels::ApplyByteTableScalar;
using kernels::ApplyByteTableVbmi;
using kernels::ByteTable;

const std::vector<std::vector<int32_t>> kShapes = {{}, {1}, {7}, {3, 5}, {2, 3, 4, 5}, {1, 2, 3, 4, 5}};

class ActivationConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

struct QP {
  float in_scale;
  int in_zp;
  float out_scale;
  int out_zp;
};

std::string Name(Op op, DType t, const std::vector<int32_t>& shape, const std::string& extra = "") {
  return std::string(tflite::EnumNameBuiltinOperator(op)) + " " + std::string(DTypeName(t)) + " " + ShapeText(shape) +
         (extra.empty() ? "" : " " + extra);
}

std::string QText(const QP& q) {
  return "in(" + std::to_string(q.in_scale) + "," + std::to_string(q.in_zp) + ") out(" + std::to_string(q.out_scale) +
         "," + std::to_string(q.out_zp) + ")";
}

// Every value of the 8-bit type, in order.
TensorValue AllValues(const TensorSpec& s) {
  std::vector<uint8_t> v(256);
  for (int i = 0; i < 256; ++i) v[i] = static_cast<uint8_t>(s.type == DType::kInt8 ? i - 128 + 256 : i);
  return Value(s, v);
}

// A spread of int16 values: every 64th value from -32768 to 32767, plus +-1, +-2.
TensorValue Int16Sweep(const TensorSpec& s) {
  std::vector<int16_t> v;
  for (int x = -32768; x <= 32767; x += 64) v.push_back(static_cast<int16_t>(x));
  for (int x : {-2, -1, 0, 1, 2, 32767}) v.push_back(static_cast<int16_t>(x));
  v.resize(static_cast<size_t>(s.shape[0]), 0);
  return Value(s, v);
}
constexpr int32_t kInt16SweepSize = 1024 + 6;

CompareOptions Exact() {
  CompareOptions o;
  o.max_lsb = 0;
  return o;
}
CompareOptions FloatTol(double rtol) {
  CompareOptions o;
  o.rtol = rtol;
  o.atol = rtol > 1e-6 ? 1e-6 : 0;  // transcendental ops: see the header comment
  return o;
}

// ---------------------------------------------------------------------------------------------

// The quantized SOFTMAX's rounding (kernels::RoundNonNegative) is std::round on [0, 2^31):
// every half-integer up to 70000 and its float neighbours, and a sweep of bit patterns.
TEST(SoftmaxRounding, RoundNonNegativeIsStdRound) {
  auto check = [](float v) {
    ASSERT_EQ(kernels::RoundNonNegative(v), static_cast<int32_t>(std::round(v))) << "v = " << v;
  };
  for (int k = 0; k <= 70000; ++k) {
    const float h = static_cast<float>(k) + 0.5f;
    check(h);
    check(std::nextafter(h, 0.0f));
    check(std::nextafter(h, 1e9f));
    check(static_cast<float>(k));
  }
  const float top = 2147483520.0f;  // the largest float below 2^31
  uint32_t hi;
  std::memcpy(&hi, &top, 4);
  for (uint32_t b = 0; b <= hi; b += 4099) {
    float v;
    std::memcpy(&v, &b, 4);
    check(v);
  }
}

TEST_F(ActivationConformance, ReluFamily) {
  uint64_t seed = 2000;
  for (Op op : {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6, tflite::BuiltinOperator_RELU_N1_TO_1}) {
    for (const auto& shape : kShapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29(Name(op, DType::kFloat32, shape), OneOpGraph(op, {s}, {s}), FloatTol(1e-6),
                            {RandomValue(s, rng, -8, 8)}),
                "");
    }
    const QP int8_params[] = {{0.05f, 0, 0.05f, 0}, {0.1f, -20, 0.03f, -128}, {0.02f, 10, 0.05f, 5}, {0.5f, 127, 0.25f, -100}};
    const QP uint8_params[] = {{0.05f, 128, 0.05f, 128}, {0.1f, 100, 0.03f, 0}, {0.02f, 0, 0.06f, 30}};
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const QP* ps = t == DType::kInt8 ? int8_params : uint8_params;
      const size_t n = t == DType::kInt8 ? std::size(int8_params) : std::size(uint8_params);
      for (size_t i = 0; i < n; ++i) {
        const TensorSpec in = QSpec(t, {256}, ps[i].in_scale, ps[i].in_zp), out = QSpec(t, {256}, ps[i].out_scale, ps[i].out_zp);
        EXPECT_EQ(CheckCase29(Name(op, t, {256}, QText(ps[i])), OneOpGraph(op, {in}, {out}), Exact(), {AllValues(in)}), "");
      }
    }
    if (op != tflite::BuiltinOperator_RELU_N1_TO_1) {
      for (const QP& q : {QP{0.001f, 0, 0.001f, 0}, QP{0.001f, 0, 0.0004f, 0}, QP{0.0003f, 0, 0.0005f, 0}}) {
        const TensorSpec in = QSpec(DType::kInt16, {kInt16SweepSize}, q.in_scale, 0);
        const TensorSpec out = QSpec(DType::kInt16, {kInt16SweepSize}, q.out_scale, 0);
        EXPECT_EQ(CheckCase29(Name(op, DType::kInt16, in.shape, QText(q)), OneOpGraph(op, {in}, {out}), Exact(), {Int16Sweep(in)}), "");
      }
    }
  }
}

TEST_F(ActivationConformance, Relu0To1) {
  if (!LiteRtJsAvailable()) GTEST_SKIP() << "RELU_0_TO_1 is newer than TFLite 2.9 and LiteRT.js is absent";
  // float32, int8 and uint8 in one model (each LiteRT.js run starts a Node process).
  GraphBuilder b;
  const std::vector<TensorSpec> specs = {Spec(DType::kFloat32, {3, 7}), QSpec(DType::kInt8, {256}, 0.02f, -10),
                                         QSpec(DType::kUInt8, {256}, 0.01f, 100)};
  const std::vector<TensorSpec> outs = {Spec(DType::kFloat32, {3, 7}), QSpec(DType::kInt8, {256}, 0.005f, -128),
                                        QSpec(DType::kUInt8, {256}, 0.004f, 5)};
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string suffix = std::to_string(i);  // (not "x" + to_string: GCC 12 -Wrestrict false positive)
    const auto x = b.Input(std::string("x").append(suffix), specs[i].type, specs[i].shape, specs[i].quant);
    const auto y = b.Tensor(std::string("y").append(suffix), outs[i].type, outs[i].shape, outs[i].quant);
    b.Op(tflite::BuiltinOperator_RELU_0_TO_1, {x}, {y});
    b.Output(y);
  }
  std::mt19937_64 rng(2050);
  const std::vector<TensorValue> in = {RandomValue(specs[0], rng, -2, 2), AllValues(specs[1]), AllValues(specs[2])};
  CompareOptions o = FloatTol(1e-6);
  o.max_lsb = 0;
  o.oracle = Oracle::kLiteRtJs;
  EXPECT_EQ(CheckCase("RELU_0_TO_1 float32, int8, uint8", b.Finish(), o, in), "");
}

TEST_F(ActivationConformance, LeakyRelu) {
  uint64_t seed = 2100;
  for (float alpha : {0.2f, 0.01f, 1.5f, -0.3f}) {
    tflite::LeakyReluOptionsT lo;
    lo.alpha = alpha;
    const std::string a = "alpha " + std::to_string(alpha);
    for (const auto& shape : kShapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_LEAKY_RELU, DType::kFloat32, shape, a),
                            OneOpGraph(tflite::BuiltinOperator_LEAKY_RELU, {s}, {s}, Opts(lo)), FloatTol(1e-6),
                            {RandomValue(s, rng, -8, 8)}),
                "");
    }
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const int zp_shift = t == DType::kUInt8 ? 128 : 0;
      for (const QP& q : {QP{0.05f, 0, 0.05f, 0}, QP{0.1f, -20, 0.07f, 30}, QP{0.02f, 100, 0.1f, -128}}) {
        const TensorSpec in = QSpec(t, {256}, q.in_scale, q.in_zp + zp_shift);
        const TensorSpec out = QSpec(t, {256}, q.out_scale, std::min(q.out_zp + zp_shift, 255));
        EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_LEAKY_RELU, t, {256}, a + " " + QText(q)),
                              OneOpGraph(tflite::BuiltinOperator_LEAKY_RELU, {in}, {out}, Opts(lo)), Exact(), {AllValues(in)}),
                  "");
      }
    }
    const TensorSpec in = QSpec(DType::kInt16, {kInt16SweepSize}, 0.001f, 0), out = QSpec(DType::kInt16, {kInt16SweepSize}, 0.0015f, 0);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_LEAKY_RELU, DType::kInt16, in.shape, a),
                          OneOpGraph(tflite::BuiltinOperator_LEAKY_RELU, {in}, {out}, Opts(lo)), Exact(), {Int16Sweep(in)}),
              "");
  }
}

TEST_F(ActivationConformance, Prelu) {
  struct S {
    std::vector<int32_t> in, alpha;
  };
  const S shapes[] = {{{2, 3, 4, 5}, {5}},          {{2, 3, 4, 5}, {1, 1, 5}}, {{2, 3, 4, 5}, {2, 3, 4, 5}},
                      {{1, 4, 6, 3}, {1, 1, 3}},    {{3, 7}, {7}},             {{5}, {5}},
                      {{2, 3, 4, 5}, {1, 3, 1, 1}}, {{4, 1, 3}, {1}}};
  uint64_t seed = 2200;
  for (const S& s : shapes) {
    const TensorSpec in = Spec(DType::kFloat32, s.in), alpha = Spec(DType::kFloat32, s.alpha);
    std::mt19937_64 rng(++seed);
    const auto vin = RandomValue(in, rng, -4, 4), va = RandomValue(alpha, rng, -1, 1);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_PRELU, DType::kFloat32, s.in, "alpha " + ShapeText(s.alpha)),
                          OneOpGraph(tflite::BuiltinOperator_PRELU, {in, alpha}, {in}), FloatTol(1e-6), {vin, va}),
              "");
    // Alpha as a constant, the usual form in models.
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_PRELU, DType::kFloat32, s.in, "const alpha"),
                          OneOpGraph(tflite::BuiltinOperator_PRELU, {in, alpha}, {in}, {}, {{}, va.data}), FloatTol(1e-6), {vin}),
              "");
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const int z = t == DType::kUInt8 ? 128 : 0;
      const TensorSpec qin = QSpec(t, s.in, 0.05f, 3 + z), qa = QSpec(t, s.alpha, 0.01f, -10 + z),
                       qout = QSpec(t, s.in, 0.04f, -5 + z);
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_PRELU, t, s.in, "alpha " + ShapeText(s.alpha)),
                            OneOpGraph(tflite::BuiltinOperator_PRELU, {qin, qa}, {qout}), o),
                "");
    }
  }
}

TEST_F(ActivationConformance, HardSwish) {
  uint64_t seed = 2300;
  for (const auto& shape : kShapes) {
    const TensorSpec s = Spec(DType::kFloat32, shape);
    std::mt19937_64 rng(++seed);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_HARD_SWISH, DType::kFloat32, shape),
                          OneOpGraph(tflite::BuiltinOperator_HARD_SWISH, {s}, {s}), FloatTol(1e-6), {RandomValue(s, rng, -8, 8)}),
              "");
  }
  // Input scales small and large relative to the output (reluish exponent of both signs).
  const QP params[] = {{0.05f, 0, 0.05f, 0},       {0.1f, -20, 0.03f, -128}, {0.02f, 10, 0.05f, 5},
                       {0.5f, 127, 0.25f, -100},  {0.001f, -3, 0.0007f, 0}, {2.0f, 0, 3.0f, -120},
                       {0.03f, -128, 0.012f, -60}};
  for (DType t : {DType::kInt8, DType::kUInt8}) {
    const int z = t == DType::kUInt8 ? 128 : 0;
    for (const QP& q : params) {
      const TensorSpec in = QSpec(t, {256}, q.in_scale, std::clamp(q.in_zp + z, 0 - 128 + z, 127 + z));
      const TensorSpec out = QSpec(t, {256}, q.out_scale, std::clamp(q.out_zp + z, 0 - 128 + z, 127 + z));
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_HARD_SWISH, t, {256}, QText(q)),
                            OneOpGraph(tflite::BuiltinOperator_HARD_SWISH, {in}, {out}), Exact(), {AllValues(in)}),
                "");
    }
  }
}

TEST_F(ActivationConformance, EluAndGelu) {
  uint64_t seed = 2400;
  for (const auto& shape : kShapes) {
    const TensorSpec s = Spec(DType::kFloat32, shape);
    std::mt19937_64 rng(++seed);
    const auto v = RandomValue(s, rng, -6, 6);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_ELU, DType::kFloat32, shape), OneOpGraph(tflite::BuiltinOperator_ELU, {s}, {s}),
                          FloatTol(2e-6), {v}),
              "");
    for (bool approx : {false, true}) {
      tflite::GeluOptionsT go;
      go.approximate = approx;
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_GELU, DType::kFloat32, shape, approx ? "approximate" : "exact"),
                            OneOpGraph(tflite::BuiltinOperator_GELU, {s}, {s}, Opts(go)), FloatTol(2e-6), {v}),
                "");
    }
  }
  const QP params[] = {{0.05f, 0, 0.05f, 0}, {0.1f, -20, 0.03f, -128}, {0.02f, 10, 0.05f, 5}, {0.06f, 127, 0.02f, -100}};
  for (const QP& q : params) {
    const TensorSpec in = QSpec(DType::kInt8, {256}, q.in_scale, q.in_zp), out = QSpec(DType::kInt8, {256}, q.out_scale, q.out_zp);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_ELU, DType::kInt8, {256}, QText(q)),
                          OneOpGraph(tflite::BuiltinOperator_ELU, {in}, {out}), Exact(), {AllValues(in)}),
              "");
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const int z = t == DType::kUInt8 ? 128 : 0;
      const TensorSpec gin = QSpec(t, {256}, q.in_scale, q.in_zp + z), gout = QSpec(t, {256}, q.out_scale, q.out_zp + z);
      for (bool approx : {false, true}) {
        tflite::GeluOptionsT go;
        go.approximate = approx;
        EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_GELU, t, {256}, QText(q) + (approx ? " approximate" : " exact")),
                              OneOpGraph(tflite::BuiltinOperator_GELU, {gin}, {gout}, Opts(go)), Exact(), {AllValues(gin)}),
                  "");
      }
    }
  }
}

TEST_F(ActivationConformance, LogisticTanh) {
  uint64_t seed = 2500;
  for (Op op : {tflite::BuiltinOperator_LOGISTIC, tflite::BuiltinOperator_TANH}) {
    const bool tanh = op == tflite::BuiltinOperator_TANH;
    for (const auto& shape : kShapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29(Name(op, DType::kFloat32, shape), OneOpGraph(op, {s}, {s}), FloatTol(2e-6), {RandomValue(s, rng, -10, 10)}), "");
    }
    // 8-bit: every input value, for input scales from fine to coarse. LOGISTIC outputs must be
    // 1/256 (zero point -128 / 0, and an unusual one); TANH outputs 1/128 or others.
    const float in_scales[] = {0.001f, 0.0156f, 0.05f, 0.1f, 0.37f};
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const int z = t == DType::kUInt8 ? 128 : 0;
      for (float is : in_scales) {
        for (int in_zp : {0, -37, 100}) {
          const int out_zp = tanh ? 0 + z : -128 + z;
          const float out_scale = tanh ? 1.0f / 128 : 1.0f / 256;
          const TensorSpec in = QSpec(t, {256}, is, in_zp + z), out = QSpec(t, {256}, out_scale, out_zp);
          EXPECT_EQ(CheckCase29(Name(op, t, {256}, QText({is, in_zp + z, out_scale, out_zp})), OneOpGraph(op, {in}, {out}), Exact(),
                                {AllValues(in)}),
                    "");
        }
      }
      const TensorSpec in = QSpec(t, {256}, 0.03f, 5 + z);
      const TensorSpec odd = QSpec(t, {256}, tanh ? 0.01f : 1.0f / 256, tanh ? -3 + z : 10 + z);
      EXPECT_EQ(CheckCase29(Name(op, t, {256}, "unusual output zero point"), OneOpGraph(op, {in}, {odd}), Exact(), {AllValues(in)}), "");
    }
    // int16: power-of-two input scales (gemmlowp fixed point) and general ones (Q0.16 table).
    std::vector<float> scales = {1.0f / 4096, 0.001f, 0.0003f, 10.0f / 32768, 1.0f / 1024, 3.0f / 32768};
    if (tanh) scales.push_back(1.0f / 2048);
    for (float is : scales) {
      const TensorSpec in = QSpec(DType::kInt16, {kInt16SweepSize}, is, 0), out = QSpec(DType::kInt16, {kInt16SweepSize}, 1.0f / 32768, 0);
      EXPECT_EQ(CheckCase29(Name(op, DType::kInt16, in.shape, "in scale " + std::to_string(is)), OneOpGraph(op, {in}, {out}), Exact(),
                            {Int16Sweep(in)}),
                "");
      const TensorSpec in2 = QSpec(DType::kInt16, {3, 41}, is, 0), out2 = QSpec(DType::kInt16, {3, 41}, 1.0f / 32768, 0);
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29(Name(op, DType::kInt16, in2.shape, "random, in scale " + std::to_string(is)), OneOpGraph(op, {in2}, {out2}), o), "");
    }
  }
}

TEST_F(ActivationConformance, Softmax) {
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 5}, {2, 3, 17}, {2, 3, 4, 9}, {1, 2, 1, 3, 11}};
  uint64_t seed = 2600;
  for (float beta : {1.0f, 0.5f, 2.0f}) {
    tflite::SoftmaxOptionsT so;
    so.beta = beta;
    const std::string b = "beta " + std::to_string(beta);
    for (const auto& shape : shapes) {
      const TensorSpec s = Spec(DType::kFloat32, shape);
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_SOFTMAX, DType::kFloat32, shape, b),
                            OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {s}, {s}, Opts(so)), FloatTol(2e-6), {RandomValue(s, rng, -6, 6)}),
                "");
      // 8-bit inputs with 8- and 16-bit outputs.
      for (float in_scale : {0.05f, 0.2f, 0.0078125f}) {
        const std::string tag = b + " in scale " + std::to_string(in_scale);
        struct IO {
          DType in, out;
          int in_zp;
          float out_scale;
          int out_zp;
        };
        const IO ios[] = {{DType::kInt8, DType::kInt8, 5, 1.0f / 256, -128},
                          {DType::kInt8, DType::kInt16, -20, 1.0f / 32768, 0},
                          {DType::kUInt8, DType::kUInt8, 130, 1.0f / 256, 0},
                          // 2.9's x86 build ignores a uint8 output zero point (rounds by +0.5).
                          {DType::kUInt8, DType::kUInt8, 3, 1.0f / 256, 10},
                          {DType::kUInt8, DType::kInt16, 77, 1.0f / 65536, -32768}};
        for (const IO& io : ios) {
          if (shape.size() > 4 && io.out == DType::kInt16) continue;
          const TensorSpec in = QSpec(io.in, shape, in_scale, io.in_zp), out = QSpec(io.out, shape, io.out_scale, io.out_zp);
          CompareOptions o = Exact();
          o.seed = ++seed;
          EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_SOFTMAX, io.in, shape, std::string("-> ") + DTypeName(io.out).data() + " " + tag),
                                OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {in}, {out}, Opts(so)), o),
                    "");
        }
      }
      // int16 -> int16 (ranks 1-4).
      if (shape.size() <= 4) {
        for (float in_scale : {1.0f / 2048, 0.001f, 0.0003f}) {
          const TensorSpec in = QSpec(DType::kInt16, shape, in_scale, 0), out = QSpec(DType::kInt16, shape, 1.0f / 32768, 0);
          CompareOptions o = Exact();
          o.seed = ++seed;
          EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_SOFTMAX, DType::kInt16, shape, b + " in scale " + std::to_string(in_scale)),
                                OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {in}, {out}, Opts(so)), o),
                    "");
        }
      }
    }
  }
}

TEST_F(ActivationConformance, LogSoftmax) {
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 5}, {2, 3, 17}, {2, 3, 4, 9}};
  uint64_t seed = 2700;
  for (const auto& shape : shapes) {
    const TensorSpec s = Spec(DType::kFloat32, shape);
    std::mt19937_64 rng(++seed);
    EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_LOG_SOFTMAX, DType::kFloat32, shape),
                          OneOpGraph(tflite::BuiltinOperator_LOG_SOFTMAX, {s}, {s}), FloatTol(2e-6), {RandomValue(s, rng, -6, 6)}),
              "");
    for (float in_scale : {0.05f, 0.2f, 0.01f}) {
      for (DType t : {DType::kInt8, DType::kUInt8}) {
        const TensorSpec in = QSpec(t, shape, in_scale, t == DType::kInt8 ? -7 : 140);
        const TensorSpec out = QSpec(t, shape, 16.0f / 256, t == DType::kInt8 ? 127 : 255);
        CompareOptions o = Exact();
        o.seed = ++seed;
        EXPECT_EQ(CheckCase29(Name(tflite::BuiltinOperator_LOG_SOFTMAX, t, shape, "in scale " + std::to_string(in_scale)),
                              OneOpGraph(tflite::BuiltinOperator_LOG_SOFTMAX, {in}, {out}), o),
                  "");
      }
    }
  }
}

// Variant names as `bench --profile` shows them (no reference runtime needed), of the reference
// kernels (the fast variants' names are checked by their own tests).
TEST(ActivationKernels, VariantNames) {
  struct C {
    Graph g;
    std::string variant;
  };
  const TensorSpec i16 = QSpec(DType::kInt16, {4}, 1.0f / 4096, 0), o16 = QSpec(DType::kInt16, {4}, 1.0f / 32768, 0);
  const TensorSpec i16g = QSpec(DType::kInt16, {4}, 0.001f, 0);
  const TensorSpec i8 = QSpec(DType::kInt8, {4}, 0.1f, 0), o8 = QSpec(DType::kInt8, {4}, 1.0f / 256, -128);
  const std::vector<C> cases = {
      {OneOpGraph(tflite::BuiltinOperator_LOGISTIC, {i16}, {o16}), "logistic/int16_pot/ref"},
      {OneOpGraph(tflite::BuiltinOperator_LOGISTIC, {i16g}, {o16}), "logistic/int16/ref"},
      {OneOpGraph(tflite::BuiltinOperator_TANH, {i8}, {o8}), "tanh/int8/ref"},
      {OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {i8}, {o16}, Opts(tflite::SoftmaxOptionsT{})), "softmax/int8_int16/ref"},
      {OneOpGraph(tflite::BuiltinOperator_ADD, {i8, i8}, {i8}), "add/int8/ref"},
      {OneOpGraph(tflite::BuiltinOperator_ADD, {i16, i16}, {i16}, Opts(tflite::AddOptionsT{})), "add/int16_pot/ref"},
      {OneOpGraph(tflite::BuiltinOperator_GELU, {i8}, {i8}), "gelu/int8/ref"},
  };
  for (const C& c : cases) {
    auto model = rt::Model::FromGraph(c.g);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    rt::InterpreterOptions reference;
    reference.reference_kernels_only = true;
    auto interp = rt::Interpreter::Create(*model, reference);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    ASSERT_TRUE((*interp)->AllocateTensors().ok()) << c.variant;
    EXPECT_EQ((*interp)->ops().at(0).variant, c.variant);
  }
}

// The 8-bit table ops (LOGISTIC, TANH, ELU, GELU) look their table up with AVX-512 VBMI where the
// CPU has it: the same bytes as the reference kernel's loop, for every input byte (300 elements:
// all 256 values, then a 44-element tail past the last whole vector).
TEST(ActivationKernels, ByteTableOpsEqualTheReferenceOnEveryByte) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  const bool vbmi = hw.has_avx512() && hw.avx512vbmi;
  if (!vbmi) std::cout << "note: this CPU has no AVX-512 VBMI: both runs use the plain loop\n";
  struct C {
    Op op;
    DType type;
    float out_scale;
    int32_t out_zp;
    const char* name;
  };
  const std::vector<C> cases = {{Op::BuiltinOperator_LOGISTIC, DType::kUInt8, 1.0f / 256, 0, "logistic/uint8/"},
                                {Op::BuiltinOperator_LOGISTIC, DType::kInt8, 1.0f / 256, -128, "logistic/int8/"},
                                {Op::BuiltinOperator_TANH, DType::kInt8, 1.0f / 128, 0, "tanh/int8/"},
                                {Op::BuiltinOperator_TANH, DType::kUInt8, 1.0f / 128, 128, "tanh/uint8/"},
                                {Op::BuiltinOperator_GELU, DType::kInt8, 0.05f, -3, "gelu/int8/"},
                                {Op::BuiltinOperator_ELU, DType::kInt8, 0.05f, 7, "elu/int8/"}};
  for (const C& c : cases) {
    const int32_t zp = c.type == DType::kInt8 ? 5 : 133;
    const Graph g = OneOpGraph(c.op, {QSpec(c.type, {1, 300}, 0.05f, zp)}, {QSpec(c.type, {1, 300}, c.out_scale, c.out_zp)});
    auto model = rt::Model::FromGraph(g);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    TensorValue in;
    in.type = c.type;
    in.shape = {1, 300};
    for (int i = 0; i < 300; ++i) in.data.push_back(static_cast<uint8_t>(i * 7));  // 7 is odd: every byte
    rt::InterpreterOptions reference;
    reference.reference_kernels_only = true;
    auto want = RunEdgeopt(*model, {in}, reference);
    auto got = RunEdgeopt(*model, {in});
    ASSERT_TRUE(want.ok() && got.ok()) << c.name;
    EXPECT_EQ((*got)[0].data, (*want)[0].data) << c.name;
    auto interp = rt::Interpreter::Create(*model);
    ASSERT_TRUE(interp.ok() && (*interp)->AllocateTensors().ok()) << c.name;
    EXPECT_EQ((*interp)->ops().at(0).variant, std::string(c.name) + (vbmi ? "avx512vbmi" : "ref"));
  }
}

// The 8-bit piecewise ops (RELU family, LEAKY_RELU, HARD_SWISH) tabulate their per-element
// formula over the 256 input bytes at Prepare outside the reference mode: the same bytes as the
// reference kernel's loop for every input byte, scales above and below 1, zero points at both
// ends; 300 elements (a tail past the last 64-byte vector) and 140003 (split over 2 threads).
TEST(ActivationKernels, TabulatedPiecewiseOpsEqualTheReference) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  const bool vbmi = hw.has_avx512() && hw.avx512vbmi;
  if (!vbmi) std::cout << "note: this CPU has no AVX-512 VBMI: the tables run the plain lookup loop\n";
  struct C {
    Op op;
    const char* name;
  };
  const C ops[] = {{Op::BuiltinOperator_RELU, "relu/"},
                   {Op::BuiltinOperator_RELU6, "relu6/"},
                   {Op::BuiltinOperator_RELU_N1_TO_1, "relu_n1_to_1/"},
                   {Op::BuiltinOperator_RELU_0_TO_1, "relu_0_to_1/"},
                   {Op::BuiltinOperator_LEAKY_RELU, "leaky_relu/"},
                   {Op::BuiltinOperator_HARD_SWISH, "hard_swish/"}};
  const QP int8_params[] = {{0.05f, 0, 0.05f, 0}, {0.1f, -20, 0.03f, -128}, {0.02f, 127, 0.05f, 5}, {0.03f, -128, 0.2f, 127}};
  const QP uint8_params[] = {{0.05f, 128, 0.05f, 128}, {0.1f, 255, 0.03f, 0}, {0.02f, 0, 0.06f, 255}};
  int k = 0;
  for (const C& c : ops) {
    for (DType t : {DType::kInt8, DType::kUInt8}) {
      const QP* ps = t == DType::kInt8 ? int8_params : uint8_params;
      const size_t np = t == DType::kInt8 ? std::size(int8_params) : std::size(uint8_params);
      for (size_t i = 0; i < np; ++i, ++k) {
        const int64_t n = k % 3 == 0 ? 140003 : 300;
        const std::vector<int32_t> shape = {1, static_cast<int32_t>(n)};
        tflite::LeakyReluOptionsT lo;
        lo.alpha = k % 2 ? 0.2f : 1.7f;
        const Graph g = OneOpGraph(c.op, {QSpec(t, shape, ps[i].in_scale, ps[i].in_zp)},
                                   {QSpec(t, shape, ps[i].out_scale, ps[i].out_zp)},
                                   c.op == Op::BuiltinOperator_LEAKY_RELU ? Opts(lo) : tflite::BuiltinOptionsUnion{});
        auto model = rt::Model::FromGraph(g);
        ASSERT_TRUE(model.ok()) << model.status().ToString();
        TensorValue in;
        in.type = t;
        in.shape = shape;
        for (int64_t e = 0; e < n; ++e) in.data.push_back(static_cast<uint8_t>(e * 7 + e / 256));
        const std::string what = std::string(c.name) + std::string(DTypeName(t)) + " " + QText(ps[i]) + " n " + std::to_string(n);
        rt::InterpreterOptions reference;
        reference.reference_kernels_only = true;
        auto want = RunEdgeopt(*model, {in}, reference);
        ASSERT_TRUE(want.ok()) << what;
        for (int threads : {1, 2}) {
          rt::InterpreterOptions fast;
          fast.num_threads = threads;
          auto got = RunEdgeopt(*model, {in}, fast);
          ASSERT_TRUE(got.ok()) << what;
          EXPECT_EQ((*got)[0].data, (*want)[0].data) << what << " threads " << threads;
          auto interp = rt::Interpreter::Create(*model, fast);
          ASSERT_TRUE(interp.ok() && (*interp)->AllocateTensors().ok()) << what;
          EXPECT_EQ((*interp)->ops().at(0).variant, std::string(c.name) + std::string(DTypeName(t)) + (vbmi ? "/avx512vbmi" : "/table"));
        }
        auto ref_interp = rt::Interpreter::Create(*model, reference);
        ASSERT_TRUE(ref_interp.ok() && (*ref_interp)->AllocateTensors().ok()) << what;
        EXPECT_EQ((*ref_interp)->ops().at(0).variant, std::string(c.name) + std::string(DTypeName(t)) + "/ref");
      }
    }
  }
}

// The one-op SOFTMAX model run with the fast kernels (`threads`) gives the reference kernel's
// bytes, and its variant ends with `variant_suffix`.
void ExpectSoftmaxEqualsReference(const std::shared_ptr<const rt::Model>& model, const TensorValue& in, int threads,
                                  const std::string& variant_suffix, const std::string& what) {
  rt::InterpreterOptions reference;
  reference.reference_kernels_only = true;
  auto want = RunEdgeopt(model, {in}, reference);
  ASSERT_TRUE(want.ok()) << what;
  rt::InterpreterOptions fast;
  fast.num_threads = threads;
  auto got = RunEdgeopt(model, {in}, fast);
  ASSERT_TRUE(got.ok()) << what;
  EXPECT_EQ((*got)[0].data, (*want)[0].data) << what;
  auto interp = rt::Interpreter::Create(model, fast);
  ASSERT_TRUE(interp.ok() && (*interp)->AllocateTensors().ok()) << what;
  EXPECT_TRUE((*interp)->ops().at(0).variant.ends_with(variant_suffix)) << what << ": " << (*interp)->ops().at(0).variant;
}

// 8-bit SOFTMAX on AVX-512 (softmax_q_avx512.cc): byte for byte the reference rows, for
// int8 -> int8 / int16 and uint8 -> uint8 / int16, depths around the vector widths up to 1001
// classes, row counts that do not fill the four-row groups, several betas and input scales
// (some rows with every value equal, some with the full range), 1 and 2 threads.
TEST(ActivationKernels, QuantizedSoftmaxRowsEqualTheReference) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  if (!hw.has_avx512()) GTEST_SKIP() << "no AVX-512: 8-bit SOFTMAX runs the reference rows";
  struct Types {
    DType in, out;
    float out_scale;
    int32_t out_zp;
  };
  const Types types[] = {{DType::kInt8, DType::kInt8, 1.0f / 256, -128},
                         {DType::kInt8, DType::kInt16, 1.0f / 32768, 0},
                         {DType::kUInt8, DType::kUInt8, 1.0f / 256, 0},
                         {DType::kUInt8, DType::kInt16, 1.0f / 32768, 0}};
  // 512 with a uniform row: probabilities of exactly 1/2 at an output scale of 1/256 (ties).
  const int32_t depths[] = {1, 5, 16, 17, 64, 65, 130, 512, 1001};
  const int32_t outers[] = {1, 3, 4, 5, 9};
  std::mt19937 rng(57);
  int k = 0;
  for (const Types& t : types)
    for (int32_t depth : depths) {
      // [70, 130]: enough rows to be split over 2 threads (pieces of at least 4096 values).
      const int32_t outer = depth == 512 ? 3 : depth == 130 ? 70 : outers[k % 5];
      const float beta = k % 3 == 0 ? 1.0f : k % 3 == 1 ? 0.37f : 2.5f;
      const float in_scale = k % 2 ? 0.1f : 0.0125f;
      const std::vector<int32_t> shape = {outer, depth};
      tflite::SoftmaxOptionsT o;
      o.beta = beta;
      const Graph g = OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {QSpec(t.in, shape, in_scale, t.in == DType::kInt8 ? -3 : 120)},
                                 {QSpec(t.out, shape, t.out_scale, t.out_zp)}, Opts(o));
      auto model = rt::Model::FromGraph(g);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      TensorValue in;
      in.type = t.in;
      in.shape = shape;
      for (int32_t r = 0; r < outer; ++r)
        for (int32_t j = 0; j < depth; ++j)
          in.data.push_back(r == 1 ? uint8_t{77} : static_cast<uint8_t>(rng() % (r % 2 ? 256 : 24)));
      const std::string what = "softmax " + std::string(DTypeName(t.in)) + "->" + std::string(DTypeName(t.out)) + " [" +
                               std::to_string(outer) + "," + std::to_string(depth) + "] beta " + std::to_string(beta);
      ExpectSoftmaxEqualsReference(*model, in, 1 + k % 2, "/avx512", what);
      ++k;
    }
}

// int16 SOFTMAX on AVX-512 (SoftmaxInt16RowsAvx512): byte for byte the reference rows over
// depths around the vector width up to 1001 classes, rows of one repeated value (the sum at its
// largest for the depth), of the full int16 range and of small spreads, input scales whose
// rescale shifts right or left (up to the limit), betas, 1 and 2 threads; a rescale beyond the
// left-shift limit keeps the reference rows (variant checked).
TEST(ActivationKernels, Int16SoftmaxRowsEqualTheReference) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  if (!hw.has_avx512()) GTEST_SKIP() << "no AVX-512: int16 SOFTMAX runs the reference rows";
  const int32_t depths[] = {1, 2, 15, 16, 17, 33, 100, 1001};
  // rescale = in_scale * beta * 65535 / 10: from ~0.07 (right shifts) to 2^14 (the largest left
  // shift the rows take), then one beyond.
  const float in_scales[] = {1e-5f, 3e-4f, 0.002f, 0.05f, 3.0f};
  std::mt19937 rng(58);
  int k = 0;
  for (int32_t depth : depths)
    for (float in_scale : in_scales) {
      const int32_t outer = depth == 100 ? 90 : 1 + k % 4;  // [90, 100]: split over 2 threads
      const float beta = k % 3 == 0 ? 1.0f : k % 3 == 1 ? 0.5f : 1.7f;
      const std::vector<int32_t> shape = {outer, depth};
      tflite::SoftmaxOptionsT o;
      o.beta = beta;
      const Graph g = OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {QSpec(DType::kInt16, shape, in_scale, 0)},
                                 {QSpec(DType::kInt16, shape, 1.0f / 32768, 0)}, Opts(o));
      auto model = rt::Model::FromGraph(g);
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      TensorValue in;
      in.type = DType::kInt16;
      in.shape = shape;
      for (int32_t r = 0; r < outer; ++r)
        for (int32_t j = 0; j < depth; ++j) {
          const int kind = (r + k) % 4;
          const auto v = static_cast<int16_t>(kind == 0   ? 1234
                                              : kind == 1 ? static_cast<int32_t>(rng() % 65536) - 32768
                                              : kind == 2 ? static_cast<int32_t>(rng() % 200) - 100
                                                          : (j % 2 ? 32767 : -32768));
          in.data.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) & 0xFF));
          in.data.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
        }
      const std::string what = "softmax int16 [" + std::to_string(outer) + "," + std::to_string(depth) + "] in scale " +
                               std::to_string(in_scale) + " beta " + std::to_string(beta);
      // in scale 3: rescale 9830 (shift 14) at beta 0.5, 19660 / 33423 (shift 15 / 16) at 1 / 1.7.
      const bool beyond = in_scale > 2.0f && beta >= 1.0f;
      ExpectSoftmaxEqualsReference(*model, in, 1 + k % 2, beyond ? "/ref" : "/avx512", what);
      ++k;
    }
}

TEST(ActivationKernels, ByteTableLoopsAgreeAtEveryLengthAndOffset) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  if (!hw.has_avx512() || !hw.avx512vbmi) GTEST_SKIP() << "this CPU has no AVX-512 VBMI";
  ByteTable table;
  for (int i = 0; i < 256; ++i) table[i] = static_cast<uint8_t>(i * 151 + 17);
  std::vector<uint8_t> in(400), want(400), got(400);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 89 + 3);
  for (int offset : {0, 1, 63}) {
    for (int n = 0; n <= 300; ++n) {
      std::fill(want.begin(), want.end(), 0xAB);
      std::fill(got.begin(), got.end(), 0xAB);
      ApplyByteTableScalar(table, in.data() + offset, want.data() + offset, n);
      ApplyByteTableVbmi(table, in.data() + offset, got.data() + offset, n);
      ASSERT_EQ(got, want) << "n " << n << " offset " << offset;  // nothing past n is written
    }
  }
}

TEST_F(ActivationConformance, Errors) {
  {
    const TensorSpec in = QSpec(DType::kInt8, {4}, 0.1f, 0), out = QSpec(DType::kInt8, {4}, 1.0f / 128, -128);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LOGISTIC, {in}, {out});
    EXPECT_EQ(ExpectRejected("LOGISTIC int8 output scale", g, "LOGISTIC: output scale must be 1/256"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = QSpec(DType::kInt8, {4}, 0.1f, 0), out = QSpec(DType::kInt8, {4}, 1.0f / 256, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {in}, {out}, Opts(tflite::SoftmaxOptionsT{}));
    EXPECT_EQ(ExpectRejected("SOFTMAX int8 output zero point", g, "SOFTMAX: int8 output zero point must be -128"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = QSpec(DType::kUInt8, {4}, 0.1f, 0), out = QSpec(DType::kUInt8, {4}, 16.0f / 256, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_LOG_SOFTMAX, {in}, {out});
    EXPECT_EQ(ExpectRejected("LOG_SOFTMAX uint8 output zero point", g, "LOG_SOFTMAX: output zero point must be 255"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = QSpec(DType::kInt16, {4}, 1.0f / 4096, 3), out = QSpec(DType::kInt16, {4}, 1.0f / 32768, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_TANH, {in}, {out});
    EXPECT_EQ(ExpectRejected("TANH int16 zero point", g, "TANH: int16 input and output must have zero point 0"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = Spec(DType::kFloat32, {2, 3, 4}), alpha = Spec(DType::kFloat32, {5});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_PRELU, {in, alpha}, {in});
    EXPECT_EQ(ExpectRejected("PRELU alpha [5] for [2,3,4]", g, "PRELU: alpha [5] does not broadcast"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec s = Spec(DType::kInt32, {4});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_TANH, {s}, {s});
    EXPECT_EQ(ExpectRejected("TANH int32", g, "TANH: input type int32 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec in = QSpec(DType::kInt8, {4}, 0.1f, 0), out = QSpec(DType::kUInt8, {4}, 1.0f / 256, 0);
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {in}, {out}, Opts(tflite::SoftmaxOptionsT{}));
    EXPECT_EQ(ExpectRejected("SOFTMAX int8->uint8", g, "SOFTMAX: input int8 with output uint8 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const TensorSpec s = Spec(DType::kFloat32, {});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SOFTMAX, {s}, {s}, Opts(tflite::SoftmaxOptionsT{}));
    EXPECT_EQ(ExpectRejected("SOFTMAX scalar", g, "SOFTMAX: input must have at least one dimension"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
}

}  // namespace
}  // namespace edgeopt
