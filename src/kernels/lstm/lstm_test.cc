// UNIDIRECTIONAL_SEQUENCE_LSTM / LSTM against TFLite 2.9: float (peephole, projection, layer
// norm, CIFG, clipping, time-major both ways), hybrid (symmetric/asymmetric input quantization),
// full integer 8x8->16 (bit-exact), the real LSTM ops of mnist_lstm_{float,int8}.tflite, and
// state carried across invokes. Every case runs several invokes on one interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>

#include "format/reader.h"
#include "graph/builder.h"
#include "kernels/lstm/lstm_math.h"
#include "optimize/quantize/dequantize.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/scoped_env.h"
#include "support/core/model_files.h"
#include "support/multi_invoke.h"

namespace edgeopt {
namespace {

enum class Kind { kFloat, kHybrid, kInt8 };

struct LstmCase {
  Kind kind = Kind::kFloat;
  int batch = 2, time = 3, input = 5, cell = 4;
  int output = 0;  // projection size; 0 = no projection (output == cell)
  bool cifg = false, peephole = false, layer_norm = false, proj_bias = false;
  bool time_major = false;
  float cell_clip = 0, proj_clip = 0;
  bool asymmetric = false;
  bool sequence = true;  // false: the LSTM op (one step, 2-D input)
  int activation = tflite::ActivationFunctionType_TANH;
  int hidden_zp = 0;  // int8: zero point of the hidden (intermediate 4) tensor when projected
  int cell_scale_log2 = -11;  // int8: cell state scale 2^cell_scale_log2

