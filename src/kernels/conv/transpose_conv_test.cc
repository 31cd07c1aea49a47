// TRANSPOSE_CONV against TFLite 2.9 over generated cases (float32, uint8, int8 per channel and
// per tensor, 16x8; strides, SAME/VALID, every consistent output size, optional bias, batch 2,
// constant and runtime output_shape), the fused activation (newer LiteRT) against 2.9's
// TRANSPOSE_CONV followed by the activation op, MediaPipe's Convolution2DTransposeBias against
// 2.9's TRANSPOSE_CONV with a bias; plus error paths.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "support/conformance.h"
#include "support/fast_vs_reference.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

using testing::ExactOptions;
using testing::ExpectMatches;
using testing::ExpectRejected;

struct TcCase {
  DType type = DType::kFloat32;
  bool per_channel = true;
  bool has_bias = true;
  bool runtime_shape = false;    // output_shape is a graph input
  DType bias16 = DType::kInt64;  // 16x8 bias type
  int n = 1, h = 3, w = 4, in_c = 3, out_c = 2, kh = 3, kw = 3;
  int stride_h = 2, stride_w = 2;
  int out_h = 6, out_w = 8;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;

  std::string Describe() const {
    std::ostringstream s;
    s << "transpose_conv " << DTypeName(type) << (per_channel ? " per-channel" : " per-tensor") << " in [" << n << ","
      << h << "," << w << "," << in_c << "] weights [" << out_c << "," << kh << "," << kw << "," << in_c << "] out ["
      << n << "," << out_h << "," << out_w << "," << out_c << "] stride " << stride_h << "x" << stride_w << " "
      << (padding == tflite::Padding_SAME ? "SAME" : "VALID") << " act " << act << (has_bias ? "" : " no bias")
      << (runtime_shape ? " runtime output_shape" : "")
      << (type == DType::kInt16 && has_bias ? std::string(" bias ") + std::string(DTypeName(bias16)) : "");
    return s.str();
  }
};

// With separate_activation, the fused activation becomes a following RELU/RELU6/RELU_N1_TO_1 op
// (what 2.9 can run).
Graph BuildTransposeConv(const TcCase& c, uint64_t seed, bool separate_activation = false) {
  GraphBuilder b(seed);
  auto& rng = b.rng();
  const std::vector<int32_t> out_shape = {c.n, c.out_h, c.out_w, c.out_c};
  const std::vector<int32_t> in_shape = {c.n, c.h, c.w, c.in_c};
  const std::vector<int32_t> w_shape = {c.out_c, c.kh, c.kw, c.in_c};
  int32_t shape = c.runtime_shape ? b.Input("output_shape", DType::kInt32, {4})
                                  : b.Const<int32_t>("output_shape", DType::kInt32, {4}, out_shape);
  int32_t x, w, bias = kNoTensor;
  std::optional<QuantParams> out_q;
  if (c.type == DType::kFloat32) {
    x = b.Input("x", DType::kFloat32, in_shape);
    w = b.ConstRandom("w", DType::kFloat32, w_shape, -1, 1);
    if (c.has_bias) bias = b.ConstRandom("bias", DType::kFloat32, {c.out_c}, -1, 1);
  } else {
    const DType wt = c.type == DType::kUInt8 ? DType::kUInt8 : DType::kInt8;
    QuantParams in_q = testing::RandomActivationQuant(rng, c.type);
    auto scales = testing::RandomWeightScales(rng, c.out_c, c.per_channel);
    const double lo = wt == DType::kUInt8 ? 0 : -127, hi = wt == DType::kUInt8 ? 255 : 127;
    w = b.ConstRandom("w", wt, w_shape, lo, hi, testing::WeightQuant(rng, wt, scales, 0));
    // Each output sums about (kh/stride_h) * (kw/stride_w) * in_c products.
    const int64_t terms = std::max<int64_t>(1, int64_t{c.kh} * c.kw * c.in_c / (c.stride_h * c.stride_w));
    out_q = testing::RandomActivationQuant(rng, c.type);
    out_q->scale[0] = testing::OutputScaleFor(c.type, terms, in_q.scale[0], scales[0]);
    x = b.Input("x", c.type, in_shape, in_q);
    if (c.has_bias)
      bias = testing::QuantizedBias(b, "bias", c.type == DType::kInt16 ? c.bias16 : DType::kInt32, c.out_c,
                                    in_q.scale[0], scales, out_q->scale[0] * 30, rng);
  }
  const int32_t y = b.Tensor("y", c.type, out_shape, out_q);
  tflite::TransposeConvOptionsT o;
  o.padding = static_cast<tflite::Padding>(c.padding);
  o.stride_h = c.stride_h;
  o.stride_w = c.stride_w;
  std::vector<int32_t> inputs = {shape, w, x};
  if (c.has_bias) inputs.push_back(bias);
  if (separate_activation && c.act != tflite::ActivationFunctionType_NONE) {
    const int32_t t = b.Tensor("pre_activation", c.type, out_shape, out_q);
    b.Op(tflite::BuiltinOperator_TRANSPOSE_CONV, inputs, {t}, o);
    const auto act_op = c.act == tflite::ActivationFunctionType_RELU    ? tflite::BuiltinOperator_RELU
                        : c.act == tflite::ActivationFunctionType_RELU6 ? tflite::BuiltinOperator_RELU6
                                                                        : tflite::BuiltinOperator_RELU_N1_TO_1;
    b.Op(act_op, {t}, {y});
  } else {
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
    b.Op(tflite::BuiltinOperator_TRANSPOSE_CONV, inputs, {y}, o);
  }
  b.Output(y);
  return b.Finish();
}

