// Factories of the convolution family (CONV_2D, TRANSPOSE_CONV, MediaPipe's
// Convolution2DTransposeBias), registered by RegisterConvKernels (register.cc).
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace edgeopt::kernels {

Expected<std::unique_ptr<rt::OpKernel>> CreateConv2D(const rt::KernelCreateContext& cc);
Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConv(const rt::KernelCreateContext& cc);
Expected<std::unique_ptr<rt::OpKernel>> CreateTransposeConvBias(const rt::KernelCreateContext& cc);

// Float 1x1 CONV_2D with sparse weights: wraps the dense kernel in the sparse variant
// (sparse_conv1x1.cc); returns `dense` as is when the op does not qualify.
std::unique_ptr<rt::OpKernel> MaybeSparseConv1x1(const rt::KernelCreateContext& cc, std::unique_ptr<rt::OpKernel> dense);

}  // namespace edgeopt::kernels
