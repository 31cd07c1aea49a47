// Fused int8 / uint8 depthwise chains (dw_chain_int8.cc): generated [1×1 ->] 3×3 depthwise -> 1×1
// [-> ADD] int8 and uint8 blocks run fused and unfused (InterpreterOptions::fuse_ops) in the same process must give
// the same bytes (the steps run the unfused kernels' code and plans on bands of rows; integer
// results do not depend on the grouping). Then the int8 models of ../shared against TFLite 2.9
// and against the same interpreter with fusion off, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/writer.h"
#include "graph/builder.h"
#include "kernels/fused/fused_test_util.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

struct Int8ChainCase {
  int batch, h, w, cin, expand, cout, k, stride, dilation;
  tflite::Padding padding;
  tflite::ActivationFunctionType act;
  bool residual;             // an ADD of the block input after the project
  bool add_swapped = false;  // ADD(input, project) with RELU6 instead of ADD(project, input)
  bool per_tensor = false;   // one weight scale per layer instead of one per output channel
  // A standalone activation op after the chain (RELU, RELU6, RELU_N1_TO_1; 0: none) with its
  // input's quantization, which the chain takes as its last step's clamp when that has none.
  int trailing = 0;
  // A PAD of rows and columns (top, bottom, left, right) before the depthwise op, then VALID
  // over the padded size (padding must say VALID); pad[0] < 0: none.
  std::array<int, 4> pad = {-1, 0, 0, 0};
  // residual: the ADD's other operand is a second model input of the output's shape (its own
  // scale), not the block's input.
  bool residual_other = false;
  bool TrailingFuses() const { return trailing != 0 && !(residual && add_swapped); }
  std::string Name() const {
    char buf[280];
    std::snprintf(buf, sizeof buf, "b%d %dx%dx%d expand %d -> %d k%d s%d d%d %s act%d%s%s%s%s", batch, h, w, cin, expand,
                  cout, k, stride, dilation, padding == tflite::Padding_SAME ? "SAME" : "VALID", static_cast<int>(act),
                  residual ? (add_swapped ? " +add(x, y) relu6" : " +add") : "", per_tensor ? " per-tensor" : "",
                  trailing ? " then " : "",
                  trailing ? tflite::EnumNameBuiltinOperator(static_cast<tflite::BuiltinOperator>(trailing)) : "");
    std::string name = buf;
    if (residual_other) name += " (residual: another input)";
    if (pad[0] >= 0)
      name += " pad " + std::to_string(pad[0]) + "," + std::to_string(pad[1]) + "," + std::to_string(pad[2]) + "," +
              std::to_string(pad[3]);
    return name;
  }
};

// Every activation has the scale kScale (random zero points). Weights of scale around
// WeightScale(terms) for a sum of `terms` products of int8 values (about 70 from the zero point
// on average) spread the outputs over a few dozen steps around the zero point, so that clamps and
// saturation occur but do not dominate.
constexpr float kScale = 0.05f;
float WeightScale(int terms) { return 40.0f / (70.0f * 73.0f * std::sqrt(static_cast<float>(terms))); }

// Weights [n, kh, kw, c] (axis: the channel dimension), int8 in [-127, 127] with per-channel
// scales around ws (or one scale), or uint8 in [0, 255] with one scale and a zero point in
// [100, 156] (so that w - zero point leaves int8 for some layers: the VNNI packing's row sums or
// split form), and an int32 bias of a few output steps.
struct QWeights {
  int32_t w = -1, b = -1;
};
QWeights AddWeights(GraphBuilder& b, const std::string& name, DType type, std::vector<int32_t> shape, int axis,
                    float ws, float in_scale, bool per_tensor, std::mt19937_64& rng) {
  const int n = shape[static_cast<size_t>(axis)];
  std::vector<float> scales(static_cast<size_t>(n), ws);
  std::uniform_real_distribution<float> spread(0.5f, 2.0f);
  per_tensor = per_tensor || type == DType::kUInt8;
  if (!per_tensor)
    for (float& s : scales) s = ws * spread(rng);
  QWeights q;
  if (type == DType::kUInt8)
    q.w = b.ConstRandom(name, type, shape, 0, 255, Quant(ws, std::uniform_int_distribution<int>(100, 156)(rng)));
  else
    q.w = b.ConstRandom(name, type, shape, -127, 127,
                        per_tensor ? Quant(ws, 0) : QuantPerAxis(scales, axis, std::vector<int64_t>(scales.size(), 0)));
  std::vector<float> bias_scales(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) bias_scales[i] = in_scale * scales[i];
  q.b = b.ConstRandom(name + "_bias", DType::kInt32, {n}, -3000, 3000,
                      per_tensor ? Quant(bias_scales[0], 0) : QuantPerAxis(bias_scales, 0));
  return q;
}

