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
