// The index family (TOPK_V2, EMBEDDING_LOOKUP, ONE_HOT, SEGMENT_SUM, UNSORTED_SEGMENT_*,
// BUCKETIZE) against TFLite 2.9, seeded cases over shapes, types, constant and run-time
// arguments, plus error cases.
//
// UNSORTED_SEGMENT_SUM / MAX / MIN / PROD are newer than TFLite 2.9 (its library has no kernel
// for them): they are checked against expected values a plain loop in this file computes, and
// also against LiteRT.js when it is installed. The per-row-scale (per-axis) hybrid
// EMBEDDING_LOOKUP is newer than 2.9 too (2.9 reads only a per-tensor scale): hand-checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::Bytes;
using testing::CaseRng;
using testing::CompareOptions;
using testing::ExpectConforms;
using testing::OneOpGraph;
using testing::Opts;
using testing::QSpec;
using testing::Spec;
using testing::TensorSpec;
using testing::TensorValue;
using testing::TypeLabel;
using testing::Value;

int64_t Count(const std::vector<int32_t>& shape) {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  return n;
}

std::string ShapeLabel(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

// Expects our run of `g` on `inputs` to fail with a message containing `needle`.
void ExpectOursFails(const Graph& g, const std::vector<TensorValue>& inputs, const std::string& needle,
                     const std::string& label) {
  const Status s = testing::RunOurs(g, inputs);
  EXPECT_FALSE(s.ok()) << label << ": accepted";
  EXPECT_NE(s.message().find(needle), std::string::npos) << label << ": " << s.ToString();
}

// ---------------------------------------------------------------- TOPK_V2

Graph TopKGraph(const TensorSpec& in, int32_t k, bool k_constant, int32_t out_k) {
  std::vector<int32_t> out_shape = in.shape;
  out_shape.back() = out_k;
  TensorSpec values = in;
  values.shape = out_shape;
  return OneOpGraph(tflite::BuiltinOperator_TOPK_V2, {in, Spec(DType::kInt32, {})},
                    {values, Spec(DType::kInt32, out_shape)}, Opts(tflite::TopKV2OptionsT{}),
                    {{}, k_constant ? Bytes(std::vector<int32_t>{k}) : std::vector<uint8_t>{}});
}

TEST(IndexConformance, TopKTypesShapesAndK) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<std::vector<int32_t>> shapes = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 9}, {4, 1}, {1, 40}};
  const std::vector<DType> types = {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64};
  CaseRng rng(11);
  for (DType t : types)
    for (const auto& shape : shapes) {
      const int32_t row = shape.back();
      for (int32_t k : {0, 1, row / 2, row}) {
        for (bool k_const : {true, false}) {
          // Small integer ranges make ties (equal values keep the lower index first).
          const bool ties = rng.Bool();
          TensorSpec in = t == DType::kInt8 || t == DType::kUInt8 ? QSpec(t, shape, 0.25f, t == DType::kInt8 ? -3 : 130)
                                                                 : Spec(t, shape);
          const Graph g = TopKGraph(in, k, k_const, k);
          std::vector<TensorValue> inputs;
          const double lo = t == DType::kFloat32 ? -1.0 : (ties ? -3 : (t == DType::kUInt8 ? 0 : -100));
          const double hi = t == DType::kFloat32 ? 1.0 : (ties ? 3 : 100);
          TensorValue x = testing::RandomValue(in, rng.engine(), lo, hi);
          if (t == DType::kUInt8 && ties) x = testing::RandomValue(in, rng.engine(), 128, 131);
          inputs.push_back(x);
          if (!k_const) inputs.push_back(Value(Spec(DType::kInt32, {}), std::vector<int32_t>{k}));
          ExpectConforms(g,
                         "TOPK_V2 " + TypeLabel(t) + " " + ShapeLabel(shape) + " k " + std::to_string(k) +
                             (k_const ? " const" : " runtime") + (ties ? " ties" : ""),
                         testing::ExactOptions(), inputs);
        }
      }
    }
}

TEST(IndexConformance, TopKFloatTies) {
  SKIP_WITHOUT_ORACLE();
  const TensorSpec in = Spec(DType::kFloat32, {2, 8});
  const std::vector<float> v = {1, 3, 3, -0.0f, 0.0f, 3, 1, -2, 5, 5, 5, 5, -1, -1, 7, 5};
  for (int32_t k : {3, 5, 8}) {
    ExpectConforms(TopKGraph(in, k, true, k), "TOPK_V2 float ties k " + std::to_string(k), testing::ExactOptions(),
                   {Value(in, v)});
  }
}

