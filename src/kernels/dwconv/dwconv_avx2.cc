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

// Eight zero floats: the input of filter columns that fall into the left/right padding.
alignas(32) const float kZeros[kChannelBlock] = {};

// T pixels × 8 channels for a compile-time stride S, dilation D and filter width KW. Per filter
// row it loads each of the (T-1)·S + (KW-1)·D + 1 input columns the T pixels use once, walking
// them with one pointer, and multiply-adds every column into all the pixels that use it: for
// 3×3 stride 1 that is 10 loads for 24 multiply-adds (instead of 24), so the kernel is bound by
// the FMA units rather than by loads and address arithmetic. kBorder: some columns may lie
// outside the image (padding); they read a zero block instead (an exact no-op for finite
// weights).
template <int T, int S, int D, int KW, bool kMasked, bool kBorder>
inline void SlidingTile(const RowTaps& rt, ptrdiff_t off, int ix0, int width, const Strides& s, const float* w,
                        float* out, __m256i mask, __m256 vmin, __m256 vmax) {
  constexpr int kCols = (T - 1) * S + (KW - 1) * D + 1;
  __m256 acc[T];
  const __m256 bias = _mm256_load_ps(w);
  for (int t = 0; t < T; ++t) acc[t] = bias;
  for (int i = 0; i < rt.n; ++i) {
    const float* wr = w + kChannelBlock + static_cast<ptrdiff_t>(rt.kys[i]) * KW * kChannelBlock;
    __m256 wv[KW];
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) wv[kx] = _mm256_load_ps(wr + kx * kChannelBlock);
    const float* p = rt.rows[i] + off;
    // Fully unrolled (the compiler stops by itself at ~16 iterations): every (column, pixel)
    // pair and its filter tap are then known at compile time and the weights stay in registers.
#pragma GCC unroll 32
    for (int c = 0; c < kCols; ++c) {
      const float* q = p;
      if constexpr (kBorder) q = static_cast<unsigned>(ix0 + c) < static_cast<unsigned>(width) ? q : kZeros;
      const __m256 x = kMasked ? _mm256_maskload_ps(q, mask) : _mm256_loadu_ps(q);
      p += s.c;
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int d = c - t * S;
        if (d >= 0 && d % D == 0 && d / D < KW) acc[t] = _mm256_fmadd_ps(x, wv[d / D], acc[t]);
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

// T pixels from output column ox over channel blocks with the sliding kernel.
template <int T, int S, int D, int KW, bool kBorder>
inline void SlidingPixels(const Geometry& g, const RowTaps& rt, int ox, int cb_begin, int cb_end, const Strides& s,
                          const float* packed, size_t wblock, float* out_row, __m256i tail_mask, __m256 vmin,
                          __m256 vmax) {
  const int ix0 = ox * S - g.pad_left;
  const int full_blocks = g.c / kChannelBlock;
  float* o = out_row + static_cast<ptrdiff_t>(ox) * g.c;
  for (int cb = cb_begin; cb < cb_end; ++cb) {
    const ptrdiff_t off = static_cast<ptrdiff_t>(ix0) * g.c + cb * kChannelBlock;
    const float* w = packed + cb * wblock;
    float* oc = o + cb * kChannelBlock;
    if (cb < full_blocks)
      SlidingTile<T, S, D, KW, false, kBorder>(rt, off, ix0, g.w, s, w, oc, tail_mask, vmin, vmax);
    else
      SlidingTile<T, S, D, KW, true, kBorder>(rt, off, ix0, g.w, s, w, oc, tail_mask, vmin, vmax);
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

// Output columns whose filter window lies inside the image: [*lo, *hi).
void InteriorColumns(const Geometry& g, int* lo, int* hi) {
  *lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int last_ix = g.w - 1 - (g.kw - 1) * g.dw + g.pad_left;  // ox * sw <= last_ix
  *hi = std::max(*lo, std::min(g.ow, last_ix < 0 ? 0 : last_ix / g.sw + 1));
}

RowTaps TapsOfRow(const Geometry& g, const float* in, int row) {
  const int b = row / g.oh, oy = row % g.oh;
  RowTaps rt;
  for (int ky = 0; ky < g.kh; ++ky) {
    const int iy = oy * g.sh - g.pad_top + ky * g.dh;
    if (iy < 0 || iy >= g.h) continue;
    rt.rows[rt.n] = in + (static_cast<ptrdiff_t>(b) * g.h + iy) * g.w * g.c;
    rt.kys[rt.n++] = ky;
  }
  return rt;
}

// Rows with the sliding kernel: compile-time horizontal stride S, dilation D, filter width KW
// (vertical stride and dilation only choose the input rows).
template <int S, int D, int KW>
void SlidingRows(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
                 int cb_begin, int cb_end, gemm::MinMax mm) {
  const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
  const __m256i tail_mask = LaneMask(g.c % kChannelBlock ? g.c % kChannelBlock : kChannelBlock);
  const size_t wblock = static_cast<size_t>(g.kh * g.kw + 1) * kChannelBlock;
  const Strides s{static_cast<ptrdiff_t>(S) * g.c, static_cast<ptrdiff_t>(D) * g.c, g.c};
  int lo, hi;
  InteriorColumns(g, &lo, &hi);
  for (int row = row_begin; row < row_end; ++row) {
    const RowTaps rt = TapsOfRow(g, in, row);
    float* out_row = out + static_cast<ptrdiff_t>(row) * g.ow * g.c;
    // Border pixels one by one (zero columns for the padding), the interior in groups of 8.
    for (int ox = 0; ox < lo; ++ox)
      SlidingPixels<1, S, D, KW, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
    int ox = lo;
    for (; ox + 8 <= hi; ox += 8)
      SlidingPixels<8, S, D, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
    if (ox + 4 <= hi) {
      SlidingPixels<4, S, D, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
      ox += 4;
    }
    if (ox + 2 <= hi) {
      SlidingPixels<2, S, D, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
      ox += 2;
    }
    if (ox < hi) SlidingPixels<1, S, D, KW, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
    for (ox = hi; ox < g.ow; ++ox)
      SlidingPixels<1, S, D, KW, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, out_row, tail_mask, vmin, vmax);
  }
}

// Rows with runtime strides, dilations and filter sizes: tiles of interior pixels, border
// pixels alone with their taps clipped. KW: compile-time filter width, or 0.
template <int KW>
void GeneralRows(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
                 int cb_begin, int cb_end, gemm::MinMax mm) {
  const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
  const __m256i tail_mask = LaneMask(g.c % kChannelBlock ? g.c % kChannelBlock : kChannelBlock);
  const size_t wblock = static_cast<size_t>(g.kh * g.kw + 1) * kChannelBlock;
  const Strides s{static_cast<ptrdiff_t>(g.sw) * g.c, static_cast<ptrdiff_t>(g.dw) * g.c, g.c};
  int lo, hi;
  InteriorColumns(g, &lo, &hi);
  for (int row = row_begin; row < row_end; ++row) {
    const RowTaps rt = TapsOfRow(g, in, row);
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
  using RowsFn = void (*)(const Geometry&, const float*, const float*, float*, int, int, int, int, gemm::MinMax);
  // Sliding instances: MobileNet / EfficientNet depthwise (3×3, 5×5, strides 1 and 2) and
  // DeepLab's dilated 3×3 (stride 1, dilation 2 and 4).
  RowsFn fn = nullptr;
  if (g.kw == 3 && g.dw == 1 && g.sw == 1) fn = SlidingRows<1, 1, 3>;
  else if (g.kw == 3 && g.dw == 1 && g.sw == 2) fn = SlidingRows<2, 1, 3>;
  else if (g.kw == 5 && g.dw == 1 && g.sw == 1) fn = SlidingRows<1, 1, 5>;
  else if (g.kw == 5 && g.dw == 1 && g.sw == 2) fn = SlidingRows<2, 1, 5>;
  else if (g.kw == 3 && g.dw == 2 && g.sw == 1) fn = SlidingRows<1, 2, 3>;
  else if (g.kw == 3 && g.dw == 4 && g.sw == 1) fn = SlidingRows<1, 4, 3>;
  else if (g.kw == 3) fn = GeneralRows<3>;
  else if (g.kw == 5) fn = GeneralRows<5>;
  else fn = GeneralRows<0>;
  fn(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
