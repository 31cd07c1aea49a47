// Conformance of the transform kernels against TFLite 2.9 over generated cases (fixed seeds),
// plus error cases. Integers and bools bit-exact, floats exact up to 1e-6 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

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
using testing::MovementTypes;
using testing::ShapeText;
using testing::TypeLabel;

std::vector<DType> Except(std::vector<DType> types, std::initializer_list<DType> drop) {
  types.erase(std::remove_if(types.begin(), types.end(),
                             [&](DType t) { return std::find(drop.begin(), drop.end(), t) != drop.end(); }),
              types.end());
  return types;
}

const std::vector<int32_t> kScalar{};

// "x3" (spelled out: GCC 12 warns falsely on "x" + std::to_string(i)).
std::string Indexed(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

// Constant index tensors: 1-D, or of the given shape ({} for a scalar).
int32_t I32Const(GraphBuilder& b, const std::string& name, const std::vector<int32_t>& v, std::vector<int32_t> shape) {
  return b.Const<int32_t>(name, DType::kInt32, std::move(shape), v);
}
int32_t I32Const(GraphBuilder& b, const std::string& name, const std::vector<int32_t>& v) {
  return I32Const(b, name, v, {static_cast<int32_t>(v.size())});
}
int32_t I64Const(GraphBuilder& b, const std::string& name, const std::vector<int64_t>& v, std::vector<int32_t> shape) {
  return b.Const<int64_t>(name, DType::kInt64, std::move(shape), v);
}
int32_t I64Const(GraphBuilder& b, const std::string& name, const std::vector<int64_t>& v) {
  return I64Const(b, name, v, {static_cast<int32_t>(v.size())});
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, Transpose) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(101);
  for (int rank = 1; rank <= 5; ++rank) {  // 2.9 supports 1-D..5-D (edgeopt any rank: see below)
    for (DType t : MovementTypes()) {
      const auto shape = rng.Shape(rank, 1, rank >= 4 ? 3 : 5);
      std::vector<int32_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng.engine());
      std::vector<int32_t> out_shape(rank);
      for (int i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
      GraphBuilder b;
      const auto q = rng.QuantFor(t);
      auto x = b.Input("x", t, shape, q);
      auto p = I32Const(b, "perm", perm);
      auto y = b.Tensor("y", t, out_shape, q);
      b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {y}, tflite::TransposeOptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "TRANSPOSE " + TypeLabel(t) + " " + ShapeText(shape) + " perm " + ShapeText(perm));
    }
  }
}

// TRANSPOSE of 1-, 2- and 4-byte elements as 16x16 tiles on AVX-512 (transpose_avx512.cc), byte for byte
// the reference copy: NCHW <-> NHWC, the last two axes swapped, a batch of them, rank 2 and 5,
// sizes that leave partial tiles on both sides, float32 / int32 / int8 / uint8 / int16, run-time perm (planned at
// the invoke); perms that keep the last axis or give thin tiles keep the row copy (".../ref").
TEST(TransformKernels, TransposeTilesEqualTheReference) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: TRANSPOSE runs the row copy";
  struct C {
    std::vector<int32_t> shape, perm;
    bool tiles;
  };
  const C cases[] = {
      {{1, 19, 23, 37}, {0, 2, 3, 1}, true},  {{2, 17, 5, 33}, {0, 3, 1, 2}, true},
      {{12, 40, 20}, {0, 2, 1}, true},        {{50, 70}, {1, 0}, true},
      {{2, 3, 16, 4, 32}, {4, 1, 0, 3, 2}, true}, {{3, 16, 16}, {2, 0, 1}, true},
      {{4, 5, 6}, {1, 0, 2}, false},          {{64, 3}, {1, 0}, false},
  };
  std::mt19937 rng(61);
  int k = 0;
  for (const C& c : cases)
    for (DType t : {DType::kFloat32, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kInt16})
      for (bool runtime_perm : {false, true}) {
        std::vector<int32_t> out_shape;
        for (int32_t p : c.perm) out_shape.push_back(c.shape[static_cast<size_t>(p)]);
        GraphBuilder b;
        const int32_t x = b.Input("x", t, c.shape);
        const int32_t rank = static_cast<int32_t>(c.perm.size());
        const int32_t perm = runtime_perm ? b.Input("perm", DType::kInt32, {rank})
                                          : b.Const<int32_t>("perm", DType::kInt32, {rank}, c.perm);
        const int32_t y = b.Tensor("y", t, out_shape);
        b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, perm}, {y}, tflite::TransposeOptionsT{});
        b.Output(y);
        const Graph g = b.Finish();
        testing::FastCheck check;
        check.op_type = "TRANSPOSE";
        check.variant = c.tiles ? "transpose/any/avx512" : "transpose/any/ref";
        check.threads = 1 + k++ % 2;
        check.seed = static_cast<uint64_t>(rng());
        if (runtime_perm) {
          check.inputs = testing::RandomInputs(g, testing::ExactOptions());
          check.inputs[1] = testing::MakeValue<int32_t>("perm", DType::kInt32, {rank}, c.perm);
        }
        EXPECT_TRUE(testing::ExpectFastMatchesReference(
            g, "transpose " + std::string(DTypeName(t)) + " " + rt::ShapeToString(rt::Shape(c.shape.begin(), c.shape.end())),
            check));
      }
}

TEST(TransformConformance, TransposeRuntimePerm) {
  SKIP_WITHOUT_ORACLE();
  // perm computed at run time: the output shape is only known during invoke.
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 3, 4});
  auto p = b.Input("perm", DType::kInt32, {3});
  auto y = b.Tensor("y", DType::kFloat32, {4, 2, 3});
  b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {y}, tflite::TransposeOptionsT{});
  b.Output(y);
  Graph g = b.Finish();
  auto inputs = testing::RandomInputs(g, testing::ExactOptions());
  inputs[1] = MakeValue<int32_t>("perm", DType::kInt32, {3}, {2, 0, 1});
  ExpectConforms(g, "TRANSPOSE runtime perm", testing::ExactOptions(), inputs);
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, Concatenation) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(202);
  const auto types = Except(MovementTypes(), {DType::kBool});
  for (int iter = 0; iter < 40; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 5);
    const int n = rng.Int(1, 4);
    const int axis = rng.Int(-rank, rank - 1);
    const int a = axis < 0 ? axis + rank : axis;
    auto base = rng.Shape(rank, 1, 4);
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    std::vector<int32_t> ins;
    auto out_shape = base;
    out_shape[a] = 0;
    std::string label = "CONCATENATION " + TypeLabel(t) + " axis " + std::to_string(axis);
    for (int i = 0; i < n; ++i) {
      auto s = base;
      s[a] = rng.Int(1, 4);
      out_shape[a] += s[a];
      // Inputs are inputs or constants, mixed.
      const std::string name = Indexed("x", i);
      ins.push_back(i % 2 == 1 && rng.Bool() ? b.ConstRandom(name, t, s, -100, 100, q) : b.Input(name, t, s, q));
      label += " ";
      label += ShapeText(s);
    }
    auto y = b.Tensor("y", t, out_shape, q);
    tflite::ConcatenationOptionsT o;
    o.axis = axis;
    b.Op(tflite::BuiltinOperator_CONCATENATION, ins, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), label);
  }
}

