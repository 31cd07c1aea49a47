// Depthwise convolution rows (see dwconv.h for the scheme), written once over a vector type:
// included by dwconv_avx2.cc (8-lane ymm, `Avx2Vec`) and dwconv_avx512.cc (16-lane zmm), each
// compiled with its own instruction set. Everything here has internal linkage on purpose: each
// of those files gets its own copy, so the linker can never hand AVX-512 code to the AVX2 path.
//
// V: the float32 vector traits of common/vec_f32.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>

#include "kernels/dwconv/dwconv.h"

namespace edgeopt::kernels::dwconv {
namespace {

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

// Clamps T accumulators and stores them at out, out + c_stride, ...
template <typename V, int T, bool kMasked>
inline void StoreTile(const typename V::T* acc, float* out, ptrdiff_t c_stride, typename V::Mask mask,
                      typename V::T vmin, typename V::T vmax) {
  for (int t = 0; t < T; ++t) {
    const typename V::T v = V::Clamp(acc[t], vmin, vmax);
    if (kMasked)
      V::MaskStore(out + t * c_stride, mask, v);
    else
      V::StoreU(out + t * c_stride, v);
  }
}

// T output pixels × one channel block (V::kLanes channels). `off` is the offset of pixel 0's
// first filter column (kx = 0) plus the channel block, inside each input row. kClip: only filter
// columns [kx0, kx1).
template <typename V, int T, int KW, bool kMasked, bool kClip>
inline void Tile(const RowTaps& rt, ptrdiff_t off, int kx0, int kx1, int kw_rt, const Strides& s, const float* w,
                 float* out, typename V::Mask mask, typename V::T vmin, typename V::T vmax) {
  constexpr int L = V::kLanes;
  const int kw = KW ? KW : kw_rt;
  typename V::T acc[T];
  const typename V::T bias = V::Load(w);
  for (int t = 0; t < T; ++t) acc[t] = bias;
  const int x_begin = kClip ? kx0 : 0;
  const int x_end = kClip ? kx1 : kw;
  for (int i = 0; i < rt.n; ++i) {
    const float* wr = w + L + static_cast<ptrdiff_t>(rt.kys[i]) * kw * L;
    const float* r = rt.rows[i] + off;
    for (int kx = x_begin; kx < x_end; ++kx) {
      const typename V::T wv = V::Load(wr + kx * L);
      const float* p = r + kx * s.kx;
      for (int t = 0; t < T; ++t) {
        const typename V::T x = kMasked ? V::MaskLoad(p + t * s.x, mask) : V::LoadU(p + t * s.x);
        acc[t] = V::Fma(x, wv, acc[t]);
      }
    }
  }
  StoreTile<V, T, kMasked>(acc, out, s.c, mask, vmin, vmax);
}

// Zero floats: the input of filter columns that fall into the left/right padding.
alignas(64) const float kZeros[16] = {};

// T pixels × 8 channels for a compile-time stride S, dilation D and filter width KW. Per filter
// row it loads each of the (T-1)·S + (KW-1)·D + 1 input columns the T pixels use once, walking
// them with one pointer, and multiply-adds every column into all the pixels that use it: for
// 3×3 stride 1 that is 10 loads for 24 multiply-adds (instead of 24), so the kernel is bound by
// the FMA units rather than by loads and address arithmetic. kBorder: some columns may lie
// outside the image (padding); they read a zero block instead (an exact no-op for finite
// weights).
template <typename V, int T, int S, int D, int KW, bool kMasked, bool kBorder>
inline void SlidingTile(const RowTaps& rt, ptrdiff_t off, int ix0, int width, const Strides& s, const float* w,
                        float* out, typename V::Mask mask, typename V::T vmin, typename V::T vmax) {
  constexpr int L = V::kLanes;
  constexpr int kCols = (T - 1) * S + (KW - 1) * D + 1;
  typename V::T acc[T];
  const typename V::T bias = V::Load(w);
  for (int t = 0; t < T; ++t) acc[t] = bias;
  for (int i = 0; i < rt.n; ++i) {
    const float* wr = w + L + static_cast<ptrdiff_t>(rt.kys[i]) * KW * L;
    typename V::T wv[KW];
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) wv[kx] = V::Load(wr + kx * L);
    const float* p = rt.rows[i] + off;
    // Fully unrolled (the compiler stops by itself at ~16 iterations): every (column, pixel)
    // pair and its filter tap are then known at compile time and the weights stay in registers.
#pragma GCC unroll 32
    for (int c = 0; c < kCols; ++c) {
      const float* q = p;
      if constexpr (kBorder) q = static_cast<unsigned>(ix0 + c) < static_cast<unsigned>(width) ? q : kZeros;
      const typename V::T x = kMasked ? V::MaskLoad(q, mask) : V::LoadU(q);
      p += s.c;
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int d = c - t * S;
        if (d >= 0 && d % D == 0 && d / D < KW) acc[t] = V::Fma(x, wv[d / D], acc[t]);
      }
    }
  }
  StoreTile<V, T, kMasked>(acc, out, s.c, mask, vmin, vmax);
}

