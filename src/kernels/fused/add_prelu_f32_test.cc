// A float32 ADD + per-channel PRELU run as one op (add_prelu_f32.cc): generated pairs run fused
// and unfused (InterpreterOptions::fuse_ops) in one process give the same bits (signed zeros and
// NaN included), for ADD activations, alpha shapes [C] / [1, 1, C] / a float16 DEQUANTIZE between
// the ops, channel counts around the vector width, ranks 2 and 4, 1 and 2 threads; the pairs that
// must stay apart (alpha per position, the sum read elsewhere, a broadcast ADD) do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "graph/builder.h"
#include "runtime/cpu.h"
#include "kernels/fused/fused_test_util.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

struct AddPreluCase {
  std::vector<int32_t> shape;
  tflite::ActivationFunctionType act = tflite::ActivationFunctionType_NONE;  // the ADD's
  int alpha_rank = 3;        // [C] (1) or [1, 1, C] (3); 0: per position [H, W, C] (no fusion)
  bool float16 = false;      // alpha a float16 constant through a DEQUANTIZE placed between the ops
  bool reused = false;       // the sum is also a subgraph output (no fusion)
  bool broadcast = false;    // the ADD's second operand has 1 channel (no fusion)
  bool Fuses() const { return alpha_rank != 0 && !reused && !broadcast; }
  std::string Name() const {
    std::string n = "add+prelu";
    for (int32_t d : shape) {
      n += ' ';
      n += std::to_string(d);
    }
    n += " act " + std::to_string(static_cast<int>(act)) + " alpha rank " + std::to_string(alpha_rank);
    for (auto [on, what] : {std::pair{float16, " float16"}, {reused, " reused"}, {broadcast, " broadcast"}})
      if (on) n.append(what);
    return n;
  }
};

Graph MakeAddPrelu(const AddPreluCase& c) {
  GraphBuilder b(23);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  const int32_t ch = c.shape.back();
  auto x = b.Input("x", DType::kFloat32, c.shape);
  std::vector<int32_t> other_shape = c.shape;
  if (c.broadcast) other_shape.back() = 1;
  auto y = b.Input("y", DType::kFloat32, other_shape);
  auto sum = b.Tensor("sum", DType::kFloat32, c.shape);
  tflite::AddOptionsT ao;
  ao.fused_activation_function = c.act;
  b.Op(tflite::BuiltinOperator_ADD, {x, y}, {sum}, ao);
  std::vector<int32_t> alpha_shape = c.alpha_rank == 1   ? std::vector<int32_t>{ch}
                                     : c.alpha_rank == 3 ? std::vector<int32_t>{1, 1, ch}
                                                         : std::vector<int32_t>(c.shape.end() - 3, c.shape.end());
  int64_t n = 1;
  for (int32_t d : alpha_shape) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (float& v : values) v = u(rng);
  int32_t alpha;
  if (c.float16) {
    std::vector<uint16_t> half;
    for (float v : values) half.push_back(FloatToHalf(v));
    auto a16 = b.Const<uint16_t>("alpha16", DType::kFloat16, alpha_shape, half);
    alpha = b.Tensor("alpha", DType::kFloat32, alpha_shape);
    b.Op(tflite::BuiltinOperator_DEQUANTIZE, {a16}, {alpha});
  } else {
    alpha = b.Const<float>("alpha", DType::kFloat32, alpha_shape, values);
  }
  auto out = b.Tensor("out", DType::kFloat32, c.shape);
  b.Op(tflite::BuiltinOperator_PRELU, {sum, alpha}, {out});
  b.Output(out);
  if (c.reused) b.Output(sum);
  return b.Finish();
}

TEST(FusedAddPreluF32, MatchesUnfusedBitForBit) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: the ADD + PRELU fusion runs only there";
  using A = tflite::ActivationFunctionType;
  std::vector<AddPreluCase> cases = {
      {{1, 96, 96, 16}},  // MediaPipe face landmark
      {{1, 48, 48, 32}, A::ActivationFunctionType_NONE, 1},
      {{1, 24, 24, 64}, A::ActivationFunctionType_NONE, 3, true},
      {{2, 7, 5, 17}, A::ActivationFunctionType_RELU6},
      {{1, 3, 9, 5}, A::ActivationFunctionType_RELU_N1_TO_1, 1},
      {{1, 4, 4, 1}, A::ActivationFunctionType_RELU},
      {{37, 12}, A::ActivationFunctionType_NONE, 1},
      {{1, 12, 12, 144}, A::ActivationFunctionType_NONE, 3, true},
      {{1, 70, 60, 48}},  // split over 2 threads
      // Kept apart.
      {{1, 5, 5, 8}, A::ActivationFunctionType_NONE, 0},
      {{1, 5, 5, 8}, A::ActivationFunctionType_NONE, 3, false, true},
      {{1, 5, 5, 8}, A::ActivationFunctionType_NONE, 3, false, false, true},
  };
  std::mt19937 rng(5);
  for (const AddPreluCase& c : cases) {
    auto model = rt::Model::FromGraph(MakeAddPrelu(c));
    ASSERT_TRUE(model.ok()) << c.Name() << ": " << model.status().ToString();
    auto inputs = testing::RandomFloatInputs(**model, rng, -2.0f, 2.0f);
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<float>& v = inputs[k];
      // Sums of zeros of both signs (the select keeps -0.0 + -0.0 = -0.0), and NaN.
      for (size_t e = 0; e < v.size(); e += 5) v[e] = k == 0 ? -0.0f : (e % 10 == 0 ? -0.0f : 0.0f);
      for (size_t e = 7; e < v.size(); e += 97) v[e] = std::numeric_limits<float>::quiet_NaN();
    }
    for (int threads : {1, 2}) {
      const std::string what = c.Name() + " threads " + std::to_string(threads);
      const auto fused = testing::RunWithFusion(*model, inputs, threads, true);
      const auto plain = testing::RunWithFusion(*model, inputs, threads, false);
      bool any = false;
      for (const std::string& v : fused.variants) any = any || v == "fused/add+prelu/f32/avx512";
      EXPECT_EQ(any, c.Fuses()) << what;
      ASSERT_EQ(fused.outs.size(), plain.outs.size()) << what;
      for (size_t k = 0; k < plain.outs.size(); ++k) EXPECT_EQ(fused.outs[k], plain.outs[k]) << what << " output " << k;
    }
  }
}

// Inputs resized so that the channels no longer match alpha: an error naming alpha and the
// input, not a computation past alpha's values.
TEST(FusedAddPreluF32, ResizedChannelsFail) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: the ADD + PRELU fusion runs only there";
  auto model = rt::Model::FromGraph(MakeAddPrelu({{1, 6, 6, 16}}));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto interp = rt::Interpreter::Create(*model, rt::InterpreterOptions());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  EXPECT_EQ((*interp)->ops().front().variant, "fused/add+prelu/f32/avx512");
  ASSERT_TRUE((*interp)->ResizeInput(0, {1, 6, 6, 32}).ok());
  ASSERT_TRUE((*interp)->ResizeInput(1, {1, 6, 6, 32}).ok());
  const Status st = (*interp)->AllocateTensors();
  const Status run = st.ok() ? (*interp)->Invoke() : st;
  EXPECT_FALSE(run.ok());
  EXPECT_NE(run.message().find("alpha"), std::string::npos) << run.ToString();
}

}  // namespace
}  // namespace edgeopt
