// Sequence family: CUMSUM, DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE, BROADCAST_ARGS, MATRIX_DIAG,
// MATRIX_SET_DIAG against TFLite 2.9 over seeded generated cases (constant and run-time index
// arguments, every option, zero-size tensors), cases beyond 2.9 checked against plain loops, and
// bad arguments giving errors that name the op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::ExpectConforms;
using testing::MakeValue;
using testing::ShapeText;
using testing::TypeLabel;

// An int32 / int64 index tensor: a constant, or a graph input (its value then given at run time).
int32_t IndexTensor(GraphBuilder& b, const std::string& name, DType t, std::vector<int32_t> shape,
                    const std::vector<int64_t>& v, bool constant) {
  if (!constant) return b.Input(name, t, shape);
  if (t == DType::kInt64) return b.Const<int64_t>(name, t, shape, v);
  return b.Const<int32_t>(name, t, shape, std::vector<int32_t>(v.begin(), v.end()));
}

testing::TensorValue IndexValue(const std::string& name, DType t, std::vector<int32_t> shape,
                                const std::vector<int64_t>& v) {
  if (t == DType::kInt64) return MakeValue<int64_t>(name, t, std::move(shape), v);
  return MakeValue<int32_t>(name, t, std::move(shape), std::vector<int32_t>(v.begin(), v.end()));
}

// Random inputs for `g`, with the index input at position `pos` replaced by `v` when it is a
// graph input (`runtime`).
std::vector<testing::TensorValue> InputsWith(const Graph& g, const testing::CompareOptions& o, bool runtime, int pos,
                                             testing::TensorValue v) {
  auto in = testing::RandomInputs(g, o);
  if (runtime) in[pos] = std::move(v);
  return in;
}

// ------------------------------------------------------------------------------------------
TEST(SequenceConformance, Cumsum) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1101);
  const std::vector<DType> types = {DType::kFloat32, DType::kInt32, DType::kInt64};
  for (int iter = 0; iter < 48; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, iter % 12 == 11 ? 0 : 1, 6);
    const int axis = rng.Int(-rank, rank - 1);
    const bool runtime_axis = iter % 4 == 3;
    tflite::CumsumOptionsT opt;
    opt.exclusive = (iter / 3) % 2 == 1;
    opt.reverse = (iter / 6) % 2 == 1;
    GraphBuilder b;
    auto x = b.Input("x", t, shape);
    auto ax = IndexTensor(b, "axis", DType::kInt32, {}, {axis}, !runtime_axis);
    auto y = b.Tensor("y", t, shape);
    b.Op(tflite::BuiltinOperator_CUMSUM, {x, ax}, {y}, opt);
    b.Output(y);
    Graph g = b.Finish();
    auto o = testing::ExactOptions();
    o.seed = 500 + iter;
    // int32 sums of values up to 1e9 overflow: both runtimes wrap.
    auto in = InputsWith(g, o, runtime_axis, 1, IndexValue("axis", DType::kInt32, {}, {axis}));
    ExpectConforms(g,
                   "CUMSUM " + TypeLabel(t) + " " + ShapeText(shape) + " axis " + std::to_string(axis) +
                       (runtime_axis ? " (run time)" : "") + " exclusive " + std::to_string(opt.exclusive) +
                       " reverse " + std::to_string(opt.reverse),
                   o, in);
  }
}

// ------------------------------------------------------------------------------------------
TEST(SequenceConformance, DynamicUpdateSlice) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1202);
  // 2.9 has no bool / uint8 / int16 kernel (checked by hand in DynamicUpdateSliceBeyond29).
  const std::vector<DType> types = {DType::kFloat32, DType::kInt8, DType::kInt32, DType::kInt64};
  for (int iter = 0; iter < 40; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 6);
    std::vector<int32_t> ushape(rank);
    std::vector<int64_t> start(rank);
    for (int d = 0; d < rank; ++d) {
      // No empty updates here: 2.9's kernel crashes on them (DynamicUpdateSliceBeyond29 has them).
      ushape[d] = rng.Int(1, shape[d]);
      start[d] = rng.Int(-3, shape[d] + 2);  // out-of-range starts are clamped
    }
    const bool runtime = iter % 3 == 2;
    const DType it = DType::kInt32;  // 2.9 has no int64 start indices: DynamicUpdateSliceBeyond29
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("operand", t, shape, q);
    auto u = b.Input("update", t, ushape, q);
    auto s = IndexTensor(b, "start", it, {rank}, start, !runtime);
    auto y = b.Tensor("y", t, shape, q);
    b.Op(tflite::BuiltinOperator_DYNAMIC_UPDATE_SLICE, {x, u, s}, {y}, tflite::DynamicUpdateSliceOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto o = testing::ExactOptions();
    o.seed = 700 + iter;
    auto in = InputsWith(g, o, runtime, 2, IndexValue("start", it, {rank}, start));
    std::vector<int32_t> start32(start.begin(), start.end());
    ExpectConforms(g,
                   "DYNAMIC_UPDATE_SLICE " + TypeLabel(t) + " " + ShapeText(shape) + " update " + ShapeText(ushape) +
                       " start " + TypeLabel(it) + " " + ShapeText(start32) + (runtime ? " (run time)" : ""),
                   o, in);
  }
}

