// Vector primitives of the LSTM reference kernels, with TFLite 2.9's tensor_utils semantics
// (portable versions): float, hybrid (int8 weights x quantized float activations) and integer
// 8x8->16 pieces. Rows are batches: a [n_batch, n] array is n_batch rows of n values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/quant_utils.h"
#include "kernels/lstm/fixed_point.h"

namespace edgeopt::kernels::lstm {

// ---- float ----------------------------------------------------------------------------------

// result[b, r] += sum_c matrix[r, c] * vectors[b, c]
inline void MatVecAccumulate(const float* matrix, int rows, int cols, const float* vectors, int n_batch,
                             float* result) {
  for (int b = 0; b < n_batch; ++b) {
    const float* v = vectors + b * cols;
    for (int r = 0; r < rows; ++r) {
      const float* m = matrix + r * cols;
      float dot = 0.0f;
      for (int c = 0; c < cols; ++c) dot += m[c] * v[c];
      result[b * rows + r] += dot;
    }
  }
}

// Per row: (x - mean) / sqrt(variance + 1e-8).
inline void MeanStddevNormalization(float* v, int n, int n_batch) {
  for (int b = 0; b < n_batch; ++b, v += n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += v[i];
    const float mean = sum / n;
    float sum_diff_sq = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float d = v[i] - mean;
      sum_diff_sq += d * d;
    }
    const float variance = sum_diff_sq / n;
    const float stddev_inv = 1.0f / std::sqrt(variance + 1e-8f);
    for (int i = 0; i < n; ++i) v[i] = (v[i] - mean) * stddev_inv;
  }
}

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// tflite::ActivationFunctionType applied in place (NONE leaves values unchanged).
inline void ApplyActivation(float* v, int n, int activation) {
  for (int i = 0; i < n; ++i) {
    const float x = v[i];
    switch (activation) {
      case tflite::ActivationFunctionType_RELU: v[i] = std::max(0.0f, x); break;
      case tflite::ActivationFunctionType_RELU_N1_TO_1: v[i] = std::min(1.0f, std::max(-1.0f, x)); break;
      case tflite::ActivationFunctionType_RELU6: v[i] = std::min(6.0f, std::max(0.0f, x)); break;
      case tflite::ActivationFunctionType_TANH: v[i] = std::tanh(x); break;
      case tflite::ActivationFunctionType_SIGN_BIT: v[i] = std::signbit(x) ? 1.0f : 0.0f; break;
      default: break;
    }
  }
}

inline void ClipInPlace(float* v, int n, float limit) {
  for (int i = 0; i < n; ++i) v[i] = std::max(std::min(limit, v[i]), -limit);
}

inline bool IsZeroVector(const float* v, int n) {
  for (int i = 0; i < n; ++i)
    if (v[i] != 0.0f) return false;
  return true;
}

// ---- hybrid ---------------------------------------------------------------------------------

