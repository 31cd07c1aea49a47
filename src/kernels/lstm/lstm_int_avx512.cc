// The integer LSTM on AVX-512 (lstm_math.h): VNNI matrix-vector products of packed gate rows
// (VnniRows), the cell update and hidden state on 16 lanes, a whole sequence of plain cells
// (RunIntLstmRowAvx512), and the requantization of the products (RequantRowsAvx512, also with a
// multiplier per row, RequantLanesAvx512): out[i] = clamp(out[i] + MultiplyByQuantizedMultiplier(
// bias[i] + sums[i]) + zp), 16 rows at a time, the same integers as quant_utils.h's scalar functions:
// - SaturatingRoundingDoublingHighMul(a, m) = (a*m + nudge) / 2^31 truncated, with nudge 2^30
//   for a*m >= 0 and 1 - 2^30 below: for both signs that is floor((a*m + 2^30) / 2^31), one
//   64-bit add and arithmetic shift (a*m < 0 gives a*m + 1 - 2^30 < 0, whose truncated quotient
//   is floor((a*m + 1 - 2^30 + 2^31 - 1) / 2^31)); its saturating case (a = m = INT32_MIN)
//   cannot occur: m = INT32_MIN (and right shifts past 31) take lstm_math.h's RequantRows.
// - RoundingDivideByPOT(x, e) as written there (remainder against the threshold), e <= 31.
#include "kernels/common/avx512_intrin.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/lstm/lstm_math.h"

namespace edgeopt::kernels::lstm {
namespace {

// RoundingDivideByPOT on 16 lanes, each with its own exponent (0..31).
inline __m512i RoundingShiftLanes(__m512i x, __m512i exponent) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, exponent), one);
  const __m512i rem = _mm512_and_si512(x, mask);
  const __m512i threshold = _mm512_add_epi32(_mm512_srai_epi32(mask, 1), _mm512_srli_epi32(x, 31));
  const __m512i r = _mm512_srav_epi32(x, exponent);
  return _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(rem, threshold), r, one);
}

// MultiplyByQuantizedMultiplier on 16 lanes, each with its own multiplier (m's lanes) and left
// and right shifts (see the top of this file).
inline __m512i Mbqm16(__m512i x, __m512i m, __m512i left, __m512i right) {
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 30);
  x = _mm512_sllv_epi32(x, left);
  const __m512i pe = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, m), half), 31);
  const __m512i po = _mm512_srai_epi64(
      _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32)), half), 31);
  // Lane 2j: pe's low dword j; lane 2j + 1: po's low dword j.
  return RoundingShiftLanes(_mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32)), right);
}

// One multiplier and shift for all lanes, as Mbqm16 takes them.
struct MbqmConst {
  __m512i m, left, right;
};
inline MbqmConst MakeMbqm(int32_t multiplier, int shift) {
  return {_mm512_set1_epi32(multiplier), _mm512_set1_epi32(shift > 0 ? shift : 0), _mm512_set1_epi32(shift > 0 ? 0 : -shift)};
}

// Whether Mbqm16 computes MultiplyByQuantizedMultiplier for this multiplier and shift (else the
// scalar loops run: the doubling high multiply saturates only for INT32_MIN, and right shifts stop
// at 31).
inline bool Mbqm16Handles(int32_t multiplier, int shift) {
  return multiplier != std::numeric_limits<int32_t>::min() && shift >= -31;
}

inline __mmask16 TailMask(int left) { return left >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << left) - 1); }

// dst[0, padded) = src[i] + 128 (its sign bit flipped: vpdpbusd's unsigned operand) for i < n,
// 128 past n (those bytes meet zero weights), in 64-byte pieces (padded rounded up to 64).
inline void FlipCopy(const int8_t* src, int n, int padded, uint8_t* dst) {
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int i = 0; i < padded; i += 64) {
    const int left = n - i;
    const __mmask64 k = left >= 64 ? ~__mmask64{0} : left <= 0 ? 0 : (__mmask64{1} << left) - 1;
    _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, src + i), sign));
  }
}

template <typename Out>
void RequantRows512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                    Out* out) {
  if (!Mbqm16Handles(multiplier, shift)) return RequantRows(sums, bias, n, multiplier, shift, zp, out);
  const MbqmConst q = MakeMbqm(multiplier, shift);
  const __m512i vzp = _mm512_set1_epi32(zp);
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<Out>::min());
  const __m512i hi = _mm512_set1_epi32(std::numeric_limits<Out>::max());
  // The last rows under a mask (a scalar tail took as long as the vectors for 20 rows).
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512i x = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, sums + i), _mm512_maskz_loadu_epi32(k, bias + i));
    const __m512i r = _mm512_add_epi32(Mbqm16(x, q.m, q.left, q.right), vzp);
    if constexpr (sizeof(Out) == 2) {
      const __m512i v = _mm512_add_epi32(r, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, out + i)));
      _mm256_mask_storeu_epi16(out + i, k, _mm512_cvtepi32_epi16(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi)));
    } else {
      const __m512i v = _mm512_add_epi32(r, _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, out + i)));
      _mm_mask_storeu_epi8(out + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi)));
    }
  }
}

