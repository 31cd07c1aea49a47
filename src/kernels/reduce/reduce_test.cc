// Conformance of MEAN/SUM/REDUCE_* against TFLite 2.9 over generated cases (fixed seeds):
// ranks 1-5, negative and duplicate axes, keep_dims, constant and run-time axes, quantized
// int8/uint8/int16 with equal and different input/output parameters, the 4-D H,W mean paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "graph/builder.h"
#include "runtime/cpu.h"
#include "support/conformance.h"
#include "support/fast_vs_reference.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::ExpectConforms;
using testing::MakeValue;
using testing::ShapeText;
using testing::TypeLabel;

const char* OpName(tflite::BuiltinOperator op) {
  switch (op) {
    case tflite::BuiltinOperator_MEAN: return "MEAN";
    case tflite::BuiltinOperator_SUM: return "SUM";
    case tflite::BuiltinOperator_REDUCE_PROD: return "REDUCE_PROD";
    case tflite::BuiltinOperator_REDUCE_MAX: return "REDUCE_MAX";
    case tflite::BuiltinOperator_REDUCE_MIN: return "REDUCE_MIN";
    case tflite::BuiltinOperator_REDUCE_ANY: return "REDUCE_ANY";
    default: return "REDUCE_ALL";
  }
}

std::vector<int32_t> ReducedShape(const std::vector<int32_t>& shape, const std::vector<int32_t>& axes, bool keep) {
  const int rank = static_cast<int>(shape.size());
  std::vector<char> red(rank, 0);
  for (int a : axes) red[a < 0 ? a + rank : a] = 1;
  std::vector<int32_t> out;
  for (int d = 0; d < rank; ++d) {
    if (!red[d]) out.push_back(shape[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}

// Integer inputs limited to [-range, range] (keeps int32/int64 sums and products meaningful).
std::vector<testing::TensorValue> SmallIntInputs(const Graph& g, int range, uint64_t seed) {
  auto inputs = testing::RandomInputs(g, testing::ExactOptions());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(-range, range);
  for (auto& v : inputs) {
    if (v.type == DType::kInt32) {
      for (size_t i = 0; i < v.data.size(); i += 4) {
        const int32_t x = d(rng);
        std::memcpy(&v.data[i], &x, 4);
      }
    } else if (v.type == DType::kInt64) {
      for (size_t i = 0; i < v.data.size(); i += 8) {
        const int64_t x = d(rng);
        std::memcpy(&v.data[i], &x, 8);
      }
    }
  }
  return inputs;
}

struct ReduceCase {
  tflite::BuiltinOperator op;
  DType type;
  std::vector<int32_t> shape;
  std::vector<int32_t> axes;
  bool keep = false;
  std::optional<QuantParams> in_q, out_q;
  bool runtime_axes = false;
};

void RunCase(const ReduceCase& c, uint64_t seed, testing::CompareOptions o = testing::ExactOptions()) {
  GraphBuilder b;
  auto x = b.Input("x", c.type, c.shape, c.in_q);
  int32_t ax;
  std::vector<testing::TensorValue> extra;
  if (c.runtime_axes) {
    ax = b.Input("axes", DType::kInt32, {static_cast<int32_t>(c.axes.size())});
  } else {
    ax = b.Const<int32_t>("axes", DType::kInt32, {static_cast<int32_t>(c.axes.size())}, c.axes);
  }
  auto y = b.Tensor("y", c.type, ReducedShape(c.shape, c.axes, c.keep), c.out_q);
  tflite::ReducerOptionsT opts;
  opts.keep_dims = c.keep;
  b.Op(c.op, {x, ax}, {y}, opts);
  b.Output(y);
  Graph g = b.Finish();
  auto inputs = SmallIntInputs(g, c.op == tflite::BuiltinOperator_REDUCE_PROD ? 3 : 1000, seed);
  if (c.runtime_axes) inputs[1] = MakeValue<int32_t>("axes", DType::kInt32, {static_cast<int32_t>(c.axes.size())}, c.axes);
  std::string label = std::string(OpName(c.op)) + " " + TypeLabel(c.type) + " " + ShapeText(c.shape) + " axes " +
                      ShapeText(c.axes) + (c.keep ? " keep_dims" : "") + (c.runtime_axes ? " runtime-axes" : "");
  if (c.in_q && c.out_q)
    label += " in(" + std::to_string(c.in_q->scale[0]) + "," + std::to_string(c.in_q->zero_point[0]) + ") out(" +
             std::to_string(c.out_q->scale[0]) + "," + std::to_string(c.out_q->zero_point[0]) + ")";
  o.seed = seed;
  ExpectConforms(g, label, o, inputs);
}

// At most 4 entries: 2.9's MEAN copies the axis list into a 4-entry array (more crash it).
std::vector<int32_t> RandomAxes(CaseRng& rng, int rank) {
  const int n = rng.Int(1, std::min(rank + 1, 4));
  std::vector<int32_t> axes;
  for (int i = 0; i < n; ++i) axes.push_back(rng.Int(-rank, rank - 1));  // may repeat, may be negative
  return axes;
}

std::optional<QuantParams> Q(CaseRng& rng, DType t) { return rng.QuantFor(t); }

TEST(ReduceConformance, FloatAndIntegerTypes) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(11);
  const tflite::BuiltinOperator ops[] = {tflite::BuiltinOperator_MEAN, tflite::BuiltinOperator_SUM,
                                         tflite::BuiltinOperator_REDUCE_PROD, tflite::BuiltinOperator_REDUCE_MAX,
                                         tflite::BuiltinOperator_REDUCE_MIN};
  const DType types[] = {DType::kFloat32, DType::kInt32, DType::kInt64};
  int k = 0;
  for (auto op : ops)
    for (DType t : types)
      for (int iter = 0; iter < 6; ++iter, ++k) {
        ReduceCase c;
        c.op = op;
        c.type = t;
        const int rank = rng.Int(1, 5);
        c.shape = rng.Shape(rank, 1, rank >= 4 ? 4 : 6);
        c.axes = RandomAxes(rng, rank);
        c.keep = rng.Bool();
        c.runtime_axes = iter == 5;
        RunCase(c, 100 + k);
      }
}

TEST(ReduceConformance, QuantizedMean) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(12);
  const DType types[] = {DType::kInt8, DType::kUInt8, DType::kInt16};
  int k = 0;
  for (DType t : types)
    for (int iter = 0; iter < 20; ++iter, ++k) {
      ReduceCase c;
      c.op = tflite::BuiltinOperator_MEAN;
      c.type = t;
      const int kind = iter % 4;  // 0: 4-D H,W keep_dims; 1: 4-D H,W no keep; 2: general; 3: same params
      if (kind <= 1) {
        c.shape = {rng.Int(1, 2), rng.Int(1, 9), rng.Int(1, 9), rng.Int(1, 6)};
        c.axes = rng.Bool() ? std::vector<int32_t>{1, 2} : std::vector<int32_t>{2, 1};
        c.keep = kind == 0;
      } else {
        const int rank = rng.Int(1, 5);
        c.shape = rng.Shape(rank, 1, 5);
        c.axes = RandomAxes(rng, rank);
        c.keep = rng.Bool();
      }
      c.in_q = Q(rng, t);
      c.out_q = kind == 3 ? c.in_q : Q(rng, t);
      c.runtime_axes = iter == 7;
      RunCase(c, 200 + k);
    }
}

TEST(ReduceConformance, QuantizedSumMaxMin) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(13);
  int k = 0;
  for (DType t : {DType::kInt8, DType::kUInt8, DType::kInt16})
    for (auto op : {tflite::BuiltinOperator_SUM, tflite::BuiltinOperator_REDUCE_MAX, tflite::BuiltinOperator_REDUCE_MIN})
      for (int iter = 0; iter < 6; ++iter, ++k) {
        ReduceCase c;
        c.op = op;
        c.type = t;
        const int rank = rng.Int(1, 4);
        c.shape = rng.Shape(rank, 1, 5);
        c.axes = RandomAxes(rng, rank);
        c.keep = rng.Bool();
        c.in_q = Q(rng, t);
        // 2.9 rescales only 8-bit SUM; it requires equal parameters otherwise.
        const bool rescale = op == tflite::BuiltinOperator_SUM && t != DType::kInt16 && iter % 2 == 0;
        c.out_q = rescale ? Q(rng, t) : c.in_q;
        if (rescale) c.out_q->scale[0] *= static_cast<float>(rng.Int(2, 20));  // sums need a wider range
        RunCase(c, 300 + k);
      }
}

