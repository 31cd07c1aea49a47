// Fused depthwise chains (dw_chain_f32.cc): generated [1×1 ->] depthwise -> 1×1 blocks run fused
// and unfused (InterpreterOptions::fuse_ops) in the same process must give the same outputs.
// Fused and unfused run the same micro-kernels in the same accumulation order, so the expected
// difference is zero; the check allows 1e-6 relative to the output's magnitude (stated, not
// needed today) so that a future kernel change that reorders a sum does not turn this test into
// a kernel-equality test. Then the real float models against TFLite 2.9.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/writer.h"
#include "graph/builder.h"
#include "optimize/quantize/dequantize.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

struct ChainCase {
  int batch, h, w, cin, expand, cout, k, stride, dilation;
  tflite::Padding padding;
  tflite::ActivationFunctionType act;
  bool residual;  // an ADD of the block input after the project (the input has a second reader)
  // The expansion's filter size and stride (1, 1: a 1×1 convolution; else a stem-like
  // convolution with the chain's padding; a residual ADD needs the input's shape out).
  int ek = 1, es = 1;
  // residual: ADD(project, input) without an activation (false), or ADD(input, project) with RELU6.
  bool add_swapped = false;
  // Weights and biases stored as float16, each through a DEQUANTIZE right before the op that
  // reads it (as converters write float16 models: constant ops between the layers).
  bool float16 = false;
  // A standalone activation op after the chain (RELU, RELU6, RELU_N1_TO_1; 0: none), which the
  // chain takes as its last step's clamp when that step has none of its own.
  int trailing = 0;
  // A PAD of rows and columns (top, bottom, left, right) before the depthwise op, which is then
  // VALID over the padded size (padding must say VALID); pad[0] < 0: none.
  std::array<int, 4> pad = {-1, 0, 0, 0};
  // residual: the ADD's other operand is a second model input of the output's shape, not the
  // block's input (MediaPipe's face detectors: a block input added after two chains).
  bool residual_other = false;
  // A trailing clamp joins the last step's clamp when that has none.
  bool TrailingFuses() const {
    return trailing != 0 && trailing != tflite::BuiltinOperator_PRELU && !(residual && add_swapped);
  }
  // A trailing PRELU (one alpha per channel) joins on AVX-512 when no clamp did.
  bool PreluFuses(const rt::CpuFeatures& cpu) const { return trailing == tflite::BuiltinOperator_PRELU && cpu.has_avx512(); }
  std::string Name() const {
    char buf[280];
    std::snprintf(buf, sizeof buf, "b%d %dx%dx%d expand %d (%dx%d s%d) -> %d k%d s%d d%d %s act%d%s", batch, h, w, cin,
                  expand, ek, ek, es, cout, k, stride, dilation, padding == tflite::Padding_SAME ? "SAME" : "VALID",
                  static_cast<int>(act), residual ? (add_swapped ? " +add(x, y) relu6" : " +add") : "");
    std::string name = buf;
    if (trailing) name += " then " + std::string(tflite::EnumNameBuiltinOperator(static_cast<tflite::BuiltinOperator>(trailing)));
    if (residual_other) name += " (residual: another input)";
    if (pad[0] >= 0)
      name += " pad " + std::to_string(pad[0]) + "," + std::to_string(pad[1]) + "," + std::to_string(pad[2]) + "," +
              std::to_string(pad[3]);
    return name;
  }
};

