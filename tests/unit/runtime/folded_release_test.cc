// Constants folded at init (float16 weights through DEQUANTIZE) are freed once every op that reads
// them packed them into its own layout; they stay when an op reads them at invoke, with
// preserve_all_tensors, and with the reference kernels. Results are the same either way, also
// after a resize re-plans the interpreter (which folds them again for the ops' Prepare).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "graph/builder.h"
#include "runtime/interpreter.h"

namespace edgeopt::rt {
namespace {

enum class Kind { kConv, kDepthwise, kFc, kAdd };

struct Case {
  const char* name;
  Kind kind;
  int k;      // filter size (conv, depthwise)
  int out_c;  // output channels (conv, fc)
};

constexpr int kInC = 16;

// x -> OP(x, dequantize(w16), bias) -> y, the weights stored as float16.
Graph BuildGraph(const Case& c, int32_t* w_index) {
  GraphBuilder b;
  const bool fc = c.kind == Kind::kFc;
  auto x = fc ? b.Input("x", DType::kFloat32, {3, kInC}) : b.Input("x", DType::kFloat32, {1, 9, 7, kInC});
  std::vector<int32_t> wshape;
  switch (c.kind) {
    case Kind::kConv: wshape = {c.out_c, c.k, c.k, kInC}; break;
    case Kind::kDepthwise: wshape = {1, c.k, c.k, kInC}; break;
    case Kind::kFc: wshape = {c.out_c, kInC}; break;
    case Kind::kAdd: wshape = {1, 1, 1, kInC}; break;
  }
  auto w16 = b.ConstRandom("w16", DType::kFloat16, wshape);
  auto w = b.Tensor("w", DType::kFloat32, wshape);
  *w_index = w;
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w16}, {w});
  const int out_c = c.kind == Kind::kConv || c.kind == Kind::kFc ? c.out_c : kInC;
  auto bias = b.ConstRandom("bias", DType::kFloat32, {out_c});
  auto y = fc ? b.Tensor("y", DType::kFloat32, {3, out_c}) : b.Tensor("y", DType::kFloat32, {1, 9, 7, out_c});
  switch (c.kind) {
    case Kind::kConv: {
      tflite::Conv2DOptionsT o;
      o.padding = tflite::Padding_SAME;
      o.stride_h = o.stride_w = 1;
      o.dilation_h_factor = o.dilation_w_factor = 1;
      b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, o);
      break;
    }
    case Kind::kDepthwise: {
      tflite::DepthwiseConv2DOptionsT o;
      o.padding = tflite::Padding_SAME;
      o.stride_h = o.stride_w = 1;
      o.dilation_h_factor = o.dilation_w_factor = 1;
      o.depth_multiplier = 1;
      b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, w, bias}, {y}, o);
      break;
    }
    case Kind::kFc: b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, bias}, {y}, tflite::FullyConnectedOptionsT()); break;
    case Kind::kAdd: b.Op(tflite::BuiltinOperator_ADD, {x, w}, {y}, tflite::AddOptionsT()); break;
  }
  b.Output(y);
  return b.Finish();
}

std::unique_ptr<Interpreter> Make(const std::shared_ptr<const Model>& m, bool preserve, bool reference) {
  InterpreterOptions o;
  o.preserve_all_tensors = preserve;
  o.reference_kernels_only = reference;
  auto it = Interpreter::Create(m, o);
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  return it.ok() ? std::move(*it) : nullptr;
}

// Whether the op's kernel keeps the weights only in its packed copy (the variants that pack).
bool PackingVariant(const std::string& v) {
  if (v.ends_with("/ref") || v.ends_with("/single") || v.ends_with("/scalar")) return false;
  return v.starts_with("conv2d/f32/") || v.starts_with("fully_connected/f32/") ||
         v.starts_with("depthwise_conv2d/f32/");
}

TEST(FoldedRelease, PackedReadersFreeFoldedWeightsAndResultsStayTheSame) {
  const Case cases[] = {
      {"conv 1x1", Kind::kConv, 1, 8},  {"conv 3x3", Kind::kConv, 3, 24}, {"conv 3x3 one channel", Kind::kConv, 3, 1},
      {"depthwise 3x3", Kind::kDepthwise, 3, 0}, {"fully connected", Kind::kFc, 0, 10}, {"add", Kind::kAdd, 0, 0},
  };
  int released_cases = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    int32_t w = -1;
    auto m = Model::FromGraph(BuildGraph(c, &w));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto fast = Make(*m, false, false), kept = Make(*m, true, false), ref = Make(*m, false, true);
    ASSERT_TRUE(fast && kept && ref);
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const Shape& shape : {Shape{}, Shape{1, 11, 5, kInC}}) {
      if (!shape.empty()) {
        if (c.kind == Kind::kFc) continue;
        for (Interpreter* it : {fast.get(), kept.get(), ref.get()}) ASSERT_TRUE(it->ResizeInput(0, shape).ok());
      }
      for (Interpreter* it : {fast.get(), kept.get(), ref.get()}) ASSERT_TRUE(it->AllocateTensors().ok());
      const int64_t n = fast->input(0)->num_elements();
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = dist(rng);
      for (Interpreter* it : {fast.get(), kept.get(), ref.get()}) {
        std::memcpy(it->input(0)->data, x.data(), x.size() * sizeof(float));
        ASSERT_TRUE(it->Invoke().ok());
      }
      const int64_t outs = fast->output(0)->num_elements();
      const float* a = fast->output(0)->data_as<float>();
      const float* b = kept->output(0)->data_as<float>();
      const float* r = ref->output(0)->data_as<float>();
      for (int64_t i = 0; i < outs; ++i) {
        ASSERT_EQ(a[i], b[i]) << "output " << i;  // same kernels: bit for bit
        ASSERT_NEAR(a[i], r[i], 1e-4f * (1.0f + std::fabs(r[i]))) << "output " << i;
      }
      const std::string variant = fast->ops().back().variant;
      const bool expect_released = PackingVariant(variant);
      EXPECT_EQ(fast->main().tensor(w)->data == nullptr, expect_released) << variant;
      EXPECT_NE(kept->main().tensor(w)->data, nullptr);  // preserve_all_tensors keeps every tensor
      EXPECT_NE(ref->main().tensor(w)->data, nullptr);   // reference kernels read the weights
      if (expect_released) {
        ++released_cases;
        EXPECT_LT(fast->persistent_bytes(), kept->persistent_bytes());
      } else {
        EXPECT_EQ(fast->persistent_bytes(), kept->persistent_bytes());
      }
    }
  }
  // The fast kernels of this CPU pack at least the multi-channel convolutions (AVX2 or wider);
  // with EDGEOPT_CPU=generic every op runs the reference kernels and keeps its weights.
  if (released_cases == 0) GTEST_SKIP() << "no packing float kernel on this CPU (reference kernels only)";
  EXPECT_GE(released_cases, 4);
}

}  // namespace
}  // namespace edgeopt::rt
