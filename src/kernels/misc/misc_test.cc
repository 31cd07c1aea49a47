// The misc family (SPARSE_TO_DENSE, UNIQUE, FAKE_QUANT) against TFLite 2.9 over seeded shapes,
// types and options, plus hand-checked cases where TFLite 2.9 is undefined or stricter, and
// error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::Bytes;
using testing::CaseRng;
using testing::ExpectConforms;
using testing::OneOpGraph;
using testing::Opts;
using testing::QSpec;
using testing::Spec;
using testing::TensorSpec;
using testing::TensorValue;
using testing::TypeLabel;
using testing::Value;

std::string ShapeLabel(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

// Expects our run of `g` on `inputs` to fail with a message containing `needle`.
void ExpectOursFails(const Graph& g, const std::vector<TensorValue>& inputs, const std::string& needle,
                     const std::string& label) {
  const Status s = testing::RunOurs(g, inputs);
  EXPECT_FALSE(s.ok()) << label << ": accepted";
  EXPECT_NE(s.message().find(needle), std::string::npos) << label << ": " << s.ToString();
}

// int32 or int64 values as bytes of type `t`.
std::vector<uint8_t> IndexBytes(DType t, const std::vector<int64_t>& v) {
  if (t == DType::kInt64) return Bytes(v);
  return Bytes(std::vector<int32_t>(v.begin(), v.end()));
}

// ---------------------------------------------------------------- SPARSE_TO_DENSE

struct S2D {
  TensorSpec indices;             // rank 0, 1 or 2
  std::vector<int64_t> idx;       // flattened index values
  DType shape_type = DType::kInt32;
  std::vector<int64_t> out_dims;  // output_shape values
  bool shape_const = true;
  TensorSpec values;              // rank 0 or 1
  TensorValue values_v;
  std::vector<uint8_t> def;       // default value bytes (constant)
  bool validate = false;
};

Graph SparseToDenseGraph(const S2D& c) {
  tflite::SparseToDenseOptionsT o;
  o.validate_indices = c.validate;
  std::vector<int32_t> out_shape(c.out_dims.begin(), c.out_dims.end());
  TensorSpec out = c.values;
  out.shape = out_shape;
  TensorSpec def = c.values;
  def.shape = {};
  return OneOpGraph(tflite::BuiltinOperator_SPARSE_TO_DENSE,
                    {c.indices, Spec(c.shape_type, {static_cast<int32_t>(c.out_dims.size())}), c.values, def}, {out},
                    Opts(o), {{}, c.shape_const ? IndexBytes(c.shape_type, c.out_dims) : std::vector<uint8_t>{}, {}, c.def});
}

std::vector<TensorValue> SparseToDenseInputs(const S2D& c) {
  std::vector<TensorValue> in;
  TensorValue idx;
  idx.type = c.indices.type;
  idx.shape = c.indices.shape;
  idx.data = IndexBytes(c.indices.type, c.idx);
  in.push_back(idx);
  if (!c.shape_const) {
    TensorValue s;
    s.type = c.shape_type;
    s.shape = {static_cast<int32_t>(c.out_dims.size())};
    s.data = IndexBytes(c.shape_type, c.out_dims);
    in.push_back(s);
  }
  in.push_back(c.values_v);
  return in;
}

std::vector<uint8_t> DefaultBytes(DType t) {
  switch (t) {
    case DType::kFloat32: return Bytes(std::vector<float>{-2.5f});
    case DType::kInt32: return Bytes(std::vector<int32_t>{-7});
    case DType::kInt64: return Bytes(std::vector<int64_t>{int64_t{3} << 40});
    case DType::kInt8: return Bytes(std::vector<int8_t>{-128});
    default: return Bytes(std::vector<uint8_t>{200});
  }
}

TensorSpec ValueSpec(DType t, std::vector<int32_t> shape) {
  if (t == DType::kInt8) return QSpec(t, std::move(shape), 0.05f, -3);
  if (t == DType::kUInt8) return QSpec(t, std::move(shape), 0.05f, 128);
  return Spec(t, std::move(shape));
}

// A seeded case: n distinct (or, with `dupes`, possibly repeated) in-range coordinates of an
// output of `dims`, in random order.
S2D RandomS2D(CaseRng& rng, DType vt, DType it, const std::vector<int64_t>& dims, int n, bool rank2, bool dupes) {
  S2D c;
  c.out_dims = dims;
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> flat(static_cast<size_t>(total));
  std::iota(flat.begin(), flat.end(), 0);
  std::shuffle(flat.begin(), flat.end(), rng.engine());
  const int d = static_cast<int>(dims.size());
  for (int i = 0; i < n; ++i) {
    int64_t f = dupes ? flat[static_cast<size_t>(rng.Int(0, static_cast<int>(std::min<int64_t>(total, 3)) - 1))]
                      : flat[static_cast<size_t>(i)];
    std::vector<int64_t> coord(static_cast<size_t>(d));
    for (int j = d - 1; j >= 0; --j) {
      coord[static_cast<size_t>(j)] = f % dims[static_cast<size_t>(j)];
      f /= dims[static_cast<size_t>(j)];
    }
    c.idx.insert(c.idx.end(), coord.begin(), coord.end());
  }
  c.indices = rank2 ? Spec(it, {n, d}) : Spec(it, {n});
  c.values = ValueSpec(vt, {n});
  c.values_v = testing::RandomValue(c.values, rng.engine(), vt == DType::kFloat32 ? -1.0 : -1e12, vt == DType::kFloat32 ? 1.0 : 1e12);
  c.def = DefaultBytes(vt);
  return c;
}

const std::vector<DType>& S2DValueTypes() {
  static const std::vector<DType> t = {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kInt8, DType::kUInt8};
  return t;
}

std::string S2DLabel(const S2D& c) {
  return "SPARSE_TO_DENSE values " + TypeLabel(c.values.type) + " " + ShapeLabel(c.values.shape) + " indices " +
         TypeLabel(c.indices.type) + " " + ShapeLabel(c.indices.shape) + " output " + testing::ShapeText(
             std::vector<int32_t>(c.out_dims.begin(), c.out_dims.end())) +
         " shape " + TypeLabel(c.shape_type) + (c.shape_const ? " const" : " runtime") +
         (c.validate ? " validate" : "");
}

TEST(MiscConformance, SparseToDenseVectorIndices) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(101);
  for (DType vt : S2DValueTypes())
    for (DType it : {DType::kInt32, DType::kInt64})
      for (int64_t len : {1, 5, 17})
        for (bool shape_const : {true, false}) {
          const int n = rng.Int(0, static_cast<int>(len));
          S2D c = RandomS2D(rng, vt, it, {len}, n, false, false);
          c.shape_type = rng.Bool() ? DType::kInt32 : DType::kInt64;
          c.shape_const = shape_const;
          c.validate = rng.Bool();
          ExpectConforms(SparseToDenseGraph(c), S2DLabel(c), testing::ExactOptions(), SparseToDenseInputs(c));
        }
}

