// The fast float32 operators (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE/MAX_POOL_2D,
// ADD/SUB/MUL) run through the interpreter against straightforward loops written here, over many
// generated shapes, with the AVX-512 and AVX2 kernels (when the CPU has them) and with the
// portable ones (EDGEOPT-style CPU cap), at 1 and 2 threads. Then a set of graphs against
// TFLite 2.9 (CompareGraph).
//
// Tolerance: |got - ref| <= 2e-5 * (|bias| + sum over the window of |x * w|) per output, i.e. a
// relative 2e-5 of the magnitude the products accumulate (so it scales with K); pooling and
// elementwise results must be within 2e-6 relative (one or two roundings apart).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "graph/builder.h"
#include "kernels/common/broadcast.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/gemm.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/fast_vs_reference.h"
#include "support/float_stand_ins.h"
#include "support/output_guards.h"

namespace edgeopt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const tflite::ActivationFunctionType kActs[] = {
    tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU, tflite::ActivationFunctionType_RELU6,
    tflite::ActivationFunctionType_RELU_N1_TO_1};

std::vector<float> Random(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double Act(double x, int act) {
  float lo = -kInf, hi = kInf;
  kernels::FloatActivationRange(act, &lo, &hi);
  return std::min<double>(std::max<double>(x, lo), hi);
}

// Which kernel families to run: AVX-512 and AVX2 when the CPU has them, and the portable fallback.
struct Family {
  const char* name;
  rt::CpuFeatures cpu;
};
std::vector<Family> Families() {
  std::vector<Family> f;
  if (rt::CpuHardware().has_avx512()) {
    // Both tunings of the AVX-512 kernel choice (cores splitting zmm in halves, full-width ones).
    f.push_back({"avx512-halved", rt::CapFeatures(rt::CpuHardware(), "avx512-halved")});
    f.push_back({"avx512-full", rt::CapFeatures(rt::CpuHardware(), "avx512-full")});
  }
  if (rt::CpuHardware().has_avx2_fma()) f.push_back({"avx2", rt::CapFeatures(rt::CpuHardware(), "avx2")});
  f.push_back({"generic", rt::CapFeatures(rt::CpuHardware(), "generic")});
  return f;
}

struct OpRun {
  std::vector<float> out;
  rt::Shape shape;
  std::string variant;
};

// Runs the graph's single op with inputs given by position.
OpRun RunGraph(const Graph& g, const std::vector<std::vector<float>>& inputs, int threads, const rt::CpuFeatures& cpu) {
  OpRun r;
  auto model = rt::Model::FromGraph(g);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return r;
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.cpu = &cpu;
  auto interp = rt::Interpreter::Create(*model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return r;
  Status st = (*interp)->AllocateTensors();
  EXPECT_TRUE(st.ok()) << st.ToString();
  // Outputs in guarded buffers: a kernel that stores past its output (a full vector over a
  // channel tail, say) fails the run.
  testing::OutputGuards guards;
  st = guards.Bind(**interp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < inputs.size(); ++i)
    std::memcpy((*interp)->input(static_cast<int>(i))->data, inputs[i].data(), inputs[i].size() * sizeof(float));
  st = (*interp)->Invoke();
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = guards.Check();
  EXPECT_TRUE(st.ok()) << st.ToString();
  const rt::RtTensor* o = (*interp)->output(0);
  r.shape = o->shape;
  r.out.assign(o->data_as<float>(), o->data_as<float>() + o->num_elements());
  for (const auto& info : (*interp)->ops()) r.variant = info.variant;
  return r;
}

// ref/mag: reference value and accumulated magnitude per output element.
void Expect(const OpRun& r, const rt::Shape& shape, const std::vector<double>& ref, const std::vector<double>& mag,
            double rel, const std::string& what) {
  ASSERT_EQ(r.shape, shape) << what;
  ASSERT_EQ(r.out.size(), ref.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double tol = rel * mag[i] + 1e-30;
    if (!(std::fabs(r.out[i] - ref[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << " [" << r.variant << "] element " << i << ": got " << r.out[i] << " want " << ref[i];
  }
}

// ---------------------------------------------------------------------------------------------
// CONV_2D

struct ConvCase {
  int batch, h, w, cin, cout, kh, kw, sh, sw, dh, dw;
  tflite::Padding padding;
  int act;
  bool bias;
  std::string Name() const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "conv b%d %dx%dx%d -> %d k%dx%d s%d,%d d%d,%d %s act%d%s", batch, h, w, cin, cout,
                  kh, kw, sh, sw, dh, dw, padding == tflite::Padding_SAME ? "SAME" : "VALID", act,
                  bias ? "" : " nobias");
    return buf;
  }
};

// variant_part: when set, the kernel's variant must contain it. Returns the variant.
std::string CheckConv(const ConvCase& c, std::mt19937& rng, int threads, const Family& fam,
                      const char* variant_part = nullptr) {
  const int oh = kernels::ComputeOutSize(c.padding, c.h, c.kh, c.sh, c.dh);
  const int ow = kernels::ComputeOutSize(c.padding, c.w, c.kw, c.sw, c.dw);
  if (oh <= 0 || ow <= 0) return "";
  int off;
  const int pt = kernels::ComputePadding(c.sh, c.dh, c.h, c.kh, oh, &off);
  const int pl = kernels::ComputePadding(c.sw, c.dw, c.w, c.kw, ow, &off);
  auto x = Random(rng, static_cast<size_t>(c.batch) * c.h * c.w * c.cin);
  auto wt = Random(rng, static_cast<size_t>(c.cout) * c.kh * c.kw * c.cin);
  auto bias = Random(rng, c.cout);
  GraphBuilder b;
  auto in = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.cin});
  auto wi = b.Const<float>("w", DType::kFloat32, {c.cout, c.kh, c.kw, c.cin}, wt);
  std::vector<int32_t> ins = {in, wi};
  if (c.bias) ins.push_back(b.Const<float>("b", DType::kFloat32, {c.cout}, bias));
  auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, c.cout});
  tflite::Conv2DOptionsT o;
  o.padding = c.padding;
  o.stride_h = c.sh;
  o.stride_w = c.sw;
  o.dilation_h_factor = c.dh;
  o.dilation_w_factor = c.dw;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  b.Op(tflite::BuiltinOperator_CONV_2D, ins, {y}, o);
  b.Output(y);
  const OpRun r = RunGraph(b.Finish(), {x}, threads, fam.cpu);
  std::vector<double> ref, mag;
  for (int n = 0; n < c.batch; ++n)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int co = 0; co < c.cout; ++co) {
          double s = c.bias ? bias[co] : 0.0, m = std::fabs(s);
          for (int ky = 0; ky < c.kh; ++ky)
            for (int kx = 0; kx < c.kw; ++kx) {
              const int iy = oy * c.sh - pt + ky * c.dh, ix = ox * c.sw - pl + kx * c.dw;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int ci = 0; ci < c.cin; ++ci) {
                const double p = static_cast<double>(x[((static_cast<size_t>(n) * c.h + iy) * c.w + ix) * c.cin + ci]) *
                                 wt[((static_cast<size_t>(co) * c.kh + ky) * c.kw + kx) * c.cin + ci];
                s += p;
                m += std::fabs(p);
              }
            }
          ref.push_back(Act(s, c.act));
          mag.push_back(m);
        }
  Expect(r, {c.batch, oh, ow, c.cout}, ref, mag, 2e-5, c.Name() + " " + fam.name + " t" + std::to_string(threads));
  if (variant_part) {
    EXPECT_NE(r.variant.find(variant_part), std::string::npos)
        << c.Name() << " " << fam.name << " t" << threads << ": variant " << r.variant;
  }
  return r.variant;
}