TEST(TransformConformance, ConcatenationUint8Requantizes) {
  SKIP_WITHOUT_ORACLE();
  // uint8 inputs with other scales/zero points than the output: 2.9 requantizes them (float
  // formula); equal-params inputs are copied.
  CaseRng rng(203);
  for (int iter = 0; iter < 24; ++iter) {
    const int rank = rng.Int(1, 4);
    const int axis = rng.Int(-rank, rank - 1);
    const int a = axis < 0 ? axis + rank : axis;
    auto base = rng.Shape(rank, 1, 5);
    GraphBuilder b;
    std::vector<int32_t> ins;
    auto out_shape = base;
    out_shape[a] = 0;
    const auto out_q = Quant(rng.Float(0.02f, 0.1f), rng.Int(0, 255));
    const int n = rng.Int(2, 4);
    for (int i = 0; i < n; ++i) {
      auto s = base;
      s[a] = rng.Int(1, 3);
      out_shape[a] += s[a];
      const auto q = i == 0 ? out_q : Quant(rng.Float(0.01f, 0.2f), rng.Int(0, 255));
      ins.push_back(b.Input(Indexed("x", i), DType::kUInt8, s, q));
    }
    auto y = b.Tensor("y", DType::kUInt8, out_shape, out_q);
    tflite::ConcatenationOptionsT o;
    o.axis = axis;
    b.Op(tflite::BuiltinOperator_CONCATENATION, ins, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "CONCATENATION uint8 requantize case " + std::to_string(iter));
  }
}

TEST(TransformConformance, PackUnpack) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(303);
  const auto types = Except(MovementTypes(), {DType::kBool});
  for (int iter = 0; iter < 28; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(0, 4);
    const auto shape = rng.Shape(rank, 1, 4);
    const int n = rng.Int(1, 4);
    const int axis = rng.Int(-(rank + 1), rank);
    const int a = axis < 0 ? axis + rank + 1 : axis;
    const auto q = rng.QuantFor(t);
    {
      GraphBuilder b;
      std::vector<int32_t> ins;
      for (int i = 0; i < n; ++i) ins.push_back(b.Input(Indexed("x", i), t, shape, q));
      auto out_shape = shape;
      out_shape.insert(out_shape.begin() + a, n);
      auto y = b.Tensor("y", t, out_shape, q);
      tflite::PackOptionsT o;
      o.values_count = n;
      o.axis = axis;
      b.Op(tflite::BuiltinOperator_PACK, ins, {y}, o);
      b.Output(y);
      ExpectConforms(b.Finish(), "PACK " + TypeLabel(t) + " " + ShapeText(shape) + " x" + std::to_string(n) +
                                     " axis " + std::to_string(axis));
    }
    if (rank >= 1 && t != DType::kInt64) {  // 2.9 UNPACK has no int64 kernel
      const int ua = rng.Int(-rank, rank - 1);
      const int uaa = ua < 0 ? ua + rank : ua;
      GraphBuilder b;
      auto x = b.Input("x", t, shape, q);
      auto piece = shape;
      piece.erase(piece.begin() + uaa);
      std::vector<int32_t> outs;
      for (int i = 0; i < shape[uaa]; ++i) outs.push_back(b.Tensor(Indexed("y", i), t, piece, q));
      tflite::UnpackOptionsT o;
      o.num = shape[uaa];
      o.axis = ua;
      b.Op(tflite::BuiltinOperator_UNPACK, {x}, outs, o);
      for (auto y : outs) b.Output(y);
      ExpectConforms(b.Finish(), "UNPACK " + TypeLabel(t) + " " + ShapeText(shape) + " axis " + std::to_string(ua));
    }
  }
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, SplitAndSplitV) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(404);
  const auto types = Except(MovementTypes(), {DType::kBool, DType::kInt64});
  for (int iter = 0; iter < 30; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 4);
    auto shape = rng.Shape(rank, 1, 4);
    const int axis = rng.Int(-rank, rank - 1);
    const int a = axis < 0 ? axis + rank : axis;
    const auto q = rng.QuantFor(t);
    {  // SPLIT: make the axis divisible.
      const int num = rng.Int(1, 3);
      auto s = shape;
      s[a] = num * rng.Int(1, 3);
      GraphBuilder b;
      auto ax = I32Const(b, "axis", {axis}, kScalar);
      auto x = b.Input("x", t, s, q);
      auto piece = s;
      piece[a] /= num;
      std::vector<int32_t> outs;
      for (int i = 0; i < num; ++i) outs.push_back(b.Tensor(Indexed("y", i), t, piece, q));
      tflite::SplitOptionsT o;
      o.num_splits = num;
      b.Op(tflite::BuiltinOperator_SPLIT, {ax, x}, outs, o);
      for (auto y : outs) b.Output(y);
      ExpectConforms(b.Finish(), "SPLIT " + TypeLabel(t) + " " + ShapeText(s) + " axis " + std::to_string(axis) + " num " +
                                     std::to_string(num));
    }
    {  // SPLIT_V with an optional -1.
      const int num = rng.Int(1, 4);
      std::vector<int32_t> sizes(num);
      int total = 0;
      for (auto& z : sizes) total += (z = rng.Int(0, 3));
      if (total == 0) total += (sizes[0] = 1);
      auto s = shape;
      s[a] = total;
      if (rng.Bool()) sizes[rng.Int(0, num - 1)] = -1;
      GraphBuilder b;
      auto x = b.Input("x", t, s, q);
      auto sz = I32Const(b, "sizes", sizes);
      auto ax = I32Const(b, "axis", {axis}, kScalar);
      std::vector<int32_t> outs;
      int known = 0;
      for (int z : sizes) known += z > 0 ? z : 0;
      for (int i = 0; i < num; ++i) {
        auto piece = s;
        piece[a] = sizes[i] >= 0 ? sizes[i] : total - known;
        outs.push_back(b.Tensor(Indexed("y", i), t, piece, q));
      }
      tflite::SplitVOptionsT o;
      o.num_splits = num;
      b.Op(tflite::BuiltinOperator_SPLIT_V, {x, sz, ax}, outs, o);
      for (auto y : outs) b.Output(y);
      ExpectConforms(b.Finish(), "SPLIT_V " + TypeLabel(t) + " " + ShapeText(s) + " sizes " + ShapeText(sizes) +
                                     " axis " + std::to_string(axis));
    }
  }
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, Slice) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(505);
  for (int iter = 0; iter < 42; ++iter) {
    const DType t = MovementTypes()[iter % MovementTypes().size()];
    const int rank = rng.Int(1, 5);
    const auto shape = rng.Shape(rank, 1, 5);
    std::vector<int64_t> begin(rank), size(rank);
    std::vector<int32_t> out_shape(rank);
    for (int d = 0; d < rank; ++d) {
      begin[d] = rng.Int(0, shape[d] - 1);
      size[d] = rng.Int(0, 3) == 0 ? -1 : rng.Int(0, shape[d] - static_cast<int>(begin[d]));
      out_shape[d] = static_cast<int32_t>(size[d] < 0 ? shape[d] - begin[d] : size[d]);
    }
    const bool i64 = rng.Bool();
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    int32_t bt, st;
    if (i64) {
      bt = I64Const(b, "begin", begin);
      st = I64Const(b, "size", size);
    } else {
      bt = I32Const(b, "begin", std::vector<int32_t>(begin.begin(), begin.end()));
      st = I32Const(b, "size", std::vector<int32_t>(size.begin(), size.end()));
    }
    auto y = b.Tensor("y", t, out_shape, q);
    b.Op(tflite::BuiltinOperator_SLICE, {x, bt, st}, {y}, tflite::SliceOptionsT{});
    b.Output(y);
    ExpectConforms(b.Finish(), "SLICE " + TypeLabel(t) + " " + ShapeText(shape) + " begin " +
                                   ShapeText(std::vector<int32_t>(begin.begin(), begin.end())) + " size " +
                                   ShapeText(std::vector<int32_t>(size.begin(), size.end())) + (i64 ? " int64" : ""));
  }
}

