// Sparse vs dense float32 GEMM for FULLY_CONNECTED / 1x1 CONV_2D shapes, measured side by side:
// every benchmark iteration runs the dense AVX2 kernel and the sparse kernel on the same data,
// one after the other (so load on a shared machine hits both alike), and reports
//   dense_us, sparse_us   mean time of one call of each (one thread)
//   speedup               dense_us / sparse_us
//   chosen                1 if the runtime's threshold (PreferSparse) picks the sparse kernel
//   chosen_vs_dense       time of the kernel the runtime would pick / dense time (<= ~1: no slowdown)
//   ref_speedup           (M = 1 only) the scalar reference loop's time / sparse time
//   dense_GFLOPs          the dense kernel's rate (2 M N K / time), to judge the baseline
// Arguments: M (rows: batch, or output pixels), N (output channels), K (input channels), sparsity %.
//   build/bench/edgeopt_kernel_bench --benchmark_filter=SparseVsDense
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>

#include "kernels/fully_connected/sparse_f32.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::sparse {
namespace {

double NowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void BM_SparseVsDense(benchmark::State& state) {
  if (!rt::Cpu().has_avx2_fma()) {
    state.SkipWithError("needs AVX2+FMA");
    return;
  }
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)), k = static_cast<int>(state.range(2));
  const double sparsity = state.range(3) / 100.0;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  std::vector<float> a(static_cast<size_t>(m) * k), w(static_cast<size_t>(n) * k), bias(n), c(static_cast<size_t>(m) * n);
  for (auto& x : a) x = u(rng);
  for (auto& x : bias) x = u(rng);
  for (auto& x : w) x = p(rng) < sparsity ? 0.0f : u(rng);
  const CsrF32 csr = PackCsr(w.data(), n, k);
  const DensePackedF32 dense = PackDense(w.data(), n, k);
  std::vector<float> scratch(Avx2ScratchFloats(k));
  GemmArgs g;
  g.m = m;
  g.a = a.data();
  g.lda = k;
  g.bias = bias.data();
  g.c = c.data();
  g.ldc = n;
  auto run_sparse = [&] {
    if (m <= kSpmvMaxRows) {
      for (int r = 0; r < m; ++r) SpmvAvx2(csr, g, r, 0, n);
    } else {
      SpmmAvx2(csr, g, 0, m, scratch.data());
    }
  };
  auto run_reference = [&] {  // the FULLY_CONNECTED reference kernel's loop
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        const float* x = a.data() + static_cast<size_t>(r) * k;
        const float* wr = w.data() + static_cast<size_t>(j) * k;
        for (int q = 0; q < k; ++q) acc += x[q] * wr[q];
        c[static_cast<size_t>(r) * n + j] = acc + bias[j];
      }
  };
  // Warm up both.
  DenseGemmAvx2(dense, g, 0, m);
  run_sparse();
  double dense_us = 0, sparse_us = 0, ref_us = 0;
  int64_t iterations = 0;
  for (auto _ : state) {
    double t0 = NowUs();
    DenseGemmAvx2(dense, g, 0, m);
    benchmark::ClobberMemory();
    double t1 = NowUs();
    run_sparse();
    benchmark::ClobberMemory();
    double t2 = NowUs();
    dense_us += t1 - t0;
    sparse_us += t2 - t1;
    if (m == 1 && iterations % 8 == 0) {
      run_reference();
      benchmark::ClobberMemory();
      ref_us += (NowUs() - t2) * 8;
    }
    ++iterations;
  }
  const double d = dense_us / iterations, s = sparse_us / iterations;
  const bool chosen = PreferSparse(csr.sparsity(), m, k, SparseKernel::kAvx2);
  state.counters["dense_us"] = d;
  state.counters["sparse_us"] = s;
  state.counters["speedup"] = d / s;
  state.counters["chosen"] = chosen ? 1 : 0;
  state.counters["chosen_vs_dense"] = chosen ? s / d : 1.0;
  if (m == 1) state.counters["ref_speedup"] = (ref_us / iterations) / s;
  state.counters["dense_GFLOPs"] = 2.0 * m * n * k / (d * 1e3);
}

void Shapes(benchmark::internal::Benchmark* b) {
  // {M, N, K}: FULLY_CONNECTED (M = batch) and MobileNet-style 1x1 convolutions (M = pixels).
  const int shapes[][3] = {
      {1, 1001, 256},   // MobileNet v1 0.25 classifier (as FC)
      {1, 640, 128},    // autoencoder layers (toycar)
      {1, 1024, 1024},  // a large FC layer
      {8, 1024, 1024},  // batched FC
      {3136, 32, 32},   // 56x56 pointwise, 32 -> 32
      {784, 64, 64},    // 28x28, 64 -> 64
      {196, 128, 128},  // 14x14, 128 -> 128
      {49, 256, 256},   // 7x7, 256 -> 256
      {196, 512, 512},  // MobileNet v1 1.0, 14x14, 512 -> 512
  };
  for (const auto& s : shapes)
    for (int sparsity : {0, 30, 50, 60, 70, 80, 90, 95}) b->Args({s[0], s[1], s[2], sparsity});
}

BENCHMARK(BM_SparseVsDense)->Apply(Shapes)->ArgNames({"M", "N", "K", "sparsity"})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace edgeopt::kernels::sparse
