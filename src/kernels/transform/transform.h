// Internal to the transform family: one registration function per source file, all called by
// RegisterTransformKernels (register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::transform {

void RegisterTranspose(rt::OpRegistry& r);      // ref_transpose.cc
void RegisterConcatPack(rt::OpRegistry& r);     // ref_concat.cc: CONCATENATION, PACK
void RegisterSplitUnpack(rt::OpRegistry& r);    // ref_split.cc: SPLIT, SPLIT_V, UNPACK
void RegisterSlice(rt::OpRegistry& r);          // ref_slice.cc: SLICE, STRIDED_SLICE
void RegisterPad(rt::OpRegistry& r);            // ref_pad.cc: PAD, PADV2, MIRROR_PAD
void RegisterTileBroadcast(rt::OpRegistry& r);  // ref_tile.cc: TILE, BROADCAST_TO, REVERSE_V2
void RegisterGather(rt::OpRegistry& r);         // ref_gather.cc: GATHER, GATHER_ND, SCATTER_ND
void RegisterShapeOps(rt::OpRegistry& r);       // ref_shape.cc: SHAPE, RANK, RANGE, WHERE
void RegisterArgMinMax(rt::OpRegistry& r);      // ref_arg_minmax.cc: ARG_MAX, ARG_MIN

}  // namespace edgeopt::kernels::transform
