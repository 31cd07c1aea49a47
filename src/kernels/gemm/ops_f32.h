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
// The CONV_2D kernel for a DEPTHWISE_CONV_2D over one input channel with depth multiplier
// `channels` > 1 (an audio model's first layer over a spectrogram), its filter reordered to
// [channels][kh][kw][1]: the depthwise rows vectorize over channels and would run it scalar.
// For MakeDepthwiseConv2DF32's kernel, which validates the op and hands Prepare/Invoke over
// (pixels: output pixels when known, else -1; pointwise: 1x1 at stride 1).
std::unique_ptr<rt::OpKernel> MakeDepthwiseAsConvF32(const rt::CpuFeatures& cpu, int kh, int kw, int channels,
                                                     int64_t pixels, bool pointwise, float act_min, float act_max);
std::unique_ptr<rt::OpKernel> MakeAveragePool2DF32(const rt::KernelCreateContext& cc);
std::unique_ptr<rt::OpKernel> MakeMaxPool2DF32(const rt::KernelCreateContext& cc);
// ADD, SUB, MUL (the op code is read from cc.op).
std::unique_ptr<rt::OpKernel> MakeBinaryF32(const rt::KernelCreateContext& cc);

// 3×3 stride-1 CONV_2D by Winograd F(2×2, 3×3) (winograd_f32.h), or null where it does not apply:
// other filters, strides or dilations; fewer than kWinogradMinInputChannels input or
// kWinogradMinOutputChannels output channels; no AVX2 + FMA; EDGEOPT_WINOGRAD=0 in the
// environment. MakeConv2DF32 asks it first. Single layers against the direct convolution (Zen 4,
// in-process A/B, 1 thread): 8 -> 16 1.11x, 8 -> 32 1.30x, 16 -> 16 1.30-1.36x, 16 -> 32 1.6x,
// 32 -> 32 1.35-1.57x, 64 -> 64 1.6-1.9x, 128 -> 128 1.8-1.9x, 256 -> 256 1.83x, 512 -> 512 at 7×7
// 1.14x; but 8 -> 8 0.57-0.68x, 16 -> 8 0.91x (half-empty vectors and GEMM panels), hence the
// thresholds.
constexpr int kWinogradMinInputChannels = 8;
constexpr int kWinogradMinOutputChannels = 16;
std::unique_ptr<rt::OpKernel> MakeConv2DWinogradF32(const rt::KernelCreateContext& cc, float act_min, float act_max);

// (RegisterFastFloatKernels, declared in kernels/registration.h, puts these in front of the
// factories registered before it; see README.md.)

}  // namespace edgeopt::kernels
