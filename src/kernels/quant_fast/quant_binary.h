// Quantized ADD / SUB / MUL parameters shared by the reference kernel (elementwise/ref_binary.cc)
// and the AVX2 kernel (quant_binary_avx2.cc), so both compute their multipliers from one piece
// of code (TFLite 2.9's expressions; a different rounding there changes results).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels {

struct QuantBinaryParams {
  // ADD/SUB: v_i = MBQM((offset_i + x_i) << left_shift, mult_i, shift_i);
  //          out = clamp(MBQM(v1 ± v2, out_mult, out_shift) + out_offset).
  // MUL:     out = clamp(MBQM((offset_1 + x_1) * (offset_2 + x_2), out_mult, out_shift) + out_offset).
  int32_t in1_offset = 0, in2_offset = 0, out_offset = 0;
  int32_t in1_mult = 0, in2_mult = 0, out_mult = 0;
  int in1_shift = 0, in2_shift = 0, out_shift = 0, left_shift = 0;
  int32_t act_min = 0, act_max = 0;
  bool sub = false;
  // int16 ADD/SUB on power-of-two scales (pot_scale_int16): v_i = RoundingDivideByPOT(x_i, pot_shift_i),
  // out = clamp(saturate_int16(v1 ± v2)).
  bool pot_int16 = false;
  int in1_pot_shift = 0, in2_pot_shift = 0;
};

// ADD/SUB multipliers (TFLite's PrepareGeneralSubOp / add.cc): both inputs on a common scale
// twice the larger input scale after a left shift (20 bits for 8-bit types, 15 for int16).
inline void ComputeAddSubMultipliers(float sa, float sb, float so, int left_shift, QuantBinaryParams* p) {
  p->left_shift = left_shift;
  const double twice_max_input_scale = static_cast<double>(2 * std::max(sa, sb));
  const double real1 = sa / twice_max_input_scale;
  const double real2 = sb / twice_max_input_scale;
  const double real_out = twice_max_input_scale / static_cast<double>((1 << left_shift) * so);
  QuantizeMultiplier(real1, &p->in1_mult, &p->in1_shift);
  QuantizeMultiplier(real2, &p->in2_mult, &p->in2_shift);
  QuantizeMultiplier(real_out, &p->out_mult, &p->out_shift);
}

// MUL: one multiplier, the scale product taken in float as TFLite does.
inline void ComputeMulMultiplier(float sa, float sb, float so, QuantBinaryParams* p) {
  const double real = static_cast<double>(sa * sb / so);
  QuantizeMultiplier(real, &p->out_mult, &p->out_shift);
}

// One ADD/SUB input value on the common scale (the scalar reference step).
inline int32_t AddSubScaledInput(int32_t x, int32_t offset, int left_shift, int32_t mult, int shift) {
  return MultiplyByQuantizedMultiplier((offset + x) * (1 << left_shift), mult, shift);
}

namespace qbin {

// AVX2 runs (quant_binary_avx2.cc): o[i] = op(a[i * a_step], b[i * b_step]) for i < n, steps 0
// or 1, bit-exact with the scalar formulas above. T is int8_t, uint8_t or int16_t.
template <typename T>
void AddSubRun(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p);
void AddSubPotInt16Run(const int16_t* a, int a_step, const int16_t* b, int b_step, int16_t* o, int64_t n,
                       const QuantBinaryParams& p);
template <typename T>
void MulRun(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p);

// A per-channel vector over the last dimension: `full` holds rows x channels values, the other
// input one value per channel, given already scaled (ADD/SUB: AddSubScaledInput; MUL: offset +
// value) in `vec`, padded with zeros to a multiple of 8. full_is_first: `full` is input 0.
template <typename T>
void AddSubChannelRows(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                       const QuantBinaryParams& p);
template <typename T>
void MulChannelRows(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                    const QuantBinaryParams& p);

// AVX-512 int8 / uint8 ADD/SUB (quant_binary_avx512.cc): the same runs with 16 lanes, exact in
// 32-bit lanes on the input step. Only for parameters where AddSubAvx512Applies (8-bit offsets,
// left shift 20, multipliers >= 0, shifts within [-31, 0] for the inputs and [-31, 31] for the
// output: what ComputeAddSubMultipliers produces for 8-bit types); `vec` padded to 16.
bool AddSubAvx512Applies(const QuantBinaryParams& p);
template <typename T>
void AddSubRun512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p);
template <typename T>
void AddSubChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                          const QuantBinaryParams& p);

// y[i] = MultiplyByQuantizedMultiplier(x[i], mult, shift) with the vector code the runs use
// (exposed for its exhaustive test).
void RequantizeBatch(const int32_t* x, int32_t* y, int64_t n, int32_t mult, int shift);

}  // namespace qbin
}  // namespace edgeopt::kernels