TEST(MiscConformance, SparseToDenseMatrixIndices) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(102);
  const std::vector<std::vector<int64_t>> dims = {{4}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}, {1, 6}, {5, 1}, {3, 0}, {0}};
  for (DType vt : S2DValueTypes())
    for (const auto& d : dims)
      for (bool shape_const : {true, false}) {
        int64_t total = 1;
        for (int64_t x : d) total *= x;
        const int n = rng.Int(0, static_cast<int>(total));
        const bool dupes = total > 0 && n > 1 && rng.Int(0, 3) == 0;  // repeated index: last value wins
        S2D c = RandomS2D(rng, vt, rng.Bool() ? DType::kInt32 : DType::kInt64, d, n, true, dupes);
        c.shape_type = rng.Bool() ? DType::kInt32 : DType::kInt64;
        c.shape_const = shape_const;
        c.validate = rng.Bool();
        ExpectConforms(SparseToDenseGraph(c), S2DLabel(c) + (dupes ? " dupes" : ""), testing::ExactOptions(),
                       SparseToDenseInputs(c));
      }
}

// A scalar value: TFLite 2.9 accepts it only with exactly one index.
TEST(MiscConformance, SparseToDenseScalarValueOneIndex) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(103);
  for (DType vt : S2DValueTypes())
    for (bool rank2 : {false, true}) {
      const std::vector<int64_t> dims = rank2 ? std::vector<int64_t>{3, 2, 2} : std::vector<int64_t>{6};
      S2D c = RandomS2D(rng, vt, DType::kInt32, dims, 1, rank2, false);
      c.values = ValueSpec(vt, {});
      c.values_v = testing::RandomValue(c.values, rng.engine(), -100, 100);
      c.shape_const = rng.Bool();
      ExpectConforms(SparseToDenseGraph(c), S2DLabel(c), testing::ExactOptions(), SparseToDenseInputs(c));
    }
}

