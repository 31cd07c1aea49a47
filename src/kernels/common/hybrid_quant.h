// On-the-fly input quantization of hybrid ("dynamic range") kernels: float activations are
// quantized to int8 per batch row at every invoke, multiplied with int8 weights in integers and
// scaled back to float. Exactly LiteRT's tensor_utils::{Symmetric,Asymmetric}QuantizeFloats
// (TFLite 2.9), so the integer dot products match the reference runtime bit for bit.
#pragma once

#include <cstdint>

namespace edgeopt::rt {
class ThreadPool;
}

namespace edgeopt::kernels {

// Symmetric: q = round(x * 127 / max|x|) in [-127, 127]; *scale = max|x| / 127.
// An all-zero row gives q = 0 and *scale = 1.
void SymmetricQuantizeFloats(const float* values, int64_t n, int8_t* quantized, float* scale);

// Asymmetric: the row's range [min(0, min x), max(0, max x)] mapped to [-128, 127] with a nudged
// zero point; q = clamp(round(zero_point + x / scale)). A constant-zero row gives q = 0,
// *scale = 1, *zero_point = 0.
void AsymmetricQuantizeFloats(const float* values, int64_t n, int8_t* quantized, float* scale, int32_t* zero_point);

// The parameters alone, from a row's minimum and maximum (for vector versions of the loops
// above). False for an all-zero range: then every q is 0 and *scale = 1 (*zero_point = 0).
bool SymmetricParams(float lo, float hi, float* scale, float* inverse);
bool AsymmetricParams(float lo, float hi, float* scale, int32_t* zero_point, float* inverse);

// Quantizes `rows` rows of `cols` floats each, symmetric or asymmetric (zero_points may be null
// when symmetric; they are then not written).
void QuantizeRows(const float* values, int64_t rows, int64_t cols, bool asymmetric, int8_t* quantized, float* scales,
                  int32_t* zero_points);

// QuantizeRows on AVX-512 (F, BW, VL, DQ: the caller checks), the same bytes, scales and zero
// points (hybrid_quant_avx512.cc); long rows are split between the pool's threads if one is given.
void QuantizeRowsAvx512(const float* values, int64_t rows, int64_t cols, bool asymmetric, int8_t* quantized,
                        float* scales, int32_t* zero_points, rt::ThreadPool* pool = nullptr);

// Whether hybrid kernels with little arithmetic per weight (DEPTHWISE_CONV_2D, LSTM) may run on
// their int8 weights dequantized to float at load: yes unless the environment sets
// EDGEOPT_HYBRID_DEQUANT=0, which keeps LiteRT's hybrid arithmetic (the input quantized at every
// invoke). Read when a kernel is created.
bool HybridDequantAllowed();

}  // namespace edgeopt::kernels