  std::string Name() const {
    const char* k = kind == Kind::kFloat ? "float" : kind == Kind::kHybrid ? "hybrid" : "int8";
    std::string s = std::string(k) + " b" + std::to_string(batch) + " t" + std::to_string(time) + " i" +
                    std::to_string(input) + " c" + std::to_string(cell) + " o" + std::to_string(output);
    if (cifg) s += " cifg";
    if (peephole) s += " peephole";
    if (layer_norm) s += " layernorm";
    if (proj_bias) s += " projbias";
    if (time_major) s += " time_major";
    if (cell_clip > 0) s += " cell_clip";
    if (proj_clip > 0) s += " proj_clip";
    if (asymmetric) s += " asym";
    if (!sequence) s += " LSTM-op";
    return s;
  }
};

// "prefix<i>" (built with append: GCC 12 warns falsely on `"literal" + std::to_string`).
std::string Indexed(const char* prefix, int i) { return std::string(prefix).append(std::to_string(i)); }

Graph BuildLstm(const LstmCase& c, uint64_t seed = 7) {
  GraphBuilder b(seed);
  const int n_out = c.output > 0 ? c.output : c.cell;
  const bool integer = c.kind == Kind::kInt8;
  const DType act = integer ? DType::kInt8 : DType::kFloat32;
  const DType wtype = c.kind == Kind::kFloat ? DType::kFloat32 : DType::kInt8;
  std::vector<int32_t> in_shape =
      !c.sequence ? std::vector<int32_t>{c.batch, c.input}
                  : (c.time_major ? std::vector<int32_t>{c.time, c.batch, c.input}
                                  : std::vector<int32_t>{c.batch, c.time, c.input});
  const float in_scale = 0.02f, state_scale = 0.0075f;
  const int in_zp = 3, state_zp = -2;
  auto x = b.Input("x", act, in_shape, integer ? std::optional(Quant(in_scale, in_zp)) : std::nullopt);
  std::vector<int32_t> ins(24, kNoTensor);
  ins[0] = x;
  int wi = 0;
  auto weight = [&](std::vector<int32_t> shape) {
    const std::string name = Indexed("w", wi++);
    if (wtype == DType::kFloat32) return b.ConstRandom(name, DType::kFloat32, shape, -0.6, 0.6);
    const float scale = 0.004f + 0.001f * (wi % 5);
    return b.ConstRandom(name, DType::kInt8, shape, -127, 127, Quant(scale, 0));
  };
  auto bias = [&](const std::string& name, int n) {
    if (integer) return b.ConstRandom(name, DType::kInt32, {n}, -3000, 3000, Quant(in_scale * 0.005f, 0));
    return b.ConstRandom(name, DType::kFloat32, {n}, -0.5, 0.5);
  };
  for (int g = 0; g < 4; ++g) {
    if (g == 0 && c.cifg) continue;
    ins[1 + g] = weight({c.cell, c.input});
    ins[5 + g] = weight({c.cell, n_out});
    ins[12 + g] = bias(Indexed("bias", g), c.cell);
  }
  if (c.peephole) {
    for (int g = 0; g < 3; ++g) {
      if (g == 0 && c.cifg) continue;
      if (integer)
        ins[9 + g] = b.ConstRandom(Indexed("peep", g), DType::kInt16, {c.cell}, -20000, 20000, Quant(2e-5f, 0));
      else
        ins[9 + g] = weight({c.cell});
    }
  }
  if (c.output > 0) {
    ins[16] = weight({n_out, c.cell});
    if (c.proj_bias) ins[17] = bias("proj_bias", n_out);
  }
  ins[18] = b.Variable("output_state", act, {c.batch, n_out}, integer ? std::optional(Quant(state_scale, state_zp)) : std::nullopt);
  ins[19] = b.Variable("cell_state", integer ? DType::kInt16 : DType::kFloat32, {c.batch, c.cell},
                       integer ? std::optional(Quant(std::ldexp(1.0f, c.cell_scale_log2), 0)) : std::nullopt);
  if (c.layer_norm) {
    for (int g = 0; g < 4; ++g) {
      if (g == 0 && c.cifg) continue;
      if (integer)
        ins[20 + g] = b.ConstRandom(Indexed("ln", g), DType::kInt16, {c.cell}, 5000, 30000, Quant(3e-5f, 0));
      else
        ins[20 + g] = b.ConstRandom(Indexed("ln", g), DType::kFloat32, {c.cell}, 0.5, 1.5);
    }
  }
  std::vector<int32_t> out_shape = in_shape;
  out_shape.back() = n_out;
  auto y = b.Tensor("y", act, out_shape, integer ? std::optional(Quant(state_scale, state_zp)) : std::nullopt);
  int op;
  if (c.sequence) {
    tflite::UnidirectionalSequenceLSTMOptionsT o;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
    o.cell_clip = c.cell_clip;
    o.proj_clip = c.proj_clip;
    o.time_major = c.time_major;
    o.asymmetric_quantize_inputs = c.asymmetric;
    op = b.Op(tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM, ins, {y}, o);
  } else {
    tflite::LSTMOptionsT o;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
    o.cell_clip = c.cell_clip;
    o.proj_clip = c.proj_clip;
    o.asymmetric_quantize_inputs = c.asymmetric;
    op = b.Op(tflite::BuiltinOperator_LSTM, ins, {y}, o, /*version=*/4);
  }
  if (integer) {
    std::vector<int32_t> inter;
    for (int g = 0; g < 4; ++g) {
      if (c.layer_norm)
        inter.push_back(b.Tensor(Indexed("gate_inter", g), DType::kInt16, {}, Quant(0.0004f + 0.0001f * g, 0)));
      else
        inter.push_back(b.Tensor(Indexed("gate_inter", g), DType::kFloat32, {}));
    }
    const bool projected = c.output > 0;
    inter.push_back(b.Tensor("hidden", DType::kInt8, {},
                             projected ? Quant(0.006f, c.hidden_zp) : Quant(state_scale, state_zp)));
    b.current().ops[op].intermediates = inter;
  }
  b.Output(y);
  return b.Finish();
}

// Integer LSTM is bit-exact; float and hybrid within rtol 1e-5 (summation order and libm
// sigmoid/tanh differ from TFLite's optimized builds in the last bits).
testing::CompareOptions LstmOptions() {
  testing::CompareOptions o;
  o.max_lsb = 0;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  return o;
}

void ExpectMatches(const LstmCase& c, int invokes = 3) {
  auto report = testing::CompareGraphInvokes(BuildLstm(c), invokes, LstmOptions());
  EXPECT_TRUE(report.ok) << c.Name() << ": " << report.Summary();
}

#define REQUIRE_TFLITE() \
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)"

TEST(LstmConformance, Float) {
  REQUIRE_TFLITE();
  std::vector<LstmCase> cases;
  LstmCase base;
  cases.push_back(base);
  { LstmCase c = base; c.time_major = true; c.batch = 3; cases.push_back(c); }
  { LstmCase c = base; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.cifg = true; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.output = 3; cases.push_back(c); }
  { LstmCase c = base; c.output = 6; c.proj_bias = true; c.proj_clip = 0.3f; cases.push_back(c); }
  { LstmCase c = base; c.cell_clip = 0.4f; c.time = 6; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; c.cifg = true; c.peephole = true; c.output = 3; c.proj_bias = true; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time = 1; c.input = 1; c.cell = 1; cases.push_back(c); }
  { LstmCase c = base; c.batch = 4; c.time = 7; c.input = 17; c.cell = 13; c.time_major = true; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.activation = tflite::ActivationFunctionType_RELU; cases.push_back(c); }
  { LstmCase c = base; c.sequence = false; c.peephole = true; cases.push_back(c); }
  for (const auto& c : cases) ExpectMatches(c);
}

TEST(LstmConformance, Hybrid) {
  REQUIRE_TFLITE();
  // TFLite's hybrid arithmetic (the default dequantizes the weights and runs in float: LstmFast
  // checks that path).
  const testing::ScopedEnv hybrid_arithmetic("EDGEOPT_HYBRID_DEQUANT", "0");
  std::vector<LstmCase> cases;
  LstmCase base;
  base.kind = Kind::kHybrid;
  cases.push_back(base);
  { LstmCase c = base; c.asymmetric = true; cases.push_back(c); }
  { LstmCase c = base; c.time_major = true; c.batch = 3; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.cifg = true; c.output = 3; c.proj_bias = true; c.asymmetric = true; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; c.cell_clip = 0.5f; cases.push_back(c); }
  { LstmCase c = base; c.batch = 3; c.time = 5; c.input = 19; c.cell = 11; c.output = 7; c.asymmetric = true; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.sequence = false; c.asymmetric = true; cases.push_back(c); }
  { LstmCase c = base; c.output = 6; c.proj_bias = true; cases.push_back(c); }
  { LstmCase c = base; c.output = 6; c.cifg = true; c.batch = 1; cases.push_back(c); }
  for (const auto& c : cases) ExpectMatches(c);
}

TEST(LstmConformance, Int8BitExact) {
  REQUIRE_TFLITE();
  std::vector<LstmCase> cases;
  LstmCase base;
  base.kind = Kind::kInt8;
  cases.push_back(base);
  { LstmCase c = base; c.time_major = true; c.batch = 3; cases.push_back(c); }
  { LstmCase c = base; c.cifg = true; cases.push_back(c); }
  { LstmCase c = base; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.output = 3; c.proj_bias = true; c.hidden_zp = 5; cases.push_back(c); }
  { LstmCase c = base; c.output = 6; c.proj_clip = 0.2f; c.cell_clip = 0.5f; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; cases.push_back(c); }
  { LstmCase c = base; c.batch = 3; c.time = 9; c.input = 21; c.cell = 16; cases.push_back(c); }
  { LstmCase c = base; c.cell_scale_log2 = -12; c.peephole = true; c.cifg = true; cases.push_back(c); }
  { LstmCase c = base; c.cell_scale_log2 = -10; c.time_major = true; c.output = 5; c.hidden_zp = -7; cases.push_back(c); }
  { LstmCase c = base; c.sequence = false; c.batch = 3; cases.push_back(c); }
  for (const auto& c : cases) ExpectMatches(c);
}

// A default interpreter of `fast_graph` and a reference-kernels-only one of `ref_graph`, both
// allocated (the LstmFast tests compare them).
struct FastAndReference {
  std::unique_ptr<rt::Interpreter> fast, ref;
};
// cpu: the features the fast interpreter may use (null: this CPU's).
Expected<FastAndReference> MakeFastAndReference(Graph fast_graph, Graph ref_graph, const rt::CpuFeatures* cpu = nullptr) {
  ASSIGN_OR_RETURN(auto fast_model, rt::Model::FromGraph(std::move(fast_graph)));
  ASSIGN_OR_RETURN(auto ref_model, rt::Model::FromGraph(std::move(ref_graph)));
  rt::InterpreterOptions ref_opt, fast_opt;
  ref_opt.reference_kernels_only = true;
  fast_opt.cpu = cpu;
  FastAndReference r;
  ASSIGN_OR_RETURN(r.fast, rt::Interpreter::Create(fast_model, fast_opt));
  ASSIGN_OR_RETURN(r.ref, rt::Interpreter::Create(ref_model, ref_opt));
  RETURN_IF_ERROR(r.fast->AllocateTensors());
  RETURN_IF_ERROR(r.ref->AllocateTensors());
  return r;
}

// The fast float path (LstmCell::PrepareFast) against the reference float steps, over
// shapes that cross the packing's 16-column panels and the GEMM's AVX2 / AVX-512 depth split,
// every cell option, both layouts, and state carried over 3 invokes. Tolerance per output:
// 1e-5 * (1 + sqrt(n_input + n_cell + n_output)) * (|reference| + 1): float rounding of the dot
// products in another summation order grows with their length (e.g. 5e-5 on outputs ~0.5 with
// 100 inputs, 70 cells and a 40-wide projection), plus the vectorized sigmoid / tanh (relative
// error <= 3e-7), compounded over up to 40 steps. A wrong gate, peephole or projection is off by
// orders of magnitude more. The worst error seen is printed.
TEST(LstmFast, FloatMatchesReference) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2+FMA: LSTM runs the reference steps only";
  std::vector<LstmCase> cases;
  LstmCase base;
  cases.push_back(base);
  { LstmCase c = base; c.time_major = true; c.batch = 3; cases.push_back(c); }
  { LstmCase c = base; c.peephole = true; c.time = 11; cases.push_back(c); }
  { LstmCase c = base; c.cifg = true; c.peephole = true; c.cell = 17; cases.push_back(c); }
  { LstmCase c = base; c.output = 3; c.cell = 33; cases.push_back(c); }
  { LstmCase c = base; c.output = 19; c.proj_bias = true; c.proj_clip = 0.3f; c.cell = 7; cases.push_back(c); }
  { LstmCase c = base; c.cell_clip = 0.4f; c.time = 40; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; c.cell = 9; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; c.cifg = true; c.peephole = true; c.output = 3; c.proj_bias = true; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time = 1; c.input = 1; c.cell = 1; cases.push_back(c); }
  { LstmCase c = base; c.batch = 4; c.time = 7; c.input = 17; c.cell = 13; c.time_major = true; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time = 28; c.input = 28; c.cell = 20; cases.push_back(c); }  // mnist_lstm's shape
  { LstmCase c = base; c.batch = 2; c.time = 9; c.input = 100; c.cell = 70; c.output = 40; c.time_major = true; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time = 5; c.input = 64; c.cell = 64; cases.push_back(c); }
  { LstmCase c = base; c.activation = tflite::ActivationFunctionType_RELU; cases.push_back(c); }
  { LstmCase c = base; c.activation = tflite::ActivationFunctionType_RELU6; c.cifg = true; cases.push_back(c); }
  { LstmCase c = base; c.sequence = false; c.peephole = true; cases.push_back(c); }
  { LstmCase c = base; c.sequence = false; c.batch = 3; c.cell = 21; c.output = 5; cases.push_back(c); }
  // Hybrid cells (int8 weights) run the same path on their dequantized weights: checked against
  // the float reference steps of the dequantized model (`edgeopt dequantize`'s rewrite). Not the
  // 100-input case: with its int8 weights (up to +-1, vs +-0.6 for the float cases) the two agree
  // over the 9 steps of the first invoke, then the recurrence amplifies their summation-order
  // differences (5e-4 after 18 steps, 0.1 after 27), so no rounding tolerance holds.
  for (size_t i = 0, n = cases.size(); i < n; i += 2) {
    if (cases[i].input >= 100) continue;
    LstmCase c = cases[i];
    c.kind = Kind::kHybrid;
    cases.push_back(c);
  }
  std::mt19937 rng(5);
  double worst = 0;
  for (const auto& c : cases) {
    Graph g = BuildLstm(c);
    Graph float_twin = g;
    if (c.kind == Kind::kHybrid) {
      ASSERT_TRUE(optimize::DequantizeModel(float_twin).ok()) << c.Name();
    }
    auto pair = MakeFastAndReference(std::move(g), std::move(float_twin));
    ASSERT_TRUE(pair.ok()) << c.Name() << ": " << pair.status().ToString();
    rt::Interpreter* fast = pair->fast.get();
    rt::Interpreter* ref = pair->ref.get();
    const std::string variant = fast->ops()[0].variant;
    const std::string want = c.kind == Kind::kHybrid ? "/hybrid/dequant-avx" : "/f32/avx";
    EXPECT_NE(variant.find(want), std::string::npos) << c.Name() << ": " << variant;
    EXPECT_EQ(ref->ops()[0].variant.substr(variant.find('/')), "/f32/ref") << c.Name();
    EXPECT_GT(fast->packed_weight_bytes(), 0u) << c.Name();
    const int64_t n = fast->input(0)->num_elements();
    const int n_out = c.output > 0 ? c.output : c.cell;
    const double tol = 1e-5 * (1 + std::sqrt(static_cast<double>(c.input + c.cell + n_out)));
    std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
    for (int invoke = 0; invoke < 3; ++invoke) {
      for (int64_t i = 0; i < n; ++i) fast->input(0)->data_as<float>()[i] = ref->input(0)->data_as<float>()[i] = dist(rng);
      ASSERT_TRUE(fast->Invoke().ok()) << c.Name();
      ASSERT_TRUE(ref->Invoke().ok()) << c.Name();
      const rt::RtTensor* got = fast->output(0);
      const rt::RtTensor* want = ref->output(0);
      ASSERT_EQ(got->shape, want->shape);
      int bad = 0;
      for (int64_t i = 0; i < want->num_elements(); ++i) {
        const double g = got->data_as<float>()[i], w = want->data_as<float>()[i];
        const double err = std::fabs(g - w);
        worst = std::max(worst, err / (tol * (std::fabs(w) + 1)));
        if (!(err <= tol * (std::fabs(w) + 1)) && bad++ < 5)
          ADD_FAILURE() << c.Name() << " invoke " << invoke << " element " << i << ": fast " << g << " reference " << w;
      }
    }
  }
  std::printf("LSTM fast vs reference: worst error %.3f of the tolerance\n", worst);
}

