// Internal to the transform family: one registration function per source file, all called by
// RegisterTransformKernels (register.cc).
#pragma once

#include <cstdint>

#include "runtime/registry.h"
#include "runtime/tensor.h"

namespace edgeopt::kernels::transform {

void RegisterTranspose(rt::OpRegistry& r);      // ref_transpose.cc
void RegisterConcatPack(rt::OpRegistry& r);     // ref_concat.cc: CONCATENATION, PACK
void RegisterSplitUnpack(rt::OpRegistry& r);    // ref_split.cc: SPLIT, SPLIT_V, UNPACK
void RegisterSlice(rt::OpRegistry& r);          // ref_slice.cc: SLICE, STRIDED_SLICE
void RegisterPad(rt::OpRegistry& r);            // ref_pad.cc: PAD, PADV2, MIRROR_PAD
void RegisterTileBroadcast(rt::OpRegistry& r);  // ref_tile.cc: TILE, BROADCAST_TO, REVERSE_V2
void RegisterGather(rt::OpRegistry& r);         // ref_gather.cc: GATHER, GATHER_ND, SCATTER_ND
void RegisterGatherFast(rt::OpRegistry& r);     // gather_fast.cc: GATHER rows (after RegisterGather)
void RegisterShapeOps(rt::OpRegistry& r);       // ref_shape.cc: SHAPE, RANK, RANGE, WHERE
void RegisterArgMinMax(rt::OpRegistry& r);      // ref_arg_minmax.cc: ARG_MAX, ARG_MIN

// GATHER of `idx` from `in` along `axis` with `batch_dims` (both normalized, as the reference's
// Prepare validated them): output row (b, o, c), in that order, is params row
// (b·outer + o)·axis_dim + index[b·coords + c], `row` bytes each (ref_gather.cc, gather_fast.cc).
struct GatherDims {
  int64_t batch = 1, outer = 1, coords = 1, axis_dim = 0;
  size_t row = 0;
};
GatherDims GatherDimsOf(const rt::RtTensor& in, const rt::RtTensor& idx, int axis, int batch_dims);

// b[j * b_stride + i] = a[i * a_stride + j] for i < rows, j < cols, 16x16 tiles in registers
// (transpose_avx512.cc; CPUs with AVX-512 F and BW): 4-byte elements as they are, 1- and 2-byte
// ones widened to 4 bytes on the way in and narrowed on the way out.
void Transpose2D32Avx512(const uint32_t* a, int64_t a_stride, uint32_t* b, int64_t b_stride, int64_t rows,
                         int64_t cols);
void Transpose2D16Avx512(const uint16_t* a, int64_t a_stride, uint16_t* b, int64_t b_stride, int64_t rows,
                         int64_t cols);
void Transpose2D8Avx512(const uint8_t* a, int64_t a_stride, uint8_t* b, int64_t b_stride, int64_t rows,
                        int64_t cols);

// The position of the first largest (is_max) or smallest of n > 0 values, as ARG_MAX / ARG_MIN's
// sequential strict scan finds it (arg_minmax_avx512.cc; CPUs with AVX-512 F and BW).
int64_t ArgExtremeRowAvx512(const float* p, int64_t n, bool is_max);
int64_t ArgExtremeRowAvx512(const int8_t* p, int64_t n, bool is_max);
int64_t ArgExtremeRowAvx512(const uint8_t* p, int64_t n, bool is_max);

}  // namespace edgeopt::kernels::transform
