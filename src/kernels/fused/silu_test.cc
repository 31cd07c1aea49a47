// LOGISTIC + MUL(x, LOGISTIC(x)) run as one op (silu.cc): generated pairs (float32, int8 and
// uint8 with every MUL activation the table takes) run fused and unfused
// (InterpreterOptions::fuse_ops) in one process give the same bytes, also over every input byte,
// the pair is shown as "fused/logistic+mul/<type>/...", it matches TFLite 2.9, and the pairs that
// must stay apart (a float MUL activation, the logistic read elsewhere or a subgraph output, a
// MUL by another tensor, a broadcast) do.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

struct SiluCase {
  std::vector<int32_t> shape;
  DType type = DType::kFloat32;
  tflite::ActivationFunctionType act = tflite::ActivationFunctionType_NONE;  // the MUL's (8-bit)
  bool sig_first = false;     // MUL(LOGISTIC(x), x) instead of MUL(x, LOGISTIC(x))
  bool mul_act = false;       // the MUL has RELU6 (no fusion)
  bool sig_output = false;    // the logistic is also a subgraph output (no fusion)
  bool sig_reused = false;    // another op reads the logistic (no fusion)
  bool other_operand = false;  // MUL(x2, LOGISTIC(x)) with another tensor (no fusion)
  bool broadcast = false;     // MUL(LOGISTIC(x), x[..., 1]) broadcast (no fusion)
  bool Fuses() const { return !mul_act && !sig_output && !sig_reused && !other_operand && !broadcast; }
  std::string Name() const {
    std::string n = std::string(DTypeName(type)) + " act " + std::to_string(static_cast<int>(act)) + " shape";
    for (int32_t d : shape) {
      n += ' ';
      n += std::to_string(d);
    }
    for (auto [on, what] : {std::pair{sig_first, " sig*x"}, {mul_act, " relu6"}, {sig_output, " sig output"},
                            {sig_reused, " sig reused"}, {other_operand, " other operand"}, {broadcast, " broadcast"}})
      if (on) n.append(what);
    return n;
  }
};

Graph MakeSilu(const SiluCase& c) {
  GraphBuilder b(13);
  const bool q = c.type != DType::kFloat32;
  auto quant = [&](float scale, int zp) { return q ? std::optional<QuantParams>(Quant(scale, zp)) : std::nullopt; };
  const int zp = c.type == DType::kUInt8 ? 128 : 0;
  const int32_t x = b.Input("x", c.type, c.shape, quant(0.06f, 5 + zp));
  const int32_t sig = b.Tensor("sig", c.type, c.shape, quant(1.0f / 256, zp - 128));
  b.Op(tflite::BuiltinOperator_LOGISTIC, {x}, {sig});
  int32_t other = x;
  if (c.other_operand) other = b.Input("x2", c.type, c.shape, quant(0.06f, 5 + zp));
  if (c.broadcast) {
    std::vector<int32_t> s1 = c.shape;
    s1.back() = 1;
    other = b.Input("x1", c.type, s1, quant(0.06f, 5 + zp));
  }
  const int32_t y = b.Tensor("y", c.type, c.shape, quant(0.035f, zp - 20));
  tflite::MulOptionsT mo;
  mo.fused_activation_function = c.mul_act ? tflite::ActivationFunctionType_RELU6 : c.act;
  b.Op(tflite::BuiltinOperator_MUL, c.sig_first ? std::vector<int32_t>{sig, other} : std::vector<int32_t>{other, sig},
       {y}, mo);
  b.Output(y);
  if (c.sig_output) b.Output(sig);
  if (c.sig_reused) {
    const int32_t z = b.Tensor("z", c.type, c.shape, quant(0.07f, zp));
    tflite::AddOptionsT ao;
    b.Op(tflite::BuiltinOperator_ADD, {sig, x}, {z}, ao);
    b.Output(z);
  }
  return b.Finish();
}

std::vector<SiluCase> Cases() {
  std::vector<SiluCase> v;
  // Lengths around the vector widths and large enough for several tasks at 2 threads.
  const DType f32 = DType::kFloat32;
  const auto none = tflite::ActivationFunctionType_NONE;
  for (auto shape : {std::vector<int32_t>{1, 7}, {1, 5, 5, 3}, {2, 16}, {1, 33}, {1, 40, 37, 16}, {1, 97, 101, 9}})
    for (bool sig_first : {false, true}) v.push_back({shape, f32, none, sig_first});
  v.push_back({{1, 9, 9, 8}, f32, none, false, true});
  // 8-bit: every activation the table takes, both operand orders, sizes for several tasks.
  for (DType t : {DType::kInt8, DType::kUInt8})
    for (auto act : {none, tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU6,
                     tflite::ActivationFunctionType_RELU_N1_TO_1})
      for (bool sig_first : {false, true})
        v.push_back({sig_first ? std::vector<int32_t>{1, 301, 257, 3} : std::vector<int32_t>{1, 17, 19}, t, act,
                     sig_first});
  for (DType t : {f32, DType::kInt8}) {
    v.push_back({{1, 9, 9, 8}, t, none, false, false, true});
    v.push_back({{1, 9, 9, 8}, t, none, true, false, false, true});
    v.push_back({{1, 9, 9, 8}, t, none, false, false, false, false, true});
    v.push_back({{1, 9, 9, 8}, t, none, true, false, false, false, false, true});
  }
  return v;
}