// Integer cells on the fast paths against the reference steps, bit for bit: with AVX-512 VNNI
// (LstmCell::UseFastIntDot: each side's gates stacked into one packed product, VnniRowsDot; with
// one batch row every gate's rows requantized in one pass, RequantLanesAvx512; the cell update
// and hidden state on AVX-512; cells without peephole, layer norm and projection a whole
// sequence per batch row, RunIntLstmRowAvx512, forwards through time-major and batch-major
// inputs) and, capped to AVX2, the AVX2 dot products (DotRowsS8Avx2: four
// rows at a time, the tail as the chunk ending at the row's end). Shapes: rows shorter and longer
// than the 16-value vector and the 64-byte input copy, with tails, row counts that are not
// multiples of 4 or 16 blocks, rows longer than DotRowsS8Avx2's widened-input buffer; every cell
// option with one batch row and with several, both cell-state scales at the ends of the range.
TEST(LstmFast, Int8MatchesReferenceBitForBit) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2+FMA: integer LSTM runs the portable loop only";
  std::vector<LstmCase> cases;
  LstmCase base;
  base.kind = Kind::kInt8;
  cases.push_back(base);
  { LstmCase c = base; c.time_major = true; c.batch = 3; c.input = 16; c.cell = 16; cases.push_back(c); }
  { LstmCase c = base; c.cifg = true; c.peephole = true; c.input = 17; c.cell = 33; cases.push_back(c); }
  { LstmCase c = base; c.output = 19; c.proj_bias = true; c.hidden_zp = 5; c.input = 47; c.cell = 40; cases.push_back(c); }
  { LstmCase c = base; c.layer_norm = true; c.input = 100; c.cell = 31; c.time = 6; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time = 28; c.input = 28; c.cell = 20; cases.push_back(c); }  // mnist_lstm's shape
  { LstmCase c = base; c.sequence = false; c.batch = 3; c.input = 65; cases.push_back(c); }
  { LstmCase c = base; c.input = 5; c.cell = 7; cases.push_back(c); }               // rows shorter than 16
  { LstmCase c = base; c.input = 1100; c.cell = 6; c.time = 2; cases.push_back(c); }  // past DotRowsS8Avx2's chunks
  // One batch row (the per-row requantization of all gates at once) with every option.
  { LstmCase c = base; c.batch = 1; c.cifg = true; c.peephole = true; c.cell_clip = 0.3f; c.input = 70; c.cell = 33; c.time = 24; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.cifg = true; c.input = 20; c.cell = 48; c.time = 24; cases.push_back(c); }
  { LstmCase c = base; c.batch = 2; c.cell_clip = 0.02f; c.input = 24; c.cell = 20; c.time = 12; cases.push_back(c); }  // clip reached
  { LstmCase c = base; c.batch = 1; c.input = 70; c.cell = 130; c.time = 5; cases.push_back(c); }  // 9 cell blocks, a tail of 2
  { LstmCase c = base; c.batch = 1; c.output = 19; c.proj_bias = true; c.proj_clip = 0.4f; c.hidden_zp = -7; c.input = 9; c.cell = 40; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.layer_norm = true; c.peephole = true; c.input = 64; c.cell = 64; c.time = 5; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.time_major = true; c.cell_scale_log2 = -15; c.input = 3; c.cell = 1; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.cell_scale_log2 = -9; c.cell_clip = 2.0f; c.input = 130; c.cell = 17; cases.push_back(c); }
  { LstmCase c = base; c.batch = 1; c.sequence = false; c.input = 12; c.cell = 36; cases.push_back(c); }
  const rt::CpuFeatures avx2 = rt::CapFeatures(rt::Cpu(), "avx2");
  struct Cpu {
    const rt::CpuFeatures* features;
    std::string variant;
  };
  std::vector<Cpu> cpus = {{nullptr, rt::Cpu().has_avx512_vnni() ? "/int8/avx512vnni" : rt::Cpu().has_avx512() ? "/int8/avx512" : "/int8/avx2"}};
  if (rt::Cpu().has_avx512()) cpus.push_back({&avx2, "/int8/avx2"});
  std::mt19937 rng(9);
  for (const Cpu& cpu : cpus) {
    for (const auto& c : cases) {
      const std::string name = c.Name() + " (" + cpu.variant + ")";
      auto pair = MakeFastAndReference(BuildLstm(c), BuildLstm(c), cpu.features);
      ASSERT_TRUE(pair.ok()) << name << ": " << pair.status().ToString();
      rt::Interpreter* fast = pair->fast.get();
      rt::Interpreter* ref = pair->ref.get();
      const std::string variant = fast->ops()[0].variant;
      // On VNNI, cells without peephole, layer norm and projection run whole sequences per batch row.
      const bool sequence = cpu.variant == "/int8/avx512vnni" && !c.peephole && !c.layer_norm && c.output == 0;
      const std::string want = cpu.variant + (sequence ? "/sequence" : "");
      EXPECT_TRUE(variant.size() >= want.size() && variant.compare(variant.size() - want.size(), want.size(), want) == 0)
          << name << ": runs " << variant << ", not " << want;
      EXPECT_NE(ref->ops()[0].variant.find("/int8/ref"), std::string::npos) << name;
      const int64_t n = fast->input(0)->num_elements();
      std::uniform_int_distribution<int> dist(-128, 127);
      for (int invoke = 0; invoke < 3; ++invoke) {
        for (int64_t i = 0; i < n; ++i)
          fast->input(0)->data_as<int8_t>()[i] = ref->input(0)->data_as<int8_t>()[i] = static_cast<int8_t>(dist(rng));
        ASSERT_TRUE(fast->Invoke().ok()) << name;
        ASSERT_TRUE(ref->Invoke().ok()) << name;
        const rt::RtTensor* got = fast->output(0);
        const rt::RtTensor* want = ref->output(0);
        ASSERT_EQ(got->bytes, want->bytes);
        EXPECT_EQ(std::memcmp(got->data, want->data, got->bytes), 0) << name << " invoke " << invoke;
      }
    }
  }
}

