// The op and broadcast dispatch of the vector binary runs, written once: included by
// binary_avx2.cc and binary_avx512.cc, each after defining its own Run<O, kAScalar, kBScalar>
// (internal linkage on purpose, so each file's copy is compiled with its own instruction set).
#pragma once

#include <cstddef>

#include "kernels/binary_f32/binary_f32.h"

namespace edgeopt::kernels::binary {
namespace {

// K: a struct with `template <Op, bool kAScalar, bool kBScalar> static void Run(a, b, out, n, mm)`.
template <typename K, Op O>
void RunOp(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n, gemm::MinMax mm) {
  if (a_scalar && b_scalar) return K::template Run<O, true, true>(a, b, out, n, mm);
  if (a_scalar) return K::template Run<O, true, false>(a, b, out, n, mm);
  if (b_scalar) return K::template Run<O, false, true>(a, b, out, n, mm);
  K::template Run<O, false, false>(a, b, out, n, mm);
}

template <typename K>
void Dispatch(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
              gemm::MinMax mm) {
  switch (op) {
    case Op::kAdd: return RunOp<K, Op::kAdd>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kSub: return RunOp<K, Op::kSub>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMul: return RunOp<K, Op::kMul>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kDiv: return RunOp<K, Op::kDiv>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kSquaredDifference: return RunOp<K, Op::kSquaredDifference>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMaximum: return RunOp<K, Op::kMaximum>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMinimum: return RunOp<K, Op::kMinimum>(a, a_scalar, b, b_scalar, out, n, mm);
  }
}

}  // namespace
}  // namespace edgeopt::kernels::binary
