// QUANTIZE uint8 -> int8 (zero points 128 apart) into the int8 CONV_2D reading it
// (quantize_into_conv.cc): the same bytes as the two ops unfused, over the convolution's VNNI
// paths (the stem's spread rows, 1x1 rows, direct windows, im2col, one output channel, few
// channels in lanes), at 1 and 2 threads, and without VNNI (the kernel flips into its own buffer);
// not fused when the QUANTIZE changes the scale or does not move the zero point by exactly 128.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "kernels/fused/fused_test_util.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

struct QConvCase {
  int h, w, c, n, k, stride;
  tflite::Padding padding;
  float out_scale = 0.05f;  // the QUANTIZE's output scale (equal to its input's: the fusion applies)
  int zp_shift = 128;       // input zero point minus output zero point
};

QuantParams Q(float scale, int64_t zp) {
  QuantParams q;
  q.scale = {scale};
  q.zero_point = {zp};
  return q;
}

Graph MakeQuantizeConv(const QConvCase& c, uint64_t seed) {
  GraphBuilder b(seed);
  std::mt19937_64 rng(seed);
  const int zu = 100 + static_cast<int>(rng() % 60);
  auto u = b.Input("u", DType::kUInt8, {1, c.h, c.w, c.c}, Q(0.05f, zu));
  auto x = b.Tensor("x", DType::kInt8, {1, c.h, c.w, c.c}, Q(c.out_scale, zu - c.zp_shift));
  b.Op(tflite::BuiltinOperator_QUANTIZE, {u}, {x}, tflite::QuantizeOptionsT{});
  std::vector<float> ws(static_cast<size_t>(c.n));
  std::uniform_real_distribution<float> spread(0.5f, 2.0f);
  const float base = 40.0f / (70.0f * 73.0f * std::sqrt(static_cast<float>(c.k * c.k * c.c)));
  for (float& s : ws) s = base * spread(rng);
  auto w = b.ConstRandom("w", DType::kInt8, {c.n, c.k, c.k, c.c}, -127, 127,
                         QuantPerAxis(ws, 0, std::vector<int64_t>(ws.size(), 0)));
  std::vector<float> bs(ws.size());
  for (size_t i = 0; i < ws.size(); ++i) bs[i] = c.out_scale * ws[i];
  auto bias = b.ConstRandom("b", DType::kInt32, {c.n}, -3000, 3000, QuantPerAxis(bs, 0));
  const int oh = c.padding == tflite::Padding_SAME ? (c.h + c.stride - 1) / c.stride : (c.h - c.k) / c.stride + 1;
  const int ow = c.padding == tflite::Padding_SAME ? (c.w + c.stride - 1) / c.stride : (c.w - c.k) / c.stride + 1;
  auto y = b.Tensor("y", DType::kInt8, {1, oh, ow, c.n}, Q(0.05f, static_cast<int64_t>(rng() % 40) - 20));
  tflite::Conv2DOptionsT o;
  o.padding = c.padding;
  o.stride_h = o.stride_w = c.stride;
  o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, o);
  b.Output(y);
  return b.Finish();
}

struct ModelRun {
  std::vector<uint8_t> out;
  std::string first_variant;
};

ModelRun RunModel(const std::shared_ptr<const rt::Model>& model, const std::vector<uint8_t>& u, int threads,
                  const rt::CpuFeatures& cpu, bool fuse) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.cpu = &cpu;
  io.fuse_ops = fuse;
  testing::FusionRun run = testing::RunOnBytes(model, u, io);
  ModelRun r;
  if (!run.outs.empty()) r.out = std::move(run.outs[0]);
  if (!run.variants.empty()) r.first_variant = run.variants.front();
  return r;
}

TEST(FusedQuantizeIntoConv, MatchesUnfused) {
  std::vector<std::pair<std::string, rt::CpuFeatures>> cpus = {{"this CPU", rt::CpuHardware()}};
  if (rt::CpuHardware().has_avx2_fma()) cpus.push_back({"avx2", rt::CapFeatures(rt::CpuHardware(), "avx2")});
  const std::vector<QConvCase> cases = {
      {33, 31, 3, 16, 3, 2, tflite::Padding_SAME},   // a stem: 3 channels, stride 2
      {17, 19, 8, 24, 1, 1, tflite::Padding_SAME},   // 1x1: rows read as they are
      {15, 13, 4, 16, 3, 1, tflite::Padding_VALID},  // windows read in place
      {14, 12, 5, 8, 3, 1, tflite::Padding_SAME},    // 5 channels
      {20, 18, 1, 4, 5, 1, tflite::Padding_SAME},    // one channel in, four out
      {11, 9, 8, 1, 3, 2, tflite::Padding_SAME},     // one output channel
  };
  uint64_t seed = 40;
  int vnni_runs = 0;
  for (const QConvCase& c : cases) {
    auto model = rt::Model::FromGraph(MakeQuantizeConv(c, ++seed));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> u(static_cast<size_t>(c.h) * c.w * c.c);
    for (uint8_t& v : u) v = static_cast<uint8_t>(rng());
    for (const auto& [name, cpu] : cpus)
      for (int threads : {1, 2}) {
        const std::string what = std::to_string(c.h) + "x" + std::to_string(c.w) + "x" + std::to_string(c.c) + " k" +
                                 std::to_string(c.k) + " -> " + std::to_string(c.n) + " " + name + " threads " +
                                 std::to_string(threads);
        const ModelRun fused = RunModel(*model, u, threads, cpu, true);
        const ModelRun plain = RunModel(*model, u, threads, cpu, false);
        EXPECT_EQ(fused.first_variant.rfind("fused/quantize+conv2d/int8", 0), 0u) << what << ": " << fused.first_variant;
        EXPECT_EQ(plain.first_variant.rfind("fused/", 0), std::string::npos) << what;
        EXPECT_EQ(fused.out, plain.out) << what;
        vnni_runs += fused.first_variant.find("avx512vnni") != std::string::npos;
      }
  }
  if (rt::CpuHardware().has_avx512_vnni()) {
    EXPECT_GE(vnni_runs, 12);
  }
}

TEST(FusedQuantizeIntoConv, OtherQuantizesStayApart) {
  for (const QConvCase& c : {QConvCase{9, 9, 4, 8, 3, 1, tflite::Padding_SAME, 0.06f},
                             QConvCase{9, 9, 4, 8, 3, 1, tflite::Padding_SAME, 0.05f, 127}}) {
    auto model = rt::Model::FromGraph(MakeQuantizeConv(c, 3));
    ASSERT_TRUE(model.ok());
    std::vector<uint8_t> u(static_cast<size_t>(c.h) * c.w * c.c, 7);
    const ModelRun r = RunModel(*model, u, 1, rt::Cpu(), true);
    EXPECT_EQ(r.first_variant.rfind("fused/", 0), std::string::npos) << r.first_variant;
  }
}

}  // namespace
}  // namespace edgeopt