// RequantRowsAvx512 against quant_utils.h's scalar functions: accumulators at the int32 limits
// and random, every kind of shift (left, none, right up to 31), multipliers from 1 to 2^31 - 1,
// int16 and int8 outputs with their saturation, row counts with tails.
template <typename Out>
void CheckRequantRows(std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int> out_dist(std::numeric_limits<Out>::min(), std::numeric_limits<Out>::max());
  for (int shift : {-31, -24, -13, -7, -1, 0, 1, 3, 9}) {
    for (int32_t m : {1, 1 << 30, 1518500250, 2147483647, 1073741825}) {
      for (int32_t zp : {-5, 0, 91}) {
        const int n = 37;
        std::vector<int32_t> sums(n), bias(n);
        std::vector<Out> out(n), want(n);
        for (int i = 0; i < n; ++i) {
          sums[i] = i == 0 ? std::numeric_limits<int32_t>::min() : i == 1 ? std::numeric_limits<int32_t>::max()
                    : i < 20 ? any(rng) >> (i % 24) : any(rng) >> 12;
          bias[i] = i < 2 ? 0 : any(rng) >> 16;
          out[i] = want[i] = static_cast<Out>(out_dist(rng));
        }
        for (int i = 0; i < n; ++i) {
          const int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(bias[i]) + static_cast<uint32_t>(sums[i]));
          // The sums wrap in int32 as the reference loop's int32 adds do on this machine.
          const auto v = static_cast<int32_t>(static_cast<uint32_t>(kernels::MultiplyByQuantizedMultiplier(acc, m, shift)) +
                                              static_cast<uint32_t>(zp) + static_cast<uint32_t>(int32_t{want[i]}));
          want[i] = static_cast<Out>(std::clamp<int32_t>(v, std::numeric_limits<Out>::min(), std::numeric_limits<Out>::max()));
        }
        kernels::lstm::RequantRowsAvx512(sums.data(), bias.data(), n, m, shift, zp, out.data());
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(out[i], want[i]) << "row " << i << " sum " << sums[i] << " bias " << bias[i] << " m " << m
                                     << " shift " << shift << " zp " << zp << " (" << sizeof(Out) * 8 << "-bit out)";
      }
    }
  }
}

