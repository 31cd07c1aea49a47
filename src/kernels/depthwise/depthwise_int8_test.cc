// The fast integer DEPTHWISE_CONV_2D (depthwise_int8*.cc) against the reference kernel, bit for
// bit: int8 per-channel / per-tensor, uint8, hybrid and 16x8 graphs run with the fast kernel (1
// and 2 threads) and with reference kernels only, over random shapes: odd sizes, channel counts
// that are not multiples of 16, batch 2, filter sizes 1..5, strides, dilations, padding, every
// fused activation, depth multipliers 1, 2, 3 and 8 (the fast kernel repeats input channels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <random>
#include <sstream>

#include "graph/builder.h"
#include "kernels/common/float_requant.h"
#include "kernels/common/quant_utils.h"
#include "kernels/depthwise/depthwise_int8.h"
#include "kernels/depthwise/depthwise_int8_k3.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"
#include "support/nn_test_util.h"
#include "support/scoped_env.h"

namespace edgeopt {
namespace {

enum class Path { kInt8, kUInt8, kHybrid, kInt16 };
const char* PathName(Path p) {
  switch (p) {
    case Path::kInt8: return "int8";
    case Path::kUInt8: return "uint8";
    case Path::kHybrid: return "hybrid";
    case Path::kInt16: return "int16x8";
  }
  return "?";
}

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> v) {
  return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
}

int OutSize(int padding, int in, int k, int stride, int dil) {
  const int eff = (k - 1) * dil + 1;
  return padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in + stride - eff) / stride;
}

struct Case {
  Path path = Path::kInt8;
  bool per_channel = true;
  DType bias_type = DType::kInt32;
  int n = 1, h = 5, w = 5, c = 3, mult = 1, kh = 3, kw = 3;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;
  // Requantization regimes: multiplier > 1 (left shift) and biases near 2^30 (the long rounding
  // form); 0 keeps the usual scales.
  float multiplier_above_one = 0;  // output scale = in * w / this
  bool huge_bias = false;
  // uint8: weights within 128 of their zero point (118..138), so that they fit int8 after it is
  // subtracted (the AVX-512 quad rows, Plan::quads); otherwise 0..255.
  bool uint8_weights_fit = false;
  // uint8, >= 0: this weight zero point, and weights 0 or 255 (each a third of the time) or
  // uniform, so that w - zw reaches both ends of [-255, 255] (split quad weights, Plan::quad_rest).
  int uint8_weight_zp = -1;

  std::string Describe() const {
    std::ostringstream s;
    s << "depthwise " << PathName(path) << (per_channel ? " per-channel" : " per-tensor") << " in [" << n << "," << h
      << "," << w << "," << c << "] x" << mult << " filter " << kh << "x" << kw << " stride " << stride_h << "x"
      << stride_w << " dilation " << dil_h << "x" << dil_w << (padding == tflite::Padding_SAME ? " SAME" : " VALID")
      << " act " << act << (multiplier_above_one > 0 ? " left-shift" : "") << (huge_bias ? " huge-bias" : "")
      << (uint8_weights_fit ? " int8-range weights" : "")
      << (uint8_weight_zp >= 0 ? " weights 0/255 zero point " + std::to_string(uint8_weight_zp) : "");
    return s.str();
  }
};

Graph BuildDepthwise(const Case& c, uint64_t seed) {
  GraphBuilder b(seed);
  auto& rng = b.rng();
  const int oc = c.c * c.mult;
  const int oh = OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h);
  const int ow = OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w);
  const std::vector<int32_t> in_shape = {c.n, c.h, c.w, c.c}, w_shape = {1, c.kh, c.kw, oc},
                             out_shape = {c.n, oh, ow, oc};
  int32_t x, w, bias, y;
  if (c.path == Path::kHybrid) {
    x = b.Input("x", DType::kFloat32, in_shape);
    auto scales = testing::RandomWeightScales(rng, oc, c.per_channel);
    w = b.ConstRandom("w", DType::kInt8, w_shape, -127, 127, testing::WeightQuant(rng, DType::kInt8, scales, 3));
    bias = b.ConstRandom("bias", DType::kFloat32, {oc}, -1, 1);
    y = b.Tensor("y", DType::kFloat32, out_shape);
  } else {
    const DType t = c.path == Path::kUInt8 ? DType::kUInt8 : c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
    const DType wt = c.path == Path::kUInt8 ? DType::kUInt8 : DType::kInt8;
    QuantParams in_q = testing::RandomActivationQuant(rng, t);
    auto scales = testing::RandomWeightScales(rng, oc, c.per_channel);
    const double lo = wt == DType::kUInt8 ? (c.uint8_weights_fit ? 10 : 0) : -127,
                 hi = wt == DType::kUInt8 ? (c.uint8_weights_fit ? 245 : 255) : 127;
    if (c.uint8_weight_zp >= 0) {
      std::vector<uint8_t> values(static_cast<size_t>(c.kh) * c.kw * oc);
      for (uint8_t& v : values) {
        const int kind = static_cast<int>(rng() % 3);
        v = static_cast<uint8_t>(kind == 0 ? 0 : kind == 1 ? 255 : rng() % 256);
      }
      QuantParams wq;
      wq.scale = {scales[0]};
      wq.zero_point = {c.uint8_weight_zp};
      w = b.Const("w", wt, w_shape, values, wq);
    } else {
      w = b.ConstRandom("w", wt, w_shape, lo, hi, testing::WeightQuant(rng, wt, scales, 3));
    }
    const float out_scale = c.multiplier_above_one > 0
                                ? in_q.scale[0] * scales[0] / c.multiplier_above_one
                                : testing::OutputScaleFor(t, int64_t{c.kh} * c.kw, in_q.scale[0], scales[0]);
    // Huge: near 2^30 for 8-bit (int32 biases); for 16x8 beyond 2^31 (int64 biases).
    const float huge = c.path == Path::kInt16 ? 1.0e11f : 1.0e9f;
    const float bias_range = c.huge_bias ? in_q.scale[0] * scales[0] * huge : out_scale * 40;
    QuantParams out_q = testing::RandomActivationQuant(rng, t);
    out_q.scale[0] = out_scale;
    x = b.Input("x", t, in_shape, in_q);
    bias = testing::QuantizedBias(b, "bias", c.bias_type, oc, in_q.scale[0], scales, bias_range, rng);
    y = b.Tensor("y", t, out_shape, out_q);
  }
  tflite::DepthwiseConv2DOptionsT opt;
  opt.padding = static_cast<tflite::Padding>(c.padding);
  opt.stride_h = c.stride_h;
  opt.stride_w = c.stride_w;
  opt.dilation_h_factor = c.dil_h;
  opt.dilation_w_factor = c.dil_w;
  opt.depth_multiplier = c.mult;
  opt.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, w, bias}, {y}, opt);
  b.Output(y);
  return b.Finish();
}

Case RandomCase(std::mt19937_64& rng, Path path) {
  Case c;
  c.path = path;
  for (;;) {
    c.n = Pick(rng, {1, 1, 2});
    c.h = Pick(rng, {1, 2, 5, 7, 9, 14});
    c.w = Pick(rng, {1, 3, 4, 7, 8, 11, 15});
    c.c = Pick(rng, {1, 3, 7, 8, 16, 17, 24, 33, 40});
    c.mult = Pick(rng, {1, 1, 1, 1, 2, 3, 8});
    c.kh = Pick(rng, {1, 2, 3, 3, 3, 5});
    c.kw = Pick(rng, {1, 2, 3, 3, 3, 4, 5});
    c.stride_h = Pick(rng, {1, 1, 2, 3});
    c.stride_w = Pick(rng, {1, 1, 2, 3});
    c.dil_h = Pick(rng, {1, 1, 1, 2});
    c.dil_w = Pick(rng, {1, 1, 1, 2, 3});
    c.padding = Pick(rng, {static_cast<int>(tflite::Padding_SAME), static_cast<int>(tflite::Padding_VALID)});
    c.act = Pick(rng, {static_cast<int>(tflite::ActivationFunctionType_NONE),
                       static_cast<int>(tflite::ActivationFunctionType_RELU),
                       static_cast<int>(tflite::ActivationFunctionType_RELU6),
                       static_cast<int>(tflite::ActivationFunctionType_RELU_N1_TO_1)});
    c.per_channel = path == Path::kUInt8 ? false : Pick(rng, {true, true, false});
    if (path == Path::kInt16) c.bias_type = DType::kInt64;  // 16x8 depthwise requires an int64 bias
    if (OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h) >= 1 &&
        OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w) >= 1)
      return c;
  }
}