TEST(IndexConformance, TopKErrors) {
  const TensorSpec in = Spec(DType::kFloat32, {2, 4});
  std::mt19937_64 rng(3);
  const TensorValue x = testing::RandomValue(in, rng, -1, 1);
  ExpectOursFails(TopKGraph(in, 5, true, 5), {x}, "k = 5 is outside [0, 4]", "k too large (constant)");
  ExpectOursFails(TopKGraph(in, 0, false, 1), {x, Value(Spec(DType::kInt32, {}), std::vector<int32_t>{-1})},
                  "k = -1 is outside", "negative k (run time)");
  // k of the wrong type.
  const Graph g = OneOpGraph(tflite::BuiltinOperator_TOPK_V2, {in, Spec(DType::kInt64, {})},
                             {Spec(DType::kFloat32, {2, 1}), Spec(DType::kInt32, {2, 1})}, Opts(tflite::TopKV2OptionsT{}),
                             {{}, Bytes(std::vector<int64_t>{1})});
  ExpectOursFails(g, {x}, "must be int32", "int64 k");
  // Scalar input (rank 0).
  const TensorSpec s = Spec(DType::kFloat32, {});
  const Graph gs = OneOpGraph(tflite::BuiltinOperator_TOPK_V2, {s, Spec(DType::kInt32, {})},
                              {Spec(DType::kFloat32, {1}), Spec(DType::kInt32, {1})}, Opts(tflite::TopKV2OptionsT{}),
                              {{}, Bytes(std::vector<int32_t>{1})});
  ExpectOursFails(gs, {Value(s, std::vector<float>{1.f})}, "rank >= 1", "scalar input");
}

