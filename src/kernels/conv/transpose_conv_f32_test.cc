// The float32 TRANSPOSE_CONV / Convolution2DTransposeBias GEMM and tiles paths (transpose_conv.h)
// against the reference kernels: random shapes with overlapping and non-overlapping taps,
// strides 1-3, SAME/VALID, channel counts around the vector widths, batch 2, bias or none,
// activations, 1 and 2 threads, AVX-512 and AVX2; repeated invokes with new inputs; then the
// non-overlapping tiles form over every product count 1..16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

TEST(TransposeConvF32, GemmPathMatchesReference) {
  std::vector<std::pair<const char*, rt::CpuFeatures>> cpus;
  if (rt::CpuHardware().has_avx512()) cpus.push_back({"avx512", rt::CpuHardware()});
  if (rt::CpuHardware().has_avx2_fma()) cpus.push_back({"avx2", rt::CapFeatures(rt::CpuHardware(), "avx2")});
  if (cpus.empty()) GTEST_SKIP() << "this CPU has no AVX2: transpose convolution runs the reference kernel";
  std::mt19937 rng(77);
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  for (int i = 0; i < 48; ++i) {
    const bool custom = i % 2 == 1;  // MediaPipe's Convolution2DTransposeBias
    const int n = pick({1, 2}), h = pick({1, 3, 6, 9}), w = pick({1, 2, 5, 8}), in_c = pick({1, 3, 8, 16, 17, 33});
    const int out_c = pick({1, 2, 5, 8, 16, 19, 40}), kh = pick({1, 2, 3, 4}), kw = pick({1, 2, 3, 4, 5});
    const int sh = pick({1, 2, 3}), sw = pick({1, 2, 3});
    const bool same = pick({0, 1}) == 1, has_bias = custom || i % 3 != 0;
    int oh, ow;
    if (custom) {
      const int ph = same ? std::max(0, kh - (h - 1) % sh - 1) : 0, pw = same ? std::max(0, kw - (w - 1) % sw - 1) : 0;
      oh = sh * (h - 1) + kh - ph;
      ow = sw * (w - 1) + kw - pw;
    } else {
      oh = same ? h * sh : (h - 1) * sh + kh;
      ow = same ? w * sw : (w - 1) * sw + kw;
    }
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {n, h, w, in_c});
    std::vector<float> wv(static_cast<size_t>(out_c) * kh * kw * in_c), bv(out_c);
    for (float& v : wv) v = val(rng);
    for (float& v : bv) v = val(rng);
    auto wt = b.Const<float>("w", DType::kFloat32, {out_c, kh, kw, in_c}, wv);
    auto y = b.Tensor("y", DType::kFloat32, {n, oh, ow, out_c});
    if (custom) {
      const int32_t params[3] = {same ? 1 : 2, sw, sh};
      std::vector<uint8_t> options(sizeof(params));
      std::memcpy(options.data(), params, sizeof(params));
      b.CustomOp("Convolution2DTransposeBias", {x, wt, b.Const<float>("b", DType::kFloat32, {out_c}, bv)}, {y}, options);
    } else {
      auto shape = b.Const<int32_t>("shape", DType::kInt32, {4}, {n, oh, ow, out_c});
      std::vector<int32_t> ins = {shape, wt, x};
      if (has_bias) ins.push_back(b.Const<float>("b", DType::kFloat32, {out_c}, bv));
      tflite::TransposeConvOptionsT o;
      o.padding = same ? tflite::Padding_SAME : tflite::Padding_VALID;
      o.stride_h = sh;
      o.stride_w = sw;
      o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(i % 4 == 0 ? 1 : i % 4 == 2 ? 3 : 0);
      b.Op(tflite::BuiltinOperator_TRANSPOSE_CONV, ins, {y}, o);
    }
    b.Output(y);
    auto model = rt::Model::FromGraph(b.Finish());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const std::string what = std::string(custom ? "bias op " : "transpose_conv ") + std::to_string(n) + "x" +
                             std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(in_c) + " -> " +
                             std::to_string(out_c) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
                             std::to_string(sh) + "," + std::to_string(sw) + (same ? " SAME" : " VALID");
    for (const auto& [isa, cpu] : cpus) {
      rt::InterpreterOptions fast_opt, ref_opt;
      fast_opt.cpu = &cpu;
      fast_opt.num_threads = 1 + i % 2;
      ref_opt.reference_kernels_only = true;
      auto fast = rt::Interpreter::Create(*model, fast_opt);
      auto ref = rt::Interpreter::Create(*model, ref_opt);
      ASSERT_TRUE(fast.ok() && ref.ok());
      ASSERT_TRUE((*fast)->AllocateTensors().ok() && (*ref)->AllocateTensors().ok()) << what;
      // The GEMM family follows the shape (gemm::SelectUkernels); capped to AVX2 it is AVX2. On
      // AVX-512, non-overlapping taps (stride = filter, no padding) with at most 16 products per
      // pixel take the tiles form.
      const std::string variant = (*fast)->ops()[0].variant;
      const bool tiles = std::string(isa) == "avx512" && kh * kw * out_c <= 16 && sh == kh && sw == kw &&
                         oh == h * kh && ow == w * kw;
      const std::string prefix = std::string(custom ? "transpose_conv_bias/f32/" : "transpose_conv/f32/") +
                                 (tiles ? "tiles_avx512" : "gemm_");
      EXPECT_EQ(variant.substr(0, prefix.size()), prefix) << what;
      if (std::string(isa) == "avx2") {
        EXPECT_EQ(variant, prefix + "avx2") << what;
      }
      const int64_t count = (*fast)->input(0)->num_elements();
      for (int round = 0; round < 2; ++round) {
        std::vector<float> in(count);
        for (float& v : in) v = val(rng);
        std::memcpy((*fast)->input(0)->data, in.data(), count * sizeof(float));
        std::memcpy((*ref)->input(0)->data, in.data(), count * sizeof(float));
        ASSERT_TRUE((*fast)->Invoke().ok());
        ASSERT_TRUE((*ref)->Invoke().ok());
        const rt::RtTensor* got = (*fast)->output(0);
        const rt::RtTensor* want = (*ref)->output(0);
        ASSERT_EQ(got->shape, want->shape) << what;
        // Sums of at most KH·KW·Cin products of values in [-1, 1]: rounding differences stay
        // far below 1e-5 of that bound.
        const float tol = 1e-5f * kh * kw * in_c + 1e-6f;
        int bad = 0;
        for (int64_t e = 0; e < want->num_elements(); ++e)
          if (!(std::fabs(got->data_as<float>()[e] - want->data_as<float>()[e]) <= tol) && bad++ < 5)
            ADD_FAILURE() << what << " " << isa << " element " << e << ": got " << got->data_as<float>()[e]
                          << " want " << want->data_as<float>()[e];
      }
    }
  }
}