// kB (1..4) blocks of 16 rows from `block` on: acc = corr + the products of their rows with the
// unsigned input groups xu.
template <int kB>
__attribute__((always_inline)) inline void DotBlocksAcc(const VnniRows& m, int block, const uint8_t* xu, __m512i* acc) {
  for (int i = 0; i < kB; ++i) acc[i] = _mm512_loadu_si512(m.corr.data() + (block + i) * 16);
  const int8_t* w = m.w.data() + static_cast<int64_t>(block) * m.groups * 64;
  const int64_t block_stride = static_cast<int64_t>(m.groups) * 64;
  for (int k = 0; k < m.groups; ++k) {
    int32_t group;
    std::memcpy(&group, xu + 4 * k, 4);
    const __m512i x = _mm512_set1_epi32(group);
    for (int i = 0; i < kB; ++i)
      acc[i] = _mm512_dpbusd_epi32(acc[i], x, _mm512_loadu_si512(w + i * block_stride + k * 64));
  }
}
// The same into sums[16 block, 16 (block + kB)).
template <int kB>
void DotBlocks(const VnniRows& m, int block, const uint8_t* xu, int32_t* sums) {
  __m512i acc[kB];
  DotBlocksAcc<kB>(m, block, xu, acc);
  for (int i = 0; i < kB; ++i) _mm512_storeu_si512(sums + (block + i) * 16, acc[i]);
}

}  // namespace

void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int16_t* out) {
  RequantRows512(sums, bias, n, multiplier, shift, zp, out);
}
void RequantRowsAvx512(const int32_t* sums, const int32_t* bias, int n, int32_t multiplier, int shift, int32_t zp,
                       int8_t* out) {
  RequantRows512(sums, bias, n, multiplier, shift, zp, out);
}

VnniRows PackVnniRows(const int8_t* const* mats, int n_mats, int rows_each, int cols, int row_stride) {
  if (row_stride < rows_each) row_stride = rows_each;
  VnniRows m;
  m.rows = n_mats * row_stride;
  m.cols = cols;
  m.groups = (cols + 3) / 4;
  m.blocks = (m.rows + 15) / 16;
  m.w.assign(static_cast<size_t>(m.blocks) * m.groups * 64, 0);
  m.corr.assign(static_cast<size_t>(m.blocks) * 16, 0);
  for (int r = 0; r < m.rows; ++r) {
    if (r % row_stride >= rows_each) continue;  // padding: zero weights, zero correction
    const int8_t* row = mats[r / row_stride] + static_cast<int64_t>(r % row_stride) * cols;
    int64_t sum = 0;
    int8_t* dst = m.w.data() + static_cast<int64_t>(r / 16) * m.groups * 64 + (r % 16) * 4;
    for (int c = 0; c < cols; ++c) {
      dst[(c / 4) * 64 + c % 4] = row[c];
      sum += row[c];
    }
    m.corr[r] = static_cast<int32_t>(static_cast<uint32_t>(-128 * sum));  // modulo 2^32, as the sums
  }
  return m;
}

void VnniRowsDot(const VnniRows& m, const int8_t* x, uint8_t* scratch, int32_t* sums) {
  FlipCopy(x, m.cols, m.groups * 4, scratch);
  int b = 0;
  for (; b + 4 <= m.blocks; b += 4) DotBlocks<4>(m, b, scratch, sums);
  switch (m.blocks - b) {
    case 3: DotBlocks<3>(m, b, scratch, sums); break;
    case 2: DotBlocks<2>(m, b, scratch, sums); break;
    case 1: DotBlocks<1>(m, b, scratch, sums); break;
    default: break;
  }
}

bool LaneRequant::Set(const int32_t* multiplier, const int* shift, const std::vector<int32_t>* biases, int n_gates,
                      int rows_each) {
  bias.clear();
  mult.clear();
  left.clear();
  right.clear();
  for (int j = 0; j < n_gates; ++j) {
    if (!Mbqm16Handles(multiplier[j], shift[j])) return false;
    for (int i = 0; i < rows_each; ++i) {
      bias.push_back(biases[j][i]);
      mult.push_back(multiplier[j]);
      left.push_back(shift[j] > 0 ? shift[j] : 0);
      right.push_back(shift[j] > 0 ? 0 : -shift[j]);
    }
  }
  return true;
}