Graph MakeInt8Chain(const Int8ChainCase& c, uint64_t seed, DType type = DType::kInt8) {
  GraphBuilder b(seed);
  std::mt19937_64 rng(seed);
  const int zp_center = type == DType::kUInt8 ? 128 : 0;
  std::uniform_int_distribution<int> zp(zp_center - 20, zp_center + 20);
  const int mid = c.expand ? c.expand : c.cin;
  auto x = b.Input("x", type, {c.batch, c.h, c.w, c.cin}, Quant(kScale, zp(rng)));
  int32_t t = x;
  if (c.expand) {
    const QWeights we = AddWeights(b, "we", type, {mid, 1, 1, c.cin}, 0, WeightScale(c.cin), kScale, c.per_tensor, rng);
    auto e = b.Tensor("e", type, {c.batch, c.h, c.w, mid}, Quant(kScale, zp(rng)));
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_h = o.stride_w = 1;
    o.fused_activation_function = c.act;
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, we.w, we.b}, {e}, o);
    t = e;
  }
  const auto out_size = [&](int in, int k, int stride) {
    return c.padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in - k) / stride + 1;
  };
  int dh = c.h, dw = c.w;  // the depthwise op's input
  if (c.pad[0] >= 0) {
    dh += c.pad[0] + c.pad[1];
    dw += c.pad[2] + c.pad[3];
    auto paddings = b.Const<int32_t>("paddings", DType::kInt32, {4, 2},
                                     std::vector<int32_t>{0, 0, c.pad[0], c.pad[1], c.pad[2], c.pad[3], 0, 0});
    auto padded = b.Tensor("padded", type, {c.batch, dh, dw, mid}, *b.graph().subgraphs[0].tensors[t].quant);
    b.Op(tflite::BuiltinOperator_PAD, {t, paddings}, {padded}, tflite::PadOptionsT());
    t = padded;
  }
  const int eff = (c.k - 1) * c.dilation + 1;
  const int oh = out_size(dh, eff, c.stride), ow = out_size(dw, eff, c.stride);
  const QWeights wd = AddWeights(b, "wd", type, {1, c.k, c.k, mid}, 3, WeightScale(c.k * c.k), kScale, c.per_tensor, rng);
  auto d = b.Tensor("d", type, {c.batch, oh, ow, mid}, Quant(kScale, zp(rng)));
  tflite::DepthwiseConv2DOptionsT dwo;
  dwo.padding = c.padding;
  dwo.stride_h = dwo.stride_w = c.stride;
  dwo.dilation_h_factor = dwo.dilation_w_factor = c.dilation;
  dwo.depth_multiplier = 1;
  dwo.fused_activation_function = c.act;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {t, wd.w, wd.b}, {d}, dwo);
  const QWeights wp = AddWeights(b, "wp", type, {c.cout, 1, 1, mid}, 0, WeightScale(mid), kScale, c.per_tensor, rng);
  // Another scale than the input's: the residual ADD's two inputs are not interchangeable.
  auto y = b.Tensor("y", type, {c.batch, oh, ow, c.cout}, Quant(kScale * 1.3f, zp(rng)));
  tflite::Conv2DOptionsT po;
  po.padding = tflite::Padding_VALID;
  po.stride_h = po.stride_w = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {d, wp.w, wp.b}, {y}, po);
  if (c.residual) {
    auto z = b.Tensor("z", type, {c.batch, oh, ow, c.cout}, Quant(kScale * 1.5f, zp(rng)));
    tflite::AddOptionsT ao;
    if (c.add_swapped) ao.fused_activation_function = tflite::ActivationFunctionType_RELU6;
    const int32_t r = c.residual_other ? b.Input("r", type, {c.batch, oh, ow, c.cout}, Quant(kScale * 0.8f, zp(rng))) : x;
    b.Op(tflite::BuiltinOperator_ADD, c.add_swapped ? std::vector<int32_t>{r, y} : std::vector<int32_t>{y, r}, {z}, ao);
    y = z;
  }
  if (c.trailing) {
    auto z = b.Tensor("act", type, {c.batch, oh, ow, c.cout}, *b.graph().subgraphs[0].tensors[y].quant);
    b.Op(static_cast<tflite::BuiltinOperator>(c.trailing), {y}, {z});
    y = z;
  }
  b.Output(y);
  return b.Finish();
}

