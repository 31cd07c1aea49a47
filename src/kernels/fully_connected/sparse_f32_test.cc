// Sparse float32 GEMM kernels (sparse_f32.h) against a double-precision reference over many
// shapes and sparsities (portable, AVX2 SpMM tiles, AVX2 SpMV, the dense AVX2 baseline), and the
// sparse FULLY_CONNECTED / 1x1 CONV_2D variants in the interpreter: chosen by measured sparsity
// (also for weights made by DENSIFY), equal to the reference kernels, and to TFLite 2.9.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/half.h"
#include "graph/builder.h"
#include "kernels/fully_connected/sparse_f32.h"
#include "optimize/sparse_encoding.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

using kernels::sparse::CsrF32;
using kernels::sparse::GemmArgs;

std::vector<float> SparseRandom(std::mt19937_64& rng, int64_t n, double sparsity, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::uniform_real_distribution<double> p(0, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = p(rng) < sparsity ? 0.0f : u(rng);
  return v;
}

struct Problem {
  int m, n, k;
  std::vector<float> a, w, bias;
  float lo = -3.4e38f, hi = 3.4e38f;
  int64_t lda, ldc;
};

Problem MakeProblem(std::mt19937_64& rng, int m, int n, int k, double sparsity, bool with_bias, int act, int pad) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = k + pad;
  p.ldc = n + pad;
  p.a = SparseRandom(rng, int64_t{m} * p.lda, 0.0);
  p.w = SparseRandom(rng, int64_t{n} * k, sparsity);
  if (with_bias) p.bias = SparseRandom(rng, n, 0.0);
  if (act == 1) p.lo = 0;
  if (act == 2) {
    p.lo = 0;
    p.hi = 6;
  }
  if (act == 3) {
    p.lo = -1;
    p.hi = 1;
  }
  return p;
}

GemmArgs ArgsOf(const Problem& p, std::vector<float>* c) {
  GemmArgs g;
  g.m = p.m;
  g.a = p.a.data();
  g.lda = p.lda;
  g.bias = p.bias.empty() ? nullptr : p.bias.data();
  g.lo = p.lo;
  g.hi = p.hi;
  c->assign(static_cast<size_t>(p.m) * p.ldc, -7.0f);  // padding must stay untouched
  g.c = c->data();
  g.ldc = p.ldc;
  return g;
}

// Every output within 2e-6 x (|bias| + sum |a w|) of the double-precision result; padding kept.
void ExpectMatches(const Problem& p, const std::vector<float>& c, const std::string& what) {
  int bad = 0;
  for (int m = 0; m < p.m && bad < 5; ++m) {
    for (int n = 0; n < p.ldc; ++n) {
      const float got = c[static_cast<size_t>(m) * p.ldc + n];
      if (n >= p.n) {
        if (got != -7.0f && ++bad) ADD_FAILURE() << what << ": padding written at row " << m << " col " << n;
        continue;
      }
      double acc = p.bias.empty() ? 0.0 : p.bias[n], mag = std::fabs(acc);
      for (int k = 0; k < p.k; ++k) {
        const double t = static_cast<double>(p.a[static_cast<size_t>(m) * p.lda + k]) * p.w[static_cast<size_t>(n) * p.k + k];
        acc += t;
        mag += std::fabs(t);
      }
      const double want = std::min(std::max(acc, static_cast<double>(p.lo)), static_cast<double>(p.hi));
      if (std::fabs(got - want) > 2e-6 * mag + 1e-6 && ++bad)
        ADD_FAILURE() << what << ": row " << m << " col " << n << " got " << got << " want " << want;
    }
  }
}

