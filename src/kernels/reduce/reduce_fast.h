// Fast float32 reductions that the reference kernels of ref.cc take outside the reference mode.
#pragma once

#include <cstdint>

namespace edgeopt::kernels {

// SUM / MEAN over a middle block of dimensions: x is [outer, rows, c] (rows reduced, c kept
// and contiguous), y is [outer, c]. Each output adds its rows in order from 0.0f, as the
// reference's row-major accumulation does, 64 channels at a time in registers; then divides by
// `divisor` (MEAN) or not (divisor 0: SUM). Bit-exact with the reference (AVX-512 F).
void ReduceMiddleSumF32Avx512(const float* x, float* y, int64_t outer, int64_t rows, int64_t c, float divisor);

// SUM / MEAN over trailing dimensions: x is [outer, rows] (rows reduced), y is [outer]. 16
// outputs at a time, one per lane, each still adding its row in order from 0.0f (16x16 blocks
// transposed in registers), so bit-exact with the reference; then the division (divisor 0: none).
void ReduceTrailingSumF32Avx512(const float* x, float* y, int64_t outer, int64_t rows, float divisor);

}  // namespace edgeopt::kernels
