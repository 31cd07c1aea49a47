// Float32 ADD / SUB / MUL with a fused clamp, on runs of elements where each operand either
// advances with the output or stays on one value (broadcast).
#pragma once

#include <cstddef>

#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::binary {

enum class Op { kAdd, kSub, kMul };

// out[i] = clamp(a[a_scalar ? 0 : i] op b[b_scalar ? 0 : i]) for i in [0, n).
void RunAvx2(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
             gemm::MinMax mm);
void RunScalar(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm);

}  // namespace edgeopt::kernels::binary