// NaN is outside TFLite's ordering (its result depends on its heap order): ours ranks NaN last.
TEST(IndexConformance, TopKNaNRanksLast) {
  const TensorSpec in = Spec(DType::kFloat32, {6});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = testing::RunOursValues(TopKGraph(in, 6, true, 6), {Value(in, std::vector<float>{nan, 2, -1, nan, 2, 0})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto idx = ValuesOf<int32_t>((*out)[1]);
  EXPECT_EQ(idx, (std::vector<int32_t>{1, 4, 5, 2, 0, 3}));
}

// ---------------------------------------------------------------- EMBEDDING_LOOKUP

Graph EmbeddingGraph(int32_t n_ids, const TensorSpec& value, DType out_type, bool value_const,
                     const std::vector<uint8_t>& value_bytes) {
  std::vector<int32_t> out_shape = value.shape;
  out_shape[0] = n_ids;
  TensorSpec out = value;
  out.type = out_type;
  out.shape = out_shape;
  if (out_type != value.type) out.quant.reset();
  return OneOpGraph(tflite::BuiltinOperator_EMBEDDING_LOOKUP, {Spec(DType::kInt32, {n_ids}), value}, {out}, {},
                    {{}, value_const ? value_bytes : std::vector<uint8_t>{}});
}

TensorValue RandomIds(int32_t n, int32_t rows, std::mt19937_64& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& i : ids) i = std::uniform_int_distribution<int32_t>(0, rows - 1)(rng);
  return Value(Spec(DType::kInt32, {n}), ids);
}

TEST(IndexConformance, EmbeddingLookup) {
  SKIP_WITHOUT_ORACLE();
  struct C {
    DType value_type, out_type;
    std::vector<int32_t> shape;
    int32_t n_ids;
  };
  const std::vector<C> cases = {
      {DType::kFloat32, DType::kFloat32, {5, 3}, 4},     {DType::kFloat32, DType::kFloat32, {6, 2, 3}, 7},
      {DType::kFloat32, DType::kFloat32, {1, 17}, 3},    {DType::kFloat32, DType::kFloat32, {4, 2}, 0},
      {DType::kInt8, DType::kInt8, {7, 5}, 6},           {DType::kUInt8, DType::kUInt8, {3, 2, 2}, 5},
      {DType::kInt8, DType::kFloat32, {9, 4}, 6},        {DType::kInt8, DType::kFloat32, {5, 3, 2}, 2},
      {DType::kUInt8, DType::kFloat32, {6, 3}, 4},  // 2.9 reads the uint8 table as int8: so do we
  };
  std::mt19937_64 rng(21);
  int case_no = 0;
  for (const C& c : cases)
    for (bool value_const : {true, false}) {
      ++case_no;
      const bool quant = c.value_type != DType::kFloat32;
      const TensorSpec value = quant ? QSpec(c.value_type, c.shape, 0.037f, c.value_type == DType::kUInt8 ? 128 : 0)
                                     : Spec(c.value_type, c.shape);
      const TensorValue v = testing::RandomValue(value, rng, quant ? -1e9 : -1.0, quant ? 1e9 : 1.0);
      const Graph g = EmbeddingGraph(c.n_ids, value, c.out_type, value_const, v.data);
      std::vector<TensorValue> inputs = {RandomIds(c.n_ids, c.shape[0], rng)};
      if (!value_const) inputs.push_back(v);
      ExpectConforms(g,
                     "EMBEDDING_LOOKUP " + TypeLabel(c.value_type) + " -> " + TypeLabel(c.out_type) + " " +
                         ShapeLabel(c.shape) + " ids " + std::to_string(c.n_ids) + (value_const ? " const" : " input"),
                     testing::ExactOptions(), inputs);
    }
}

// Per-row scales (LiteRT's newer per-axis hybrid table; 2.9 has no such form): value * scale[id].
TEST(IndexConformance, EmbeddingLookupPerRowScales) {
  GraphBuilder b;
  const std::vector<float> scales = {0.5f, 0.25f, 2.0f};
  const std::vector<int8_t> table = {1, -2, 3, 4, -5, 6, 7, 8, -128};
  auto ids = b.Input("ids", DType::kInt32, {4});
  auto value = b.Const<int8_t>("value", DType::kInt8, {3, 3}, table, QuantPerAxis(scales, 0));
  auto out = b.Tensor("out", DType::kFloat32, {4, 3});
  b.Op(tflite::BuiltinOperator_EMBEDDING_LOOKUP, {ids, value}, {out});
  b.Output(out);
  const std::vector<int32_t> id = {2, 0, 1, 2};
  auto r = testing::RunOursValues(b.Finish(), {Value(Spec(DType::kInt32, {4}), id)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto got = ValuesOf<float>((*r)[0]);
  ASSERT_EQ(got.size(), 12u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(got[static_cast<size_t>(i * 3 + j)], table[static_cast<size_t>(id[i] * 3 + j)] * scales[static_cast<size_t>(id[i])])
          << i << "," << j;
}

TEST(IndexConformance, EmbeddingLookupErrors) {
  const TensorSpec value = Spec(DType::kFloat32, {4, 3});
  std::mt19937_64 rng(5);
  const TensorValue v = testing::RandomValue(value, rng, -1, 1);
  const Graph g = EmbeddingGraph(3, value, DType::kFloat32, true, v.data);
  ExpectOursFails(g, {Value(Spec(DType::kInt32, {3}), std::vector<int32_t>{0, 4, 1})}, "ids[1] = 4 is outside [0, 4)",
                  "id past the end");
  ExpectOursFails(g, {Value(Spec(DType::kInt32, {3}), std::vector<int32_t>{-1, 0, 1})}, "ids[0] = -1", "negative id");
  // A rank-1 table.
  const TensorSpec flat = Spec(DType::kFloat32, {4});
  const Graph g1 = OneOpGraph(tflite::BuiltinOperator_EMBEDDING_LOOKUP, {Spec(DType::kInt32, {2}), flat},
                              {Spec(DType::kFloat32, {2})});
  ExpectOursFails(g1, {}, "rank >= 2", "rank-1 value");
  // int8 table to an int32 output.
  const TensorSpec q = QSpec(DType::kInt8, {4, 3}, 0.1f, 0);
  const Graph g2 = OneOpGraph(tflite::BuiltinOperator_EMBEDDING_LOOKUP, {Spec(DType::kInt32, {2}), q},
                              {Spec(DType::kInt32, {2, 3})});
  ExpectOursFails(g2, {Value(Spec(DType::kInt32, {2}), std::vector<int32_t>{0, 1}), testing::RandomValue(q, rng, -9, 9)},
                  "must have the type of value", "int8 -> int32");
}

// ---------------------------------------------------------------- ONE_HOT

Graph OneHotGraph(const TensorSpec& indices, int32_t depth, bool depth_const, DType out_type, int axis,
                  const std::vector<uint8_t>& on, const std::vector<uint8_t>& off) {
  std::vector<int32_t> out_shape = indices.shape;
  const int a = axis == -1 ? static_cast<int>(out_shape.size()) : axis;
  out_shape.insert(out_shape.begin() + a, depth);
  tflite::OneHotOptionsT o;
  o.axis = axis;
  return OneOpGraph(tflite::BuiltinOperator_ONE_HOT,
                    {indices, Spec(DType::kInt32, {}), Spec(out_type, {}), Spec(out_type, {})},
                    {Spec(out_type, out_shape)}, Opts(o),
                    {{}, depth_const ? Bytes(std::vector<int32_t>{depth}) : std::vector<uint8_t>{}, on, off});
}

std::pair<std::vector<uint8_t>, std::vector<uint8_t>> OnOff(DType t) {
  switch (t) {
    case DType::kFloat32: return {Bytes(std::vector<float>{2.5f}), Bytes(std::vector<float>{-0.75f})};
    case DType::kInt32: return {Bytes(std::vector<int32_t>{7}), Bytes(std::vector<int32_t>{-3})};
    case DType::kInt64: return {Bytes(std::vector<int64_t>{int64_t{1} << 40}), Bytes(std::vector<int64_t>{-5})};
    case DType::kInt8: return {Bytes(std::vector<int8_t>{100}), Bytes(std::vector<int8_t>{-128})};
    case DType::kUInt8: return {Bytes(std::vector<uint8_t>{255}), Bytes(std::vector<uint8_t>{3})};
    default: return {Bytes(std::vector<uint8_t>{1}), Bytes(std::vector<uint8_t>{0})};
  }
}

TEST(IndexConformance, OneHot) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<std::vector<int32_t>> shapes = {{}, {5}, {2, 3}, {2, 1, 3}, {0, 3}};
  const std::vector<DType> out_types = {DType::kFloat32, DType::kInt32, DType::kInt64,
                                        DType::kInt8,    DType::kUInt8, DType::kBool};
  CaseRng rng(31);
  for (DType it : {DType::kInt32, DType::kInt64})
    for (const auto& shape : shapes)
      for (int axis = -1; axis <= static_cast<int>(shape.size()); ++axis) {
        const DType ot = rng.Pick(out_types);
        const int32_t depth = rng.Int(0, 5);
        const bool depth_const = rng.Bool();
        const auto [on, off] = OnOff(ot);
        const TensorSpec indices = Spec(it, shape);
        const Graph g = OneHotGraph(indices, depth, depth_const, ot, axis, on, off);
        // Indices from -1 to depth: some out of range on both sides.
        std::vector<TensorValue> inputs = {testing::RandomValue(indices, rng.engine(), -1, depth)};
        if (!depth_const) inputs.push_back(Value(Spec(DType::kInt32, {}), std::vector<int32_t>{depth}));
        // on / off are graph inputs, constants here
        ExpectConforms(g,
                       "ONE_HOT " + TypeLabel(it) + " " + ShapeLabel(shape) + " axis " + std::to_string(axis) + " depth " +
                           std::to_string(depth) + (depth_const ? " const" : " runtime") + " -> " + TypeLabel(ot),
                       testing::ExactOptions(), inputs);
      }
}

TEST(IndexConformance, OneHotEveryOutputType) {
  SKIP_WITHOUT_ORACLE();
  const TensorSpec indices = Spec(DType::kInt32, {3, 4});
  for (DType ot : {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kInt8, DType::kUInt8, DType::kBool}) {
    const auto [on, off] = OnOff(ot);
    std::mt19937_64 rng(41);
    ExpectConforms(OneHotGraph(indices, 4, true, ot, 1, on, off), "ONE_HOT -> " + TypeLabel(ot), testing::ExactOptions(),
                   {testing::RandomValue(indices, rng, -1, 4)});
  }
}

TEST(IndexConformance, OneHotErrors) {
  const TensorSpec indices = Spec(DType::kInt32, {3});
  const auto [on, off] = OnOff(DType::kFloat32);
  const TensorValue idx = Value(indices, std::vector<int32_t>{0, 1, 2});
  // axis -2 is not accepted (only -1 or 0..rank).
  {
    tflite::OneHotOptionsT o;
    o.axis = -2;
    const Graph g = OneOpGraph(tflite::BuiltinOperator_ONE_HOT,
                               {indices, Spec(DType::kInt32, {}), Spec(DType::kFloat32, {}), Spec(DType::kFloat32, {})},
                               {Spec(DType::kFloat32, {3, 3})}, Opts(o), {{}, Bytes(std::vector<int32_t>{3}), on, off});
    ExpectOursFails(g, {idx}, "axis -2 is out of range", "axis -2");
  }
  ExpectOursFails(OneHotGraph(indices, 2, false, DType::kFloat32, -1, on, off),
                  {idx, Value(Spec(DType::kInt32, {}), std::vector<int32_t>{-4})}, "depth -4 is negative", "negative depth");
  // on_value of another type than the output.
  const Graph g = OneOpGraph(tflite::BuiltinOperator_ONE_HOT,
                             {indices, Spec(DType::kInt32, {}), Spec(DType::kInt32, {}), Spec(DType::kFloat32, {})},
                             {Spec(DType::kFloat32, {3, 3})}, Opts(tflite::OneHotOptionsT{}),
                             {{}, Bytes(std::vector<int32_t>{3}), Bytes(std::vector<int32_t>{1}), off});
  ExpectOursFails(g, {idx}, "on_value", "on_value int32 for a float32 output");
}

// ---------------------------------------------------------------- SEGMENT_SUM

std::vector<int32_t> SortedIds(int32_t n, std::mt19937_64& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = i == 0 ? 0 : ids[static_cast<size_t>(i - 1)] + std::uniform_int_distribution<int>(0, 1)(rng);
  return ids;
}

TEST(IndexConformance, SegmentSum) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<std::vector<int32_t>> shapes = {{6}, {6, 3}, {5, 2, 3}, {1, 4}, {9, 1}};
  std::mt19937_64 rng(51);
  for (DType t : {DType::kFloat32, DType::kInt32})
    for (const auto& shape : shapes)
      for (bool ids_const : {true, false}) {
        const std::vector<int32_t> ids = SortedIds(shape[0], rng);
        const int32_t segments = ids.back() + 1;
        std::vector<int32_t> out_shape = shape;
        out_shape[0] = segments;
        const TensorSpec data = Spec(t, shape);
        const TensorSpec id_spec = Spec(DType::kInt32, {shape[0]});
        const Graph g = OneOpGraph(tflite::BuiltinOperator_SEGMENT_SUM, {data, id_spec}, {Spec(t, out_shape)},
                                   Opts(tflite::SegmentSumOptionsT{}), {{}, ids_const ? Bytes(ids) : std::vector<uint8_t>{}});
        std::vector<TensorValue> inputs = {testing::RandomValue(data, rng, t == DType::kFloat32 ? -1.0 : -1000.0,
                                                                t == DType::kFloat32 ? 1.0 : 1000.0)};
        if (!ids_const) inputs.push_back(Value(id_spec, ids));
        ExpectConforms(g, "SEGMENT_SUM " + TypeLabel(t) + " " + ShapeLabel(shape) + (ids_const ? " const ids" : " runtime ids"),
                       testing::ExactOptions(), inputs);
      }
}

TEST(IndexConformance, SegmentSumEmpty) {
  SKIP_WITHOUT_ORACLE();
  for (DType t : {DType::kFloat32, DType::kInt32}) {
    const TensorSpec data = Spec(t, {0, 3});
    const TensorSpec ids = Spec(DType::kInt32, {0});
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SEGMENT_SUM, {data, ids}, {Spec(t, {0, 3})},
                               Opts(tflite::SegmentSumOptionsT{}));
    ExpectConforms(g, "SEGMENT_SUM empty " + TypeLabel(t), testing::ExactOptions(),
                   {Value(data, std::vector<float>{}), Value(ids, std::vector<int32_t>{})});
  }
}

TEST(IndexConformance, SegmentSumErrors) {
  const TensorSpec data = Spec(DType::kFloat32, {4, 2});
  const TensorSpec id_spec = Spec(DType::kInt32, {4});
  const Graph g = OneOpGraph(tflite::BuiltinOperator_SEGMENT_SUM, {data, id_spec}, {Spec(DType::kFloat32, {1, 2})},
                             Opts(tflite::SegmentSumOptionsT{}));
  std::mt19937_64 rng(6);
  const TensorValue d = testing::RandomValue(data, rng, -1, 1);
  ExpectOursFails(g, {d, Value(id_spec, std::vector<int32_t>{1, 1, 2, 2})}, "ids[0] = 1", "not starting at 0");
  ExpectOursFails(g, {d, Value(id_spec, std::vector<int32_t>{0, 0, 2, 2})}, "ids[2] = 2 follows 0", "jump by 2");
  ExpectOursFails(g, {d, Value(id_spec, std::vector<int32_t>{0, 1, 1, 0})}, "ids[3] = 0 follows 1", "decreasing");
  const Graph g2 = OneOpGraph(tflite::BuiltinOperator_SEGMENT_SUM, {data, Spec(DType::kInt32, {3})},
                              {Spec(DType::kFloat32, {1, 2})}, Opts(tflite::SegmentSumOptionsT{}));
  ExpectOursFails(g2, {d, Value(Spec(DType::kInt32, {3}), std::vector<int32_t>{0, 0, 1})}, "leading dimensions",
                  "ids shorter than data");
}

// ---------------------------------------------------------------- UNSORTED_SEGMENT_*

enum class Seg { kSum, kMax, kMin, kProd };

tflite::BuiltinOperator SegOp(Seg s) {
  switch (s) {
    case Seg::kSum: return tflite::BuiltinOperator_UNSORTED_SEGMENT_SUM;
    case Seg::kMax: return tflite::BuiltinOperator_UNSORTED_SEGMENT_MAX;
    case Seg::kMin: return tflite::BuiltinOperator_UNSORTED_SEGMENT_MIN;
    default: return tflite::BuiltinOperator_UNSORTED_SEGMENT_PROD;
  }
}

std::string SegName(Seg s) {
  switch (s) {
    case Seg::kSum: return "UNSORTED_SEGMENT_SUM";
    case Seg::kMax: return "UNSORTED_SEGMENT_MAX";
    case Seg::kMin: return "UNSORTED_SEGMENT_MIN";
    default: return "UNSORTED_SEGMENT_PROD";
  }
}

tflite::BuiltinOptionsUnion SegOptions(Seg s) {
  switch (s) {
    case Seg::kSum: return Opts(tflite::UnsortedSegmentSumOptionsT{});
    case Seg::kMax: return Opts(tflite::UnsortedSegmentMaxOptionsT{});
    case Seg::kMin: return Opts(tflite::UnsortedSegmentMinOptionsT{});
    default: return Opts(tflite::UnsortedSegmentProdOptionsT{});
  }
}

// The plain definition: identity-filled output, rows folded in order, negative ids skipped.
template <typename T>
std::vector<T> ExpectedUnsorted(Seg s, const std::vector<T>& data, const std::vector<int32_t>& ids, int64_t inner,
                                int32_t segments) {
  T init = 0;
  if (s == Seg::kProd) init = 1;
  if (s == Seg::kMax) init = std::numeric_limits<T>::lowest();
  if (s == Seg::kMin) init = std::numeric_limits<T>::max();
  std::vector<T> out(static_cast<size_t>(segments * inner), init);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) continue;
    for (int64_t j = 0; j < inner; ++j) {
      T& o = out[static_cast<size_t>(ids[i] * inner + j)];
      const T x = data[static_cast<size_t>(static_cast<int64_t>(i) * inner + j)];
      if (s == Seg::kSum) o = o + x;
      if (s == Seg::kProd) o = o * x;
      if (s == Seg::kMax) o = std::max(o, x);
      if (s == Seg::kMin) o = std::min(o, x);
    }
  }
  return out;
}

