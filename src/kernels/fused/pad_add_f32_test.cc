// A float32 channel PAD + ADD run as one op (pad_add_f32.cc): generated pairs run fused and
// unfused (InterpreterOptions::fuse_ops) in one process give the same bits, signed zeros
// included (-0.0 + the PAD's +0.0 is +0.0), for both ADD operand orders, ADD activations, a
// standalone clamp after the ADD, channel counts around the vector width, ranks 2 and 4, batch 2,
// 1 and 2 threads; the pairs that must stay apart (spatial or leading channel padding, the padded
// tensor read elsewhere, a broadcast ADD) do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "kernels/fused/fused_test_util.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

struct PadAddCase {
  std::vector<int32_t> in_shape;  // the PAD's input; the last axis is padded to `channels`
  int channels;
  bool padded_first = true;  // ADD(padded, other) or ADD(other, padded)
  tflite::ActivationFunctionType act = tflite::ActivationFunctionType_NONE;  // the ADD's
  int trailing = 0;          // a standalone clamp op after the ADD (0: none)
  bool spatial = false;      // the PAD also pads axis 1 (no fusion)
  bool leading = false;      // the channels go before the input's (no fusion)
  bool reused = false;       // the padded tensor is also a subgraph output (no fusion)
  bool broadcast = false;    // the other operand has 1 channel (no fusion)
  bool Fuses() const { return !spatial && !leading && !reused && !broadcast; }
  std::string Name() const {
    std::string n = "pad";
    for (int32_t d : in_shape) {
      n += ' ';
      n += std::to_string(d);
    }
    n += " -> " + std::to_string(channels) + (padded_first ? " add(pad, y)" : " add(y, pad)") + " act " +
         std::to_string(static_cast<int>(act));
    if (trailing) n += " then " + std::string(tflite::EnumNameBuiltinOperator(static_cast<tflite::BuiltinOperator>(trailing)));
    for (auto [on, what] : {std::pair{spatial, " spatial"}, {leading, " leading"}, {reused, " reused"}, {broadcast, " broadcast"}})
      if (on) n.append(what);
    return n;
  }
};

Graph MakePadAdd(const PadAddCase& c) {
  GraphBuilder b(17);
  const size_t rank = c.in_shape.size();
  const int cin = c.in_shape.back();
  auto x = b.Input("x", DType::kFloat32, c.in_shape);
  std::vector<int32_t> pads(2 * rank, 0);
  if (c.leading) pads[2 * rank - 2] = c.channels - cin;
  else pads[2 * rank - 1] = c.channels - cin;
  std::vector<int32_t> padded_shape = c.in_shape;
  padded_shape.back() = c.channels;
  if (c.spatial) {
    pads[2] = 1;
    padded_shape[1] += 1;
  }
  auto paddings = b.Const<int32_t>("paddings", DType::kInt32, {static_cast<int32_t>(rank), 2}, pads);
  auto padded = b.Tensor("padded", DType::kFloat32, padded_shape);
  b.Op(tflite::BuiltinOperator_PAD, {x, paddings}, {padded}, tflite::PadOptionsT());
  std::vector<int32_t> other_shape = padded_shape;
  if (c.broadcast) other_shape.back() = 1;
  auto other = b.Input("other", DType::kFloat32, other_shape);
  auto sum = b.Tensor("sum", DType::kFloat32, padded_shape);
  tflite::AddOptionsT ao;
  ao.fused_activation_function = c.act;
  b.Op(tflite::BuiltinOperator_ADD, c.padded_first ? std::vector<int32_t>{padded, other} : std::vector<int32_t>{other, padded},
       {sum}, ao);
  int32_t out = sum;
  if (c.trailing) {
    out = b.Tensor("act", DType::kFloat32, padded_shape);
    b.Op(static_cast<tflite::BuiltinOperator>(c.trailing), {sum}, {out});
  }
  b.Output(out);
  if (c.reused) b.Output(padded);
  return b.Finish();
}