TEST(ReduceConformance, QuantizedProd) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(14);
  int k = 0;
  for (DType t : {DType::kInt8, DType::kInt16})
    for (int iter = 0; iter < 10; ++iter, ++k) {
      ReduceCase c;
      c.op = tflite::BuiltinOperator_REDUCE_PROD;
      c.type = t;
      const int rank = rng.Int(1, 3);
      c.shape = rng.Shape(rank, 1, 4);
      c.axes = RandomAxes(rng, rank);
      c.keep = rng.Bool();
      c.in_q = t == DType::kInt8 ? Quant(rng.Float(0.005f, 0.02f), rng.Int(-10, 10)) : Quant(rng.Float(5e-5f, 2e-4f), 0);
      c.out_q = t == DType::kInt8 ? Quant(rng.Float(0.01f, 0.05f), rng.Int(-10, 10)) : Quant(rng.Float(1e-4f, 1e-3f), 0);
      RunCase(c, 400 + k);
    }
}

TEST(ReduceConformance, AnyAll) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(15);
  for (int iter = 0; iter < 12; ++iter) {
    ReduceCase c;
    c.op = iter % 2 ? tflite::BuiltinOperator_REDUCE_ANY : tflite::BuiltinOperator_REDUCE_ALL;
    c.type = DType::kBool;
    const int rank = rng.Int(1, 4);
    c.shape = rng.Shape(rank, 1, 3);
    c.axes = RandomAxes(rng, rank);
    c.keep = rng.Bool();
    RunCase(c, 500 + iter);
  }
}

