// The F(2×2, 3×3) input and output transforms (see winograd_f32.h), written once over a vector
// type: included by winograd_avx2.cc (8 lanes) and winograd_avx512.cc (16 lanes), each compiled
// with its own instruction set; internal linkage, so each file keeps its own copy. Channels are
// the vector lanes (NHWC: a pixel's channels are contiguous); the last block is masked.
#pragma once

#include <algorithm>

#include "kernels/gemm/winograd_f32.h"

namespace edgeopt::kernels::winograd {
namespace {

template <typename V>
inline typename V::T LoadBlock(const float* p, bool masked, typename V::Mask mask) {
  return masked ? V::MaskLoad(p, mask) : V::LoadU(p);
}

template <typename V>
inline void StoreBlock(float* p, typename V::T v, bool masked, typename V::Mask mask) {
  if (masked)
    V::MaskStore(p, mask, v);
  else
    V::StoreU(p, v);
}

// Tile t's image, first input row and column (of its 4×4 window) and first output row / column.
struct TilePos {
  int b, iy0, ix0, oy0, ox0;
};
inline TilePos PosOf(const TileGeometry& g, int64_t t) {
  const int64_t per_image = int64_t{g.tiles_h} * g.tiles_w;
  const int b = static_cast<int>(t / per_image), r = static_cast<int>(t % per_image);
  const int oy0 = 2 * (r / g.tiles_w), ox0 = 2 * (r % g.tiles_w);
  return {b, oy0 - g.pad_top, ox0 - g.pad_left, oy0, ox0};
}

template <typename V>
void InputTiles(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, int64_t ld) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const size_t es = static_cast<size_t>(ld) * g.c;  // floats between the matrices of e and e + 1
  const typename V::Mask tail = V::TailMask(g.c % L ? g.c % L : L);
  const T zero = V::Zero();
  for (int i = 0; i < n; ++i) {
    const TilePos p = PosOf(g, t0 + i);
    // The window's 16 pixels (null: outside the image, read as zeros).
    const float* px[4][4];
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        const int iy = p.iy0 + y, ix = p.ix0 + x;
        px[y][x] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w
                       ? in + ((static_cast<size_t>(p.b) * g.h + iy) * g.w + ix) * g.c
                       : nullptr;
      }
    float* dst = u + static_cast<size_t>(i) * g.c;
    for (int cb = 0; cb < g.c; cb += L) {
      const bool masked = cb + L > g.c;
      // Bᵀ d, column by column: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3.
      T t[4][4];
      for (int x = 0; x < 4; ++x) {
        T d[4];
        for (int y = 0; y < 4; ++y) d[y] = px[y][x] ? LoadBlock<V>(px[y][x] + cb, masked, tail) : zero;
        t[0][x] = V::Sub(d[0], d[2]);
        t[1][x] = V::Add(d[1], d[2]);
        t[2][x] = V::Sub(d[2], d[1]);
        t[3][x] = V::Sub(d[1], d[3]);
      }
      // (Bᵀ d) B, row by row, stored as elements e = 4y + x.
      for (int y = 0; y < 4; ++y) {
        float* o = dst + static_cast<size_t>(4 * y) * es + cb;
        StoreBlock<V>(o, V::Sub(t[y][0], t[y][2]), masked, tail);
        StoreBlock<V>(o + es, V::Add(t[y][1], t[y][2]), masked, tail);
        StoreBlock<V>(o + 2 * es, V::Sub(t[y][2], t[y][1]), masked, tail);
        StoreBlock<V>(o + 3 * es, V::Sub(t[y][1], t[y][3]), masked, tail);
      }
    }
  }
}

template <typename V>
void OutputTiles(const TileGeometry& g, const float* m, int64_t ld, const float* bias, int64_t t0, int n, float* out,
                 gemm::MinMax mm) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const size_t es = static_cast<size_t>(ld) * g.oc;
  const typename V::Mask tail = V::TailMask(g.oc % L ? g.oc % L : L);
  const T lo = V::Set1(mm.min), hi = V::Set1(mm.max);
  for (int i = 0; i < n; ++i) {
    const TilePos p = PosOf(g, t0 + i);
    const int rows = std::min(2, g.oh - p.oy0), cols = std::min(2, g.ow - p.ox0);
    const float* src = m + static_cast<size_t>(i) * g.oc;
    float* o = out + ((static_cast<size_t>(p.b) * g.oh + p.oy0) * g.ow + p.ox0) * g.oc;
    const size_t row_stride = static_cast<size_t>(g.ow) * g.oc;
    for (int cb = 0; cb < g.oc; cb += L) {
      const bool masked = cb + L > g.oc;
      // Aᵀ M, column by column: rows m0 + m1 + m2 and m1 - m2 - m3.
      T s[2][4];
      for (int x = 0; x < 4; ++x) {
        T v[4];
        for (int y = 0; y < 4; ++y) v[y] = LoadBlock<V>(src + static_cast<size_t>(4 * y + x) * es + cb, masked, tail);
        s[0][x] = V::Add(V::Add(v[0], v[1]), v[2]);
        s[1][x] = V::Sub(V::Sub(v[1], v[2]), v[3]);
      }
      const T b = LoadBlock<V>(bias + cb, masked, tail);
      for (int y = 0; y < rows; ++y) {
        const T y0 = V::Add(V::Add(V::Add(s[y][0], s[y][1]), s[y][2]), b);
        const T y1 = V::Add(V::Sub(V::Sub(s[y][1], s[y][2]), s[y][3]), b);
        float* r = o + static_cast<size_t>(y) * row_stride + cb;
        StoreBlock<V>(r, V::Clamp(y0, lo, hi), masked, tail);
        if (cols > 1) StoreBlock<V>(r + g.oc, V::Clamp(y1, lo, hi), masked, tail);
      }
    }
  }
}

}  // namespace
}  // namespace edgeopt::kernels::winograd
