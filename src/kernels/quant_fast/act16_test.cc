// The fast int16 RELU / RELU6, LEAKY_RELU and LOGISTIC / TANH (act16_fast.cc) against the reference kernels,
// bit for bit, on every int16 input value at once (plus odd-length tails and 2 threads): RELU
// rescales with multipliers below and above 1 (left shifts), each op's clamp bounds, LOGISTIC /
// TANH input scales across the table path's range (multipliers near 2^14 and 2^15, shifts from
// 0 to 31); power-of-two input scales (the gemmlowp fixed-point path) and a RELU whose rescale
// would overflow the 32-bit lane stay on the reference kernel (variant checked). Some cases also
// against TFLite 2.9.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "graph/builder.h"
#include "support/fast_vs_reference.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

QuantParams Q(float scale) {
  QuantParams q;
  q.scale = {scale};
  q.zero_point = {0};
  return q;
}

Graph BuildAct(tflite::BuiltinOperator op, int64_t n, float in_scale, float out_scale, float alpha = 0.1f) {
  GraphBuilder b(3);
  const int32_t x = b.Input("x", DType::kInt16, {1, static_cast<int32_t>(n)}, Q(in_scale));
  const int32_t y = b.Tensor("y", DType::kInt16, {1, static_cast<int32_t>(n)}, Q(out_scale));
  if (op == tflite::BuiltinOperator_LEAKY_RELU) {
    tflite::LeakyReluOptionsT o;
    o.alpha = alpha;
    b.Op(op, {x}, {y}, o);
  } else {
    b.Op(op, {x}, {y});
  }
  b.Output(y);
  return b.Finish();
}

// Every int16 value once, then `extra` more cycling from -32768 (n = 65536 + extra).
testing::TensorValue AllValues(int64_t n) {
  testing::TensorValue v{"x", DType::kInt16, {1, static_cast<int32_t>(n)}, {}};
  v.data.reserve(static_cast<size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    const auto bits = static_cast<uint16_t>(i + 32768);
    v.data.push_back(static_cast<uint8_t>(bits & 0xFF));
    v.data.push_back(static_cast<uint8_t>(bits >> 8));
  }
  return v;
}

std::string Name(tflite::BuiltinOperator op) { return tflite::EnumNameBuiltinOperator(op); }

TEST(Act16Fast, MatchesReferenceOnEveryValue) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  std::mt19937_64 rng(31);
  // (RELU_N1_TO_1 and RELU_0_TO_1 take no int16 in TFLite 2.9, nor in the reference kernel.)
  const tflite::BuiltinOperator relus[] = {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6};
  int cases = 0;
  for (int i = 0; i < 24; ++i) {
    const auto op = relus[i % 2];
    // in / out ratios from 1/300 to 300 (shifts -9 .. 9), and equal scales.
    const float in_scale = std::pow(10.0f, std::uniform_real_distribution<float>(-5, -2)(rng));
    const float ratio = i % 6 == 5 ? 1.0f : std::pow(10.0f, std::uniform_real_distribution<float>(-2.5f, 2.5f)(rng));
    const int64_t n = 65536 + (i % 3 == 0 ? 0 : 1 + i);
    testing::FastCheck check;
    check.op_type = Name(op);
    check.variant = "int16/avx2";
    check.threads = 1 + i % 2;
    check.inputs = {AllValues(n)};
    std::ostringstream what;
    what << Name(op) << " in " << in_scale << " out " << in_scale / ratio << " n " << n;
    testing::ExpectFastMatchesReference(BuildAct(op, n, in_scale, in_scale / ratio), what.str(), check);
    ++cases;
  }
  for (auto op : {tflite::BuiltinOperator_LOGISTIC, tflite::BuiltinOperator_TANH}) {
    // Input scales over the table path's range: 3 * 4096 * scale from ~1e-6 (shift 31... the
    // largest) to ~2.5 (shift 13) and to 32767 (shift 0: the multiplier at its top), random
    // ones, and 2^-12 (the fixed-point path for both; tanh also 2^-11).
    std::vector<float> scales = {1e-10f, 3e-8f, 1e-5f, 2.4e-4f, 1.0f / 3 / 4096 * 32767, 6.1e-5f, 2.0f};
    for (int k = 0; k < 6; ++k) scales.push_back(std::pow(10.0f, std::uniform_real_distribution<float>(-6, 0)(rng)));
    for (size_t k = 0; k < scales.size(); ++k) {
      const int64_t n = 65536 + static_cast<int64_t>(k % 3) * 7;
      testing::FastCheck check;
      check.op_type = Name(op);
      check.variant = "int16/avx2";
      check.threads = 1 + static_cast<int>(k % 2);
      check.inputs = {AllValues(n)};
      std::ostringstream what;
      what << Name(op) << " in " << scales[k] << " n " << n;
      testing::ExpectFastMatchesReference(BuildAct(op, n, scales[k], 1.0f / 32768), what.str(), check);
      ++cases;
    }
    for (float pot : {1.0f / 4096, 1.0f / 2048}) {
      if (op == tflite::BuiltinOperator_LOGISTIC && pot == 1.0f / 2048) continue;
      testing::FastCheck check;
      check.op_type = Name(op);
      check.variant = "/ref";
      check.inputs = {AllValues(65536)};
      testing::ExpectFastMatchesReference(BuildAct(op, 65536, pot, 1.0f / 32768), Name(op) + " power-of-two scale", check);
    }
  }
  // A rescale by 2^16 or more: x << 16 leaves int32, so the reference keeps it.
  testing::FastCheck check;
  check.op_type = "RELU";
  check.variant = "/ref";
  check.inputs = {AllValues(65536)};
  testing::ExpectFastMatchesReference(BuildAct(tflite::BuiltinOperator_RELU, 65536, 1.0f, 1.0f / 100000), "RELU ratio 1e5",
                                      check);
  EXPECT_EQ(cases, 24 + 2 * 13);
}

