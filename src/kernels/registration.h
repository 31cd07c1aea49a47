// Registration entry points of the kernel families (called from register_all.cc).
#pragma once

#include "runtime/registry.h"

namespace edgeopt::kernels {

void RegisterBasicKernels(rt::OpRegistry& r);
// Neural-network families: conv/ (CONV_2D, TRANSPOSE_CONV, Convolution2DTransposeBias),
// depthwise/, fully_connected/, matmul/ (BATCH_MATMUL), pooling/.
void RegisterConvKernels(rt::OpRegistry& r);
void RegisterDepthwiseKernels(rt::OpRegistry& r);
void RegisterFullyConnectedKernels(rt::OpRegistry& r);
void RegisterMatMulKernels(rt::OpRegistry& r);
void RegisterPoolingKernels(rt::OpRegistry& r);

}  // namespace edgeopt::kernels
