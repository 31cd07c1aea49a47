// STABLEHLO_COMPOSITE (ref_composite.cc); registered by RegisterControlFlowKernels.
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {
void RegisterCompositeKernel(rt::OpRegistry& r);
}  // namespace edgeopt::kernels