TEST(FastF32Ops, Conv2DMatchesLoops) {
  std::mt19937 rng(11);
  std::vector<ConvCase> cases = {
      // MobileNet-like: first layer, pointwise, whole-input (classifier) conv.
      {1, 17, 17, 3, 8, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 3, true},
      {1, 9, 9, 16, 24, 1, 1, 1, 1, 1, 1, tflite::Padding_SAME, 3, true},
      {2, 1, 1, 40, 37, 1, 1, 1, 1, 1, 1, tflite::Padding_VALID, 0, true},
      {2, 3, 3, 5, 9, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 0, false},
      {1, 6, 7, 20, 70, 1, 1, 2, 2, 1, 1, tflite::Padding_VALID, 1, true},  // 1x1 stride 2
      {1, 13, 11, 6, 17, 3, 3, 1, 1, 2, 3, tflite::Padding_SAME, 2, true},  // dilated
      // MobileNetV2 shapes for the 12×32 AVX-512 tile: stem, small N (16, 24) and small K
      // (16, 24), a 7×7 layer (M = 49: a 1-row tail tile), the classifier (M = 1).
      {1, 23, 23, 3, 32, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 14, 14, 32, 16, 1, 1, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {1, 14, 13, 16, 96, 1, 1, 1, 1, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 11, 11, 144, 24, 1, 1, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {1, 11, 11, 24, 144, 1, 1, 1, 1, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 7, 7, 320, 1280, 1, 1, 1, 1, 1, 1, tflite::Padding_VALID, 2, true},
      {1, 1, 1, 1280, 1001, 1, 1, 1, 1, 1, 1, tflite::Padding_VALID, 0, true},
      {2, 9, 10, 24, 40, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 1, true},
      // One output channel (segmentation heads; AVX-512: dot products over filter-row taps,
      // 16 pixels reduced at once): window rows of 1 to 96 floats (one block, two, six),
      // 1 to 7 filter rows, strides, SAME / VALID borders, batch 2, dilation in y, rows of
      // 37 pixels (a last group of 5).
      {1, 40, 37, 8, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {2, 12, 37, 32, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 3, true},
      {1, 19, 23, 3, 1, 5, 5, 2, 2, 1, 1, tflite::Padding_VALID, 1, false},
      {1, 21, 20, 3, 1, 7, 7, 1, 2, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 30, 9, 1, 1, 3, 1, 1, 1, 2, 1, tflite::Padding_SAME, 0, true},
      {1, 9, 9, 5, 1, 2, 3, 3, 3, 1, 1, tflite::Padding_SAME, 0, true},
  };
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  const int hs[] = {1, 2, 5, 8, 13}, cins[] = {1, 3, 4, 8, 9, 17, 32}, couts[] = {1, 5, 8, 16, 17, 24, 33, 48, 64};
  const int ks[] = {1, 1, 2, 3, 3, 5};
  for (int i = 0; i < 120; ++i) {
    ConvCase c;
    c.batch = 1 + pick(rng) % 2;
    c.h = hs[pick(rng) % 5];
    c.w = hs[pick(rng) % 5] + pick(rng) % 3;
    c.cin = cins[pick(rng) % 7];
    c.cout = couts[pick(rng) % 9];
    c.kh = ks[pick(rng) % 6];
    c.kw = pick(rng) % 3 ? c.kh : ks[pick(rng) % 6];
    c.sh = 1 + pick(rng) % 2;
    c.sw = pick(rng) % 3 ? c.sh : 1 + pick(rng) % 3;
    c.dh = pick(rng) % 4 ? 1 : 2;
    c.dw = pick(rng) % 4 ? 1 : 1 + pick(rng) % 3;
    c.padding = pick(rng) % 2 ? tflite::Padding_SAME : tflite::Padding_VALID;
    c.act = kActs[i % 4];
    c.bias = pick(rng) % 5 != 0;
    cases.push_back(c);
  }
  int n = 0;
  for (const Family& fam : Families())
    for (const ConvCase& c : cases) CheckConv(c, rng, 1 + (n++ % 2), fam);
}

// 3×3 stride-1 layers with 8+ input and 16+ output channels run Winograd F(2×2, 3×3): partial
// tiles (odd output sizes), one-pixel and one-row outputs, channel tails, batches (tiles across
// images), several blocks per thread, and at 2 threads the split over transform elements
// (weights larger than the tiles' data); within the same tolerance as the direct kernels.
TEST(FastF32Ops, Conv2DWinogradMatchesLoops) {
  std::mt19937 rng(21);
  const ConvCase cases[] = {
      {1, 5, 7, 16, 32, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {1, 8, 9, 8, 16, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 2, true},
      {2, 9, 10, 17, 33, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 3, true},
      {1, 30, 31, 64, 40, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 1, true},
      {1, 12, 13, 33, 17, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 2, false},
      {1, 2, 2, 16, 32, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {1, 3, 3, 32, 16, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 0, true},
      {1, 1, 5, 16, 32, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {1, 40, 37, 16, 48, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 3, true},
      {3, 6, 6, 48, 64, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 0, false},
      {1, 7, 7, 128, 160, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 1, true},
      {1, 4, 9, 200, 24, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
  };
  for (const Family& fam : Families()) {
    // Without AVX2 + FMA (the portable family) the direct kernel runs them.
    const bool vector = fam.cpu.has_avx2_fma();
    for (int threads : {1, 2})
      for (const ConvCase& c : cases) CheckConv(c, rng, threads, fam, vector ? "/winograd2x2" : nullptr);
    if (vector) CheckConv(cases[10], rng, 2, fam, "/winograd2x2/elements");
  }
  // EDGEOPT_WINOGRAD=0 (for A/B runs) keeps them on the direct kernels; so do fewer than 8 input
  // or 16 output channels.
  setenv("EDGEOPT_WINOGRAD", "0", 1);
  const std::string off = CheckConv(cases[2], rng, 1, Families()[0]);
  unsetenv("EDGEOPT_WINOGRAD");
  EXPECT_EQ(off.find("winograd"), std::string::npos) << off;
  for (const ConvCase& narrow : {ConvCase{1, 9, 9, 16, 15, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
                                 ConvCase{1, 9, 9, 7, 32, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true}}) {
    const std::string direct = CheckConv(narrow, rng, 1, Families()[0]);
    EXPECT_EQ(direct.find("winograd"), std::string::npos) << direct;
  }
}

// Feeds x to both interpreters' input 0, runs them and expects output 0 of `fast` within 1e-4
// (relative, plus 1e-4 absolute) of `ref`'s, reporting up to 5 elements with `what`.
void ExpectSameAsReference(rt::Interpreter& fast, rt::Interpreter& ref, const std::vector<float>& x,
                           const std::string& what) {
  std::memcpy(fast.input(0)->data, x.data(), x.size() * sizeof(float));
  std::memcpy(ref.input(0)->data, x.data(), x.size() * sizeof(float));
  ASSERT_TRUE(fast.Invoke().ok());
  ASSERT_TRUE(ref.Invoke().ok());
  ASSERT_EQ(fast.output(0)->num_elements(), ref.output(0)->num_elements()) << what;
  const float* got = fast.output(0)->data_as<float>();
  const float* want = ref.output(0)->data_as<float>();
  int bad = 0;
  for (int64_t i = 0; i < ref.output(0)->num_elements(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f * (1.0f + std::fabs(want[i]))) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " want " << want[i];
}

// Filter-row taps read border pixels from a scratch copy that each invoke refreshes: new data
// in the same input buffer, and a new input buffer (a resize moves it), must both be seen.
TEST(FastF32Ops, Conv2DBorderRowsFollowTheInput) {
  std::mt19937 rng(5);
  // An RGB stem whose right column pads (SAME, stride 2, even width) and one padded on both
  // sides (odd width, stride 1), filters 3 and 5 wide, batch 2.
  const ConvCase cases[] = {{2, 12, 12, 3, 8, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 3, true},
                            {1, 7, 9, 4, 20, 5, 5, 1, 1, 1, 1, tflite::Padding_SAME, 0, true}};
  for (const Family& fam : Families())
    for (const ConvCase& c : cases) {
      const int oh = kernels::ComputeOutSize(c.padding, c.h, c.kh, c.sh, c.dh);
      const int ow = kernels::ComputeOutSize(c.padding, c.w, c.kw, c.sw, c.dw);
      GraphBuilder b;
      auto in = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.cin});
      auto wi = b.Const<float>("w", DType::kFloat32, {c.cout, c.kh, c.kw, c.cin},
                               Random(rng, static_cast<size_t>(c.cout) * c.kh * c.kw * c.cin));
      auto bi = b.Const<float>("b", DType::kFloat32, {c.cout}, Random(rng, c.cout));
      auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, c.cout});
      tflite::Conv2DOptionsT o;
      o.padding = c.padding;
      o.stride_h = c.sh;
      o.stride_w = c.sw;
      b.Op(tflite::BuiltinOperator_CONV_2D, {in, wi, bi}, {y}, o);
      b.Output(y);
      auto model = rt::Model::FromGraph(b.Finish());
      ASSERT_TRUE(model.ok());
      rt::InterpreterOptions fast_opt, ref_opt;
      fast_opt.cpu = &fam.cpu;
      ref_opt.reference_kernels_only = true;
      auto fast = rt::Interpreter::Create(*model, fast_opt);
      auto ref = rt::Interpreter::Create(*model, ref_opt);
      ASSERT_TRUE(fast.ok() && ref.ok());
      ASSERT_TRUE((*fast)->AllocateTensors().ok() && (*ref)->AllocateTensors().ok());
      const size_t n = static_cast<size_t>(c.batch) * c.h * c.w * c.cin;
      for (int round = 0; round < 3; ++round) {
        if (round == 2) {  // a resize to the same shape re-plans; the input may move
          ASSERT_TRUE((*fast)->ResizeInput(0, {c.batch, c.h, c.w, c.cin}).ok());
          ASSERT_TRUE((*fast)->AllocateTensors().ok());
        }
        ExpectSameAsReference(**fast, **ref, Random(rng, n),
                              c.Name() + " " + fam.name + " round " + std::to_string(round));
      }
    }
}

// A VALID filter as large as the input runs as one direct GEMM; a resize to a larger input
// makes it an indirect one, whose k-pair packing holds the taps (3 filter rows of 9 floats, odd:
// each padded to whole pairs), and back. Each shape must match the reference kernel.
TEST(FastF32Ops, Conv2DResizeBetweenDirectAndIndirect) {
  std::mt19937 rng(8);
  GraphBuilder b;
  auto in = b.Input("x", DType::kFloat32, {1, 3, 3, 3});
  auto wi = b.Const<float>("w", DType::kFloat32, {20, 3, 3, 3}, Random(rng, 20 * 27));
  auto bi = b.Const<float>("b", DType::kFloat32, {20}, Random(rng, 20));
  auto y = b.Tensor("y", DType::kFloat32, {1, 1, 1, 20});
  tflite::Conv2DOptionsT o;
  o.padding = tflite::Padding_VALID;
  o.stride_h = o.stride_w = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {in, wi, bi}, {y}, o);
  b.Output(y);
  auto model = rt::Model::FromGraph(b.Finish());
  ASSERT_TRUE(model.ok());
  for (const Family& fam : Families()) {
    rt::InterpreterOptions fast_opt, ref_opt;
    fast_opt.cpu = &fam.cpu;
    ref_opt.reference_kernels_only = true;
    auto fast = rt::Interpreter::Create(*model, fast_opt);
    auto ref = rt::Interpreter::Create(*model, ref_opt);
    ASSERT_TRUE(fast.ok() && ref.ok());
    for (const auto& [h, w] : {std::pair{3, 3}, std::pair{7, 6}, std::pair{3, 3}, std::pair{5, 9}}) {
      for (auto* it : {fast->get(), ref->get()}) {
        ASSERT_TRUE(it->ResizeInput(0, {1, h, w, 3}).ok());
        ASSERT_TRUE(it->AllocateTensors().ok());
      }
      ExpectSameAsReference(**fast, **ref, Random(rng, static_cast<size_t>(h) * w * 3),
                            std::string(fam.name) + " " + std::to_string(h) + "x" + std::to_string(w));
      ASSERT_EQ((*fast)->output(0)->num_elements(), int64_t{20} * (h - 2) * (w - 2));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// DEPTHWISE_CONV_2D

struct DwCase {
  int batch, h, w, c, dm, kh, kw, sh, sw, dh, dw;
  tflite::Padding padding;
  int act;
  bool bias;
  std::string Name() const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "dw b%d %dx%dx%d dm%d k%dx%d s%d,%d d%d,%d %s act%d%s", batch, h, w, c, dm, kh, kw,
                  sh, sw, dh, dw, padding == tflite::Padding_SAME ? "SAME" : "VALID", act, bias ? "" : " nobias");
    return buf;
  }
};

// variant: if not null, receives the kernel variant that ran.
void CheckDw(const DwCase& c, std::mt19937& rng, int threads, const Family& fam, std::string* variant = nullptr) {
  const int oh = kernels::ComputeOutSize(c.padding, c.h, c.kh, c.sh, c.dh);
  const int ow = kernels::ComputeOutSize(c.padding, c.w, c.kw, c.sw, c.dw);
  if (oh <= 0 || ow <= 0) return;
  int off;
  const int pt = kernels::ComputePadding(c.sh, c.dh, c.h, c.kh, oh, &off);
  const int pl = kernels::ComputePadding(c.sw, c.dw, c.w, c.kw, ow, &off);
  const int oc = c.c * c.dm;
  auto x = Random(rng, static_cast<size_t>(c.batch) * c.h * c.w * c.c);
  auto wt = Random(rng, static_cast<size_t>(c.kh) * c.kw * oc);
  auto bias = Random(rng, oc);
  GraphBuilder b;
  auto in = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.c});
  auto wi = b.Const<float>("w", DType::kFloat32, {1, c.kh, c.kw, oc}, wt);
  std::vector<int32_t> ins = {in, wi};
  if (c.bias) ins.push_back(b.Const<float>("b", DType::kFloat32, {oc}, bias));
  auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, oc});
  tflite::DepthwiseConv2DOptionsT o;
  o.padding = c.padding;
  o.stride_h = c.sh;
  o.stride_w = c.sw;
  o.dilation_h_factor = c.dh;
  o.dilation_w_factor = c.dw;
  o.depth_multiplier = c.dm;
  o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, ins, {y}, o);
  b.Output(y);
  const OpRun r = RunGraph(b.Finish(), {x}, threads, fam.cpu);
  std::vector<double> ref, mag;
  for (int n = 0; n < c.batch; ++n)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int o2 = 0; o2 < oc; ++o2) {
          double s = c.bias ? bias[o2] : 0.0, m = std::fabs(s);
          for (int ky = 0; ky < c.kh; ++ky)
            for (int kx = 0; kx < c.kw; ++kx) {
              const int iy = oy * c.sh - pt + ky * c.dh, ix = ox * c.sw - pl + kx * c.dw;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              const double p = static_cast<double>(x[((static_cast<size_t>(n) * c.h + iy) * c.w + ix) * c.c + o2 / c.dm]) *
                               wt[(static_cast<size_t>(ky) * c.kw + kx) * oc + o2];
              s += p;
              m += std::fabs(p);
            }
          ref.push_back(Act(s, c.act));
          mag.push_back(m);
        }
  Expect(r, {c.batch, oh, ow, oc}, ref, mag, 2e-5, c.Name() + " " + fam.name + " t" + std::to_string(threads));
  if (variant) *variant = r.variant;
}