TEST(SparseF32, CsrPacking) {
  const std::vector<float> w = {0, 1, 0, 2, 0, 0, 0, 0, 3, -0.0f, 0, 4};
  CsrF32 c = kernels::sparse::PackCsr(w.data(), 3, 4);
  EXPECT_EQ(c.row_start, (std::vector<int32_t>{0, 2, 2, 4}));
  EXPECT_EQ(c.col, (std::vector<int32_t>{1, 3, 0, 3}));
  EXPECT_EQ(c.val, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(c.sparsity(), 8.0 / 12.0);
  EXPECT_DOUBLE_EQ(kernels::sparse::ZeroFraction(w.data(), 12), 8.0 / 12.0);
  // The early-stopping test agrees with the count at and around 8 zeros of 12 (-0 is a zero).
  for (double f : {0.0, 0.5, 7.0 / 12.0, 8.0 / 12.0, 0.67, 0.75, 1.0})
    EXPECT_EQ(kernels::sparse::ZeroFractionAtLeast(w.data(), 12, f), 8 >= std::ceil(f * 12)) << f;
  EXPECT_TRUE(kernels::sparse::ZeroFractionAtLeast(w.data(), 0, 0.0));
  EXPECT_FALSE(kernels::sparse::ZeroFractionAtLeast(w.data(), 0, 0.5));
}

TEST(SparseF32, KernelsMatchReferenceOverShapesAndSparsities) {
  const bool avx2 = rt::Cpu().has_avx2_fma(), avx512 = rt::Cpu().has_avx512();
  if (!avx2) std::printf("no AVX2+FMA on this CPU: only the portable kernel is checked\n");
  if (avx2 && !avx512) std::printf("no AVX-512 on this CPU (or EDGEOPT_CPU caps it): the AVX-512 SpMM is not checked\n");
  std::mt19937_64 rng(42);
  int cases = 0;
  for (int m : {1, 2, 3, 7, 8, 9, 17, 31, 32, 33, 70}) {
    for (int n : {1, 5, 8, 9, 16, 23, 40}) {
      for (int k : {1, 3, 8, 9, 17, 64, 131}) {
        for (double s : {0.0, 0.5, 0.8, 0.95, 1.0}) {
          const int variant = cases++;
          Problem p = MakeProblem(rng, m, n, k, s, variant % 3 != 0, variant % 4, variant % 5 == 0 ? 3 : 0);
          char label_buf[96];
          std::snprintf(label_buf, sizeof label_buf, "M%d N%d K%d sparsity %.2f", m, n, k, s);
          const std::string label = label_buf;
          CsrF32 csr = kernels::sparse::PackCsr(p.w.data(), n, k);
          std::vector<float> c;
          GemmArgs g = ArgsOf(p, &c);
          kernels::sparse::SpmmPortable(csr, g, 0, m);
          ExpectMatches(p, c, "portable " + label);
          if (!avx2) continue;
          std::vector<float> scratch(kernels::sparse::Avx2ScratchFloats(k));
          g = ArgsOf(p, &c);
          kernels::sparse::SpmmAvx2(csr, g, 0, m, scratch.data());
          ExpectMatches(p, c, "spmm avx2 " + label);
          if (avx512) {
            std::vector<float> scratch512(kernels::sparse::Avx512ScratchFloats(k));
            g = ArgsOf(p, &c);
            kernels::sparse::SpmmAvx512(csr, g, 0, m, scratch512.data());
            ExpectMatches(p, c, "spmm avx512 " + label);
          }
          g = ArgsOf(p, &c);
          for (int r = 0; r < m; ++r) kernels::sparse::SpmvAvx2(csr, g, r, 0, n);
          ExpectMatches(p, c, "spmv avx2 " + label);
          auto dense = kernels::sparse::PackDense(p.w.data(), n, k);
          g = ArgsOf(p, &c);
          kernels::sparse::DenseGemmAvx2(dense, g, 0, m);
          ExpectMatches(p, c, "dense avx2 " + label);
          if (HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(cases, 2500);
}

TEST(SparseF32, ThreadedAndStridedRows) {
  std::mt19937_64 rng(7);
  for (int threads : {1, 2, 3}) {
    rt::ThreadPool pool(threads);
    for (int m : {1, 2, 5, 64, 97, 200}) {
      Problem p = MakeProblem(rng, m, 37, 45, 0.8, true, 2, 0);
      CsrF32 csr = kernels::sparse::PackCsr(p.w.data(), p.n, p.k);
      for (auto kernel : {kernels::sparse::SparseKernel::kPortable, kernels::sparse::SparseKernel::kAvx2,
                          kernels::sparse::SparseKernel::kAvx512}) {
        if (kernel == kernels::sparse::SparseKernel::kAvx2 && !rt::Cpu().has_avx2_fma()) continue;
        if (kernel == kernels::sparse::SparseKernel::kAvx512 && !rt::Cpu().has_avx512()) continue;
        std::vector<float> scratch(std::max<int64_t>(1, kernels::sparse::SpmmScratchFloats(kernel, p.k)) * threads);
        std::vector<float> c;
        GemmArgs g = ArgsOf(p, &c);
        kernels::sparse::RunSparseGemm(csr, g, kernel, pool, scratch.data());
        ExpectMatches(p, c, std::string(kernels::sparse::KernelName(kernel)) + " threads " + std::to_string(threads) +
                                " M " + std::to_string(m));
      }
    }
  }
  // Rows through a function: every other row of a taller matrix (as a stride-2 convolution).
  Problem tall = MakeProblem(rng, 80, 20, 24, 0.9, true, 0, 0);
  Problem half = tall;
  half.m = 40;
  half.a.clear();
  for (int r = 0; r < 80; r += 2) half.a.insert(half.a.end(), tall.a.begin() + r * 24, tall.a.begin() + (r + 1) * 24);
  CsrF32 csr = kernels::sparse::PackCsr(tall.w.data(), 20, 24);
  std::vector<float> c;
  GemmArgs g = ArgsOf(half, &c);
  g.a = nullptr;
  g.row_of = [](const void* ctx, int m) { return static_cast<const float*>(ctx) + int64_t{m} * 48; };
  g.row_ctx = tall.a.data();
  rt::ThreadPool pool(2);
  const auto best = kernels::sparse::BestKernel(rt::Cpu());
  std::vector<float> scratch(std::max<int64_t>(1, kernels::sparse::SpmmScratchFloats(best, 24)) * 2);
  kernels::sparse::RunSparseGemm(csr, g, best, pool, scratch.data());
  ExpectMatches(half, c, "row_of");
}

// ---------------------------------------------------------------------------------------------
// The variants in the interpreter.

Graph FcGraph(int batch, int depth, int units, double sparsity, bool densify, tflite::ActivationFunctionType act,
              uint64_t seed) {
  GraphBuilder b(seed);
  std::mt19937_64 rng(seed);
  auto x = b.Input("x", DType::kFloat32, {batch, depth});
  auto w = b.Const<float>("w", DType::kFloat32, {units, depth}, SparseRandom(rng, int64_t{units} * depth, sparsity));
  auto bias = b.ConstRandom("bias", DType::kFloat32, {units});
  auto y = b.Tensor("y", DType::kFloat32, {batch, units});
  tflite::FullyConnectedOptionsT o;
  o.fused_activation_function = act;
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, w, bias}, {y}, o);
  b.Output(y);
  Graph g = b.Finish();
  if (densify) {
    auto r = optimize::EncodeSparseWeight(g, 0, w);
    EXPECT_TRUE(r.ok() && r->encoded) << "weights were not sparse-encoded";
  }
  return g;
}

Graph Conv1x1Graph(int batch, int h, int w_, int in_c, int out_c, int stride, double sparsity, bool densify,
                   tflite::ActivationFunctionType act, uint64_t seed) {
  GraphBuilder b(seed);
  std::mt19937_64 rng(seed);
  auto x = b.Input("x", DType::kFloat32, {batch, h, w_, in_c});
  auto w = b.Const<float>("w", DType::kFloat32, {out_c, 1, 1, in_c}, SparseRandom(rng, int64_t{out_c} * in_c, sparsity));
  auto bias = b.ConstRandom("bias", DType::kFloat32, {out_c});
  const int oh = (h + stride - 1) / stride, ow = (w_ + stride - 1) / stride;
  auto y = b.Tensor("y", DType::kFloat32, {batch, oh, ow, out_c});
  tflite::Conv2DOptionsT o;
  o.padding = tflite::Padding_SAME;
  o.stride_h = o.stride_w = stride;
  o.dilation_h_factor = o.dilation_w_factor = 1;
  o.fused_activation_function = act;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w, bias}, {y}, o);
  b.Output(y);
  Graph g = b.Finish();
  if (densify) {
    auto r = optimize::EncodeSparseWeight(g, 0, w);
    EXPECT_TRUE(r.ok() && r->encoded) << "weights were not sparse-encoded";
  }
  return g;
}

std::string VariantOf(const Graph& g, tflite::BuiltinOperator code, bool reference_only = false) {
  auto model = rt::Model::FromGraph(g);
  EXPECT_TRUE(model.ok());
  rt::InterpreterOptions o;
  o.reference_kernels_only = reference_only;
  auto it = rt::Interpreter::Create(*model, o);
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return "";
  for (const auto& op : (*it)->ops())
    if (op.type == BuiltinName(code)) return op.variant;
  return "";
}

// Ours (optimized) vs ours (reference kernels) vs TFLite 2.9 on the same seeded inputs.
void ExpectAgrees(const Graph& g, const std::string& label, int threads = 1) {
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-5;
  o.threads = threads;
  if (testing::Tflite29Available()) {
    auto r = testing::CompareGraph(g, o);
    EXPECT_TRUE(r.ok) << label << ": vs TFLite 2.9\n" << r.Summary();
  }
  auto inputs = testing::RandomInputs(g, o);
  auto model = rt::Model::FromGraph(g);
  ASSERT_TRUE(model.ok());
  rt::InterpreterOptions fast, ref;
  fast.num_threads = threads;
  ref.reference_kernels_only = true;
  auto a = testing::RunEdgeopt(*model, inputs, fast);
  auto b = testing::RunEdgeopt(*model, inputs, ref);
  ASSERT_TRUE(a.ok() && b.ok());
  auto cmp = testing::CompareOutputs(*a, *b, o);
  EXPECT_TRUE(cmp.ok) << label << ": optimized vs reference kernels\n" << cmp.Summary();
}

const char* SparseVariant(const char* op) {
  static std::string s;
  s = std::string(op) + "/f32/sparse_" + kernels::sparse::KernelName(kernels::sparse::BestKernel(rt::Cpu()));
  return s.c_str();
}

// Below the threshold the op keeps the dense kernel the earlier factory chose (the fast AVX2
// kernel, or the reference one).
void ExpectDense(const std::string& variant, const std::string& label) {
  EXPECT_FALSE(variant.empty()) << label;
  EXPECT_EQ(variant.find("sparse"), std::string::npos) << label << ": " << variant;
}

TEST(SparseVariants, FullyConnectedChosenBySparsity) {
  using A = tflite::ActivationFunctionType;
  struct Case {
    int batch, depth, units;
    double sparsity;
    bool densify;
    A act;
    bool sparse;          // with the AVX2 kernel (the portable one: from 50%)
    bool sparse_avx512;   // with the AVX-512 kernel
  };
  const Case cases[] = {
      {1, 256, 100, 0.98, false, A::ActivationFunctionType_NONE, true, true},
      {1, 256, 100, 0.98, true, A::ActivationFunctionType_RELU, true, true},  // weights from DENSIFY
      {1, 256, 100, 0.9, false, A::ActivationFunctionType_NONE, false, false},  // SpMV loses to dense at 90%
      {1, 256, 100, 0.3, false, A::ActivationFunctionType_NONE, false, false},
      {2, 100, 33, 0.98, true, A::ActivationFunctionType_RELU6, true, true},
      {7, 64, 48, 0.8, false, A::ActivationFunctionType_RELU_N1_TO_1, true, false},  // AVX-512: under 16 rows, 90%
      {7, 64, 48, 0.95, false, A::ActivationFunctionType_RELU, true, true},
      {40, 130, 17, 0.75, true, A::ActivationFunctionType_NONE, true, true},
      {40, 130, 17, 0.2, false, A::ActivationFunctionType_NONE, false, false},
      {40, 20, 17, 0.8, false, A::ActivationFunctionType_NONE, true, false},  // AVX-512: K = 20 needs 97%
      {3, 9, 5, 0.0, false, A::ActivationFunctionType_NONE, false, false},
  };
  const auto best = kernels::sparse::BestKernel(rt::Cpu());
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const std::string label = "FC batch " + std::to_string(c.batch) + " depth " + std::to_string(c.depth) + " units " +
                              std::to_string(c.units) + " sparsity " + std::to_string(c.sparsity) +
                              (c.densify ? " (DENSIFY)" : "");
    Graph g = FcGraph(c.batch, c.depth, c.units, c.sparsity, c.densify, c.act, seed++);
    const std::string v = VariantOf(g, tflite::BuiltinOperator_FULLY_CONNECTED);
    const bool sparse = best == kernels::sparse::SparseKernel::kAvx512 ? c.sparse_avx512
                        : best == kernels::sparse::SparseKernel::kAvx2 ? c.sparse
                                                                       : c.sparsity >= 0.5;
    if (sparse) EXPECT_EQ(v, SparseVariant("fully_connected")) << label;
    else ExpectDense(v, label);
    EXPECT_EQ(VariantOf(g, tflite::BuiltinOperator_FULLY_CONNECTED, true), "fully_connected/f32/ref") << label;
    ExpectAgrees(g, label);
    ExpectAgrees(g, label + " 2 threads", 2);
  }
}

TEST(SparseVariants, PointwiseConvChosenBySparsity) {
  using A = tflite::ActivationFunctionType;
  uint64_t seed = 100;
  const bool avx512 = kernels::sparse::BestKernel(rt::Cpu()) == kernels::sparse::SparseKernel::kAvx512;
  // 96 input channels: sparse from 70% with either kernel; 24: the AVX-512 kernel needs 94%.
  for (int in_c : {96, 24})
  for (int stride : {1, 2}) {
    for (double sparsity : {0.3, 0.75, 0.9, 0.97}) {
      for (bool densify : {false, true}) {
        const int batch = stride == 2 ? 2 : 1;
        Graph g = Conv1x1Graph(batch, 9, 7, in_c, 20, stride, sparsity, densify && sparsity > 0.5,
                               stride == 1 ? A::ActivationFunctionType_RELU6 : A::ActivationFunctionType_NONE, seed++);
        const std::string label = "1x1 conv " + std::to_string(in_c) + " channels, stride " + std::to_string(stride) +
                                  " sparsity " + std::to_string(sparsity) + (densify ? " (DENSIFY)" : "");
        const std::string v = VariantOf(g, tflite::BuiltinOperator_CONV_2D);
        if (sparsity >= (avx512 && in_c == 24 ? 0.95 : 0.7)) EXPECT_EQ(v, SparseVariant("conv2d")) << label;
        else ExpectDense(v, label);
        ExpectAgrees(g, label);
        ExpectAgrees(g, label + " 3 threads", 3);
      }
    }
  }
  // 3x3 filters are not pointwise: always the dense kernel.
  GraphBuilder b(5);
  auto x = b.Input("x", DType::kFloat32, {1, 8, 8, 8});
  std::mt19937_64 rng(5);
  auto w = b.Const<float>("w", DType::kFloat32, {8, 3, 3, 8}, SparseRandom(rng, 8 * 9 * 8, 0.95));
  auto y = b.Tensor("y", DType::kFloat32, {1, 8, 8, 8});
  tflite::Conv2DOptionsT o;
  o.padding = tflite::Padding_SAME;
  o.stride_h = o.stride_w = 1;
  o.dilation_h_factor = o.dilation_w_factor = 1;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w}, {y}, o);
  b.Output(y);
  ExpectDense(VariantOf(b.Finish(), tflite::BuiltinOperator_CONV_2D), "3x3 conv sparsity 0.95");
}

