// Registration entry points of the kernel families (called from register_all.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterBasicKernels(rt::OpRegistry& r);
// transform/: TRANSPOSE, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE, PAD,
// PADV2, MIRROR_PAD, TILE, BROADCAST_TO, REVERSE_V2, GATHER, GATHER_ND, SCATTER_ND, SHAPE, RANK,
// RANGE, WHERE, ARG_MAX, ARG_MIN.
void RegisterTransformKernels(rt::OpRegistry& r);
// reduce/: MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL.
void RegisterReduceKernels(rt::OpRegistry& r);
// resize/: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
// BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.
void RegisterResizeKernels(rt::OpRegistry& r);
// sparse/: DENSIFY.
void RegisterSparseKernels(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
