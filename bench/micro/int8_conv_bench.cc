// int8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED layers of MobileNetV2 size in the edgeopt
// runtime (one op per model, per-channel int8 weights, RELU6), one thread. Google Benchmark's
// time is the thread's CPU time, so figures stay meaningful on a machine shared with builds.
// Counters: GOP/s (2 ops per MAC) and, on AVX-512 VNNI CPUs, peak% = share of the vpdpbusd peak
// (bench/peak.h, measured once); the chosen kernel variant is in the label. The last argument
// `isa` runs the same layer with this CPU's kernels (0) or capped to AVX2 (1), for side-by-side
// A/B runs in one process.
//   build/bench/edgeopt_kernel_bench --benchmark_filter=Int8
// A/B of kernel variants in one binary: EDGEOPT_CPU=avx2 keeps the AVX2 kernels on an AVX-512
// machine (e.g. depthwise .../avx2/3x3s1 against .../avx512/3x3s1).
#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <random>

#include "int8_one_op.h"
#include "peak.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"

namespace edgeopt {
namespace {

using bench::Kind;
using bench::OneOp;

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// vpdpbusd peak of this core in op/s of thread CPU time (0 without AVX-512 VNNI), measured on
// first use. The probe divides by wall time; on a shared machine the thread is descheduled for
// part of it, so its figure is scaled by wall / CPU time (the benchmarks report CPU time too).
double VnniPeak() {
  static const double peak = [] {
    if (!rt::Cpu().has_avx512_vnni()) return 0.0;
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuSeconds();
    const double p = bench::PeakInt8Avx512Vnni();
    const double cpu = ThreadCpuSeconds() - c0;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    return cpu > 0 ? p * wall / cpu : p;
  }();
  return peak;
}

// Args {h, in_c, out_c, k, stride[, isa]} (square) or, rect, {h, in_c, out_c, kh, stride, w, kw[, isa]}.
void Run(benchmark::State& state, Kind kind, bool rect = false, bool isa_arg = true, bool full_range = false) {
  const int h = static_cast<int>(state.range(0)), in_c = static_cast<int>(state.range(1));
  const int out_c = static_cast<int>(state.range(2)), kh = static_cast<int>(state.range(3));
  const int stride = static_cast<int>(state.range(4));
  const int w = rect ? static_cast<int>(state.range(5)) : h, kw = rect ? static_cast<int>(state.range(6)) : kh;
  double macs = 0;
  auto model = rt::Model::FromGraph(OneOp(kind, h, w, in_c, out_c, kh, kw, stride, &macs, full_range));
  if (!model.ok()) return state.SkipWithError(model.status().ToString().c_str());
  rt::InterpreterOptions o;
  o.num_threads = 1;
  static const rt::CpuFeatures avx2 = rt::CapFeatures(rt::Cpu(), "avx2");
  if (isa_arg && state.range(rect ? 7 : 5) == 1) o.cpu = &avx2;
  auto it = rt::Interpreter::Create(*model, o);
  if (!it.ok() || !(*it)->AllocateTensors().ok()) return state.SkipWithError("cannot create the interpreter");
  std::mt19937_64 rng(3);
  rt::RtTensor* x = (*it)->input(0);
  for (int64_t i = 0; i < x->num_elements(); ++i) x->data_as<int8_t>()[i] = static_cast<int8_t>(rng() % 256 - 128);
  for (auto _ : state) {
    if (!(*it)->Invoke().ok()) return state.SkipWithError("invoke failed");
  }
  for (const auto& op : (*it)->ops()) state.SetLabel(op.variant);
  state.counters["GOP/s"] = benchmark::Counter(2 * macs, benchmark::Counter::kIsIterationInvariantRate);
  if (VnniPeak() > 0)
    state.counters["peak%"] = benchmark::Counter(2 * macs * 100 / VnniPeak(), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Int8Depthwise(benchmark::State& s) { Run(s, Kind::kDepthwise, false, false); }
void BM_Int8DepthwiseRect(benchmark::State& s) { Run(s, Kind::kDepthwise, true, false); }
void BM_Int8Conv(benchmark::State& s) { Run(s, Kind::kConv); }
void BM_Int8ConvRect(benchmark::State& s) { Run(s, Kind::kConv, true); }
void BM_Int8ConvFullRange(benchmark::State& s) { Run(s, Kind::kConv, false, true, true); }
void BM_Int8Fc(benchmark::State& s) { Run(s, Kind::kFc); }

// Each argument list twice: this CPU's kernels (isa 0) and AVX2 only (isa 1).
void Isas(benchmark::internal::Benchmark* b, std::initializer_list<std::vector<int64_t>> shapes) {
  for (const auto& shape : shapes)
    for (int64_t isa : {0, 1}) {
      std::vector<int64_t> args = shape;
      args.push_back(isa);
      b->Args(args);
    }
}

// {h, in_c, out_c, k, stride}: MobileNetV2 layers; depthwise 48x48x96 s2 and 12x12x384 are VWW-96-like.
BENCHMARK(BM_Int8Depthwise)->Args({112, 32, 0, 3, 1})->Args({112, 96, 0, 3, 2})->Args({56, 144, 0, 3, 1})
    ->Args({28, 192, 0, 3, 1})->Args({14, 576, 0, 3, 1})->Args({7, 960, 0, 3, 1})->Args({48, 96, 0, 3, 2})
    ->Args({12, 384, 0, 3, 1})
    // EfficientNet-lite / MobileNetV3-style 5x5 layers.
    ->Args({28, 240, 0, 5, 1})->Args({56, 144, 0, 5, 2})->Args({14, 672, 0, 5, 1})->Args({7, 1152, 0, 5, 1})
    // 8 channels (MobileNetV1 0.25, VWW): 2 pixels per vector.
    ->Args({112, 8, 0, 3, 1})->Args({48, 8, 0, 3, 1})
    // MobileNetV1 0.25 middle layers.
    ->Args({14, 128, 0, 3, 1})->Args({28, 64, 0, 3, 2});
// {h, in_c, 0, kh, stride, w, kw}: DS-CNN (kws) 25x5x64; an odd shape (13x7x40).
BENCHMARK(BM_Int8DepthwiseRect)->Args({25, 64, 0, 3, 1, 5, 3})->Args({13, 40, 0, 3, 1, 7, 3});
// MobileNetV2 layers (the small-K 1x1s 16->96 and 24->144 included); CIFAR ResNet-8's 3x3 convs
// (K = 144, 288, 576), its stride-2 3x3 and its 1x1 stride-2 shortcuts.
BENCHMARK(BM_Int8Conv)->Apply([](auto* b) {
  Isas(b, {{112, 3, 32, 3, 2}, {112, 16, 96, 1, 1}, {56, 144, 24, 1, 1}, {56, 24, 144, 1, 1}, {28, 192, 32, 1, 1},
           {14, 384, 64, 1, 1}, {14, 64, 384, 1, 1}, {7, 960, 160, 1, 1}, {7, 320, 1280, 1, 1}, {224, 3, 32, 3, 2},
           {32, 16, 16, 3, 1}, {16, 32, 32, 3, 1}, {8, 64, 64, 3, 1}, {32, 3, 16, 3, 1}, {32, 16, 32, 3, 2},
           {32, 16, 32, 1, 2}, {16, 32, 64, 1, 2}});
});
// The MobileNetV2 layers whose output stage matters most, quantized as in the real model (no
// clamp left in the VNNI output stage).
BENCHMARK(BM_Int8ConvFullRange)->Apply([](auto* b) {
  Isas(b, {{224, 3, 32, 3, 2}, {112, 32, 16, 1, 1}, {112, 16, 96, 1, 1}, {56, 24, 144, 1, 1}, {56, 144, 24, 1, 1},
           {28, 32, 192, 1, 1}, {14, 64, 384, 1, 1}});
});
// kws_dscnn: the 10x4 stride-2 stem on [1,49,10,1] and the 1x1 64->64 on 25x5 pixels
// ({h, in_c, out_c, kh, stride, w, kw}).
BENCHMARK(BM_Int8ConvRect)->Apply([](auto* b) { Isas(b, {{49, 1, 64, 10, 2, 10, 4}, {25, 64, 64, 1, 1, 5, 1}}); });
BENCHMARK(BM_Int8Fc)->Apply([](auto* b) { Isas(b, {{1, 1280, 1001, 0, 0}, {16, 256, 256, 0, 0}}); });

}  // namespace
}  // namespace edgeopt