// The instruction sets of the 3x3 loop's rows: AVX2 (features capped, so that machines with
// AVX-512 still test it) and AVX-512 VNNI.
const rt::CpuFeatures& Avx2Features() {
  static const rt::CpuFeatures f = rt::CapFeatures(rt::CpuHardware(), "avx2");
  return f;
}
bool HaveAvx512Vnni() { return rt::Cpu().has_avx512_vnni(); }
// The rows expected for `channels` when `isa` is offered: AVX-512 falls back to AVX2 where too
// many of its lanes would be empty (e.g. 8 channels).
std::string IsaFor(const std::string& isa, int channels) {
  return isa == "avx512" && !kernels::dwq::Avx512RowsPay(channels) ? "avx2" : isa;
}

// The 3x3 loop's variant for case c (`loop`: its suffix, e.g. "/3x3s1/w8") when `isa` is offered.
// On AVX-512 VNNI, 4 or 8 channels at stride_w 1 run the packed K x K loop instead
// (Plan::kn_pixels, .../3x3s1/p4/dp4, .../p2/dp4) where its quad weights fit: biases near 2^30
// and uint8 weights far from their zero point may or may not (it depends on the sampled values),
// so then only "3x3s1", common to both, is checked.
std::string K3Variant(const std::string& isa, const Case& c, const std::string& loop) {
  // One input channel runs as a convolution there (OneInputChannelRunsAsConv).
  if (isa == "avx512" && c.c == 1) return "depthwise_conv2d/as-conv2d/";
  const int ch = c.c * c.mult;
  if (isa == "avx512" && (ch == 4 || ch == 8) && c.stride_w == 1 && c.dil_w == 1) {
    if (c.huge_bias || (c.path == Path::kUInt8 && !c.uint8_weights_fit)) return "3x3s1";
    return "avx512/3x3s1/p" + std::to_string(16 / ch) + "/dp4";
  }
  return IsaFor(isa, c.c) + loop;
}

class DepthwiseInt8Fast : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU: the fast integer depthwise is not built";
  }
  // For the tests of the AVX-512 rows.
  static bool SkipWithoutAvx512() { return !HaveAvx512Vnni(); }
  void Run(Path path, int count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    int failures = 0, fast = 0;
    for (int i = 0; i < count && failures < 3; ++i) {
      const Case c = RandomCase(rng, path);
      testing::FastCheck check;
      // Every case must run the fast kernel (AVX2, or AVX-512 for the 3x3 loop).
      check.op_type = "DEPTHWISE_CONV_2D";
      check.variant = "/avx";
      ++fast;
      check.threads = 1 + i % 2;
      check.seed = seed * 1000 + i;
      if (!testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed),
                                               "case " + std::to_string(i) + ": " + c.Describe(), check))
        ++failures;
    }
    EXPECT_GT(fast, count / 2);
  }
};

TEST_F(DepthwiseInt8Fast, Int8) { Run(Path::kInt8, 120, 31); }
TEST_F(DepthwiseInt8Fast, UInt8) { Run(Path::kUInt8, 80, 32); }
TEST_F(DepthwiseInt8Fast, Hybrid) {
  // Without it the hybrid depthwise runs the float kernel on dequantized weights (kernels/hybrid).
  const testing::ScopedEnv quantized_input("EDGEOPT_HYBRID_DEQUANT", "0");
  Run(Path::kHybrid, 50, 33);
}
TEST_F(DepthwiseInt8Fast, Int16x8) { Run(Path::kInt16, 50, 34); }

// One input channel (depth multiplier M: audio models' first layer over a spectrogram) runs as
// a CONV_2D of M output channels on AVX-512 VNNI CPUs (MakeDepthwiseAsConvQuant): its stem paths
// (output pixels in lanes for M <= 8, weights spread to whole k groups, one output channel) and
// tiles, per-channel / per-tensor int8 and uint8 with weights far from their zero point, large
// and odd filters, strides, dilations, padding, activations, batch 2, 1 and 2 threads.
TEST_F(DepthwiseInt8Fast, OneInputChannelRunsAsConv) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: one-channel depthwise runs the depthwise loops";
  std::mt19937_64 rng(41);
  int failures = 0;
  for (int i = 0; i < 90 && failures < 3; ++i) {
    Case c = RandomCase(rng, i % 3 == 2 ? Path::kUInt8 : Path::kInt8);
    c.c = 1;
    c.mult = Pick(rng, {1, 2, 3, 4, 5, 8, 8, 13, 16, 24, 40});
    c.kh = Pick(rng, {1, 3, 5, 10});
    c.kw = Pick(rng, {1, 2, 3, 4, 8});
    c.h = Pick(rng, {c.kh, 12, 20, 49});
    c.w = Pick(rng, {c.kw, 9, 17, 40});
    if (c.path == Path::kUInt8 && i % 2 == 1) c.uint8_weight_zp = Pick(rng, {0, 100, 128, 255});
    if (OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h) < 1 || OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w) < 1)
      continue;
    testing::FastCheck check;
    check.op_type = "DEPTHWISE_CONV_2D";
    check.variant = "depthwise_conv2d/as-conv2d/";
    check.threads = 1 + i % 2;
    check.seed = 41000 + i;
    if (!testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed),
                                             "case " + std::to_string(i) + ": " + c.Describe(), check))
      ++failures;
  }
  // micro_speech's layer: 49x40 spectrogram, 10x8 filter, stride 2, 8 channels, int8 and uint8.
  for (Path p : {Path::kInt8, Path::kUInt8}) {
    Case c;
    c.path = p;
    c.per_channel = p == Path::kInt8;
    c.h = 49;
    c.w = 40;
    c.c = 1;
    c.mult = 8;
    c.kh = 10;
    c.kw = 8;
    c.stride_h = c.stride_w = 2;
    c.act = tflite::ActivationFunctionType_RELU;
    testing::FastCheck check;
    check.op_type = "DEPTHWISE_CONV_2D";
    check.variant = "depthwise_conv2d/as-conv2d/";
    check.threads = 2;
    check.seed = 42000 + static_cast<int>(p);
    testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
  }
}

// Layers of MobileNetV2 / DS-CNN sizes (many rows per thread, ring reuse, channel blocks).
TEST_F(DepthwiseInt8Fast, RealisticLayers) {
  struct L {
    int h, w, c, k, stride;
  };
  const L layers[] = {{112, 112, 32, 3, 1}, {56, 56, 144, 3, 2}, {14, 14, 576, 3, 1}, {25, 5, 64, 3, 1},
                      {7, 7, 960, 3, 1},    {15, 15, 40, 5, 2}};
  int i = 0;
  for (const L& l : layers) {
    for (Path p : {Path::kInt8, Path::kUInt8}) {
      Case c;
      c.path = p;
      c.per_channel = p == Path::kInt8;
      c.h = l.h;
      c.w = l.w;
      c.c = l.c;
      c.kh = c.kw = l.k;
      c.stride_h = c.stride_w = l.stride;
      c.act = tflite::ActivationFunctionType_RELU6;
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        check.variant = "/avx";  // avx2 or, for the 3x3 layers on AVX-512 CPUs, avx512
        check.threads = threads;
        check.seed = 700 + i++;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
    }
  }
}