TcCase RandomCase(std::mt19937_64& rng, DType type) {
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  TcCase c;
  c.type = type;
  c.n = pick({1, 1, 2});
  c.h = pick({1, 2, 3, 5, 7});
  c.w = pick({1, 2, 4, 6});
  c.in_c = pick({1, 2, 3, 8, 13});
  c.out_c = pick({1, 3, 4, 16, 17});
  c.kh = pick({1, 2, 3, 4, 5});
  c.kw = pick({1, 2, 3, 4});
  c.stride_h = pick({1, 2, 2, 3});
  c.stride_w = pick({1, 2, 3});
  c.padding = pick({tflite::Padding_SAME, tflite::Padding_VALID});
  // Any output size whose convolution (same padding/stride/kernel) gives back the input size.
  const int rh = pick({0, 1, 2}) % c.stride_h, rw = pick({0, 1, 2}) % c.stride_w;
  if (c.padding == tflite::Padding_SAME) {
    c.out_h = c.h * c.stride_h - rh;
    c.out_w = c.w * c.stride_w - rw;
  } else {
    c.out_h = (c.h - 1) * c.stride_h + c.kh + rh;
    c.out_w = (c.w - 1) * c.stride_w + c.kw + rw;
  }
  return c;
}

// int8 / uint8 TRANSPOSE_CONV on the 8-bit engine (transpose_conv_q.cc: int16 GEMM products,
// row sums, AVX-512 requantization) against the reference kernel, byte for byte: the random
// shapes above plus wider ones (channels past 16 and odd, every tap count per output), per-channel
// and per-tensor weights, with and without bias, fused activations, 1-2 threads, the
// engine's variant checked.
TEST(TransposeConvQuantFast, MatchesReferenceKernel) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: 8-bit TRANSPOSE_CONV runs the reference kernel";
  std::mt19937_64 rng(808);
  for (int i = 0; i < 60; ++i) {
    const DType type = i % 3 == 2 ? DType::kUInt8 : DType::kInt8;
    TcCase c = RandomCase(rng, type);
    c.per_channel = type == DType::kInt8 && i % 4 != 1;
    c.has_bias = i % 5 != 0;
    c.act = i % 4 == 3 ? tflite::ActivationFunctionType_RELU : tflite::ActivationFunctionType_NONE;
    if (i % 6 == 0) {  // wider layers: two panels of products, odd input channels
      c.in_c = 37;
      c.out_c = 21;
      c.h = c.w = 9;
      c.out_h = c.padding == tflite::Padding_SAME ? c.h * c.stride_h : (c.h - 1) * c.stride_h + c.kh;
      c.out_w = c.padding == tflite::Padding_SAME ? c.w * c.stride_w : (c.w - 1) * c.stride_w + c.kw;
    }
    testing::FastCheck check;
    check.seed = 40 + i;
    check.threads = 1 + i % 2;
    check.op_type = "TRANSPOSE_CONV";
    check.variant = std::string("transpose_conv/") + std::string(DTypeName(type)) + "/gemm_avx512";
    if (!testing::ExpectFastMatchesReference(BuildTransposeConv(c, 900 + i), c.Describe(), check)) return;
  }
}

class TransposeConvConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
  template <typename Tweak>
  void RunRandom(DType type, int count, uint64_t seed, Tweak tweak) {
    std::mt19937_64 rng(seed);
    int failures = 0;
    for (int i = 0; i < count && failures < 5; ++i) {
      TcCase c = RandomCase(rng, type);
      tweak(c, rng);
      const uint64_t s = seed * 1000 + i;
      const std::string what = "case " + std::to_string(i) + ": " + c.Describe();
      Graph g = BuildTransposeConv(c, s);
      testing::CompareOptions opts = ExactOptions();
      std::vector<testing::TensorValue> inputs = testing::RandomInputs(g, opts);
      if (c.runtime_shape) {  // input 0 is output_shape: give it the right values
        const int32_t v[4] = {c.n, c.out_h, c.out_w, c.out_c};
        std::memcpy(inputs[0].data.data(), v, sizeof(v));
      }
      bool ok;
      if (c.act != tflite::ActivationFunctionType_NONE) {
        ok = testing::ExpectMatchesTwin(g, BuildTransposeConv(c, s, /*separate_activation=*/true), what, opts);
      } else {
        testing::CompareReport r = testing::CompareGraph(g, opts, inputs);
        EXPECT_TRUE(r.ok) << what << "\n" << r.Summary();
        ok = r.ok;
      }
      if (!ok) ++failures;
    }
  }
};