// CheckDw of every case for every kernel family, 1 and 2 threads; on the vector families (not
// "generic") the variant that ran must satisfy `expected`.
template <size_t N, typename Pred>
void CheckDwFamilies(const DwCase (&cases)[N], std::mt19937& rng, Pred expected) {
  int n = 0;
  for (const Family& fam : Families())
    for (const DwCase& c : cases) {
      std::string variant;
      CheckDw(c, rng, 1 + (n++ % 2), fam, &variant);
      if (std::string(fam.name) != "generic") {
        EXPECT_TRUE(expected(variant)) << c.Name() << " " << fam.name << " ran " << variant;
      }
    }
}

// One input channel with a depth multiplier (an audio model's first layer over a spectrogram)
// runs the convolution GEMM with the filter reordered, on AVX2 and AVX-512: row taps and
// dilated taps, the 1x1 direct GEMM, a filter over the whole input, strides, padding,
// activations, batch 2, 1 and 2 threads; depth multiplier 1 keeps the depthwise rows.
TEST(FastF32Ops, DepthwiseOneInputChannelRunsAsConv) {
  std::mt19937 rng(21);
  const DwCase cases[] = {
      {1, 49, 40, 1, 8, 10, 8, 2, 2, 1, 1, tflite::Padding_SAME, 1, true},  // micro_speech
      {2, 13, 11, 1, 3, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 20, 17, 1, 16, 5, 4, 2, 1, 2, 1, tflite::Padding_VALID, 0, true},
      {1, 12, 15, 1, 13, 3, 3, 1, 2, 1, 2, tflite::Padding_SAME, 3, true},
      {1, 9, 30, 1, 40, 1, 1, 1, 1, 1, 1, tflite::Padding_VALID, 0, true},
      {1, 9, 9, 1, 2, 9, 9, 1, 1, 1, 1, tflite::Padding_VALID, 0, true},
      {2, 6, 8, 1, 24, 2, 7, 3, 3, 1, 1, tflite::Padding_SAME, 1, true},
  };
  CheckDwFamilies(cases, rng, [](const std::string& v) { return v.find("depthwise_conv2d/as-conv2d/f32/") != std::string::npos; });
  DwCase one = cases[1];
  one.dm = 1;
  std::string variant;
  CheckDw(one, rng, 1, Families().front(), &variant);
  EXPECT_EQ(variant.find("as-conv2d"), std::string::npos) << variant;
}

