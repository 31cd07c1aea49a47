// Internal to the sequence family: one registration function per source file, all called by
// RegisterSequenceKernels (register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::sequence {

void RegisterCumsum(rt::OpRegistry& r);              // ref_cumsum.cc: CUMSUM
void RegisterDynamicUpdateSlice(rt::OpRegistry& r);  // ref_update_slice.cc: DYNAMIC_UPDATE_SLICE
void RegisterReverseSequence(rt::OpRegistry& r);     // ref_reverse_sequence.cc: REVERSE_SEQUENCE
void RegisterBroadcastArgs(rt::OpRegistry& r);       // ref_broadcast_args.cc: BROADCAST_ARGS
void RegisterMatrixDiag(rt::OpRegistry& r);          // ref_matrix_diag.cc: MATRIX_DIAG, MATRIX_SET_DIAG

}  // namespace edgeopt::kernels::sequence