// expand == 0: depthwise -> project only.
Graph MakeChain(const ChainCase& c, uint64_t seed) {
  GraphBuilder b(seed);
  const auto weights = [&](const std::string& name, std::vector<int32_t> shape) {
    if (!c.float16) return b.ConstRandom(name, DType::kFloat32, shape);
    auto half = b.ConstRandom(name + "_f16", DType::kFloat16, shape);
    auto w = b.Tensor(name, DType::kFloat32, shape);
    b.Op(tflite::BuiltinOperator_DEQUANTIZE, {half}, {w});
    return w;
  };
  const int mid = c.expand ? c.expand : c.cin;
  auto x = b.Input("x", DType::kFloat32, {c.batch, c.h, c.w, c.cin});
  int32_t t = x;
  const bool stem = c.ek != 1 || c.es != 1;
  const auto out_size = [&](int in, int k, int stride) {
    return c.padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in - k) / stride + 1;
  };
  const int eh = stem ? out_size(c.h, c.ek, c.es) : c.h, ew = stem ? out_size(c.w, c.ek, c.es) : c.w;
  if (c.expand) {
    auto w = weights("we", {mid, c.ek, c.ek, c.cin});
    auto bias = weights("be", {mid});
    auto e = b.Tensor("e", DType::kFloat32, {c.batch, eh, ew, mid});
    tflite::Conv2DOptionsT o;
    o.padding = stem ? c.padding : tflite::Padding_SAME;
    o.stride_h = o.stride_w = c.es;
    o.fused_activation_function = c.act;
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {e}, o);
    t = e;
  }
  int dh = eh, dw = ew;  // the depthwise op's input
  if (c.pad[0] >= 0) {
    dh += c.pad[0] + c.pad[1];
    dw += c.pad[2] + c.pad[3];
    auto paddings = b.Const<int32_t>("paddings", DType::kInt32, {4, 2},
                                     std::vector<int32_t>{0, 0, c.pad[0], c.pad[1], c.pad[2], c.pad[3], 0, 0});
    auto padded = b.Tensor("padded", DType::kFloat32, {c.batch, dh, dw, mid});
    b.Op(tflite::BuiltinOperator_PAD, {t, paddings}, {padded}, tflite::PadOptionsT());
    t = padded;
  }
  const int eff = (c.k - 1) * c.dilation + 1;
  const int oh = out_size(dh, eff, c.stride), ow = out_size(dw, eff, c.stride);
  auto f = weights("wd", {1, c.k, c.k, mid});
  auto fb = weights("bd", {mid});
  auto d = b.Tensor("d", DType::kFloat32, {c.batch, oh, ow, mid});
  tflite::DepthwiseConv2DOptionsT dwo;
  dwo.padding = c.padding;
  dwo.stride_h = dwo.stride_w = c.stride;
  dwo.dilation_h_factor = dwo.dilation_w_factor = c.dilation;
  dwo.depth_multiplier = 1;
  dwo.fused_activation_function = c.act;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {t, f, fb}, {d}, dwo);
  auto wp = weights("wp", {c.cout, 1, 1, mid});
  auto bp = weights("bp", {c.cout});
  auto y = b.Tensor("y", DType::kFloat32, {c.batch, oh, ow, c.cout});
  tflite::Conv2DOptionsT po;
  po.padding = tflite::Padding_VALID;
  po.stride_h = po.stride_w = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {d, wp, bp}, {y}, po);
  if (c.residual) {
    auto z = b.Tensor("z", DType::kFloat32, {c.batch, oh, ow, c.cout});
    tflite::AddOptionsT ao;
    if (c.add_swapped) ao.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    const int32_t r = c.residual_other ? b.Input("r", DType::kFloat32, {c.batch, oh, ow, c.cout}) : x;
    b.Op(tflite::BuiltinOperator_ADD, c.add_swapped ? std::vector<int32_t>{r, y} : std::vector<int32_t>{y, r}, {z}, ao);
    y = z;
  }
  if (c.trailing) {
    auto z = b.Tensor("act", DType::kFloat32, {c.batch, oh, ow, c.cout});
    if (c.trailing == tflite::BuiltinOperator_PRELU)
      b.Op(tflite::BuiltinOperator_PRELU, {y, weights("alpha", {1, 1, c.cout})}, {z});
    else
      b.Op(static_cast<tflite::BuiltinOperator>(c.trailing), {y}, {z});
    y = z;
  }
  b.Output(y);
  return b.Finish();
}

struct Result {
  std::vector<float> out;
  std::string first_variant;
};