// Configurations from real models: global average pooling as MEAN over H,W (MobileNet,
// EfficientNet heads) in float, int8 and uint8; MEAN over a sequence (text classifiers).
TEST(ReduceConformance, RealModelPatterns) {
  SKIP_WITHOUT_ORACLE();
  std::vector<ReduceCase> cases;
  for (bool keep : {true, false}) {
    cases.push_back({tflite::BuiltinOperator_MEAN, DType::kFloat32, {1, 7, 7, 64}, {1, 2}, keep, std::nullopt, std::nullopt});
    cases.push_back({tflite::BuiltinOperator_MEAN, DType::kInt8, {1, 7, 7, 64}, {1, 2}, keep, Quant(0.0235f, -128),
                     Quant(0.0102f, -128)});
    cases.push_back({tflite::BuiltinOperator_MEAN, DType::kUInt8, {1, 10, 10, 48}, {1, 2}, keep, Quant(0.0235f, 0),
                     Quant(0.0188f, 0)});
  }
  cases.push_back({tflite::BuiltinOperator_MEAN, DType::kFloat32, {1, 256, 16}, {1}, false, std::nullopt, std::nullopt});
  cases.push_back({tflite::BuiltinOperator_MEAN, DType::kInt8, {2, 50, 24}, {1}, true, Quant(0.05f, 3), Quant(0.02f, -1)});
  uint64_t seed = 600;
  for (const auto& c : cases) RunCase(c, seed++);
}