// Where TFLite 2.9 is undefined or refuses (so no oracle): a scalar value broadcast to several
// indices (TensorFlow's semantics; 2.9's check refuses it), rank-0 indices (2.9 reads a
// dimension the tensor does not have), and an output of rank 5 (2.9 stops at 4).
TEST(MiscConformance, SparseToDenseHandChecked) {
  {  // scalar value, three indices into [2, 3]
    S2D c;
    c.indices = Spec(DType::kInt32, {3, 2});
    c.idx = {0, 1, 1, 2, 1, 0};
    c.out_dims = {2, 3};
    c.values = Spec(DType::kFloat32, {});
    c.values_v = Value(c.values, std::vector<float>{4.5f});
    c.def = Bytes(std::vector<float>{-1.f});
    auto r = testing::RunOursValues(SparseToDenseGraph(c), SparseToDenseInputs(c));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].shape, (std::vector<int32_t>{2, 3}));
    EXPECT_EQ(ValuesOf<float>((*r)[0]), (std::vector<float>{-1, 4.5f, -1, 4.5f, -1, 4.5f}));
    if (testing::Tflite29Available()) {
      EXPECT_TRUE(testing::Tflite29Rejects(SparseToDenseGraph(c), SparseToDenseInputs(c))) << "2.9 now broadcasts";
    }
  }
  {  // rank-0 index, int64 values, run-time int64 shape
    S2D c;
    c.indices = Spec(DType::kInt64, {});
    c.idx = {3};
    c.shape_type = DType::kInt64;
    c.out_dims = {5};
    c.shape_const = false;
    c.values = Spec(DType::kInt64, {});
    c.values_v = Value(c.values, std::vector<int64_t>{int64_t{1} << 50});
    c.def = Bytes(std::vector<int64_t>{9});
    auto r = testing::RunOursValues(SparseToDenseGraph(c), SparseToDenseInputs(c));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(ValuesOf<int64_t>((*r)[0]), (std::vector<int64_t>{9, 9, 9, int64_t{1} << 50, 9}));
  }
  {  // rank-5 output, two indices, repeated index keeps the last value
    S2D c;
    c.indices = Spec(DType::kInt32, {3, 5});
    c.idx = {1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1};
    c.out_dims = {2, 1, 2, 1, 2};
    c.values = Spec(DType::kInt32, {3});
    c.values_v = Value(c.values, std::vector<int32_t>{5, 6, 7});
    c.def = Bytes(std::vector<int32_t>{0});
    auto r = testing::RunOursValues(SparseToDenseGraph(c), SparseToDenseInputs(c));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(ValuesOf<int32_t>((*r)[0]), (std::vector<int32_t>{6, 0, 0, 0, 0, 0, 0, 7}));
    if (testing::Tflite29Available()) {
      EXPECT_TRUE(testing::Tflite29Rejects(SparseToDenseGraph(c), SparseToDenseInputs(c))) << "2.9 now takes rank 5";
    }
  }
}