struct SegCase {
  Seg seg;
  DType type;
  std::vector<int32_t> data_shape, ids_shape;
  int32_t segments;
  bool args_const;
};

Graph UnsortedGraph(const SegCase& c, const std::vector<int32_t>& ids) {
  std::vector<int32_t> out_shape = {c.segments};
  for (size_t d = c.ids_shape.size(); d < c.data_shape.size(); ++d) out_shape.push_back(c.data_shape[d]);
  return OneOpGraph(SegOp(c.seg), {Spec(c.type, c.data_shape), Spec(DType::kInt32, c.ids_shape), Spec(DType::kInt32, {})},
                    {Spec(c.type, out_shape)}, SegOptions(c.seg),
                    {{}, c.args_const ? Bytes(ids) : std::vector<uint8_t>{},
                     c.args_const ? Bytes(std::vector<int32_t>{c.segments}) : std::vector<uint8_t>{}});
}

std::vector<SegCase> UnsortedCases() {
  std::vector<SegCase> cases;
  for (Seg s : {Seg::kSum, Seg::kMax, Seg::kMin, Seg::kProd})
    for (DType t : {DType::kFloat32, DType::kInt32}) {
      cases.push_back({s, t, {7}, {7}, 4, true});
      cases.push_back({s, t, {6, 3}, {6}, 5, true});  // the last segment (at least) stays empty
      cases.push_back({s, t, {5, 2, 2}, {5}, 3, true});
      cases.push_back({s, t, {3, 4, 2}, {3, 4}, 6, true});  // two-dimensional ids
      cases.push_back({s, t, {6, 3}, {6}, 5, false});
      cases.push_back({s, t, {3, 4, 2}, {3, 4}, 6, false});
    }
  return cases;
}

