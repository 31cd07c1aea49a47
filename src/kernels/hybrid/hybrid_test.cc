// The AVX-512 VNNI hybrid CONV_2D / FULLY_CONNECTED against the reference kernels, bit for bit:
// depths that are not multiples of 4, unit counts that are not multiples of 16 (odd numbers of
// blocks), row counts that leave every tile height, 1x1 convolutions read in place, batches, padding
// (the zero point in padded taps), strides, dilation, symmetric / asymmetric input quantization,
// per-tensor / per-channel (and all-equal per-channel) weight scales, activations, 1 and 2
// threads, repeated invokes with new inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/hybrid/hybrid_dot.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "runtime/thread_pool.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

std::vector<float> Randoms(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Weights: int8 values with per-unit (or one) scales; equal_scales repeats one scale per unit.
int32_t AddWeights(GraphBuilder& b, std::mt19937& rng, const std::vector<int32_t>& shape, bool per_channel,
                   bool equal_scales) {
  size_t n = 1;
  for (int32_t d : shape) n *= d;
  std::uniform_int_distribution<int> v(-127, 127);
  std::vector<int8_t> w(n);
  for (auto& x : w) x = static_cast<int8_t>(v(rng));
  w[0] = -128 + 1;  // extremes
  w[n - 1] = 127;
  QuantParams q;
  std::uniform_real_distribution<float> s(0.001f, 0.05f);
  const int units = per_channel ? shape[0] : 1;
  const float common = s(rng);
  for (int u = 0; u < units; ++u) {
    q.scale.push_back(equal_scales ? common : s(rng));
    q.zero_point.push_back(0);
  }
  q.quantized_dimension = 0;
  return b.Const<int8_t>("w", DType::kInt8, shape, w, q);
}

bool HasVnni() { return rt::CpuHardware().has_avx512_vnni(); }

TEST(HybridFast, FullyConnectedMatchesReferenceBitForBit) {
  if (!HasVnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI: hybrid ops run the reference kernel";
  std::mt19937 rng(41);
  const int depths[] = {1, 3, 4, 5, 17, 64, 67, 640};
  const int units[] = {1, 7, 16, 17, 33, 128};
  int n = 0;
  for (int depth : depths)
    for (int u : units)
      for (int variant = 0; variant < 2; ++variant, ++n) {
        // Up to 5 rows, and every sixth case 13-42 (tiles of 8, 4, 2, 1 rows, each row its own
        // batch scale and zero point; split over 2 threads).
        const int batches = n % 6 == 5 ? 13 + n % 30 : 1 + n % 5;
        const bool per_channel = n % 3 != 0, asymmetric = n % 2 == 0, bias = n % 4 != 3;
        GraphBuilder b;
        auto x = b.Input("x", DType::kFloat32, {batches, depth});
        std::vector<int32_t> ins = {x, AddWeights(b, rng, {u, depth}, per_channel, n % 7 == 0)};
        if (bias) ins.push_back(b.Const<float>("b", DType::kFloat32, {u}, Randoms(rng, u, -1, 1)));
        auto y = b.Tensor("y", DType::kFloat32, {batches, u});
        tflite::FullyConnectedOptionsT o;
        o.asymmetric_quantize_inputs = asymmetric;
        o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(n % 4 == 1 ? 1 : n % 4 == 2 ? 3 : 0);
        b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, ins, {y}, o);
        b.Output(y);
        testing::ExpectFloatRoundsMatchReference(b.Finish(), rng, 1 + n % 2, "fully_connected/hybrid/avx512vnni",
                             "fc batches " + std::to_string(batches) + " depth " + std::to_string(depth) + " units " +
                                 std::to_string(u) + (per_channel ? " per-channel" : "") +
                                 (asymmetric ? " asymmetric" : ""));
      }
}

TEST(HybridFast, Conv2DMatchesReferenceBitForBit) {
  if (!HasVnni()) GTEST_SKIP() << "this CPU has no AVX-512 VNNI: hybrid ops run the reference kernel";
  std::mt19937 rng(42);
  struct Case {
    int batch, h, w, c, oc, kh, kw, s, d;
    bool same;
  };
  std::vector<Case> cases = {{1, 49, 10, 1, 64, 10, 4, 2, 1, true},  // kws stem: 10x4 stride 2, one channel
                             {1, 25, 5, 64, 64, 1, 1, 1, 1, true},   // pointwise
                             {2, 9, 7, 3, 17, 3, 3, 2, 1, true},
                             {1, 8, 8, 5, 33, 3, 3, 1, 2, true},    // dilated
                             {1, 6, 11, 6, 16, 5, 3, 1, 1, false},  // VALID
                             {2, 5, 5, 13, 7, 3, 3, 1, 1, true},
                             {1, 1, 1, 70, 40, 1, 1, 1, 1, false},
                             {1, 12, 12, 16, 48, 3, 3, 2, 1, true},
                             // 1x1 stride 1 over channels in groups of 4: the image is A itself
                             // (batches of 63 rows: 8-row tiles, then 4, 2, 1; 5 blocks: 2+2+1)
                             {2, 7, 9, 24, 70, 1, 1, 1, 1, true},
                             {1, 13, 3, 20, 100, 1, 1, 1, 1, false},
                             {1, 9, 9, 12, 24, 1, 1, 2, 1, true},  // 1x1 stride 2: gathered
                             {1, 11, 10, 6, 35, 1, 1, 1, 1, true}};  // 6 channels: padded to 8, gathered
  int n = 0;
  for (const Case& c : cases)
    for (int scales = 0; scales < 3; ++scales, ++n) {  // per tensor, per channel, per channel all equal
      GraphBuilder b;
      auto x = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.c});
      std::vector<int32_t> ins = {x, AddWeights(b, rng, {c.oc, c.kh, c.kw, c.c}, scales > 0, scales == 2)};
      if (n % 4 != 3) ins.push_back(b.Const<float>("b", DType::kFloat32, {c.oc}, Randoms(rng, c.oc, -1, 1)));
      const int ekh = (c.kh - 1) * c.d + 1, ekw = (c.kw - 1) * c.d + 1;
      const int oh = c.same ? (c.h + c.s - 1) / c.s : (c.h - ekh) / c.s + 1;
      const int ow = c.same ? (c.w + c.s - 1) / c.s : (c.w - ekw) / c.s + 1;
      auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, c.oc});
      tflite::Conv2DOptionsT o;
      o.padding = c.same ? tflite::Padding_SAME : tflite::Padding_VALID;
      o.stride_h = o.stride_w = c.s;
      o.dilation_h_factor = o.dilation_w_factor = c.d;
      o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(n % 3 == 1 ? 1 : 0);
      b.Op(tflite::BuiltinOperator_CONV_2D, ins, {y}, o);
      b.Output(y);
      testing::ExpectFloatRoundsMatchReference(b.Finish(), rng, 1 + n % 2, "conv2d/hybrid/avx512vnni",
                           "conv " + std::to_string(c.batch) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) +
                               "x" + std::to_string(c.c) + " -> " + std::to_string(c.oc) + " k" + std::to_string(c.kh) +
                               "x" + std::to_string(c.kw) + " scales " + std::to_string(scales));
    }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt::kernels::hybrid {
namespace {

// The vector input quantization against QuantizeRows, bit for bit: lengths around the vector
// width, exact ties (x·inverse = k + 1/2: std::round goes away from zero), -0, one-signed rows,
// all-zero rows, symmetric and asymmetric.
TEST(HybridFast, VectorQuantizeMatchesQuantizeRows) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  std::mt19937 rng(43);
  std::vector<std::vector<float>> rows;
  rt::ThreadPool pool(2);  // long rows are split into 16384-value chunks between threads
  for (int n : {1, 2, 15, 16, 17, 31, 33, 64, 100, 1000, 2 * 16384 + 5, 70001}) {
    rows.push_back(edgeopt::Randoms(rng, n, -5.0f, 3.0f));
    rows.push_back(edgeopt::Randoms(rng, n, 0.25f, 9.0f));
    rows.push_back(edgeopt::Randoms(rng, n, -7.0f, -0.5f));
    rows.push_back(std::vector<float>(n, 0.0f));
  }
  // Ties with scale 1: symmetric max |x| = 127, asymmetric range [-128, 127].
  std::vector<float> ties = {127.0f, -128.0f, -0.0f};
  for (int k = -127; k < 127; ++k) ties.push_back(static_cast<float>(k) + 0.5f);
  rows.push_back(ties);
  for (const auto& row : rows)
    for (bool asymmetric : {false, true})
      for (int64_t nrows : {1, 2}) {
        const int64_t cols = static_cast<int64_t>(row.size()) / nrows;
        if (cols == 0) continue;
        std::vector<int8_t> want(row.size(), 1), got(row.size(), 2);
        std::vector<float> want_scale(nrows), got_scale(nrows);
        std::vector<int32_t> want_zp(nrows), got_zp(nrows);
        QuantizeRows(row.data(), nrows, cols, asymmetric, want.data(), want_scale.data(), want_zp.data());
        QuantizeRowsAvx512(row.data(), nrows, cols, asymmetric, got.data(), got_scale.data(), got_zp.data(),
                           cols > 16384 ? &pool : nullptr);
        const size_t n = static_cast<size_t>(nrows * cols);
        EXPECT_EQ(std::vector<int8_t>(got.begin(), got.begin() + n), std::vector<int8_t>(want.begin(), want.begin() + n))
            << "length " << row.size() << " rows " << nrows << (asymmetric ? " asymmetric" : " symmetric");
        EXPECT_EQ(got_scale, want_scale);
        EXPECT_EQ(got_zp, want_zp);
      }
}

}  // namespace
}  // namespace edgeopt::kernels::hybrid