// int16 LEAKY_RELU: both slopes rescaled as RELU's, each value taking its sign's; every int16
// value, slopes below and above 1, rescales both ways, odd lengths, 1-2 threads; a negative alpha
// (a negative multiplier) and a slope whose rescale leaves the 32-bit lane keep the reference.
TEST(Act16Fast, LeakyReluMatchesReferenceOnEveryValue) {
  if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast kernels are not used";
  struct C {
    float alpha, ratio;  // ratio: in_scale / out_scale
    bool fast;
  };
  const C cases[] = {{0.1f, 1.0f, true},   {0.2f, 0.37f, true}, {0.01f, 3.0f, true},  {0.3f, 250.0f, true},
                     {1.5f, 0.02f, true},  {0.1f, 1e-3f, true}, {-0.2f, 1.0f, false}, {0.5f, 1e5f, false}};
  int k = 0;
  for (const C& c : cases) {
    const float in_scale = 2e-4f;
    const int64_t n = 65536 + k % 3 * 5;
    testing::FastCheck check;
    check.op_type = "LEAKY_RELU";
    check.variant = c.fast ? "leaky_relu/int16/avx2" : "/ref";
    check.threads = 1 + k++ % 2;
    check.inputs = {AllValues(n)};
    std::ostringstream what;
    what << "LEAKY_RELU alpha " << c.alpha << " in/out " << c.ratio << " n " << n;
    testing::ExpectFastMatchesReference(BuildAct(tflite::BuiltinOperator_LEAKY_RELU, n, in_scale, in_scale / c.ratio, c.alpha),
                                        what.str(), check);
  }
  EXPECT_TRUE(testing::ExpectMatches(BuildAct(tflite::BuiltinOperator_LEAKY_RELU, 1000, 3e-4f, 2e-4f, 0.1f),
                                     "LEAKY_RELU int16 vs TFLite 2.9", testing::ExactOptions()));
}

TEST(Act16Fast, MatchesTflite29) {
  std::mt19937_64 rng(32);
  for (auto op : {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6, tflite::BuiltinOperator_LOGISTIC,
                  tflite::BuiltinOperator_TANH}) {
    const bool sigmoid = op == tflite::BuiltinOperator_LOGISTIC || op == tflite::BuiltinOperator_TANH;
    const float in_scale = std::pow(10.0f, std::uniform_real_distribution<float>(-5, -3)(rng));
    const float out_scale = sigmoid ? 1.0f / 32768 : in_scale * 0.37f;
    EXPECT_TRUE(testing::ExpectMatches(BuildAct(op, 1000, in_scale, out_scale), Name(op) + " int16",
                                       testing::ExactOptions()));
  }
}

}  // namespace
}  // namespace edgeopt
