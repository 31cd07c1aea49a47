// Integer dot products of hybrid ("dynamic range") CONV_2D and FULLY_CONNECTED: float
// activations quantized to int8 at every invoke (common/hybrid_quant.h) times constant int8
// weights, in int32, then scaled back to float by the op.
//
// The products run on AVX-512 VNNI (vpdpbusd: unsigned 8-bit x signed 8-bit, four per 32-bit
// lane). Activations enter as q + 128 (the sign bit flipped), so each dot product comes out as
// dot(q, w) + 128·Σw; the op subtracts (128 + zero point)·Σw per unit, which also removes the
// input zero point of asymmetric quantization. Every step wraps modulo 2^32 like the reference's
// WrapToInt32 of its exact sum, so the integers are identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgeopt::kernels::hybrid {

constexpr int kUnits = 16;  // units per block: one zmm of int32 sums

// Weights [N units][K] packed in blocks of 16 units; K in groups of 4 (zero padded to kp):
// block j, group g holds 64 bytes, unit j·16+u's weights k = 4g..4g+3 at bytes 4u..4u+3.
struct PackedWeights {
  int n = 0, k = 0, kp = 0;
  std::vector<int8_t> w;
  std::vector<int32_t> sums;  // Σ_k w[u][k] per unit (blocks·16 entries, padding units 0)
  int blocks() const { return (n + kUnits - 1) / kUnits; }
  size_t bytes() const { return w.size() + sums.size() * sizeof(int32_t); }
  static PackedWeights FromNK(const int8_t* w, int n, int k);
};

// The output stage of rows of one batch, after their products: out[u] =
// clamp(float(sum - (128 + zero_point)·Σw[u]) · scale[u] + bias[u], lo, hi), the reference's
// float operations in its order. scale: the batch's input scale times unit u's weight scale,
// multiplied as the reference multiplies them; bias: zeros when the op has none (v + 0 is v:
// v is never -0 here, the integer-to-float conversion gives +0). Both hold blocks·16 floats.
struct OutputStage {
  const float* scale;
  const float* bias;
  int32_t zero_point;
  float lo, hi;
  // Rows that are batches of their own (hybrid FULLY_CONNECTED): row r's zero point is
  // row_zero_point[r] (instead of zero_point) and its scales start at scale + r * scale_stride.
  const int32_t* row_zero_point = nullptr;
  size_t scale_stride = 0;
};

// The products of rows [0, rows) of one batch (uint8 a, kp bytes per row readable; bytes past K
// meet zero weights) with blocks [j0, j1) of units, then the output stage: out row r at
// out + r·out_stride, units past n not written.
void DotVnniFloat(const PackedWeights& p, const uint8_t* a, size_t a_stride, int rows, int j0, int j1,
                  const OutputStage& os, float* out, size_t out_stride);

}  // namespace edgeopt::kernels::hybrid