TEST(FusedSilu, MatchesUnfusedAndSaysSo) {
  int k = 0;
  for (const SiluCase& c : Cases()) {
    const Graph g = MakeSilu(c);
    auto model = rt::Model::FromGraph(Graph(g));
    ASSERT_TRUE(model.ok()) << c.Name() << ": " << model.status().ToString();
    testing::CompareOptions co;
    co.seed = 300 + k++;
    co.float_lo = -100;  // beyond -88.7 the logistic is exactly 0
    co.float_hi = 30;
    auto inputs = testing::RandomInputs(g, co);
    if (c.type == DType::kFloat32) {
      // Special values at the front of x: infinities, NaN, zeros, the logistic's cut-offs.
      const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, -88.72f, -88.73f, -87.3f, 88.0f, 1e30f, -1e30f};
      auto* xs = reinterpret_cast<float*>(inputs[0].data.data());
      for (size_t s = 0; s < std::size(specials) && s < inputs[0].data.size() / 4; ++s) xs[s] = specials[s];
    } else {
      // Every byte value at the front of x (the table's every entry).
      for (size_t b = 0; b < 256 && b < inputs[0].data.size(); ++b) inputs[0].data[b] = static_cast<uint8_t>(b);
    }
    for (int threads : {1, 2}) {
      EXPECT_EQ(testing::FusedDiffersFromUnfused(*model, inputs, threads), "") << c.Name() << " threads " << threads;
      rt::InterpreterOptions fused;
      fused.num_threads = threads;
      auto interp = rt::Interpreter::Create(*model, fused);
      ASSERT_TRUE(interp.ok());
      const auto ops = (*interp)->ops();
      const std::string& v = ops.front().variant;
      if (c.Fuses()) {
        EXPECT_EQ(v.rfind("fused/logistic+mul/" + std::string(DTypeName(c.type)) + "/", 0), 0u) << c.Name() << ": " << v;
        EXPECT_EQ(ops[1].variant, "fused into #0") << c.Name();
      } else {
        EXPECT_EQ(v.find("fused/"), std::string::npos) << c.Name() << ": fused (" << v << ")";
      }
    }
  }
}

// A quantized pair whose input zero point is outside int8 fails to prepare with the reference
// kernels' message, fused or not (no table built from it).
TEST(FusedSilu, BadZeroPointIsAnError) {
  GraphBuilder b(3);
  const int32_t x = b.Input("x", DType::kInt8, {1, 8}, Quant(0.05f, 300));
  const int32_t sig = b.Tensor("sig", DType::kInt8, {1, 8}, Quant(1.0f / 256, -128));
  b.Op(tflite::BuiltinOperator_LOGISTIC, {x}, {sig});
  const int32_t y = b.Tensor("y", DType::kInt8, {1, 8}, Quant(0.03f, 0));
  tflite::MulOptionsT mo;
  b.Op(tflite::BuiltinOperator_MUL, {x, sig}, {y}, mo);
  b.Output(y);
  auto model = rt::Model::FromGraph(b.Finish());
  ASSERT_TRUE(model.ok());
  for (bool fuse : {true, false}) {
    rt::InterpreterOptions io;
    io.fuse_ops = fuse;
    auto interp = rt::Interpreter::Create(*model, io);
    const Status st = interp.ok() ? (*interp)->AllocateTensors() : interp.status();
    EXPECT_FALSE(st.ok()) << (fuse ? "fused" : "unfused");
    EXPECT_NE(st.ToString().find("zero point 300"), std::string::npos) << st.ToString();
  }
}

// The fused pairs against TFLite 2.9 (which runs them as two ops).
TEST(FusedSilu, MatchesTflite29) {
  SKIP_WITHOUT_ORACLE();
  int k = 0;
  for (const SiluCase& c : Cases()) {
    if (!c.Fuses()) continue;
    testing::CompareOptions co;
    co.seed = 17 + k++;
    co.float_lo = -10;
    co.float_hi = 10;
    const testing::CompareReport r = testing::CompareGraph(MakeSilu(c), co);
    EXPECT_TRUE(r.ok) << c.Name() << ": " << r.error << r.Summary();
  }
}

}  // namespace
}  // namespace edgeopt
