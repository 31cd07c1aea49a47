// Fast float32 operators built on the packed GEMM (this folder), the depthwise kernels
// (kernels/dwconv), pooling (kernels/pool_f32) and binary elementwise (kernels/binary_f32).
//
// Contract (see kernels/gemm/README.md): each Make* function looks at the op statically (types,
// constant weights, options, CPU features) and returns a kernel when it handles the case, or
// nullptr when it does not (reference_only set, non-float types, non-constant weights, an
// activation that is not a clamp, ...): the caller then uses its reference kernel. A returned
// kernel validates shapes in Prepare with the same messages a reference kernel would give.
// With AVX2+FMA the kernels use AVX2 micro-kernels ("<op>/f32/avx2"), otherwise portable ones
// with the same packing ("<op>/f32/scalar").
#pragma once

#include <memory>

#include "runtime/kernel.h"

namespace edgeopt::kernels {

std::unique_ptr<rt::OpKernel> MakeConv2DF32(const rt::KernelCreateContext& cc);
std::unique_ptr<rt::OpKernel> MakeFullyConnectedF32(const rt::KernelCreateContext& cc);
std::unique_ptr<rt::OpKernel> MakeDepthwiseConv2DF32(const rt::KernelCreateContext& cc);
std::unique_ptr<rt::OpKernel> MakeAveragePool2DF32(const rt::KernelCreateContext& cc);
std::unique_ptr<rt::OpKernel> MakeMaxPool2DF32(const rt::KernelCreateContext& cc);
// ADD, SUB, MUL (the op code is read from cc.op).
std::unique_ptr<rt::OpKernel> MakeBinaryF32(const rt::KernelCreateContext& cc);

// 3×3 stride-1 CONV_2D by Winograd F(2×2, 3×3) (winograd_f32.h), or null where it does not apply:
// other filters, strides or dilations; fewer than kWinogradMinChannels input or output channels
// or a product of the two below kWinogradMinChannelProduct; no AVX2 + FMA; EDGEOPT_WINOGRAD=0 in
// the environment. MakeConv2DF32 asks it first. Single layers against the direct convolution
// (Zen 4, in-process A/B, 1 thread): 16 -> 16 channels 0.86-1.14x (so not taken), 16 -> 32
// 1.13-1.32x, 24 -> 24 1.15-1.26x, 32 -> 32 1.43-1.56x, 64 -> 64 1.59-1.83x, 128 -> 128
// 1.86-1.93x, 256 -> 256 1.73-2.0x, 512 -> 512 at 7×7 1.27-1.35x.
constexpr int kWinogradMinChannels = 16;
constexpr int kWinogradMinChannelProduct = 512;
std::unique_ptr<rt::OpKernel> MakeConv2DWinogradF32(const rt::KernelCreateContext& cc, float act_min, float act_max);

// (RegisterFastFloatKernels, declared in kernels/registration.h, puts these in front of the
// factories registered before it; see README.md.)

}  // namespace edgeopt::kernels
