// CONCATENATION's requantization of 8/16-bit inputs (see ref_concat.cc), vectorized.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace edgeopt::kernels::transform {

// n values of `type` (uint8, int8 or int16), bit-exact with ref_concat.cc's Requantize.
using ConcatRequantizeFn = void (*)(DType type, const uint8_t* in, uint8_t* out, int64_t n, float in_scale,
                                    int32_t in_zp, float inverse_out_scale, int32_t out_zp);
void ConcatRequantizeAvx512(DType type, const uint8_t* in, uint8_t* out, int64_t n, float in_scale, int32_t in_zp,
                            float inverse_out_scale, int32_t out_zp);
void ConcatRequantizeAvx2(DType type, const uint8_t* in, uint8_t* out, int64_t n, float in_scale, int32_t in_zp,
                          float inverse_out_scale, int32_t out_zp);

// CONCATENATION whose inputs are all copied as they are in rows of at most 64 bytes (few
// channels along the last axis), on AVX-512 BW: out row k is input 0's row k, input 1's row k,
// ...; each row one masked 64-byte load and a plain 64-byte store whose spill past the row the
// next rows overwrite (rows written in address order), masked stores only where a spill would
// leave the output (out_bytes). Each row otherwise costs a memcpy call.
void ConcatShortRowsAvx512(const uint8_t* const* srcs, const int* row_bytes, int inputs, int64_t outer, uint8_t* out,
                           int64_t out_bytes);

// Calls run(in, out) with the pointers typed as `type` (uint8, int8, else int16).
template <typename Run>
void WithRequantType(DType type, const uint8_t* in, uint8_t* out, Run&& run) {
  if (type == DType::kUInt8)
    run(in, out);
  else if (type == DType::kInt8)
    run(reinterpret_cast<const int8_t*>(in), reinterpret_cast<int8_t*>(out));
  else
    run(reinterpret_cast<const int16_t*>(in), reinterpret_cast<int16_t*>(out));
}

}  // namespace edgeopt::kernels::transform
