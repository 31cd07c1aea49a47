// Float32 ADD / SUB / MUL / DIV with a fused clamp, SQUARED_DIFFERENCE, MAXIMUM and MINIMUM, on
// runs of elements where each operand either advances with the output or stays on one value
// (broadcast). Every op is one IEEE operation per element (two for SQUARED_DIFFERENCE), as the
// reference computes it, so results are bit-exact: MAXIMUM is a > b ? a : b and MINIMUM
// a < b ? a : b, which is what (v)maxps / (v)minps compute, NaN and signed zeros included.
#pragma once

#include <cstddef>

#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::binary {

enum class Op { kAdd, kSub, kMul, kDiv, kSquaredDifference, kMaximum, kMinimum };

// out[i] = clamp(a[a_scalar ? 0 : i] op b[b_scalar ? 0 : i]) for i in [0, n).
void RunAvx512(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm);  // binary_avx512.cc: needs CpuFeatures::has_avx512()
void RunAvx2(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
             gemm::MinMax mm);
void RunScalar(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm);

}  // namespace edgeopt::kernels::binary