// A depth multiplier > 1 over several input channels runs the vector rows on the input with its
// channels repeated (not the portable rows): odd channel counts, strides, dilation, VALID, 5x5,
// batch 2, 1 and 2 threads.
TEST(FastF32Ops, DepthwiseMultiplierRunsTheVectorRows) {
  std::mt19937 rng(22);
  const DwCase cases[] = {
      {1, 8, 8, 5, 3, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true},
      {2, 9, 6, 4, 2, 3, 3, 2, 2, 1, 1, tflite::Padding_VALID, 3, true},
      {1, 12, 11, 16, 2, 5, 5, 1, 1, 1, 1, tflite::Padding_SAME, 2, true},
      {1, 10, 13, 3, 4, 3, 3, 1, 2, 2, 2, tflite::Padding_SAME, 1, true},
      {1, 7, 7, 24, 3, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 0, true},
  };
  CheckDwFamilies(cases, rng, [](const std::string& v) { return v.find("scalar") == std::string::npos; });
}

TEST(FastF32Ops, DepthwiseMatchesLoops) {
  std::mt19937 rng(12);
  std::vector<DwCase> cases;
  // Every channel count 1..67 on the common MobileNet cases (3x3 s1/s2 SAME, 5x5).
  for (int c = 1; c <= 67; ++c) {
    cases.push_back({1 + c % 2, 7 + c % 5, 9 + c % 4, c, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, kActs[c % 4], true});
    cases.push_back({1, 10 + c % 3, 11, c, 1, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, kActs[(c + 1) % 4], true});
    if (c % 3 == 0) cases.push_back({1, 12, 13, c, 1, 5, 5, 1 + c % 2, 1 + c % 2, 1, 1, tflite::Padding_SAME, kActs[c % 4], true});
  }
  // Wide rows (full 8-pixel tiles), VALID, dilation, depth multiplier, odd filters.
  cases.push_back({1, 5, 40, 16, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 0, true});
  cases.push_back({2, 9, 37, 24, 1, 3, 3, 1, 1, 2, 2, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 17, 17, 13, 1, 3, 3, 1, 1, 4, 4, tflite::Padding_SAME, 1, true});
  cases.push_back({1, 8, 8, 5, 3, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 0, true});
  cases.push_back({2, 9, 6, 4, 2, 3, 3, 2, 2, 1, 1, tflite::Padding_VALID, 3, true});
  cases.push_back({1, 11, 10, 1, 8, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 9, 21, 19, 1, 2, 7, 1, 3, 1, 1, tflite::Padding_SAME, 0, true});
  cases.push_back({1, 3, 3, 8, 1, 5, 5, 1, 1, 1, 1, tflite::Padding_SAME, 0, true});  // filter > image
  cases.push_back({1, 6, 30, 12, 1, 1, 1, 1, 1, 1, 1, tflite::Padding_VALID, 0, true});
  cases.push_back({1, 7, 7, 40, 1, 7, 7, 1, 1, 1, 1, tflite::Padding_VALID, 0, true});
  // Narrow rows, one sliding group each (every column of it may be a border column): 5x5 on
  // 7x7 (MobileNet / hand landmark heads), 3x3 and 5x5 stride 2, dilated 3x3, widths 1..8.
  for (int w = 1; w <= 8; ++w) {
    cases.push_back({1, 7, w, 16 + 7 * (w % 3), 1, 5, 5, 1, 1, 1, 1, tflite::Padding_SAME, w % 4, true});
    cases.push_back({1, 5, w + 7, 24, 1, 3 + 2 * (w % 2), 3 + 2 * (w % 2), 2, 2, 1, 1, tflite::Padding_SAME, 0, true});
    cases.push_back({1, 6, w + 3, 20, 1, 3, 3, 1, 1, 2, 2, tflite::Padding_SAME, 1, true});
  }
  cases.push_back({1, 7, 7, 1152 / 16, 1, 5, 5, 1, 1, 1, 1, tflite::Padding_SAME, 0, true});
  cases.push_back({1, 14, 14, 40, 1, 5, 5, 1, 1, 1, 1, tflite::Padding_VALID, 2, true});
  // Whole 16-channel blocks on wide rows (the AVX-512 kernels), with and without a tail block.
  cases.push_back({1, 6, 29, 32, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 9, 30, 48, 1, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 5, 27, 40, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_VALID, 1, true});
  cases.push_back({1, 9, 35, 33, 1, 3, 3, 1, 1, 2, 2, tflite::Padding_SAME, 0, true});
  // Rows whose shared input rows exceed 256 KB over all blocks run in channel chunks (a partial
  // last block too): 3x3 stride 1 and 2, dilated; two or more chunks with 8 and 16 lanes alike.
  cases.push_back({1, 9, 120, 200, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 8, 150, 100, 1, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 1, true});
  cases.push_back({1, 10, 60, 100, 1, 3, 3, 1, 1, 4, 4, tflite::Padding_SAME, 0, true});
  cases.push_back({1, 12, 40, 200, 1, 3, 3, 1, 1, 1, 1, tflite::Padding_SAME, 2, true});
  cases.push_back({1, 11, 60, 100, 1, 3, 3, 2, 2, 1, 1, tflite::Padding_SAME, 1, true});
  cases.push_back({1, 10, 40, 72, 1, 3, 3, 1, 1, 2, 2, tflite::Padding_SAME, 0, true});
  int n = 0;
  for (const Family& fam : Families())
    for (const DwCase& c : cases) CheckDw(c, rng, 1 + (n++ % 2), fam);
}

