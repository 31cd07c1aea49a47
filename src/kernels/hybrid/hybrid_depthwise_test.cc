// The hybrid DEPTHWISE_CONV_2D on the float depthwise kernels (hybrid_depthwise.cc) against two
// oracles, over odd channel counts, depth multipliers 1-3, strides, dilation, SAME / VALID,
// every fused activation it takes, with and without bias, per-tensor / per-channel scales,
// batches, 1 and 2 threads, and inputs that change at every invoke:
// - the float reference kernel run on the dequantized weights (float(w) · scale): the same sums
//   in another order, so within 2·(taps + 1)·2^-24 · S, S = Σ|x·w| + |bias| per output (the
//   float reference on |x|, |w|, |bias| computes S);
// - the hybrid reference kernel, which quantizes the input (step s per batch) first: within
//   s · Σ|w| (the taps inside the image) plus the float bound above. Rounding costs half a step
//   per tap; the nudged zero point can push a range end half a step further, into the clamp.
// The fast variant is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/dwconv/dwconv.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/scoped_env.h"

namespace edgeopt {
namespace {

struct DwCase {
  int batch, h, w, c, dm, kh, kw, s, d;
  bool same;
};

struct DwWeights {
  std::vector<int8_t> q;
  std::vector<float> scale, deq, bias;  // deq = float(q) · scale of its channel; bias empty: none
};

// A DEPTHWISE_CONV_2D graph: int8 weights (hybrid) when `quant` is given, float `wf` otherwise.
Graph DepthwiseGraph(const DwCase& c, int activation, const std::vector<float>& wf, const DwWeights* quant,
                     const std::vector<float>& bias) {
  const int oc = c.c * c.dm;
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.c});
  const std::vector<int32_t> wshape = {1, c.kh, c.kw, oc};
  int32_t w;
  if (quant) {
    QuantParams q;
    q.scale = quant->scale;
    q.zero_point.assign(q.scale.size(), 0);
    q.quantized_dimension = 3;
    w = b.Const<int8_t>("w", DType::kInt8, wshape, quant->q, q);
  } else {
    w = b.Const<float>("w", DType::kFloat32, wshape, wf);
  }
  std::vector<int32_t> ins = {x, w};
  if (!bias.empty()) ins.push_back(b.Const<float>("b", DType::kFloat32, {oc}, bias));
  const int ekh = (c.kh - 1) * c.d + 1, ekw = (c.kw - 1) * c.d + 1;
  const int oh = c.same ? (c.h + c.s - 1) / c.s : (c.h - ekh) / c.s + 1;
  const int ow = c.same ? (c.w + c.s - 1) / c.s : (c.w - ekw) / c.s + 1;
  auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, oc});
  tflite::DepthwiseConv2DOptionsT o;
  o.padding = c.same ? tflite::Padding_SAME : tflite::Padding_VALID;
  o.stride_h = o.stride_w = c.s;
  o.dilation_h_factor = o.dilation_w_factor = c.d;
  o.depth_multiplier = c.dm;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(activation);
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, ins, {y}, o);
  b.Output(y);
  return b.Finish();
}

// One interpreter per graph; Run feeds an input and returns the output.
class Runner {
 public:
  Runner(const Graph& g, bool reference, int threads) {
    auto m = rt::Model::FromGraph(g);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m);
    rt::InterpreterOptions o;
    o.reference_kernels_only = reference;
    o.num_threads = threads;
    auto i = rt::Interpreter::Create(model_, o);
    EXPECT_TRUE(i.ok()) << i.status().ToString();
    interp_ = std::move(*i);
    EXPECT_TRUE(interp_->AllocateTensors().ok());
  }
  std::vector<float> Run(const std::vector<float>& x) {
    std::memcpy(interp_->input(0)->data, x.data(), x.size() * sizeof(float));
    EXPECT_TRUE(interp_->Invoke().ok());
    const rt::RtTensor* y = interp_->output(0);
    return std::vector<float>(y->data_as<float>(), y->data_as<float>() + y->num_elements());
  }
  std::string variant() const { return interp_->ops()[0].variant; }

 private:
  std::shared_ptr<const rt::Model> model_;
  std::unique_ptr<rt::Interpreter> interp_;
};