// The tiles form (AVX-512): every product count KH·KW·Cout from 1 to 16 (the 16 instances),
// input channels below, at and over one 16-lane block, rows not a multiple of 16 pixels (the
// masked last tile), batch 2, both ops, a clamp, 1 and 2 threads; selfie segmentation's
// [1,128,128,16] -> [1,256,256,1] head among them.
TEST(TransposeConvF32, TilesPathMatchesReference) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: the tiles form is not used";
  struct Case {
    int n, h, w, in_c, out_c, k;
    bool custom;
  };
  std::vector<Case> cases = {{1, 128, 128, 16, 1, 2, true}, {2, 5, 37, 3, 4, 2, false}, {1, 3, 16, 33, 1, 4, true},
                             {1, 4, 17, 64, 16, 1, false}, {2, 2, 15, 17, 1, 3, false}, {1, 6, 9, 8, 2, 2, true}};
  for (int p = 1; p <= 16; ++p) {  // product counts 1..16 as k x k x Cout
    const int k = p % 4 == 0 ? 2 : 1;
    cases.push_back({1 + p % 2, 3, 5 + p, 1 + 7 * (p % 5), p / (k * k), k, p % 3 == 0});
  }
  std::mt19937 rng(78);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  int idx = 0;
  for (const Case& c : cases) {
    const int oh = c.h * c.k, ow = c.w * c.k;
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {c.n, c.h, c.w, c.in_c});
    std::vector<float> wv(static_cast<size_t>(c.out_c) * c.k * c.k * c.in_c), bv(c.out_c);
    for (float& v : wv) v = val(rng);
    for (float& v : bv) v = val(rng);
    auto wt = b.Const<float>("w", DType::kFloat32, {c.out_c, c.k, c.k, c.in_c}, wv);
    auto y = b.Tensor("y", DType::kFloat32, {c.n, oh, ow, c.out_c});
    if (c.custom) {
      const int32_t params[3] = {2, c.k, c.k};  // VALID, stride = filter
      std::vector<uint8_t> options(sizeof(params));
      std::memcpy(options.data(), params, sizeof(params));
      b.CustomOp("Convolution2DTransposeBias", {x, wt, b.Const<float>("b", DType::kFloat32, {c.out_c}, bv)}, {y}, options);
    } else {
      auto shape = b.Const<int32_t>("shape", DType::kInt32, {4}, {c.n, oh, ow, c.out_c});
      tflite::TransposeConvOptionsT o;
      o.padding = tflite::Padding_VALID;
      o.stride_h = o.stride_w = c.k;
      o.fused_activation_function = idx % 2 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
      std::vector<int32_t> ins = {shape, wt, x};
      if (idx % 3 != 1) ins.push_back(b.Const<float>("b", DType::kFloat32, {c.out_c}, bv));
      b.Op(tflite::BuiltinOperator_TRANSPOSE_CONV, ins, {y}, o);
    }
    b.Output(y);
    auto model = rt::Model::FromGraph(b.Finish());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const std::string what = std::to_string(c.n) + "x" + std::to_string(c.h) + "x" + std::to_string(c.w) + "x" +
                             std::to_string(c.in_c) + " -> " + std::to_string(c.out_c) + " k" + std::to_string(c.k) +
                             (c.custom ? " bias op" : " transpose_conv");
    rt::InterpreterOptions fast_opt, ref_opt;
    fast_opt.num_threads = 1 + idx++ % 2;
    ref_opt.reference_kernels_only = true;
    auto fast = rt::Interpreter::Create(*model, fast_opt);
    auto ref = rt::Interpreter::Create(*model, ref_opt);
    ASSERT_TRUE(fast.ok() && ref.ok());
    ASSERT_TRUE((*fast)->AllocateTensors().ok() && (*ref)->AllocateTensors().ok()) << what;
    EXPECT_EQ((*fast)->ops()[0].variant,
              std::string(c.custom ? "transpose_conv_bias" : "transpose_conv") + "/f32/tiles_avx512") << what;
    const int64_t count = (*fast)->input(0)->num_elements();
    std::vector<float> in(count);
    for (float& v : in) v = val(rng);
    std::memcpy((*fast)->input(0)->data, in.data(), count * sizeof(float));
    std::memcpy((*ref)->input(0)->data, in.data(), count * sizeof(float));
    ASSERT_TRUE((*fast)->Invoke().ok() && (*ref)->Invoke().ok());
    const rt::RtTensor* got = (*fast)->output(0);
    const rt::RtTensor* want = (*ref)->output(0);
    ASSERT_EQ(got->shape, want->shape) << what;
    const float tol = 1e-5f * c.in_c + 1e-6f;  // one tap per output: a sum of Cin products
    int bad = 0;
    for (int64_t e = 0; e < want->num_elements(); ++e)
      if (!(std::fabs(got->data_as<float>()[e] - want->data_as<float>()[e]) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << " element " << e << ": got " << got->data_as<float>()[e] << " want "
                      << want->data_as<float>()[e];
  }
}

}  // namespace
}  // namespace edgeopt