TEST(LstmFast, RequantRowsAvx512MatchesScalar) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the integer LSTM requantizes with the scalar loop";
  std::mt19937 rng(21);
  CheckRequantRows<int16_t>(rng);
  CheckRequantRows<int8_t>(rng);
}

// RequantLanesAvx512 (a multiplier and shift per row: the stacked gates of one batch row) against
// the scalar functions: three gates of 13 rows (so the 16-row vectors straddle gates, the last one
// masked) with every combination of the shifts and multipliers above, accumulators at the int32
// limits and random, int16 outputs with their saturation; and LaneRequant::Set declining the
// multipliers the vector form does not take.
TEST(LstmFast, RequantLanesAvx512MatchesScalar) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the integer LSTM requantizes with the scalar loop";
  std::mt19937 rng(22);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int> out_dist(-32768, 32767);
  const int shifts[] = {-31, -24, -13, -7, -1, 0, 1, 3, 9};
  const int32_t mults[] = {1, 1 << 30, 1518500250, 2147483647, 1073741825};
  constexpr int kRows = 13, kGates = 3;
  for (int trial = 0; trial < 200; ++trial) {
    int32_t m[kGates];
    int sh[kGates];
    std::vector<int32_t> biases[kGates];
    for (int j = 0; j < kGates; ++j) {
      m[j] = mults[(trial + j * 2) % 5];
      sh[j] = shifts[(trial / 5 + j * 4) % 9];
      for (int i = 0; i < kRows; ++i) biases[j].push_back(any(rng) >> 16);
    }
    kernels::lstm::LaneRequant q;
    ASSERT_TRUE(q.Set(m, sh, biases, kGates, kRows));
    std::vector<int32_t> sums(kGates * kRows);
    std::vector<int16_t> out(sums.size()), want(sums.size());
    for (size_t r = 0; r < sums.size(); ++r) {
      sums[r] = r == 0 ? std::numeric_limits<int32_t>::min() : r == 1 ? std::numeric_limits<int32_t>::max() : any(rng) >> (r % 24);
      out[r] = want[r] = static_cast<int16_t>(out_dist(rng));
      const int j = static_cast<int>(r) / kRows;
      const int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(biases[j][r % kRows]) + static_cast<uint32_t>(sums[r]));
      const auto v = static_cast<int32_t>(static_cast<uint32_t>(kernels::MultiplyByQuantizedMultiplier(acc, m[j], sh[j])) +
                                          static_cast<uint32_t>(int32_t{want[r]}));
      want[r] = static_cast<int16_t>(std::clamp<int32_t>(v, -32768, 32767));
    }
    kernels::lstm::RequantLanesAvx512(sums.data(), q, out.data());
    for (size_t r = 0; r < sums.size(); ++r)
      ASSERT_EQ(out[r], want[r]) << "row " << r << " sum " << sums[r] << " m " << m[r / kRows] << " shift " << sh[r / kRows];
  }
  kernels::lstm::LaneRequant q;
  const int32_t bad_m[1] = {std::numeric_limits<int32_t>::min()};
  const int ok_shift[1] = {0}, bad_shift[1] = {-32};
  const int32_t ok_m[1] = {1 << 30};
  const std::vector<int32_t> bias[1] = {std::vector<int32_t>(4, 0)};
  EXPECT_FALSE(q.Set(bad_m, ok_shift, bias, 1, 4));
  EXPECT_FALSE(q.Set(ok_m, bad_shift, bias, 1, 4));
}