// fold: InterpreterOptions::fold_constants (false: float16 weights dequantized at every invoke).
Result RunChain(const std::shared_ptr<const rt::Model>& model, const std::vector<float>& x, int threads,
           const rt::CpuFeatures& cpu, bool fuse, bool fold = true) {
  Result r;
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.cpu = &cpu;
  io.fuse_ops = fuse;
  io.fold_constants = fold;
  io.fuse_min_inner_bytes = 0;
  // Every op split over the threads: the thread tuning may run small ops on one thread, which
  // would leave the threaded paths (the two-phase form, cut rows) untested.
  io.tune_op_threads = false;
  auto interp = rt::Interpreter::Create(model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return r;
  // A first invoke on other values: what a kernel keeps between invokes must follow the input.
  std::vector<float> other(x.size());
  for (size_t i = 0; i < x.size(); ++i) other[i] = 0.5f - x[i];
  std::memcpy((*interp)->input(0)->data, other.data(), other.size() * sizeof(float));
  // Further inputs (a residual): fixed values from the first input's.
  for (int k = 1; k < (*interp)->num_inputs(); ++k) {
    rt::RtTensor* in = (*interp)->input(k);
    for (int64_t e = 0; e < in->num_elements(); ++e) in->data_as<float>()[e] = x[static_cast<size_t>(e * 7 + k) % x.size()] * 3;
  }
  EXPECT_TRUE((*interp)->Invoke().ok());
  std::memcpy((*interp)->input(0)->data, x.data(), x.size() * sizeof(float));
  Status st = (*interp)->Invoke();
  EXPECT_TRUE(st.ok()) << st.ToString();
  const rt::RtTensor* o = (*interp)->output(0);
  r.out.assign(o->data_as<float>(), o->data_as<float>() + o->num_elements());
  for (const auto& info : (*interp)->ops())
    if (info.type != "DEQUANTIZE") {
      r.first_variant = info.variant;
      break;
    }
  return r;
}

// Fused and unfused outputs agree within 1e-6 of the largest output (see the file comment).
void ExpectSameOutputs(const Result& fused, const Result& plain, const std::string& what) {
  ASSERT_EQ(fused.out.size(), plain.out.size()) << what;
  double scale = 1e-30;
  for (float v : plain.out) scale = std::max<double>(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < plain.out.size(); ++i)
    if (!(std::fabs(fused.out[i] - plain.out[i]) <= 1e-6 * scale) && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": fused " << fused.out[i] << " unfused " << plain.out[i];
}

// An interpreter of `model` that fuses every chain whatever the size of its intermediates.
Expected<std::unique_ptr<rt::Interpreter>> FuseEveryChain(const std::shared_ptr<const rt::Model>& model) {
  rt::InterpreterOptions io;
  io.fuse_min_inner_bytes = 0;
  return rt::Interpreter::Create(model, io);
}

std::vector<ChainCase> Cases() {
  using P = tflite::Padding;
  const auto R6 = tflite::ActivationFunctionType_RELU6, NONE = tflite::ActivationFunctionType_NONE;
  std::vector<ChainCase> v = {
      // batch, h, w, cin, expand, cout, k, stride, dilation, padding, act, residual
      {1, 17, 13, 5, 24, 7, 3, 1, 1, P::Padding_SAME, R6, false},
      {2, 17, 13, 5, 24, 5, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 18, 15, 8, 40, 16, 3, 2, 1, P::Padding_SAME, R6, false},
      {2, 19, 21, 3, 13, 9, 3, 2, 1, P::Padding_VALID, NONE, false},
      {1, 23, 11, 16, 96, 24, 3, 2, 1, P::Padding_SAME, R6, false},
      {1, 30, 9, 7, 33, 17, 5, 1, 1, P::Padding_SAME, R6, false},
      {1, 25, 27, 6, 18, 11, 5, 2, 1, P::Padding_VALID, R6, false},
      {1, 20, 20, 4, 20, 4, 3, 1, 1, P::Padding_SAME, NONE, true},
      {2, 1, 1, 9, 17, 3, 3, 1, 1, P::Padding_SAME, R6, false},
      {1, 3, 40, 12, 8, 12, 3, 2, 1, P::Padding_SAME, R6, false},
      // MobileNetV2's last blocks: two phases with more than one thread (SharedRows)
      {1, 7, 7, 16, 96, 16, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 14, 14, 12, 72, 20, 3, 2, 1, P::Padding_SAME, R6, false},
      // depthwise -> project only
      {1, 17, 13, 24, 0, 7, 3, 1, 1, P::Padding_SAME, R6, false},
      {2, 16, 19, 13, 0, 20, 3, 2, 1, P::Padding_SAME, R6, false},
      {1, 15, 15, 32, 0, 64, 3, 2, 1, P::Padding_VALID, NONE, false},
      {2, 9, 7, 8, 0, 5, 5, 1, 1, P::Padding_SAME, R6, false},
      // dilated (DeepLab's atrous blocks; without an expansion only): dilation 2 and 4, a
      // residual ADD, several bands
      {1, 33, 21, 40, 0, 16, 3, 1, 2, P::Padding_SAME, R6, false},
      {2, 19, 23, 24, 0, 24, 3, 1, 4, P::Padding_SAME, NONE, true},
      {1, 150, 40, 48, 0, 48, 3, 1, 4, P::Padding_SAME, R6, true},
      {1, 23, 25, 20, 0, 12, 5, 1, 2, P::Padding_VALID, R6, false},
      // tall enough for several bands per thread (each band holds at most 384 KB of buffers)
      {1, 150, 40, 8, 96, 8, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 151, 37, 16, 144, 24, 3, 2, 1, P::Padding_SAME, R6, false},
      {2, 120, 61, 40, 0, 24, 3, 1, 1, P::Padding_SAME, R6, false},
      // A stem-like expansion (ek×ek filter, stride es): MobileNet's 3×3 stride-2 convolution of
      // the RGB image, other filters, strides and paddings, several bands, a partial last tile.
      {1, 34, 30, 3, 16, 8, 3, 1, 1, P::Padding_SAME, R6, false, 3, 2},
      {2, 25, 19, 3, 12, 7, 3, 2, 1, P::Padding_SAME, R6, false, 3, 2},
      {1, 31, 29, 5, 24, 9, 3, 1, 1, P::Padding_VALID, NONE, false, 5, 2},
      {1, 40, 33, 4, 16, 8, 3, 1, 1, P::Padding_SAME, R6, false, 3, 1},
      {1, 9, 11, 3, 8, 4, 3, 1, 1, P::Padding_SAME, R6, false, 7, 2},
      {1, 20, 18, 8, 24, 8, 3, 1, 1, P::Padding_SAME, R6, false, 1, 2},
      {1, 150, 41, 3, 32, 16, 3, 1, 1, P::Padding_SAME, R6, false, 3, 2},
      {2, 161, 23, 3, 24, 8, 3, 2, 1, P::Padding_SAME, NONE, false, 3, 2},
      // The residual ADD with the input first and a clamp of its own, over several bands.
      {1, 21, 17, 6, 30, 6, 3, 1, 1, P::Padding_SAME, R6, true, 1, 1, true},
      {2, 140, 33, 16, 64, 16, 3, 1, 1, P::Padding_SAME, NONE, true, 1, 1, true},
      {1, 19, 23, 24, 0, 24, 3, 1, 1, P::Padding_SAME, R6, true},
      // A 3x3 stride-1 expansion keeps the input's shape: its chain takes the residual ADD too.
      {1, 15, 13, 8, 16, 8, 3, 1, 1, P::Padding_SAME, R6, true, 3, 1, true},
      // A standalone activation after the chain (MediaPipe's face detectors): the project's or
      // the residual ADD's clamp when it has none; after an ADD with RELU6 it stays its own op.
      {1, 17, 13, 5, 24, 7, 3, 1, 1, P::Padding_SAME, R6, false, 1, 1, false, false, tflite::BuiltinOperator_RELU},
      {2, 140, 33, 16, 64, 16, 3, 1, 1, P::Padding_SAME, R6, true, 1, 1, false, false, tflite::BuiltinOperator_RELU6},
      {1, 12, 12, 24, 0, 40, 3, 1, 1, P::Padding_SAME, NONE, false, 1, 1, false, false,
       tflite::BuiltinOperator_RELU_N1_TO_1},
      {1, 21, 17, 6, 30, 6, 3, 1, 1, P::Padding_SAME, R6, true, 1, 1, true, false, tflite::BuiltinOperator_RELU},
      {1, 34, 30, 3, 16, 8, 3, 1, 1, P::Padding_SAME, R6, false, 3, 2, false, false, tflite::BuiltinOperator_RELU},
      // A PAD of rows and columns before a VALID depthwise op (MediaPipe's pose models: 1 on
      // every side, stride 2): the depthwise filter's explicit padding, after an expansion or
      // at the chain's start; asymmetric and wider pads, 5x5, over several bands; a residual ADD.
      {1, 32, 30, 16, 64, 24, 3, 2, 1, P::Padding_VALID, R6, false, 1, 1, false, false, 0, {1, 1, 1, 1}},
      {2, 17, 13, 8, 0, 12, 3, 2, 1, P::Padding_VALID, NONE, false, 1, 1, false, false, 0, {1, 1, 1, 1}},
      {1, 19, 23, 6, 20, 9, 3, 1, 1, P::Padding_VALID, R6, false, 1, 1, false, false, tflite::BuiltinOperator_RELU, {0, 2, 1, 0}},
      {1, 150, 40, 8, 48, 8, 5, 1, 1, P::Padding_VALID, R6, true, 1, 1, false, false, 0, {2, 2, 2, 2}},
      {1, 12, 14, 24, 0, 16, 3, 2, 1, P::Padding_VALID, R6, false, 1, 1, false, false, 0, {0, 1, 0, 1}},
      {1, 15, 17, 24, 0, 16, 3, 1, 2, P::Padding_VALID, R6, false, 1, 1, false, false, 0, {2, 2, 1, 3}},  // dilated
      {1, 21, 18, 3, 16, 8, 3, 2, 1, P::Padding_VALID, R6, false, 3, 2, false, false, 0, {1, 1, 1, 1}},
      // The residual ADD of another tensor (MediaPipe's face detectors: depthwise -> project ->
      // ADD of the block's input, then RELU); strides, several bands, an expansion, a clamp.
      {1, 19, 17, 8, 0, 32, 3, 1, 1, P::Padding_SAME, NONE, true, 1, 1, false, false, tflite::BuiltinOperator_RELU,
       {-1, 0, 0, 0}, true},
      {2, 150, 40, 8, 0, 24, 3, 2, 1, P::Padding_SAME, NONE, true, 1, 1, true, false, 0, {-1, 0, 0, 0}, true},
      {1, 23, 11, 6, 24, 10, 3, 1, 1, P::Padding_SAME, R6, true, 1, 1, false, false, 0, {-1, 0, 0, 0}, true},
      // A trailing PRELU with one alpha per channel (MediaPipe's face landmark models): after a
      // residual ADD over several bands (float16 alpha through a DEQUANTIZE), after the project,
      // after a residual of another tensor, over channels that are not a multiple of 16.
      {1, 150, 40, 16, 0, 16, 3, 1, 1, P::Padding_SAME, NONE, true, 1, 1, false, true, tflite::BuiltinOperator_PRELU},
      {2, 17, 13, 5, 24, 7, 3, 2, 1, P::Padding_SAME, R6, false, 1, 1, false, false, tflite::BuiltinOperator_PRELU},
      {1, 19, 17, 8, 0, 32, 3, 1, 1, P::Padding_SAME, NONE, true, 1, 1, false, false, tflite::BuiltinOperator_PRELU,
       {-1, 0, 0, 0}, true},
      {1, 20, 20, 4, 20, 21, 3, 1, 1, P::Padding_SAME, NONE, false, 1, 1, false, false, tflite::BuiltinOperator_PRELU},
  };
  return v;
}

TEST(FusedDwChainF32, MatchesUnfused) {
  std::vector<std::pair<const char*, rt::CpuFeatures>> families;
  if (rt::CpuHardware().has_avx512()) {
    families.push_back({"avx512-halved", rt::CapFeatures(rt::CpuHardware(), "avx512-halved")});
    families.push_back({"avx512-full", rt::CapFeatures(rt::CpuHardware(), "avx512-full")});
  }
  if (rt::CpuHardware().has_avx2_fma()) families.push_back({"avx2", rt::CapFeatures(rt::CpuHardware(), "avx2")});
  if (families.empty()) GTEST_SKIP() << "no AVX2+FMA: the fused chains need the vector depthwise kernels";
  uint64_t seed = 7;
  int fused_runs = 0, shared_runs = 0;
  for (const ChainCase& c : Cases()) {
    auto model = rt::Model::FromGraph(MakeChain(c, ++seed));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::mt19937_64 rng(seed);
    const auto x = RandomFloats(rng, static_cast<size_t>(c.batch) * c.h * c.w * c.cin, -1.0f, 1.0f);
    for (const auto& [fam, cpu] : families)
      for (int threads : {1, 2}) {
        const std::string what = c.Name() + " " + fam + " threads " + std::to_string(threads);
        const Result fused = RunChain(*model, x, threads, cpu, true);
        const Result plain = RunChain(*model, x, threads, cpu, false);
        EXPECT_EQ(fused.first_variant.rfind("fused/", 0), 0u) << what << ": not fused (" << fused.first_variant << ")";
        EXPECT_EQ(plain.first_variant.rfind("fused/", 0), std::string::npos) << what;
        // The residual ADD runs inside the chain (a residual needs the input's shape out).
        EXPECT_EQ(fused.first_variant.find("+add") != std::string::npos, c.residual) << what << ": " << fused.first_variant;
        EXPECT_EQ(fused.first_variant.find("+relu") != std::string::npos, c.TrailingFuses())
            << what << ": " << fused.first_variant;
        EXPECT_EQ(fused.first_variant.find("+prelu") != std::string::npos, c.PreluFuses(cpu))
            << what << ": " << fused.first_variant;
        EXPECT_EQ(fused.first_variant.find("pad+dw") != std::string::npos, c.pad[0] >= 0)
            << what << ": " << fused.first_variant;
        if (c.ek != 1 || c.es != 1) {
          EXPECT_EQ(fused.first_variant.rfind(c.pad[0] >= 0 ? "fused/conv+pad+dw+pw" : "fused/conv+dw+pw", 0), 0u) << what;
        }
        fused_runs += fused.first_variant.rfind("fused/", 0) == 0;
        // The two-phase form: only with more than one thread.
        const bool shared = fused.first_variant.find("/shared") != std::string::npos;
        if (threads == 1) {
          EXPECT_FALSE(shared) << what;
        }
        shared_runs += shared;
        ExpectSameOutputs(fused, plain, what);
      }
  }
  EXPECT_GT(fused_runs, 0);
  EXPECT_GT(shared_runs, 0);
}

// Float16 models (MediaPipe's, converters' output) dequantize each weight right before its layer:
// the chain still fuses, the DEQUANTIZE ops between its layers are folded before it (or, with
// folding off, run at every invoke and the chain packs their outputs at its first invoke), and
// the results equal the unfused ones. Once packed, the folded weights are freed.
TEST(FusedDwChainF32, Float16WeightsBetweenTheLayers) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA: the fused chains need the vector depthwise kernels";
  using P = tflite::Padding;
  using A = tflite::ActivationFunctionType;
  std::vector<ChainCase> cases = {
      {1, 17, 13, 8, 24, 8, 3, 1, 1, P::Padding_SAME, A::ActivationFunctionType_RELU6, true},
      {2, 12, 15, 6, 20, 10, 3, 2, 1, P::Padding_SAME, A::ActivationFunctionType_RELU, false},
      {1, 21, 19, 3, 16, 8, 3, 1, 1, P::Padding_SAME, A::ActivationFunctionType_RELU6, false, 3, 2},  // stem
      {1, 14, 14, 16, 0, 24, 5, 1, 1, P::Padding_VALID, A::ActivationFunctionType_NONE, false},     // no expansion
  };
  const rt::CpuFeatures& cpu = rt::Cpu();
  uint64_t seed = 300;
  for (ChainCase c : cases) {
    c.float16 = true;
    auto model = rt::Model::FromGraph(MakeChain(c, ++seed));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::mt19937_64 rng(seed);
    const auto x = RandomFloats(rng, static_cast<size_t>(c.batch) * c.h * c.w * c.cin, -1.0f, 1.0f);
    for (bool fold : {true, false})
      for (int threads : {1, 2}) {
        const std::string what = c.Name() + " float16" + (fold ? "" : " unfolded") + " threads " + std::to_string(threads);
        const Result fused = RunChain(*model, x, threads, cpu, true, fold);
        const Result plain = RunChain(*model, x, threads, cpu, false, fold);
        EXPECT_EQ(fused.first_variant.rfind("fused/", 0), 0u) << what << ": not fused (" << fused.first_variant << ")";
        ExpectSameOutputs(fused, plain, what);
      }
    // The folded weights are released once the chain packed them (as the unfused layers do).
    rt::InterpreterOptions io;
    io.fuse_min_inner_bytes = 0;
    auto fused = rt::Interpreter::Create(*model, io);
    io.preserve_all_tensors = true;
    auto kept = rt::Interpreter::Create(*model, io);
    ASSERT_TRUE(fused.ok() && kept.ok());
    EXPECT_LT((*fused)->persistent_bytes(), (*kept)->persistent_bytes()) << c.Name();
  }
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  ChainCase c = cases[0];
  c.float16 = true;
  testing::CompareOptions opts;
  opts.oracle = testing::Oracle::kTflite29;
  opts.threads = 2;  // every chain fuses with 2 threads
  const testing::CompareReport r = testing::CompareGraph(MakeChain(c, 99), opts);
  EXPECT_TRUE(r.ok) << r.error << "\n" << r.Summary();
}

// A dilated depthwise filter after an expansion: the expansion stays its own op (its halo rows
// would shrink the bands, see MatchDepthwise), the depthwise layer fuses with the projection and
// the residual ADD, and the outputs equal the unfused ones.
TEST(FusedDwChainF32, DilatedDepthwiseFusesWithoutTheExpansion) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA";
  const ChainCase c{1, 20, 20, 4, 20, 4, 3, 1, 2, tflite::Padding_SAME, tflite::ActivationFunctionType_NONE, true};
  auto model = rt::Model::FromGraph(MakeChain(c, 9));
  ASSERT_TRUE(model.ok());
  auto interp = FuseEveryChain(*model);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  const auto ops = (*interp)->ops();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].variant.rfind("fused", 0), std::string::npos) << ops[0].variant;
  EXPECT_EQ(ops[1].variant.rfind("fused/dw+pw+add/", 0), 0u) << ops[1].variant;
  EXPECT_EQ(ops[2].variant, "fused into #1");
  EXPECT_EQ(ops[3].variant, "fused into #1");
  std::mt19937_64 rng(9);
  const auto x = RandomFloats(rng, static_cast<size_t>(c.h) * c.w * c.cin, -1.0f, 1.0f);
  for (int threads : {1, 2})
    ExpectSameOutputs(RunChain(*model, x, threads, rt::Cpu(), true), RunChain(*model, x, threads, rt::Cpu(), false),
                      "threads " + std::to_string(threads));
}