TEST(MiscConformance, SparseToDenseErrors) {
  auto base = [] {
    S2D c;
    c.indices = Spec(DType::kInt32, {2, 2});
    c.idx = {0, 1, 2, 0};
    c.out_dims = {3, 2};
    c.values = Spec(DType::kFloat32, {2});
    c.values_v = Value(c.values, std::vector<float>{1, 2});
    c.def = Bytes(std::vector<float>{0});
    return c;
  };
  {
    S2D c = base();
    c.idx = {0, 1, 3, 0};
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "index 1 [3,0] is outside the output shape [3,2]",
                    "row past the end");
  }
  {
    S2D c = base();
    c.idx = {0, -1, 1, 0};
    c.shape_const = false;
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "index 0 [0,-1] is outside", "negative column");
  }
  {
    S2D c = base();
    c.out_dims = {3, -2};
    c.shape_const = false;
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "output_shape [3,-2] has an invalid dimension",
                    "negative output dimension");
  }
  {
    S2D c = base();
    c.values = Spec(DType::kFloat32, {3});
    c.values_v = Value(c.values, std::vector<float>{1, 2, 3});
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "must hold one value per index (2)",
                    "three values for two indices");
  }
  {
    S2D c = base();
    c.out_dims = {3, 2, 1};
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "have 2 coordinates but output_shape",
                    "coordinates vs output rank");
  }
  {
    S2D c = base();
    c.indices = Spec(DType::kInt32, {1, 2, 2});
    ExpectOursFails(SparseToDenseGraph(c), SparseToDenseInputs(c), "must have rank 0, 1 or 2", "rank-3 indices");
  }
  {  // default value of another type
    S2D c = base();
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SPARSE_TO_DENSE,
                               {c.indices, Spec(DType::kInt32, {2}), c.values, Spec(DType::kInt32, {})},
                               {Spec(DType::kFloat32, {3, 2})}, Opts(tflite::SparseToDenseOptionsT{}),
                               {{}, IndexBytes(DType::kInt32, c.out_dims), {}, Bytes(std::vector<int32_t>{0})});
    ExpectOursFails(g, {SparseToDenseInputs(c)[0], c.values_v}, "must have the type of values", "int32 default");
  }
  {  // float16 values
    S2D c = base();
    const Graph g = OneOpGraph(tflite::BuiltinOperator_SPARSE_TO_DENSE,
                               {c.indices, Spec(DType::kInt32, {2}), Spec(DType::kInt16, {2}), Spec(DType::kInt16, {})},
                               {Spec(DType::kInt16, {3, 2})}, Opts(tflite::SparseToDenseOptionsT{}),
                               {{}, IndexBytes(DType::kInt32, c.out_dims), {}, Bytes(std::vector<int16_t>{0})});
    ExpectOursFails(g, {SparseToDenseInputs(c)[0], Value(Spec(DType::kInt16, {2}), std::vector<int16_t>{1, 2})},
                    "is not supported", "int16 values");
  }
}

// ---------------------------------------------------------------- UNIQUE