TEST(TransformConformance, SliceRuntimeBegin) {
  SKIP_WITHOUT_ORACLE();
  GraphBuilder b;
  auto x = b.Input("x", DType::kInt8, {4, 5, 6}, Quant(0.1f, 3));
  auto begin = b.Input("begin", DType::kInt32, {3});
  auto size = I32Const(b, "size", {2, -1, 3});
  auto y = b.Tensor("y", DType::kInt8, {2, 1, 3}, Quant(0.1f, 3));
  b.Op(tflite::BuiltinOperator_SLICE, {x, begin, size}, {y}, tflite::SliceOptionsT{});
  b.Output(y);
  Graph g = b.Finish();
  auto inputs = testing::RandomInputs(g, testing::ExactOptions());
  inputs[1] = MakeValue<int32_t>("begin", DType::kInt32, {3}, {1, 2, 3});
  ExpectConforms(g, "SLICE runtime begin", testing::ExactOptions(), inputs);
}

// STRIDED_SLICE over every combination of begin/end/shrink masks on small inputs, plus random
// ellipsis/new-axis specs and negative strides. 2.9 supports up to 5-D (including new axes).
TEST(TransformConformance, StridedSliceMasks) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(606);
  int cases = 0;
  for (int rank = 1; rank <= 3; ++rank) {
    const int combos = 1 << rank;
    for (int begin_mask = 0; begin_mask < combos; ++begin_mask)
      for (int end_mask = 0; end_mask < combos; ++end_mask)
        for (int shrink_mask = 0; shrink_mask < combos; ++shrink_mask) {
          if (rank == 3 && rng.Int(0, 3) != 0) continue;  // sample the 512 rank-3 combos
          const auto shape = rng.Shape(rank, 1, 5);
          std::vector<int32_t> begin(rank), end(rank), strides(rank);
          for (int d = 0; d < rank; ++d) {
            const bool shrink = (shrink_mask >> d) & 1;
            strides[d] = shrink ? 1 : rng.Pick(std::vector<int32_t>{1, 1, 2, 3, -1, -2});
            begin[d] = rng.Int(-shape[d] - 1, shape[d]);
            end[d] = rng.Int(-shape[d] - 1, shape[d] + 1);
            if (shrink) begin[d] = rng.Int(-shape[d], shape[d] - 1);
          }
          const DType t = MovementTypes()[cases % MovementTypes().size()];
          const auto q = rng.QuantFor(t);
          GraphBuilder b;
          auto x = b.Input("x", t, shape, q);
          auto bt = I32Const(b, "begin", begin);
          auto et = I32Const(b, "end", end);
          auto st = I32Const(b, "strides", strides);
          auto y = b.Tensor("y", t, {1}, q);
          tflite::StridedSliceOptionsT o;
          o.begin_mask = begin_mask;
          o.end_mask = end_mask;
          o.shrink_axis_mask = shrink_mask;
          b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, o);
          b.Output(y);
          ExpectConforms(b.Finish(), "STRIDED_SLICE " + TypeLabel(t) + " " + ShapeText(shape) + " begin " +
                                         ShapeText(begin) + " end " + ShapeText(end) + " strides " + ShapeText(strides) +
                                         " masks b" + std::to_string(begin_mask) + " e" + std::to_string(end_mask) +
                                         " s" + std::to_string(shrink_mask));
          ++cases;
        }
  }
}

// Random begin/end/shrink masks on 4-D and 5-D inputs (2.9's maximum rank).
TEST(TransformConformance, StridedSliceMasksHighRank) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(608);
  for (int iter = 0; iter < 40; ++iter) {
    const int rank = 4 + iter % 2;
    const auto shape = rng.Shape(rank, 1, 4);
    const int begin_mask = rng.Int(0, (1 << rank) - 1), end_mask = rng.Int(0, (1 << rank) - 1);
    const int shrink_mask = rng.Int(0, (1 << rank) - 1) & rng.Int(0, (1 << rank) - 1);
    std::vector<int32_t> begin(rank), end(rank), strides(rank);
    for (int d = 0; d < rank; ++d) {
      const bool shrink = (shrink_mask >> d) & 1;
      strides[d] = shrink ? 1 : rng.Pick(std::vector<int32_t>{1, 2, -1, -3});
      begin[d] = shrink ? rng.Int(-shape[d], shape[d] - 1) : rng.Int(-shape[d] - 1, shape[d]);
      end[d] = rng.Int(-shape[d] - 1, shape[d] + 1);
    }
    const DType t = MovementTypes()[iter % MovementTypes().size()];
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto bt = I32Const(b, "begin", begin);
    auto et = I32Const(b, "end", end);
    auto st = I32Const(b, "strides", strides);
    auto y = b.Tensor("y", t, {1}, q);
    tflite::StridedSliceOptionsT o;
    o.begin_mask = begin_mask;
    o.end_mask = end_mask;
    o.shrink_axis_mask = shrink_mask;
    b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "STRIDED_SLICE " + TypeLabel(t) + " " + ShapeText(shape) + " begin " + ShapeText(begin) +
                                   " end " + ShapeText(end) + " strides " + ShapeText(strides) + " masks b" +
                                   std::to_string(begin_mask) + " e" + std::to_string(end_mask) + " s" +
                                   std::to_string(shrink_mask));
  }
}