// The AVX-512 kernels are the ones chosen when the CPU has AVX-512 (for GEMMs from K = 64 on,
// and the small-K family for 1×1 ones of whole panels), the AVX2 ones under the cap.
TEST(FastF32Ops, ChoosesAvx512WhenTheCpuHasIt) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL, DQ)";
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1, 8, 8, 16});
  auto t0 = b.Tensor("t0", DType::kFloat32, {1, 8, 8, 24});
  tflite::Conv2DOptionsT co;
  co.padding = tflite::Padding_SAME;
  co.stride_h = co.stride_w = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, b.ConstRandom("w0", DType::kFloat32, {24, 3, 3, 16}),
                                         b.ConstRandom("b0", DType::kFloat32, {24})}, {t0}, co);
  auto t1 = b.Tensor("t1", DType::kFloat32, {1, 8, 8, 24});
  tflite::DepthwiseConv2DOptionsT dopt;
  dopt.padding = tflite::Padding_SAME;
  dopt.stride_h = dopt.stride_w = 1;
  dopt.depth_multiplier = 1;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {t0, b.ConstRandom("w1", DType::kFloat32, {1, 3, 3, 24}),
                                                   b.ConstRandom("b1", DType::kFloat32, {24})}, {t1}, dopt);
  auto t2 = b.Tensor("t2", DType::kFloat32, {1, 10});
  tflite::FullyConnectedOptionsT fo;
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {t1, b.ConstRandom("w2", DType::kFloat32, {10, 8 * 8 * 24}), kNoTensor},
       {t2}, fo);
  b.Output(t2);
  // 1×1, K = 24: the small-K family for N = 16 (whole panels), AVX2 for N = 24 (a half panel).
  auto t3 = b.Tensor("t3", DType::kFloat32, {1, 8, 8, 16});
  b.Op(tflite::BuiltinOperator_CONV_2D, {t1, b.ConstRandom("w3", DType::kFloat32, {16, 1, 1, 24}),
                                         b.ConstRandom("b3", DType::kFloat32, {16})}, {t3}, co);
  b.Output(t3);
  auto t4 = b.Tensor("t4", DType::kFloat32, {1, 8, 8, 24});
  b.Op(tflite::BuiltinOperator_CONV_2D, {t1, b.ConstRandom("w4", DType::kFloat32, {24, 1, 1, 24}),
                                         b.ConstRandom("b4", DType::kFloat32, {24})}, {t4}, co);
  b.Output(t4);
  // One output channel, 3×3: dot products over filter-row taps on AVX-512.
  auto t5 = b.Tensor("t5", DType::kFloat32, {1, 8, 8, 1});
  b.Op(tflite::BuiltinOperator_CONV_2D, {t1, b.ConstRandom("w5", DType::kFloat32, {1, 3, 3, 24}),
                                         b.ConstRandom("b5", DType::kFloat32, {1})}, {t5}, co);
  b.Output(t5);
  const Graph g = b.Finish();
  struct Config {
    rt::CpuFeatures cpu;
    const char* isa;
    const char* k24;  // the K = 24 1×1 layers' families (N = 16, N = 24)
    const char* k24_half_panel;
    const char* conv3x3;  // the 3×3 16 -> 24 layer's family
  };
  const rt::CpuFeatures& hw = rt::CpuHardware();
  std::vector<Config> configs = {{rt::CapFeatures(hw, "avx2"), "avx2", "avx2", "avx2", "avx2"}};
  if (hw.has_avx512()) {
    // Halved zmm: the 3×3 layer on the wide tiles (its 64 pixels are not whole 7-row tiles).
    configs.push_back({rt::CapFeatures(hw, "avx512-halved"), "avx512", "avx512/smallk", "avx2", "avx512"});
    // Full-width zmm: the k-pair tiles for both (no small-K family beyond k = 16; 9..24 columns),
    // and for the 3×3 layer (48 floats per filter-row tap).
    configs.push_back({rt::CapFeatures(hw, "avx512-full"), "avx512", "avx512/kpair", "avx512/kpair", "avx512/kpair"});
  }
  // The 3×3 16 -> 24 layer runs Winograd F(2×2, 3×3) (its GEMMs, K = 16 and N = 24, on the
  // direct GEMM's family) unless EDGEOPT_WINOGRAD=0, which leaves it to the families above.
  for (bool winograd : {false, true})
  for (const auto& [cpu, isa, k24, k24_half_panel, conv3x3] : configs) {
    if (!winograd) setenv("EDGEOPT_WINOGRAD", "0", 1);
    const std::string first =
        winograd ? std::string("conv2d/f32/") + kernels::gemm::SelectDirectUkernels(cpu, 16, 24).isa + "/winograd2x2"
                 : std::string("conv2d/f32/") + conv3x3;
    auto model = rt::Model::FromGraph(g);
    ASSERT_TRUE(model.ok());
    rt::InterpreterOptions io;
    io.cpu = &cpu;
    auto interp = rt::Interpreter::Create(*model, io);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    unsetenv("EDGEOPT_WINOGRAD");
    ASSERT_TRUE((*interp)->AllocateTensors().ok());
    std::vector<std::string> variants;
    for (const auto& op : (*interp)->ops()) variants.push_back(op.variant);
    EXPECT_EQ(variants, (std::vector<std::string>{first,
                                                  std::string("depthwise_conv2d/f32/") + isa,
                                                  std::string("fully_connected/f32/") + isa,
                                                  std::string("conv2d/f32/") + k24, std::string("conv2d/f32/") + k24_half_panel,
                                                  std::string("conv2d/f32/") + (std::string(isa) == "avx512" ? "avx512/single" : isa)}))
        << isa << (cpu.avx512_halved ? " (halved)" : "") << (winograd ? " winograd" : "");
  }
}

// ---------------------------------------------------------------------------------------------
// FULLY_CONNECTED

TEST(FastF32Ops, FullyConnectedMatchesLoops) {
  std::mt19937 rng(13);
  struct FcCase {
    std::vector<int32_t> in_shape;
    int n;
    bool keep, bias;
  };
  const FcCase cases[] = {{{1, 7}, 3, false, true},       {{1, 1024}, 1001, false, true}, {{2, 64}, 17, false, false},
                          {{5, 33}, 65, false, true},     {{2, 3, 20}, 9, true, true},   {{2, 3, 20}, 16, false, true},
                          {{13, 300}, 48, false, true},   {{1, 1}, 1, false, true},      {{7, 600}, 20, true, false}};
  int i = 0;
  for (const Family& fam : Families())
    for (const FcCase& c : cases)
      for (int act : kActs) {
        int64_t total = 1;
        for (int d : c.in_shape) total *= d;
        const int k = c.in_shape.back();
        const int64_t batch = total / k;
        auto x = Random(rng, total);
        auto wt = Random(rng, static_cast<size_t>(c.n) * k);
        auto bias = Random(rng, c.n);
        rt::Shape out_shape = c.keep ? c.in_shape : rt::Shape{static_cast<int32_t>(batch), c.n};
        if (c.keep) out_shape.back() = c.n;
        GraphBuilder b;
        auto in = b.Input("x", DType::kFloat32, c.in_shape);
        auto wi = b.Const<float>("w", DType::kFloat32, {c.n, k}, wt);
        std::vector<int32_t> ins = {in, wi};
        if (c.bias) ins.push_back(b.Const<float>("b", DType::kFloat32, {c.n}, bias));
        auto y = b.Tensor("y", DType::kFloat32, out_shape);
        tflite::FullyConnectedOptionsT o;
        o.keep_num_dims = c.keep;
        o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
        b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, ins, {y}, o);
        b.Output(y);
        const OpRun r = RunGraph(b.Finish(), {x}, 1 + (i++ % 2), fam.cpu);
        std::vector<double> ref, mag;
        for (int64_t m = 0; m < batch; ++m)
          for (int j = 0; j < c.n; ++j) {
            double s = c.bias ? bias[j] : 0.0, g = std::fabs(s);
            for (int kk = 0; kk < k; ++kk) {
              const double p = static_cast<double>(x[m * k + kk]) * wt[static_cast<size_t>(j) * k + kk];
              s += p;
              g += std::fabs(p);
            }
            ref.push_back(Act(s, act));
            mag.push_back(g);
          }
        Expect(r, out_shape, ref, mag, 2e-5, std::string("fc ") + fam.name + " n=" + std::to_string(c.n));
      }
}

// ---------------------------------------------------------------------------------------------
// AVERAGE_POOL_2D / MAX_POOL_2D

TEST(FastF32Ops, PoolingMatchesLoops) {
  std::mt19937 rng(14);
  struct PoolCase {
    int batch, h, w, c, fh, fw, sh, sw;
    tflite::Padding padding;
  };
  std::vector<PoolCase> cases = {{1, 7, 7, 256, 7, 7, 1, 1, tflite::Padding_VALID},
                                 {2, 9, 9, 13, 3, 3, 2, 2, tflite::Padding_SAME},
                                 {1, 10, 11, 40, 2, 2, 2, 2, tflite::Padding_VALID},
                                 {1, 5, 6, 3, 3, 3, 1, 1, tflite::Padding_SAME},
                                 {1, 8, 8, 67, 5, 3, 3, 2, tflite::Padding_SAME},
                                 {2, 4, 4, 33, 4, 4, 4, 4, tflite::Padding_VALID},
                                 // global pools (selfie segmentation's squeeze-and-excite), odd width
                                 {1, 31, 33, 24, 31, 33, 1, 1, tflite::Padding_VALID},
                                 {1, 12, 12, 16, 12, 12, 1, 1, tflite::Padding_VALID}};
  for (int c = 1; c <= 20; ++c) cases.push_back({1, 6, 5, c, 3, 3, 2, 1, tflite::Padding_SAME});
  int i = 0;
  for (const Family& fam : Families())
    for (const PoolCase& c : cases)
      for (bool avg : {true, false}) {
        const int act = kActs[i % 4];
        const int oh = kernels::ComputeOutSize(c.padding, c.h, c.fh, c.sh);
        const int ow = kernels::ComputeOutSize(c.padding, c.w, c.fw, c.sw);
        int off;
        const int pt = kernels::ComputePadding(c.sh, 1, c.h, c.fh, oh, &off);
        const int pl = kernels::ComputePadding(c.sw, 1, c.w, c.fw, ow, &off);
        auto x = Random(rng, static_cast<size_t>(c.batch) * c.h * c.w * c.c, -3.0f, 3.0f);
        GraphBuilder b;
        auto in = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.c});
        auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, c.c});
        tflite::Pool2DOptionsT o;
        o.padding = c.padding;
        o.stride_h = c.sh;
        o.stride_w = c.sw;
        o.filter_height = c.fh;
        o.filter_width = c.fw;
        o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
        b.Op(avg ? tflite::BuiltinOperator_AVERAGE_POOL_2D : tflite::BuiltinOperator_MAX_POOL_2D, {in}, {y}, o);
        b.Output(y);
        const OpRun r = RunGraph(b.Finish(), {x}, 1 + (i++ % 2), fam.cpu);
        std::vector<double> ref, mag;
        for (int n = 0; n < c.batch; ++n)
          for (int oy = 0; oy < oh; ++oy)
            for (int ox = 0; ox < ow; ++ox)
              for (int ch = 0; ch < c.c; ++ch) {
                double s = 0, m = avg ? 0.0 : -1e300, a = 0;
                int count = 0;
                for (int fy = 0; fy < c.fh; ++fy)
                  for (int fx = 0; fx < c.fw; ++fx) {
                    const int iy = oy * c.sh - pt + fy, ix = ox * c.sw - pl + fx;
                    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                    const double v = x[((static_cast<size_t>(n) * c.h + iy) * c.w + ix) * c.c + ch];
                    s += v;
                    a += std::fabs(v);
                    m = std::max(m, v);
                    ++count;
                  }
                ref.push_back(Act(avg ? s / count : m, act));
                mag.push_back(avg ? a / count : std::fabs(m));
              }
        Expect(r, {c.batch, oh, ow, c.c}, ref, mag, 2e-6,
               std::string(avg ? "avgpool " : "maxpool ") + fam.name + " c=" + std::to_string(c.c));
      }
}