void RequantLanesAvx512(const int32_t* sums, const LaneRequant& q, int16_t* out) {
  const int n = static_cast<int>(q.bias.size());
  const __m512i lo = _mm512_set1_epi32(std::numeric_limits<int16_t>::min());
  const __m512i hi = _mm512_set1_epi32(std::numeric_limits<int16_t>::max());
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512i x = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, sums + i), _mm512_maskz_loadu_epi32(k, q.bias.data() + i));
    const __m512i r = Mbqm16(x, _mm512_maskz_loadu_epi32(k, q.mult.data() + i), _mm512_maskz_loadu_epi32(k, q.left.data() + i),
                             _mm512_maskz_loadu_epi32(k, q.right.data() + i));
    const __m512i v = _mm512_add_epi32(r, _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, out + i)));
    _mm256_mask_storeu_epi16(out + i, k, _mm512_cvtepi32_epi16(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi)));
  }
}

namespace {
// RoundingDivideByPOT on 16 lanes, one exponent (0..31).
inline __m512i RoundingShift16(__m512i x, int exponent) { return RoundingShiftLanes(x, _mm512_set1_epi32(exponent)); }
// static_cast<int16_t> of each int32 lane, sign-extended back to 32 bits.
inline __m512i Int16Lanes(__m512i x) { return _mm512_srai_epi32(_mm512_slli_epi32(x, 16), 16); }
inline __m512i Load16(__mmask16 k, const int16_t* p) { return _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(k, p)); }
// The cell update of 16 cells (forget f, input i, cell gate g, state c as int32 lanes):
// clamp(sat16(RDP(f c, 15) + RDP(i g, shift))) into [lo, hi] (the clip, else int16).
inline __m512i CellLanes(__m512i f, __m512i i, __m512i g, __m512i c, int shift, __m512i lo, __m512i hi) {
  const __m512i fc = Int16Lanes(RoundingShift16(_mm512_mullo_epi32(f, c), 15));
  const __m512i ig = Int16Lanes(RoundingShift16(_mm512_mullo_epi32(i, g), shift));
  return _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(fc, ig), lo), hi);
}
// clamp8(MBQM(o t) - zp) of 16 cells.
inline __m512i HiddenLanes(__m512i o, __m512i t, const MbqmConst& q, __m512i zp) {
  const __m512i v = _mm512_sub_epi32(Mbqm16(_mm512_mullo_epi32(o, t), q.m, q.left, q.right), zp);
  return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(-128)), _mm512_set1_epi32(127));
}
// clamp16(acc + MBQM(sum)) for int32 lanes.
inline __m512i AccumulateLanes(__m512i acc, __m512i sum, const MbqmConst& q) {
  const __m512i v = _mm512_add_epi32(acc, Mbqm16(sum, q.m, q.left, q.right));
  return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(-32768)), _mm512_set1_epi32(32767));
}
// table[v] for int32 lanes v in int16's range (a centered Int16ActTable with an entry to spare).
inline __m512i LookupLanes(const int16_t* table, __m512i v) { return Int16Lanes(_mm512_i32gather_epi32(v, table, 2)); }
// corr + the products of block b's rows with the unsigned input groups xu.
inline __m512i DotBlock(const VnniRows& m, int b, const uint8_t* xu) {
  __m512i acc;
  DotBlocksAcc<1>(m, b, xu, &acc);
  return acc;
}
inline size_t Align64(size_t n) { return (n + 63) / 64 * 64; }
}  // namespace

void CellUpdateAvx512(const int16_t* f, const int16_t* in, const int16_t* g, int n, int shift, int16_t clip, int16_t* c) {
  const __m512i lo = _mm512_set1_epi32(clip > 0 ? -clip : -32768), hi = _mm512_set1_epi32(clip > 0 ? clip : 32767);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512i fv = Load16(k, f + i);
    const __m512i iv = in ? Load16(k, in + i) : Int16Lanes(_mm512_sub_epi32(_mm512_set1_epi32(32767), fv));
    const __m512i v = CellLanes(fv, iv, Load16(k, g + i), Load16(k, c + i), shift, lo, hi);
    _mm256_mask_storeu_epi16(c + i, k, _mm512_cvtepi32_epi16(v));
  }
}

bool HiddenAvx512(const int16_t* o, const int16_t* t, int n, int32_t multiplier, int shift, int32_t zp, int8_t* hidden) {
  if (!Mbqm16Handles(multiplier, shift)) return false;
  const MbqmConst q = MakeMbqm(multiplier, shift);
  const __m512i vzp = _mm512_set1_epi32(zp);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    _mm_mask_storeu_epi8(hidden + i, k, _mm512_cvtepi32_epi8(HiddenLanes(Load16(k, o + i), Load16(k, t + i), q, vzp)));
  }
  return true;
}

bool IntLstmRowTakes(int32_t multiplier, int shift) { return Mbqm16Handles(multiplier, shift); }

