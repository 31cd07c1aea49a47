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
// A CONV_2D int8 kernel that can also read its input as the uint8 tensor an exact QUANTIZE made
// it from (x_int8 = x_uint8 - 128: the same scale, zero points 128 apart; models with a uint8
// interface start that way): its VNNI paths flip int8 inputs into the uint8 domain anyway, so
// with the uint8 tensor they skip the flip and the QUANTIZE (fused/quantize_into_conv.cc).
class Uint8InputConv {
 public:
  virtual ~Uint8InputConv() = default;
  // After Prepare: whether InvokeWithUint8Input runs (the VNNI paths of an int8 convolution).
  virtual bool TakesUint8Input() const = 0;
  // Invoke with ctx.input(0)'s values given as x_u8 = x ^ 0x80 (ctx.input(0) gives the shape
  // and the quantization).
  virtual Status InvokeWithUint8Input(rt::KernelContext& ctx, const uint8_t* x_u8) = 0;
};

// FULLY_CONNECTED int8, uint8, hybrid, 16x8.
std::unique_ptr<rt::OpKernel> MakeFullyConnectedQuant(const rt::KernelCreateContext& cc, RefFactory reference);

}  // namespace edgeopt::kernels