TEST(TransformConformance, StridedSliceEllipsisNewAxis) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(607);
  for (int iter = 0; iter < 60; ++iter) {
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 4);
    const int count = rng.Int(1, std::min(rank + 1, 4));
    std::vector<int32_t> begin(count), end(count), strides(count);
    int ellipsis = 0, new_axis = 0, shrink = 0, bm = 0, em = 0;
    if (rng.Int(0, 2) != 0) ellipsis = 1 << rng.Int(0, count - 1);
    for (int i = 0; i < count; ++i) {
      if (rng.Int(0, 3) == 0) new_axis |= 1 << i;
      if (rng.Int(0, 4) == 0) bm |= 1 << i;
      if (rng.Int(0, 4) == 0) em |= 1 << i;
      strides[i] = rng.Pick(std::vector<int32_t>{1, 1, 2, -1});
      begin[i] = rng.Int(-4, 4);
      end[i] = rng.Int(-5, 5);
    }
    // Count the effective rank (TFLite 2.9 allows at most 5).
    int added = 0;
    for (int i = 0; i < count; ++i)
      if (!((ellipsis >> i) & 1) && ((new_axis >> i) & 1)) ++added;
    if (rank + added > 5) continue;
    // Shrink only positions that certainly map to real input axes before any ellipsis with a
    // valid positive-stride index (2.9 leaves negative-stride shrinks unwritten).
    for (int i = 0; i < count && i < rank; ++i) {
      if ((ellipsis >> i) & 1) break;
      if ((new_axis >> i) & 1) break;
      if (rng.Int(0, 3) == 0) {
        shrink |= 1 << i;
        strides[i] = 1;
        begin[i] = rng.Int(-shape[i], shape[i] - 1);
      }
    }
    const DType t = iter % 2 ? DType::kFloat32 : DType::kInt32;
    GraphBuilder b;
    auto x = b.Input("x", t, shape);
    auto bt = I32Const(b, "begin", begin);
    auto et = I32Const(b, "end", end);
    auto st = I32Const(b, "strides", strides);
    auto y = b.Tensor("y", t, {1});
    tflite::StridedSliceOptionsT o;
    o.begin_mask = bm;
    o.end_mask = em;
    o.shrink_axis_mask = shrink;
    o.ellipsis_mask = ellipsis;
    o.new_axis_mask = new_axis;
    b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "STRIDED_SLICE " + ShapeText(shape) + " begin " + ShapeText(begin) + " end " +
                                   ShapeText(end) + " strides " + ShapeText(strides) + " b" + std::to_string(bm) + " e" +
                                   std::to_string(em) + " s" + std::to_string(shrink) + " ellipsis " +
                                   std::to_string(ellipsis) + " new_axis " + std::to_string(new_axis));
  }
}

TEST(TransformConformance, StridedSliceRuntimeIndices) {
  SKIP_WITHOUT_ORACLE();
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {5, 6});
  auto begin = b.Input("begin", DType::kInt32, {2});
  auto end = I32Const(b, "end", {-1, 0});
  auto strides = I32Const(b, "strides", {2, -1});
  auto y = b.Tensor("y", DType::kFloat32, {1});
  tflite::StridedSliceOptionsT o;
  o.end_mask = 2;
  b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, begin, end, strides}, {y}, o);
  b.Output(y);
  Graph g = b.Finish();
  auto inputs = testing::RandomInputs(g, testing::ExactOptions());
  inputs[1] = MakeValue<int32_t>("begin", DType::kInt32, {2}, {0, 4});
  ExpectConforms(g, "STRIDED_SLICE runtime begin", testing::ExactOptions(), inputs);
}

// Ranks beyond 2.9's limit (TRANSPOSE 5-D): checked against a direct index computation.
TEST(TransformKernels, TransposeRank6And7) {
  CaseRng rng(102);
  for (int rank : {6, 7}) {
    const auto shape = rng.Shape(rank, 1, 3);
    std::vector<int32_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng.engine());
    std::vector<int32_t> out_shape(rank);
    for (int i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt32, shape);
    auto p = I32Const(b, "perm", perm);
    auto y = b.Tensor("y", DType::kInt32, out_shape);
    b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {y}, tflite::TransposeOptionsT{});
    b.Output(y);
    int64_t n = 1;
    for (int d : shape) n *= d;
    std::vector<int32_t> data(n);
    std::iota(data.begin(), data.end(), 0);
    auto out = testing::RunOursValues(b.Finish(), {MakeValue<int32_t>("x", DType::kInt32, shape, data)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ((*out)[0].shape, out_shape);
    std::vector<int32_t> got(n);
    std::memcpy(got.data(), (*out)[0].data.data(), n * 4);
    std::vector<int64_t> in_stride(rank, 1);
    for (int d = rank - 2; d >= 0; --d) in_stride[d] = in_stride[d + 1] * shape[d + 1];
    std::vector<int32_t> idx(rank, 0);
    for (int64_t o = 0; o < n; ++o) {
      int64_t src = 0;
      for (int k = 0; k < rank; ++k) src += idx[k] * in_stride[perm[k]];
      ASSERT_EQ(got[o], data[src]) << "rank " << rank << " element " << o;
      for (int k = rank - 1; k >= 0; --k) {
        if (++idx[k] < out_shape[k]) break;
        idx[k] = 0;
      }
    }
  }
}

// An ARG_MAX (is_max) or ARG_MIN op with an int32 output.
void AddArgExtreme(GraphBuilder& b, bool is_max, int32_t x, int32_t axis, int32_t y) {
  if (is_max) {
    tflite::ArgMaxOptionsT o;
    o.output_type = tflite::TensorType_INT32;
    b.Op(tflite::BuiltinOperator_ARG_MAX, {x, axis}, {y}, o);
  } else {
    tflite::ArgMinOptionsT o;
    o.output_type = tflite::TensorType_INT32;
    b.Op(tflite::BuiltinOperator_ARG_MIN, {x, axis}, {y}, o);
  }
}