// Intermediates that are read elsewhere (here: also subgraph outputs) stay out of fused runs: with
// the expansion's output shared only depthwise -> project fuses, with the depthwise output
// shared nothing does.
TEST(FusedDwChainF32, LeavesSharedIntermediatesAlone) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA";
  ChainCase c{1, 9, 9, 4, 12, 6, 3, 1, 1, tflite::Padding_SAME, tflite::ActivationFunctionType_RELU6, false};
  for (int shared : {0, 1}) {
    Graph g = MakeChain(c, 3);
    Subgraph& s = g.subgraphs[0];
    s.outputs.push_back(s.ops[shared].outputs[0]);  // expand output, then depthwise output
    auto model = rt::Model::FromGraph(std::move(g));
    ASSERT_TRUE(model.ok());
    auto interp = FuseEveryChain(*model);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    const auto ops = (*interp)->ops();
    ASSERT_EQ(ops.size(), 3u);
    EXPECT_EQ(ops[0].variant.rfind("fused", 0), std::string::npos) << ops[0].variant;
    EXPECT_EQ(ops[1].variant.rfind("fused/dw+pw/", 0) == 0, shared == 0) << ops[1].variant;
    EXPECT_EQ(ops[2].variant == "fused into #1", shared == 0) << ops[2].variant;
    ASSERT_TRUE((*interp)->Invoke().ok());
  }
}