// The 3x3 dilation-1 rows (stride 1 and 2, every requantization form: plain, left shift, the
// short form with small biases), channel counts around the 16-lane blocks, odd widths, both
// paddings, rows touching the padding and interior rows.
TEST_F(DepthwiseInt8Fast, ThreeByThreeRequantForms) {
  int i = 0;
  for (Path p : {Path::kInt8, Path::kUInt8})
    for (int stride : {1, 2})
      for (int form = 0; form < 3; ++form)
        for (int ch : {5, 16, 40}) {
          Case c;
          c.path = p;
          c.per_channel = p == Path::kInt8;
          c.n = 1 + i % 2;
          c.h = 9;
          c.w = 13 + i % 3;
          c.c = ch;
          c.stride_h = c.stride_w = stride;
          c.padding = i % 3 == 0 ? tflite::Padding_VALID : tflite::Padding_SAME;
          c.act = i % 2 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
          c.multiplier_above_one = form == 1 ? 1.7f : 0;
          c.huge_bias = form == 2;
          testing::FastCheck check;
          check.op_type = "DEPTHWISE_CONV_2D";
          check.variant = "/avx";  // avx2 or avx512 (CPUs with AVX-512 VNNI)
          check.threads = 1 + i % 2;
          check.seed = 900 + i++;
          testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
        }
}

// The int8/uint8 3x3 dilation-1 loop (variant .../3x3s1 and .../3x3s2, checked): widths around
// its 4-pixel blocks and 32-pixel chunks (1..70), heights that fill and wrap its ring of rows,
// channel counts that are not multiples of 8/16 and channel bands (wide rows with many channels),
// both paddings, vertical dilation, batch 2, 1 and 2 threads, and the requantization forms: the
// usual scales (raw input values with the zero point in the bias, doubled short form), a left
// shift (raw values, long form) and biases near 2^30 (too large to fold: zero-point-subtracted
// values, long form).
void CheckThreeByThreeLoop(const char* isa, const rt::CpuFeatures& cpu) {
  struct S {
    int n, h, w, c, stride, dil_h;
  };
  const S shapes[] = {{1, 1, 1, 1, 1, 1},   {1, 3, 2, 5, 1, 1},    {2, 5, 5, 64, 1, 1},  {1, 25, 5, 64, 1, 1},
                      {1, 9, 37, 13, 1, 1}, {1, 4, 70, 24, 1, 2},  {2, 70, 6, 8, 1, 1},  {1, 6, 42, 200, 1, 1},
                      {1, 7, 7, 72, 2, 1},  {2, 11, 9, 17, 2, 1},  {1, 8, 66, 40, 2, 1}, {1, 40, 3, 3, 2, 2},
                      {1, 2, 9, 16, 2, 1},  {1, 13, 8, 33, 1, 2}};
  int i = 0;
  for (const S& sh : shapes)
    for (Path p : {Path::kInt8, Path::kUInt8})
      for (int form = 0; form < 3; ++form) {
        Case c;
        c.path = p;
        c.per_channel = p == Path::kInt8 && i % 3 != 0;
        c.n = sh.n;
        c.h = sh.h;
        c.w = sh.w;
        c.c = sh.c;
        c.stride_h = c.stride_w = sh.stride;
        c.dil_h = sh.dil_h;
        c.padding = i % 4 == 1 ? tflite::Padding_VALID : tflite::Padding_SAME;
        if (OutSize(c.padding, c.h, 3, c.stride_h, c.dil_h) < 1 || OutSize(c.padding, c.w, 3, c.stride_w, 1) < 1)
          c.padding = tflite::Padding_SAME;
        c.act = i % 2 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
        c.multiplier_above_one = form == 1 ? 1.7f : 0;
        c.huge_bias = form == 2;
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        check.variant = K3Variant(isa, c, sh.stride == 1 ? "/3x3s1" : "/3x3s2");
        check.cpu = &cpu;
        check.threads = 1 + i % 2;
        check.seed = 1300 + i++;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
}

TEST_F(DepthwiseInt8Fast, ThreeByThreeLoop) { CheckThreeByThreeLoop("avx2", Avx2Features()); }
TEST_F(DepthwiseInt8Fast, ThreeByThreeLoopAvx512) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  CheckThreeByThreeLoop("avx512", rt::Cpu());
}

// The stride-1 3x3 loop instantiated for narrow output widths 1-8 (variants .../3x3s1/wN,
// checked): SAME and VALID padding (input widths 5/7 and 7/9), channel counts that
// are not multiples of 8/16, heights below and above the batch of rows, vertical dilation, batch
// 2, 1 and 2 threads, int8 and uint8, the three requantization forms.
void CheckThreeByThreeNarrowWidths(const char* isa, const rt::CpuFeatures& cpu) {
  struct S {
    int n, h, w, c, dil_h, padding;
  };
  const S shapes[] = {{1, 25, 5, 64, 1, tflite::Padding_SAME}, {2, 3, 7, 13, 1, tflite::Padding_VALID},
                      {1, 30, 7, 40, 1, tflite::Padding_SAME}, {1, 9, 9, 20, 2, tflite::Padding_VALID},
                      {2, 7, 5, 5, 1, tflite::Padding_SAME},   {1, 1, 7, 72, 1, tflite::Padding_SAME},
                      {1, 6, 1, 9, 1, tflite::Padding_SAME},   {1, 5, 4, 24, 1, tflite::Padding_VALID},
                      {2, 4, 3, 17, 1, tflite::Padding_SAME},  {1, 11, 4, 33, 1, tflite::Padding_SAME},
                      {1, 8, 8, 16, 1, tflite::Padding_VALID}, {1, 3, 8, 7, 1, tflite::Padding_SAME},
                      {1, 12, 10, 8, 1, tflite::Padding_VALID}};
  int i = 0;
  for (const S& sh : shapes)
    for (Path p : {Path::kInt8, Path::kUInt8})
      for (int form = 0; form < 3; ++form) {
        Case c;
        c.path = p;
        c.per_channel = p == Path::kInt8 && i % 3 != 0;
        c.n = sh.n;
        c.h = sh.h;
        c.w = sh.w;
        c.c = sh.c;
        c.dil_h = sh.dil_h;
        c.padding = sh.padding;
        c.act = i % 2 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
        c.multiplier_above_one = form == 1 ? 1.7f : 0;
        c.huge_bias = form == 2;
        const int out_w = OutSize(c.padding, c.w, 3, 1, 1);
        ASSERT_TRUE(out_w >= 1 && out_w <= 8) << c.Describe();
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        check.variant = K3Variant(isa, c, "/3x3s1/w" + std::to_string(out_w));
        check.cpu = &cpu;
        check.threads = 1 + i % 2;
        check.seed = 1700 + i++;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
}

TEST_F(DepthwiseInt8Fast, ThreeByThreeNarrowWidths) { CheckThreeByThreeNarrowWidths("avx2", Avx2Features()); }
TEST_F(DepthwiseInt8Fast, ThreeByThreeNarrowWidthsAvx512) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  CheckThreeByThreeNarrowWidths("avx512", rt::Cpu());
}

// Case i of the sweeps over output widths w of the AVX-512 rows: int8 or uint8, per-tensor or
// per-channel, batch 1 or 2, heights 2-8, odd input widths at stride 2, vertical dilation, SAME or
// VALID (with the input grown so that the output width stays w).
Case WidthSweepCase(int i, int w, int stride, int channels) {
  Case c;
  c.path = i % 3 == 2 ? Path::kUInt8 : Path::kInt8;
  c.per_channel = c.path == Path::kInt8 && i % 4 != 0;
  c.stride_h = c.stride_w = stride;
  c.n = i % 5 == 0 ? 2 : 1;
  c.h = 2 + i % 7;
  c.w = stride == 1 ? w : 2 * w - (i / 2) % 2;
  c.c = channels;
  c.dil_h = i % 6 == 3 ? 2 : 1;
  c.padding = i % 4 == 1 ? tflite::Padding_VALID : tflite::Padding_SAME;
  if (c.padding == tflite::Padding_VALID) {
    c.w += 2;  // the same output width
    c.h += 2 * c.dil_h;
  }
  return c;
}

