// int32_binary.h's run written once over a vector type `V` that each ISA file defines (in an
// anonymous namespace): kLanes, I, Load, Store, Set, Add, Sub, Mul (low 32 bits), Min, Max.
#pragma once

#include <cstring>

#include "kernels/elementwise/int32_binary.h"

namespace edgeopt::kernels::elementwise::simd {

template <class V, Int32Op kOp, bool kAScalar, bool kBScalar>
void Loop(const Int32Run& r, const int32_t* a, const int32_t* b, int32_t* out, int64_t n) {
  if (n <= 0) return;
  const auto lo = V::Set(r.lo), hi = V::Set(r.hi);
  const auto va = V::Set(a[0]), vb = V::Set(b[0]);
  auto step = [&](const int32_t* pa, const int32_t* pb) {
    const auto x = kAScalar ? va : V::Load(pa);
    const auto y = kBScalar ? vb : V::Load(pb);
    const auto z = kOp == Int32Op::kAdd ? V::Add(x, y) : kOp == Int32Op::kSub ? V::Sub(x, y) : V::Mul(x, y);
    return V::Min(V::Max(z, lo), hi);
  };
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::Store(out + i, step(a + i, b + i));
  if (i < n) {
    // Tail through buffers (no read past the inputs).
    int32_t ba[V::kLanes] = {}, bb[V::kLanes] = {}, bo[V::kLanes];
    const size_t bytes = static_cast<size_t>(n - i) * sizeof(int32_t);
    if (!kAScalar) std::memcpy(ba, a + i, bytes);
    if (!kBScalar) std::memcpy(bb, b + i, bytes);
    V::Store(bo, step(ba, bb));
    std::memcpy(out + i, bo, bytes);
  }
}

template <class V, Int32Op kOp>
void RunOp(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar, int32_t* out,
           int64_t n) {
  if (a_scalar && b_scalar) return Loop<V, kOp, true, true>(r, a, b, out, n);
  if (a_scalar) return Loop<V, kOp, true, false>(r, a, b, out, n);
  if (b_scalar) return Loop<V, kOp, false, true>(r, a, b, out, n);
  Loop<V, kOp, false, false>(r, a, b, out, n);
}

template <class V>
void Run(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar, int32_t* out, int64_t n) {
  switch (r.op) {
    case Int32Op::kAdd: return RunOp<V, Int32Op::kAdd>(r, a, a_scalar, b, b_scalar, out, n);
    case Int32Op::kSub: return RunOp<V, Int32Op::kSub>(r, a, a_scalar, b, b_scalar, out, n);
    case Int32Op::kMul: return RunOp<V, Int32Op::kMul>(r, a, a_scalar, b, b_scalar, out, n);
  }
}

}  // namespace edgeopt::kernels::elementwise::simd