// Two output rows at once (a row pair) when the filter's vertical stride, dilation and size are
// the horizontal ones (S, D, KW): rows A and B = A + q, q = lcm(S, D) / S (1, or D at stride 1
// with dilation D, so that the two rows' taps overlap), read input rows y0 + ky·D and
// y0 + kOff + ky·D (kOff = q·S = lcm(S, D)), and each input row is loaded once for both (3x3
// stride 1: four input rows for two output rows instead of six), with 16 independent
// accumulators where one row's 8 each took 9 dependent multiply-adds. `row0`: input row y0.
// Measured (Zen 5, 1 thread, alternated runs): 3x3 layers 0.72-0.84 of the time (14x14x576
// 23.2 -> 16.6 us, 7x7x960 8.6 -> 6.9 us, 112x112x96 stride 2 87 -> 73 us), 5x5 0.70-0.87; whole
// models (one interpreter, the two alternated invoke by invoke): MobileNetV2 float 0.973,
// MobileNetV1 0.25 0.958, vww_96 0.966, hand_landmark_full 0.965, pose_landmark_full 0.968,
// selfie_segmentation 0.965, DeepLabV3 0.998 (its depthwise layers run inside fused chains in
// bands of few rows); 2 threads 0.965-0.979. Dilated 3x3 (DeepLab's 33x33x480, 65x65x144) with
// q = D against pairs of adjacent rows (whose taps do not overlap): 0.77-0.83 (d2), 0.83 (d4).
template <int S, int D>
constexpr int kPairOffset = std::lcm(S, D);

struct PairRows {
  const float* row0;
  ptrdiff_t pitch;  // floats per input row
};

// Input row r of a pair multiply-added into the pixels of row A and / or row B that read it.
template <typename V, int T, int S, int D, int KW, bool kMasked, bool kBorder, int R>
__attribute__((always_inline)) inline void PairRow(const float* p, int ix0, int width, ptrdiff_t cs, const float* w,
                                                   typename V::T (&aa)[T], typename V::T (&ab)[T],
                                                   typename V::Mask mask) {
  constexpr int L = V::kLanes;
  constexpr int kCols = (T - 1) * S + (KW - 1) * D + 1;
  constexpr int kOff = kPairOffset<S, D>;
  constexpr bool kA = R % D == 0 && R / D < KW;
  constexpr bool kB = R >= kOff && (R - kOff) % D == 0 && (R - kOff) / D < KW;
  if constexpr (kA || kB) {
    typename V::T va[KW], vb[KW];
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) {
      if constexpr (kA) va[kx] = V::Load(w + L + ((R / D) * KW + kx) * L);
      if constexpr (kB) vb[kx] = V::Load(w + L + (((R - kOff) / D) * KW + kx) * L);
    }
#pragma GCC unroll 32
    for (int c = 0; c < kCols; ++c) {
      const float* q = p;
      if constexpr (kBorder) q = static_cast<unsigned>(ix0 + c) < static_cast<unsigned>(width) ? q : kZeros;
      const typename V::T x = kMasked ? V::MaskLoad(q, mask) : V::LoadU(q);
      p += cs;
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int d = c - t * S;
        if (d >= 0 && d % D == 0 && d / D < KW) {
          if constexpr (kA) aa[t] = V::Fma(x, va[d / D], aa[t]);
          if constexpr (kB) ab[t] = V::Fma(x, vb[d / D], ab[t]);
        }
      }
    }
  }
}