// Symmetric per-row quantization to [-127, 127]; scale = max|x| / 127 (1 for an all-zero row).
inline void SymmetricQuantize(const float* values, int n, int8_t* q, float* scaling_factor) {
  float lo = values[0], hi = values[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  const float range = std::max(std::abs(lo), std::abs(hi));
  if (range == 0) {
    std::memset(q, 0, n);
    *scaling_factor = 1;
    return;
  }
  *scaling_factor = range / 127;
  const float inv = 127 / range;
  for (int i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(std::round(values[i] * inv));
    q[i] = static_cast<int8_t>(std::min(127, std::max(-127, v)));
  }
}

// Asymmetric per-row quantization to [-128, 127] with a nudged zero point (range includes 0).
inline void AsymmetricQuantize(const float* values, int n, int8_t* q, float* scaling_factor, int32_t* offset) {
  float lo = values[0], hi = values[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, values[i]);
    hi = std::max(hi, values[i]);
  }
  const double rmin = static_cast<double>(std::min(0.0f, lo));
  const double rmax = static_cast<double>(std::max(0.0f, hi));
  if (rmin == rmax) {
    std::memset(q, 0, n);
    *scaling_factor = 1;
    *offset = 0;
    return;
  }
  const double qmin = -128, qmax = 127;
  const double scale = (rmax - rmin) / (qmax - qmin);
  const double zp_from_min = qmin - rmin / scale;
  const double zp_from_max = qmax - rmax / scale;
  const double zp_from_min_error = std::abs(qmin) + std::abs(rmin / scale);
  const double zp_from_max_error = std::abs(qmax) + std::abs(rmax / scale);
  const double zp = zp_from_min_error < zp_from_max_error ? zp_from_min : zp_from_max;
  int8_t nudged = 0;
  if (zp <= qmin) nudged = -128;
  else if (zp >= qmax) nudged = 127;
  else nudged = static_cast<int8_t>(std::round(zp));
  *scaling_factor = static_cast<float>(scale);
  *offset = nudged;
  const float inv = 1.0f / *scaling_factor;
  for (int i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(std::round(*offset + values[i] * inv));
    q[i] = static_cast<int8_t>(std::min(127, std::max(-128, v)));
  }
}

// result[b, r] += (sum_c m[r,c] * q[b,c] - row_sums[r] * zp[b]) * (sf[b] * matrix_scale)
inline void HybridMatVecAccumulate(const int8_t* matrix, int rows, int cols, const int8_t* q, const float* sf,
                                   const int32_t* zp, const int32_t* row_sums, float matrix_scale, int n_batch,
                                   float* result) {
  for (int b = 0; b < n_batch; ++b) {
    const float scale = sf[b] * matrix_scale;
    const int8_t* v = q + b * cols;
    for (int r = 0; r < rows; ++r) {
      const int8_t* m = matrix + r * cols;
      int32_t dot = 0;
      for (int c = 0; c < cols; ++c) dot += static_cast<int32_t>(m[c]) * v[c];
      if (zp) dot -= row_sums[r] * zp[b];
      result[b * rows + r] += static_cast<float>(dot) * scale;
    }
  }
}

// ---- integer 8x8->16 ------------------------------------------------------------------------

// sums[r] = sum_c w[r, c] * x[c] for `rows` int8 rows of n (row-major, n apart), in int32
// (modulo 2^32): DotRowsS8Avx2 (lstm_int_avx2.cc) where the CPU has AVX2, else DotRowsS8.
using IntRowsDotFn = void (*)(const int8_t* x, const int8_t* w, int n, int rows, int32_t* sums);
void DotRowsS8Avx2(const int8_t* x, const int8_t* w, int n, int rows, int32_t* sums);
inline void DotRowsS8(const int8_t* x, const int8_t* w, int n, int rows, int32_t* sums) {
  for (int r = 0; r < rows; ++r) {
    const int8_t* wr = w + static_cast<int64_t>(r) * n;
    uint32_t s = 0;
    for (int c = 0; c < n; ++c) s += static_cast<uint32_t>(int32_t{x[c]} * wr[c]);
    sums[r] = static_cast<int32_t>(s);
  }
}

// The integer cell's matrices packed for AVX-512 VNNI matrix-vector products (VnniRowsDot,
// lstm_int_avx512.cc): the gates' matrices of one side stacked into one, in blocks of 16 rows with
// the columns in groups of 4 ([block][group][16 rows][4 bytes], zero past the last row and column),
// so that one vpdpbusd adds four columns of 16 rows. vpdpbusd multiplies unsigned by signed bytes:
// x goes in as x + 128 (an xor of its sign bit) and corr = -128 * (row sum) takes the excess back,
// so the sums are DotRowsS8's int32 (modulo 2^32, as there).
struct VnniRows {
  int rows = 0, cols = 0, groups = 0, blocks = 0;
  std::vector<int8_t> w;
  std::vector<int32_t> corr;  // blocks * 16
};
// Rows of mats[0], then mats[1], ... (each rows_each x cols, row-major), matrix j from row
// j * row_stride on (row_stride >= rows_each; 0: rows_each), zero rows between.
VnniRows PackVnniRows(const int8_t* const* mats, int n_mats, int rows_each, int cols, int row_stride = 0);
// Bytes of VnniRowsDot's scratch for m (its unsigned copy of x).
inline size_t VnniRowsScratch(const VnniRows& m) { return static_cast<size_t>(m.groups) * 4 + 64; }
// sums[r] = sum_c w[r, c] * x[c] for r < blocks * 16 (rows past m.rows: 0).
void VnniRowsDot(const VnniRows& m, const int8_t* x, uint8_t* scratch, int32_t* sums);

