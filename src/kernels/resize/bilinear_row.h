// The fast float32 bilinear row (see resize.h), written once over a vector type V and included
// by bilinear_f32_avx2.cc (8-lane ymm) and bilinear_f32_avx512.cc (16-lane zmm), each compiled
// with its own instruction set; internal linkage so the two copies never mix.
//
// V: the float32 vector traits of common/vec_f32.h.
#pragma once

#include "kernels/common/opaque.h"
#include "kernels/resize/resize.h"

namespace edgeopt::kernels::resize {
namespace {

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
    if (c < depth && depth >= L) {
      // The last L channels of the pixel, overlapping the ones just stored (the same values
      // again, the same bits), instead of masked loads and a masked store: DeepLabV3's final
      // 33x33x21 -> 257x257x21 resize, old and new binary alternated, 0.39-0.41 -> 0.35-0.36 ms.
      c = depth - L;
      V::StoreU(out + c, pixel(V::LoadU(p00 + c), V::LoadU(p01 + c), V::LoadU(p10 + c), V::LoadU(p11 + c)));
    } else if (c < depth) {
      V::MaskStore(out + c, tail,
                   pixel(V::MaskLoad(p00 + c, tail), V::MaskLoad(p01 + c, tail), V::MaskLoad(p10 + c, tail),
                         V::MaskLoad(p11 + c, tail)));
    }
  }
}

// int8 (resize.h): plain loops over channels in int32, which the compiler vectorizes for the
// instruction set of the including file. The rounding is the reference's: half away from zero,
// then the division by 2^20 truncating toward zero.
inline void BilinearRowInt8(const int8_t* r0, const int8_t* r1, const BilinearColumnQ* cols, int32_t out_w,
                            int32_t depth, int32_t dy, int8_t* out) {
  const int32_t wy0 = 1024 - dy;
  for (int32_t x = 0; x < out_w; ++x, out += depth) {
    const BilinearColumnQ& col = cols[x];
    const int32_t wx0 = 1024 - col.dx, wx1 = col.dx;
    const int8_t *__restrict p00 = r0 + col.x0, *__restrict p01 = r0 + col.x1, *__restrict p10 = r1 + col.x0,
                 *__restrict p11 = r1 + col.x1;
    int8_t* __restrict o = out;
#pragma GCC ivdep
    for (int32_t c = 0; c < depth; ++c) {
      const int32_t left = p00[c] * wy0 + p10[c] * dy, right = p01[c] * wy0 + p11[c] * dy;
      const int32_t v = left * wx0 + right * wx1;
      const int32_t magnitude = ((v < 0 ? -v : v) + (1 << 19)) >> 20;
      o[c] = static_cast<int8_t>(v > 0 ? magnitude : -magnitude);
    }
  }
}

}  // namespace
}  // namespace edgeopt::kernels::resize