TEST(FusedChannelPadAddF32, MatchesUnfusedBitForBit) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: the channel PAD + ADD fusion runs only there";
  using A = tflite::ActivationFunctionType;
  std::vector<PadAddCase> cases = {
      {{1, 48, 48, 32}, 48, true, A::ActivationFunctionType_NONE, tflite::BuiltinOperator_RELU},  // BlazeFace
      {{1, 24, 24, 64}, 96, false, A::ActivationFunctionType_RELU},
      {{2, 7, 5, 5}, 17, true, A::ActivationFunctionType_RELU6},
      {{1, 6, 6, 16}, 32, false, A::ActivationFunctionType_NONE},
      {{1, 3, 9, 31}, 33, true, A::ActivationFunctionType_RELU_N1_TO_1},
      {{1, 4, 4, 1}, 16, false, A::ActivationFunctionType_NONE, tflite::BuiltinOperator_RELU6},
      {{37, 12}, 40, true, A::ActivationFunctionType_NONE},
      {{1, 12, 12, 144}, 192, false, A::ActivationFunctionType_NONE, tflite::BuiltinOperator_RELU},
      {{1, 70, 60, 8}, 24, true, A::ActivationFunctionType_RELU},  // split over 2 threads
      // Kept apart.
      {{1, 5, 5, 8}, 16, true, A::ActivationFunctionType_NONE, 0, true},
      {{1, 5, 5, 8}, 16, true, A::ActivationFunctionType_NONE, 0, false, true},
      {{1, 5, 5, 8}, 16, true, A::ActivationFunctionType_NONE, 0, false, false, true},
      {{1, 5, 5, 8}, 16, true, A::ActivationFunctionType_NONE, 0, false, false, false, true},
  };
  std::mt19937 rng(5);
  for (const PadAddCase& c : cases) {
    auto model = rt::Model::FromGraph(MakePadAdd(c));
    ASSERT_TRUE(model.ok()) << c.Name() << ": " << model.status().ToString();
    auto inputs = testing::RandomFloatInputs(**model, rng, -2.0f, 2.0f);
    // Signed zeros: -0.0 + the PAD's +0.0 must give +0.0, as the two ops do.
    for (std::vector<float>& v : inputs)
      for (size_t e = 0; e < v.size(); e += 3) v[e] = -0.0f;
    for (int threads : {1, 2}) {
      const std::string what = c.Name() + " threads " + std::to_string(threads);
      const auto fused = testing::RunWithFusion(*model, inputs, threads, true);
      const auto plain = testing::RunWithFusion(*model, inputs, threads, false);
      EXPECT_EQ(fused.variants.front().rfind("fused/pad+add/f32/avx512", 0) == 0, c.Fuses()) << what << ": " << fused.variants.front();
      if (c.Fuses()) {
        EXPECT_EQ(fused.variants.front().find("+relu") != std::string::npos, c.trailing != 0) << what << ": " << fused.variants.front();
      }
      ASSERT_EQ(fused.outs.size(), plain.outs.size()) << what;
      for (size_t k = 0; k < plain.outs.size(); ++k) EXPECT_EQ(fused.outs[k], plain.outs[k]) << what << " output " << k;
    }
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// Inputs resized so that the padded tensor no longer has the other operand's shape: an error
// naming the PAD and both shapes, as the unfused ADD reports a mismatch, not a computation.
TEST(FusedChannelPadAddF32, ResizedInputsThatNoLongerMatchFail) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: the channel PAD + ADD fusion runs only there";
  PadAddCase c{{1, 6, 6, 16}, 32};
  auto model = rt::Model::FromGraph(MakePadAdd(c));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (bool fuse : {true, false}) {
    rt::InterpreterOptions io;
    io.fuse_ops = fuse;
    auto interp = rt::Interpreter::Create(*model, io);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    EXPECT_EQ((*interp)->ops().front().variant.rfind("fused/pad+add", 0) == 0, fuse) << (*interp)->ops().front().variant;
    ASSERT_TRUE((*interp)->ResizeInput(0, {1, 6, 6, 20}).ok());  // padded to 36 channels, the other has 32
    const Status st = (*interp)->AllocateTensors();
    const Status run = st.ok() ? (*interp)->Invoke() : st;
    EXPECT_FALSE(run.ok()) << (fuse ? "fused" : "unfused");
    if (fuse) {
      EXPECT_NE(run.message().find("PAD"), std::string::npos) << run.ToString();
    }
  }
}

}  // namespace
}  // namespace edgeopt
