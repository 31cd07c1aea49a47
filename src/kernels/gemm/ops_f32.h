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

// (RegisterFastFloatKernels, declared in kernels/registration.h, puts these in front of the
// factories registered before it; see README.md.)

}  // namespace edgeopt::kernels