TEST_F(TransposeConvConformance, Float32) {
  RunRandom(DType::kFloat32, 50, 61, [](TcCase& c, std::mt19937_64& rng) { c.has_bias = rng() % 4 != 0; });
}

TEST_F(TransposeConvConformance, Int8PerChannel) {
  RunRandom(DType::kInt8, 40, 62, [](TcCase& c, std::mt19937_64& rng) { c.has_bias = rng() % 4 != 0; });
}

TEST_F(TransposeConvConformance, Int8PerTensor) {
  RunRandom(DType::kInt8, 20, 63, [](TcCase& c, std::mt19937_64&) { c.per_channel = false; });
}

TEST_F(TransposeConvConformance, UInt8) {
  RunRandom(DType::kUInt8, 30, 64, [](TcCase& c, std::mt19937_64& rng) {
    c.per_channel = false;
    c.has_bias = rng() % 4 != 0;
  });
}

// 2.9 requantizes 16x8 with an int64 bias in 64 bits, and accumulates in int32 with the
// 32-bit multiplier without one (or with an int32 bias).
TEST_F(TransposeConvConformance, Int16x8) {
  RunRandom(DType::kInt16, 25, 65, [](TcCase& c, std::mt19937_64& rng) {
    c.has_bias = rng() % 4 != 0;
    c.bias16 = rng() % 2 ? DType::kInt64 : DType::kInt32;
  });
}

// output_shape computed at run time: the output is dynamic, its shape set at invoke.
TEST_F(TransposeConvConformance, RuntimeOutputShape) {
  RunRandom(DType::kFloat32, 10, 66, [](TcCase& c, std::mt19937_64&) { c.runtime_shape = true; });
  RunRandom(DType::kInt8, 10, 67, [](TcCase& c, std::mt19937_64&) { c.runtime_shape = true; });
}

// The fused activation (TRANSPOSE_CONV version 4, newer LiteRT): 2.9 has no such option, so it
// runs TRANSPOSE_CONV followed by the activation op.
TEST_F(TransposeConvConformance, FusedActivation) {
  uint64_t seed = 68;
  for (DType t : {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kInt16}) {
    RunRandom(t, 8, seed++, [](TcCase& c, std::mt19937_64& rng) {
      c.act = static_cast<int>(1 + rng() % 3);  // RELU, RELU_N1_TO_1, RELU6
      if (c.type == DType::kInt16 && c.act == tflite::ActivationFunctionType_RELU_N1_TO_1)
        c.act = tflite::ActivationFunctionType_RELU;  // 2.9 has no int16 RELU_N1_TO_1 op to compare with
      c.per_channel = c.type != DType::kUInt8;
    });
  }
}

TEST_F(TransposeConvConformance, Errors) {
  TcCase base;
  {
    Graph g = BuildTransposeConv(base, 1);
    g.main().tensors[g.main().inputs[0]].shape = {1, 3, 4, 5};  // weights expect 3 channels
    ExpectRejected(g, "channels", "channel mismatch");
  }
  {
    Graph g = BuildTransposeConv(base, 1);
    Tensor& s = g.main().tensors[g.main().ops[0].inputs[0]];
    g.buffers[s.buffer] = Buffer::FromValues<int32_t>(std::vector<int32_t>{1, 6, 8, 5});
    ExpectRejected(g, "output_shape", "output channels differ from the weights");
  }
  {
    Graph g = BuildTransposeConv(base, 1);
    Tensor& s = g.main().tensors[g.main().ops[0].inputs[0]];
    s.shape = {3};
    g.buffers[s.buffer] = Buffer::FromValues<int32_t>(std::vector<int32_t>{6, 8, 2});
    ExpectRejected(g, "4 values", "3-element output_shape");
  }
  {
    Graph g = BuildTransposeConv(base, 1);
    g.main().tensors[g.main().ops[0].inputs[3]].shape = {7};
    ExpectRejected(g, "bias", "bias size");
  }
  {
    TcCase c = base;
    c.type = DType::kInt8;
    Graph g = BuildTransposeConv(c, 1);
    g.main().tensors[g.main().ops[0].inputs[3]].type = DType::kInt64;
    ExpectRejected(g, "not supported", "int8 with int64 bias");
  }
  {
    TcCase c = base;
    c.stride_w = 0;
    ExpectRejected(BuildTransposeConv(c, 1), "strides", "zero stride");
  }
}