struct Result {
  std::vector<uint8_t> out;
  std::vector<std::string> variants;
};

Result RunInt8Chain(const std::shared_ptr<const rt::Model>& model, const std::vector<uint8_t>& x, int threads,
                    const rt::CpuFeatures& cpu, bool fuse) {
  Result r;
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.cpu = &cpu;
  io.fuse_ops = fuse;
  io.fuse_min_inner_bytes = 0;
  // Every op split over the threads: the thread tuning may run small ops on one thread, which
  // would leave the threaded paths (the two-phase form, cut rows) untested.
  io.tune_op_threads = false;
  testing::FusionRun run = testing::RunOnBytes(model, x, io);
  if (!run.outs.empty()) r.out = std::move(run.outs[0]);
  r.variants = std::move(run.variants);
  return r;
}

std::vector<Int8ChainCase> Cases() {
  using P = tflite::Padding;
  const auto R6 = tflite::ActivationFunctionType_RELU6, NONE = tflite::ActivationFunctionType_NONE;
  const auto RELU = tflite::ActivationFunctionType_RELU;
  return {
      // batch, h, w, cin, expand, cout, k, stride, dilation, padding, act, residual
      {1, 17, 13, 5, 24, 7, 3, 1, 1, P::Padding_SAME, R6, false},
      {2, 17, 13, 5, 24, 5, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 18, 15, 8, 40, 16, 3, 2, 1, P::Padding_SAME, R6, false},
      {2, 19, 21, 3, 13, 9, 3, 2, 1, P::Padding_VALID, NONE, false},
      {1, 23, 11, 16, 96, 24, 3, 2, 1, P::Padding_SAME, R6, false},
      {1, 20, 20, 4, 20, 4, 3, 1, 1, P::Padding_SAME, NONE, true},
      {2, 1, 1, 9, 17, 3, 3, 1, 1, P::Padding_SAME, R6, false},
      {1, 3, 40, 12, 8, 12, 3, 2, 1, P::Padding_SAME, RELU, false},
      {1, 7, 7, 160, 960, 160, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 14, 14, 64, 384, 64, 3, 1, 1, P::Padding_SAME, R6, true, false, true},
      // depthwise -> project only
      {1, 17, 13, 24, 0, 7, 3, 1, 1, P::Padding_SAME, R6, false},
      {2, 16, 19, 13, 0, 20, 3, 2, 1, P::Padding_SAME, R6, false},
      {1, 15, 15, 32, 0, 64, 3, 2, 1, P::Padding_VALID, NONE, false},
      {1, 19, 23, 24, 0, 24, 3, 1, 1, P::Padding_SAME, R6, true},
      // 8, 4 and 1 depthwise channels (4 and 8 at stride 1: the packed K x K quad loop, .../p2/dp4
      // and .../p4/dp4, as in the unfused depthwise)
      {1, 12, 10, 8, 0, 8, 3, 1, 1, P::Padding_SAME, R6, true},
      {2, 12, 10, 4, 0, 6, 3, 1, 1, P::Padding_SAME, NONE, false},
      {1, 9, 9, 1, 0, 3, 3, 2, 1, P::Padding_SAME, R6, false},
      {1, 9, 11, 3, 4, 3, 3, 1, 1, P::Padding_VALID, R6, false},
      // tall enough for several bands per thread (each band holds at most 192 KB of buffers)
      {1, 150, 40, 8, 96, 8, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 151, 37, 16, 144, 24, 3, 2, 1, P::Padding_SAME, R6, false},
      {2, 120, 61, 40, 0, 24, 3, 1, 1, P::Padding_SAME, R6, false},
      {1, 112, 112, 16, 96, 24, 3, 2, 1, P::Padding_SAME, R6, false},
      // K x K quad loop: 5x5 and 7x7 filters, dilated 3x3 ones, packed 4 / 8 channels; tall
      // enough for several bands, whose halo rows each band builds again
      {1, 40, 33, 16, 96, 16, 5, 1, 1, P::Padding_SAME, R6, true},
      {1, 37, 29, 24, 144, 40, 5, 2, 1, P::Padding_SAME, R6, false},
      {2, 19, 17, 32, 0, 24, 5, 2, 1, P::Padding_VALID, NONE, false},
      {1, 90, 70, 8, 0, 8, 5, 1, 1, P::Padding_SAME, RELU, true},
      {1, 150, 64, 8, 16, 8, 3, 1, 1, P::Padding_SAME, R6, true},
      {1, 33, 31, 4, 12, 4, 5, 1, 1, P::Padding_SAME, NONE, true},
      {1, 21, 25, 16, 48, 16, 7, 1, 1, P::Padding_SAME, R6, false},
      {1, 26, 22, 16, 0, 32, 3, 1, 2, P::Padding_SAME, R6, false},
      {1, 29, 27, 8, 32, 8, 3, 1, 2, P::Padding_SAME, NONE, true},
      // The residual ADD with the input first and a clamp of its own, over several bands.
      {1, 21, 17, 6, 30, 6, 3, 1, 1, P::Padding_SAME, R6, true, true},
      {2, 140, 33, 16, 64, 16, 3, 1, 1, P::Padding_SAME, NONE, true, true},
      // A standalone activation after the chain (as edgeopt's int8 MediaPipe face detectors have
      // them): the project's or the residual ADD's clamp when it has none; after an ADD with
      // RELU6 it stays its own op.
      {1, 17, 13, 5, 24, 7, 3, 1, 1, P::Padding_SAME, R6, false, false, false, tflite::BuiltinOperator_RELU},
      {2, 140, 33, 16, 64, 16, 3, 1, 1, P::Padding_SAME, NONE, true, false, false, tflite::BuiltinOperator_RELU6},
      {1, 12, 10, 8, 0, 8, 3, 1, 1, P::Padding_SAME, R6, false, false, true, tflite::BuiltinOperator_RELU_N1_TO_1},
      {1, 21, 17, 6, 30, 6, 3, 1, 1, P::Padding_SAME, R6, true, true, false, tflite::BuiltinOperator_RELU},
      // A PAD of rows and columns before a VALID depthwise op (padded with the zero point): 1
      // on every side at stride 2, asymmetric, wider around a 5x5 over several bands with a
      // residual ADD, at the chain's start.
      {1, 32, 30, 16, 64, 24, 3, 2, 1, P::Padding_VALID, R6, false, false, false, 0, {1, 1, 1, 1}},
      {2, 17, 13, 8, 0, 12, 3, 2, 1, P::Padding_VALID, NONE, false, false, false, 0, {1, 1, 1, 1}},
      {1, 19, 23, 8, 24, 9, 3, 1, 1, P::Padding_VALID, R6, false, false, false, tflite::BuiltinOperator_RELU, {0, 2, 1, 0}},
      {1, 150, 40, 8, 48, 8, 5, 1, 1, P::Padding_VALID, R6, true, false, false, 0, {2, 2, 2, 2}},
      // The residual ADD of another tensor (its own scale; as MediaPipe's face detectors, once
      // quantized): no expansion with a trailing RELU, a stride-2 chain over several bands with the
      // ADD's input first, an expansion.
      {1, 19, 17, 8, 0, 32, 3, 1, 1, P::Padding_SAME, NONE, true, false, false, tflite::BuiltinOperator_RELU,
       {-1, 0, 0, 0}, true},
      {2, 150, 40, 8, 0, 24, 3, 2, 1, P::Padding_SAME, NONE, true, true, false, 0, {-1, 0, 0, 0}, true},
      {1, 23, 11, 6, 24, 10, 3, 1, 1, P::Padding_SAME, R6, true, false, false, 0, {-1, 0, 0, 0}, true},
  };
}

