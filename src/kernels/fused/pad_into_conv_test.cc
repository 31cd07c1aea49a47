// PAD folded into the VALID convolution after it (pad_into_conv.cc): generated PAD -> CONV_2D /
// DEPTHWISE_CONV_2D pairs whose paddings are SAME's run fused and unfused in one process with
// the same bytes, shown as "fused/pad+<variant>", some also against TFLite 2.9; paddings that
// are not SAME's, a PAD read by another op too, or a hybrid convolution stay apart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

struct PadCase {
  bool depthwise;
  DType type;
  int h, w, c, k, stride;
  std::vector<int32_t> pads;  // [top, bottom, left, right]
  bool fuses = true;
  bool shared = false;  // the padded tensor is also a subgraph output
  std::string Name() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %s %dx%dx%d k%d s%d pads %d,%d,%d,%d%s", depthwise ? "dw" : "conv",
                  std::string(DTypeName(type)).c_str(), h, w, c, k, stride, pads[0], pads[1], pads[2], pads[3],
                  shared ? " shared" : "");
    return buf;
  }
};

Graph MakePadConv(const PadCase& c) {
  GraphBuilder b(21);
  const bool q = c.type != DType::kFloat32;
  auto quant = [&](float scale, int zp) { return q ? std::optional<QuantParams>(Quant(scale, zp)) : std::nullopt; };
  const int32_t x = b.Input("x", c.type, {1, c.h, c.w, c.c}, quant(0.05f, 3));
  const std::vector<int32_t> pad_values = {0, 0, c.pads[0], c.pads[1], c.pads[2], c.pads[3], 0, 0};
  const int32_t p = b.Const("paddings", DType::kInt32, {4, 2}, pad_values);
  const int ph = c.h + c.pads[0] + c.pads[1], pw = c.w + c.pads[2] + c.pads[3];
  const int32_t xp = b.Tensor("xp", c.type, {1, ph, pw, c.c}, quant(0.05f, 3));
  b.Op(tflite::BuiltinOperator_PAD, {x, p}, {xp});
  const int oh = (ph - c.k) / c.stride + 1, ow = (pw - c.k) / c.stride + 1;
  const int oc = c.depthwise ? c.c : 12;
  const bool u8 = c.type == DType::kUInt8;
  const int32_t w = b.ConstRandom("w", u8 ? DType::kUInt8 : q ? DType::kInt8 : DType::kFloat32,
                                  c.depthwise ? std::vector<int32_t>{1, c.k, c.k, c.c} : std::vector<int32_t>{oc, c.k, c.k, c.c},
                                  -1, 1, quant(0.02f, u8 ? 120 : 0));
  const int32_t bias = b.ConstRandom("b", q ? DType::kInt32 : DType::kFloat32, {oc}, -50, 50, quant(0.001f, 0));
  const int32_t y = b.Tensor("y", c.type, {1, oh, ow, oc}, quant(0.04f, -2));
  if (c.depthwise) {
    tflite::DepthwiseConv2DOptionsT o;
    o.padding = tflite::Padding_VALID;
    o.stride_h = o.stride_w = c.stride;
    o.depth_multiplier = 1;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {xp, w, bias}, {y}, o);
  } else {
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_VALID;
    o.stride_h = o.stride_w = c.stride;
    b.Op(tflite::BuiltinOperator_CONV_2D, {xp, w, bias}, {y}, o);
  }
  b.Output(y);
  if (c.shared) b.Output(xp);
  return b.Finish();
}

std::vector<PadCase> Cases() {
  std::vector<PadCase> v;
  for (DType t : {DType::kFloat32, DType::kInt8, DType::kUInt8})
    for (bool dw : {true, false}) {
      v.push_back({dw, t, 13, 17, 16, 3, 1, {1, 1, 1, 1}});      // 3x3 stride 1: SAME pads 1 / 1
      v.push_back({dw, t, 16, 20, 8, 3, 2, {0, 1, 0, 1}});       // stride 2, even size: 0 / 1
      v.push_back({dw, t, 15, 9, 24, 3, 2, {1, 1, 1, 1}});       // stride 2, odd size: 1 / 1
      v.push_back({dw, t, 12, 12, 16, 5, 2, {1, 2, 1, 2}});      // 5x5 stride 2: 1 / 2
      v.push_back({dw, t, 12, 12, 16, 5, 2, {2, 2, 2, 2}, false});  // not SAME's: stays apart
      v.push_back({dw, t, 16, 20, 8, 3, 2, {1, 0, 1, 0}, false});   // SAME's pads the other way round
      v.push_back({dw, t, 13, 17, 16, 3, 1, {1, 1, 1, 1}, false, true});  // padded tensor also an output
    }
  return v;
}

TEST(FusedPad, MatchesUnfusedAndSaysSo) {
  int k = 0;
  for (const PadCase& c : Cases()) {
    const Graph g = MakePadConv(c);
    auto model = rt::Model::FromGraph(Graph(g));
    ASSERT_TRUE(model.ok()) << c.Name() << ": " << model.status().ToString();
    testing::CompareOptions co;
    co.seed = 300 + k++;
    const auto inputs = testing::RandomInputs(g, co);
    for (int threads : {1, 2}) {
      EXPECT_EQ(testing::FusedDiffersFromUnfused(*model, inputs, threads), "") << c.Name() << " threads " << threads;
      rt::InterpreterOptions o;
      o.num_threads = threads;
      auto interp = rt::Interpreter::Create(*model, o);
      ASSERT_TRUE(interp.ok()) << interp.status().ToString();
      const auto ops = (*interp)->ops();
      const std::string& v = ops.front().variant;
      if (c.fuses) {
        EXPECT_EQ(v.rfind("fused/pad+", 0), 0u) << c.Name() << ": " << v;
        EXPECT_EQ(ops.back().variant, "fused into #0") << c.Name();
      } else {
        EXPECT_EQ(v.rfind("fused/", 0), std::string::npos) << c.Name() << ": fused (" << v << ")";
      }
    }
  }
}

TEST(FusedPad, MatchesTflite29) {
  SKIP_WITHOUT_ORACLE();
  int k = 0;
  for (const PadCase& c : Cases()) {
    if (!c.fuses || k++ % 2 != 0) continue;
    testing::CompareOptions co;
    co.seed = 17 + k;
    const testing::CompareReport r = testing::CompareGraph(MakePadConv(c), co);
    EXPECT_TRUE(r.ok) << c.Name() << ": " << r.error << r.Summary();
  }
}

}  // namespace
}  // namespace edgeopt