// The requantization of a stacked product's rows, each gate's multiplier and shifts per row, for
// RequantLanesAvx512 (lstm_int_avx512.cc).
struct LaneRequant {
  std::vector<int32_t> bias, mult, left, right;
  // rows_each rows per gate j with biases[j], multiplier[j], shift[j]; false (and no use) when a
  // gate's multiplier needs the scalar loop (see RequantRows512).
  bool Set(const int32_t* multiplier, const int* shift, const std::vector<int32_t>* biases, int n_gates, int rows_each);
};
// out[r] = clamp16(out[r] + MultiplyByQuantizedMultiplier(q.bias[r] + sums[r], q.mult[r], shift r)) for
// every row of q: RequantRows on 16 rows at a time.
void RequantLanesAvx512(const int32_t* sums, const LaneRequant& q, int16_t* out);
// The cell update of StepInt8 on AVX-512 (same integers): c = clip(sat16(f * c >> 15 + i * g >> shift)),
// rounding shifts, i = 32767 - f where `in` is null (CIFG), clip 0 = none.
void CellUpdateAvx512(const int16_t* f, const int16_t* in, const int16_t* g, int n, int shift, int16_t clip, int16_t* c);
// A whole sequence of one batch row of an integer cell without peephole, layer norm or
// projection on AVX-512 VNNI (LstmCell::PrepareIntRow): each gate's cells padded to 16-cell
// blocks, so that the four gates of a block of cells meet lane by lane, and every step runs in
// registers from the two products to the hidden state, its gate and cell activations looked up
// 16 at a time (gathers). The reference steps' integers.
struct IntLstmRowPlan {
  int nc = 0, blocks = 0, gates = 0;  // cells, 16-cell blocks, gates present (3 with CIFG)
  int gate_index[4] = {-1, -1, -1, -1};  // stacked position of gate id (kInputGate ..), -1: absent
  VnniRows wx, wh;                      // gate j's cells from row 16 j blocks on, zero rows after them
  std::vector<int32_t> xbias, hbias;    // per stacked (padded) row
  int32_t xm[4] = {}, hm[4] = {};       // per stacked gate: multipliers and shifts of the two sides
  int xs[4] = {}, hs[4] = {};
  int cell_shift = 0;                   // 30 + cell scale
  int16_t cell_clip = 0;
  int32_t hid_m = 0, hid_zp = 0;
  int hid_s = 0;
  const int16_t* sigmoid = nullptr;     // Int16ActTable entries (centered)
  const int16_t* tanh_gate = nullptr;
  const int16_t* tanh_cell = nullptr;
};
// Whether Mbqm16 (the vector requantization) computes this multiplier and shift exactly.
bool IntLstmRowTakes(int32_t multiplier, int shift);
size_t IntLstmRowScratch(const IntLstmRowPlan& p);
// `steps` steps: input rows x, x + x_step, ..., output rows out, out + out_step, ..., state h
// (nc int8) and c (nc int16) updated in place.
void RunIntLstmRowAvx512(const IntLstmRowPlan& p, const int8_t* x, int64_t x_step, int steps, int8_t* h, int16_t* c,
                         int8_t* out, int64_t out_step, uint8_t* scratch);
