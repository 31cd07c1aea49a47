// Float32 GEMM / indirect GEMM / depthwise microbenchmarks on MobileNet layer shapes.
// Counters: GFLOPS (2 flops per multiply-add) and pct_peak, the share of this core's FMA peak
// measured in-process with bench/peak_avx2.cc's loop, scaled by what the AVX-512 loop does more
// (on Zen 4 the same number of flops: one zmm multiply-add per cycle and port instead of two ymm;
// on Zen 5 twice as many).
// 1-thread cases are timed in CPU time, and so is their peak (bench/micro/peak_cpu_avx2.cc, the
// same loop): on a loaded machine wall time counts the time a thread was descheduled. 2-thread
// cases ("/2t" names) are timed in wall time against twice the wall-time peak (best of five),
// so expect them to be noisy.
//
//   build/bench/edgeopt_kernel_bench --benchmark_filter=F32 --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/quant_utils.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/gemm/gemm.h"
#include "peak.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace edgeopt::bench {
double PeakFp32FmaAvx2CpuTime();  // bench/micro/peak_cpu_avx2.cc
}  // namespace edgeopt::bench

namespace edgeopt::kernels {
namespace {

// The core's float peak: the AVX2 loop's, times how much more the AVX-512 loop does where zmm run
// at full width (Zen 5: 2x; Zen 4: 1x; from wall-time runs of both loops).
double PeakFlops(bool cpu_time) {
  static const double wide_factor = [] {
    if (!rt::Cpu().has_avx512()) return 1.0;
    double avx2 = 0, avx512 = 0;
    for (int i = 0; i < 3; ++i) {
      avx2 = std::max(avx2, bench::PeakFp32FmaAvx2());
      avx512 = std::max(avx512, bench::PeakFp32FmaAvx512());
    }
    // The hardware ratio is 1 or 2; rounding keeps a noisy wall-time reading from scaling the peak.
    return avx2 > 0 && avx512 > 1.5 * avx2 ? 2.0 : 1.0;
  }();
  static const double cpu_peak = [] {
    if (!rt::Cpu().has_avx2_fma()) return 0.0;
    double best = 0;
    for (int i = 0; i < 3; ++i) best = std::max(best, bench::PeakFp32FmaAvx2CpuTime());
    return best * wide_factor;
  }();
  static const double wall_peak = [] {
    if (!rt::Cpu().has_avx2_fma()) return 0.0;
    double best = 0;
    for (int i = 0; i < 5; ++i) best = std::max(best, bench::PeakFp32FmaAvx2());
    return best * wide_factor;
  }();
  return cpu_time ? cpu_peak : wall_peak;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void SetCounters(benchmark::State& state, double flops_per_iter, int threads) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double peak = PeakFlops(threads == 1) * threads;
  if (peak > 0)
    state.counters["pct_peak"] =
        benchmark::Counter(flops_per_iter * 100.0 / peak, benchmark::Counter::kIsIterationInvariantRate);
}

// Kernel family argument: 0 scalar, 1 AVX2, 2 AVX-512. Null (and a skip message) when this CPU
// (after the EDGEOPT_CPU cap) lacks it.
const gemm::Ukernels* Family(benchmark::State& state, int64_t isa) {
  if (isa == 2 && !rt::Cpu().has_avx512()) state.SkipWithError("no AVX-512");
  if (isa == 1 && !rt::Cpu().has_avx2_fma()) state.SkipWithError("no AVX2");
  if (state.error_occurred()) return nullptr;
  // AVX-512: the tiles tuned for this core (cores splitting zmm in halves, or full width).
  return isa == 2 ? &gemm::SelectUkernels(rt::Cpu(), gemm::kAvx512MinK) : isa == 1 ? &gemm::Avx2Ukernels() : &gemm::ScalarUkernels();
}

// Args: M, K, N, threads, isa (0 scalar, 1 AVX2, 2 AVX-512 tiles, 3 the family a 1×1
// convolution of this shape gets: SelectPointwiseUkernels, e.g. the k-pair tiles).
void BM_GemmF32(benchmark::State& state) {
  const size_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const gemm::Ukernels* family = state.range(4) == 3 ? &gemm::SelectPointwiseUkernels(rt::Cpu(), k, n)
                                                     : Family(state, state.range(4));
  if (!family) return;
  const gemm::Ukernels& uk = *family;
  state.SetLabel(uk.isa);
  auto a = Random(m * k, 1), w = Random(n * k, 2), bias = Random(n, 3);
  std::vector<float> c(m * n);
  const gemm::PackedB packed = gemm::PackNKFor(uk, w.data(), bias.data(), static_cast<int>(n), static_cast<int>(k));
  rt::ThreadPool pool(threads);
  for (auto _ : state) {
    gemm::Gemm(uk, &pool, m, a.data(), k, packed, c.data(), n, {0.0f, 6.0f});
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, 2.0 * m * n * k, threads);
}

// MobileNetV2 1×1 convolutions (M = pixels, K = in channels, N = out channels), plus the
// classifier GEMV and MobileNetV1 0.25's widest pointwise layers.
void GemmShapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::vector<int64_t>> shapes = {
      {112 * 112, 32, 16}, {112 * 112, 16, 96}, {56 * 56, 24, 144}, {56 * 56, 144, 24}, {28 * 28, 192, 32},
      {14 * 14, 384, 64},  {14 * 14, 96, 576},  {14 * 14, 576, 96}, {7 * 7, 960, 160},  {7 * 7, 320, 1280},
      {1, 1280, 1001},     {112 * 112, 8, 16},  {28 * 28, 64, 64},  {7 * 7, 256, 256},
      {33 * 33, 512, 256}, {33 * 33, 480, 160},  // DeepLabV3 ASPP / projection
  };
  for (const auto& s : shapes) {
    for (int64_t isa : {1, 2}) b->Args({s[0], s[1], s[2], 1, isa});
    if (s[2] % 32 >= 1 && s[2] % 32 <= 24) b->Args({s[0], s[1], s[2], 1, 3});  // the k-pair family
  }
  b->Args({56 * 56, 24, 144, 1, 0});
  b->Args({7 * 7, 320, 1280, 1, 0});
  b->ArgNames({"M", "K", "N", "thr", "isa"});
}
void GemmShapes2t(benchmark::internal::Benchmark* b) {
  for (const auto& s : std::vector<std::vector<int64_t>>{{112 * 112, 16, 96}, {56 * 56, 24, 144}, {14 * 14, 96, 576},
                                                         {7 * 7, 320, 1280}, {1, 1280, 1001}})
    for (int64_t isa : {1, 2}) b->Args({s[0], s[1], s[2], 2, isa});
  b->ArgNames({"M", "K", "N", "thr", "isa"});
  b->UseRealTime();
}
BENCHMARK(BM_GemmF32)->Apply(GemmShapes);
BENCHMARK(BM_GemmF32)->Name("BM_GemmF32/2t")->Apply(GemmShapes2t);

// First-layer 3×3 stride-2 convolution as an indirect GEMM. Args: H=W, Cin, Cout, threads,
// im2col, isa.
void BM_IgemmF32Conv3x3s2(benchmark::State& state) {
  const gemm::Ukernels* family = Family(state, state.range(5));
  if (!family) return;
  const int h = static_cast<int>(state.range(0)), cin = static_cast<int>(state.range(1));
  const int cout = static_cast<int>(state.range(2)), threads = static_cast<int>(state.range(3));
  const gemm::Ukernels& uk = *family;
  const int oh = ComputeOutSize(0 /*SAME*/, h, 3, 2), ow = oh;
  int off;
  const int pad = ComputePadding(2, 1, h, 3, oh, &off);
  auto in = Random(static_cast<size_t>(h) * h * cin, 1), w = Random(static_cast<size_t>(cout) * 9 * cin, 2);
  std::vector<float> zero(cin, 0.0f), out(static_cast<size_t>(oh) * ow * cout);
  const gemm::PackedB packed = gemm::PackedB::FromNK(w.data(), nullptr, cout, 9 * cin);
  const size_t m = static_cast<size_t>(oh) * ow;
  std::vector<const float*> ind(gemm::IndirectionSize(m, 9, uk.mr));
  for (size_t tile = 0; tile * uk.mr < m; ++tile)
    for (int r = 0; r < uk.mr; ++r) {
      const size_t p = std::min(m - 1, tile * uk.mr + r);
      const int oy = static_cast<int>(p / ow), ox = static_cast<int>(p % ow);
      for (int t = 0; t < 9; ++t) {
        const int iy = oy * 2 - pad + t / 3, ix = ox * 2 - pad + t % 3;
        ind[(tile * 9 + t) * uk.mr + r] =
            iy < 0 || iy >= h || ix < 0 || ix >= h ? zero.data() : in.data() + (static_cast<size_t>(iy) * h + ix) * cin;
      }
    }
  rt::ThreadPool pool(threads);
  const bool im2col = state.range(4) != 0;
  // The alternative measured against the indirect GEMM: per tile of 6 output pixels, copy their
  // 9·Cin inputs into a small buffer (tiled im2col) and run the direct GEMM micro-kernel on it.
  std::vector<float> tile(static_cast<size_t>(uk.mr) * 9 * cin);
  for (auto _ : state) {
    if (!im2col) {
      gemm::IGemm(uk, &pool, m, 9, ind.data(), packed, out.data(), cout, {0.0f, 6.0f});
    } else {
      for (size_t t = 0; t * uk.mr < m; ++t) {
        const size_t mr = std::min<size_t>(uk.mr, m - t * uk.mr);
        for (size_t r = 0; r < mr; ++r)
          for (int tap = 0; tap < 9; ++tap)
            std::memcpy(&tile[(r * 9 + tap) * cin], ind[(t * 9 + tap) * uk.mr + r], cin * sizeof(float));
        uk.gemm(mr, cout, 9 * cin, tile.data(), 9 * cin, packed.panel(0), packed.panel_stride(), packed.bias(),
                out.data() + t * uk.mr * cout, cout, {0.0f, 6.0f});
      }
    }
    benchmark::ClobberMemory();
  }
  SetCounters(state, 2.0 * m * cout * 9 * cin, threads);
}
// Last argument: 0 indirect GEMM (what CONV_2D uses), 1 tiled im2col + GEMM (for comparison).
BENCHMARK(BM_IgemmF32Conv3x3s2)
    ->Args({224, 3, 32, 1, 0, 1})
    ->Args({224, 3, 32, 1, 1, 1})
    ->Args({224, 3, 32, 1, 0, 2})
    ->Args({224, 3, 8, 1, 0, 1})
    ->Args({224, 3, 8, 1, 1, 1})
    ->Args({224, 3, 8, 1, 0, 2})
    ->Args({56, 32, 64, 1, 0, 1})
    ->Args({56, 32, 64, 1, 1, 1})
    ->Args({56, 32, 64, 1, 0, 2})
    ->ArgNames({"H", "Cin", "Cout", "thr", "im2col", "isa"});
BENCHMARK(BM_IgemmF32Conv3x3s2)
    ->Name("BM_IgemmF32Conv3x3s2/2t")
    ->Args({224, 3, 32, 2, 0, 1})
    ->Args({224, 3, 32, 2, 0, 2})
    ->ArgNames({"H", "Cin", "Cout", "thr", "im2col", "isa"})
    ->UseRealTime();

// Depthwise 3×3 / 5×5 SAME. Args: H=W, C, K, stride, threads, isa (1 AVX2, 2 AVX-512), dilation.
void BM_DwConvF32(benchmark::State& state) {
  if (!Family(state, state.range(5))) return;
  const bool avx512 = state.range(5) == 2;
  const int block = avx512 ? dwconv::kAvx512ChannelBlock : dwconv::kAvx2ChannelBlock;
  dwconv::Geometry g;
  g.batch = 1;
  g.h = g.w = static_cast<int>(state.range(0));
  g.c = static_cast<int>(state.range(1));
  g.kh = g.kw = static_cast<int>(state.range(2));
  g.sh = g.sw = static_cast<int>(state.range(3));
  g.dh = g.dw = static_cast<int>(state.range(6));
  const int threads = static_cast<int>(state.range(4));
  g.oh = g.ow = ComputeOutSize(0 /*SAME*/, g.h, g.kh, g.sh, g.dh);
  int off;
  g.pad_top = g.pad_left = ComputePadding(g.sh, g.dh, g.h, g.kh, g.oh, &off);
  auto in = Random(static_cast<size_t>(g.h) * g.w * g.c, 1), w = Random(static_cast<size_t>(g.kh) * g.kw * g.c, 2);
  auto bias = Random(g.c, 3);
  const AlignedFloats packed = dwconv::PackWeights(w.data(), bias.data(), g.kh, g.kw, g.c, block);
  std::vector<float> out(static_cast<size_t>(g.oh) * g.ow * g.c);
  rt::ThreadPool pool(threads);
  const int cbs = dwconv::ChannelBlocks(g.c, block);
  const auto rows = avx512 ? dwconv::RowsAvx512 : dwconv::RowsAvx2;
  for (auto _ : state) {
    pool.ParallelFor(g.oh, 1, [&](int64_t r0, int64_t r1) {
      rows(g, in.data(), packed.data(), out.data(), static_cast<int>(r0), static_cast<int>(r1), 0, cbs, {0.0f, 6.0f});
    });
    benchmark::ClobberMemory();
  }
  SetCounters(state, 2.0 * g.oh * g.ow * g.c * g.kh * g.kw, threads);
}
void DwShapes(benchmark::internal::Benchmark* b) {
  for (const auto& s : std::vector<std::vector<int64_t>>{{112, 32, 3, 1},
                                                         {112, 96, 3, 2},
                                                         {28, 96, 3, 2},
                                                         {56, 144, 3, 1},
                                                         {28, 192, 3, 1},
                                                         {14, 576, 3, 1},
                                                         {7, 960, 3, 1},
                                                         {112, 8, 3, 1},
                                                         {28, 240, 5, 1}})
    for (int64_t isa : {1, 2}) b->Args({s[0], s[1], s[2], s[3], 1, isa, 1});
  b->ArgNames({"H", "C", "K", "s", "thr", "isa", "d"});
}
BENCHMARK(BM_DwConvF32)->Apply(DwShapes);
// DeepLabV3's atrous blocks (MobileNetV2 backbone at output stride 8): dilation 2 and 4.
BENCHMARK(BM_DwConvF32)
    ->Name("BM_DwConvF32/dilated")
    ->Args({33, 480, 3, 1, 1, 2, 2})
    ->Args({33, 480, 3, 1, 1, 2, 4})
    ->Args({33, 480, 3, 1, 1, 2, 1})
    ->Args({33, 288, 3, 1, 1, 2, 2})
    ->ArgNames({"H", "C", "K", "s", "thr", "isa", "d"});
BENCHMARK(BM_DwConvF32)
    ->Name("BM_DwConvF32/2t")
    ->Args({56, 144, 3, 1, 2, 1, 1})
    ->Args({56, 144, 3, 1, 2, 2, 1})
    ->Args({33, 480, 3, 1, 2, 2, 2})
    ->ArgNames({"H", "C", "K", "s", "thr", "isa", "d"})
    ->UseRealTime();

}  // namespace
}  // namespace edgeopt::kernels
