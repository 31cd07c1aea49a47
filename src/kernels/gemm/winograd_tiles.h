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

// fn(image, tile row, first tile column, index of the run's first tile in [0, n), count) for the
// runs of tiles [t0, t0 + n) that share an image and a tile row (no division per tile).
template <typename Fn>
inline void ForTileRuns(const TileGeometry& g, int64_t t0, int n, const Fn& fn) {
  const int64_t per_image = int64_t{g.tiles_h} * g.tiles_w;
  int b = static_cast<int>(t0 / per_image);
  const int r = static_cast<int>(t0 % per_image);
  int ty = r / g.tiles_w, tx = r % g.tiles_w;
  for (int i = 0; i < n;) {
    const int count = std::min(n - i, g.tiles_w - tx);
    fn(b, ty, tx, i, count);
    i += count;
    tx = 0;
    if (++ty == g.tiles_h) {
      ty = 0;
      ++b;
    }
  }
}

// Per run of tiles and channel block, Bᵀ d is computed column by column (each input column once:
// neighbouring tiles share two of their four columns), then each tile's (Bᵀ d) B from its four
// columns.
template <typename V>
void InputTiles(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const typename V::Mask tail = V::TailMask(g.c % L ? g.c % L : L);
  const T zero = V::Zero();
  ForTileRuns(g, t0, n, [&](int b, int ty, int tx0, int i0, int count) {
    // The window rows' input rows (null: outside the image, read as zeros).
    const float* rows[4];
    for (int y = 0; y < 4; ++y) {
      const int iy = 2 * ty - g.pad_top + y;
      rows[y] = iy >= 0 && iy < g.h ? in + (static_cast<size_t>(b) * g.h + iy) * g.w * g.c : nullptr;
    }
    const int ix0 = 2 * tx0 - g.pad_left;
    for (int cb = 0; cb < g.c; cb += L) {
      const bool masked = cb + L > g.c;
      // Column ix of Bᵀ d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3.
      auto column = [&](int ix, T t[4]) {
        const bool inside = ix >= 0 && ix < g.w;
        T d[4];
        for (int y = 0; y < 4; ++y)
          d[y] = inside && rows[y] ? LoadBlock<V>(rows[y] + static_cast<size_t>(ix) * g.c + cb, masked, tail) : zero;
        t[0] = V::Sub(d[0], d[2]);
        t[1] = V::Add(d[1], d[2]);
        t[2] = V::Sub(d[2], d[1]);
        t[3] = V::Sub(d[1], d[3]);
      };
      T c0[4], c1[4], c2[4], c3[4];
      column(ix0, c0);
      column(ix0 + 1, c1);
      float* dst = u + static_cast<size_t>(i0) * g.c + cb;
      for (int k = 0; k < count; ++k, dst += g.c) {
        column(ix0 + 2 * k + 2, c2);
        column(ix0 + 2 * k + 3, c3);
        // (Bᵀ d) B, row by row, stored as elements e = 4y + x.
        for (int y = 0; y < 4; ++y) {
          float* o = dst + static_cast<size_t>(4 * y) * es;
          StoreBlock<V>(o, V::Sub(c0[y], c2[y]), masked, tail);
          StoreBlock<V>(o + es, V::Add(c1[y], c2[y]), masked, tail);
          StoreBlock<V>(o + 2 * es, V::Sub(c2[y], c1[y]), masked, tail);
          StoreBlock<V>(o + 3 * es, V::Sub(c1[y], c3[y]), masked, tail);
          c0[y] = c2[y];
          c1[y] = c3[y];
        }
      }
    }
  });
}

template <typename V>
void OutputTiles(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n, float* out,
                 gemm::MinMax mm) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const typename V::Mask tail = V::TailMask(g.oc % L ? g.oc % L : L);
  const T lo = V::Set1(mm.min), hi = V::Set1(mm.max);
  const size_t row_stride = static_cast<size_t>(g.ow) * g.oc;
  ForTileRuns(g, t0, n, [&](int b, int ty, int tx0, int i0, int count) {
    const int oy0 = 2 * ty, rows = std::min(2, g.oh - oy0);
    for (int k = 0; k < count; ++k) {
      const int ox0 = 2 * (tx0 + k), cols = std::min(2, g.ow - ox0);
      const float* src = m + static_cast<size_t>(i0 + k) * g.oc;
      float* o = out + ((static_cast<size_t>(b) * g.oh + oy0) * g.ow + ox0) * g.oc;
      for (int cb = 0; cb < g.oc; cb += L) {
        const bool masked = cb + L > g.oc;
        // Aᵀ M, column by column: rows m0 + m1 + m2 and m1 - m2 - m3.
        T s[2][4];
        for (int x = 0; x < 4; ++x) {
          T v[4];
          for (int y = 0; y < 4; ++y)
            v[y] = LoadBlock<V>(src + static_cast<size_t>(4 * y + x) * es + cb, masked, tail);
          s[0][x] = V::Add(V::Add(v[0], v[1]), v[2]);
          s[1][x] = V::Sub(V::Sub(v[1], v[2]), v[3]);
        }
        const T bv = LoadBlock<V>(bias + cb, masked, tail);
        for (int y = 0; y < rows; ++y) {
          const T y0 = V::Add(V::Add(V::Add(s[y][0], s[y][1]), s[y][2]), bv);
          const T y1 = V::Add(V::Sub(V::Sub(s[y][1], s[y][2]), s[y][3]), bv);
          float* r = o + static_cast<size_t>(y) * row_stride + cb;
          StoreBlock<V>(r, V::Clamp(y0, lo, hi), masked, tail);
          if (cols > 1) StoreBlock<V>(r + g.oc, V::Clamp(y1, lo, hi), masked, tail);
        }
      }
    }
  });
}

}  // namespace
}  // namespace edgeopt::kernels::winograd