// Weights stored as sparse float16 (DENSIFY then DEQUANTIZE, as TFLite's converter writes sparse
// float16 models such as MediaPipe's face_detection_full_range_sparse): the chain is folded at
// init, so the ops must get their fast kernels, not the reference ones (which they did when only
// one producer was looked through).
Graph Float16SparseChainGraph(tflite::BuiltinOperator code, int kh, int kw, double sparsity, uint64_t seed) {
  GraphBuilder b(seed);
  std::mt19937_64 rng(seed);
  const int in_c = 24, out_c = 20;
  const bool fc = code == tflite::BuiltinOperator_FULLY_CONNECTED;
  std::vector<int32_t> wshape = fc ? std::vector<int32_t>{out_c, in_c} : std::vector<int32_t>{out_c, kh, kw, in_c};
  int64_t n = 1;
  for (int32_t d : wshape) n *= d;
  std::vector<uint16_t> half;
  for (float v : SparseRandom(rng, n, sparsity)) half.push_back(FloatToHalf(v));
  auto x = fc ? b.Input("x", DType::kFloat32, {3, in_c}) : b.Input("x", DType::kFloat32, {1, 9, 7, in_c});
  auto w16 = b.Const<uint16_t>("w16", DType::kFloat16, wshape, half);
  auto w = b.Tensor("w", DType::kFloat32, wshape);
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w16}, {w});
  auto bias = b.ConstRandom("bias", DType::kFloat32, {out_c});
  auto y = fc ? b.Tensor("y", DType::kFloat32, {3, out_c}) : b.Tensor("y", DType::kFloat32, {1, 9, 7, out_c});
  if (fc) {
    b.Op(code, {x, w, bias}, {y}, tflite::FullyConnectedOptionsT());
  } else {
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_h = o.stride_w = 1;
    o.dilation_h_factor = o.dilation_w_factor = 1;
    o.fused_activation_function = tflite::ActivationFunctionType_RELU;
    b.Op(code, {x, w, bias}, {y}, o);
  }
  b.Output(y);
  Graph g = b.Finish();
  auto r = optimize::EncodeSparseWeight(g, 0, w16);
  EXPECT_TRUE(r.ok() && r->encoded) << "float16 weights were not sparse-encoded";
  return g;
}

