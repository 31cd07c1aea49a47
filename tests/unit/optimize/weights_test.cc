// Weight quantization primitives: the weight-scale floor that keeps int32 biases from saturating.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optimize/quantize/weights.h"

namespace edgeopt::optimize {
namespace {

// A near-dead channel: weights ~1e-6 next to a bias of -593 (BlazeFace-like). With the plain
// max|w|/127 scale, bias / (input_scale * weight_scale) is ~1e10 and would clamp at 2^31;
// the floor raises that channel's weight scale just enough, and leaves the normal channel alone.
TEST(WeightQuantization, BiasFloorKeepsInt32BiasRepresentable) {
  const float input_scale = 0.19f;
  const std::vector<float> bias = {0.5f, -593.0f};
  // Shape [2, 1, 1, 2]: output channel on axis 0.
  const std::vector<float> w = {0.8f, -0.4f, 1e-6f, -2e-6f};
  const std::vector<int32_t> shape = {2, 1, 1, 2};

  const QuantizedWeights plain = QuantizeSymmetricInt8(w, shape, true, 0);
  const double plain_q = std::fabs(bias[1] / (static_cast<double>(input_scale) * plain.scales[1]));
  ASSERT_GT(plain_q, 2147483647.0) << "the synthetic case must overflow int32 without the floor";

  const std::vector<float> floor = MinWeightScalesForBias(bias, input_scale, true);
  ASSERT_EQ(floor.size(), 2u);
  const QuantizedWeights fixed = QuantizeSymmetricInt8(w, shape, true, 0, floor);
  EXPECT_FLOAT_EQ(fixed.scales[0], plain.scales[0]);  // the healthy channel keeps its precision
  EXPECT_GT(fixed.scales[1], plain.scales[1]);
  const double fixed_q = std::fabs(bias[1] / (static_cast<double>(input_scale) * fixed.scales[1]));
  EXPECT_LE(fixed_q, kMaxBiasMagnitude);
  EXPECT_GT(fixed_q, kMaxBiasMagnitude * 0.99);  // raised no more than needed
  // The dequantized bias is still the float bias (to within one step).
  const double step = static_cast<double>(input_scale) * fixed.scales[1];
  EXPECT_NEAR(std::round(bias[1] / step) * step, bias[1], step);
}

TEST(WeightQuantization, BiasFloorPerTensorTakesTheLargestBias) {
  const std::vector<float> bias = {1.0f, -4.0f, 2.0f};
  const std::vector<float> floor = MinWeightScalesForBias(bias, 0.5f, false, 100.0);
  ASSERT_EQ(floor.size(), 1u);
  EXPECT_NEAR(floor[0], 4.0 / (0.5 * 100.0), 1e-3);
  const std::vector<float> w = {0.01f, -0.02f, 0.005f};
  const QuantizedWeights q = QuantizeSymmetricInt8(w, {3, 1}, false, 0, floor);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_GE(q.scales[0], floor[0]);
  // Without a floor nothing changes.
  EXPECT_FLOAT_EQ(QuantizeSymmetricInt8(w, {3, 1}, false, 0).scales[0], 0.02f / 127.0f);
}

}  // namespace
}  // namespace edgeopt::optimize