size_t IntLstmRowScratch(const IntLstmRowPlan& p) {
  return Align64(static_cast<size_t>(p.wx.groups) * 4 + 64) +
         Align64(std::max<size_t>(static_cast<size_t>(p.wh.groups) * 4, static_cast<size_t>(p.blocks) * 16) + 64) +
         static_cast<size_t>(p.gates) * p.blocks * 64 + 64;
}

void RunIntLstmRowAvx512(const IntLstmRowPlan& p, const int8_t* x, int64_t x_step, int steps, int8_t* h, int16_t* c,
                         int8_t* out, int64_t out_step, uint8_t* scratch) {
  uint8_t* xu = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch) + 63) & ~uintptr_t{63});
  uint8_t* hu = xu + Align64(static_cast<size_t>(p.wx.groups) * 4 + 64);
  __m512i* gate_sums = reinterpret_cast<__m512i*>(
      hu + Align64(std::max<size_t>(static_cast<size_t>(p.wh.groups) * 4, static_cast<size_t>(p.blocks) * 16) + 64));
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  // The products read unsigned copies of their inputs (FlipCopy): the state's here, then each
  // step's hidden values as they are computed; the input row's at every step.
  FlipCopy(h, p.nc, p.blocks * 16, hu);
  MbqmConst xq[4], hq[4];
  for (int j = 0; j < p.gates; ++j) {
    xq[j] = MakeMbqm(p.xm[j], p.xs[j]);
    hq[j] = MakeMbqm(p.hm[j], p.hs[j]);
  }
  const MbqmConst hid_q = MakeMbqm(p.hid_m, p.hid_s);
  const __m512i hid_zp = _mm512_set1_epi32(p.hid_zp);
  const __m512i lo = _mm512_set1_epi32(p.cell_clip > 0 ? -p.cell_clip : -32768);
  const __m512i hi = _mm512_set1_epi32(p.cell_clip > 0 ? p.cell_clip : 32767);
  const int gi = p.gate_index[0], gf = p.gate_index[1], gc = p.gate_index[2], go = p.gate_index[3];
  for (int s = 0; s < steps; ++s, x += x_step, out += out_step) {
    FlipCopy(x, p.wx.cols, p.wx.groups * 4, xu);
    // The gates' pre-activations: the input side requantized into zeros, then the recurrent side
    // added (each saturating to int16), as the reference steps. (Computing the input side of 32
    // steps ahead of them, outside the steps' dependency chain, was no faster: 5.9-6.4 against
    // 5.7-5.9 us for mnist_lstm_int8.)
    for (int j = 0; j < p.gates; ++j) {
      for (int b = 0; b < p.blocks; ++b) {
        const int v = j * p.blocks + b;
        const __m512i sx = _mm512_add_epi32(DotBlock(p.wx, v, xu), _mm512_loadu_si512(p.xbias.data() + v * 16));
        const __m512i sh = _mm512_add_epi32(DotBlock(p.wh, v, hu), _mm512_loadu_si512(p.hbias.data() + v * 16));
        gate_sums[v] = AccumulateLanes(AccumulateLanes(_mm512_setzero_si512(), sx, xq[j]), sh, hq[j]);
      }
    }
    for (int b = 0; b < p.blocks; ++b) {
      const __mmask16 k = TailMask(p.nc - 16 * b);
      const __m512i f = LookupLanes(p.sigmoid, gate_sums[gf * p.blocks + b]);
      const __m512i in = gi >= 0 ? LookupLanes(p.sigmoid, gate_sums[gi * p.blocks + b])
                                 : Int16Lanes(_mm512_sub_epi32(_mm512_set1_epi32(32767), f));
      const __m512i g = LookupLanes(p.tanh_gate, gate_sums[gc * p.blocks + b]);
      const __m512i cell = CellLanes(f, in, g, Load16(k, c + 16 * b), p.cell_shift, lo, hi);
      _mm256_mask_storeu_epi16(c + 16 * b, k, _mm512_cvtepi32_epi16(cell));
      const __m512i o = LookupLanes(p.sigmoid, gate_sums[go * p.blocks + b]);
      const __m128i hidden = _mm512_cvtepi32_epi8(HiddenLanes(o, LookupLanes(p.tanh_cell, cell), hid_q, hid_zp));
      _mm_mask_storeu_epi8(out + 16 * b, k, hidden);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(hu + 16 * b), _mm_xor_si128(hidden, _mm512_castsi512_si128(sign)));
    }
  }
  // The output state: the last step's hidden values.
  for (int i = 0; i < p.nc; i += 64) {
    const int left = p.nc - i;
    const __mmask64 k = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    _mm512_mask_storeu_epi8(h + i, k, _mm512_xor_si512(_mm512_loadu_si512(hu + i), sign));
  }
}

}  // namespace edgeopt::kernels::lstm
