// Helpers shared by the GEMM-based quantized operators (conv_int8.cc, fc_int8.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/gemm_int8/qgemm.h"
#include "kernels/gemm_int8/qgemm_vnni.h"
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
// The same for the VNNI GEMM (int8 / uint8 weights, one zero point). With seg > 0 each weight
// row's runs of `seg` values (K a multiple of seg) start every `seg_stride` k instead, the gaps
// holding the zero point (so they add nothing): packed K = K / seg * seg_stride. CONV_2D's
// direct path uses it to give each filter row whole k groups of 4 (see conv_int8.cc).
std::shared_ptr<const qgemm::PackedB8> GetPackedWeightsVnni(rt::KernelContext& ctx, const std::string& tag,
                                                            const rt::RtTensor& weights, int N, int K,
                                                            const std::vector<int32_t>& zero_points, int seg = 0,
                                                            int seg_stride = 0);

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

// The checks every GEMM operator's factory makes: AVX2+FMA, not reference-only, constant dense
// weights (and bias).
bool GemmOpEligible(const rt::KernelCreateContext& cc);

// What PrepareGemmOutput needs to know about the operator.
struct GemmOpSpec {
  QuantKind kind = QuantKind::kInt8;
  int N = 0, K = 0;  // output channels, reduction depth
  int activation = 0;  // tflite::ActivationFunctionType
  // int8/uint8 and 16x8: per-channel multipliers (ComputePerChannelQuant) or one legacy
  // multiplier for all channels.
  bool per_channel_multipliers = true;
  // int8/uint8: per channel sum_k |w - weight zero point| (PackedB::abs_sum, PackedB8::abs_sum),
  // which with the input's range bounds the accumulators (lets BuildRequant8 fold the bias);
  // null: no bound known.
  const std::vector<int64_t>* abs_sum = nullptr;
  // 16x8: the reference's rounding with an int32 bias, an int64 bias and no bias (kInt64Bias
  // requires sums that fit int32, else the op goes to the reference).
  qgemm::Int16Rounding int16_int32_bias = qgemm::Int16Rounding::kGemmlowp32;
  qgemm::Int16Rounding int16_int64_bias = qgemm::Int16Rounding::kInt64Bias;
  qgemm::Int16Rounding int16_no_bias = qgemm::Int16Rounding::kInt64Bias;
  // 16x8: the CPU runs the AVX-512 VNNI GEMM (qgemm::Int16VnniChunk); used when the rounding
  // has its output stage (qgemm::BuildInt16VnniOutput).
  bool int16_vnni = false;
};

// Output-stage state of a GEMM operator (conv_int8.cc, fc_int8.cc), per kind, built at Prepare.
struct GemmOpOutput {
  QuantKind kind = QuantKind::kInt8;
  qgemm::Requant8 q8;             // int8 / uint8
  std::vector<float> col_scale;   // hybrid: weight scale per output channel
  float fact_min = 0, fact_max = 0;
  std::vector<int32_t> mult;      // 16x8
  std::vector<int> shift;
  qgemm::Int16Rounding rounding = qgemm::Int16Rounding::kGemmlowp32;
  int32_t act_min = 0, act_max = 0;
  bool use_i16v = false;          // 16x8 on AVX-512 VNNI
  qgemm::Int16VnniOutput i16v;
};

// Builds `st` from the op's tensors (input 0, weights 1, bias 2, output 0). false: a case the
// vectorized output stages do not handle (the op goes to the reference kernel).
Expected<bool> PrepareGemmOutput(rt::KernelContext& ctx, const GemmOpSpec& spec, GemmOpOutput* st);

// The GemmOutput of one invoke: C is the op's output with row stride ldc. Hybrid: row_scale holds
// the per-batch input scales, rows_per_batch GEMM rows belong to one batch.
qgemm::GemmOutput MakeGemmOutput(const GemmOpOutput& st, rt::KernelContext& ctx, int64_t ldc,
                                 const float* row_scale = nullptr, int64_t rows_per_batch = 1);

// Scratch requested with 64 spare bytes, aligned up to 64.
inline void* AlignScratch(void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((a + 63) & ~uintptr_t{63});
}

}  // namespace edgeopt::kernels