// hidden = clamp8(MultiplyByQuantizedMultiplier(o * t) - zp) on AVX-512; false (nothing written)
// for a multiplier the vector form does not take.
bool HiddenAvx512(const int16_t* o, const int16_t* t, int n, int32_t multiplier, int shift, int32_t zp, int8_t* hidden);

// out[i] = clamp(out[i] + MultiplyByQuantizedMultiplier(bias[i] + sums[i]) + zp) for n rows, to
// Out's range (int16 or int8): RequantRows one by one, RequantRowsAvx512 16 at a time on
// AVX-512F (lstm_int_avx512.cc; the same integers).
template <typename Out>
void RequantRows(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp, Out* out) {
  constexpr int32_t kMax = std::numeric_limits<Out>::max();
  constexpr int32_t kMin = std::numeric_limits<Out>::min();
  for (int i = 0; i < n; ++i) {
    int32_t acc = static_cast<int32_t>(static_cast<uint32_t>(bias[i]) + static_cast<uint32_t>(sums[i]));
    acc = MultiplyByQuantizedMultiplier(acc, multiplier, shift);
    acc += zp;
    acc += out[i];
    out[i] = static_cast<Out>(std::min(kMax, std::max(kMin, acc)));
  }
}
void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int16_t* out);
void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int8_t* out);

// out[b, r] = clamp(out[b, r] + MBQM(bias[r] + sum_c w[r,c] * in[b,c]) + out_zp) for int16/int8 out:
// the rows' sums by `dot` (null: DotRowsS8), requantized by RequantRowsAvx512 (requant_avx512)
// or RequantRows.
template <typename Out>
void IntMatVecAccumulate(const int8_t* in, const int32_t* bias, const int8_t* w, int32_t multiplier, int shift,
                         int n_batch, int n_in, int n_out, int32_t out_zp, Out* out, IntRowsDotFn dot = nullptr,
                         bool requant_avx512 = false) {
  constexpr int kRows = 256;  // rows per call of `dot` (its sums on the stack)
  int32_t sums[kRows];
  const IntRowsDotFn rows_dot = dot ? dot : DotRowsS8;
  for (int b = 0; b < n_batch; ++b) {
    for (int r0 = 0; r0 < n_out; r0 += kRows) {
      const int rows = std::min(kRows, n_out - r0);
      rows_dot(in + b * n_in, w + static_cast<int64_t>(r0) * n_in, n_in, rows, sums);
      Out* o = out + b * n_out + r0;
      if (requant_avx512)
        RequantRowsAvx512(sums, bias + r0, rows, multiplier, shift, out_zp, o);
      else
        RequantRows(sums, bias + r0, rows, multiplier, shift, out_zp, o);
    }
  }
}

// LSTM integer layer norm (TFLite's ApplyLayerNorm on int16 gate values).
inline void IntLayerNorm(int16_t* v, const int16_t* weights, const int32_t* bias, int32_t scale_a, int scale_b,
                         int32_t variance_limit, int n_batch, int n) {
  constexpr int kTwoToPower20 = 1 << 20;
  for (int b = 0; b < n_batch; ++b, v += n) {
    int64_t sum = 0, sum_sq = 0;
    for (int j = 0; j < n; ++j) {
      const int32_t x = v[j];
      sum += x;
      sum_sq += x * x;
    }
    const int32_t mean = static_cast<int32_t>(sum * 1024 / n);
    const int32_t temp = kTwoToPower20 / n;
    const int64_t variance = sum_sq * temp - static_cast<int64_t>(mean) * mean;
    int32_t variance2 = static_cast<int32_t>(variance / kTwoToPower20);
    if (variance2 < 1) variance2 = variance_limit;
    int32_t inv_a;
    int inv_b;
    fxp::InvSqrtQuantizedMultiplierExp(variance2, -1, &inv_a, &inv_b);
    for (int j = 0; j < n; ++j) {
      const int32_t shifted = 1024 * v[j] - mean;
      const int32_t rescaled = MultiplyByQuantizedMultiplier(shifted, inv_a, inv_b);
      const int64_t val3 = static_cast<int64_t>(rescaled) * weights[j] + bias[j];
      const int32_t val4 = static_cast<int32_t>((val3 > 0 ? val3 + 512 : val3 - 512) / 1024);
      int32_t val5 = MultiplyByQuantizedMultiplier(val4, scale_a, scale_b + 12);
      val5 = std::min(std::max(-32768, val5), 32767);
      v[j] = static_cast<int16_t>(val5);
    }
  }
}