std::vector<float> Abs(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

void CheckCase(const DwCase& c, int n, std::mt19937& rng) {
  const int oc = c.c * c.dm, taps = c.kh * c.kw;
  const bool per_channel = n % 3 != 0, with_bias = n % 4 != 3;
  const int activation = n % 4;  // NONE, RELU, RELU_N1_TO_1, RELU6
  const int threads = 1 + n % 2;
  DwWeights w;
  std::uniform_int_distribution<int> qd(-127, 127);
  std::uniform_real_distribution<float> sd(0.002f, 0.05f), bd(-1.0f, 1.0f);
  w.q.resize(static_cast<size_t>(taps) * oc);
  for (auto& v : w.q) v = static_cast<int8_t>(qd(rng));
  w.q[0] = 127;
  w.q.back() = -127;
  w.scale.resize(per_channel ? oc : 1);
  for (float& s : w.scale) s = sd(rng);
  w.deq.resize(w.q.size());
  for (size_t i = 0; i < w.q.size(); ++i) w.deq[i] = static_cast<float>(w.q[i]) * w.scale[per_channel ? i % oc : 0];
  if (with_bias)
    for (int i = 0; i < oc; ++i) w.bias.push_back(bd(rng));

  Runner fast(DepthwiseGraph(c, activation, {}, &w, w.bias), false, threads);
  Runner hybrid_ref(DepthwiseGraph(c, activation, {}, &w, w.bias), true, 1);
  Runner float_ref(DepthwiseGraph(c, activation, w.deq, nullptr, w.bias), true, 1);
  Runner magnitude(DepthwiseGraph(c, 0, Abs(w.deq), nullptr, Abs(w.bias)), true, 1);   // S
  Runner weight_sum(DepthwiseGraph(c, 0, Abs(w.deq), nullptr, {}), true, 1);          // Σ|w| inside the image
  const std::string what = "dw " + std::to_string(c.batch) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                           "x" + std::to_string(c.c) + " m" + std::to_string(c.dm) + " k" + std::to_string(c.kh) + "x" +
                           std::to_string(c.kw) + " s" + std::to_string(c.s) + " d" + std::to_string(c.d) +
                           (c.same ? " SAME" : " VALID") + " act " + std::to_string(activation) +
                           (per_channel ? " per-channel" : " per-tensor") + (with_bias ? "" : " no bias") +
                           " threads " + std::to_string(threads);
  const kernels::dwconv::VectorRows* vec = kernels::dwconv::SelectVectorRows(rt::CpuHardware(), oc);
  ASSERT_NE(vec, nullptr);
  EXPECT_EQ(fast.variant(), std::string("depthwise_conv2d/hybrid/dequant-") + vec->isa) << what;

  const size_t in_n = static_cast<size_t>(c.batch) * c.h * c.w * c.c;
  const std::vector<float> ones(in_n, 1.0f);
  const std::vector<float> wsum = weight_sum.Run(ones);
  for (int round = 0; round < 3; ++round) {
    std::uniform_real_distribution<float> xd(round == 2 ? 0.1f : -3.0f, 2.0f);
    std::vector<float> x(in_n, 0.0f);  // round 1: all zeros
    if (round != 1)
      for (float& v : x) v = xd(rng);
    const std::vector<float> got = fast.Run(x), want_float = float_ref.Run(x), want_hybrid = hybrid_ref.Run(x);
    const std::vector<float> s = magnitude.Run(Abs(x));
    ASSERT_EQ(got.size(), want_float.size());
    // The input step of each batch, as the hybrid reference quantizes it.
    std::vector<float> step(c.batch);
    const size_t per_batch = in_n / c.batch;
    for (int b = 0; b < c.batch; ++b) {
      const auto [lo, hi] = std::minmax_element(x.begin() + b * per_batch, x.begin() + (b + 1) * per_batch);
      float inverse;
      int32_t zp;
      if (!kernels::AsymmetricParams(*lo, *hi, &step[b], &zp, &inverse)) step[b] = 0;
    }
    const size_t per_out_batch = got.size() / c.batch;
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double float_tol = 2.0 * (taps + 1) * std::ldexp(1.0, -24) * s[i];
      const double quant_tol = double(step[i / per_out_batch]) * wsum[i] + 2 * float_tol + 1e-6 * s[i];
      const double e_float = std::fabs(double(got[i]) - want_float[i]);
      const double e_hybrid = std::fabs(double(got[i]) - want_hybrid[i]);
      if ((e_float > float_tol || e_hybrid > quant_tol) && bad++ < 5)
        ADD_FAILURE() << what << " round " << round << " element " << i << ": got " << got[i] << ", float reference "
                      << want_float[i] << " (tolerance " << float_tol << "), hybrid reference " << want_hybrid[i]
                      << " (tolerance " << quant_tol << ")";
    }
  }
}

TEST(HybridDepthwise, MatchesFloatOnDequantizedWeightsAndHybridReference) {
  const rt::CpuFeatures& cpu = rt::CpuHardware();
  if (!cpu.has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2+FMA: hybrid depthwise runs the int8 kernels";
  std::mt19937 rng(44);
  const std::vector<DwCase> cases = {
      {1, 9, 11, 1, 1, 3, 3, 1, 1, true},    {1, 8, 8, 3, 1, 3, 3, 2, 1, true},  {2, 7, 6, 5, 1, 3, 3, 1, 1, false},
      {1, 12, 10, 8, 1, 3, 3, 2, 1, true},   {1, 6, 9, 9, 1, 3, 3, 1, 1, true},  {1, 10, 7, 17, 1, 5, 5, 1, 1, true},
      {1, 11, 13, 33, 1, 3, 3, 2, 1, true},  {2, 5, 5, 16, 1, 3, 3, 1, 2, true}, {1, 9, 9, 40, 1, 1, 1, 1, 1, false},
      {1, 14, 14, 96, 1, 3, 3, 2, 1, true},  {1, 6, 7, 3, 2, 3, 3, 1, 1, true},  {1, 8, 5, 5, 3, 3, 3, 2, 1, false},
      {2, 7, 7, 7, 2, 3, 2, 1, 1, true},     {1, 5, 9, 12, 2, 5, 3, 1, 1, true}, {1, 4, 4, 1, 8, 3, 3, 1, 1, true},
      {1, 13, 6, 24, 1, 7, 7, 3, 1, true},
  };
  int n = 0;
  for (const DwCase& c : cases)
    for (int rep = 0; rep < 4; ++rep, ++n) CheckCase(c, n, rng);
}

// EDGEOPT_HYBRID_DEQUANT=0 leaves the op to the kernels that quantize the input (TFLite's way).
TEST(HybridDepthwise, SwitchedOffByEnvironment) {
  const DwCase c = {1, 6, 6, 16, 1, 3, 3, 1, 1, true};
  DwWeights w;
  w.q.assign(9 * 16, 3);
  w.scale = {0.01f};
  const testing::ScopedEnv off("EDGEOPT_HYBRID_DEQUANT", "0");
  Runner fast(DepthwiseGraph(c, 0, {}, &w, {}), false, 1);
  EXPECT_EQ(fast.variant().find("dequant"), std::string::npos) << fast.variant();
}

}  // namespace
}  // namespace edgeopt
