// The binary elementwise runs, written once over a float32 vector type (common/vec_f32.h):
// included by binary_avx2.cc (8-lane ymm) and binary_avx512.cc (16-lane zmm), each compiled with
// its own instruction set; internal linkage on purpose, so each file gets its own copy. Four
// vectors per iteration, then one at a time, then the tail under a lane mask (lanes past n are
// neither read nor stored). One IEEE operation per element, as the portable run computes it.
#pragma once

#include <cstddef>

#include "kernels/binary_f32/binary_f32.h"

namespace edgeopt::kernels::binary {
namespace {

template <typename V, Op O>
inline typename V::T Apply(typename V::T a, typename V::T b) {
  if (O == Op::kAdd) return V::Add(a, b);
  if (O == Op::kSub) return V::Sub(a, b);
  if (O == Op::kDiv) return V::Div(a, b);
  if (O == Op::kSquaredDifference) {
    const typename V::T d = V::Sub(a, b);
    return V::Mul(d, d);
  }
  if (O == Op::kMaximum) return V::Max(a, b);  // a > b ? a : b
  if (O == Op::kMinimum) return V::Min(a, b);  // a < b ? a : b
  return V::Mul(a, b);
}

template <typename V, Op O, bool kAScalar, bool kBScalar>
void Run(const float* a, const float* b, float* out, size_t n, gemm::MinMax mm) {
  using T = typename V::T;
  constexpr size_t L = V::kLanes;
  const T vmin = V::Set1(mm.min), vmax = V::Set1(mm.max);
  const T as = V::Set1(*a), bs = V::Set1(*b);
  auto load_a = [&](size_t i) { return kAScalar ? as : V::LoadU(a + i); };
  auto load_b = [&](size_t i) { return kBScalar ? bs : V::LoadU(b + i); };
  auto result = [&](size_t i) { return V::Clamp(Apply<V, O>(load_a(i), load_b(i)), vmin, vmax); };
  size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const T r0 = result(i), r1 = result(i + L), r2 = result(i + 2 * L), r3 = result(i + 3 * L);
    V::StoreU(out + i, r0);
    V::StoreU(out + i + L, r1);
    V::StoreU(out + i + 2 * L, r2);
    V::StoreU(out + i + 3 * L, r3);
  }
  for (; i + L <= n; i += L) V::StoreU(out + i, result(i));
  if (i < n) {
    const typename V::Mask m = V::TailMask(static_cast<int>(n - i));
    const T va = kAScalar ? as : V::MaskLoad(a + i, m);
    const T vb = kBScalar ? bs : V::MaskLoad(b + i, m);
    V::MaskStore(out + i, m, V::Clamp(Apply<V, O>(va, vb), vmin, vmax));
  }
}

template <typename V, Op O>
void RunOp(const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n, gemm::MinMax mm) {
  if (a_scalar && b_scalar) return Run<V, O, true, true>(a, b, out, n, mm);
  if (a_scalar) return Run<V, O, true, false>(a, b, out, n, mm);
  if (b_scalar) return Run<V, O, false, true>(a, b, out, n, mm);
  Run<V, O, false, false>(a, b, out, n, mm);
}

template <typename V>
void RunsOf(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
            gemm::MinMax mm) {
  switch (op) {
    case Op::kAdd: return RunOp<V, Op::kAdd>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kSub: return RunOp<V, Op::kSub>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMul: return RunOp<V, Op::kMul>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kDiv: return RunOp<V, Op::kDiv>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kSquaredDifference: return RunOp<V, Op::kSquaredDifference>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMaximum: return RunOp<V, Op::kMaximum>(a, a_scalar, b, b_scalar, out, n, mm);
    case Op::kMinimum: return RunOp<V, Op::kMinimum>(a, a_scalar, b, b_scalar, out, n, mm);
  }
}

}  // namespace
}  // namespace edgeopt::kernels::binary