// The number of distinct values of `v` (of type `t`), for the graph's declared output shape.
int32_t CountUnique(const TensorValue& v) {
  std::vector<double> x(static_cast<size_t>(v.num_elements()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = v.At(static_cast<int64_t>(i));
  std::sort(x.begin(), x.end());
  return static_cast<int32_t>(std::unique(x.begin(), x.end()) - x.begin());
}

Graph UniqueGraph(const TensorSpec& in, DType idx_type, int32_t m, const std::vector<uint8_t>& constant = {}) {
  tflite::UniqueOptionsT o;
  o.idx_out_type = static_cast<tflite::TensorType>(idx_type);
  TensorSpec y = in;
  y.shape = {m};
  return OneOpGraph(tflite::BuiltinOperator_UNIQUE, {in}, {y, Spec(idx_type, in.shape)}, Opts(o), {constant});
}

TEST(MiscConformance, Unique) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<DType> types = {DType::kFloat32, DType::kInt8,  DType::kUInt8,
                                    DType::kInt16,   DType::kInt32, DType::kInt64};
  CaseRng rng(201);
  for (DType t : types)
    for (int32_t n : {0, 1, 2, 9, 64})
      for (DType idx_type : {DType::kInt32, DType::kInt64}) {
        const bool constant = rng.Bool();
        // Few distinct values (many repeats) or a wide range (mostly distinct).
        const bool repeats = rng.Bool();
        const TensorSpec in = t == DType::kInt8 || t == DType::kUInt8 ? ValueSpec(t, {n})
                              : t == DType::kInt16                    ? QSpec(t, {n}, 0.001f, 0)
                                                                      : Spec(t, {n});
        TensorValue x;
        if (t == DType::kFloat32) {
          std::vector<float> f(static_cast<size_t>(n));
          for (auto& e : f) e = repeats ? static_cast<float>(rng.Int(-3, 3)) * 0.5f : rng.Float(-1, 1);
          x = Value(in, f);
        } else {
          const double lo = repeats ? (t == DType::kUInt8 ? 10 : -3) : -1e12;
          const double hi = repeats ? (t == DType::kUInt8 ? 14 : 3) : 1e12;
          x = testing::RandomValue(in, rng.engine(), lo, hi);
        }
        const Graph g = UniqueGraph(in, idx_type, CountUnique(x), constant ? x.data : std::vector<uint8_t>{});
        std::vector<TensorValue> inputs;
        if (!constant) inputs.push_back(x);
        ExpectConforms(g,
                       "UNIQUE " + TypeLabel(t) + " [" + std::to_string(n) + "] idx " + TypeLabel(idx_type) +
                           (constant ? " const" : " input") + (repeats ? " repeats" : ""),
                       testing::ExactOptions(), inputs);
      }
}

// -0.0 and 0.0 are one value (TFLite's std::map): the first one met is kept.
TEST(MiscConformance, UniqueSignedZeros) {
  SKIP_WITHOUT_ORACLE();
  const TensorSpec in = Spec(DType::kFloat32, {7});
  for (const std::vector<float>& v : {std::vector<float>{-0.0f, 1, 0.0f, 1, -0.0f, 2, 0.0f},
                                      std::vector<float>{0.0f, -0.0f, 3, -0.0f, 3, 0.0f, -1}})
    ExpectConforms(UniqueGraph(in, DType::kInt32, 3), "UNIQUE signed zeros", testing::ExactOptions(), {Value(in, v)});
  // The comparison above is numeric: check the sign of the kept zero by hand.
  auto r = testing::RunOursValues(UniqueGraph(in, DType::kInt32, 3),
                                  {Value(in, std::vector<float>{-0.0f, 1, 0.0f, 1, -0.0f, 2, 0.0f})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::signbit(ValuesOf<float>((*r)[0])[0]));
  EXPECT_EQ(ValuesOf<int32_t>((*r)[1]), (std::vector<int32_t>{0, 1, 0, 1, 0, 2, 0}));
}

// NaN is undefined in TFLite (outside its map's ordering): here each NaN is its own value
// (TensorFlow's Unique), hand-checked.
TEST(MiscConformance, UniqueNaNAndValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const TensorSpec in = Spec(DType::kFloat32, {8});
  auto r = testing::RunOursValues(UniqueGraph(in, DType::kInt64, 6), {Value(in, std::vector<float>{2, nan, 2, -1, nan, -1, 5, 0})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto y = ValuesOf<float>((*r)[0]);
  ASSERT_EQ(y.size(), 6u);
  EXPECT_EQ(y[0], 2.f);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], -1.f);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[4], 5.f);
  EXPECT_EQ(y[5], 0.f);
  EXPECT_EQ(ValuesOf<int64_t>((*r)[1]), (std::vector<int64_t>{0, 1, 0, 2, 3, 2, 4, 5}));
  // int16, run-time input, hand-derived.
  const TensorSpec s = Spec(DType::kInt16, {6});
  auto r2 = testing::RunOursValues(UniqueGraph(s, DType::kInt32, 3),
                                   {Value(s, std::vector<int16_t>{-32768, 7, 7, 32767, -32768, 7})});
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(ValuesOf<int16_t>((*r2)[0]), (std::vector<int16_t>{-32768, 7, 32767}));
  EXPECT_EQ(ValuesOf<int32_t>((*r2)[1]), (std::vector<int32_t>{0, 1, 1, 2, 0, 1}));
}

TEST(MiscConformance, UniqueErrors) {
  std::mt19937_64 rng(7);
  const TensorSpec m = Spec(DType::kFloat32, {2, 3});
  ExpectOursFails(UniqueGraph(m, DType::kInt32, 6), {testing::RandomValue(m, rng, -1, 1)}, "must be a vector",
                  "rank-2 input");
  const TensorSpec v = Spec(DType::kInt32, {4});
  {  // idx tensor int32 but idx_out_type int64
    tflite::UniqueOptionsT o;
    o.idx_out_type = tflite::TensorType_INT64;
    const Graph g = OneOpGraph(tflite::BuiltinOperator_UNIQUE, {v}, {Spec(DType::kInt32, {4}), Spec(DType::kInt32, {4})},
                               Opts(o));
    ExpectOursFails(g, {Value(v, std::vector<int32_t>{1, 2, 1, 3})}, "must have the type of idx_out_type",
                    "idx type mismatch");
  }
  {  // idx_out_type float32
    tflite::UniqueOptionsT o;
    o.idx_out_type = tflite::TensorType_FLOAT32;
    const Graph g = OneOpGraph(tflite::BuiltinOperator_UNIQUE, {v}, {Spec(DType::kInt32, {4}), Spec(DType::kFloat32, {4})},
                               Opts(o));
    ExpectOursFails(g, {Value(v, std::vector<int32_t>{1, 2, 1, 3})}, "idx_out_type float32 is not supported",
                    "float idx");
  }
  const TensorSpec b = Spec(DType::kBool, {3});
  ExpectOursFails(UniqueGraph(b, DType::kInt32, 2), {Value(b, std::vector<uint8_t>{1, 0, 1})}, "is not supported",
                  "bool input");
}

// ---------------------------------------------------------------- FAKE_QUANT

Graph FakeQuantGraph(const std::vector<int32_t>& shape, float min, float max, int bits, bool narrow = false,
                     DType type = DType::kFloat32) {
  tflite::FakeQuantOptionsT o;
  o.min = min;
  o.max = max;
  o.num_bits = bits;
  o.narrow_range = narrow;
  return OneOpGraph(tflite::BuiltinOperator_FAKE_QUANT, {Spec(type, shape)}, {Spec(type, shape)}, Opts(o));
}

TEST(MiscConformance, FakeQuant) {
  SKIP_WITHOUT_ORACLE();
  const std::vector<std::pair<float, float>> ranges = {
      {-1.f, 1.f},   {0.f, 6.f},     {-0.5f, 2.3f},  {-3.1f, 0.2f},   {-6.f, 0.f},
      {0.5f, 1.5f},  {-2.f, -0.5f},  {-1e-3f, 1e-3f}, {-100.f, 37.f}, {-0.01f, 255.f}};
  const std::vector<std::vector<int32_t>> shapes = {{}, {0}, {7}, {2, 3, 4}, {1, 5, 5, 3}};
  CaseRng rng(301);
  for (const auto& [lo, hi] : ranges)
    for (int bits : {1, 2, 4, 7, 8, 10, 16}) {
      const auto& shape = rng.Pick(shapes);
      const float span = hi - lo;
      std::vector<float> x(static_cast<size_t>(std::max<int64_t>(0, [&] {
        int64_t n = 1;
        for (int32_t d : shape) n *= d;
        return n;
      }())));
      // Mostly inside [min, max], some beyond either end.
      for (auto& e : x) e = rng.Float(lo - 0.25f * span, hi + 0.25f * span);
      ExpectConforms(FakeQuantGraph(shape, lo, hi, bits),
                     "FAKE_QUANT [" + std::to_string(lo) + ", " + std::to_string(hi) + "] bits " + std::to_string(bits) +
                         " " + ShapeLabel(shape),
                     testing::ExactOptions(), {Value(Spec(DType::kFloat32, shape), x)});
    }
}

// Inputs on and next to the half steps of the nudged grid (rounding ties), the ends, infinities
// and NaN (TFLite's clamp maps NaN to nudged_min).
TEST(MiscConformance, FakeQuantTiesAndSpecials) {
  SKIP_WITHOUT_ORACLE();
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& [lo, hi, bits] : std::vector<std::tuple<float, float, int>>{
           {-1.f, 1.f, 8}, {0.f, 6.f, 8}, {-0.5f, 2.3f, 3}, {-3.f, 1.f, 2}, {-1.f, 1.f, 16}}) {
    const float qmax = static_cast<float>((1 << bits) - 1);
    const float scale = (hi - lo) / qmax;
    std::vector<float> x = {inf, -inf, std::numeric_limits<float>::quiet_NaN(), lo, hi, 0.f, -0.f};
    for (int k = -2; k <= 6; ++k) {
      const float t = lo + (static_cast<float>(k) + 0.5f) * scale;
      x.push_back(t);
      x.push_back(std::nextafter(t, inf));
      x.push_back(std::nextafter(t, -inf));
    }
    const std::vector<int32_t> shape = {static_cast<int32_t>(x.size())};
    ExpectConforms(FakeQuantGraph(shape, lo, hi, bits),
                   "FAKE_QUANT ties [" + std::to_string(lo) + ", " + std::to_string(hi) + "] bits " + std::to_string(bits),
                   testing::ExactOptions(), {Value(Spec(DType::kFloat32, shape), x)});
  }
}

