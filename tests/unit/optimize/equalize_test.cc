// Cross-layer range equalization and bias correction (the int8 quantizer's float-domain
// preparations) on small synthetic graphs, and the writer's shared quantization vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "eval/agreement.h"
#include "eval/inputs.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/builder.h"
#include "optimize/quantize/equalize.h"
#include "optimize/quantize/quantize.h"
#include "optimize/quantize/weights.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/random_samples.h"

namespace edgeopt {
namespace {

using Act = tflite::ActivationFunctionType;

constexpr int kC = 8;  // depthwise channels

// Depthwise 3x3 (activation `act`) -> pointwise 1x1 (16 outputs). Depthwise channel c is scaled
// by kGain[c] and the pointwise weights reading it by 1/kGain[c]: every channel matters equally to
// the output, but their activation ranges differ by 100x (channel 0 is large enough to reach
// RELU6's clamp).
constexpr float kGain[kC] = {4.0f, 1.0f, 0.1f, 0.03f, 0.01f, 0.5f, 0.2f, 0.05f};

std::vector<float> Uniform(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Graph DepthwisePointwise(Act act) {
  GraphBuilder b(7);
  const int32_t x = b.Input("x", DType::kFloat32, {1, 8, 8, kC});
  std::vector<float> dw = Uniform(9 * kC, 1, -1, 1);
  for (size_t i = 0; i < dw.size(); ++i) dw[i] *= kGain[i % kC];
  std::vector<float> dwb = Uniform(kC, 2, -0.1f, 0.1f);
  for (int c = 0; c < kC; ++c) dwb[c] = kGain[c] * (0.3f + dwb[c]);
  const int32_t w1 = b.Const("dw_w", DType::kFloat32, {1, 3, 3, kC}, dw);
  const int32_t b1 = b.Const("dw_b", DType::kFloat32, {kC}, dwb);
  const int32_t h = b.Tensor("dw_out", DType::kFloat32, {1, 8, 8, kC});
  tflite::DepthwiseConv2DOptionsT d;
  d.padding = tflite::Padding_SAME;
  d.stride_w = d.stride_h = 1;
  d.depth_multiplier = 1;
  d.dilation_w_factor = d.dilation_h_factor = 1;
  d.fused_activation_function = act;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, w1, b1}, {h}, d);
  std::vector<float> pw = Uniform(16 * kC, 3, -1, 1);
  for (size_t i = 0; i < pw.size(); ++i) pw[i] /= kGain[i % kC];
  const int32_t w2 = b.Const("pw_w", DType::kFloat32, {16, 1, 1, kC}, pw);
  const int32_t b2 = b.Const("pw_b", DType::kFloat32, {16}, Uniform(16, 4, -0.5f, 0.5f));
  const int32_t y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 16});
  tflite::Conv2DOptionsT c;
  c.padding = tflite::Padding_SAME;
  c.stride_w = c.stride_h = 1;
  c.dilation_w_factor = c.dilation_h_factor = 1;
  c.fused_activation_function = Act::ActivationFunctionType_NONE;
  b.Op(tflite::BuiltinOperator_CONV_2D, {h, w2, b2}, {y}, c);
  b.Output(y);
  return b.Finish();
}

std::vector<std::vector<eval::HostTensor>> Samples(const Graph& g, int n, uint64_t seed, float lo, float hi) {
  return testing::RandomSamples(g, n, seed, lo, hi);
}

double Snr(const Graph& reference, const Graph& candidate, const std::vector<std::vector<eval::HostTensor>>& samples) {
  auto rm = rt::Model::FromGraph(reference);
  auto cm = rt::Model::FromGraph(candidate);
  EXPECT_TRUE(rm.ok() && cm.ok());
  auto a = eval::CompareModels(*rm, *cm, samples);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? a->outputs[0].snr_db : -1000;
}

std::vector<float> Values(const Graph& g, const std::string& name) {
  const int t = g.main().FindTensor(name);
  EXPECT_GE(t, 0) << name;
  return t < 0 ? std::vector<float>{} : optimize::ConstantAsFloat(g, g.main().tensors[t]);
}

TEST(CrossLayerEqualization, OnlyRelu6ProducersAreEqualized) {
  for (Act act : {Act::ActivationFunctionType_NONE, Act::ActivationFunctionType_RELU}) {
    const Graph g = DepthwisePointwise(act);
    optimize::QuantizeOptions o;
    o.calibration = Samples(g, 4, 100, -1, 1);
    Graph e = g;
    auto pairs = optimize::EqualizeCrossLayer(e, o);
    ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
    EXPECT_EQ(*pairs, 0) << tflite::EnumNameActivationFunctionType(act);
    EXPECT_EQ(Values(e, "pw_w"), Values(g, "pw_w"));
  }
}