// ARG_MAX / ARG_MIN against a plain scan per (outer, inner) pair (strict comparison, first
// position wins) on sizes the conformance cases do not reach: long axes (the 8-lane scan of the
// last axis and its tail), inner sizes across the 64-wide chunks, values with many ties, NaN
// (first or later), signed zeros and infinities.
TEST(TransformKernels, ArgMaxArgMinLongAxesAndSpecialValues) {
  CaseRng rng(1102);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, 0.0f, -0.0f, inf, -inf, 1.0f, -1.0f};
  for (int64_t axis_len : {1, 7, 8, 9, 17, 100, 2304})
    for (int64_t inner : {1, 3, 64, 65, 130})
      for (bool is_max : {true, false})
        for (bool as_int8 : {false, true}) {
          const int64_t outer = 2;
          const std::vector<int32_t> shape = {static_cast<int32_t>(outer), static_cast<int32_t>(axis_len),
                                              static_cast<int32_t>(inner)};
          const int64_t n = outer * axis_len * inner;
          std::vector<float> f(static_cast<size_t>(n));
          std::vector<int8_t> q(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) {
            const int r = rng.Int(0, 20);
            f[i] = r < 4 ? specials[rng.Int(0, 6)] : static_cast<float>(rng.Int(-3, 3));
            q[i] = static_cast<int8_t>(rng.Int(-3, 3));
          }
          if (n > 0) f[0] = nan;  // a NaN in first position: position 0 wins for that pair
          if (axis_len > 9)
            // Second outer index: zeros, NaN at positions 1-8 and the only extreme last (a scan
            // in which a NaN stuck to a partial extreme would miss it).
            for (int64_t i = 0; i < axis_len; ++i)
              for (int64_t j = 0; j < inner; ++j)
                f[(axis_len + i) * inner + j] = i >= 1 && i <= 8 ? nan : i == axis_len - 1 ? (is_max ? 5.0f : -5.0f) : 0.0f;
          GraphBuilder b;
          const DType t = as_int8 ? DType::kInt8 : DType::kFloat32;
          auto x = b.Input("x", t, shape);
          auto ax = I32Const(b, "axis", {1});
          auto y = b.Tensor("y", DType::kInt32, {shape[0], shape[2]});
          AddArgExtreme(b, is_max, x, ax, y);
          b.Output(y);
          auto out = as_int8 ? testing::RunOursValues(b.Finish(), {MakeValue<int8_t>("x", t, shape, q)})
                             : testing::RunOursValues(b.Finish(), {MakeValue<float>("x", t, shape, f)});
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          std::vector<int32_t> got(static_cast<size_t>(outer * inner));
          std::memcpy(got.data(), (*out)[0].data.data(), got.size() * 4);
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j) {
              int32_t best_i = 0;
              float best = as_int8 ? q[o * axis_len * inner + j] : f[o * axis_len * inner + j];
              for (int64_t i = 1; i < axis_len; ++i) {
                const int64_t k = (o * axis_len + i) * inner + j;
                const float v = as_int8 ? q[k] : f[k];
                if (is_max ? v > best : v < best) {
                  best = v;
                  best_i = static_cast<int32_t>(i);
                }
              }
              ASSERT_EQ(got[o * inner + j], best_i) << (is_max ? "ARG_MAX" : "ARG_MIN") << (as_int8 ? " int8" : " float")
                                                    << " axis " << axis_len << " inner " << inner << " at (" << o << ","
                                                    << j << ")";
            }
        }
}

// ARG_MAX / ARG_MIN over the last axis on AVX-512 (arg_minmax_avx512.cc): a segmentation head's
// per-pixel classes (21, and 3 / 64 / 70 around the 16-lane blocks) in float32, int8 and uint8,
// byte-exact with the reference scan, the variant checked, 1-2 threads. (NaN, signed zeros and
// long axes: ArgMaxArgMinLongAxesAndSpecialValues, whose inner-1 cases run the same rows.)
TEST(TransformKernels, ArgMaxLastAxisRowsMatchTheReference) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "no AVX-512: ARG_MAX runs the scan";
  int k = 0;
  for (int classes : {21, 3, 64, 70})
    for (DType t : {DType::kFloat32, DType::kInt8, DType::kUInt8})
      for (bool is_max : {true, false}) {
        GraphBuilder b;
        const std::vector<int32_t> shape = {1, 33, 31, classes};
        auto x = b.Input("x", t, shape);
        auto ax = I32Const(b, "axis", {3});
        auto y = b.Tensor("y", DType::kInt32, {1, 33, 31});
        AddArgExtreme(b, is_max, x, ax, y);
        b.Output(y);
        testing::FastCheck check;
        check.op_type = is_max ? "ARG_MAX" : "ARG_MIN";
        check.variant = std::string(is_max ? "arg_max/" : "arg_min/") + std::string(DTypeName(t)) + "/avx512";
        check.threads = 1 + k++ % 2;
        check.seed = 70 + k;
        EXPECT_TRUE(testing::ExpectFastMatchesReference(b.Finish(), check.variant + " classes " + std::to_string(classes), check));
      }
}