// The integer LSTM's sigmoid / tanh tables (lstm_math.h) against the fixed-point functions they
// are built from, over every int16 input and every supported tanh format.
TEST(LstmInt8Tables, EqualTheFixedPointFunctions) {
  std::vector<int16_t> all(65536), got(65536);
  for (int x = -32768; x <= 32767; ++x) all[static_cast<size_t>(x + 32768)] = static_cast<int16_t>(x);
  got = all;
  kernels::lstm::IntSigmoid(got.data(), 65536);
  int bad = 0;
  for (size_t i = 0; i < all.size(); ++i)
    if (got[i] != kernels::fxp::Logistic(kernels::fxp::FixedPoint<int16_t, 3>::FromRaw(all[i])).raw && bad++ < 3)
      ADD_FAILURE() << "sigmoid of " << all[i] << ": " << got[i];
  auto check_tanh = [&](auto bits) {
    constexpr int kI = decltype(bits)::value;
    kernels::lstm::IntTanh(kI, all.data(), 65536, got.data());
    for (size_t i = 0; i < all.size(); ++i)
      if (got[i] != kernels::fxp::Tanh(kernels::fxp::FixedPoint<int16_t, kI>::FromRaw(all[i])).raw && bad++ < 3)
        ADD_FAILURE() << "tanh Q" << kI << " of " << all[i] << ": " << got[i];
  };
  check_tanh(std::integral_constant<int, 0>());
  check_tanh(std::integral_constant<int, 1>());
  check_tanh(std::integral_constant<int, 2>());
  check_tanh(std::integral_constant<int, 3>());
  check_tanh(std::integral_constant<int, 4>());
  check_tanh(std::integral_constant<int, 5>());
  check_tanh(std::integral_constant<int, 6>());
  EXPECT_EQ(bad, 0);
}

