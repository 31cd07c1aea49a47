// The fast variants of PAD / PADV2 (whole rows, pad_rows.cc, AVX-512 and memcpy) and of CONCATENATION's
// requantization (concat_requant_avx512.cc, _avx2.cc) against the reference kernels, bit for bit:
// every element size, ranks 1..5, paddings on any subset of axes (the unpadded tail merged
// into rows), a zero and a non-zero pad value (memset and pattern fills), tensors big enough
// to be split over 2 threads; CONCATENATION of uint8 / int8 / int16 inputs whose scales and
// zero points differ from the output's (scale ratios that hit .5 ties), sizes that are not
// multiples of 16, every axis, 1 and 2 threads.
#include <gtest/gtest.h>

#include <random>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

std::vector<int32_t> RandomShape(std::mt19937& rng, int rank, int max_dim) {
  std::vector<int32_t> s(rank);
  for (auto& d : s) d = std::uniform_int_distribution<int>(1, max_dim)(rng);
  return s;
}

struct PadCase {
  DType type;
  std::vector<int32_t> shape;
  std::vector<int32_t> pads;  // (before, after) per axis
  bool v2 = false;
};

Graph PadGraph(const PadCase& c) {
  GraphBuilder b(3);
  const bool quant = c.type == DType::kInt8 || c.type == DType::kUInt8 || c.type == DType::kInt16;
  std::optional<QuantParams> q;
  if (quant) q = Quant(0.05f, c.type == DType::kInt16 ? 0 : 3);
  const int32_t x = b.Input("x", c.type, c.shape, q);
  const int rank = static_cast<int>(c.shape.size());
  const int32_t p = b.Const<int32_t>("pads", DType::kInt32, {rank, 2}, c.pads);
  std::vector<int32_t> out_shape = c.shape;
  for (int d = 0; d < rank; ++d) out_shape[d] += c.pads[2 * d] + c.pads[2 * d + 1];
  const int32_t y = b.Tensor("y", c.type, out_shape, q);
  if (c.v2) {
    // A constant of 7 whose bytes differ (pattern fill), 0x0707.. for 8-bit types.
    const int32_t v = b.ConstRandom("value", c.type, {}, 7.0, 7.0, q);
    b.Op(tflite::BuiltinOperator_PADV2, {x, p, v}, {y}, tflite::PadV2OptionsT{});
  } else {
    b.Op(tflite::BuiltinOperator_PAD, {x, p}, {y}, tflite::PadOptionsT{});
  }
  b.Output(y);
  return b.Finish();
}

TEST(PadFast, MatchesReference) {
  std::mt19937 rng(11);
  std::vector<PadCase> cases = {
      {DType::kFloat32, {1, 130, 130, 32}, {0, 0, 1, 1, 1, 1, 0, 0}},  // 2 MB: split over threads
      {DType::kFloat32, {1, 64, 64, 24}, {0, 0, 0, 1, 0, 1, 0, 0}, true},
      {DType::kInt8, {1, 57, 31, 3}, {0, 0, 2, 3, 0, 0, 0, 5}},
      {DType::kFloat32, {5}, {0, 0}},
      {DType::kFloat32, {3, 4}, {0, 0, 0, 0}},
      // Channel padding of short rows split over threads: plain stores that run into the next
      // rows must stop at each task's last row (BlazeFace's [1,64,64,24] -> 28).
      {DType::kInt8, {1, 64, 64, 24}, {0, 0, 0, 0, 0, 0, 0, 4}},
      {DType::kUInt8, {1, 150, 150, 3}, {0, 0, 0, 0, 0, 0, 0, 1}},
      {DType::kInt16, {2, 60, 40, 5}, {0, 0, 1, 0, 0, 0, 2, 1}, true},
      {DType::kFloat32, {1, 33, 17, 20}, {0, 0, 1, 1, 2, 2, 3, 5}, true},
  };
  const DType types[] = {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64};
  for (int i = 0; i < 60; ++i) {
    PadCase c;
    c.type = types[i % 6];
    const int rank = std::uniform_int_distribution<int>(1, 5)(rng);
    c.shape = RandomShape(rng, rank, rank <= 2 ? 40 : 9);
    for (int d = 0; d < 2 * rank; ++d)
      c.pads.push_back(std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? std::uniform_int_distribution<int>(1, 4)(rng)
                                                                           : 0);
    c.v2 = i % 3 == 0;
    cases.push_back(c);
  }
  // This CPU's features, and the same without AVX-512 (the memcpy rows).
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  for (const rt::CpuFeatures& cpu : levels)
    for (const PadCase& c : cases)
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.threads = threads;
        check.cpu = &cpu;
        check.op_type = c.v2 ? "PADV2" : "PAD";
        check.variant = cpu.has_avx512() ? "/any/avx512" : "/any/memcpy";
        check.seed = static_cast<uint64_t>(c.shape.size() * 31 + c.pads.size());
        testing::ExpectFastMatchesReference(PadGraph(c),
                                            std::string(c.v2 ? "PADV2 " : "PAD ") + std::string(DTypeName(c.type)) +
                                                " " + rt::ShapeToString(c.shape) + " pads " + rt::ShapeToString(c.pads),
                                            check);
      }
}