// The gate nonlinearities of the integer LSTM, TFLite's gemmlowp fixed-point logistic / tanh on
// int16 (fixed_point.h), are looked up in tables of all 65536 inputs computed once per process
// with those very functions (so a lookup is the function, exactly): 128 KB each, ~2 ms to build,
// built at prepare (WarmIntActTables) so that no invoke pays for it. The functions cost ~30 ns
// per value (Newton-Raphson reciprocals, exp by barrel shifts): 64% of mnist_lstm_int8's time.
template <int I, bool kTanh>
const int16_t* Int16ActTable() {
  static const std::vector<int16_t> table = [] {
    // An entry to spare after the inputs' 65536: RunIntLstmRowAvx512's 4-byte gathers read it.
    std::vector<int16_t> t(65537, 0);
    for (int x = -32768; x <= 32767; ++x) {
      const auto in = fxp::FixedPoint<int16_t, I>::FromRaw(static_cast<int16_t>(x));
      t[static_cast<size_t>(x + 32768)] = kTanh ? fxp::Tanh(in).raw : fxp::Logistic(in).raw;
    }
    return t;
  }();
  return table.data() + 32768;  // indexed by the raw int16 value
}

// Sigmoid of Q3.12 values, in place.
inline void IntSigmoid(int16_t* v, int n) {
  const int16_t* table = Int16ActTable<3, false>();
  for (int i = 0; i < n; ++i) v[i] = table[v[i]];
}

// The tanh table for Q(integer_bits).(15 - integer_bits) inputs; integer_bits in [0, 6]
// (checked at prepare), else null.
inline const int16_t* IntTanhTable(int integer_bits) {
  switch (integer_bits) {
    case 0: return Int16ActTable<0, true>();
    case 1: return Int16ActTable<1, true>();
    case 2: return Int16ActTable<2, true>();
    case 3: return Int16ActTable<3, true>();
    case 4: return Int16ActTable<4, true>();
    case 5: return Int16ActTable<5, true>();
    case 6: return Int16ActTable<6, true>();
    default: return nullptr;
  }
}

// tanh of Q(integer_bits).(15 - integer_bits) values; integer_bits in [0, 6] (checked at prepare).
inline void IntTanh(int integer_bits, const int16_t* in, int n, int16_t* out) {
  const int16_t* table = IntTanhTable(integer_bits);
  if (!table) return;
  for (int i = 0; i < n; ++i) out[i] = table[in[i]];
}

// Builds the tables an integer LSTM cell uses (sigmoid, tanh of the cell gate and of the cell
// state), so that its invokes find them ready.
inline void WarmIntActTables(int cell_tanh_bits) {
  Int16ActTable<3, false>();
  IntTanhTable(3);
  IntTanhTable(cell_tanh_bits);
}

inline int16_t MulShift16(int16_t a, int16_t b, int shift) {
  return static_cast<int16_t>(RoundingDivideByPOT(static_cast<int32_t>(a) * static_cast<int32_t>(b), shift));
}

inline int16_t SaturatingAdd16(int16_t a, int16_t b) {
  return static_cast<int16_t>(std::min(32767, std::max(-32768, static_cast<int32_t>(a) + b)));
}

}  // namespace edgeopt::kernels::lstm