// The AVX-512 rows over every output width 1..70 (8-pixel steps and each 1..7 tail), channel
// counts with partial 16-lane groups and bands (13, 15, 29, 31, 45, 48, 100, 200), stride 1
// and 2, SAME and VALID, vertical dilation, batch 2, int8 and uint8, the requantization forms
// (doubled short form, long form with raw values and a left shift, long form with
// zero-point-subtracted values), 1 and 2 threads; and the variant chosen by default on a CPU with
// AVX-512 VNNI is the AVX-512 one.
TEST_F(DepthwiseInt8Fast, ThreeByThreeAvx512Widths) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int channels[] = {13, 15, 29, 31, 45, 48, 100, 200};
  int i = 0;
  for (int w = 1; w <= 70; ++w) {
    Case c = WidthSweepCase(i, w, 1 + i % 2, channels[i % 8]);
    c.act = i % 2 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
    const int form = i % 3;
    c.multiplier_above_one = form == 1 ? 1.7f : 0;
    c.huge_bias = form == 2;
    ASSERT_EQ(OutSize(c.padding, c.w, 3, c.stride_w, 1), w) << c.Describe();
    ASSERT_TRUE(kernels::dwq::Avx512RowsPay(c.c)) << c.Describe();
    testing::FastCheck check;
    check.op_type = "DEPTHWISE_CONV_2D";
    check.variant = c.stride_w == 1 ? "avx512/3x3s1" : "avx512/3x3s2";
    check.threads = 1 + (i / 2) % 2;
    check.seed = 2100 + i++;
    testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
  }
}

// The AVX-512 rows' doubled form with the output zero point folded into the rounding constants
// (Plan::zp_folded), with and without the ties-away adjustment (Plan::floor_clamps: activations
// whose minimum is at or above the zero point, RELU and RELU6, against NONE and RELU_N1_TO_1),
// int8 and uint8 (random zero points), per-tensor and per-channel, stride 1 and 2, odd widths and
// channel counts, 1 and 2 threads.
TEST_F(DepthwiseInt8Fast, ThreeByThreeAvx512ZeroPointFold) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                      tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1};
  const int channels[] = {13, 32, 45, 100};
  int i = 0;
  for (int act : acts)
    for (Path p : {Path::kInt8, Path::kUInt8})
      for (int stride : {1, 2})
        for (int k = 0; k < 3; ++k) {
          Case c;
          c.path = p;
          c.per_channel = p == Path::kInt8 && i % 3 != 0;
          c.n = i % 5 == 0 ? 2 : 1;
          c.h = 3 + i % 6;
          c.w = 5 + (i * 7) % 23;
          c.c = channels[i % 4];
          c.stride_h = c.stride_w = stride;
          c.padding = i % 3 == 1 ? tflite::Padding_VALID : tflite::Padding_SAME;
          c.act = act;
          testing::FastCheck check;
          check.op_type = "DEPTHWISE_CONV_2D";
          check.variant = stride == 1 ? "avx512/3x3s1" : "avx512/3x3s2";
          check.threads = 1 + i % 2;
          check.seed = 2600 + i++;
          testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
        }
}

// 16x8 through the AVX-512 3x3 loop (depthwise_int16_avx512.cc; variants int16x8/avx512/3x3s1,
// .../3x3s1/wN, .../3x3s2, checked): every output width 1..70 (8-pixel steps, each 1..7 tail, the
// narrow stride-1 instantiations), channel counts with partial 16-lane groups (also 1, 3, 8) and
// bands of many blocks, stride 1 and 2, SAME and VALID, vertical dilation, batch 2, depth
// multipliers 1, 2 and 3, per-tensor and per-channel, every activation, 1 and 2 threads; the
// high-dword requantization and, with a multiplier above 1 (total shift < 16 with a large reduced
// multiplier), the 64-bit shift (variant .../sra). Biases too large for the int32 accumulators
// (|bias| + 32768 * sum|w| >= 2^31) are added in the 64-bit stage (variant .../sra, checked).
TEST_F(DepthwiseInt8Fast, ThreeByThreeInt16Avx512) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int channels[] = {13, 16, 29, 45, 48, 100, 200, 31, 1, 3, 8, 130};
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU6,
                      tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (int w = 1; w <= 70; ++w)
    for (int stride : {1, 2}) {
      Case c = WidthSweepCase(i, w, stride, channels[i % 12]);
      c.path = Path::kInt16;
      c.bias_type = DType::kInt64;
      c.per_channel = i % 4 != 0;
      c.act = acts[i % 4];
      if (i % 9 == 4 && c.c <= 45) c.mult = 2 + i % 2;
      const int form = i % 7;  // 0: bias too large for int32, 1: multiplier above one, else the usual scales
      c.huge_bias = form == 0;
      c.multiplier_above_one = form == 1 ? 1.7f : 0;
      ASSERT_EQ(OutSize(c.padding, c.w, 3, c.stride_w, 1), w) << c.Describe();
      testing::FastCheck check;
      check.op_type = "DEPTHWISE_CONV_2D";
      check.variant = stride == 2 ? "int16x8/avx512/3x3s2"
                      : w <= 8    ? "int16x8/avx512/3x3s1/w" + std::to_string(w)
                                  : "int16x8/avx512/3x3s1";
      if (form <= 1) check.variant += "/sra";
      check.threads = 1 + (i / 2) % 2;
      check.seed = 4100 + i++;
      testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
    }
}

// 16x8 3x3 filters dilated horizontally (DeepLab's atrous layers) through the AVX-512 rows:
// dilation 2 and 4 (pair-row steps 4 and 8) at stride 1 and 2 over output widths 1..40 (every
// 8-pixel tail), SAME and VALID, vertical dilation equal or 1, partial 16-lane groups, batch 2,
// both requantization forms, biases too large for int32, 1 and 2 threads; dilation 3 (step 6)
// takes the generic loop.
TEST_F(DepthwiseInt8Fast, ThreeByThreeInt16Avx512Dilated) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int channels[] = {13, 16, 29, 48, 100, 3, 40};
  int i = 0;
  for (int w = 1; w <= 40; ++w)
    for (int stride : {1, 2})
      for (int dil : {2, 4, 3}) {
        if (dil == 3 && w % 5 != 0) continue;
        Case c = WidthSweepCase(i, w, stride, channels[i % 7]);
        c.path = Path::kInt16;
        c.bias_type = DType::kInt64;
        c.per_channel = i % 4 != 0;
        c.act = i % 3 == 0 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE;
        c.dil_w = dil;
        c.dil_h = i % 2 ? dil : 1;
        c.h = 2 + i % 5 + (c.padding == tflite::Padding_VALID ? 2 * c.dil_h : 0);
        if (c.padding == tflite::Padding_VALID) c.w += 2 * (dil - 1);  // the same output width
        const int form = i % 7;  // 0: bias too large for int32, 1: multiplier above one
        c.huge_bias = form == 0;
        c.multiplier_above_one = form == 1 ? 1.7f : 0;
        ASSERT_EQ(OutSize(c.padding, c.w, 3, c.stride_w, dil), w) << c.Describe();
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        check.variant = dil == 3 ? "int16x8/avx512"  // the generic loop's AVX-512 rows
                                 : "int16x8/avx512/3x3s" + std::to_string(stride) + "d" + std::to_string(dil);
        check.threads = 1 + (i / 2) % 2;
        check.seed = 5100 + i++;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
  EXPECT_GT(i, 150);
}

