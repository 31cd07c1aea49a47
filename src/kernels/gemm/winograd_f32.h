// Float32 3×3 stride-1 CONV_2D by Winograd's minimal filtering F(2×2, 3×3) (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015): each 2×2 block of output pixels ("tile")
// comes from the 4×4 input window around it as
//
//   Y = Aᵀ [ Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B) ] A
//
// with g_c the filter of input channel c, d_c that channel's 4×4 window, and
//
//   Bᵀ = | 1  0 -1  0 |   G = | 1    0    0  |   Aᵀ = | 1  1  1  0 |
//        | 0  1  1  0 |       | 1/2  1/2  1/2 |        | 0  1 -1 -1 |
//        | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
//        | 0  1  0 -1 |       | 0    0    1  |
//
// The sum over channels of the 16 element-wise products is 16 independent GEMMs: for transform
// element e (0..15), M_e[tiles × OC] = U_e[tiles × C] · V_e[C × OC], with U the transformed inputs
// and V the transformed filters (packed once, gemm::PackedB per e). 16 multiply-adds per channel
// pair and tile instead of the direct convolution's 36 (2.25x fewer); the transforms are additions
// and subtractions only, and every matrix entry (0, ±1, ±1/2) is exact in binary floating point.
// So the rounding differs from the direct sum's only by the transforms' few extra additions.
//
// The kernel (winograd_f32.cc) cuts the tiles into blocks whose U and M fit in L2; per block:
// input transform (InputTiles), the 16 GEMMs, output transform with bias and clamp (OutputTiles).
// This header is included by winograd_avx2.cc and winograd_avx512.cc, each compiled with its own
// instruction set (V: the vector traits of common/vec_f32.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::winograd {

constexpr int kElems = 16;  // 4×4 transform elements

struct TileGeometry {
  int batch = 0, h = 0, w = 0, c = 0, oc = 0, oh = 0, ow = 0, pad_top = 0, pad_left = 0;
  int tiles_h = 0, tiles_w = 0;  // ceil(oh / 2), ceil(ow / 2)
  int64_t tiles() const { return int64_t{batch} * tiles_h * tiles_w; }
};

// Tiles [t0, t0 + n) (raster order: image, tile row, tile column) of the NHWC input into u:
// element e of tile t0 + i is the c floats at u + e·es + i·c (matrix e, n rows, starts at
// u + e·es). Input pixels outside the image are zeros.
using InputFn = void (*)(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es);
// The products m (element e of tile t0 + i: the oc floats at m + e·es + i·oc) of tiles
// [t0, t0 + n) into the NHWC output: Aᵀ M A + bias, clamped; output pixels past oh / ow are not
// written.
using OutputFn = void (*)(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n,
                          float* out, gemm::MinMax mm);

// A matrix stride (floats) of at least `floats` that puts the 16 matrices' starts 64 bytes apart
// modulo 4 KB: with a stride a multiple of 4 KB, the 16 streams a tile writes (and the output
// transform reads) fall into one set of an 8-way L1 and evict each other.
inline size_t SkewedStride(size_t floats) { return (floats + 1023) / 1024 * 1024 + 16; }

void InputTilesAvx2(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es);
void OutputTilesAvx2(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n,
                     float* out, gemm::MinMax mm);
void InputTilesAvx512(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es);
void OutputTilesAvx512(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n,
                       float* out, gemm::MinMax mm);

// The transformed filter G g Gᵀ of one 3×3 filter g (row-major) as 16 values (row-major 4×4).
void TransformFilter(const float g[9], float v[kElems]);

}  // namespace edgeopt::kernels::winograd