template <typename T>
void CheckUnsortedCase(const SegCase& c, std::mt19937_64& rng, const std::string& label) {
  const int64_t n_ids = Count(c.ids_shape);
  int64_t inner = 1;
  for (size_t d = c.ids_shape.size(); d < c.data_shape.size(); ++d) inner *= c.data_shape[d];
  std::vector<int32_t> ids(static_cast<size_t>(n_ids));
  for (auto& i : ids) i = std::uniform_int_distribution<int32_t>(-1, c.segments - 2)(rng);  // -1: skipped
  std::vector<T> data(static_cast<size_t>(Count(c.data_shape)));
  for (auto& x : data) {
    if constexpr (std::is_same_v<T, float>) x = std::uniform_real_distribution<float>(-2, 2)(rng);
    else x = std::uniform_int_distribution<int32_t>(-9, 9)(rng);
  }
  const Graph g = UnsortedGraph(c, ids);
  std::vector<TensorValue> inputs = {Value(Spec(c.type, c.data_shape), data)};
  if (!c.args_const) {
    inputs.push_back(Value(Spec(DType::kInt32, c.ids_shape), ids));
    inputs.push_back(Value(Spec(DType::kInt32, {}), std::vector<int32_t>{c.segments}));
  }
  auto out = testing::RunOursValues(g, inputs);
  ASSERT_TRUE(out.ok()) << label << ": " << out.status().ToString();
  const std::vector<T> want = ExpectedUnsorted<T>(c.seg, data, ids, inner, c.segments);
  EXPECT_EQ(ValuesOf<T>((*out)[0]), want) << label;
  // LiteRT.js returns garbage for outputs it resizes during invoke (seen with run-time ids and
  // num_segments, where our results match the loop above), so only constant arguments go to it.
  if (c.args_const && testing::LiteRtJsAvailable()) {
    CompareOptions o = testing::ExactOptions();
    o.oracle = testing::Oracle::kLiteRtJs;
    ExpectConforms(g, label + " (LiteRT.js)", o, inputs);
  }
}