// Keeps only the LSTM op of a real model (its weights, states, intermediates).
Graph ExtractFirstOp(Graph g, tflite::BuiltinOperator code) {
  Subgraph& sg = g.main();
  for (size_t i = 0; i < sg.ops.size(); ++i) {
    if (sg.ops[i].code != code) continue;
    Operator op = sg.ops[i];
    sg.ops = {op};
    sg.inputs = {op.inputs[0]};
    sg.outputs = {op.outputs[0]};
    break;
  }
  g.signatures.clear();
  g.DropUnused();
  return g;
}

TEST(LstmConformance, RealMnistLstmOps) {
  REQUIRE_TFLITE();
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const char* name : {"mnist_lstm_float.tflite", "mnist_lstm_int8.tflite"}) {
    const std::string path = testing::SharedModel(name);
    if (path.empty()) continue;
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    Graph one = ExtractFirstOp(std::move(*g), tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM);
    ASSERT_EQ(one.main().ops.size(), 1u);
    testing::CompareOptions o;
    o.max_lsb = 0;
    o.rtol = 1e-5;
    o.float_lo = 0;  // MNIST rows in [0, 1]
    auto report = testing::CompareGraphInvokes(one, 3, o);
    EXPECT_TRUE(report.ok) << name << ": " << report.Summary();
  }
}

