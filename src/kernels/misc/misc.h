// Internal to the misc family (SPARSE_TO_DENSE, UNIQUE, FAKE_QUANT): one registration function
// per source file, all called by RegisterMiscKernels (register.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels::misc_ops {

void RegisterSparseToDense(rt::OpRegistry& r);  // ref_sparse_to_dense.cc: SPARSE_TO_DENSE
void RegisterUnique(rt::OpRegistry& r);         // ref_unique.cc: UNIQUE
void RegisterFakeQuant(rt::OpRegistry& r);      // ref_fake_quant.cc: FAKE_QUANT

}  // namespace edgeopt::kernels::misc_ops
