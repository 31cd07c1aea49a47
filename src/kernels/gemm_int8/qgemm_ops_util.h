// Helpers shared by the GEMM-based quantized operators (conv_int8.cc, fc_int8.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/gemm_int8/qgemm.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

enum class QuantKind { kInt8, kUInt8, kHybrid, kInt16 };

// The quantized forms the GEMM path runs (input, weights, output types), or nullopt.
inline std::optional<QuantKind> ClassifyQuant(DType in, DType w, DType out) {
  if (in == DType::kInt8 && w == DType::kInt8 && out == DType::kInt8) return QuantKind::kInt8;
  if (in == DType::kUInt8 && w == DType::kUInt8 && out == DType::kUInt8) return QuantKind::kUInt8;
  if (in == DType::kFloat32 && w == DType::kInt8 && out == DType::kFloat32) return QuantKind::kHybrid;
  if (in == DType::kInt16 && w == DType::kInt8 && out == DType::kInt16) return QuantKind::kInt16;
  return std::nullopt;
}

// Weights [N][K] packed once per model (shared through the model's packed-weight cache).
std::shared_ptr<const qgemm::PackedB> GetPackedWeights(rt::KernelContext& ctx, const std::string& tag,
                                                       const rt::RtTensor& weights, int N, int K,
                                                       const std::vector<int32_t>& zero_points);

// Shifts the vectorized ruy requantization handles: left shifts of at most 30 bits (the
// reference's wider shifts are undefined behaviour in C++; such scales do not occur in practice).
inline bool ShiftsSupported(const std::vector<int>& shift) {
  for (int s : shift)
    if (s > 30) return false;
  return true;
}

// True if sum_k |w[n][k]| * 32768 < 2^31 for every n: then int16 x int8 sums cannot overflow int32
// (the reference accumulates in int64 for 16x8 with an int64 bias).
inline bool Int16SumsFitInt32(const int8_t* w, int N, int K) {
  for (int n = 0; n < N; ++n) {
    int64_t s = 0;
    for (int k = 0; k < K; ++k) s += w[int64_t{n} * K + k] < 0 ? -int64_t{w[int64_t{n} * K + k]} : w[int64_t{n} * K + k];
    if (s * 32768 >= (int64_t{1} << 31)) return false;
  }
  return true;
}

// Scratch requested with 64 spare bytes, aligned up to 64.
inline void* AlignScratch(void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((a + 63) & ~uintptr_t{63});
}

}  // namespace edgeopt::kernels