// ---------------------------------------------------------------------------------------------
// ADD / SUB / MUL

TEST(FastF32Ops, BinaryBroadcastMatchesLoops) {
  std::mt19937 rng(15);
  struct BinCase {
    rt::Shape a, b;
  };
  const BinCase cases[] = {
      {{1, 7, 7, 24}, {1, 7, 7, 24}},  // same shape (residual add)
      {{2, 5, 3, 67}, {67}},           // per channel
      {{2, 5, 3, 67}, {1, 1, 1, 67}},  // per channel, 4-D
      // per channel, the channel row repeated into scratch: on the left, groups of rows that do
      // not divide the pixels, 2 rows a group, large enough to be split between threads
      {{24}, {1, 7, 7, 24}},
      {{3, 11, 255}, {255}},
      {{1, 128, 128, 16}, {1, 1, 1, 16}},
      {{3, 1000}, {1}},                // scalar
      {{1}, {4, 33}},                  // scalar on the left
      {{}, {5, 7}},                    // rank-0 scalar
      {{2, 3, 1, 5}, {1, 3, 4, 1}},    // both broadcast
      {{4, 1, 6}, {5, 1}},             // middle
      {{1, 9, 9, 8}, {1, 9, 9, 1}},    // per pixel
      // outer sums / products ([R, 1] against [C]): row values spread per group, a last group
      // of fewer rows, C of 1..255, threads
      {{48, 48, 1}, {1, 17}},
      {{3}, {5, 1}},
      {{7, 1}, {1, 255}},
      {{1, 300, 1}, {40}},
      {{100003}, {100003}},            // long run, split between threads
      {{2, 1, 2, 1, 2, 1, 3}, {1, 2, 1, 2, 1, 2, 1}},
      {{0, 3}, {3}},                   // empty output
      {{2, 0, 3}, {1, 1, 3}},
  };
  int i = 0;
  for (const Family& fam : Families())
    for (const BinCase& c : cases)
      for (auto code : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL}) {
        const int act = kActs[i % 4];
        rt::Shape out;
        ASSERT_TRUE(kernels::BroadcastShape(c.a, c.b, &out));
        auto xa = Random(rng, rt::NumElements(c.a), -4.0f, 4.0f);
        auto xb = Random(rng, rt::NumElements(c.b), -4.0f, 4.0f);
        GraphBuilder b;
        auto ia = b.Input("a", DType::kFloat32, c.a);
        auto ib = b.Input("b", DType::kFloat32, c.b);
        auto y = b.Tensor("y", DType::kFloat32, out);
        if (code == tflite::BuiltinOperator_ADD) {
          tflite::AddOptionsT o;
          o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
          b.Op(code, {ia, ib}, {y}, o);
        } else if (code == tflite::BuiltinOperator_SUB) {
          tflite::SubOptionsT o;
          o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
          b.Op(code, {ia, ib}, {y}, o);
        } else {
          tflite::MulOptionsT o;
          o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
          b.Op(code, {ia, ib}, {y}, o);
        }
        b.Output(y);
        const OpRun r = RunGraph(b.Finish(), {xa, xb}, 1 + (i++ % 2), fam.cpu);
        const auto sa = kernels::BroadcastStrides(c.a, out), sb = kernels::BroadcastStrides(c.b, out);
        std::vector<double> ref, mag;
        const int64_t total = rt::NumElements(out);
        for (int64_t e = 0; e < total; ++e) {
          int64_t rem = e, oa = 0, ob = 0;
          for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
            const int64_t idx = rem % out[d];
            rem /= out[d];
            oa += idx * sa[d];
            ob += idx * sb[d];
          }
          const double va = xa[oa], vb = xb[ob];
          const double v = code == tflite::BuiltinOperator_ADD ? va + vb : code == tflite::BuiltinOperator_SUB ? va - vb : va * vb;
          ref.push_back(Act(v, act));
          mag.push_back(code == tflite::BuiltinOperator_MUL ? std::fabs(v) : std::fabs(va) + std::fabs(vb));
        }
        Expect(r, out, ref, mag, 2e-6, std::string("binary ") + fam.name + " " + rt::ShapeToString(c.a) + " " +
                                        rt::ShapeToString(c.b));
      }
}

// DIV (with its fused activations), SQUARED_DIFFERENCE, MAXIMUM, MINIMUM: bit-exact with the
// reference kernels, on the broadcast shapes above, for every family, 1 and 2 threads, with
// special values in both operands (NaN, +-inf, +-0, zero divisors, equal values).
TEST(FastF32Ops, DivSquaredDifferenceMaxMinEqualTheReference) {
  std::mt19937 rng(16);
  const std::pair<rt::Shape, rt::Shape> cases[] = {
      {{1, 7, 7, 24}, {1, 7, 7, 24}}, {{2, 5, 3, 67}, {67}}, {{24}, {1, 7, 7, 24}}, {{3, 1000}, {1}}, {{1}, {4, 33}},
      {{2, 3, 1, 5}, {1, 3, 4, 1}},   {{100003}, {100003}}, {{2, 0, 3}, {1, 1, 3}}, {{48, 48, 1}, {1, 17}},
      {{3}, {5, 1}}};
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 1.5f, -1.5f};
  int i = 0;
  for (const Family& fam : Families())
    for (const auto& [sa, sb] : cases)
      for (auto code : {tflite::BuiltinOperator_DIV, tflite::BuiltinOperator_SQUARED_DIFFERENCE,
                        tflite::BuiltinOperator_MAXIMUM, tflite::BuiltinOperator_MINIMUM}) {
        GraphBuilder b;
        auto ia = b.Input("a", DType::kFloat32, sa);
        auto ib = b.Input("b", DType::kFloat32, sb);
        rt::Shape out;
        ASSERT_TRUE(kernels::BroadcastShape(sa, sb, &out));
        auto y = b.Tensor("y", DType::kFloat32, out);
        if (code == tflite::BuiltinOperator_DIV) {
          tflite::DivOptionsT o;
          o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(kActs[i % 4]);
          b.Op(code, {ia, ib}, {y}, o);
        } else {
          b.Op(code, {ia, ib}, {y});
        }
        b.Output(y);
        std::vector<testing::TensorValue> inputs;
        for (const auto& [name, shape] : {std::pair{"a", sa}, std::pair{"b", sb}}) {
          auto v = Random(rng, rt::NumElements(shape), -4.0f, 4.0f);
          // Every 5th value special, some equal to the other operand's (ties of MAXIMUM/MINIMUM).
          for (size_t k = 0; k < v.size(); k += 5) v[k] = specials[(k / 5 + i) % 7];
          for (size_t k = 3; k < v.size(); k += 11) v[k] = 1.5f;
          testing::TensorValue t;
          t.name = name;
          t.type = DType::kFloat32;
          t.shape = shape;
          t.data.resize(v.size() * sizeof(float));
          if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
          inputs.push_back(std::move(t));
        }
        testing::FastCheck check;
        check.threads = 1 + (i++ % 2);
        check.cpu = &fam.cpu;
        check.inputs = inputs;
        check.op_type = tflite::EnumNameBuiltinOperator(code);
        const std::string fam_name = fam.name;
        check.variant = std::string("/f32/") + (fam_name == "generic" ? "scalar" : fam_name == "avx2" ? "avx2" : "avx512");
        testing::ExpectFastMatchesReference(b.Finish(), std::string(check.op_type) + " " + fam.name + " " +
                                                            rt::ShapeToString(sa) + " " + rt::ShapeToString(sb),
                                            check);
      }
}

