// Quantized PRELU (prelu_fast.cc): the per-value choice between the two branches.
#pragma once

#include <cstdint>

namespace edgeopt::kernels {

// y[i] = x[i] >= zp ? pos[i] : neg[i] for i < n (T int8 / uint8; zp within T's range).
template <typename T>
void PreluMergeAvx512(const T* x, const T* pos, const T* neg, T* y, int64_t n, int32_t zp);  // prelu_fast_avx512.cc

template <typename T>
void PreluMerge(const T* __restrict x, const T* __restrict pos, const T* __restrict neg, T* __restrict y, int64_t n,
                int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(x[i]) >= zp ? pos[i] : neg[i];
}

}  // namespace edgeopt::kernels