Status PrepareGraph(Graph g) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
  return interp->AllocateTensors();
}

TEST(LstmErrors, BadModels) {
  auto expect_error = [](Graph g, const std::string& text) {
    Status st = PrepareGraph(std::move(g));
    EXPECT_FALSE(st.ok()) << "expected an error containing '" << text << "'";
    EXPECT_NE(st.message().find("UNIDIRECTIONAL_SEQUENCE_LSTM"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(text), std::string::npos) << st.ToString();
  };
  {
    Graph g = BuildLstm({});
    g.main().ops[0].inputs.resize(19);
    expect_error(std::move(g), "expects 20 or 24 inputs");
  }
  {
    Graph g = BuildLstm({});
    g.main().tensors[g.main().ops[0].inputs[18]].is_variable = false;
    expect_error(std::move(g), "must be a variable tensor");
  }
  {
    Graph g = BuildLstm({});
    g.main().ops[0].inputs[3] = kNoTensor;  // input-to-cell weights
    expect_error(std::move(g), "input-to-gate weights (input 3) is missing");
  }
  {
    LstmCase c;
    c.kind = Kind::kInt8;
    Graph g = BuildLstm(c);
    g.main().ops[0].intermediates.clear();
    expect_error(std::move(g), "needs 5 intermediate tensors");
  }
  {
    LstmCase c;
    c.kind = Kind::kInt8;
    Graph g = BuildLstm(c);
    g.main().tensors[g.main().ops[0].inputs[19]].quant = Quant(0.0003f, 0);
    expect_error(std::move(g), "must be a power of two");
  }
  {
    Graph g = BuildLstm({});
    g.main().tensors[0].shape = {2, 15};
    expect_error(std::move(g), "input must have rank 3");
  }
  {
    Graph g = BuildLstm({});
    g.main().tensors[g.main().ops[0].inputs[2]].sparsity = std::make_shared<tflite::SparsityParametersT>();
    expect_error(std::move(g), "is not supported; densify the model");
  }
}

}  // namespace
}  // namespace edgeopt