// int64 paddings (2.9 reads them as int32): same result as int32 paddings.
TEST(TransformKernels, PadInt64Paddings) {
  auto run = [](bool i64, bool v2) {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    const std::vector<int32_t> pads = {1, 0, 2, 3};
    auto p = i64 ? I64Const(b, "pads", {1, 0, 2, 3}, {2, 2}) : I32Const(b, "pads", pads, {2, 2});
    auto y = b.Tensor("y", DType::kFloat32, {3, 8});
    if (v2) {
      auto c = b.Const<float>("c", DType::kFloat32, {}, {7.5f});
      b.Op(tflite::BuiltinOperator_PADV2, {x, p, c}, {y}, tflite::PadV2OptionsT{});
    } else {
      b.Op(tflite::BuiltinOperator_PAD, {x, p}, {y}, tflite::PadOptionsT{});
    }
    b.Output(y);
    return testing::RunOursValues(b.Finish(), {MakeValue<float>("x", DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  };
  for (bool v2 : {false, true}) {
    auto a = run(false, v2), c = run(true, v2);
    ASSERT_TRUE(a.ok() && c.ok());
    EXPECT_EQ((*a)[0].shape, (std::vector<int32_t>{3, 8}));
    EXPECT_EQ((*a)[0].data, (*c)[0].data);
  }
}

// The offset option (end is relative to begin) postdates TFLite 2.9, which ignores it; checked
// against hand-computed values.
TEST(TransformKernels, StridedSliceOffset) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kInt32, {2, 6});
  auto bt = I32Const(b, "begin", {1, -5});
  auto et = I32Const(b, "end", {1, 3});
  auto st = I32Const(b, "strides", {1, 1});
  auto y = b.Tensor("y", DType::kInt32, {1, 3});
  tflite::StridedSliceOptionsT o;
  o.offset = true;
  b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, o);
  b.Output(y);
  std::vector<int32_t> data(12);
  std::iota(data.begin(), data.end(), 0);
  auto out = testing::RunOursValues(b.Finish(), {MakeValue<int32_t>("x", DType::kInt32, {2, 6}, data)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{1, 3}));
  std::vector<int32_t> got(3);
  std::memcpy(got.data(), (*out)[0].data.data(), 12);
  EXPECT_EQ(got, (std::vector<int32_t>{7, 8, 9}));
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, PadPadV2MirrorPad) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(707);
  const auto types = Except(MovementTypes(), {DType::kBool});
  for (int iter = 0; iter < 36; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 4);
    const auto q = rng.QuantFor(t);
    std::vector<int32_t> pads(2 * rank);
    std::vector<int32_t> out_shape(rank);
    for (int d = 0; d < rank; ++d) {
      pads[2 * d] = rng.Int(0, 3);
      pads[2 * d + 1] = rng.Int(0, 3);
      out_shape[d] = shape[d] + pads[2 * d] + pads[2 * d + 1];
    }
    // 2.9 misreads int64 paddings (edgeopt accepts both; see PadInt64Paddings).
    const int kind = iter % 2;  // PAD, PADV2
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto p = I32Const(b, "pads", pads, {rank, 2});
    auto y = b.Tensor("y", t, out_shape, q);
    if (kind == 0) {
      b.Op(tflite::BuiltinOperator_PAD, {x, p}, {y}, tflite::PadOptionsT{});
    } else {
      auto c = b.ConstRandom("c", t, {}, -50, 50, q);
      b.Op(tflite::BuiltinOperator_PADV2, {x, p, c}, {y}, tflite::PadV2OptionsT{});
    }
    b.Output(y);
    ExpectConforms(b.Finish(), std::string(kind == 0 ? "PAD " : "PADV2 ") + TypeLabel(t) + " " + ShapeText(shape) +
                                   " pads " + ShapeText(pads));
  }
  const auto mirror_types = Except(types, {DType::kInt16});  // no int16 MIRROR_PAD in 2.9
  for (int iter = 0; iter < 30; ++iter) {
    const DType t = mirror_types[iter % mirror_types.size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 5);
    const bool symmetric = rng.Bool();
    std::vector<int32_t> pads(2 * rank), out_shape(rank);
    for (int d = 0; d < rank; ++d) {
      const int limit = symmetric ? shape[d] : shape[d] - 1;
      pads[2 * d] = rng.Int(0, limit);
      pads[2 * d + 1] = rng.Int(0, limit);
      out_shape[d] = shape[d] + pads[2 * d] + pads[2 * d + 1];
    }
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto p = I32Const(b, "pads", pads, {rank, 2});
    auto y = b.Tensor("y", t, out_shape, q);
    tflite::MirrorPadOptionsT o;
    o.mode = symmetric ? tflite::MirrorPadMode_SYMMETRIC : tflite::MirrorPadMode_REFLECT;
    b.Op(tflite::BuiltinOperator_MIRROR_PAD, {x, p}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), std::string("MIRROR_PAD ") + (symmetric ? "SYMMETRIC " : "REFLECT ") + TypeLabel(t) +
                                   " " + ShapeText(shape) + " pads " + ShapeText(pads));
  }
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, TileBroadcastReverse) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(808);
  for (int iter = 0; iter < 28; ++iter) {
    const DType t = MovementTypes()[iter % MovementTypes().size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 3);
    const auto q = rng.QuantFor(t);
    if (t != DType::kInt16) {  // 2.9 TILE has no int16 kernel
      std::vector<int32_t> mult(rank), out_shape(rank);
      for (int d = 0; d < rank; ++d) out_shape[d] = shape[d] * (mult[d] = rng.Int(1, 3));
      GraphBuilder b;
      auto x = b.Input("x", t, shape, q);
      auto m = rng.Bool() ? I32Const(b, "m", mult) : I64Const(b, "m", std::vector<int64_t>(mult.begin(), mult.end()));
      auto y = b.Tensor("y", t, out_shape, q);
      b.Op(tflite::BuiltinOperator_TILE, {x, m}, {y}, tflite::TileOptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "TILE " + TypeLabel(t) + " " + ShapeText(shape) + " x " + ShapeText(mult));
    }
    {
      const int extra = rng.Int(0, 2);
      std::vector<int32_t> in_shape = shape, out_shape;
      for (auto& d : in_shape)
        if (rng.Int(0, 2) == 0) d = 1;
      for (int i = 0; i < extra; ++i) out_shape.push_back(rng.Int(1, 3));
      for (int d = 0; d < rank; ++d) out_shape.push_back(in_shape[d] == 1 ? rng.Int(1, 3) : in_shape[d]);
      GraphBuilder b;
      auto x = b.Input("x", t, in_shape, q);
      auto s = I32Const(b, "shape", out_shape);
      auto y = b.Tensor("y", t, out_shape, q);
      b.Op(tflite::BuiltinOperator_BROADCAST_TO, {x, s}, {y}, tflite::BroadcastToOptionsT{}, /*version=*/2);
      b.Output(y);
      ExpectConforms(b.Finish(), "BROADCAST_TO " + TypeLabel(t) + " " + ShapeText(in_shape) + " -> " + ShapeText(out_shape));
    }
    if (t != DType::kInt8) {  // REVERSE_V2 2.9: one axis; no int8 kernel in 2.9
      const int axis = rng.Int(-rank, rank - 1);
      GraphBuilder b;
      auto x = b.Input("x", t, shape, q);
      auto a = I32Const(b, "axis", {axis});
      auto y = b.Tensor("y", t, shape, q);
      b.Op(tflite::BuiltinOperator_REVERSE_V2, {x, a}, {y}, tflite::ReverseV2OptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "REVERSE_V2 " + TypeLabel(t) + " " + ShapeText(shape) + " axis " + std::to_string(axis));
    }
  }
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, GatherAndGatherNd) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(909);
  for (int iter = 0; iter < 70; ++iter) {
    const DType t = MovementTypes()[iter % MovementTypes().size()];
    const int rank = rng.Int(1, 4);
    auto shape = rng.Shape(rank, 1, 4);
    const int axis = rng.Int(-rank, rank - 1);
    const int a = axis < 0 ? axis + rank : axis;
    const int batch_dims = rng.Int(0, a);
    const int idx_rank = rng.Int(batch_dims, batch_dims + 2);
    std::vector<int32_t> idx_shape(idx_rank);
    for (int i = 0; i < idx_rank; ++i) idx_shape[i] = i < batch_dims ? shape[i] : rng.Int(1, 3);
    int64_t n = 1;
    for (int d : idx_shape) n *= d;
    std::vector<int64_t> idx(n);
    for (auto& v : idx) v = rng.Int(0, shape[a] - 1);
    std::vector<int32_t> out_shape;
    for (int i = 0; i < a; ++i) out_shape.push_back(shape[i]);
    for (int i = batch_dims; i < idx_rank; ++i) out_shape.push_back(idx_shape[i]);
    for (int i = a + 1; i < rank; ++i) out_shape.push_back(shape[i]);
    const bool i64 = rng.Bool();
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto it = i64 ? I64Const(b, "idx", idx, idx_shape)
                  : I32Const(b, "idx", std::vector<int32_t>(idx.begin(), idx.end()), idx_shape);
    auto y = b.Tensor("y", t, out_shape, q);
    tflite::GatherOptionsT o;
    o.axis = axis;
    // batch_dims may also count from the end of the indices' rank.
    o.batch_dims = batch_dims > 0 && iter % 3 == 0 ? batch_dims - idx_rank : batch_dims;
    b.Op(tflite::BuiltinOperator_GATHER, {x, it}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "GATHER " + TypeLabel(t) + " " + ShapeText(shape) + " axis " + std::to_string(axis) +
                                   " batch_dims " + std::to_string(o.batch_dims) + " indices " + ShapeText(idx_shape) +
                                   (i64 ? " int64" : ""));
  }
  for (int iter = 0; iter < 30; ++iter) {
    const DType t = Except(MovementTypes(), {DType::kBool})[iter % 6];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 4);
    const int depth = rng.Int(1, rank);
    const int outer_rank = rng.Int(0, 2);
    std::vector<int32_t> idx_shape = rng.Shape(outer_rank, 1, 3);
    idx_shape.push_back(depth);
    int64_t tuples = 1;
    for (int i = 0; i < outer_rank; ++i) tuples *= idx_shape[i];
    std::vector<int32_t> idx;
    for (int64_t k = 0; k < tuples; ++k)
      for (int d = 0; d < depth; ++d) idx.push_back(rng.Int(0, shape[d] - 1));
    std::vector<int32_t> out_shape(idx_shape.begin(), idx_shape.end() - 1);
    for (int d = depth; d < rank; ++d) out_shape.push_back(shape[d]);
    const auto q = rng.QuantFor(t);
    GraphBuilder b;
    auto x = b.Input("x", t, shape, q);
    auto it = rng.Bool() ? I32Const(b, "idx", idx, idx_shape)
                         : I64Const(b, "idx", std::vector<int64_t>(idx.begin(), idx.end()), idx_shape);
    auto y = b.Tensor("y", t, out_shape, q);
    b.Op(tflite::BuiltinOperator_GATHER_ND, {x, it}, {y}, tflite::GatherNdOptionsT{});
    b.Output(y);
    ExpectConforms(b.Finish(), "GATHER_ND " + TypeLabel(t) + " " + ShapeText(shape) + " indices " + ShapeText(idx_shape));
  }
}