// Beyond 2.9 (which rejects these): int64 axes, REDUCE_MAX/MIN and int16 SUM with other output
// parameters, quantized uint8 REDUCE_PROD. Checked against float math on dequantized values.
TEST(ReduceExtensions, MatchFloatMath) {
  struct C {
    tflite::BuiltinOperator op;
    DType type;
    QuantParams in_q, out_q;
    int max_lsb;
  };
  const C cases[] = {
      {tflite::BuiltinOperator_REDUCE_MAX, DType::kInt8, Quant(0.05f, 3), Quant(0.08f, -10), 1},
      {tflite::BuiltinOperator_REDUCE_MIN, DType::kUInt8, Quant(0.02f, 130), Quant(0.03f, 120), 1},
      {tflite::BuiltinOperator_SUM, DType::kInt16, Quant(1e-3f, 0), Quant(8e-3f, 0), 1},
      {tflite::BuiltinOperator_REDUCE_PROD, DType::kUInt8, Quant(0.01f, 128), Quant(0.002f, 128), 3},
  };
  for (const C& c : cases) {
    GraphBuilder b;
    auto x = b.Input("x", c.type, {3, 4}, c.in_q);
    auto ax = b.Const<int64_t>("axes", DType::kInt64, {1}, {-1});
    auto y = b.Tensor("y", c.type, {3}, c.out_q);
    b.Op(c.op, {x, ax}, {y}, tflite::ReducerOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto inputs = testing::RandomInputs(g, testing::ExactOptions());
    auto out = testing::RunOursValues(g, inputs);
    ASSERT_TRUE(out.ok()) << OpName(c.op) << ": " << out.status().ToString();
    const auto& in = inputs[0];
    const double qmin = c.type == DType::kInt8 ? -128 : c.type == DType::kUInt8 ? 0 : -32768;
    const double qmax = c.type == DType::kInt8 ? 127 : c.type == DType::kUInt8 ? 255 : 32767;
    for (int r = 0; r < 3; ++r) {
      double acc = c.op == tflite::BuiltinOperator_SUM ? 0 : c.op == tflite::BuiltinOperator_REDUCE_PROD ? 1 : NAN;
      for (int k = 0; k < 4; ++k) {
        const double v = (in.At(r * 4 + k) - c.in_q.zero_point[0]) * c.in_q.scale[0];
        if (c.op == tflite::BuiltinOperator_SUM) acc += v;
        if (c.op == tflite::BuiltinOperator_REDUCE_PROD) acc *= v;
        if (c.op == tflite::BuiltinOperator_REDUCE_MAX) acc = k == 0 ? v : std::max(acc, v);
        if (c.op == tflite::BuiltinOperator_REDUCE_MIN) acc = k == 0 ? v : std::min(acc, v);
      }
      const double expect = std::clamp(std::round(acc / c.out_q.scale[0]) + c.out_q.zero_point[0], qmin, qmax);
      EXPECT_LE(std::fabs((*out)[0].At(r) - expect), c.max_lsb) << OpName(c.op) << " " << TypeLabel(c.type) << " row " << r;
    }
  }
}

// float32 SUM / MEAN / REDUCE_MAX / REDUCE_MIN whose reduced dimensions form one run followed by
// >= 16 kept values, or by none (trailing rows), take the AVX-512 loops (".../avx512"): bit-exact with the reference's row-major sums, special values
// included (NaN, infinities, -0); channel counts with tails, above 64 (several register
// blocks), an outer kept dimension, axes given negative, repeated or at run time (planned at the
// invoke), keep_dims either way. Reductions outside the pattern keep the reference (".../ref").
TEST(ReduceKernels, FloatMiddleBlockEqualsTheReference) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: float reductions run the reference loop";
  struct C {
    std::vector<int32_t> shape, axes;
    bool keep, runtime, fast;
  };
  const C cases[] = {
      {{1, 72, 128, 16}, {1, 2}, true, false, true},  {{2, 7, 7, 1152}, {2, 1}, false, false, true},
      {{3, 5, 70}, {1}, false, false, true},          {{4, 6, 5, 17}, {-3, -2}, true, false, true},
      {{2, 3, 4, 5, 16}, {1, 2, 3, 1}, false, false, true}, {{5, 40}, {0}, false, false, true},
      {{1, 9, 9, 200}, {1, 2}, true, true, true},      {{1, 1, 1, 33}, {1, 2}, true, false, true},
      // trailing runs (c = 1: 16 outputs a block, one per lane, transposed 16x16 tiles)
      {{6, 20}, {1}, false, false, true},             {{128, 768}, {-1}, true, false, true},
      {{37, 19}, {1}, false, false, true},            {{3, 5, 7}, {1, 2}, true, false, true},
      {{2, 17, 16}, {2}, false, true, true},          {{1, 1000}, {1}, false, false, true},
      {{4, 6, 5, 17}, {1, 3}, false, false, false},   {{8, 8, 8}, {1}, false, false, false},
      {{20, 6}, {0}, false, false, false},
  };
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> val(-100.0f, 100.0f);
  int k = 0;
  for (const C& c : cases) {
    for (auto op : {tflite::BuiltinOperator_MEAN, tflite::BuiltinOperator_SUM, tflite::BuiltinOperator_REDUCE_MAX,
                    tflite::BuiltinOperator_REDUCE_MIN}) {
      GraphBuilder b;
      auto x = b.Input("x", DType::kFloat32, c.shape);
      const int32_t na = static_cast<int32_t>(c.axes.size());
      auto ax = c.runtime ? b.Input("axes", DType::kInt32, {na}) : b.Const<int32_t>("axes", DType::kInt32, {na}, c.axes);
      auto y = b.Tensor("y", DType::kFloat32, ReducedShape(c.shape, c.axes, c.keep));
      tflite::ReducerOptionsT opts;
      opts.keep_dims = c.keep;
      b.Op(op, {x, ax}, {y}, opts);
      b.Output(y);
      std::vector<float> v(static_cast<size_t>(rt::NumElements(rt::Shape(c.shape.begin(), c.shape.end()))));
      for (float& e : v) e = val(rng);
      if (k % 3 == 1 && v.size() > 40) {
        v[3] = std::numeric_limits<float>::quiet_NaN();
        v[20] = std::numeric_limits<float>::infinity();
        v[37] = -0.0f;
      }
      if (k % 4 == 2) {  // a leading NaN (MAX / MIN skip it), infinities of both signs
        v[0] = std::numeric_limits<float>::quiet_NaN();
        v[v.size() / 2] = -std::numeric_limits<float>::infinity();
        v.back() = std::numeric_limits<float>::infinity();
      }
      testing::FastCheck check;
      check.op_type = OpName(op);
      check.variant = c.fast ? "/float32/avx512" : "/float32/ref";
      check.threads = 1 + k % 2;
      check.inputs = {MakeValue<float>("x", DType::kFloat32, c.shape, v)};
      if (c.runtime) check.inputs.push_back(MakeValue<int32_t>("axes", DType::kInt32, {na}, c.axes));
      ++k;
      EXPECT_TRUE(testing::ExpectFastMatchesReference(b.Finish(), std::string(OpName(op)) + " " + ShapeText(c.shape) +
                                                                      " axes " + ShapeText(c.axes), check));
    }
  }
}

TEST(ReduceKernels, Errors) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 3});
  auto ax = b.Const<int32_t>("axes", DType::kInt32, {1}, {2});
  auto y = b.Tensor("y", DType::kFloat32, {2});
  b.Op(tflite::BuiltinOperator_MEAN, {x, ax}, {y}, tflite::ReducerOptionsT{});
  b.Output(y);
  const Status st = testing::RunOurs(b.Finish());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("MEAN"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("axis 2"), std::string::npos) << st.ToString();

  GraphBuilder b2;
  auto x2 = b2.Input("x", DType::kFloat32, {2, 3});
  auto ax2 = b2.Const<int32_t>("axes", DType::kInt32, {1}, {0});
  auto y2 = b2.Tensor("y", DType::kBool, {3});
  b2.Op(tflite::BuiltinOperator_REDUCE_ANY, {x2, ax2}, {y2}, tflite::ReducerOptionsT{});
  b2.Output(y2);
  const Status st2 = testing::RunOurs(b2.Finish());
  EXPECT_FALSE(st2.ok());
  EXPECT_NE(st2.message().find("REDUCE_ANY"), std::string::npos) << st2.ToString();
}

}  // namespace
}  // namespace edgeopt