struct ConcatCase {
  DType type;
  std::vector<std::vector<int32_t>> shapes;
  int axis;
  std::vector<std::pair<float, int>> in_q;
  std::pair<float, int> out_q;
};

Graph ConcatGraph(const ConcatCase& c) {
  GraphBuilder b(5);
  std::vector<int32_t> ins;
  std::vector<int32_t> out_shape = c.shapes[0];
  out_shape[c.axis] = 0;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    ins.push_back(b.Input(name, c.type, c.shapes[i], Quant(c.in_q[i].first, c.in_q[i].second)));
    out_shape[c.axis] += c.shapes[i][c.axis];
  }
  const int32_t y = b.Tensor("y", c.type, out_shape, Quant(c.out_q.first, c.out_q.second));
  tflite::ConcatenationOptionsT o;
  o.axis = c.axis;
  b.Op(tflite::BuiltinOperator_CONCATENATION, ins, {y}, o);
  b.Output(y);
  return b.Finish();
}

TEST(ConcatFast, RequantizeMatchesReference) {
  if (!rt::Cpu().has_avx2_fma()) GTEST_SKIP() << "no AVX2";
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  std::mt19937 rng(13);
  const DType types[] = {DType::kUInt8, DType::kInt8, DType::kInt16};
  // Scale ratios with exact .5 products (0.5, 1.5, 2.5), ordinary ones, and large/small ones.
  const float ratios[] = {0.5f, 1.5f, 2.5f, 0.37f, 1.0f, 0.0123f, 3.7f, 1.0001f};
  for (int i = 0; i < 48; ++i) {
    ConcatCase c;
    c.type = types[i % 3];
    const int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    const auto base = RandomShape(rng, rank, rank == 1 ? 200 : 19);
    c.axis = std::uniform_int_distribution<int>(0, rank - 1)(rng);
    const int n = std::uniform_int_distribution<int>(1, 5)(rng);
    const int zmax = c.type == DType::kInt16 ? 0 : 20;
    const float out_scale = 0.02f;
    c.out_q = {out_scale, std::uniform_int_distribution<int>(-zmax, zmax)(rng) + (c.type == DType::kUInt8 ? 100 : 0)};
    for (int k = 0; k < n; ++k) {
      auto s = base;
      s[c.axis] = std::uniform_int_distribution<int>(1, rank == 1 ? 200 : 40)(rng);
      c.shapes.push_back(s);
      const bool same = k == 0 && n > 1 && i % 4 == 0;  // some inputs are pure copies
      const int zp = std::uniform_int_distribution<int>(-zmax, zmax)(rng) + (c.type == DType::kUInt8 ? 128 : 0);
      c.in_q.push_back(same ? c.out_q : std::make_pair(out_scale * ratios[(i + k) % 8], zp));
    }
    for (const rt::CpuFeatures& cpu : levels)
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.threads = threads;
        check.cpu = &cpu;
        check.op_type = "CONCATENATION";
        check.variant = cpu.has_avx512() ? "/avx512" : "/avx2";
        check.seed = static_cast<uint64_t>(i + 1);
        testing::ExpectFastMatchesReference(ConcatGraph(c),
                                            "CONCATENATION " + std::string(DTypeName(c.type)) + " case " +
                                                std::to_string(i) + " axis " + std::to_string(c.axis) + check.variant,
                                            check);
      }
  }
}

