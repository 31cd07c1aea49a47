// Registration entry points of the kernel families (called from register_all.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterBasicKernels(rt::OpRegistry& r);
// Fast float32 kernels (kernels/gemm/register_fast_f32.cc); temporary, see kernels/gemm/README.md.
void RegisterFastFloatKernels(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