TEST(CrossLayerEqualization, KeepsTheFloatFunctionAndBalancesChannels) {
  for (Act act : {Act::ActivationFunctionType_RELU6}) {
    SCOPED_TRACE(tflite::EnumNameActivationFunctionType(act));
    const Graph g = DepthwisePointwise(act);
    optimize::QuantizeOptions o;
    o.calibration = Samples(g, 8, 100, -1, 1);
    Graph e = g;
    auto pairs = optimize::EqualizeCrossLayer(e, o);
    ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
    EXPECT_EQ(*pairs, 1);
    // Exact in float on samples it was not calibrated on.
    EXPECT_GT(Snr(g, e, Samples(g, 8, 500, -1, 1)), 60.0);
    const auto before = Values(g, "dw_w"), after = Values(e, "dw_w");
    ASSERT_EQ(before.size(), after.size());
    // The smallest channel (gain 0.01) grew.
    float small_before = 0, small_after = 0;
    for (size_t i = 4; i < before.size(); i += kC) {
      small_before = std::max(small_before, std::fabs(before[i]));
      small_after = std::max(small_after, std::fabs(after[i]));
    }
    EXPECT_GT(small_after, 3 * small_before);
    if (act == Act::ActivationFunctionType_RELU6) {
      // Channel 0 reaches the clamp: scaling it would change the function, so it is left alone.
      for (size_t i = 0; i < before.size(); i += kC) EXPECT_EQ(before[i], after[i]);
    }
  }
}

TEST(CrossLayerEqualization, MakesInt8FollowTheFloatModelCloser) {
  for (Act act : {Act::ActivationFunctionType_RELU6}) {
    SCOPED_TRACE(tflite::EnumNameActivationFunctionType(act));
    const Graph g = DepthwisePointwise(act);
    const auto eval_samples = Samples(g, 8, 500, -1, 1);
    double snr[2];
    for (int equalize = 0; equalize < 2; ++equalize) {
      optimize::QuantizeOptions o;
      o.mode = optimize::QuantMode::kInt8;
      o.calibration = Samples(g, 8, 100, -1, 1);
      o.equalize = equalize == 1;
      o.bias_correction = false;
      Graph q = g;
      auto r = optimize::QuantizeModel(q, o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->equalized_pairs, equalize);
      EXPECT_EQ(r->bias_corrected_ops, 0);
      snr[equalize] = Snr(g, q, eval_samples);
    }
    std::printf("[equalization] %s: int8 SNR %.1f dB without, %.1f dB with\n", tflite::EnumNameActivationFunctionType(act),
                snr[0], snr[1]);
    EXPECT_GT(snr[1], snr[0] + 6.0);
  }
}

// A 3x3 convolution of all-positive inputs with a weight outlier (coarse per-tensor scale): the
// rounding of each output channel's weights shifts its mean output, which bias correction removes.
Graph PositiveInputConv() {
  GraphBuilder b(9);
  const int32_t x = b.Input("x", DType::kFloat32, {1, 8, 8, 16});
  std::vector<float> w = Uniform(8 * 9 * 16, 11, -1, 1);
  w[5] = 12.0f;
  const int32_t wt = b.Const("w", DType::kFloat32, {8, 3, 3, 16}, w);
  const int32_t bt = b.Const("b", DType::kFloat32, {8}, Uniform(8, 12, -1, 1));
  const int32_t y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 8});
  tflite::Conv2DOptionsT c;
  c.padding = tflite::Padding_SAME;
  c.stride_w = c.stride_h = 1;
  c.dilation_w_factor = c.dilation_h_factor = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, wt, bt}, {y}, c);
  b.Output(y);
  return b.Finish();
}

// Mean over samples and positions of (candidate - reference) per output channel; returns the
// mean of its absolute value over channels.
double MeanChannelShift(const Graph& reference, const Graph& candidate, const std::vector<std::vector<eval::HostTensor>>& samples) {
  auto rm = rt::Model::FromGraph(reference);
  auto cm = rt::Model::FromGraph(candidate);
  EXPECT_TRUE(rm.ok() && cm.ok());
  auto ri = rt::Interpreter::Create(*rm);
  auto ci = rt::Interpreter::Create(*cm);
  EXPECT_TRUE(ri.ok() && ci.ok());
  std::vector<double> shift;
  double count = 0;
  for (const auto& s : samples) {
    for (auto* interp : {ri->get(), ci->get()}) {
      std::memcpy(interp->input(0)->data, s[0].data.data(), s[0].data.size());
      EXPECT_TRUE(interp->Invoke().ok());
    }
    const rt::RtTensor* a = (*ri)->output(0);
    const rt::RtTensor* b = (*ci)->output(0);
    const int channels = a->dim(-1);
    shift.resize(channels, 0.0);
    for (int64_t i = 0; i < a->num_elements(); ++i) shift[i % channels] += b->data_as<float>()[i] - a->data_as<float>()[i];
    count += static_cast<double>(a->num_elements() / channels);
  }
  double total = 0;
  for (double v : shift) total += std::fabs(v / count);
  return total / static_cast<double>(shift.size());
}