// ---- MediaPipe Convolution2DTransposeBias ----

struct BiasCase {
  int n = 1, h = 4, w = 5, in_c = 3, out_c = 2, kh = 4, kw = 4, stride_h = 2, stride_w = 2;
  bool same = true;
  int OutH() const {
    const int pad = same ? std::max(0, kh - (h - 1) % stride_h - 1) : 0;
    return stride_h * (h - 1) + kh - pad;
  }
  int OutW() const {
    const int pad = same ? std::max(0, kw - (w - 1) % stride_w - 1) : 0;
    return stride_w * (w - 1) + kw - pad;
  }
  std::string Describe() const {
    std::ostringstream s;
    s << "Convolution2DTransposeBias in [" << n << "," << h << "," << w << "," << in_c << "] kernel " << kh << "x" << kw
      << " out_c " << out_c << " stride " << stride_h << "x" << stride_w << (same ? " SAME" : " VALID");
    return s.str();
  }
};

// The custom op, or (as_builtin) 2.9's TRANSPOSE_CONV with the same weights, bias and geometry.
Graph BuildTransposeConvBias(const BiasCase& c, uint64_t seed, bool as_builtin) {
  GraphBuilder b(seed);
  const std::vector<int32_t> out_shape = {c.n, c.OutH(), c.OutW(), c.out_c};
  auto x = b.Input("x", DType::kFloat32, {c.n, c.h, c.w, c.in_c});
  auto w = b.ConstRandom("w", DType::kFloat32, {c.out_c, c.kh, c.kw, c.in_c}, -1, 1);
  auto bias = b.ConstRandom("bias", DType::kFloat32, {c.out_c}, -1, 1);
  auto y = b.Tensor("y", DType::kFloat32, out_shape);
  if (as_builtin) {
    auto shape = b.Const<int32_t>("output_shape", DType::kInt32, {4}, out_shape);
    tflite::TransposeConvOptionsT o;
    o.padding = c.same ? tflite::Padding_SAME : tflite::Padding_VALID;
    o.stride_h = c.stride_h;
    o.stride_w = c.stride_w;
    b.Op(tflite::BuiltinOperator_TRANSPOSE_CONV, {shape, w, x, bias}, {y}, o);
  } else {
    const int32_t params[3] = {c.same ? 1 : 2, c.stride_w, c.stride_h};  // TfLiteTransposeConvParams
    std::vector<uint8_t> options(sizeof(params));
    std::memcpy(options.data(), params, sizeof(params));
    b.CustomOp("Convolution2DTransposeBias", {x, w, bias}, {y}, options);
  }
  b.Output(y);
  return b.Finish();
}

TEST_F(TransposeConvConformance, MediaPipeTransposeConvBias) {
  std::mt19937_64 rng(69);
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
  };
  int failures = 0;
  for (int i = 0; i < 40 && failures < 5; ++i) {
    BiasCase c;
    c.n = pick({1, 2});
    c.h = pick({1, 2, 4, 7});
    c.w = pick({1, 3, 5, 8});
    c.in_c = pick({1, 3, 8, 16});
    c.out_c = pick({1, 2, 5, 16});
    c.kh = pick({1, 2, 3, 4});
    c.kw = pick({1, 2, 3, 4});
    c.stride_h = pick({1, 2, 3});
    c.stride_w = pick({1, 2, 3});
    c.same = pick({0, 1}) == 1;
    if (!testing::ExpectMatchesTwin(BuildTransposeConvBias(c, 700 + i, false), BuildTransposeConvBias(c, 700 + i, true),
                                    "case " + std::to_string(i) + ": " + c.Describe(), ExactOptions()))
      ++failures;
  }
}

TEST_F(TransposeConvConformance, MediaPipeTransposeConvBiasErrors) {
  BiasCase c;
  {
    Graph g = BuildTransposeConvBias(c, 1, false);
    g.main().ops[0].custom_options.resize(8);
    ExpectRejected(g, "12 bytes", "short custom options");
  }
  {
    Graph g = BuildTransposeConvBias(c, 1, false);
    g.main().ops[0].custom_options[0] = 0;  // kTfLitePaddingUnknown
    ExpectRejected(g, "padding", "unknown padding");
  }
  {
    Graph g = BuildTransposeConvBias(c, 1, false);
    g.main().tensors[g.main().ops[0].inputs[2]].shape = {3};
    ExpectRejected(g, "bias", "bias size");
  }
}

}  // namespace
}  // namespace edgeopt
