// Pruned FULLY_CONNECTED / 1x1 CONV_2D in the edgeopt runtime, sparse vs dense, one thread.
// Two models of the same op and shape: `pruned` has the weights with exact zeros at the given
// sparsity (the runtime measures it at prepare time and picks the sparse or the dense kernel),
// `dense` has the zeros replaced by 1e-30 (same values for the arithmetic, no zeros: the runtime
// must run its dense kernel, i.e. the fast float kernels of kernels/gemm). Every iteration
// invokes both, one after the other (load on a shared machine hits both alike). Counters:
//   dense_us     the dense kernel (the runtime's best dense path)
//   runtime_us   the pruned model as the runtime runs it (sparse kernel if chosen)
//   sparse_us    the sparse kernel alone on the same data (also when the runtime would not pick it;
//                the best this CPU runs: AVX-512, AVX2 or portable)
//   speedup      dense_us / runtime_us   (> 1: the runtime's choice wins; ~1: dense chosen)
//   sparse_x     dense_us / sparse_us    (what the sparse kernel would give at this sparsity)
//   chosen       1 if the runtime chose the sparse variant
// Arguments: op (0 FC, 1 conv 1x1), M (batch / output pixels), N (output channels), K (input
// channels), sparsity %.
//   build/bench/edgeopt_kernel_bench --benchmark_filter=RuntimeSparse
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "graph/builder.h"
#include "kernels/fully_connected/sparse_f32.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One FC ([M, K] x [N, K]^T) or one 1x1 conv over a sqrt(M) x sqrt(M) image, with weights `w`.
Graph OneOp(bool conv, int m, int n, int k, const std::vector<float>& w) {
  GraphBuilder b(1);
  const auto bias = b.ConstRandom("bias", DType::kFloat32, {n});
  if (!conv) {
    const auto x = b.Input("x", DType::kFloat32, {m, k});
    const auto wt = b.Const<float>("w", DType::kFloat32, {n, k}, w);
    const auto y = b.Tensor("y", DType::kFloat32, {m, n});
    tflite::FullyConnectedOptionsT o;
    b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {x, wt, bias}, {y}, o);
    b.Output(y);
  } else {
    const int side = static_cast<int>(std::lround(std::sqrt(m)));
    const auto x = b.Input("x", DType::kFloat32, {1, side, side, k});
    const auto wt = b.Const<float>("w", DType::kFloat32, {n, 1, 1, k}, w);
    const auto y = b.Tensor("y", DType::kFloat32, {1, side, side, n});
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_VALID;
    o.stride_h = o.stride_w = 1;
    o.dilation_h_factor = o.dilation_w_factor = 1;
    b.Op(tflite::BuiltinOperator_CONV_2D, {x, wt, bias}, {y}, o);
    b.Output(y);
  }
  return b.Finish();
}

std::unique_ptr<rt::Interpreter> Make(const Graph& g, std::string* variant) {
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) return nullptr;
  rt::InterpreterOptions o;
  o.num_threads = 1;
  auto it = rt::Interpreter::Create(*model, o);
  if (!it.ok() || !(*it)->AllocateTensors().ok()) return nullptr;
  for (const auto& op : (*it)->ops()) *variant = op.variant;
  return std::move(*it);
}

