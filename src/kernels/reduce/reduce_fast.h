// Fast float32 reductions that the reference kernels of ref.cc take outside the reference mode.
#pragma once

#include <cstdint>

namespace edgeopt::kernels {

// How the fast float reductions combine: acc + v (SUM / MEAN), v > acc ? v : acc (MAX),
// v < acc ? v : acc (MIN), as ref.cc's loops (maxps / minps with v first are exactly those
// selections, NaN included).
enum class ReduceCombine { kAdd, kMax, kMin };

// Over a middle block of dimensions: x is [outer, rows, c] (rows reduced, c kept and
// contiguous), y is [outer, c]. Each output combines its rows in order from `init`, as the
// reference's row-major accumulation does, 64 channels at a time in registers; then divides by
// `divisor` (MEAN) or not (divisor 0). Bit-exact with the reference (AVX-512 F).
void ReduceMiddleF32Avx512(ReduceCombine op, float init, const float* x, float* y, int64_t outer, int64_t rows,
                           int64_t c, float divisor);

// Over trailing dimensions: x is [outer, rows] (rows reduced), y is [outer]. 16 outputs at a
// time, one per lane, each still combining its row in order from `init` (16x16 blocks transposed
// in registers), so bit-exact with the reference; then the division (divisor 0: none).
void ReduceTrailingF32Avx512(ReduceCombine op, float init, const float* x, float* y, int64_t outer, int64_t rows,
                             float divisor);

}  // namespace edgeopt::kernels