// An ADD of the project's output and a tensor computed before the chain joins it (its last
// input); one that broadcasts stays its own op. A tensor computed between the expansion and the
// depthwise op ends the chain there: the depthwise -> project chain after it takes the ADD.
TEST(FusedDwChainF32, TakesResidualAddsOfOtherTensorsComputedBefore) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA";
  for (int variant = 0; variant < 3; ++variant) {
    ChainCase c{1, 9, 9, 4, 12, 4, 3, 1, 1, tflite::Padding_SAME, tflite::ActivationFunctionType_RELU6, true};
    c.residual_other = true;
    Graph g = MakeChain(c, 3);
    Subgraph& s = g.subgraphs[0];
    Operator& add = s.ops.back();
    ASSERT_EQ(add.code, tflite::BuiltinOperator_ADD);
    const int32_t r = add.inputs[1];
    if (variant == 1) s.tensors[r].shape = {1, 1, 1, 4};  // broadcast
    if (variant == 2) {
      // The other operand: RELU of the input, placed between the expansion and the depthwise op.
      const int32_t t = static_cast<int32_t>(s.tensors.size());
      s.tensors.push_back(s.tensors[s.inputs[0]]);
      s.tensors.back().name = "late";
      Operator relu;
      relu.code = tflite::BuiltinOperator_RELU;
      relu.inputs = {s.inputs[0]};
      relu.outputs = {t};
      s.ops.insert(s.ops.begin() + 1, std::move(relu));
      s.ops.back().inputs[1] = t;
      s.inputs.erase(std::find(s.inputs.begin(), s.inputs.end(), r));
    }
    auto model = rt::Model::FromGraph(std::move(g));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto interp = FuseEveryChain(*model);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    const auto ops = (*interp)->ops();
    const std::string first = ops[0].variant;
    if (variant == 0) {
      EXPECT_EQ(first.rfind("fused/pw+dw+pw+add/", 0), 0u) << first;
      EXPECT_EQ(ops.back().variant, "fused into #0") << ops.back().variant;
    } else if (variant == 1) {
      EXPECT_EQ(ops.back().variant.rfind("fused", 0), std::string::npos) << ops.back().variant;
    } else {
      ASSERT_EQ(ops.size(), 5u);
      EXPECT_EQ(first.rfind("fused", 0), std::string::npos) << first;
      EXPECT_EQ(ops[2].variant.rfind("fused/dw+pw+add/", 0), 0u) << ops[2].variant;
      EXPECT_EQ(ops.back().variant, "fused into #2") << ops.back().variant;
    }
    for (int k = 0; k < (*interp)->num_inputs(); ++k) std::memset((*interp)->input(k)->data, 0, (*interp)->input(k)->bytes);
    ASSERT_TRUE((*interp)->Invoke().ok());
  }
}

