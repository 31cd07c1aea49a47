// AVX2 + FMA depthwise convolution rows (see dwconv.h for the scheme).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>

#include "kernels/dwconv/dwconv.h"

namespace edgeopt::kernels::dwconv {
namespace {

inline __m256i LaneMask(int n) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
}

// What one row needs: the input rows of the filter taps that are inside the image.
struct RowTaps {
  const float* rows[64];
  int kys[64];
  int n = 0;
};

struct Strides {
  ptrdiff_t x;   // floats between the inputs of neighbouring output pixels (sw · C)
  ptrdiff_t kx;  // floats between neighbouring filter columns (dw · C)
  ptrdiff_t c;   // floats per pixel (C), also between neighbouring output pixels
};

// T output pixels × 8 channels. `off` is the offset of pixel 0's first filter column (kx = 0)
// plus the channel block, inside each input row. kClip: only filter columns [kx0, kx1).
template <int T, int KW, bool kMasked, bool kClip>
inline void Tile(const RowTaps& rt, ptrdiff_t off, int kx0, int kx1, int kw_rt, const Strides& s, const float* w,
                 float* out, __m256i mask, __m256 vmin, __m256 vmax) {
  const int kw = KW ? KW : kw_rt;
  __m256 acc[T];
  const __m256 bias = _mm256_load_ps(w);
  for (int t = 0; t < T; ++t) acc[t] = bias;
  const int x_begin = kClip ? kx0 : 0;
  const int x_end = kClip ? kx1 : kw;
  for (int i = 0; i < rt.n; ++i) {
    const float* wr = w + kChannelBlock + static_cast<ptrdiff_t>(rt.kys[i]) * kw * kChannelBlock;
    const float* r = rt.rows[i] + off;
    for (int kx = x_begin; kx < x_end; ++kx) {
      const __m256 wv = _mm256_load_ps(wr + kx * kChannelBlock);
      const float* p = r + kx * s.kx;
      for (int t = 0; t < T; ++t) {
        const __m256 x = kMasked ? _mm256_maskload_ps(p + t * s.x, mask) : _mm256_loadu_ps(p + t * s.x);
        acc[t] = _mm256_fmadd_ps(x, wv, acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    const __m256 v = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[t]));
    if (kMasked)
      _mm256_maskstore_ps(out + t * s.c, mask, v);
    else
      _mm256_storeu_ps(out + t * s.c, v);
  }
}

// One group of T interior pixels (or one clipped border pixel) over channel blocks.
template <int T, int KW, bool kClip>
inline void Pixels(const Geometry& g, const RowTaps& rt, int ox, int cb_begin, int cb_end, const Strides& s,
                   const float* packed, size_t wblock, float* out_row, __m256i tail_mask, __m256 vmin, __m256 vmax) {
  const int ix0 = ox * g.sw - g.pad_left;
  int kx0 = 0, kx1 = g.kw;
  if (kClip) {
    kx0 = ix0 < 0 ? (-ix0 + g.dw - 1) / g.dw : 0;
    kx1 = g.w - 1 - ix0 < 0 ? 0 : std::min(g.kw, (g.w - 1 - ix0) / g.dw + 1);
  }
  const int full_blocks = g.c / kChannelBlock;
  float* o = out_row + static_cast<ptrdiff_t>(ox) * g.c;
  for (int cb = cb_begin; cb < cb_end; ++cb) {
    const ptrdiff_t off = static_cast<ptrdiff_t>(ix0) * g.c + cb * kChannelBlock;
    const float* w = packed + cb * wblock;
    float* oc = o + cb * kChannelBlock;
    if (cb < full_blocks)
      Tile<T, KW, false, kClip>(rt, off, kx0, kx1, g.kw, s, w, oc, tail_mask, vmin, vmax);
    else
      Tile<T, KW, true, kClip>(rt, off, kx0, kx1, g.kw, s, w, oc, tail_mask, vmin, vmax);
  }
}

template <int KW>
void Rows(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
          int cb_begin, int cb_end, gemm::MinMax mm) {
  const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
  const __m256i tail_mask = LaneMask(g.c % kChannelBlock ? g.c % kChannelBlock : kChannelBlock);
  const size_t wblock = static_cast<size_t>(g.kh * g.kw + 1) * kChannelBlock;
  const Strides s{static_cast<ptrdiff_t>(g.sw) * g.c, static_cast<ptrdiff_t>(g.dw) * g.c, g.c};
  // Output columns whose filter window lies inside the image: [lo, hi).
  const int lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int last_ix = g.w - 1 - (g.kw - 1) * g.dw + g.pad_left;  // ox * sw <= last_ix
  const int hi = std::max(lo, std::min(g.ow, last_ix < 0 ? 0 : last_ix / g.sw + 1));
  for (int row = row_begin; row < row_end; ++row) {
    const int b = row / g.oh, oy = row % g.oh;
    RowTaps rt;
    for (int ky = 0; ky < g.kh; ++ky) {
      const int iy = oy * g.sh - g.pad_top + ky * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      rt.rows[rt.n] = in + (static_cast<ptrdiff_t>(b) * g.h + iy) * g.w * g.c;
      rt.kys[rt.n++] = ky;
    }
    float* out_row = out + static_cast<ptrdiff_t>(row) * g.ow * g.c;
    for (int ox = 0; ox < lo; ++ox)
      Pixels<1, KW, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
    int ox = lo;
    for (; ox + 8 <= hi; ox += 8)
      Pixels<8, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
    if (ox + 4 <= hi) {
      Pixels<4, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
      ox += 4;
    }
    if (ox + 2 <= hi) {
      Pixels<2, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
      ox += 2;
    }
    if (ox < hi) {
      Pixels<1, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
      ++ox;
    }
    for (ox = hi; ox < g.ow; ++ox)
      Pixels<1, KW, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
  }
}

}  // namespace

void RowsAvx2(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
              int cb_begin, int cb_end, gemm::MinMax mm) {
  if (g.kw == 3)
    Rows<3>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
  else if (g.kw == 5)
    Rows<5>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
  else
    Rows<0>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
