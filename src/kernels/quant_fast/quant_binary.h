// Quantized ADD / SUB / MUL parameters shared by the reference kernel (elementwise/ref_binary.cc)
// and the AVX2 kernel (quant_binary_avx2.cc), so both compute their multipliers from one piece
// of code (TFLite 2.9's expressions; a different rounding there changes results).
#pragma once

#include <algorithm>
#include <array>
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

// SQUARED_DIFFERENCE int8 multipliers (TFLite 2.9's squared_difference.cc): both inputs on a
// common scale twice the larger input scale after a left shift of 7, the difference squared,
// then out = clamp(MBQM(d * d, out_mult, out_shift) + out_offset) over the type's range.
inline void ComputeSquaredDifferenceMultipliers(float sa, float sb, float so, QuantBinaryParams* p) {
  p->left_shift = 7;
  const double twice_max_input_scale = 2.0 * static_cast<double>(std::max(sa, sb));
  const double real1 = static_cast<double>(sa) / twice_max_input_scale;
  const double real2 = static_cast<double>(sb) / twice_max_input_scale;
  const double real_out = (twice_max_input_scale * twice_max_input_scale) /
                          static_cast<double>(static_cast<float>(1 << (p->left_shift * 2)) * so);
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

// AVX-512 int8 / uint8 / int16 ADD/SUB (quant_binary_avx512.cc): the same runs with 16 lanes, exact
// in 32-bit lanes on the input step. Only for parameters where AddSubAvx512Applies (8-bit offsets
// and left shift 20, or int16's zero offsets and left shift 15; multipliers >= 0, shifts within
// [-31, 0] for the inputs and [-31 (int16: -30), 31] for the output: what ComputeAddSubMultipliers
// produces); `vec` padded to 16.
bool AddSubAvx512Applies(const QuantBinaryParams& p);
template <typename T>
void AddSubRun512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p);
template <typename T>
void AddSubChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                          const QuantBinaryParams& p);

// AVX-512 int8 / uint8 / int16 MUL (quant_binary_avx512.cc): the product (x1 + offset1) *
// (x2 + offset2) in a 32-bit lane (at most 2^16 for 8-bit types, 2^30 for int16), then the
// output step ADD/SUB use. Only where MulAvx512Applies (offsets within +-255, multiplier >= 0,
// output shift within [-31, 31]); `vec` padded to 16.
bool MulAvx512Applies(const QuantBinaryParams& p);
template <typename T>
void MulRun512(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p);
template <typename T>
void MulChannelRows512(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                       const QuantBinaryParams& p);

// Same-shape int8 / uint8 ADD/SUB on AVX-512 when one input's step is a plain shift (the input
// with the larger scale: multiplier 2^30, shift 0, so v * 2^20 * 2^30 / 2^31 = v * 2^19) and the
// output has no left shift: one rounding of the other input, one 64-bit rounding for the output
// (quant_binary_avx512.cc derives it). Built at prepare by PlanAddSubLinear512; `ok` is false
// when a bound it needs does not hold (then AddSubRun512 serves).
struct AddSubLinear512 {
  bool ok = false;
  bool lin_first = true;     // the linear input is input 0
  int lin_shift = 0;         // 2 * linear step = x << lin_shift
  int32_t gen_offset = 0;    // the other input: v = x + gen_offset
  int32_t gen_mh = 0;        // multiplier >> 11
  int32_t gen_madd = 0;      // vpmaddwd pair: low word multiplier & 2047, high word 2^11 (shift > 0) or 0
  int32_t gen_round = 0;     // 2^10 + 2^(e-1) * 2^11
  int gen_shift = 0;         // e
  int lin_sign = 1, gen_sign = 1;
  int32_t out_mult = 0;
  int64_t out_const = 0;     // added to (2 raw - 2 * folded offset) * out_mult
  int out_shift = 0;         // E: the final arithmetic shift
  bool correct_neg = false;  // subtract 1 where raw < neg_below (ties of negative values)
  int32_t neg_below = 0;
  bool clamp = false;        // activation range narrower than the type's
  int32_t act_min = 0, act_max = 0;
  // The table form (CPUs with AVX-512 VBMI, 16 <= lin_shift <= 24): the other input's part of
  // 2 raw with the linear input's offset folded in, by byte plane (lut_bytes[p * 256 + x] is byte
  // p of it), looked up 64 values at a time; the linear input is added in the high words.
  bool lut = false;
  std::array<uint8_t, 1024> lut_bytes{};
  int64_t lut_out_const = 0;
  int32_t lut_neg_below = 0;
};
// allow_lut = false leaves out the table form (tests run both); true only where the CPU has
// AVX-512 VBMI (rt::CpuFeatures::avx512vbmi), which the table form's vpermi2b needs.
template <typename T>
AddSubLinear512 PlanAddSubLinear512(const QuantBinaryParams& p, bool allow_lut = true);
template <typename T>
void AddSubLinearRun512(const T* a, const T* b, T* o, int64_t n, const AddSubLinear512& plan);

// Same-shape int8 / uint8 ADD/SUB in fp32 (quant_binary_float_avx512.cc): y = floor(x_a * fa +
// RN(x_b * fb + fc)) clamped, the outer multiply-add and the conversion rounding down, with x_a,
// x_b the stored values (offsets folded into fc) - about 9 instructions per 16 values against the
// integer forms' ~35 (two input roundings and a 64-bit output step). Not an approximation: the
// result depends only on the pair (x_a, x_b), so PlanAddSubFloat512 runs the very loop on all
// 65536 pairs at prepare and takes the constants only if every result equals the exact integer
// form's (`exact`: a plan of AddSubLinearRun512, or AddSubRun512 when !exact.ok). fa, fb are the
// effective real multipliers of the integer steps; fc the analytic offset, else the middle of the
// window the 65536 results leave it; `ok` false when neither passes (ties of negative values
// rounded away from zero can leave no window: then the integer forms serve).
struct AddSubFloat512 {
  bool ok = false;
  float fa = 0.f, fb = 0.f, fc = 0.f;
  int32_t act_min = 0, act_max = 0;
};
template <typename T>
AddSubFloat512 PlanAddSubFloat512(const QuantBinaryParams& p, const AddSubLinear512& exact);
template <typename T>
void AddSubFloatRun512(const T* a, const T* b, T* o, int64_t n, const AddSubFloat512& plan);

// SQUARED_DIFFERENCE int8, 16 lanes (ComputeSquaredDifferenceMultipliers' parameters):
// o[i] = op(a[i * a_step], b[i * b_step]), steps 0 or 1, bit-exact with the reference when
// SquaredDifferenceAvx512Applies.
bool SquaredDifferenceAvx512Applies(const QuantBinaryParams& p);
void SquaredDifferenceRun512(const int8_t* a, int a_step, const int8_t* b, int b_step, int8_t* o, int64_t n,
                             const QuantBinaryParams& p);

// y[i] = MultiplyByQuantizedMultiplier(x[i], mult, shift) with the vector code the runs use
// (exposed for its exhaustive test).
void RequantizeBatch(const int32_t* x, int32_t* y, int64_t n, int32_t mult, int shift);
// The same for x[i] >= 0 and shift <= 0 with SQUARED_DIFFERENCE's 16-lane output stage (one
// 64-bit rounding shift per lane; AVX-512, exposed for its test). False: it does not take
// (mult, shift) and y is not written.
bool RequantizeNonNegativeBatch512(const int32_t* x, int32_t* y, int64_t n, int32_t mult, int shift);

}  // namespace qbin
}  // namespace edgeopt::kernels