// By default one thread fuses only chains with a large intermediate
// (InterpreterOptions::fuse_min_inner_bytes), more threads every chain
// (fuse_min_inner_bytes_threaded).
TEST(FusedDwChainF32, DefaultLimitLeavesSmallChainsAloneOnOneThread) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA";
  using P = tflite::Padding;
  const auto R6 = tflite::ActivationFunctionType_RELU6;
  // expansion 40×40×96 floats = 600 KB: below the default 1 MB; 64×64×96 = 1.5 MB: above.
  for (int threads : {1, 2})
    for (int side : {40, 64}) {
      auto model = rt::Model::FromGraph(MakeChain({1, side, side, 16, 96, 24, 3, 2, 1, P::Padding_SAME, R6, false}, 5));
      ASSERT_TRUE(model.ok());
      rt::InterpreterOptions io;
      io.num_threads = threads;
      auto interp = rt::Interpreter::Create(*model, io);
      ASSERT_TRUE(interp.ok()) << interp.status().ToString();
      EXPECT_EQ((*interp)->ops().front().variant.rfind("fused/", 0) == 0, side == 64 || threads > 1)
          << side << " " << threads << " threads";
    }
}

// The float twin of MobileNetV2 and the float models of ../shared: fused (the default) against
// TFLite 2.9 and against the same interpreter with fusion off, at 1 and 2 threads.
TEST(FusedDwChainF32, RealFloatModels) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  EDGEOPT_REQUIRE_SHARED_MODELS();
  // DeepLabV3 also runs the stem chain and the concatenation with its pooled branch fused.
  for (const char* name : {"mobilenet_v2_1.0_224_ptq_int8.tflite", "mobilenet_v1_0.25_224_float.tflite",
                           "vww_96_float.tflite", "deeplabv3_257_float.tflite"}) {
    const std::string path = testing::SharedModel(name);
    if (path.empty()) continue;
    auto read = rt::Model::FromFile(path);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    Graph g = (*read)->graph();
    if (g.subgraphs[0].tensors[g.subgraphs[0].inputs[0]].type != DType::kFloat32) {
      ASSERT_TRUE(optimize::DequantizeModel(g).ok()) << name;
    }
    auto bytes = SerializeModel(g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto model = rt::Model::FromGraph(std::move(g));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    testing::CompareOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-6;
    const auto inputs = testing::RandomInputs((*model)->graph(), o);
    auto ref = testing::RunTflite29(*bytes, inputs);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    // The default limit (only large intermediates) and every chain fused.
    for (size_t min_inner : {rt::InterpreterOptions().fuse_min_inner_bytes, size_t{0}})
      for (int threads : {1, 2}) {
        const std::string what = std::string(name) + " threads " + std::to_string(threads) + " min_inner_bytes " +
                                 std::to_string(min_inner);
        rt::InterpreterOptions io;
        io.num_threads = threads;
        io.fuse_min_inner_bytes = min_inner;
        auto fused = testing::RunEdgeopt(*model, inputs, io);
        ASSERT_TRUE(fused.ok()) << what << ": " << fused.status().ToString();
        io.fuse_ops = false;
        auto plain = testing::RunEdgeopt(*model, inputs, io);
        ASSERT_TRUE(plain.ok()) << what << ": " << plain.status().ToString();
        auto vs_tflite = testing::CompareOutputs(*fused, *ref, o);
        EXPECT_TRUE(vs_tflite.ok) << what << " vs TFLite 2.9: " << vs_tflite.Summary();
        auto vs_plain = testing::CompareOutputs(*fused, *plain, o);
        EXPECT_TRUE(vs_plain.ok) << what << " vs unfused: " << vs_plain.Summary();
      }
    auto interp = FuseEveryChain(*model);
    ASSERT_TRUE(interp.ok());
    int fused_ops = 0;
    for (const auto& info : (*interp)->ops()) fused_ops += info.variant.rfind("fused", 0) == 0;
    if (rt::CpuHardware().has_avx2_fma()) {
      EXPECT_GT(fused_ops, 0) << name;
    }
  }
}

}  // namespace
}  // namespace edgeopt