// narrow_range: TFLite refuses it at Prepare; ours runs TensorFlow's meaning (quantized range
// [1, 2^bits - 1]), checked against hand-derived values.
TEST(MiscConformance, FakeQuantNarrowRangeHandChecked) {
  {
    // [-1, 1], 8 bits: scale 2/254, zero point 128, nudged range exactly [-127, 127] * scale.
    const std::vector<float> x = {-3.f, -1.f, 0.f, 0.3f, 1.f, 2.f};
    const Graph g = FakeQuantGraph({6}, -1.f, 1.f, 8, true);
    auto r = testing::RunOursValues(g, {Value(Spec(DType::kFloat32, {6}), x)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto y = ValuesOf<float>((*r)[0]);
    const double s = 2.0 / 254.0;
    const std::vector<double> want = {-1.0, -1.0, 0.0, 165 * s - 1.0, 1.0, 1.0};  // 0.3: round(1.3 * 127) = 165
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << "x = " << x[i];
    if (testing::Tflite29Available()) {
      EXPECT_TRUE(testing::Tflite29Rejects(g, {Value(Spec(DType::kFloat32, {6}), x)})) << "2.9 now runs narrow_range";
    }
  }
  {
    // [-1, 1], 2 bits narrow: levels 1..3, scale 1, zero point 2: outputs in {-1, 0, 1}.
    const std::vector<float> x = {-0.6f, -0.4f, 0.4f, 0.6f, 5.f};
    auto r = testing::RunOursValues(FakeQuantGraph({5}, -1.f, 1.f, 2, true), {Value(Spec(DType::kFloat32, {5}), x)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(ValuesOf<float>((*r)[0]), (std::vector<float>{-1.f, 0.f, 0.f, 1.f, 1.f}));
  }
  {
    // Without narrow_range, the same [-1, 1] at 8 bits: the zero point from min is 127.5 in exact
    // arithmetic, but 1 / (2/255 in float) is just below it in float, so it rounds to 127 and the
    // range nudges to [-127, 128] * 2/255 (what TFLite 2.9 gives too: the [-1, 1] cases above).
    auto r = testing::RunOursValues(FakeQuantGraph({2}, -1.f, 1.f, 8), {Value(Spec(DType::kFloat32, {2}), std::vector<float>{-5.f, 5.f})});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto y = ValuesOf<float>((*r)[0]);
    EXPECT_NEAR(y[0], -127 * 2.0 / 255, 1e-6);
    EXPECT_NEAR(y[1], 128 * 2.0 / 255, 1e-6);
  }
}

TEST(MiscConformance, FakeQuantErrors) {
  const std::vector<float> x = {0.f, 1.f};
  const TensorValue v = Value(Spec(DType::kFloat32, {2}), x);
  ExpectOursFails(FakeQuantGraph({2}, 1.f, 1.f, 8), {v}, "must be finite with min < max", "min == max");
  ExpectOursFails(FakeQuantGraph({2}, 2.f, -1.f, 8), {v}, "must be finite with min < max", "min > max");
  ExpectOursFails(FakeQuantGraph({2}, -std::numeric_limits<float>::infinity(), 1.f, 8), {v}, "must be finite",
                  "infinite min");
  ExpectOursFails(FakeQuantGraph({2}, -3e38f, 3e38f, 8), {v}, "unusable scale", "range overflows");
  ExpectOursFails(FakeQuantGraph({2}, -1.f, 1.f, 0), {v}, "num_bits 0 is outside [1, 16]", "0 bits");
  ExpectOursFails(FakeQuantGraph({2}, -1.f, 1.f, 17), {v}, "num_bits 17 is outside", "17 bits");
  ExpectOursFails(FakeQuantGraph({2}, -1.f, 1.f, 1, true), {v}, "num_bits 1 is outside [2, 16]", "1 bit narrow");
  ExpectOursFails(FakeQuantGraph({2}, -1.f, 1.f, 8, false, DType::kInt32), {Value(Spec(DType::kInt32, {2}), std::vector<int32_t>{0, 1})},
                  "is not supported (float32)", "int32 input");
}

}  // namespace
}  // namespace edgeopt
