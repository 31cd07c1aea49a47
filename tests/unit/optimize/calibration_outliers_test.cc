// Calibration outliers: a calibration sample whose activations are far larger than the others'
// (BlazeFace on a blank mask or an MNIST digit: 35x the photos' deep activations) must not set
// every int8 range, or typical inputs keep only a few levels per tensor (issue 5).
#include <gtest/gtest.h>

#include <random>

#include "eval/agreement.h"
#include "eval/inputs.h"
#include "graph/builder.h"
#include "optimize/quantize/calibrate.h"
#include "optimize/quantize/quantize.h"
#include "runtime/interpreter.h"
#include "support/random_samples.h"

namespace edgeopt {
namespace {

using optimize::FindOutlierSamples;
using optimize::Range;

// per_sample[s][k] = {-m, m} with m = base[k] * gain[s][k].
std::vector<std::vector<Range>> Ranges(const std::vector<float>& base, const std::vector<std::vector<float>>& gain) {
  std::vector<std::vector<Range>> r(gain.size());
  for (size_t s = 0; s < gain.size(); ++s)
    for (size_t k = 0; k < base.size(); ++k) r[s].push_back({-base[k] * gain[s][k], base[k] * gain[s][k], true});
  return r;
}

std::vector<float> Row(size_t n, float v) { return std::vector<float>(n, v); }

TEST(CalibrationOutliers, FindsTheSampleThatInflatesMuchOfTheNetwork) {
  const std::vector<float> base = {1, 5, 20, 0.5f, 3, 7, 2, 9};
  std::vector<std::vector<float>> gain = {Row(8, 1.0f), Row(8, 1.3f), Row(8, 0.8f), Row(8, 1.1f), Row(8, 0.9f), Row(8, 1.2f)};
  // Sample 6: normal in the first half of the network, 30x from there on (a flat image).
  gain.push_back({1, 1, 1, 1, 30, 30, 30, 30});
  std::vector<double> inflation;
  const auto out = FindOutlierSamples(Ranges(base, gain), 4.0, &inflation);
  ASSERT_EQ(out, std::vector<size_t>{6});
  ASSERT_EQ(inflation.size(), 7u);
  EXPECT_NEAR(inflation[6], 30.0 / 1.1, 1.0);
  for (size_t s = 0; s < 6; ++s) EXPECT_LT(inflation[s], 1.5) << s;
}

TEST(CalibrationOutliers, OneLargeTensorIsNotAnOutlierSample) {
  const std::vector<float> base = {1, 5, 20, 0.5f, 3, 7, 2, 9};
  std::vector<std::vector<float>> gain(6, Row(8, 1.0f));
  gain[2][5] = 50;  // a rare large activation in one tensor: genuine data, kept
  EXPECT_TRUE(FindOutlierSamples(Ranges(base, gain), 4.0).empty());
}

TEST(CalibrationOutliers, NeverFewSamplesNorHalfOfThemNorWhenOff) {
  const std::vector<float> base = {1, 2, 3, 4};
  // Three samples: no median to speak of.
  EXPECT_TRUE(FindOutlierSamples(Ranges(base, {Row(4, 1), Row(4, 1), Row(4, 50)}), 4.0).empty());
  // Half of the samples large: that is what the data looks like.
  EXPECT_TRUE(FindOutlierSamples(Ranges(base, {Row(4, 1), Row(4, 1), Row(4, 50), Row(4, 50)}), 4.0).empty());
  // factor 0 keeps every sample.
  const auto ranges = Ranges(base, {Row(4, 1), Row(4, 1), Row(4, 1), Row(4, 1), Row(4, 50)});
  EXPECT_EQ(FindOutlierSamples(ranges, 4.0), std::vector<size_t>{4});
  EXPECT_TRUE(FindOutlierSamples(ranges, 0.0).empty());
}

std::vector<float> Uniform(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// 1x1 conv (RELU) -> 1x1 conv: linear in the input scale, so an input 40x larger gives activations
// 40x larger throughout.
Graph TwoConvs() {
  GraphBuilder b(5);
  const int32_t x = b.Input("x", DType::kFloat32, {1, 8, 8, 4});
  tflite::Conv2DOptionsT c;
  c.padding = tflite::Padding_SAME;
  c.stride_w = c.stride_h = 1;
  c.dilation_w_factor = c.dilation_h_factor = 1;
  c.fused_activation_function = tflite::ActivationFunctionType_RELU;
  const int32_t w1 = b.Const("w1", DType::kFloat32, {8, 1, 1, 4}, Uniform(32, 1, -1, 1));
  const int32_t b1 = b.Const("b1", DType::kFloat32, {8}, Uniform(8, 2, -0.1f, 0.1f));
  const int32_t h = b.Tensor("h", DType::kFloat32, {1, 8, 8, 8});
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w1, b1}, {h}, c);
  c.fused_activation_function = tflite::ActivationFunctionType_NONE;
  const int32_t w2 = b.Const("w2", DType::kFloat32, {4, 1, 1, 8}, Uniform(32, 3, -1, 1));
  const int32_t b2 = b.Const("b2", DType::kFloat32, {4}, Uniform(4, 4, -0.1f, 0.1f));
  const int32_t y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 4});
  b.Op(tflite::BuiltinOperator_CONV_2D, {h, w2, b2}, {y}, c);
  b.Output(y);
  return b.Finish();
}