// 16x8 filters other than the 3x3 loop's through the generic loop's AVX-512 rows (Plan::int16_row:
// k_h <= 5 and up to 3 tap pairs per filter row; weights in registers, 4 pixels per step): every
// filter size from 1x1 to 5x5 but 3x3, strides 1-3, dilation 1-2, channel counts with partial
// 16-lane groups, widths with 1-3 pixel tails, SAME and VALID, batch 2, depth multipliers, biases
// beyond int32, multipliers above one, every activation, 1 and 2 threads; 7x7 keeps the AVX2 rows.
TEST_F(DepthwiseInt8Fast, GenericInt16Avx512) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int channels[] = {1, 3, 8, 13, 16, 17, 33, 40, 64};
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU6,
                      tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (int kh = 1; kh <= 5; ++kh)
    for (int kw = 1; kw <= 5; ++kw) {
      if (kh == 3 && kw == 3) continue;
      for (int rep = 0; rep < 3; ++rep, ++i) {
        Case c;
        c.path = Path::kInt16;
        c.bias_type = DType::kInt64;
        c.kh = kh;
        c.kw = kw;
        c.c = channels[i % 9];
        c.mult = i % 11 == 5 ? 2 : 1;
        c.stride_h = 1 + i % 2;
        c.stride_w = 1 + (i / 2) % 3;
        c.dil_h = 1 + (i / 3) % 2;
        c.dil_w = 1 + (i / 5) % 2;
        c.n = i % 7 == 0 ? 2 : 1;
        c.h = 3 + i % 6;
        c.w = 4 + i % 9;
        c.padding = i % 3 == 1 ? tflite::Padding_VALID : tflite::Padding_SAME;
        if (c.padding == tflite::Padding_VALID) {
          c.h += (kh - 1) * c.dil_h;
          c.w += (kw - 1) * c.dil_w;
        }
        c.act = acts[i % 4];
        c.per_channel = i % 4 != 0;
        c.huge_bias = i % 7 == 3;
        c.multiplier_above_one = i % 7 == 5 ? 1.7f : 0;
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        check.variant = "int16x8/avx512";
        check.threads = 1 + i % 2;
        check.seed = 6100 + i;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
    }
  Case c;
  c.path = Path::kInt16;
  c.bias_type = DType::kInt64;
  c.kh = c.kw = 7;
  c.h = c.w = 9;
  c.c = 20;
  testing::FastCheck check;
  check.op_type = "DEPTHWISE_CONV_2D";
  check.variant = "int16x8/avx2";
  testing::ExpectFastMatchesReference(BuildDepthwise(c, 99), c.Describe(), check);
  EXPECT_EQ(i, 72);
}

// Layers of the 16x8 MobileNetV2 (3x3, stride 1 and 2, RELU6), 1 and 2 threads, AVX-512 rows.
TEST_F(DepthwiseInt8Fast, ThreeByThreeInt16Avx512Layers) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  struct L {
    int h, w, c, stride;
  };
  const L layers[] = {{112, 112, 32, 1}, {112, 112, 96, 2}, {56, 56, 144, 1}, {28, 28, 192, 2}, {7, 7, 960, 1}};
  int i = 0;
  for (const L& l : layers)
    for (int threads : {1, 2}) {
      Case c;
      c.path = Path::kInt16;
      c.bias_type = DType::kInt64;
      c.h = l.h;
      c.w = l.w;
      c.c = l.c;
      c.stride_h = c.stride_w = l.stride;
      c.act = tflite::ActivationFunctionType_RELU6;
      testing::FastCheck check;
      check.op_type = "DEPTHWISE_CONV_2D";
      check.variant = l.stride == 2 ? "int16x8/avx512/3x3s2" : l.w <= 8 ? "int16x8/avx512/3x3s1/w" : "int16x8/avx512/3x3s1";
      check.threads = threads;
      check.seed = 4500 + i++;
      testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
    }
}

// The AVX-512 quad rows (vpdpbusd, Plan::quads; variants .../dp4, checked): every output width
// 1..70 (8-pixel steps, each 1..7 tail, the narrow stride-1 instantiations; at stride 1 the
// 3-column quads below 6 pixels, pair quads from 6, odd widths ending on half a pair), channel counts with
// partial 16-lane groups and bands of few and of many blocks (built block by block or entry by
// entry), stride 1 and 2, SAME and VALID (interior entries derived from the previous one, edge
// entries from widened columns, the input's end), vertical dilation, batch 2, int8 and uint8
// (weights within int8 of their zero point), per-tensor and per-channel, every activation, the
// doubled short form and the long form with a left shift, 1 and 2 threads.
TEST_F(DepthwiseInt8Fast, ThreeByThreeAvx512Quads) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int channels[] = {13, 16, 29, 45, 48, 100, 200, 31, 130};
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU6,
                      tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (int w = 1; w <= 70; ++w)
    for (int stride : {1, 2}) {
      Case c = WidthSweepCase(i, w, stride, channels[i % 9]);
      c.uint8_weights_fit = true;
      c.act = acts[i % 4];
      c.multiplier_above_one = i % 3 == 1 ? 1.7f : 0;
      ASSERT_EQ(OutSize(c.padding, c.w, 3, c.stride_w, 1), w) << c.Describe();
      testing::FastCheck check;
      check.op_type = "DEPTHWISE_CONV_2D";
      // Stride 1 from 6 pixels: pair quads (Plan::quad_pairs).
      const std::string pairs = w >= kernels::dwq::kPairQuadsMinWidth ? "/pairs" : "";
      check.variant = stride == 2 ? "avx512/3x3s2/dp4"
                      : w <= 8    ? "avx512/3x3s1/w" + std::to_string(w) + "/dp4" + pairs
                                  : "avx512/3x3s1/dp4" + pairs;
      check.threads = 1 + (i / 2) % 2;
      check.seed = 3100 + i++;
      // Every third case with the integer stages (the fp32 form replaces them where it applies),
      // every third with the fp32 form without its bits form (Plan::quad_float_bits).
      kernels::SetFloatRequantEnabled(i % 3 != 0);
      kernels::SetFloatBitsEnabled(i % 3 != 1);
      testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      kernels::SetFloatRequantEnabled(true);
      kernels::SetFloatBitsEnabled(true);
    }
}

// The quad rows with split uint8 weights (Plan::quad_rest; variants .../dp4x2, checked): weights
// 0 and 255 with zero points 0 (where a weight w - zw = 255 has no split: the pair rows, variant
// checked), 1, 127, 128, 255 and others; stride 1 and 2, SAME and VALID, widths 1..29 (narrow
// stride-1 instantiations, 8-pixel steps and tails), channel counts that are not multiples of 16
// (groups with and without a rest when the weights are mostly in range), depth multiplier 1 and
// 2, every activation, the doubled short form and the long form with a left shift, 1 and 2
// threads, batch 2.
TEST_F(DepthwiseInt8Fast, ThreeByThreeAvx512QuadsUInt8Split) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int zero_points[] = {0, 1, 127, 128, 255, 60, 200};
  const int channels[] = {13, 16, 29, 45, 100, 31};
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU6,
                      tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (int zw : zero_points)
    for (int stride : {1, 2})
      for (int k = 0; k < 4; ++k) {
        const int w = 1 + (i * 5) % 29;
        Case c = WidthSweepCase(i, w, stride, channels[i % 6]);
        c.path = Path::kUInt8;
        c.per_channel = false;
        c.uint8_weight_zp = zw;
        c.mult = k == 3 ? 2 : 1;
        if (c.mult == 2) c.c = (c.c + 1) / 2;  // c * mult channels still pay for the AVX-512 rows
        c.act = acts[i % 4];
        c.multiplier_above_one = i % 3 == 1 ? 1.7f : 0;
        ASSERT_EQ(OutSize(c.padding, c.w, 3, c.stride_w, 1), w) << c.Describe();
        testing::FastCheck check;
        check.op_type = "DEPTHWISE_CONV_2D";
        const std::string base = stride == 2 ? "avx512/3x3s2" : w <= 8 ? "avx512/3x3s1/w" + std::to_string(w) : "avx512/3x3s1";
        // zw = 0: some weight is 255 (w - zw = 255): no quads; zw = 128: every w - zw fits int8;
        // else some weight leaves int8.
        const std::string pairs = stride == 1 && w >= kernels::dwq::kPairQuadsMinWidth ? "/pairs" : "";
        check.variant = zw == 0 ? base : zw == 128 ? base + "/dp4" + pairs : base + "/dp4x2" + pairs;
        check.threads = 1 + (i / 2) % 2;
        check.seed = 3600 + i++;
        testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
      }
}