template <typename V, int T, int S, int D, int KW, bool kMasked, bool kBorder, int... R>
__attribute__((always_inline)) inline void PairRowsOf(std::integer_sequence<int, R...>, const PairRows& pr,
                                                      ptrdiff_t off, int ix0, int width, ptrdiff_t cs, const float* w,
                                                      typename V::T (&aa)[T], typename V::T (&ab)[T],
                                                      typename V::Mask mask) {
  (PairRow<V, T, S, D, KW, kMasked, kBorder, R>(pr.row0 + R * pr.pitch + off, ix0, width, cs, w, aa, ab, mask), ...);
}

// T pixels × one channel block of a row pair (out: row A's, out + out_row: row B's).
template <typename V, int T, int S, int D, int KW, bool kMasked, bool kBorder>
inline void SlidingTilePair(const PairRows& pr, ptrdiff_t off, int ix0, int width, const Strides& s, const float* w,
                            float* out, ptrdiff_t out_row, typename V::Mask mask, typename V::T vmin,
                            typename V::T vmax) {
  typename V::T aa[T], ab[T];
  const typename V::T bias = V::Load(w);
  for (int t = 0; t < T; ++t) aa[t] = ab[t] = bias;
  constexpr int kRows = kPairOffset<S, D> + (KW - 1) * D + 1;  // input rows the pair spans
  PairRowsOf<V, T, S, D, KW, kMasked, kBorder>(std::make_integer_sequence<int, kRows>{}, pr, off, ix0, width, s.c, w,
                                               aa, ab, mask);
  StoreTile<V, T, kMasked>(aa, out, s.c, mask, vmin, vmax);
  StoreTile<V, T, kMasked>(ab, out + out_row, s.c, mask, vmin, vmax);
}

// Channel blocks [cb_begin, cb_end) of the pixels from output column ox, whose first filter
// column reads input column ix0: block.template operator()<kMasked>(off, w, out), with `off` the
// offset of that input column and channel block inside an input row, `w` the block's packed
// weights, `out` its first output; kMasked for the last, partial block.
template <int L, typename Block>
inline void ForChannelBlocks(const Geometry& g, int ox, int ix0, int cb_begin, int cb_end, const float* packed,
                             size_t wblock, float* out_row, const Block& block) {
  const int full_blocks = g.c / L;
  float* o = out_row + static_cast<ptrdiff_t>(ox) * g.c;
  for (int cb = cb_begin; cb < cb_end; ++cb) {
    const ptrdiff_t off = static_cast<ptrdiff_t>(ix0) * g.c + cb * L;
    if (cb < full_blocks)
      block.template operator()<false>(off, packed + cb * wblock, o + cb * L);
    else
      block.template operator()<true>(off, packed + cb * wblock, o + cb * L);
  }
}

// T pixels from output column ox over channel blocks with the sliding kernel.
template <typename V, int T, int S, int D, int KW, bool kBorder>
inline void SlidingPixels(const Geometry& g, const RowTaps& rt, int ox, int cb_begin, int cb_end, const Strides& s,
                          const float* packed, size_t wblock, float* out_row, typename V::Mask tail_mask,
                          typename V::T vmin, typename V::T vmax) {
  const int ix0 = ox * S - g.pad_left;
  ForChannelBlocks<V::kLanes>(g, ox, ix0, cb_begin, cb_end, packed, wblock, out_row,
                              [&]<bool kMasked>(ptrdiff_t off, const float* w, float* oc) {
                                SlidingTile<V, T, S, D, KW, kMasked, kBorder>(rt, off, ix0, g.w, s, w, oc, tail_mask,
                                                                              vmin, vmax);
                              });
}

template <typename V, int T, int S, int D, int KW, bool kBorder>
inline void SlidingPixelsPair(const Geometry& g, const PairRows& pr, int ox, int cb_begin, int cb_end,
                              const Strides& s, const float* packed, size_t wblock, float* out_row,
                              typename V::Mask tail_mask, typename V::T vmin, typename V::T vmax) {
  const int ix0 = ox * S - g.pad_left;
  const ptrdiff_t out_row_floats = static_cast<ptrdiff_t>(kPairOffset<S, D> / S) * g.ow * g.c;
  ForChannelBlocks<V::kLanes>(g, ox, ix0, cb_begin, cb_end, packed, wblock, out_row,
                              [&]<bool kMasked>(ptrdiff_t off, const float* w, float* oc) {
                                SlidingTilePair<V, T, S, D, KW, kMasked, kBorder>(pr, off, ix0, g.w, s, w, oc,
                                                                                  out_row_floats, tail_mask, vmin,
                                                                                  vmax);
                              });
}