// Beyond TFLite 2.9 (no bool / uint8 / int16 operands, no int64 start indices there, so no oracle):
// against a plain per-element loop, with starts far outside the operand (clamped).
TEST(SequenceKernels, DynamicUpdateSliceBeyond29) {
  CaseRng rng(1212);
  const std::vector<DType> types = {DType::kBool, DType::kUInt8, DType::kInt16, DType::kFloat32, DType::kInt64};
  const std::vector<int64_t> far = {std::numeric_limits<int64_t>::min(), -(int64_t{1} << 40), int64_t{1} << 33,
                                    std::numeric_limits<int64_t>::max()};
  for (int iter = 0; iter < 30; ++iter) {
    const DType t = types[iter % types.size()];
    const DType it = iter % 3 == 0 ? DType::kInt32 : DType::kInt64;
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 5);
    std::vector<int32_t> ushape(rank);
    std::vector<int64_t> start(rank);
    for (int d = 0; d < rank; ++d) {
      ushape[d] = rng.Int(0, shape[d]);
      start[d] = it == DType::kInt64 && rng.Int(0, 3) == 0 ? rng.Pick(far) : rng.Int(-2, shape[d] + 1);
    }
    const bool runtime = iter % 2 == 1;
    GraphBuilder b;
    auto x = b.Input("operand", t, shape);
    auto u = b.Input("update", t, ushape);
    auto st = IndexTensor(b, "start", it, {rank}, start, !runtime);
    auto y = b.Tensor("y", t, shape);
    b.Op(tflite::BuiltinOperator_DYNAMIC_UPDATE_SLICE, {x, u, st}, {y});
    b.Output(y);
    Graph g = b.Finish();
    testing::CompareOptions o;
    o.seed = 40 + iter;
    auto in = testing::RandomInputs(g, o);
    if (runtime) in[2] = IndexValue("start", it, {rank}, start);
    auto out = testing::RunOursValues(g, in);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    // Expected: operand everywhere, update inside the clamped block.
    const size_t es = in[0].data.size() / std::max<size_t>(1, static_cast<size_t>(in[0].num_elements()));
    std::vector<uint8_t> want = in[0].data;
    std::vector<int64_t> lo(rank);
    for (int d = 0; d < rank; ++d) lo[d] = std::clamp<int64_t>(start[d], 0, shape[d] - ushape[d]);
    for (int64_t i = 0; i < in[1].num_elements(); ++i) {
      int64_t rest = i, at = 0, stride = 1;
      std::vector<int64_t> c(rank);
      for (int d = rank - 1; d >= 0; --d) {
        c[d] = rest % ushape[d];
        rest /= ushape[d];
      }
      for (int d = rank - 1; d >= 0; --d) {
        at += (lo[d] + c[d]) * stride;
        stride *= shape[d];
      }
      std::memcpy(want.data() + at * es, in[1].data.data() + i * es, es);
    }
    EXPECT_EQ((*out)[0].data, want) << "DYNAMIC_UPDATE_SLICE " << TypeLabel(t) << " " << ShapeText(shape) << " update "
                                    << ShapeText(ushape) << " start " << TypeLabel(it) << " case " << iter;
  }
}

