// The fast float32 bilinear row (see resize.h), written once over a vector type V and included
// by bilinear_f32_avx2.cc (8-lane ymm) and bilinear_f32_avx512.cc (16-lane zmm), each compiled
// with its own instruction set; internal linkage so the two copies never mix.
//
// V provides: T, Mask, kLanes, LoadU, MaskLoad, StoreU, MaskStore, Mul, Add, Set1, Zero,
// TailMask(n lanes).
#pragma once

#include "kernels/resize/resize.h"

namespace edgeopt::kernels::resize {
namespace {

// A product the compiler may not fuse into the following addition (a fused multiply-add would
// round once instead of twice and differ from the reference in the last bit).
template <typename T>
inline T Opaque(T v) {
  asm("" : "+v"(v));
  return v;
}

template <typename V>
void BilinearRow(const float* r0, const float* r1, const BilinearColumn* cols, int32_t out_w, int32_t depth, float fy,
                 float* out) {
  constexpr int L = V::kLanes;
  const int32_t full = depth / L * L;
  const typename V::Mask tail = V::TailMask(depth - full);
  for (int32_t x = 0; x < out_w; ++x, out += depth) {
    const BilinearColumn& col = cols[x];
    const float fx = col.fx;
    const typename V::T s00 = V::Set1((1 - fy) * (1 - fx)), s01 = V::Set1((1 - fy) * fx);
    const typename V::T s10 = V::Set1(fy * (1 - fx)), s11 = V::Set1(fy * fx);
    const float *p00 = r0 + col.x0, *p01 = r0 + col.x1, *p10 = r1 + col.x0, *p11 = r1 + col.x1;
    auto pixel = [&](typename V::T a, typename V::T b, typename V::T c, typename V::T d) {
      typename V::T acc = V::Add(V::Zero(), Opaque(V::Mul(a, s00)));
      acc = V::Add(acc, Opaque(V::Mul(b, s01)));
      acc = V::Add(acc, Opaque(V::Mul(c, s10)));
      return V::Add(acc, Opaque(V::Mul(d, s11)));
    };
    int32_t c = 0;
    for (; c < full; c += L)
      V::StoreU(out + c, pixel(V::LoadU(p00 + c), V::LoadU(p01 + c), V::LoadU(p10 + c), V::LoadU(p11 + c)));
    if (c < depth)
      V::MaskStore(out + c, tail,
                   pixel(V::MaskLoad(p00 + c, tail), V::MaskLoad(p01 + c, tail), V::MaskLoad(p10 + c, tail),
                         V::MaskLoad(p11 + c, tail)));
  }
}

}  // namespace
}  // namespace edgeopt::kernels::resize
