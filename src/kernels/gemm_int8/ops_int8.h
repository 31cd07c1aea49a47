// Fast integer CONV_2D and FULLY_CONNECTED (AVX2 int16 GEMM; int8/uint8 on AVX-512 VNNI with the
// vpdpbusd GEMM of qgemm_vnni.h; bit-exact with the references).
//
// Registered by RegisterFastInt8Kernels (register_fast_int8.cc, after the float fast path) in
// front of the factory registered before, which it gets as `reference` (kernels/common/fast_kernel.h).
// nullptr means "not handled here": the earlier factory carries on. Declined at creation:
// cc.reference_only, a CPU without AVX2+FMA, non-constant weights or bias, grouped convolution,
// float32 convolutions (the float fast path is elsewhere).
#pragma once

#include <memory>

#include "kernels/common/fast_kernel.h"

namespace edgeopt::kernels {

// CONV_2D int8, uint8, hybrid (float input, int8 weights), 16x8.
std::unique_ptr<rt::OpKernel> MakeConv2DQuant(const rt::KernelCreateContext& cc, RefFactory reference);
// DEPTHWISE_CONV_2D int8 / uint8 over one input channel (depth multiplier M, e.g. an audio
// model's first layer over a spectrogram) on CPUs with AVX-512 VNNI: the CONV_2D kernel with M
// output channels and the filter reordered (bit-exact: same sums, same output stage). The
// depthwise loops would run it on one channel, M lanes at a time. nullptr for other ops.
std::unique_ptr<rt::OpKernel> MakeDepthwiseAsConvQuant(const rt::KernelCreateContext& cc, RefFactory reference);
// FULLY_CONNECTED int8, uint8, hybrid, 16x8.
std::unique_ptr<rt::OpKernel> MakeFullyConnectedQuant(const rt::KernelCreateContext& cc, RefFactory reference);

}  // namespace edgeopt::kernels