// Beyond TFLite 2.9 (its REVERSE_SEQUENCE has no int8 / bool kernel, its MATRIX_DIAG /
// MATRIX_SET_DIAG treat bool as float32): against plain loops.
TEST(SequenceKernels, ByteTypesBeyond29) {
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {2, 4, 3});
    auto l = b.Const<int32_t>("lengths", DType::kInt32, {3}, {4, 0, 2});
    auto y = b.Tensor("y", DType::kInt8, {2, 4, 3});
    tflite::ReverseSequenceOptionsT o;
    o.seq_dim = 1;
    o.batch_dim = 2;
    b.Op(tflite::BuiltinOperator_REVERSE_SEQUENCE, {x, l}, {y}, o);
    b.Output(y);
    std::vector<int8_t> v(24);
    for (int i = 0; i < 24; ++i) v[i] = static_cast<int8_t>(i - 12);
    auto out = testing::RunOursValues(b.Finish(), {MakeValue<int8_t>("x", DType::kInt8, {2, 4, 3}, v)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const int len[3] = {4, 0, 2};
    std::vector<int8_t> want(24);
    for (int p = 0; p < 2; ++p)
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c) want[(p * 4 + s) * 3 + c] = v[(p * 4 + (s < len[c] ? len[c] - 1 - s : s)) * 3 + c];
    EXPECT_EQ(ValuesOf<int8_t>((*out)[0]), want);
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kBool, {2, 3});
    auto y = b.Tensor("y", DType::kBool, {2, 3, 3});
    b.Op(tflite::BuiltinOperator_MATRIX_DIAG, {x}, {y});
    auto m = b.Input("m", DType::kBool, {2, 3, 2});
    auto d = b.Input("d", DType::kBool, {2, 2});
    auto z = b.Tensor("z", DType::kBool, {2, 3, 2});
    b.Op(tflite::BuiltinOperator_MATRIX_SET_DIAG, {m, d}, {z});
    b.Output(y);
    b.Output(z);
    const std::vector<uint8_t> xv = {1, 0, 1, 1, 1, 0}, mv = {1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1}, dv = {0, 0, 1, 1};
    auto out = testing::RunOursValues(b.Finish(), {MakeValue<uint8_t>("x", DType::kBool, {2, 3}, xv),
                                                   MakeValue<uint8_t>("m", DType::kBool, {2, 3, 2}, mv),
                                                   MakeValue<uint8_t>("d", DType::kBool, {2, 2}, dv)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<uint8_t> want_y(18, 0), want_z = mv;
    for (int bt = 0; bt < 2; ++bt) {
      for (int i = 0; i < 3; ++i) want_y[(bt * 3 + i) * 3 + i] = xv[bt * 3 + i];
      for (int i = 0; i < 2; ++i) want_z[(bt * 3 + i) * 2 + i] = dv[bt * 2 + i];
    }
    EXPECT_EQ((*out)[0].data, want_y);
    EXPECT_EQ((*out)[1].data, want_z);
  }
}

// ------------------------------------------------------------------------------------------
TEST(SequenceConformance, ReverseSequence) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1303);
  const std::vector<DType> types = {DType::kFloat32, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64};
  for (int iter = 0; iter < 40; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(2, 4);
    const auto shape = rng.Shape(rank, 1, 5);
    const int seq_dim = rng.Int(0, rank - 1);
    int batch_dim = rng.Int(0, rank - 2);
    if (batch_dim >= seq_dim) ++batch_dim;
    const DType lt = iter % 2 ? DType::kInt64 : DType::kInt32;
    std::vector<int64_t> lengths(shape[batch_dim]);
    for (auto& l : lengths) l = rng.Int(-1, shape[seq_dim]);
    const bool runtime = iter % 3 == 1;
    const auto q = rng.QuantFor(t);
    tflite::ReverseSequenceOptionsT opt;
    opt.seq_dim = seq_dim;
    opt.batch_dim = batch_dim;
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto l = IndexTensor(b, "lengths", lt, {shape[batch_dim]}, lengths, !runtime);
    auto y = b.Tensor("y", t, shape, q);
    b.Op(tflite::BuiltinOperator_REVERSE_SEQUENCE, {x, l}, {y}, opt);
    b.Output(y);
    Graph g = b.Finish();
    auto o = testing::ExactOptions();
    o.seed = 900 + iter;
    auto in = InputsWith(g, o, runtime, 1, IndexValue("lengths", lt, {shape[batch_dim]}, lengths));
    std::vector<int32_t> l32(lengths.begin(), lengths.end());
    ExpectConforms(g,
                   "REVERSE_SEQUENCE " + TypeLabel(t) + " " + ShapeText(shape) + " seq_dim " + std::to_string(seq_dim) +
                       " batch_dim " + std::to_string(batch_dim) + " lengths " + TypeLabel(lt) + " " + ShapeText(l32) +
                       (runtime ? " (run time)" : ""),
                   o, in);
  }
}

