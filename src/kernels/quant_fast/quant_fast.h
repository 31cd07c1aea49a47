// Fast integer elementwise, QUANTIZE / DEQUANTIZE, pooling and MEAN kernels (AVX2), bit-exact with
// their reference kernels. Registered by RegisterFastQuantKernels (register.cc) in front of the
// factory registered before for the op, which they get as `reference` (kernels/common/fast_kernel.h);
// nullptr means "not handled here". Each declines cc.reference_only, CPUs without AVX2+FMA and
// dtypes it does not implement; shape-dependent cases are handed back at prepare time.
#pragma once

#include <memory>

#include "kernels/common/fast_kernel.h"

namespace edgeopt::kernels {

// ADD, SUB, MUL on int8 / uint8 / int16 (quant_binary_fast.cc).
std::unique_ptr<rt::OpKernel> MakeQuantBinaryFast(const rt::KernelCreateContext& cc, RefFactory reference);

// SQUARED_DIFFERENCE on int8, AVX-512 (squared_difference_fast.cc).
std::unique_ptr<rt::OpKernel> MakeSquaredDifferenceQuantFast(const rt::KernelCreateContext& cc, RefFactory reference);

// QUANTIZE float32 -> int8/uint8/int16 and int8/uint8 -> int8/uint8, per tensor (quantize_fast.cc).
std::unique_ptr<rt::OpKernel> MakeQuantizeFast(const rt::KernelCreateContext& cc, RefFactory reference);
// DEQUANTIZE int8/uint8 -> float32, per tensor (quantize_fast.cc).
std::unique_ptr<rt::OpKernel> MakeDequantizeFast(const rt::KernelCreateContext& cc, RefFactory reference);
// AVERAGE_POOL_2D and MAX_POOL_2D on int8/uint8 (pool_fast.cc).
std::unique_ptr<rt::OpKernel> MakePoolFast(const rt::KernelCreateContext& cc, RefFactory reference);
// MEAN over axes {1, 2} of a quantized rank-4 tensor, int8/uint8/int16 (mean_fast.cc).
std::unique_ptr<rt::OpKernel> MakeMeanFast(const rt::KernelCreateContext& cc, RefFactory reference);
// PRELU on int8 / uint8, alpha broadcast over leading dimensions only (prelu_fast.cc).
std::unique_ptr<rt::OpKernel> MakePreluQuantFast(const rt::KernelCreateContext& cc, RefFactory reference);
// RELU / RELU6, LOGISTIC / TANH on int16 (act16_fast.cc).
std::unique_ptr<rt::OpKernel> MakeAct16Fast(const rt::KernelCreateContext& cc, RefFactory reference);

}  // namespace edgeopt::kernels