std::vector<std::vector<eval::HostTensor>> Samples(const Graph& g, int n, uint64_t seed, float amplitude) {
  return testing::RandomSamples(g, n, seed, -amplitude, amplitude);
}

TEST(CalibrationOutliers, Int8RangesIgnoreAnOutlierSampleAndTypicalInputsKeepTheirPrecision) {
  const Graph g = TwoConvs();
  auto calibration = Samples(g, 7, 10, 1.0f);
  calibration.insert(calibration.begin() + 3, Samples(g, 1, 50, 40.0f)[0]);  // sample 3: 40x
  const auto held_out = Samples(g, 8, 100, 1.0f);
  auto fm = rt::Model::FromGraph(g);
  ASSERT_TRUE(fm.ok());
  double snr[2] = {0, 0};
  for (int keep = 0; keep < 2; ++keep) {
    optimize::QuantizeOptions o;
    o.mode = optimize::QuantMode::kInt8;
    o.calibration = calibration;
    o.outlier_factor = keep ? 0.0 : 4.0;
    Graph q = g;
    auto report = optimize::QuantizeModel(q, o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    if (keep) {
      EXPECT_TRUE(report->outlier_samples.empty());
    } else {
      ASSERT_EQ(report->outlier_samples.size(), 1u);
      EXPECT_EQ(report->outlier_samples[0].first, 3u);
      EXPECT_GT(report->outlier_samples[0].second, 20.0);
      // The input range is the typical samples' [-1, 1], not the outlier's [-40, 40].
      bool found = false;
      for (const auto& r : report->ranges)
        if (r.name == "x") {
          found = true;
          EXPECT_LE(r.max, 1.0f);
          EXPECT_GE(r.min, -1.0f);
        }
      EXPECT_TRUE(found);
    }
    auto qm = rt::Model::FromGraph(q);
    ASSERT_TRUE(qm.ok());
    auto a = eval::CompareModels(*fm, *qm, held_out);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    snr[keep] = a->outputs[0].snr_db;
  }
  std::printf("[calibration outliers] int8 SNR on typical inputs: %.1f dB (outlier left out), %.1f dB (kept)\n", snr[0], snr[1]);
  EXPECT_GT(snr[0], 30.0);
  EXPECT_GT(snr[0], snr[1] + 20.0);  // 40x coarser scales cost about 32 dB
}

}  // namespace
}  // namespace edgeopt
