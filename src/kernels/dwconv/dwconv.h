// Float32 depthwise convolution kernels (NHWC, filter [1, KH, KW, C·depth_multiplier]).
//
// The vector kernels (depth multiplier 1; dwconv_rows.h, on 8-lane AVX2 or 16-lane AVX-512
// vectors) work on one output row at a time: for a tile of up to 8 output pixels and one channel
// block (a vector) they keep 8 accumulators in registers and, per filter tap, load the tap's
// weights once and multiply-add them into all 8 pixels, so every multiply-add needs
// about one load (the input) — instead of two (input and weight) when pixels are done one by one.
// With 32 vector registers (AVX-512) two output rows whose filter rows all lie inside the image
// run together, each input row loaded once for both. Filter rows that fall into the top/bottom
// padding are skipped; columns in the left/right padding are handled by running border pixels
// alone with the taps clipped. 3×3 and 5×5 filters
// get instances with the filter width known at compile time; other sizes, strides and dilations
// run the same code with runtime loops. The last channel block is masked.
//
// Weights are packed once per channel block of B = 8 (AVX2) or 16 (AVX-512) channels:
// [bias B][tap 0: B]...[tap KH·KW-1: B], with zeros past the last channel.
#pragma once

#include <cstddef>

#include "kernels/common/nn_util.h"
#include "kernels/gemm/aligned.h"
#include "kernels/gemm/gemm.h"

namespace edgeopt::rt {
class ThreadPool;
}

namespace edgeopt::kernels::dwconv {

constexpr int kAvx2ChannelBlock = 8;
constexpr int kAvx512ChannelBlock = 16;

struct Geometry {
  int batch = 0, h = 0, w = 0, c = 0;  // input (c = input channels)
  int oh = 0, ow = 0;
  int kh = 0, kw = 0;
  int sh = 1, sw = 1, dh = 1, dw = 1;
  int pad_top = 0, pad_left = 0;
  int depth_multiplier = 1;
  // Row bases of `in` and `out`: input row b·h + iy is read at in + (b·h + iy - in_row0)·w·c and
  // output row r is written at out + (r - out_row0)·ow·oc, so a caller can hand in and take out
  // a band of rows in a small buffer (kernels/fused). 0: whole tensors.
  int in_row0 = 0, out_row0 = 0;
  int out_c() const { return c * depth_multiplier; }
};

// The geometry of a DEPTHWISE_CONV_2D with input [batch, h, w, c], filter [1, kh, kw, c·dm] and
// the window ComputeConvWindow gave for it.
inline Geometry GeometryOf(const tflite::DepthwiseConv2DOptionsT& o, const WindowGeometry& wg, int batch, int h, int w,
                           int c, int kh, int kw, int depth_multiplier) {
  Geometry g;
  g.batch = batch;
  g.h = h;
  g.w = w;
  g.c = c;
  g.oh = wg.out_h;
  g.ow = wg.out_w;
  g.kh = kh;
  g.kw = kw;
  g.sh = o.stride_h;
  g.sw = o.stride_w;
  g.dh = o.dilation_h_factor;
  g.dw = o.dilation_w_factor;
  g.pad_top = wg.pad_h;
  g.pad_left = wg.pad_w;
  g.depth_multiplier = depth_multiplier;
  return g;
}

// Packs filter [1, kh, kw, c] (depth multiplier 1) and bias [c] (or null) into channel blocks
// of `block` channels.
AlignedFloats PackWeights(const float* filter, const float* bias, int kh, int kw, int c, int block);
inline int ChannelBlocks(int c, int block) { return (c + block - 1) / block; }

// Output rows [row_begin, row_end) of the batch·oh rows, channel blocks [cb_begin, cb_end).
// Depth multiplier 1 only. `packed` comes from PackWeights with kAvx2ChannelBlock /
// kAvx512ChannelBlock. RowsAvx512 needs CpuFeatures::has_avx512().
void RowsAvx2(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
              int cb_begin, int cb_end, gemm::MinMax mm);
void RowsAvx512(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
                int cb_begin, int cb_end, gemm::MinMax mm);

// The vector row kernel of one instruction set, its channel block and its packing key.
struct VectorRows {
  const char* isa;       // "avx512", "avx2": the last part of variant names
  const char* pack_key;  // names the packed layout (PackWeights with `block`)
  int block;
  decltype(&RowsAvx2) rows;
};
// The row kernel for c channels on this CPU, or null without AVX2+FMA. Up to 8 channels fill
// only half of a zmm block: AVX2 is faster there (112×112×8 3×3: 34 vs 30 GFLOP/s on Zen 4),
// AVX-512 from 9 channels on.
const VectorRows* SelectVectorRows(const rt::CpuFeatures& cpu, int c);

// All output rows of g (depth multiplier 1) with `vec`'s row kernel and weights packed for it,
// split over the pool's threads (rows first; channel blocks too when there are few rows).
void RunVectorRows(rt::ThreadPool& pool, const VectorRows& vec, const Geometry& g, const float* in,
                   const float* packed, float* out, gemm::MinMax mm);

// Portable path for any depth multiplier (also the fallback without AVX2): filter [1,kh,kw,oc]
// and bias as in the model. Output rows [row_begin, row_end).
void RowsGeneric(const Geometry& g, const float* in, const float* filter, const float* bias, float* out,
                 int row_begin, int row_end, gemm::MinMax mm);

}  // namespace edgeopt::kernels::dwconv