TEST(SparseVariants, Float16SparseWeightsGetFastKernels) {
  struct Case {
    tflite::BuiltinOperator code;
    int kh, kw;
    double sparsity;
    const char* op;
  };
  const Case cases[] = {
      {tflite::BuiltinOperator_CONV_2D, 1, 1, 0.5, "conv2d"},
      {tflite::BuiltinOperator_CONV_2D, 1, 1, 0.9, "conv2d"},
      {tflite::BuiltinOperator_CONV_2D, 3, 3, 0.6, "conv2d"},
      {tflite::BuiltinOperator_FULLY_CONNECTED, 1, 1, 0.6, "fully_connected"},
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    Graph g = Float16SparseChainGraph(c.code, c.kh, c.kw, c.sparsity, seed++);
    const std::string label = std::string(c.op) + " " + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
                              " float16 sparsity " + std::to_string(c.sparsity);
    int densify = 0;
    for (const Operator& op : g.main().ops) densify += op.code == tflite::BuiltinOperator_DENSIFY;
    EXPECT_EQ(densify, 1) << label;
    const std::string v = VariantOf(g, c.code);
    EXPECT_FALSE(v.empty()) << label;
    EXPECT_EQ(v.find("/ref"), std::string::npos) << label << ": " << v;
    EXPECT_EQ(v.rfind(std::string(c.op) + "/f32/", 0), 0u) << label << ": " << v;
    ExpectAgrees(g, label);
    ExpectAgrees(g, label + " 2 threads", 2);
  }
}

}  // namespace
}  // namespace edgeopt
