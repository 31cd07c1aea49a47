// Hybrid ("dynamic range") DEPTHWISE_CONV_2D on the float depthwise kernels (hybrid_depthwise.cc).
#pragma once

#include <memory>

#include "kernels/common/fast_kernel.h"

namespace edgeopt::kernels::hybrid {

// The kernel for a DEPTHWISE_CONV_2D with float input and output and constant int8 weights, or
// null when this CPU or op is not one it runs (then `reference`'s factory chain takes it), or
// when the environment sets EDGEOPT_HYBRID_DEQUANT=0 at interpreter creation: then the hybrid
// depthwise quantizes its input as TFLite's does (kernels/depthwise), bit-exact with TFLite 2.9.
std::unique_ptr<rt::OpKernel> MakeHybridDepthwise(const rt::KernelCreateContext& cc, RefFactory reference);

}  // namespace edgeopt::kernels::hybrid