TEST(TransformConformance, ScatterNd) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(910);
  const std::vector<DType> types = {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8};
  for (int iter = 0; iter < 20; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 3);
    const auto shape = rng.Shape(rank, 1, 4);
    const int depth = rng.Int(1, rank);
    const int tuples = rng.Int(1, 4);
    std::vector<int32_t> idx;
    for (int k = 0; k < tuples; ++k)
      for (int d = 0; d < depth; ++d) idx.push_back(rng.Int(0, shape[d] - 1));
    std::vector<int32_t> upd_shape = {tuples};
    for (int d = depth; d < rank; ++d) upd_shape.push_back(shape[d]);
    GraphBuilder b;
    auto it = I32Const(b, "idx", idx, {tuples, depth});
    auto u = b.Input("updates", t, upd_shape);
    auto s = I32Const(b, "shape", shape);
    auto y = b.Tensor("y", t, shape);
    b.Op(tflite::BuiltinOperator_SCATTER_ND, {it, u, s}, {y}, tflite::ScatterNdOptionsT{});
    b.Output(y);
    testing::CompareOptions o = testing::ExactOptions();
    o.float_lo = -100;
    o.float_hi = 100;
    ExpectConforms(b.Finish(), "SCATTER_ND " + TypeLabel(t) + " " + ShapeText(shape) + " indices " + ShapeText(idx), o);
  }
}

// ------------------------------------------------------------------------------------------
TEST(TransformConformance, ShapeRankRangeWhere) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1001);
  for (int iter = 0; iter < 8; ++iter) {
    const int rank = rng.Int(0, 5);
    const auto shape = rng.Shape(rank, 1, 4);
    const DType out_t = iter % 2 ? DType::kInt64 : DType::kInt32;
    {
      GraphBuilder b;
      auto x = b.Input("x", DType::kFloat32, shape);
      auto y = b.Tensor("y", out_t, {rank});
      tflite::ShapeOptionsT o;
      o.out_type = static_cast<tflite::TensorType>(out_t);
      b.Op(tflite::BuiltinOperator_SHAPE, {x}, {y}, o);
      b.Output(y);
      ExpectConforms(b.Finish(), "SHAPE " + ShapeText(shape));
    }
    {
      GraphBuilder b;
      auto x = b.Input("x", DType::kInt8, shape);
      auto y = b.Tensor("y", DType::kInt32, {});
      b.Op(tflite::BuiltinOperator_RANK, {x}, {y}, tflite::RankOptionsT{});
      b.Output(y);
      ExpectConforms(b.Finish(), "RANK " + ShapeText(shape));
    }
    if (rank > 0) {  // WHERE on a bool condition (dynamic output); 2.9 rejects scalars
      GraphBuilder b;
      auto x = b.Input("cond", DType::kBool, shape);
      auto y = b.Tensor("y", DType::kInt64, {1, rank});
      b.Op(tflite::BuiltinOperator_WHERE, {x}, {y}, tflite::WhereOptionsT{});
      b.Output(y);
      testing::CompareOptions o = testing::ExactOptions();
      o.seed = 7 + iter;
      ExpectConforms(b.Finish(), "WHERE " + ShapeText(shape), o);
    }
  }
  // RANGE with run-time inputs (dynamic output), int32 and float32.
  struct R {
    double start, limit, delta;
  };
  const R ranges[] = {{0, 10, 1}, {3, -7, -2}, {1, 2, 0.3}, {-2.5, 4, 0.75}, {5, 5, 1}, {10, 1, -3}};
  for (const R& r : ranges) {
    for (DType t : {DType::kInt32, DType::kFloat32}) {
      if (t == DType::kInt32 && (r.delta != static_cast<int>(r.delta) || r.start != static_cast<int>(r.start))) continue;
      GraphBuilder b;
      auto s = b.Input("start", t, {});
      auto l = b.Input("limit", t, {});
      auto d = b.Input("delta", t, {});
      auto y = b.Tensor("y", t, {1});
      b.Op(tflite::BuiltinOperator_RANGE, {s, l, d}, {y}, tflite::RangeOptionsT{});
      b.Output(y);
      std::vector<testing::TensorValue> in;
      for (auto [name, v] : {std::pair<const char*, double>{"start", r.start}, {"limit", r.limit}, {"delta", r.delta}}) {
        if (t == DType::kInt32) {
          in.push_back(MakeValue<int32_t>(name, t, {}, {static_cast<int32_t>(v)}));
        } else {
          in.push_back(MakeValue<float>(name, t, {}, {static_cast<float>(v)}));
        }
      }
      ExpectConforms(b.Finish(), "RANGE " + TypeLabel(t) + " " + std::to_string(r.start) + ".." + std::to_string(r.limit) +
                                     " step " + std::to_string(r.delta),
                     testing::ExactOptions(), in);
    }
  }
}