// One group of T interior pixels (or one clipped border pixel) over channel blocks.
template <typename V, int T, int KW, bool kClip>
inline void Pixels(const Geometry& g, const RowTaps& rt, int ox, int cb_begin, int cb_end, const Strides& s,
                   const float* packed, size_t wblock, float* out_row, typename V::Mask tail_mask, typename V::T vmin,
                   typename V::T vmax) {
  const int ix0 = ox * g.sw - g.pad_left;
  int kx0 = 0, kx1 = g.kw;
  if (kClip) {
    kx0 = ix0 < 0 ? (-ix0 + g.dw - 1) / g.dw : 0;
    kx1 = g.w - 1 - ix0 < 0 ? 0 : std::min(g.kw, (g.w - 1 - ix0) / g.dw + 1);
  }
  ForChannelBlocks<V::kLanes>(g, ox, ix0, cb_begin, cb_end, packed, wblock, out_row,
                              [&]<bool kMasked>(ptrdiff_t off, const float* w, float* oc) {
                                Tile<V, T, KW, kMasked, kClip>(rt, off, kx0, kx1, g.kw, s, w, oc, tail_mask, vmin,
                                                               vmax);
                              });
}

// Output columns whose filter window lies inside the image: [*lo, *hi).
void InteriorColumns(const Geometry& g, int* lo, int* hi) {
  *lo = std::min(g.ow, (g.pad_left + g.sw - 1) / g.sw);
  const int last_ix = g.w - 1 - (g.kw - 1) * g.dw + g.pad_left;  // ox * sw <= last_ix
  *hi = std::max(*lo, std::min(g.ow, last_ix < 0 ? 0 : last_ix / g.sw + 1));
}

// Output rows `row` and `row + q` as a pair (Group's S, D, KW vertically too, both rows in one
// image with all their filter rows inside it), or false: the rows run alone.
template <int S, int D, int KW>
bool PairOfRows(const Geometry& g, const float* in, int row, PairRows* pr) {
  constexpr int kOff = kPairOffset<S, D>;
  const int b = row / g.oh, oy = row % g.oh;
  if (g.sh != S || g.dh != D || g.kh != KW || oy + kOff / S >= g.oh) return false;
  const int iy = oy * S - g.pad_top;
  if (iy < 0 || iy + kOff + (KW - 1) * D >= g.h) return false;
  pr->pitch = static_cast<ptrdiff_t>(g.w) * g.c;
  pr->row0 = in + (static_cast<ptrdiff_t>(b) * g.h + iy - g.in_row0) * pr->pitch;
  return true;
}

RowTaps TapsOfRow(const Geometry& g, const float* in, int row) {
  const int b = row / g.oh, oy = row % g.oh;
  RowTaps rt;
  for (int ky = 0; ky < g.kh; ++ky) {
    const int iy = oy * g.sh - g.pad_top + ky * g.dh;
    if (iy < 0 || iy >= g.h) continue;
    rt.rows[rt.n] = in + (static_cast<ptrdiff_t>(b) * g.h + iy - g.in_row0) * g.w * g.c;
    rt.kys[rt.n++] = ky;
  }
  return rt;
}

// One group of T output pixels from column ox (kBorder: a single pixel whose window may leave
// the image) over channel blocks: the sliding kernel for compile-time stride S, dilation D,
// filter width KW, ...
template <typename V, int S, int D, int KW>
struct SlidingGroup {
  static constexpr bool kSliding = true;
  template <int T, bool kBorder, bool kPair = false, typename... Args>
  static void Run(const Args&... args) {
    if constexpr (kPair) SlidingPixelsPair<V, T, S, D, KW, kBorder>(args...);
    else SlidingPixels<V, T, S, D, KW, kBorder>(args...);
  }
  // A pair's second row is kPairRows below its first.
  static constexpr int kPairRows = kPairOffset<S, D> / S;
  static bool Pair(const Geometry& g, const float* in, int row, PairRows* pr) {
    return PairOfRows<S, D, KW>(g, in, row, pr);
  }
};
// ... or the general kernel (runtime strides, dilations, filter sizes; border taps clipped).
// KW: compile-time filter width, or 0.
template <typename V, int KW>
struct GeneralGroup {
  static constexpr bool kSliding = false;
  template <int T, bool kBorder, typename... Args>
  static void Run(const Args&... args) { Pixels<V, T, KW, kBorder>(args...); }
};