// The K x K quad loop (Plan::quads_kn, variants .../avx512/KxKsS[dD]/dp4, checked): 5x5 and 7x7 rows
// with widths 5 to 8 (one and two tap groups per filter row) and 3x3 filters with horizontal
// dilation 2 to 4 (DeepLab's atrous layers), output widths 1..40 (8-pixel steps and each 1..7
// tail), stride_w 1 and 2 with stride_h 1 to 3, horizontal dilation for the wide filters too,
// vertical dilation, SAME and VALID (left/right padding entries, the input's end), batch 2,
// channel counts with partial 16-lane groups and few or many blocks (bands of rows per thread),
// depth multiplier 2, int8 and uint8 (weights within int8 of their zero point), per-tensor and
// per-channel, every activation, the doubled short form with and without the folded output zero
// point, the long form with a left shift, 1 and 2 threads; and the packed plans of 4 and 8
// channels (16 / C pixels per vector, variants .../p2/dp4, .../p4/dp4). Huge biases (no room for
// the folded zero point) and uint8 weights that leave int8 keep the generic loop.
TEST_F(DepthwiseInt8Fast, KxKAvx512Quads) {
  if (SkipWithoutAvx512()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or EDGEOPT_CPU caps it): the AVX-512 rows are not used";
  const int kChannels[] = {13, 16, 29, 45, 48, 100, 31, 130, 200};
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU6,
                      tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  // channels > 0: that many (the packed plans' 4 and 8), else from the list.
  const auto check_case = [&](int ow, int stride, int kh, int kw, int dil_w, int channels = 0) {
    Case c;
    c.path = i % 3 == 2 ? Path::kUInt8 : Path::kInt8;
    c.uint8_weights_fit = true;
    c.per_channel = c.path == Path::kInt8 && i % 4 != 0;
    c.kh = kh;
    c.kw = kw;
    c.stride_w = stride;
    c.stride_h = 1 + (i / 3) % 3;
    c.dil_w = dil_w;
    c.dil_h = i % 7 == 3 ? 2 : 1;
    c.n = i % 5 == 0 ? 2 : 1;
    c.c = channels > 0 ? channels : kChannels[i % 9];
    c.mult = i % 11 == 4 ? 2 : 1;
    if (c.mult == 2) c.c = (c.c + 1) / 2;
    const int pack = channels > 0 ? 16 / (c.c * c.mult) : 1;
    c.padding = i % 4 == 1 ? tflite::Padding_VALID : tflite::Padding_SAME;
    c.w = c.padding == tflite::Padding_SAME ? (ow - 1) * stride + 1 + (i / 2) % stride
                                            : (ow - 1) * stride + (c.kw - 1) * dil_w + 1;
    const int oh = 1 + i % 6;
    c.h = c.padding == tflite::Padding_SAME ? (oh - 1) * c.stride_h + 1 : (oh - 1) * c.stride_h + (c.kh - 1) * c.dil_h + 1;
    c.act = acts[i % 4];
    c.multiplier_above_one = i % 5 == 2 ? 1.7f : 0;
    c.huge_bias = i % 13 == 6;
    ASSERT_EQ(OutSize(c.padding, c.w, c.kw, c.stride_w, dil_w), ow) << c.Describe();
    testing::FastCheck check;
    check.op_type = "DEPTHWISE_CONV_2D";
    // Biases near 2^30 leave no room for the folded zero point (Plan::quads): another loop (the
    // generic one, or the 3x3 loop for a packed plan's 3x3 filter), or, with few channels whose
    // sampled biases all happen to fit, still this one.
    check.variant = c.huge_bias ? "/avx"
                                : "avx512/" + std::to_string(c.kh) + "x" + std::to_string(c.kw) + "s" +
                                      std::to_string(stride) + (dil_w > 1 ? "d" + std::to_string(dil_w) : "") +
                                      (pack > 1 ? "/p" + std::to_string(pack) : "") + "/dp4";
    check.threads = 1 + (i / 2) % 2;
    check.seed = 3800 + i++;
    const Graph graph = BuildDepthwise(c, check.seed);
    // Every third case with the integer stages (the fp32 form replaces them where it applies),
    // every third with the fp32 form without its bits form (Plan::quad_float_bits).
    kernels::SetFloatRequantEnabled(i % 3 != 0);
    kernels::SetFloatBitsEnabled(i % 3 != 1);
    testing::ExpectFastMatchesReference(graph, c.Describe(), check);
    kernels::SetFloatRequantEnabled(true);
    kernels::SetFloatBitsEnabled(true);
    // No byte written past the output (the masked stores of partial vectors): the output bound
    // to a caller buffer followed by guard bytes.
    auto model = rt::Model::FromGraph(graph);
    ASSERT_TRUE(model.ok());
    rt::InterpreterOptions io;
    io.num_threads = check.threads;
    auto it = rt::Interpreter::Create(*model, io);
    ASSERT_TRUE(it.ok() && (*it)->AllocateTensors().ok());
    const size_t bytes = static_cast<size_t>((*it)->output(0)->num_elements());
    std::vector<uint8_t> buffer(bytes + 64, 0xA5);
    ASSERT_TRUE((*it)->BindOutput(0, buffer.data(), bytes).ok());
    std::memset((*it)->input(0)->data, 0x3C, static_cast<size_t>((*it)->input(0)->num_elements()));
    ASSERT_TRUE((*it)->Invoke().ok());
    for (size_t k = bytes; k < buffer.size(); ++k)
      ASSERT_EQ(buffer[k], 0xA5) << c.Describe() << ": byte " << k - bytes << " past the output written";
  };
  for (int ow = 1; ow <= 40; ++ow)
    for (int stride : {1, 2}) {
      check_case(ow, stride, i % 2 == 0 ? 5 : 7, 5 + (i / 2) % 4, i % 9 == 5 ? 2 : 1);
      check_case(ow, stride, 3, 3, 2 + i % 3);
    }
  // Packed plans (Plan::kn_pixels): 8 and 4 channels (also as 4 x 2 and 2 x 2 with a depth
  // multiplier), stride_w 1, 3x3 with and without horizontal dilation and the wide filters, odd
  // widths (a partial last vector).
  for (int ow = 1; ow <= 40; ++ow) {
    check_case(ow, 1, 3, 3, 1 + (ow % 5 == 3), ow % 2 ? 8 : 4);
    check_case(ow, 1, ow % 3 == 0 ? 7 : 5, 5 + ow % 4, 1 + (ow % 4 == 1), ow % 3 ? 8 : 4);
  }
  // uint8 weights 0 and 255 around zero point 60: some w - zw leave int8, no quads.
  Case c;
  c.path = Path::kUInt8;
  c.per_channel = false;
  c.uint8_weight_zp = 60;
  c.kh = c.kw = 5;
  c.h = c.w = 9;
  c.c = 32;
  testing::FastCheck check;
  check.op_type = "DEPTHWISE_CONV_2D";
  check.variant = "avx2/generic";
  check.seed = 3799;
  testing::ExpectFastMatchesReference(BuildDepthwise(c, check.seed), c.Describe(), check);
}

// The geometry of the plan tests: one size x size image of 30 channels (the AVX-512 rows pay), a
// 3x3 filter, SAME padding.
kernels::dwq::Geom PlanTestGeom(int size) {
  kernels::dwq::Geom g;
  g.batches = 1;
  g.in_h = g.in_w = g.out_h = g.out_w = size;
  g.channels = 30;
  g.k_h = g.k_w = 3;
  g.pad_h = g.pad_w = 1;
  return g;
}

