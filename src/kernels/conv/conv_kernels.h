// Factories of the convolution family (CONV_2D, TRANSPOSE_CONV, MediaPipe's
// Convolution2DTransposeBias), registered by RegisterConvKernels (register.cc).
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace edgeopt::kernels {

Expected<std::unique_ptr<rt::OpKernel>> CreateConv2D(const rt::KernelCreateContext& cc);
Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConv(const rt::KernelCreateContext& cc);
Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConvBias(const rt::KernelCreateContext& cc);

}  // namespace edgeopt::kernels