bool IsFusedInt8(const std::string& v) {
  return v.rfind("fused/", 0) == 0 && (v.find("/int8/") != std::string::npos || v.find("/uint8/") != std::string::npos);
}

TEST(FusedDwChainInt8, MatchesUnfused) {
  if (!rt::CpuHardware().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI: int8 chains are fused only there";
  const rt::CpuFeatures cpu = rt::CpuHardware();
  uint64_t seed = 11;
  int shared_runs = 0;
  for (const Int8ChainCase& c : Cases())
    for (DType type : {DType::kInt8, DType::kUInt8}) {
      // uint8 weights here are w - zp in [-156, 155]: the K x K quad loop takes no such layer
      // (the unfused depthwise runs its generic loop, and the chain stays unfused).
      if (type == DType::kUInt8 && (c.k != 3 || c.dilation > 1)) continue;
      auto model = rt::Model::FromGraph(MakeInt8Chain(c, ++seed, type));
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      std::mt19937_64 rng(seed);
      std::vector<uint8_t> x(static_cast<size_t>(c.batch) * c.h * c.w * c.cin);
      for (uint8_t& v : x) v = static_cast<uint8_t>(rng());
      for (int threads : {1, 2, 3}) {
        const std::string what = c.Name() + " " + std::string(DTypeName(type)) + " threads " + std::to_string(threads);
        const Result fused = RunInt8Chain(*model, x, threads, cpu, true);
        const Result plain = RunInt8Chain(*model, x, threads, cpu, false);
        ASSERT_FALSE(fused.variants.empty()) << what;
        const std::string& v = fused.variants.front();
        EXPECT_TRUE(IsFusedInt8(v)) << what << ": not fused (" << v << ")";
        EXPECT_FALSE(IsFusedInt8(plain.variants.front())) << what;
        EXPECT_EQ(v.find("+add") != std::string::npos, c.residual) << what << ": " << v;
        EXPECT_EQ(v.find("+relu") != std::string::npos, c.TrailingFuses()) << what << ": " << v;
        EXPECT_EQ(v.find("pad+dw") != std::string::npos, c.pad[0] >= 0) << what << ": " << v;
        EXPECT_EQ(v.rfind(std::string("fused/") + (c.expand ? "pw+" : "") + (c.pad[0] >= 0 ? "pad+" : "") + "dw+pw", 0), 0u) << what;
        EXPECT_NE(v.find(type == DType::kUInt8 ? "/uint8/" : "/int8/"), std::string::npos) << what;
        // The two-phase form (SharedRows): only with more than one thread.
        if (threads == 1) {
          EXPECT_EQ(v.find("/shared"), std::string::npos) << what;
        }
        shared_runs += v.find("/shared") != std::string::npos;
        if (c.k != 3 || c.dilation > 1) {  // the K x K quad loop, e.g. .../avx512/5x5s1/dp4
          const std::string loop = std::to_string(c.k) + "x" + std::to_string(c.k) + "s";
          EXPECT_NE(v.find(loop), std::string::npos) << what << ": " << v;
        }
        ASSERT_EQ(fused.out.size(), plain.out.size()) << what;
        int bad = 0, distinct = 0;
        for (size_t i = 0; i < plain.out.size(); ++i) {
          distinct += i > 0 && plain.out[i] != plain.out[i - 1];
          if (fused.out[i] != plain.out[i] && bad++ < 5)
            ADD_FAILURE() << what << " element " << i << ": fused " << int{fused.out[i]} << " unfused "
                          << int{plain.out[i]};
        }
        // The outputs are not one saturated value (the comparison would prove little).
        EXPECT_GT(distinct, static_cast<int>(plain.out.size() / 4)) << what;
      }
    }
  EXPECT_GT(shared_runs, 0);
}

// Chains the int8 kernel does not take stay unfused ops: depthwise layers that no row loop takes
// (a 5x5 filter over 20 channels, whose 16-lane groups would be 3/8 empty: the generic loop; a
// 9x9 filter), and CPUs without AVX-512 VNNI.
TEST(FusedDwChainInt8, LeavesOtherChainsAlone) {
  using P = tflite::Padding;
  const auto R6 = tflite::ActivationFunctionType_RELU6;
  const auto unfused = [](const Graph& g, const rt::CpuFeatures& cpu, const std::string& what) {
    auto model = rt::Model::FromGraph(Graph(g));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    rt::InterpreterOptions io;
    io.cpu = &cpu;
    io.fuse_min_inner_bytes = 0;
    auto interp = rt::Interpreter::Create(*model, io);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    for (const auto& info : (*interp)->ops()) EXPECT_FALSE(IsFusedInt8(info.variant)) << what << ": " << info.variant;
    EXPECT_TRUE((*interp)->Invoke().ok()) << what;
  };
  const rt::CpuFeatures hw = rt::CpuHardware();
  unfused(MakeInt8Chain({1, 20, 20, 8, 20, 8, 5, 1, 1, P::Padding_SAME, R6, false}, 3), hw, "5x5 depthwise, 20 channels");
  unfused(MakeInt8Chain({1, 20, 20, 8, 16, 8, 9, 1, 1, P::Padding_SAME, R6, false}, 3), hw, "9x9 depthwise");
  if (hw.has_avx2_fma())
    unfused(MakeInt8Chain({1, 20, 20, 8, 24, 8, 3, 1, 1, P::Padding_SAME, R6, true}, 3),
            rt::CapFeatures(hw, "avx2"), "AVX2 CPU");
}

// The int8 models of ../shared with depthwise chains: fused (every chain, and the default limit)
// against TFLite 2.9 (at most one step apart, as every int8 kernel) and against the same
// interpreter with fusion off (the same bytes), at 1 and 2 threads.
TEST(FusedDwChainInt8, RealInt8Models) {
  if (!rt::CpuHardware().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI: int8 chains are fused only there";
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const char* name : {"mobilenet_v2_1.0_224_ptq_int8.tflite", "vww_96_int8.tflite", "kws_dscnn_int8.tflite",
                           "mobilenet_v2_1.0_224_quant.tflite"}) {
    const std::string path = testing::SharedModel(name);
    if (path.empty()) continue;
    auto model = rt::Model::FromFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto bytes = SerializeModel((*model)->graph());
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    testing::CompareOptions o;
    const auto inputs = testing::RandomInputs((*model)->graph(), o);
    auto ref = testing::RunTflite29(*bytes, inputs);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    for (size_t min_inner : {rt::InterpreterOptions().fuse_min_inner_bytes, size_t{0}})
      for (int threads : {1, 2}) {
        const std::string what = std::string(name) + " threads " + std::to_string(threads) + " min_inner_bytes " +
                                 std::to_string(min_inner);
        rt::InterpreterOptions io;
        io.num_threads = threads;
        io.fuse_min_inner_bytes = min_inner;
        io.fuse_min_inner_bytes_int8 = min_inner;
        auto fused = testing::RunEdgeopt(*model, inputs, io);
        ASSERT_TRUE(fused.ok()) << what << ": " << fused.status().ToString();
        io.fuse_ops = false;
        auto plain = testing::RunEdgeopt(*model, inputs, io);
        ASSERT_TRUE(plain.ok()) << what << ": " << plain.status().ToString();
        auto vs_tflite = testing::CompareOutputs(*fused, *ref, o);
        EXPECT_TRUE(vs_tflite.ok) << what << " vs TFLite 2.9: " << vs_tflite.Summary();
        testing::CompareOptions exact = o;
        exact.max_lsb = 0;
        exact.rtol = exact.atol = 0;
        auto vs_plain = testing::CompareOutputs(*fused, *plain, exact);
        EXPECT_TRUE(vs_plain.ok) << what << " vs unfused: " << vs_plain.Summary();
      }
    rt::InterpreterOptions every;
    every.fuse_min_inner_bytes = 0;
    auto interp = rt::Interpreter::Create(*model, every);
    ASSERT_TRUE(interp.ok());
    int fused_ops = 0;
    for (const auto& info : (*interp)->ops()) fused_ops += IsFusedInt8(info.variant);
    EXPECT_GT(fused_ops, 0) << name;
  }
}

}  // namespace
}  // namespace edgeopt