// ---------------------------------------------------------------------------------------------
// Against TFLite 2.9

testing::CompareOptions Opts(int threads = 1) {
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-6;
  o.threads = threads;
  return o;
}

TEST(FastF32Conformance, ConvDepthwiseFcPoolAdd) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  int cases = 0;
  // CONV_2D
  for (auto [h, cin, cout, k, s, d, pad, act] : std::vector<std::tuple<int, int, int, int, int, int, tflite::Padding, int>>{
           {17, 3, 8, 3, 2, 1, tflite::Padding_SAME, 3}, {9, 16, 24, 1, 1, 1, tflite::Padding_VALID, 0},
           {12, 7, 33, 3, 1, 2, tflite::Padding_SAME, 1}, {10, 5, 6, 5, 2, 1, tflite::Padding_VALID, 2}}) {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, h, h + 1, cin});
    auto w = b.ConstRandom("w", DType::kFloat32, {cout, k, k, cin});
    auto bias = b.ConstRandom("b", DType::kFloat32, {cout});
    const int oh = kernels::ComputeOutSize(pad, h, k, s, d), ow = kernels::ComputeOutSize(pad, h + 1, k, s, d);
    auto y = b.Tensor("y", DType::kFloat32, {2, oh, ow, cout});
    tflite::Conv2DOptionsT o;
    o.padding = pad;
    o.stride_h = o.stride_w = s;
    o.dilation_h_factor = o.dilation_w_factor = d;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, o);
    b.Output(y);
    auto report = testing::CompareGraph(b.Finish(), Opts(1 + cases++ % 2));
    EXPECT_TRUE(report.ok) << report.Summary();
  }
  // DEPTHWISE_CONV_2D
  for (auto [h, c, dm, k, s, d, pad] : std::vector<std::tuple<int, int, int, int, int, int, tflite::Padding>>{
           {14, 19, 1, 3, 1, 1, tflite::Padding_SAME}, {15, 32, 1, 3, 2, 1, tflite::Padding_SAME},
           {11, 9, 1, 5, 1, 1, tflite::Padding_VALID}, {13, 8, 1, 3, 1, 2, tflite::Padding_SAME},
           {8, 3, 2, 3, 1, 1, tflite::Padding_SAME}}) {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {1, h, h, c});
    auto w = b.ConstRandom("w", DType::kFloat32, {1, k, k, c * dm});
    auto bias = b.ConstRandom("b", DType::kFloat32, {c * dm});
    const int o_h = kernels::ComputeOutSize(pad, h, k, s, d);
    auto y = b.Tensor("y", DType::kFloat32, {1, o_h, o_h, c * dm});
    tflite::DepthwiseConv2DOptionsT o;
    o.padding = pad;
    o.stride_h = o.stride_w = s;
    o.dilation_h_factor = o.dilation_w_factor = d;
    o.depth_multiplier = dm;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, w, bias}, {y}, o);
    b.Output(y);
    auto report = testing::CompareGraph(b.Finish(), Opts(1 + cases++ % 2));
    EXPECT_TRUE(report.ok) << report.Summary();
  }
  // A small classifier: conv s2 -> dw -> pw + residual ADD -> avg pool -> FC -> SOFTMAX.
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {1, 32, 32, 3});
    auto w0 = b.ConstRandom("w0", DType::kFloat32, {16, 3, 3, 3});
    auto b0 = b.ConstRandom("b0", DType::kFloat32, {16});
    auto t0 = b.Tensor("t0", DType::kFloat32, {1, 16, 16, 16});
    tflite::Conv2DOptionsT c0;
    c0.padding = tflite::Padding_SAME;
    c0.stride_h = c0.stride_w = 2;
    c0.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, w0, b0}, {t0}, c0);
    auto w1 = b.ConstRandom("w1", DType::kFloat32, {1, 3, 3, 16});
    auto b1 = b.ConstRandom("b1", DType::kFloat32, {16});
    auto t1 = b.Tensor("t1", DType::kFloat32, {1, 16, 16, 16});
    tflite::DepthwiseConv2DOptionsT d1;
    d1.padding = tflite::Padding_SAME;
    d1.stride_h = d1.stride_w = 1;
    d1.depth_multiplier = 1;
    d1.fused_activation_function = tflite::ActivationFunctionType_RELU;
    b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {t0, w1, b1}, {t1}, d1);
    auto w2 = b.ConstRandom("w2", DType::kFloat32, {16, 1, 1, 16});
    auto b2 = b.ConstRandom("b2", DType::kFloat32, {16});
    auto t2 = b.Tensor("t2", DType::kFloat32, {1, 16, 16, 16});
    tflite::Conv2DOptionsT c2;
    c2.padding = tflite::Padding_SAME;
    c2.stride_h = c2.stride_w = 1;
    b.Op(tflite::BuiltinOperator_CONV_2D, {t1, w2, b2}, {t2}, c2);
    auto t3 = b.Tensor("t3", DType::kFloat32, {1, 16, 16, 16});
    tflite::AddOptionsT ao;
    b.Op(tflite::BuiltinOperator_ADD, {t2, t0}, {t3}, ao);
    auto t4 = b.Tensor("t4", DType::kFloat32, {1, 8, 8, 16});
    tflite::Pool2DOptionsT mp;
    mp.padding = tflite::Padding_VALID;
    mp.stride_h = mp.stride_w = mp.filter_height = mp.filter_width = 2;
    b.Op(tflite::BuiltinOperator_MAX_POOL_2D, {t3}, {t4}, mp);
    auto t5 = b.Tensor("t5", DType::kFloat32, {1, 1, 1, 16});
    tflite::Pool2DOptionsT ap;
    ap.padding = tflite::Padding_VALID;
    ap.stride_h = ap.stride_w = 1;
    ap.filter_height = ap.filter_width = 8;
    b.Op(tflite::BuiltinOperator_AVERAGE_POOL_2D, {t4}, {t5}, ap);
    auto wf = b.ConstRandom("wf", DType::kFloat32, {10, 16});
    auto bf = b.ConstRandom("bf", DType::kFloat32, {10});
    auto t6 = b.Tensor("t6", DType::kFloat32, {1, 10});
    tflite::FullyConnectedOptionsT fo;
    b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {t5, wf, bf}, {t6}, fo);
    auto t7 = b.Tensor("t7", DType::kFloat32, {1, 10});
    tflite::SoftmaxOptionsT so;
    so.beta = 1.0f;
    b.Op(tflite::BuiltinOperator_SOFTMAX, {t6}, {t7}, so);
    b.Output(t7);
    b.Output(t3);
    for (int threads : {1, 2}) {
      auto report = testing::CompareGraph(b.graph(), Opts(threads));
      EXPECT_TRUE(report.ok) << report.Summary();
    }
  }
  // FULLY_CONNECTED batch 3, keep_num_dims, and a MUL / SUB with per-channel broadcast.
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 2, 50});
    auto w = b.ConstRandom("w", DType::kFloat32, {70, 50});
    auto y = b.Tensor("y", DType::kFloat32, {3, 2, 70});
    tflite::FullyConnectedOptionsT fo;
    fo.keep_num_dims = true;
    fo.fused_activation_function = tflite::ActivationFunctionType_RELU_N1_TO_1;
    b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, kNoTensor}, {y}, fo);
    auto s = b.ConstRandom("s", DType::kFloat32, {70});
    auto z = b.Tensor("z", DType::kFloat32, {3, 2, 70});
    tflite::MulOptionsT mo;
    b.Op(tflite::BuiltinOperator_MUL, {y, s}, {z}, mo);
    auto u = b.Tensor("u", DType::kFloat32, {3, 2, 70});
    tflite::SubOptionsT so;
    so.fused_activation_function = tflite::ActivationFunctionType_RELU;
    b.Op(tflite::BuiltinOperator_SUB, {z, s}, {u}, so);
    b.Output(u);
    auto report = testing::CompareGraph(b.Finish(), Opts());
    EXPECT_TRUE(report.ok) << report.Summary();
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// The real float models of ../shared run end to end on the fast kernels (DeepLabV3 with the
// stand-in RESIZE_BILINEAR / CONCATENATION of tests/support until those families are merged)
// and match TFLite 2.9, and match edgeopt's own reference kernels.
TEST(FastF32Conformance, RealFloatModels) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const char* name : {"vww_96_float.tflite", "mobilenet_v1_0.25_224_float.tflite", "deeplabv3_257_float.tflite"}) {
    const std::string path = testing::SharedModel(name);
    if (path.empty()) continue;
    auto model = rt::Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    testing::CompareOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-6;
    const auto inputs = testing::RandomInputs((*model)->graph(), o);
    auto ref = testing::RunTflite29(testing::ReadFileBytes(path), inputs);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    rt::InterpreterOptions ro;
    ro.reference_kernels_only = true;
    ro.op_resolver = testing::FloatStandInsForMissingOps();
    auto ours_ref = testing::RunEdgeopt(*model, inputs, ro);
    ASSERT_TRUE(ours_ref.ok()) << ours_ref.status().ToString();
    for (int threads : {1, 2}) {
      rt::InterpreterOptions io;
      io.num_threads = threads;
      io.op_resolver = ro.op_resolver;
      auto ours = testing::RunEdgeopt(*model, inputs, io);
      ASSERT_TRUE(ours.ok()) << name << ": " << ours.status().ToString();
      auto vs_tflite = testing::CompareOutputs(*ours, *ref, o);
      EXPECT_TRUE(vs_tflite.ok) << name << " threads " << threads << " vs TFLite 2.9: " << vs_tflite.Summary();
      auto vs_reference = testing::CompareOutputs(*ours, *ours_ref, o);
      EXPECT_TRUE(vs_reference.ok) << name << " threads " << threads << " vs reference kernels: "
                                   << vs_reference.Summary();
    }
  }
}

}  // namespace
}  // namespace edgeopt