// A sliding group of n (1..8) pixels from column ox (kPair: of a row pair); kBorder where it
// reaches a border column.
template <typename V, typename Group, bool kPair, int T = 8, typename... Args>
inline void SlidingRun(int n, bool border, const Args&... args) {
  if constexpr (T > 1) {
    if (n < T) return SlidingRun<V, Group, kPair, T - 1>(n, border, args...);
  }
  if (border) Group::template Run<T, true, kPair>(args...);
  else Group::template Run<T, false, kPair>(args...);
}

// Output rows [row_begin, row_end). Sliding kernels (with zmm, two rows at once where both read
// all their filter rows: PairRows): groups of 8 pixels across the whole row and one of the 1..7
// left, those that reach a border column reading zeros there (a 7-wide row of a 5x5 filter is
// one group of 7, not seven groups of 1 or 2 with every weight loaded again).
// General kernels: border pixels one by one, the interior in groups of 8, 4, 2, 1 (groups of 16
// with zmm vectors were tried: GCC then spills, 3-5× slower).
template <typename V, typename Group>
void GroupRows(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
               int cb_begin, int cb_end, gemm::MinMax mm) {
  constexpr int L = V::kLanes;
  const typename V::T vmin = V::Set1(mm.min), vmax = V::Set1(mm.max);
  const typename V::Mask tail_mask = V::TailMask(g.c % L ? g.c % L : L);
  const size_t wblock = static_cast<size_t>(g.kh * g.kw + 1) * L;
  const Strides s{static_cast<ptrdiff_t>(g.sw) * g.c, static_cast<ptrdiff_t>(g.dw) * g.c, g.c};
  int lo, hi;
  InteriorColumns(g, &lo, &hi);
  if constexpr (Group::kSliding) {
    // Over 4 or more output rows, channel blocks in chunks whose input rows shared by
    // consecutive output rows (kh·dh + sh of them) fill at most kSharedRowsBytes, so the next
    // output rows find them in L2 (L1 for the small ones), while each pixel's chunk is still a
    // run of chunk · 64 contiguous bytes that the hardware prefetchers follow. A 32 KB (L1)
    // bound against none had given (in-process A/B, 1 thread): MobileNetV2 float 0.984,
    // DeepLabV3 0.987, pose_landmark_full 0.981, hand_landmark_full 0.977 of the time. 256 KB
    // against 32 KB (one interpreter, the two alternated invoke by invoke, 80 pairs, Zen 4):
    // 1 thread MobileNetV2 0.984, DeepLabV3 0.976 (its 33×33×480 dilated layers 0.80-0.86: at 32 KB
    // one 16-channel block per pass, each pixel a lone 64-byte line 1920 bytes from the last),
    // pose_landmark_full 0.980, hand_landmark_full 0.989, selfie_segmentation 0.972, Objectron
    // chair 0.984; 2 threads MobileNetV2 0.982, DeepLabV3 0.962, hand_landmark_full 0.988. 128 KB
    // and 512 KB did less well on average (0.980-1.004, 0.968-1.009).
    constexpr int64_t kSharedRowsBytes = 256 * 1024;
    const int64_t shared_bytes = (int64_t{g.kh} * g.dh + g.sh) * g.w * L * static_cast<int64_t>(sizeof(float));
    const int cb_chunk = row_end - row_begin >= 4
                             ? static_cast<int>(std::max<int64_t>(1, kSharedRowsBytes / shared_bytes))
                             : cb_end - cb_begin;
    for (int cb0 = cb_begin; cb0 < cb_end; cb0 += cb_chunk) {
      const int cb1 = std::min(cb_end, cb0 + cb_chunk);
      for (int row = row_begin; row < row_end;) {
        // Where the registers hold two rows' accumulators and filter rows (2·8 + 2·KW + 1 vectors:
        // zmm only), rows [row, row + 2q) as the q pairs (row + i, row + q + i).
        if constexpr (V::kRegisters >= 32) {
          constexpr int q = Group::kPairRows;
          PairRows pr[q];
          bool pairs = row + 2 * q <= row_end;
          for (int i = 0; i < q && pairs; ++i) pairs = Group::Pair(g, in, row + i, &pr[i]);
          if (pairs) {
            for (int i = 0; i < q; ++i) {
              float* o = out + static_cast<ptrdiff_t>(row + i - g.out_row0) * g.ow * g.c;
              for (int ox = 0; ox < g.ow;) {
                const int n = std::min(8, g.ow - ox);
                SlidingRun<V, Group, true>(n, ox < lo || ox + n > hi, g, pr[i], ox, cb0, cb1, s, packed, wblock, o,
                                           tail_mask, vmin, vmax);
                ox += n;
              }
            }
            row += 2 * q;
            continue;
          }
        }
        const RowTaps rt = TapsOfRow(g, in, row);
        float* o = out + static_cast<ptrdiff_t>(row - g.out_row0) * g.ow * g.c;
        for (int ox = 0; ox < g.ow;) {
          const int n = std::min(8, g.ow - ox);
          SlidingRun<V, Group, false>(n, ox < lo || ox + n > hi, g, rt, ox, cb0, cb1, s, packed, wblock, o, tail_mask,
                                      vmin, vmax);
          ox += n;
        }
        ++row;
      }
    }
    return;
  }
  for (int row = row_begin; row < row_end; ++row) {
    const RowTaps rt = TapsOfRow(g, in, row);
    float* o = out + static_cast<ptrdiff_t>(row - g.out_row0) * g.ow * g.c;
    for (int ox = 0; ox < lo; ++ox)
      Group::template Run<1, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
    int ox = lo;
    for (; ox + 8 <= hi; ox += 8)
      Group::template Run<8, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
    if (ox + 4 <= hi) {
      Group::template Run<4, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
      ox += 4;
    }
    if (ox + 2 <= hi) {
      Group::template Run<2, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
      ox += 2;
    }
    if (ox < hi) Group::template Run<1, false>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
    for (ox = hi; ox < g.ow; ++ox)
      Group::template Run<1, true>(g, rt, ox, cb_begin, cb_end, s, packed, wblock, o, tail_mask, vmin, vmax);
  }
}

