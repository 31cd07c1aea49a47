// int32 ADD / SUB / MUL fast path (int32_binary_fast.cc) against the reference kernel, bit for
// bit: same shapes of odd sizes, a scalar on either side, per-channel vectors, general
// broadcasts on both sides, long rows cut into pieces and many short rows over 2 threads,
// every fused activation, values over +-1e9 (so sums and products wrap), AVX-512 and AVX2.
#include <gtest/gtest.h>

#include <random>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

std::vector<int32_t> BroadcastOut(std::vector<int32_t> a, std::vector<int32_t> b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max(a[i], b[i]);
  return a;
}

Graph Binary(tflite::BuiltinOperator op, const std::vector<int32_t>& sa, const std::vector<int32_t>& sb, int act) {
  GraphBuilder g;
  const int32_t x = g.Input("a", DType::kInt32, sa);
  const int32_t y = g.Input("b", DType::kInt32, sb);
  const int32_t z = g.Tensor("out", DType::kInt32, BroadcastOut(sa, sb));
  const auto fused = static_cast<tflite::ActivationFunctionType>(act);
  if (op == tflite::BuiltinOperator_ADD) {
    tflite::AddOptionsT o;
    o.fused_activation_function = fused;
    g.Op(op, {x, y}, {z}, o);
  } else if (op == tflite::BuiltinOperator_SUB) {
    tflite::SubOptionsT o;
    o.fused_activation_function = fused;
    g.Op(op, {x, y}, {z}, o);
  } else {
    tflite::MulOptionsT o;
    o.fused_activation_function = fused;
    g.Op(op, {x, y}, {z}, o);
  }
  g.Output(z);
  return g.Finish();
}

TEST(Int32BinaryFast, MatchesReference) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "no AVX2";
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  using S = std::vector<int32_t>;
  std::vector<std::pair<S, S>> shapes = {
      {{1}, {1}},           {{17}, {17}},         {{3, 5}, {}},           {{}, {2, 7, 9}},
      {{2, 33, 5}, {5}},    {{1, 1, 17}, {1, 17}}, {{3, 1, 5}, {1, 4, 1}}, {{4, 1}, {1, 31}},
      {{2, 40000}, {2, 40000}}, {{70000}, {}},    {{9000, 3}, {1, 3}},    {{1, 48, 48, 1}, {1, 1, 1, 17}},
  };
  std::mt19937 rng(5);
  for (int i = 0; i < 16; ++i) {
    const int rank = std::uniform_int_distribution<int>(1, 5)(rng);
    S a(rank), b(rank);
    for (int d = 0; d < rank; ++d) {
      const int n = std::uniform_int_distribution<int>(1, 9)(rng);
      const int which = std::uniform_int_distribution<int>(0, 2)(rng);
      a[d] = which == 1 ? 1 : n;
      b[d] = which == 2 ? 1 : n;
    }
    shapes.push_back({a, b});
  }
  const tflite::BuiltinOperator ops[] = {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB,
                                         tflite::BuiltinOperator_MUL};
  int k = 0;
  for (const rt::CpuFeatures& cpu : levels)
    for (const auto& [sa, sb] : shapes)
      for (auto op : ops) {
        const int act = k++ % 4;  // NONE, RELU, RELU_N1_TO_1, RELU6
        for (int threads : {1, 2}) {
          testing::FastCheck check;
          check.threads = threads;
          check.cpu = &cpu;
          check.seed = static_cast<uint64_t>(k);
          check.op_type = tflite::EnumNameBuiltinOperator(op);
          check.variant = cpu.has_avx512() ? "/int32/avx512" : "/int32/avx2";
          testing::ExpectFastMatchesReference(Binary(op, sa, sb, act),
                                              std::string(check.op_type) + " " + rt::ShapeToString(sa) + " x " +
                                                  rt::ShapeToString(sb) + " act " + std::to_string(act) + " " +
                                                  check.variant,
                                              check);
        }
      }
}

}  // namespace
}  // namespace edgeopt