TEST(IndexConformance, UnsortedSegments) {
  std::mt19937_64 rng(61);
  for (const SegCase& c : UnsortedCases()) {
    const std::string label = SegName(c.seg) + " " + TypeLabel(c.type) + " data " + ShapeLabel(c.data_shape) + " ids " +
                              ShapeLabel(c.ids_shape) + " segments " + std::to_string(c.segments) +
                              (c.args_const ? " const" : " runtime");
    if (c.type == DType::kFloat32) CheckUnsortedCase<float>(c, rng, label);
    else CheckUnsortedCase<int32_t>(c, rng, label);
  }
}

TEST(IndexConformance, UnsortedSegmentErrors) {
  const SegCase c = {Seg::kMax, DType::kFloat32, {4, 2}, {4}, 3, false};
  const Graph g = UnsortedGraph(c, {});
  std::mt19937_64 rng(7);
  const TensorValue d = testing::RandomValue(Spec(DType::kFloat32, {4, 2}), rng, -1, 1);
  const TensorSpec ids = Spec(DType::kInt32, {4});
  ExpectOursFails(g, {d, Value(ids, std::vector<int32_t>{0, 3, 1, 2}), Value(Spec(DType::kInt32, {}), std::vector<int32_t>{3})},
                  "ids[1] = 3 is not below num_segments 3", "id == num_segments");
  ExpectOursFails(g, {d, Value(ids, std::vector<int32_t>{0, 0, 0, 0}), Value(Spec(DType::kInt32, {}), std::vector<int32_t>{-1})},
                  "num_segments -1 is negative", "negative num_segments");
  const SegCase bad = {Seg::kSum, DType::kFloat32, {4, 2}, {2}, 3, false};
  ExpectOursFails(UnsortedGraph(bad, {}),
                  {d, Value(Spec(DType::kInt32, {2}), std::vector<int32_t>{0, 1}), Value(Spec(DType::kInt32, {}), std::vector<int32_t>{3})},
                  "leading dimensions", "ids shorter than data");
  const SegCase i8 = {Seg::kProd, DType::kInt8, {4}, {4}, 3, false};
  ExpectOursFails(UnsortedGraph(i8, {}),
                  {testing::RandomValue(Spec(DType::kInt8, {4}), rng, -3, 3), Value(ids, std::vector<int32_t>{0, 1, 2, 0}),
                   Value(Spec(DType::kInt32, {}), std::vector<int32_t>{3})},
                  "not supported", "int8 data");
}