// When a plan uses the quad rows: AVX-512 rows, weights (minus their zero point) within int8 or,
// uint8, a sum of two int8 values (all but 255: the rest in quad_rest), and the bias with
// -(zp + 128) * sum(weights) folded in (int8 input; zp for uint8) below 2^29. Six pixels wide at
// stride 1: pair quads, with the taps one byte up for the odd pixels (quad_weights_b / quad_rest_b).
TEST(DepthwiseInt8Plan, QuadRowsConditions) {
  const kernels::dwq::Geom g = PlanTestGeom(6);
  struct T {
    bool uint8, avx512;
    int weight, weight_zp;
    int32_t bias, input_zp;
    bool quads;
    int rest;  // Plan::quad_rest of every tap (0: none needed)
  };
  const T cases[] = {{false, true, -127, 0, 100, 5, true, 0},      {false, false, -127, 0, 100, 5, false, 0},
                     {false, true, 127, 0, (1 << 29) - 300000, -128, true, 0},
                     {false, true, -127, 0, (1 << 29) - 200000, 127, false, 0},
                     {true, true, 199, 72, 100, 30, true, 0},          {true, true, 0, 128, 100, 30, true, 0},
                     {true, true, 200, 72, 100, 30, true, 1},          {true, true, 0, 129, 100, 30, true, -1},
                     {true, true, 0, 255, 100, 30, true, -127},        {true, true, 254, 0, 100, 30, true, 127},
                     {true, true, 255, 0, 100, 30, false, 0},          {true, false, 200, 72, 100, 30, false, 0}};
  for (const T& t : cases) {
    kernels::dwq::Plan p;
    p.natural = true;
    if (t.uint8) {
      const std::vector<uint8_t> w(9 * 30, static_cast<uint8_t>(t.weight));
      kernels::dwq::BuildPlan(g, w.data(), t.weight_zp, &p);
    } else {
      const std::vector<int8_t> w(9 * 30, static_cast<int8_t>(t.weight));
      kernels::dwq::BuildPlan(g, w.data(), 0, &p);
    }
    const std::vector<int32_t> bias(30, t.bias);
    p.act_min = t.uint8 ? 0 : -128;
    p.act_max = t.uint8 ? 255 : 127;
    p.kind = t.uint8 ? kernels::dwq::OutKind::kUInt8 : kernels::dwq::OutKind::kInt8;
    kernels::dwq::BuildRequant(p, bias.data(), {1 << 30}, {-8}, 0, &p);
    p.avx512 = t.avx512;
    kernels::dwq::FinishPlan(&p, t.input_zp);
    EXPECT_EQ(p.quads, t.quads) << "weight " << t.weight << " - " << t.weight_zp << " bias " << t.bias << " zp "
                                << t.input_zp;
    if (!p.quads) continue;
    EXPECT_EQ(p.quad_zp, t.input_zp + (t.uint8 ? 0 : 128));
    ASSERT_TRUE(p.quad_pairs);
    EXPECT_EQ(p.row_entries, g.out_w / 2);
    const int64_t sum = 9 * int64_t{t.weight - t.weight_zp};
    // The folded bias; in the bits form (Plan::quad_float_bits) the accumulators start kFloatBitsBase
    // + M higher, with M + x in [2^23, 2^24) for every sum x of the channel (folded bias plus 9
    // taps of quad bytes 0..255).
    const int64_t folded = t.bias - p.quad_zp * sum;
    if (p.quad_float_bits) {
      const int64_t m = static_cast<int64_t>(static_cast<uint32_t>(p.requant16[0].bias[3]) -
                                             static_cast<uint32_t>(folded) - kernels::kFloatBitsBase);
      const int64_t reach = 255 * std::abs(sum);
      EXPECT_GE(m + folded - reach, int64_t{1} << 23);
      EXPECT_LT(m + folded + reach, int64_t{1} << 24);
    } else {
      EXPECT_EQ(p.requant16[0].bias[3], folded);
    }
    const size_t at = (2 * p.c16 + 3) * 4;  // filter row 2, channel 3
    EXPECT_EQ(p.quad_weights[at + 1], t.weight - t.weight_zp - t.rest);
    EXPECT_EQ(p.quad_weights[at + 3], 0);
    ASSERT_EQ(p.quad_weights_b.size(), p.quad_weights.size());
    EXPECT_EQ(p.quad_weights_b[at + 0], 0);
    EXPECT_EQ(p.quad_weights_b[at + 2], t.weight - t.weight_zp - t.rest);
    ASSERT_EQ(p.quad_rest.empty(), t.rest == 0);
    ASSERT_EQ(p.quad_rest_b.empty(), t.rest == 0);
    if (t.rest == 0) continue;
    EXPECT_EQ(p.quad_rest[at + 1], t.rest);
    EXPECT_EQ(p.quad_rest[at + 3], 0);
    EXPECT_EQ(p.quad_rest_b[at + 0], 0);
    EXPECT_EQ(p.quad_rest_b[at + 3], t.rest);
    EXPECT_EQ(p.quad_split, std::vector<uint8_t>(p.c16 / 16, 1));
  }
}

// The AVX-512 VBMI builder of stride-2 quads and pair quads (bands under 8 blocks) writes the
// entries QuadRowK3 writes, byte for byte: widths around the edge cases (left padding or none,
// entries whose new columns leave the row, short rows), channel counts that are and are not
// multiples of 16 or 64, bands that start past channel 0, int8 and uint8, and rows at the end of
// the input (masked loads).
TEST(DepthwiseInt8Plan, QuadRowBuildersAgree) {
  if (!(rt::Cpu().has_avx512_vnni() && rt::Cpu().avx512vbmi))
    GTEST_SKIP() << "no AVX-512 VNNI + VBMI on this CPU (or EDGEOPT_CPU caps it): the VBMI builder is not used";
  std::mt19937 rng(61);
  int checked = 0;
  for (const bool uint8 : {false, true})
    for (const int stride : {1, 2})
      for (const int in_w : {5, 6, 7, 8, 9, 12, 13, 29, 56})
        for (const int pad : {0, 1})
          for (const int channels : {16, 24, 40, 64, 100, 112}) {
            kernels::dwq::Geom g;
            g.batches = 1;
            g.in_h = 3;
            g.in_w = in_w;
            g.channels = channels;
            g.k_h = g.k_w = 3;
            g.stride_h = g.stride_w = stride;
            g.pad_h = g.pad_w = pad;
            g.out_w = (in_w + 2 * pad - 3) / stride + 1;
            g.out_h = (g.in_h + 2 * pad - 3) / stride + 1;
            kernels::dwq::Plan p;
            p.natural = true;
            std::vector<uint8_t> w(static_cast<size_t>(9 * channels));
            for (uint8_t& v : w) v = static_cast<uint8_t>(rng() % 61 + (uint8 ? 100 : 226));  // small values
            if (uint8) kernels::dwq::BuildPlan(g, w.data(), 128, &p);
            else kernels::dwq::BuildPlan(g, reinterpret_cast<const int8_t*>(w.data()), 0, &p);
            const std::vector<int32_t> bias(static_cast<size_t>(channels), 100);
            p.act_min = uint8 ? 0 : -128;
            p.act_max = uint8 ? 255 : 127;
            p.kind = uint8 ? kernels::dwq::OutKind::kUInt8 : kernels::dwq::OutKind::kInt8;
            kernels::dwq::BuildRequant(p, bias.data(), {1 << 30}, {-8}, 3, &p);
            p.avx512 = true;
            kernels::dwq::FinishPlan(&p, uint8 ? 120 : -5);
            ASSERT_TRUE(p.quads) << "in_w " << in_w << " channels " << channels;
            if (stride == 1 && !p.quad_pairs) continue;  // 3-column stride-1 quads: QuadRowK3 alone
            const kernels::dwq::PairRowFn vbmi = kernels::dwq::QuadRowBuilder(p, uint8, true);
            const kernels::dwq::PairRowFn k3 = kernels::dwq::QuadRowBuilder(p, uint8, false);
            ASSERT_NE(vbmi, k3);
            // The input: one row ending exactly at the buffer's end.
            std::vector<uint8_t> row(static_cast<size_t>(in_w) * channels);
            for (uint8_t& v : row) v = static_cast<uint8_t>(rng());
            for (const int cb_begin : {0, 16}) {
              if (cb_begin >= p.c16) continue;
              const int cb_end = p.c16;
              const size_t entry_stride = static_cast<size_t>(cb_end - cb_begin) * 2 + 32;  // a gap
              const size_t n = static_cast<size_t>(p.row_entries) * entry_stride + 64;
              // Entries are stored aligned: both buffers start on a 64-byte boundary.
              std::vector<int16_t> sa(n + 32, 0x5A5A), sb(n + 32, 0x5A5A);
              const auto aligned = [](std::vector<int16_t>& v) {
                return reinterpret_cast<int16_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) / 64 * 64);
              };
              int16_t* a = aligned(sa);
              int16_t* b = aligned(sb);
              vbmi(p, row.data(), row.data() + row.size(), 0, a, cb_begin, cb_end, entry_stride);
              k3(p, row.data(), row.data() + row.size(), 0, b, cb_begin, cb_end, entry_stride);
              // Each entry's dwords of the layer's channels (lanes past them are read with zero
              // weights: their bytes may differ).
              for (int j = 0; j < p.row_entries; ++j)
                for (int c = cb_begin; c < std::min(cb_end, channels); ++c) {
                  const size_t at = static_cast<size_t>(j) * entry_stride + static_cast<size_t>(c - cb_begin) * 2;
                  ASSERT_TRUE(a[at] == b[at] && a[at + 1] == b[at + 1])
                      << "entry " << j << " channel " << c << ": " << (uint8 ? "uint8" : "int8") << " stride "
                      << stride << " in_w " << in_w << " pad " << pad << " channels " << channels << " band from "
                      << cb_begin;
                }
              ++checked;
            }
          }
  EXPECT_GT(checked, 300);
}

