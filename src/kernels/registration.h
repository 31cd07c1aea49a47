// Registration entry points of the kernel families (called from register_all.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterBasicKernels(rt::OpRegistry& r);
// Fast float32 kernels in front of the factories registered before (kernels/gemm/README.md):
// call after the reference families.
void RegisterFastFloatKernels(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