namespace edgeopt {
namespace {

// A float tensor that ADD(random constant, zero) computes: folded at allocation (as DEQUANTIZE
// of float16 weights in MediaPipe models), so kernels get its data only at the first invoke.
int32_t FoldedConst(GraphBuilder& b, int32_t zero, const std::string& name, const std::vector<int32_t>& shape) {
  auto c = b.ConstRandom(name + "_c", DType::kFloat32, shape);
  auto t = b.Tensor(name, DType::kFloat32, shape);
  tflite::AddOptionsT ao;
  b.Op(tflite::BuiltinOperator_ADD, {c, zero}, {t}, ao);
  return t;
}

// The ops of an interpreter of g for family fam, after AllocateTensors (empty on failure).
std::vector<rt::OpInfo> AllocatedOps(const Graph& g, const Family& fam) {
  auto model = rt::Model::FromGraph(g);
  EXPECT_TRUE(model.ok());
  if (!model.ok()) return {};
  rt::InterpreterOptions io;
  io.cpu = &fam.cpu;
  auto interp = rt::Interpreter::Create(*model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return {};
  const Status st = (*interp)->AllocateTensors();
  EXPECT_TRUE(st.ok()) << st.ToString();
  return st.ok() ? (*interp)->ops() : std::vector<rt::OpInfo>{};
}

// g against TFLite 2.9 within rtol 1e-5 (the caller skips without the library).
void ExpectMatchesTflite29(const Graph& g) {
  testing::CompareOptions o;
  o.rtol = 1e-5;
  auto report = testing::CompareGraph(g, o);
  EXPECT_TRUE(report.ok) << report.Summary();
}

// Weights computed by an op on constants are folded at allocation: the fast kernels take them
// and pack them at the first invoke.
TEST(FastF32Ops, WeightsFromFoldedOps) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1, 9, 9, 5});
  auto zero4 = b.Const<float>("z", DType::kFloat32, {1}, {0.0f});
  auto wc = FoldedConst(b, zero4, "wc", {7, 3, 3, 5});
  auto bc = FoldedConst(b, zero4, "bc", {7});
  auto y = b.Tensor("y", DType::kFloat32, {1, 9, 9, 7});
  tflite::Conv2DOptionsT co;
  co.padding = tflite::Padding_SAME;
  co.stride_h = co.stride_w = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, wc, bc}, {y}, co);
  auto wd = FoldedConst(b, zero4, "wd", {1, 3, 3, 7});
  auto z = b.Tensor("z2", DType::kFloat32, {1, 9, 9, 7});
  tflite::DepthwiseConv2DOptionsT dopt;
  dopt.padding = tflite::Padding_SAME;
  dopt.stride_h = dopt.stride_w = 1;
  dopt.depth_multiplier = 1;
  auto bd = FoldedConst(b, zero4, "bd", {7});
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {y, wd, bd}, {z}, dopt);
  auto wf = FoldedConst(b, zero4, "wf", {4, 9 * 9 * 7});
  auto u = b.Tensor("u", DType::kFloat32, {1, 4});
  tflite::FullyConnectedOptionsT fo;
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {z, wf, kNoTensor}, {u}, fo);
  b.Output(u);
  Graph g = b.Finish();
  for (const Family& fam : Families()) {
    int fast = 0;
    for (const auto& op : AllocatedOps(g, fam))
      if (op.variant.find("/f32/") != std::string::npos && !op.folded && op.type != "ADD") ++fast;
    EXPECT_EQ(fast, 3) << fam.name;
  }
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  ExpectMatchesTflite29(g);
}

// A one-channel depthwise op run as a convolution reorders a folded filter at the first invoke,
// and agrees with TFLite 2.9.
TEST(FastF32Ops, DepthwiseAsConvWeightsFromFoldedOps) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1, 12, 10, 1});
  auto zero = b.Const<float>("z", DType::kFloat32, {1}, {0.0f});
  auto wd = FoldedConst(b, zero, "wd", {1, 4, 3, 6});
  auto bd = FoldedConst(b, zero, "bd", {6});
  auto y = b.Tensor("y", DType::kFloat32, {1, 6, 5, 6});
  tflite::DepthwiseConv2DOptionsT dopt;
  dopt.padding = tflite::Padding_SAME;
  dopt.stride_h = dopt.stride_w = 2;
  dopt.depth_multiplier = 6;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {x, wd, bd}, {y}, dopt);
  b.Output(y);
  Graph g = b.Finish();
  for (const Family& fam : Families()) {
    if (std::string(fam.name) == "generic") continue;
    bool seen = false;
    for (const auto& op : AllocatedOps(g, fam))
      if (op.type == "DEPTHWISE_CONV_2D") {
        seen = true;
        EXPECT_NE(op.variant.find("as-conv2d/f32/"), std::string::npos) << fam.name << ": " << op.variant;
      }
    EXPECT_TRUE(seen) << fam.name;
  }
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  ExpectMatchesTflite29(g);
}

// The Winograd convolution takes folded weights too (transformed and packed at the first
// invoke), and agrees with TFLite 2.9.
TEST(FastF32Ops, WinogradWeightsFromFoldedOps) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {1, 11, 10, 16});
  auto zero = b.Const<float>("z", DType::kFloat32, {1}, {0.0f});
  auto w = FoldedConst(b, zero, "w", {32, 3, 3, 16});
  auto bias = FoldedConst(b, zero, "b", {32});
  auto y = b.Tensor("y", DType::kFloat32, {1, 11, 10, 32});
  tflite::Conv2DOptionsT co;
  co.padding = tflite::Padding_SAME;
  co.stride_h = co.stride_w = 1;
  co.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, co);
  b.Output(y);
  Graph g = b.Finish();
  for (const Family& fam : Families()) {
    if (!fam.cpu.has_avx2_fma()) continue;
    int winograd = 0;
    for (const auto& op : AllocatedOps(g, fam)) winograd += op.variant.find("/winograd2x2") != std::string::npos;
    EXPECT_EQ(winograd, 1) << fam.name;
  }
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  ExpectMatchesTflite29(g);
}

}  // namespace
}  // namespace edgeopt