TEST(TransformConformance, ArgMaxArgMin) {
  SKIP_WITHOUT_ORACLE();
  CaseRng rng(1101);
  const std::vector<DType> types = {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt32};
  for (int iter = 0; iter < 32; ++iter) {
    const DType t = types[iter % types.size()];
    const int rank = rng.Int(1, 4);
    const auto shape = rng.Shape(rank, 1, 6);
    const int axis = rng.Int(-rank, rank - 1);
    const int a = axis < 0 ? axis + rank : axis;
    auto out_shape = shape;
    out_shape.erase(out_shape.begin() + a);
    const bool is_max = iter % 2 == 0;
    const DType out_t = rng.Bool() ? DType::kInt64 : DType::kInt32;
    GraphBuilder b;
    // Small value ranges make ties frequent (the first index must win).
    auto x = b.Input("x", t, shape);
    auto ax = rng.Bool() ? I32Const(b, "axis", {axis}) : I64Const(b, "axis", {axis});
    auto y = b.Tensor("y", out_t, out_shape);
    if (is_max) {
      tflite::ArgMaxOptionsT o;
      o.output_type = static_cast<tflite::TensorType>(out_t);
      b.Op(tflite::BuiltinOperator_ARG_MAX, {x, ax}, {y}, o);
    } else {
      tflite::ArgMinOptionsT o;
      o.output_type = static_cast<tflite::TensorType>(out_t);
      b.Op(tflite::BuiltinOperator_ARG_MIN, {x, ax}, {y}, o);
    }
    b.Output(y);
    Graph g = b.Finish();
    auto inputs = testing::RandomInputs(g, testing::ExactOptions());
    if (t != DType::kFloat32)
      for (auto& v : inputs[0].data) v = static_cast<uint8_t>(v % 4);  // ties (little-endian low bytes)
    if (t == DType::kInt32)
      for (size_t i = 0; i < inputs[0].data.size(); ++i)
        if (i % 4) inputs[0].data[i] = 0;
    ExpectConforms(g, std::string(is_max ? "ARG_MAX " : "ARG_MIN ") + TypeLabel(t) + " " + ShapeText(shape) + " axis " +
                          std::to_string(axis),
                   testing::ExactOptions(), inputs);
  }
}

// ------------------------------------------------------------------------------------------
// Bad input gives a clear error naming the op, never a crash.
TEST(TransformKernels, ErrorsNameTheOp) {
  auto expect_error = [](Graph g, std::vector<testing::TensorValue> in, const std::string& op, const std::string& what) {
    const Status st = testing::RunOurs(g, std::move(in));
    EXPECT_FALSE(st.ok()) << op << ": " << what;
    EXPECT_NE(st.message().find(op), std::string::npos) << st.ToString();
  };
  {  // GATHER index out of range (run-time indices).
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {4, 3});
    auto i = b.Input("i", DType::kInt32, {2});
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_GATHER, {x, i}, {y}, tflite::GatherOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, {});
    in[1] = MakeValue<int32_t>("i", DType::kInt32, {2}, {1, 4});
    expect_error(g, in, "GATHER", "index 4 of 4");
    in[1] = MakeValue<int32_t>("i", DType::kInt32, {2}, {-1, 0});
    expect_error(g, in, "GATHER", "negative index");
  }
  {  // GATHER_ND / SCATTER_ND out of range, int64 indices.
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {2, 3});
    auto i = b.Input("i", DType::kInt64, {1, 2});
    auto y = b.Tensor("y", DType::kInt8, {1});
    b.Op(tflite::BuiltinOperator_GATHER_ND, {x, i}, {y}, tflite::GatherNdOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, {});
    in[1] = MakeValue<int64_t>("i", DType::kInt64, {1, 2}, {1, 3});
    expect_error(g, in, "GATHER_ND", "index (1,3)");
  }
  {
    GraphBuilder b;
    auto i = b.Input("i", DType::kInt32, {1, 1});
    auto u = b.Input("u", DType::kFloat32, {1, 3});
    auto s = I32Const(b, "shape", {2, 3});
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_SCATTER_ND, {i, u, s}, {y}, tflite::ScatterNdOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, {});
    in[0] = MakeValue<int32_t>("i", DType::kInt32, {1, 1}, {2});
    expect_error(g, in, "SCATTER_ND", "row 2 of 2");
  }
  {  // TRANSPOSE with a repeated perm entry; SLICE past the end; bad axis; bad paddings.
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto p = I32Const(b, "perm", {1, 1});
    auto y = b.Tensor("y", DType::kFloat32, {3, 3});
    b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {y}, tflite::TransposeOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), {}, "TRANSPOSE", "perm [1,1]");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto bt = I32Const(b, "begin", {1, 1});
    auto st = I32Const(b, "size", {1, 3});
    auto y = b.Tensor("y", DType::kFloat32, {1, 3});
    b.Op(tflite::BuiltinOperator_SLICE, {x, bt, st}, {y}, tflite::SliceOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), {}, "SLICE", "begin+size past the end");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto x2 = b.Input("x2", DType::kFloat32, {2, 4});
    auto y = b.Tensor("y", DType::kFloat32, {2, 7});
    tflite::ConcatenationOptionsT o;
    o.axis = 0;  // shapes differ outside axis 0
    b.Op(tflite::BuiltinOperator_CONCATENATION, {x, x2}, {y}, o);
    b.Output(y);
    expect_error(b.Finish(), {}, "CONCATENATION", "mismatched shapes");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto p = I32Const(b, "pads", {0, 0, 3, 1}, {2, 2});
    auto y = b.Tensor("y", DType::kFloat32, {2, 7});
    tflite::MirrorPadOptionsT o;
    o.mode = tflite::MirrorPadMode_REFLECT;
    b.Op(tflite::BuiltinOperator_MIRROR_PAD, {x, p}, {y}, o);
    b.Output(y);
    expect_error(b.Finish(), {}, "MIRROR_PAD", "reflect padding 3 of dim 3");
  }
  {
    GraphBuilder b;
    auto ax = I32Const(b, "axis", {2}, kScalar);
    auto x = b.Input("x", DType::kFloat32, {2, 4});
    auto y0 = b.Tensor("y0", DType::kFloat32, {1, 4});
    auto y1 = b.Tensor("y1", DType::kFloat32, {1, 4});
    tflite::SplitOptionsT o;
    o.num_splits = 2;
    b.Op(tflite::BuiltinOperator_SPLIT, {ax, x}, {y0, y1}, o);
    b.Output(y0);
    b.Output(y1);
    expect_error(b.Finish(), {}, "SPLIT", "axis 2 of rank 2");
  }
  {
    GraphBuilder b;
    auto s = b.Input("s", DType::kInt32, {});
    auto l = b.Input("l", DType::kInt32, {});
    auto d = b.Input("d", DType::kInt32, {});
    auto y = b.Tensor("y", DType::kInt32, {1});
    b.Op(tflite::BuiltinOperator_RANGE, {s, l, d}, {y}, tflite::RangeOptionsT{});
    b.Output(y);
    expect_error(b.Finish(),
                 {MakeValue<int32_t>("s", DType::kInt32, {}, {0}), MakeValue<int32_t>("l", DType::kInt32, {}, {5}),
                  MakeValue<int32_t>("d", DType::kInt32, {}, {0})},
                 "RANGE", "delta 0");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto bt = I32Const(b, "begin", {0, 0});
    auto et = I32Const(b, "end", {2, 3});
    auto st = I32Const(b, "strides", {1, 0});
    auto y = b.Tensor("y", DType::kFloat32, {2, 3});
    b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, tflite::StridedSliceOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), {}, "STRIDED_SLICE", "zero stride");
  }
}

}  // namespace
}  // namespace edgeopt