// ---------------------------------------------------------------- BUCKETIZE

Graph BucketizeGraph(const TensorSpec& in, std::vector<float> boundaries) {
  tflite::BucketizeOptionsT o;
  o.boundaries = std::move(boundaries);
  return OneOpGraph(tflite::BuiltinOperator_BUCKETIZE, {in}, {Spec(DType::kInt32, in.shape)}, Opts(o));
}

TEST(IndexConformance, Bucketize) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<std::vector<float>> boundaries = {
      {0.f}, {-2.f, -0.5f, 0.f, 0.5f, 3.f}, {-1.f, 1.f, 1.f, 2.f}, {-100.f, 16777217.f}};
  const std::vector<std::vector<int32_t>> shapes = {{1}, {7}, {3, 4}, {2, 0}};
  std::mt19937_64 rng(71);
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})
    for (const auto& b : boundaries)
      for (const auto& shape : shapes) {
        const TensorSpec in = Spec(t, shape);
        const bool is_float = t == DType::kFloat32 || t == DType::kFloat64;
        ExpectConforms(BucketizeGraph(in, b),
                       "BUCKETIZE " + TypeLabel(t) + " " + ShapeLabel(shape) + " boundaries " + std::to_string(b.size()),
                       testing::ExactOptions(), {testing::RandomValue(in, rng, is_float ? -3.0 : -3, is_float ? 3.0 : 3)});
      }
  // Values on the boundaries (and integers past float precision).
  const TensorSpec f = Spec(DType::kFloat32, {8});
  ExpectConforms(BucketizeGraph(f, {-1.f, 0.f, 0.f, 2.5f}), "BUCKETIZE float32 on boundaries", testing::ExactOptions(),
                 {Value(f, std::vector<float>{-1.f, -0.0f, 0.f, 2.5f, 2.4999f, -1.0001f, 100.f, -100.f})});
  const TensorSpec i64 = Spec(DType::kInt64, {4});
  ExpectConforms(BucketizeGraph(i64, {16777216.f, 16777218.f}), "BUCKETIZE int64 past float precision",
                 testing::ExactOptions(),
                 {Value(i64, std::vector<int64_t>{16777215, 16777216, 16777217, 16777219})});
}