// Many outer rows: the copy is split between threads (tasks of 64 KB or more); every row, the
// fused clamp and the requantized inputs must come out as the single-threaded reference's.
TEST(ConcatFast, ManyRowsSplitBetweenThreads) {
  struct Case {
    DType type;
    int act;
    std::pair<float, int> in0, in1, out;
  };
  const Case cases[] = {
      {DType::kFloat32, tflite::ActivationFunctionType_RELU6, {0, 0}, {0, 0}, {0, 0}},
      {DType::kFloat32, tflite::ActivationFunctionType_NONE, {0, 0}, {0, 0}, {0, 0}},
      {DType::kInt8, tflite::ActivationFunctionType_NONE, {0.02f, 3}, {0.05f, -7}, {0.02f, 3}},
  };
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      GraphBuilder b(7);
      const bool q = c.type != DType::kFloat32;
      const auto qp = [&](std::pair<float, int> p) {
        return q ? std::optional<QuantParams>(Quant(p.first, p.second)) : std::nullopt;
      };
      const int32_t x0 = b.Input("x0", c.type, {2, 45, 37, 24}, qp(c.in0));
      const int32_t x1 = b.Input("x1", c.type, {2, 45, 37, 41}, qp(c.in1));
      const int32_t y = b.Tensor("y", c.type, {2, 45, 37, 65}, qp(c.out));
      tflite::ConcatenationOptionsT o;
      o.axis = 3;
      o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
      b.Op(tflite::BuiltinOperator_CONCATENATION, {x0, x1}, {y}, o);
      b.Output(y);
      testing::FastCheck check;
      check.threads = threads;
      check.op_type = "CONCATENATION";
      check.variant = "concatenation/";
      testing::ExpectFastMatchesReference(b.Finish(),
                                          "CONCATENATION " + std::string(DTypeName(c.type)) + " act " +
                                              std::to_string(c.act) + " threads " + std::to_string(threads),
                                          check);
    }
}

// Inputs all copied as they are in rows of 64 bytes or fewer (few channels on the last axis):
// the AVX-512 short-row copy (".../avx512"), rows whose plain stores spill into the next rows
// and masked stores at the output's end: 1 to 5 inputs of 1 to 16 float32 / int32 values or 1
// to 64 int8 / uint8 values per row, an inner axis after the concatenated one, a fused RELU6
// on float32; a 65-byte row and a requantized input keep the other paths (checked).
TEST(ConcatFast, ShortRowsMatchReference) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512: short rows are copied one memcpy each";
  std::mt19937 rng(17);
  struct Case {
    DType type;
    std::vector<int32_t> widths;
    std::vector<int32_t> lead;  // dimensions before the concatenated axis
    int32_t inner;              // values after it (1: the last axis)
    bool requantize;
    const char* variant;
  };
  const Case cases[] = {
      {DType::kFloat32, {3, 3}, {1, 64, 64}, 1, false, "concatenation/any/avx512"},
      {DType::kFloat32, {1, 16, 5}, {2, 7, 9}, 1, false, "concatenation/any/avx512"},
      {DType::kInt32, {2, 4, 1, 3, 6}, {37}, 1, false, "concatenation/any/avx512"},
      {DType::kFloat32, {2, 3}, {5, 6}, 2, false, "concatenation/any/avx512"},
      {DType::kInt8, {1, 64, 5}, {3, 11}, 1, false, "concatenation/int8/avx512"},
      {DType::kUInt8, {7, 9}, {50}, 1, false, "concatenation/uint8/avx512"},
      {DType::kUInt8, {65, 3}, {20}, 1, false, "concatenation/uint8/ref"},
      {DType::kInt8, {4, 4}, {20}, 1, true, "concatenation/int8/avx512"},
  };
  int k = 0;
  for (const Case& c : cases)
    for (int act : {0, 3}) {
      if (act && c.type != DType::kFloat32) continue;
      GraphBuilder b(5);
      std::vector<int32_t> ins;
      const int axis = static_cast<int>(c.lead.size());
      std::vector<int32_t> out_shape = c.lead;
      out_shape.push_back(0);
      if (c.inner > 1) out_shape.push_back(c.inner);
      const bool quant = c.type == DType::kInt8 || c.type == DType::kUInt8;
      for (size_t i = 0; i < c.widths.size(); ++i) {
        std::vector<int32_t> shape = c.lead;
        shape.push_back(c.widths[i]);
        if (c.inner > 1) shape.push_back(c.inner);
        const float scale = c.requantize && i == 1 ? 0.03f : 0.02f;
        ins.push_back(quant ? b.Input("x" + std::to_string(i), c.type, shape, Quant(scale, 3))
                            : b.Input("x" + std::to_string(i), c.type, shape));
        out_shape[static_cast<size_t>(axis)] += c.widths[i];
      }
      const int32_t y = quant ? b.Tensor("y", c.type, out_shape, Quant(0.02f, 3)) : b.Tensor("y", c.type, out_shape);
      tflite::ConcatenationOptionsT o;
      o.axis = axis;
      o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(act);
      b.Op(tflite::BuiltinOperator_CONCATENATION, ins, {y}, o);
      b.Output(y);
      testing::FastCheck check;
      check.threads = 1 + k % 2;
      check.op_type = "CONCATENATION";
      check.variant = c.variant;
      check.seed = static_cast<uint64_t>(rng());
      ++k;
      testing::ExpectFastMatchesReference(b.Finish(), std::string("CONCATENATION short rows ") + c.variant, check);
    }
}

}  // namespace
}  // namespace edgeopt