TEST(BiasCorrection, RemovesTheMeanErrorOfWeightQuantization) {
  const Graph g = PositiveInputConv();
  const auto eval_samples = Samples(g, 8, 700, 0, 1);
  double shift[2];
  for (int correct = 0; correct < 2; ++correct) {
    optimize::QuantizeOptions o;
    o.mode = optimize::QuantMode::kInt8;
    o.per_channel = false;
    o.calibration = Samples(g, 8, 300, 0, 1);
    o.bias_correction = correct == 1;
    Graph q = g;
    auto r = optimize::QuantizeModel(q, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->bias_corrected_ops, correct);
    shift[correct] = MeanChannelShift(g, q, eval_samples);
  }
  std::printf("[bias correction] mean |per-channel output shift|: %.4f without, %.4f with\n", shift[0], shift[1]);
  EXPECT_LT(shift[1], 0.3 * shift[0]);
}

// The writer stores identical quantization vectors once (per-channel zero points are all-zero
// vectors repeated for weights and biases); the file reads back identically and runs in the
// reference runtimes.
TEST(SharedQuantizationVectors, WrittenOnceReadBackAndRunInTheReferenceRuntimes) {
  const Graph g = DepthwisePointwise(Act::ActivationFunctionType_RELU6);
  optimize::QuantizeOptions o;
  o.mode = optimize::QuantMode::kInt8;
  o.calibration = Samples(g, 4, 100, -1, 1);
  Graph q = g;
  ASSERT_TRUE(optimize::QuantizeModel(q, o).ok());
  auto bytes = SerializeModel(q);
  ASSERT_TRUE(bytes.ok());
  const tflite::Model* m = tflite::GetModel(bytes->data());
  const auto* tensors = m->subgraphs()->Get(0)->tensors();
  // Depthwise weights and bias: 8 zero points each, the same vector in the file.
  std::vector<const flatbuffers::Vector<int64_t>*> zp8;
  for (const auto* t : *tensors)
    if (t->quantization() && t->quantization()->zero_point() && t->quantization()->zero_point()->size() == kC)
      zp8.push_back(t->quantization()->zero_point());
  ASSERT_GE(zp8.size(), 2u);
  for (const auto* v : zp8) EXPECT_EQ(v, zp8[0]);
  auto back = ReadModelBytes(*bytes, "shared.tflite");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->main().tensors.size(), q.main().tensors.size());
  for (size_t i = 0; i < q.main().tensors.size(); ++i) {
    const Tensor& a = q.main().tensors[i];
    const Tensor& b = back->main().tensors[i];
    EXPECT_EQ(a.shape, b.shape) << a.name;
    ASSERT_EQ(a.quant.has_value(), b.quant.has_value()) << a.name;
    if (a.quant) {
      EXPECT_EQ(a.quant->scale, b.quant->scale) << a.name;
      EXPECT_EQ(a.quant->zero_point, b.quant->zero_point) << a.name;
    }
  }
  for (testing::Oracle oracle : {testing::Oracle::kTflite29, testing::Oracle::kLiteRtJs}) {
    if (oracle == testing::Oracle::kTflite29 && !testing::Tflite29Available()) {
      std::printf("TFLite 2.9 library absent: reference check skipped\n");
      continue;
    }
    if (oracle == testing::Oracle::kLiteRtJs && !testing::LiteRtJsAvailable()) {
      std::printf("LiteRT.js absent: reference check skipped\n");
      continue;
    }
    testing::CompareOptions co;
    co.oracle = oracle;
    // The float output comes from a DEQUANTIZE: runtimes may round the last int8 step differently.
    const Subgraph& sg = q.main();
    const int dq = sg.FindProducer(sg.outputs[0]);
    ASSERT_GE(dq, 0);
    co.atol = 1.01 * sg.tensors[sg.ops[dq].inputs[0]].quant->sc();
    const auto r = testing::CompareGraph(q, co);
    EXPECT_TRUE(r.ok) << testing::OracleName(oracle) << ": " << r.error << "\n" << r.Summary();
    EXPECT_EQ(r.oracle.rfind(testing::OracleName(oracle), 0), 0u) << r.oracle;
  }
}

}  // namespace
}  // namespace edgeopt