void BM_RuntimeSparseVsDense(benchmark::State& state) {
  const bool conv = state.range(0) == 1;
  const int m = static_cast<int>(state.range(1)), n = static_cast<int>(state.range(2)), k = static_cast<int>(state.range(3));
  const double sparsity = state.range(4) / 100.0;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  std::vector<float> w(static_cast<size_t>(n) * k), w_dense(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = p(rng) < sparsity ? 0.0f : u(rng);
    w_dense[i] = w[i] == 0.0f ? 1e-30f : w[i];
  }
  std::string pruned_variant, dense_variant;
  auto pruned = Make(OneOp(conv, m, n, k, w), &pruned_variant);
  auto dense = Make(OneOp(conv, m, n, k, w_dense), &dense_variant);
  if (!pruned || !dense) {
    state.SkipWithError("cannot build the models");
    return;
  }
  for (rt::Interpreter* it : {pruned.get(), dense.get()}) {
    rt::RtTensor* x = it->input(0);
    float* xd = x->data_as<float>();
    for (int64_t i = 0; i < x->num_elements(); ++i) xd[i] = u(rng);
  }
  // The sparse kernel alone on the same problem.
  const auto csr = kernels::sparse::PackCsr(w.data(), n, k);
  const auto kernel = kernels::sparse::BestKernel(rt::Cpu());
  std::vector<float> c(static_cast<size_t>(m) * n),
      scratch(static_cast<size_t>(std::max<int64_t>(1, kernels::sparse::SpmmScratchFloats(kernel, k))));
  kernels::sparse::GemmArgs g;
  g.m = m;
  g.a = pruned->input(0)->data_as<float>();
  g.lda = k;
  g.c = c.data();
  g.ldc = n;
  auto run_sparse = [&] {
    if (kernel == kernels::sparse::SparseKernel::kPortable) {
      kernels::sparse::SpmmPortable(csr, g, 0, m);
    } else if (m <= kernels::sparse::kSpmvMaxRows) {
      for (int r = 0; r < m; ++r) kernels::sparse::SpmvAvx2(csr, g, r, 0, n);
    } else if (kernel == kernels::sparse::SparseKernel::kAvx512) {
      kernels::sparse::SpmmAvx512(csr, g, 0, m, scratch.data());
    } else {
      kernels::sparse::SpmmAvx2(csr, g, 0, m, scratch.data());
    }
  };
  if (!pruned->Invoke().ok() || !dense->Invoke().ok()) {
    state.SkipWithError("invoke failed");
    return;
  }
  run_sparse();
  double dense_us = 0, runtime_us = 0, sparse_us = 0;
  int64_t iterations = 0;
  for (auto _ : state) {
    const double t0 = NowUs();
    (void)dense->Invoke();
    const double t1 = NowUs();
    (void)pruned->Invoke();
    const double t2 = NowUs();
    run_sparse();
    benchmark::ClobberMemory();
    const double t3 = NowUs();
    dense_us += t1 - t0;
    runtime_us += t2 - t1;
    sparse_us += t3 - t2;
    ++iterations;
  }
  const double d = dense_us / iterations, r = runtime_us / iterations, s = sparse_us / iterations;
  state.counters["dense_us"] = d;
  state.counters["runtime_us"] = r;
  state.counters["sparse_us"] = s;
  state.counters["speedup"] = d / r;
  state.counters["sparse_x"] = d / s;
  state.counters["chosen"] = pruned_variant.find("sparse") != std::string::npos ? 1 : 0;
  state.SetLabel(pruned_variant + " vs " + dense_variant);
}

void Shapes(benchmark::internal::Benchmark* b) {
  // {op, M, N, K}: FC layers (M = batch) and MobileNet-style 1x1 convolutions (M = pixels).
  const int shapes[][4] = {
      {0, 1, 1001, 256},  // MobileNet v1 0.25 classifier
      {0, 1, 640, 128},   // toycar autoencoder layer
      {0, 1, 1024, 1024},
      {0, 8, 1024, 1024},
      {0, 32, 512, 512},  // batched FC
      {1, 3136, 32, 32},  // 56x56 pointwise
      {1, 196, 128, 128},
      {1, 49, 256, 256},
      {1, 196, 512, 512},
      {1, 2304, 64, 16},  // 48x48 pointwise of MediaPipe's face_detection_full_range_sparse
      {1, 576, 128, 32},  // its 24x24 pointwise
      {1, 784, 64, 64},   // 28x28 pointwise
  };
  for (const auto& s : shapes)
    for (int sparsity : {0, 50, 60, 70, 80, 85, 90, 95}) b->Args({s[0], s[1], s[2], s[3], sparsity});
}

BENCHMARK(BM_RuntimeSparseVsDense)
    ->Apply(Shapes)
    ->ArgNames({"conv", "M", "N", "K", "sparsity"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace edgeopt