// When the output zero point may be folded (every lane: (|zp| + 1) * 2^e + 2^29 < 2^31), and
// when the adjustment for negative values may be skipped (act_min >= zp).
TEST(DepthwiseInt8Plan, FoldOutputZeroPointConditions) {
  const kernels::dwq::Geom g = PlanTestGeom(4);
  const std::vector<int8_t> w(9 * 30, 3);
  const std::vector<int32_t> bias(30, 100);
  struct T {
    int shift;  // QuantizeMultiplier's exponent: right shift -shift
    int32_t zp, act_min;
    bool folded, floor;
  };
  const T cases[] = {{-8, 5, 5, true, true},          {-8, 5, -128, true, false},    {-8, -128, -128, true, true},
                     {-24, 127, 127, false, false},    {-20, 127, 127, true, true},   {-20, -128, -127, true, true},
                     {-24, -128, -128, false, false},  {0, 3, -128, true, false}};
  for (const T& t : cases) {
    kernels::dwq::Plan p;
    p.natural = true;
    kernels::dwq::BuildPlan(g, w.data(), 0, &p);
    p.act_min = t.act_min;
    p.act_max = 127;
    p.kind = kernels::dwq::OutKind::kInt8;
    kernels::dwq::BuildRequant(p, bias.data(), {1 << 30}, {t.shift}, t.zp, &p);
    p.avx512 = true;
    kernels::dwq::FinishPlan(&p, 0);
    EXPECT_TRUE(p.doubled) << t.shift;
    EXPECT_EQ(p.zp_folded, t.folded) << "shift " << t.shift << " zp " << t.zp;
    EXPECT_EQ(p.floor_clamps, t.floor) << "shift " << t.shift << " zp " << t.zp << " act_min " << t.act_min;
    // Quad plans with floor_clamps and right shifts of 1 or more skip the doubling.
    EXPECT_EQ(p.quad_halved, p.quads && t.floor && t.shift < 0) << "shift " << t.shift << " zp " << t.zp;
    // Quad plans with right shifts of 1 or more requantize in fp32 (these multipliers of 2^30 give
    // exact float scales: constants always exist), with a sign-dependent offset where the clamp
    // keeps values below the zero point, but not when that is turned off.
    EXPECT_EQ(p.quad_float, p.quads && t.shift < 0) << "shift " << t.shift << " zp " << t.zp;
    EXPECT_EQ(p.quad_float_split, p.quad_float && t.act_min < t.zp) << "shift " << t.shift << " zp " << t.zp;
    // ... and without the conversion where the offset does not depend on the sign (small sums).
    EXPECT_EQ(p.quad_float_bits, p.quad_float && !p.quad_float_split) << "shift " << t.shift << " zp " << t.zp;
    kernels::SetFloatRequantEnabled(false);
    kernels::dwq::Plan q;
    q.natural = true;
    kernels::dwq::BuildPlan(g, w.data(), 0, &q);
    q.act_min = t.act_min;
    q.act_max = 127;
    q.kind = kernels::dwq::OutKind::kInt8;
    kernels::dwq::BuildRequant(q, bias.data(), {1 << 30}, {t.shift}, t.zp, &q);
    q.avx512 = true;
    kernels::dwq::FinishPlan(&q, 0);
    kernels::SetFloatRequantEnabled(true);
    EXPECT_FALSE(q.quad_float);
    EXPECT_EQ(q.quad_halved, p.quad_halved);
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// The 16x8 AVX-512 output stage against the reference's MultiplyByQuantizedMultiplier (int64
// input) channel by channel: total shifts from 1 (every odd product is a tie) to 46, multipliers
// at the reduction's edge (>= 0x7FFF0000), biases near +-2^40, sums of both signs, partial groups.
TEST(DepthwiseInt16Stage, MatchesReferenceRequantization) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the 16x8 stage is scalar";
  std::mt19937_64 rng(61);
  kernels::dwq::Plan p;
  const int channels = 37;
  const int shifts[] = {14, 13, 10, 1, 0, -5, -20, -31};
  for (int c = 0; c < channels; ++c) {
    p.shift16.push_back(shifts[c % 8]);
    p.mult16.push_back(c % 5 == 0 ? 0x7FFFFFFF : c % 7 == 0 ? 0x7FFF0000 : static_cast<int32_t>(0x40000000 + rng() % 0x3FFFFFFF));
  }
  p.act_min = -32768;
  p.act_max = 32767;
  kernels::dwq::PlanInt16Stage(&p, true);
  ASSERT_NE(p.int16_stage, nullptr);
  std::uniform_int_distribution<int32_t> acc_d(-(1 << 30), 1 << 30);
  std::uniform_int_distribution<int64_t> bias_d(-(int64_t{1} << 40), int64_t{1} << 40);
  for (int round = 0; round < 200; ++round) {
    if (round == 100) {  // a narrower clamp
      p.act_min = -1000;
      p.act_max = 2000;
    }
    std::vector<int32_t> acc(channels);
    std::vector<int64_t> bias(channels);
    for (int c = 0; c < channels; ++c) {
      // Every third round: sums of a few units, so that the small total shifts stay inside the
      // clamp and their ties decide the result.
      acc[c] = round % 3 == 0 ? acc_d(rng) % 4 : acc_d(rng);
      bias[c] = round % 2 && round % 3 != 0 ? bias_d(rng) : 0;
    }
    for (int cb = 0; cb < channels; cb += 16) {
      const int n = std::min(16, channels - cb);
      std::vector<int16_t> got(channels, 0x5555), want(channels, 0x5555);
      p.int16_stage(p, acc.data() + cb, round % 2 ? bias.data() : nullptr, cb, n, got.data());
      for (int i = 0; i < n; ++i) {
        const int c = cb + i;
        const int32_t v = kernels::MultiplyByQuantizedMultiplier(int64_t{acc[c]} + (round % 2 ? bias[c] : 0),
                                                                 p.mult16[c], p.shift16[c]);
        want[c] = static_cast<int16_t>(std::clamp(v, p.act_min, p.act_max));
      }
      ASSERT_EQ(got, want) << "round " << round << " group " << cb;
    }
  }
}

}  // namespace
}  // namespace edgeopt