// ------------------------------------------------------------------------------------------
TEST(SequenceConformance, BroadcastArgs) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1404);
  for (int iter = 0; iter < 30; ++iter) {
    const DType t = iter % 2 ? DType::kInt64 : DType::kInt32;
    const int rank = rng.Int(0, 5);
    std::vector<int64_t> full(rank);
    for (auto& d : full) d = rng.Int(0, 6);
    auto part = [&](int n) {  // the last n dimensions, some replaced by 1
      std::vector<int64_t> s(full.end() - n, full.end());
      for (auto& d : s)
        if (rng.Int(0, 2) == 0) d = 1;
      return s;
    };
    const auto a = part(rng.Int(0, rank));
    const auto c = part(rank);
    const auto& s0 = iter % 3 ? a : c;
    const auto& s1 = iter % 3 ? c : a;
    const bool runtime = iter % 2 == 0;
    const int n0 = static_cast<int>(s0.size()), n1 = static_cast<int>(s1.size());
    GraphBuilder b;
    auto i0 = IndexTensor(b, "s0", t, {n0}, s0, !runtime);
    auto i1 = IndexTensor(b, "s1", t, {n1}, s1, !runtime);
    auto y = b.Tensor("y", t, {std::max(n0, n1)});
    b.Op(tflite::BuiltinOperator_BROADCAST_ARGS, {i0, i1}, {y});
    b.Output(y);
    Graph g = b.Finish();
    std::vector<testing::TensorValue> in;
    if (runtime) in = {IndexValue("s0", t, {n0}, s0), IndexValue("s1", t, {n1}, s1)};
    std::vector<int32_t> p0(s0.begin(), s0.end()), p1(s1.begin(), s1.end());
    ExpectConforms(g, "BROADCAST_ARGS " + TypeLabel(t) + " " + ShapeText(p0) + " with " + ShapeText(p1) +
                          (runtime ? " (run time)" : ""),
                   testing::ExactOptions(), in);
  }
}

// ------------------------------------------------------------------------------------------
TEST(SequenceConformance, MatrixDiagAndSetDiag) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1505);
  const std::vector<DType> types = {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32,
                                    DType::kInt64};
  for (int iter = 0; iter < 36; ++iter) {
    const DType t = types[iter % types.size()];
    const auto q = rng.QuantFor(t);
    const int lo = iter % 9 == 8 ? 0 : 1;
    {
      const auto shape = rng.Shape(rng.Int(1, 3), lo, 5);
      auto out = shape;
      out.push_back(shape.back());
      GraphBuilder b;
      auto x = b.Input("diag", t, shape, q);
      auto y = b.Tensor("y", t, out, q);
      b.Op(tflite::BuiltinOperator_MATRIX_DIAG, {x}, {y}, tflite::MatrixDiagOptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "MATRIX_DIAG " + TypeLabel(t) + " " + ShapeText(shape));
    }
    {
      const auto shape = rng.Shape(rng.Int(2, 4), lo, 5);
      auto dshape = std::vector<int32_t>(shape.begin(), shape.end() - 2);
      dshape.push_back(std::min(shape[shape.size() - 2], shape.back()));
      GraphBuilder b;
      auto x = b.Input("x", t, shape, q);
      auto d = b.Input("diag", t, dshape, q);
      auto y = b.Tensor("y", t, shape, q);
      b.Op(tflite::BuiltinOperator_MATRIX_SET_DIAG, {x, d}, {y}, tflite::MatrixSetDiagOptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "MATRIX_SET_DIAG " + TypeLabel(t) + " " + ShapeText(shape));
    }
  }
}