// An options table without boundaries: TFLite 2.9 refuses it ("boundaries array not provided"),
// and so does an empty vector once written (flatbuffers omits empty vectors). After reading,
// an absent and an empty vector look alike; both mean no boundaries, one bucket: all zeros.
TEST(IndexConformance, BucketizeNoBoundaries) {
  const TensorSpec in = Spec(DType::kInt64, {2, 3});
  auto out = testing::RunOursValues(BucketizeGraph(in, {}), {Value(in, std::vector<int64_t>{-5, 0, 5, 1, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ValuesOf<int32_t>((*out)[0]), std::vector<int32_t>(6, 0));
}

TEST(IndexConformance, BucketizeErrors) {
  const TensorSpec in = Spec(DType::kFloat32, {3});
  const TensorValue x = Value(in, std::vector<float>{0.f, 1.f, 2.f});
  ExpectOursFails(BucketizeGraph(in, {1.f, 0.f}), {x}, "sorted", "unsorted boundaries");
  const TensorSpec i8 = Spec(DType::kInt8, {3});
  ExpectOursFails(BucketizeGraph(i8, {1.f}), {Value(i8, std::vector<int8_t>{0, 1, 2})}, "not supported", "int8 input");
  const Graph no_opts = OneOpGraph(tflite::BuiltinOperator_BUCKETIZE, {in}, {Spec(DType::kInt32, {3})});
  ExpectOursFails(no_opts, {x}, "boundaries", "no options");
}

}  // namespace
}  // namespace edgeopt