// The instance for g: sliding kernels for MobileNet / EfficientNet depthwise (3×3, 5×5, strides
// 1 and 2) and DeepLab's dilated 3×3 (stride 1, dilation 2 and 4), the general one otherwise.
template <typename V>
void RowsOf(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
            int cb_begin, int cb_end, gemm::MinMax mm) {
  using RowsFn = void (*)(const Geometry&, const float*, const float*, float*, int, int, int, int, gemm::MinMax);
  RowsFn fn = nullptr;
  if (g.kw == 3 && g.dw == 1 && g.sw == 1) fn = GroupRows<V, SlidingGroup<V, 1, 1, 3>>;
  else if (g.kw == 3 && g.dw == 1 && g.sw == 2) fn = GroupRows<V, SlidingGroup<V, 2, 1, 3>>;
  else if (g.kw == 5 && g.dw == 1 && g.sw == 1) fn = GroupRows<V, SlidingGroup<V, 1, 1, 5>>;
  else if (g.kw == 5 && g.dw == 1 && g.sw == 2) fn = GroupRows<V, SlidingGroup<V, 2, 1, 5>>;
  else if (g.kw == 3 && g.dw == 2 && g.sw == 1) fn = GroupRows<V, SlidingGroup<V, 1, 2, 3>>;
  else if (g.kw == 3 && g.dw == 4 && g.sw == 1) fn = GroupRows<V, SlidingGroup<V, 1, 4, 3>>;
  else if (g.kw == 3) fn = GroupRows<V, GeneralGroup<V, 3>>;
  else if (g.kw == 5) fn = GroupRows<V, GeneralGroup<V, 5>>;
  else fn = GroupRows<V, GeneralGroup<V, 0>>;
  fn(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace
}  // namespace edgeopt::kernels::dwconv