// ------------------------------------------------------------------------------------------
// Bad arguments are errors naming the op, never crashes or out-of-bounds accesses.
TEST(SequenceKernels, BadArgumentsAreErrors) {
  auto expect_error = [](const Graph& g, const std::string& op, const std::string& needle,
                         std::vector<testing::TensorValue> in = {}) {
    const Status st = testing::RunOurs(g, std::move(in));
    EXPECT_FALSE(st.ok()) << op;
    EXPECT_NE(st.message().find(op), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  };
  for (bool constant : {true, false}) {  // CUMSUM axis out of range, at prepare or at invoke
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto ax = IndexTensor(b, "axis", DType::kInt32, {}, {2}, constant);
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_CUMSUM, {x, ax}, {y}, tflite::CumsumOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    std::vector<testing::TensorValue> in;
    if (!constant) {
      in = testing::RandomInputs(g, {});
      in[1] = IndexValue("axis", DType::kInt32, {}, {-3});
    }
    expect_error(g, "CUMSUM", "out of range", in);
  }
  {  // CUMSUM on int8
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {4});
    auto ax = IndexTensor(b, "axis", DType::kInt32, {}, {0}, true);
    auto y = b.Tensor("y", DType::kInt8, {4});
    b.Op(tflite::BuiltinOperator_CUMSUM, {x, ax}, {y}, tflite::CumsumOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), "CUMSUM", "int8");
  }
  {  // DYNAMIC_UPDATE_SLICE: update larger than the operand; wrong start count
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto u = b.Input("u", DType::kFloat32, {3, 1});
    auto s = IndexTensor(b, "start", DType::kInt32, {2}, {0, 0}, true);
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_DYNAMIC_UPDATE_SLICE, {x, u, s}, {y});
    b.Output(y);
    expect_error(b.Finish(), "DYNAMIC_UPDATE_SLICE", "larger");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto u = b.Input("u", DType::kFloat32, {1, 1});
    auto s = IndexTensor(b, "start", DType::kInt32, {3}, {0, 0, 0}, true);
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_DYNAMIC_UPDATE_SLICE, {x, u, s}, {y});
    b.Output(y);
    expect_error(b.Finish(), "DYNAMIC_UPDATE_SLICE", "start_indices");
  }
  for (bool constant : {true, false}) {  // REVERSE_SEQUENCE: a length beyond the seq dimension
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 4});
    auto l = IndexTensor(b, "lengths", DType::kInt64, {3}, {1, 5, 2}, constant);
    auto y = b.Tensor("y", DType::kFloat32, {3, 4});
    tflite::ReverseSequenceOptionsT o;
    o.seq_dim = 1;
    o.batch_dim = 0;
    b.Op(tflite::BuiltinOperator_REVERSE_SEQUENCE, {x, l}, {y}, o);
    b.Output(y);
    Graph g = b.Finish();
    std::vector<testing::TensorValue> in;
    if (!constant) {
      in = testing::RandomInputs(g, {});
      in[1] = IndexValue("lengths", DType::kInt64, {3}, {1, 5, 2});
    }
    expect_error(g, "REVERSE_SEQUENCE", "exceeds", in);
  }
  {  // REVERSE_SEQUENCE: seq_dim == batch_dim
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 4});
    auto l = IndexTensor(b, "lengths", DType::kInt32, {3}, {1, 1, 1}, true);
    auto y = b.Tensor("y", DType::kFloat32, {3, 4});
    tflite::ReverseSequenceOptionsT o;
    o.seq_dim = 0;
    o.batch_dim = 0;
    b.Op(tflite::BuiltinOperator_REVERSE_SEQUENCE, {x, l}, {y}, o);
    b.Output(y);
    expect_error(b.Finish(), "REVERSE_SEQUENCE", "seq_dim");
  }
  for (bool constant : {true, false}) {  // BROADCAST_ARGS: incompatible shapes
    GraphBuilder b;
    auto a = IndexTensor(b, "a", DType::kInt32, {2}, {2, 3}, constant);
    auto c = IndexTensor(b, "c", DType::kInt32, {3}, {5, 4, 3}, constant);
    auto y = b.Tensor("y", DType::kInt32, {3});
    b.Op(tflite::BuiltinOperator_BROADCAST_ARGS, {a, c}, {y});
    b.Output(y);
    Graph g = b.Finish();
    std::vector<testing::TensorValue> in;
    if (!constant) in = {IndexValue("a", DType::kInt32, {2}, {2, 3}), IndexValue("c", DType::kInt32, {3}, {5, 4, 3})};
    expect_error(g, "BROADCAST_ARGS", "incompatible", in);
  }
  {  // MATRIX_SET_DIAG: diagonal of the wrong length
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3, 4});
    auto d = b.Input("d", DType::kFloat32, {2, 4});
    auto y = b.Tensor("y", DType::kFloat32, {2, 3, 4});
    b.Op(tflite::BuiltinOperator_MATRIX_SET_DIAG, {x, d}, {y});
    b.Output(y);
    expect_error(b.Finish(), "MATRIX_SET_DIAG", "diagonal");
  }
  {  // MATRIX_DIAG of a scalar
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {});
    auto y = b.Tensor("y", DType::kFloat32, {1, 1});
    b.Op(tflite::BuiltinOperator_MATRIX_DIAG, {x}, {y});
    b.Output(y);
    expect_error(b.Finish(), "MATRIX_DIAG", "rank");
  }
}

}  // namespace
}  // namespace edgeopt
