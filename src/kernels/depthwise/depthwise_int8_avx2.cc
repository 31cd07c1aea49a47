// AVX2 quantized depthwise convolution: pair rows, the multiply-add loop and the output stages
// (depthwise_int8.h describes the method).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/common/quant_utils.h"
#include "kernels/depthwise/depthwise_int8.h"
#include "kernels/depthwise/depthwise_int8_k3.h"

namespace edgeopt::kernels::dwq {
namespace {

// 16 consecutive values widened to int16 (reads stay inside [p, end)).
inline __m256i Load16(const int8_t* p, const int8_t* end) {
  if (p + 16 <= end) return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) int8_t tmp[16] = {};
  std::memcpy(tmp, p, static_cast<size_t>(std::max<ptrdiff_t>(0, end - p)));
  return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}
inline __m256i Load16(const uint8_t* p, const uint8_t* end) {
  if (p + 16 <= end) return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) uint8_t tmp[16] = {};
  std::memcpy(tmp, p, static_cast<size_t>(std::max<ptrdiff_t>(0, end - p)));
  return _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}
inline __m256i Load16(const int16_t* p, const int16_t* end) {
  if (p + 16 <= end) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  alignas(32) int16_t tmp[16] = {};
  std::memcpy(tmp, p, sizeof(int16_t) * static_cast<size_t>(std::max<ptrdiff_t>(0, end - p)));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
}

// 16 bytes (zeros beyond `end`).
template <typename T>
inline __m128i LoadBytes16(const T* p, const T* end) {
  if (p + 16 <= end) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  alignas(16) T tmp[16] = {};
  std::memcpy(tmp, p, static_cast<size_t>(std::max<ptrdiff_t>(0, end - p)));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
}

// Pair row of one input row: entry j, channel c = (x[j*q - pad][c], x[j*q - pad + dil][c]) minus
// the zero point, zero outside the row; 16-channel blocks in the plan's order (see Plan). For the
// natural order each widened column is first reordered to channels [0-3 8-11 | 4-7 12-15], so
// vpunpcklwd yields the pairs of channels 0-7 and vpunpckhwd those of 8-15.
// Only the 16-channel blocks [cb_begin, cb_end) are built; entries are `entry_stride` int16 apart
// (c16 * 2 for whole rows, 32 for the one-block rows of the 3x3 loop).
// kRaw (Plan::raw_input): the values are stored as they are, padding as the zero point (the bias
// holds -zp * sum(weights) instead).
template <typename T, bool kRaw = false>
void BuildPairRow(const Plan& p, const T* row, const T* end, int32_t zp, int16_t* dst, int cb_begin, int cb_end,
                  size_t entry_stride) {
  const Geom& g = p.g;
  const int C = g.channels;
  const __m256i vzp = _mm256_set1_epi16(static_cast<int16_t>(zp));
  const __m256i zero = kRaw ? vzp : _mm256_setzero_si256();  // a padding column
  const bool natural = p.natural;
  const auto sub = [&](__m256i v) { return kRaw ? v : _mm256_sub_epi16(v, vzp); };
  const auto widen = [&](const T* src) {
    const __m256i v = sub(Load16(src, end));
    return natural ? _mm256_permute4x64_epi64(v, 0xD8) : v;
  };
  if (p.q == 1 && g.dil_w == 1) {
    // Entry j pairs columns j - pad and j - pad + 1: each column is widened once and carried
    // to the next entry. Unchecked loads for the columns inside the row when the row's last
    // block ends inside the input (all rows but the input's last ones).
    const int x_fast = row + int64_t{g.in_w - 1} * C + cb_end <= end ? g.in_w : 0;
    for (int cb = cb_begin; cb < cb_end; cb += 16) {
      const auto column = [&](int x) {
        return x >= 0 && x < g.in_w ? widen(row + int64_t{x} * C + cb) : zero;
      };
      __m256i prev = column(-g.pad_w);
      int16_t* e = dst + (cb - cb_begin) * 2;
      const auto emit = [&](__m256i next) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e), _mm256_unpacklo_epi16(prev, next));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + 16), _mm256_unpackhi_epi16(prev, next));
        prev = next;
        e += entry_stride;
      };
      // Column x = j - pad + 1: left padding, then the columns whose 16 values can be loaded
      // without a bounds check, then the rest (right padding, the input's last bytes).
      int j = 0;
      for (; j < p.row_entries && j - g.pad_w + 1 < 0; ++j) emit(zero);
      const T* src = row + cb + int64_t{j - g.pad_w + 1} * C;
      for (; j < p.row_entries && j - g.pad_w + 1 < x_fast; ++j, src += C) {
        const __m256i v = sub(Load16(src, src + 16));
        emit(natural ? _mm256_permute4x64_epi64(v, 0xD8) : v);
      }
      for (; j < p.row_entries; ++j) emit(column(j - g.pad_w + 1));
    }
    return;
  }
  // 8-bit input, natural order: entries whose two columns are inside the row interleave the
  // bytes of the two columns first (vpunpck{l,h}bw), so one widening gives the pairs of 8
  // channels in order (no cross-lane shuffle); the entries at the ends take the path below.
  int j_lo = p.row_entries, j_hi = p.row_entries;
  if constexpr (sizeof(T) == 1) {
    if (natural) {
      // x1 = j * q - pad >= 0 and x1 + dil < in_w.
      j_lo = (g.pad_w + p.q - 1) / p.q;
      j_hi = std::max(j_lo, std::min(p.row_entries, (g.in_w - g.dil_w + g.pad_w + p.q - 1) / p.q));
      const int64_t x_step = int64_t{g.dil_w} * C;
      const auto entry = [&](const T* s1, int16_t* e, auto checked) {
        for (int cb = cb_begin; cb < cb_end; cb += 16) {
          const __m128i a = checked ? LoadBytes16(s1 + cb, end)
                                    : _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + cb));
          const __m128i b = checked ? LoadBytes16(s1 + x_step + cb, end)
                                    : _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + x_step + cb));
          const __m128i lo = _mm_unpacklo_epi8(a, b), hi = _mm_unpackhi_epi8(a, b);
          const __m256i p0 = std::is_signed_v<T> ? _mm256_cvtepi8_epi16(lo) : _mm256_cvtepu8_epi16(lo);
          const __m256i p1 = std::is_signed_v<T> ? _mm256_cvtepi8_epi16(hi) : _mm256_cvtepu8_epi16(hi);
          int16_t* d = e + (cb - cb_begin) * 2;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), sub(p0));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 16), sub(p1));
        }
      };
      for (int j = j_lo; j < j_hi; ++j) {
        const T* s1 = row + (int64_t{j} * p.q - g.pad_w) * C;
        int16_t* e = dst + static_cast<size_t>(j) * entry_stride;
        // The last block's 16 bytes of the second column end at s1 + x_step + cb_end.
        if (s1 + x_step + cb_end <= end) {
          entry(s1, e, std::false_type());
        } else {
          entry(s1, e, std::true_type());
        }
      }
    }
  }
  for (int j = 0; j < p.row_entries; ++j) {
    if (j == j_lo) j = j_hi;
    if (j >= p.row_entries) break;
    const int x1 = j * p.q - g.pad_w;
    const int x2 = x1 + g.dil_w;
    const bool in1 = x1 >= 0 && x1 < g.in_w, in2 = x2 >= 0 && x2 < g.in_w;
    int16_t* e = dst + static_cast<size_t>(j) * entry_stride;
    if (!in1 && !in2) {
      for (int cb = cb_begin; cb < cb_end; cb += 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + (cb - cb_begin) * 2), zero);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + (cb - cb_begin) * 2 + 16), zero);
      }
      continue;
    }
    const T* s1 = row + int64_t{x1} * C;
    const T* s2 = row + int64_t{x2} * C;
    for (int cb = cb_begin; cb < cb_end; cb += 16) {
      const __m256i v1 = in1 ? widen(s1 + cb) : zero;
      const __m256i v2 = in2 ? widen(s2 + cb) : zero;
      int16_t* d = e + (cb - cb_begin) * 2;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_unpacklo_epi16(v1, v2));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 16), _mm256_unpackhi_epi16(v1, v2));
    }
  }
}

// The reference MultiplyByQuantizedMultiplier on 8 lanes (see RequantGroup):
// high = (x * m + 2^30) >> 31 (gemmlowp's doubling high multiply; its nudge makes it exactly this
// floor), then the rounding division by 2^e with ties away from zero, written as
// x' = high - (high < 0), (x' >> e) + bit e-1 of x' (no overflow: high > INT32_MIN).
// kBiasAdded: the accumulators already hold the bias.
// kAddZp = false: the caller adds the output zero point (in int16, see RowQuant8K3).
template <bool kLeft, bool kBiasAdded = false, bool kAddZp = true>
inline __m256i Requant(__m256i acc, const RequantGroup& g) {
  const auto ld = [](const int32_t* v) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(v)); };
  __m256i x = kBiasAdded ? acc : _mm256_add_epi32(acc, ld(g.bias));
  if (kLeft) x = _mm256_sllv_epi32(x, ld(g.left));
  const __m256i m = ld(g.mult);
  const __m256i round = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, m), round);
  const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), round);
  const __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
  const __m256i xa = _mm256_add_epi32(high, _mm256_and_si256(_mm256_srai_epi32(high, 31), ld(g.neg_adjust)));
  const __m256i r = _mm256_add_epi32(_mm256_srav_epi32(xa, ld(g.shift)),
                                     _mm256_and_si256(_mm256_srav_epi32(xa, ld(g.shift_m1)), ld(g.round_bit)));
  return kAddZp ? _mm256_add_epi32(r, ld(g.zp)) : r;
}

// The same result in fewer steps when Plan::fast_requant holds (no left shift, |acc + bias| <
// 2^29, see BuildRequant): the rounding division's 2^(e-1) joins the 64-bit rounding constant
// (round_e/round_o = 2^30 + 2^(30+e)), which leaves h = high + 2^(e-1); "high < 0" is then
// h < neg_cmp (2^(e-1), or INT32_MIN when e = 0 so nothing is subtracted), and
// result = (h - (high < 0)) >> e. No int32 overflow: |high| <= 2^29.
template <bool kAddZp = true>
inline __m256i RequantFast(__m256i x, const RequantGroup& g) {
  const auto ld = [](const void* v) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(v)); };
  const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, ld(g.mult)), ld(g.round_e));
  const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), ld(g.mult_o)), ld(g.round_o));
  const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
  const __m256i adjusted = _mm256_add_epi32(h, _mm256_cmpgt_epi32(ld(g.neg_cmp), h));
  const __m256i r = _mm256_srav_epi32(adjusted, ld(g.shift));
  return kAddZp ? _mm256_add_epi32(r, ld(g.zp)) : r;
}

// RequantFast on doubled accumulators x2 = 2 * (acc + bias) (Plan::doubled: |x2| < 2^30), with
// round_e/round_o doubled too: the products 2 * (x * m + round) carry h = high + 2^(e-1) in their
// high dwords, already in place for the odd lanes; the even lanes' move down with one in-lane
// shuffle, replacing RequantFast's two 64-bit shifts.
template <bool kAddZp = true>
inline __m256i RequantFast2(__m256i x2, const RequantGroup& g) {
  const auto ld = [](const void* v) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(v)); };
  const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x2, ld(g.mult)), ld(g.round_e));
  const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x2, 32), ld(g.mult_o)), ld(g.round_o));
  const __m256i h = _mm256_blend_epi32(_mm256_shuffle_epi32(pe, 0xF5), po, 0xAA);
  const __m256i adjusted = _mm256_add_epi32(h, _mm256_cmpgt_epi32(ld(g.neg_cmp), h));
  const __m256i r = _mm256_srav_epi32(adjusted, ld(g.shift));
  return kAddZp ? _mm256_add_epi32(r, ld(g.zp)) : r;
}

template <int kMode, bool kBiasAdded, bool kAddZp = true>
inline __m256i RequantMode(__m256i acc, const RequantGroup& g) {
  if constexpr (kMode == kRqFast) {
    const __m256i x = kBiasAdded ? acc : _mm256_add_epi32(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.bias)));
    return RequantFast<kAddZp>(x, g);
  } else if constexpr (kMode == kRqFast2) {
    static_assert(kBiasAdded, "doubled plans start the accumulators at the doubled bias");
    return RequantFast2<kAddZp>(acc, g);
  } else {
    return Requant<kMode == kRqLeft, kBiasAdded, kAddZp>(acc, g);
  }
}

struct RowCtx {
  const Plan* p;
  const int16_t* rows[16];  // pair row of each filter row (null: in the padding)
  const Args* args;
  int b = 0;
  uint8_t* out = nullptr;   // output row (element size by kind)
  const float* scale = nullptr;  // hybrid: per channel (unpack order), weight_scale * batch_scale
  const float* fbias = nullptr;  // hybrid: per channel (unpack order)
};

template <int kKH, int kPW>
inline void Accumulate(const RowCtx& r, int ox, int cb, __m256i* acc0, __m256i* acc1) {
  const Plan& p = *r.p;
  const int kh = kKH ? kKH : p.g.k_h;
  const int pw = kPW ? kPW : p.pairs_w;
  const size_t c2 = static_cast<size_t>(p.c16) * 2;
  // Entry of output column ox and pair j: (ox * stride_w + 2 * j * dil_w) / q, as precomputed steps.
  const size_t first = static_cast<size_t>(ox) * p.ox_step * c2 + static_cast<size_t>(cb) * 2;
  const size_t step = static_cast<size_t>(p.j_step) * c2;
  __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
  const int16_t* wp = p.weights.data() + cb * 2;
  for (int ky = 0; ky < kh; ++ky, wp += pw * c2) {
    const int16_t* row = r.rows[ky];
    if (!row) continue;
    const int16_t* e = row + first;
    for (int j = 0; j < pw; ++j, e += step) {
      const int16_t* w = wp + j * c2;
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e)),
                                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + 16)),
                                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
    }
  }
  *acc0 = a0;
  *acc1 = a1;
}

// 16 requantized int32 lanes (natural order: r0 = channels 0-7, r1 = 8-15) to 16 int8/uint8
// bytes in channel order, clamped.
template <bool kUnsigned>
inline __m128i PackClamp8(__m256i r0, __m256i r1, __m256i lo, __m256i hi) {
  const __m256i v16 = _mm256_packs_epi32(r0, r1);  // int16 [0-3 8-11 | 4-7 12-15]
  __m256i v8 = kUnsigned ? _mm256_packus_epi16(v16, v16) : _mm256_packs_epi16(v16, v16);
  // dwords [0-3 8-11 0-3 8-11 | 4-7 12-15 4-7 12-15] -> [0-3 4-7 8-11 12-15 ...]
  v8 = _mm256_permutevar8x32_epi32(v8, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
  v8 = kUnsigned ? _mm256_min_epu8(_mm256_max_epu8(v8, lo), hi) : _mm256_min_epi8(_mm256_max_epi8(v8, lo), hi);
  return _mm256_castsi256_si128(v8);
}

inline void Store16(uint8_t* out, int valid, __m128i v) {
  if (valid >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
  } else {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), v);
    std::memcpy(out, tmp, static_cast<size_t>(valid));
  }
}

template <int kKH, int kPW, bool kUnsigned, int kMode>
void RowQuant8(const RowCtx& r) {
  const Plan& p = *r.p;
  const int C = p.g.channels;
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(p.act_min));
  const __m256i hi = _mm256_set1_epi8(static_cast<char>(p.act_max));
  for (int ox = 0; ox < p.g.out_w; ++ox) {
    uint8_t* out = r.out + static_cast<size_t>(ox) * C;
    for (int cb = 0; cb < p.c16; cb += 16) {
      __m256i a0, a1;
      Accumulate<kKH, kPW>(r, ox, cb, &a0, &a1);
      const __m256i r0 = RequantMode<kMode, false>(a0, p.requant[cb / 8]);
      const __m256i r1 = RequantMode<kMode, false>(a1, p.requant[cb / 8 + 1]);
      Store16(out + cb, C - cb, PackClamp8<kUnsigned>(r0, r1, lo, hi));
    }
  }
}

// acc += v * w (8 channels, two taps each). The empty asm keeps the sum in its register: without
// it GCC computes all the products of a block first and adds them as a tree, spilling them.
#define EDGEOPT_DW_MAC(acc, v, w)                                 \
  do {                                                            \
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16((v), (w)));     \
    asm("" : "+x"(acc));                                          \
  } while (0)

// The six weight vectors of one 8-channel group of a 3x3 filter (row r: taps 0-1 in wN[2r], tap
// 2 and a zero in wN[2r + 1]). Plain members, no array: arrays of vectors stayed on the stack.
struct W3x3 {
  __m256i w0, w1, w2, w3, w4, w5;
};

// Accumulators of kNP (1..4) consecutive output pixels of one 8-channel group of the 3x3
// dilation-1 loop, started at `bias` and stored to out[0..kNP-1]. e0/e1/e2 are the three pair
// rows at the first pixel's entry and group, entries c2 int16 apart; pixel p uses entries p and
// p + kJ of each row (kJ = 2 for stride 1, 1 for stride 2 where the pair rows hold even columns
// only). Each entry is loaded once and multiplied with the weights of the (one or two) pixels
// that use it. Named accumulators, no array (arrays of vectors stayed on the stack).
template <int kNP, int kJ>
__attribute__((always_inline)) inline void Block3x3(const int16_t* e0, const int16_t* e1, const int16_t* e2,
                                                    size_t c2, const W3x3& w, __m256i bias, __m256i* out) {
  static_assert(kNP >= 1 && kNP <= 4 && (kJ == 1 || kJ == 2), "4 pixels at most");
  __m256i a0 = bias, a1 = bias, a2 = bias, a3 = bias;
  const auto ld = [c2](const int16_t* e, int i) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + static_cast<size_t>(i) * c2));
  };
// acc of pixel P (a compile-time constant) += v * wt.
#define EDGEOPT_DW_MACP(P, v, wt)      \
  do {                                 \
    if constexpr ((P) == 0) {          \
      EDGEOPT_DW_MAC(a0, v, wt);       \
    } else if constexpr ((P) == 1) {   \
      EDGEOPT_DW_MAC(a1, v, wt);       \
    } else if constexpr ((P) == 2) {   \
      EDGEOPT_DW_MAC(a2, v, wt);       \
    } else {                           \
      EDGEOPT_DW_MAC(a3, v, wt);       \
    }                                  \
  } while (0)
  EDGEOPT_DW_K3_ROWS(e0, e1, e2, w, EDGEOPT_DW_MACP);
#undef EDGEOPT_DW_MACP
  _mm256_store_si256(out, a0);
  if constexpr (kNP > 1) _mm256_store_si256(out + 1, a1);
  if constexpr (kNP > 2) _mm256_store_si256(out + 2, a2);
  if constexpr (kNP > 3) _mm256_store_si256(out + 3, a3);
}
#undef EDGEOPT_DW_MAC

// Stores kNP pixels x 8 channels: requantized lanes r[i] (channels 0-7 of pixel i) packed with
// saturation to int16, the output zero point added there (saturating: a lane that saturates is far
// outside [act_min, act_max] either way, so the clamped bytes equal the int32 reference's),
// packed to bytes and clamped. `valid` channels (1..8) are written per pixel, `stride` apart.
template <int kNP, bool kUnsigned>
__attribute__((always_inline)) inline void Store3x3(const __m256i* r, __m256i zp16, __m256i lo, __m256i hi,
                                                    uint8_t* out, size_t stride, int valid) {
  const __m256i r1 = kNP > 1 ? r[1] : r[0], r2 = kNP > 2 ? r[2] : r[0], r3 = kNP > 3 ? r[3] : r[0];
  const __m256i a = _mm256_adds_epi16(_mm256_packs_epi32(r[0], r1), zp16);  // [p0 0-3 p1 0-3 | p0 4-7 p1 4-7]
  const __m256i b = _mm256_adds_epi16(_mm256_packs_epi32(r2, r3), zp16);
  __m256i v8 = kUnsigned ? _mm256_packus_epi16(a, b) : _mm256_packs_epi16(a, b);
  v8 = kUnsigned ? _mm256_min_epu8(_mm256_max_epu8(v8, lo), hi) : _mm256_min_epi8(_mm256_max_epi8(v8, lo), hi);
  // dwords [p0 0-3, p1 0-3, p2 0-3, p3 0-3 | p0 4-7, ...] -> 8 bytes per pixel (in-lane unpacks:
  // cheaper than vpermd here).
  const __m128i l4 = _mm256_castsi256_si128(v8), h4 = _mm256_extracti128_si256(v8, 1);
  const __m128i p01 = _mm_unpacklo_epi32(l4, h4), p23 = _mm_unpackhi_epi32(l4, h4);
  if (valid >= 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out), p01);
    if (kNP > 1) _mm_storeh_pd(reinterpret_cast<double*>(out + stride), _mm_castsi128_pd(p01));
    if (kNP > 2) _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 2 * stride), p23);
    if (kNP > 3) _mm_storeh_pd(reinterpret_cast<double*>(out + 3 * stride), _mm_castsi128_pd(p23));
  } else {
    alignas(32) uint8_t tmp[32];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), p01);
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp + 16), p23);
    for (int i = 0; i < kNP; ++i) std::memcpy(out + i * stride, tmp + 8 * i, static_cast<size_t>(valid));
  }
}

// 3x3 filter, dilation 1, stride 1 (kJ = 2) or 2 (kJ = 1), int8/uint8 output, natural channel
// order. Per 8-channel group the 6 weight vectors are loaded once for the whole batch of rows;
// per row and chunk of up to kChunk pixels, two passes: the multiply-adds (4 pixels at a time,
// Block3x3) into an L1 buffer, then requantization, packing and stores, so neither pass runs
// out of the 16 vector registers.
// kW > 0: the output width as a compile-time constant (narrow stride-1 rows, see K3Width): the
// chunk, block and store loops of a row unroll completely. Rows of 5 pixels spent ~27% of the
// loop in scalar bookkeeping per row and group (pointer loads, loop bounds, the tail switches).
template <int kJ, bool kUnsigned, int kMode, int kW = 0>
void RowsQuant8K3(const K3Batch& bt) {
  constexpr bool kLeft = kMode == kRqLeft;
  constexpr int kChunk = 32;
  const Plan& p = *bt.p;
  const int C = p.g.channels, W = kW ? kW : p.g.out_w;
  const size_t wc2 = static_cast<size_t>(p.c16) * 2, c2 = bt.c2;
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(p.act_min));
  const __m256i hi = _mm256_set1_epi8(static_cast<char>(p.act_max));
  const __m256i zp16 = _mm256_set1_epi16(static_cast<int16_t>(p.requant[0].zp[0]));
  const auto ldu = [](const int16_t* v) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)); };
  alignas(32) __m256i acc[kChunk];
  for (int cg = bt.cb; cg < std::min(C, bt.cb_end); cg += 8) {
    const int16_t* wp = p.weights.data() + cg * 2;
    W3x3 w;
    w.w0 = ldu(wp);
    w.w1 = ldu(wp + wc2);
    w.w2 = ldu(wp + 2 * wc2);
    w.w3 = ldu(wp + 3 * wc2);
    w.w4 = ldu(wp + 4 * wc2);
    w.w5 = ldu(wp + 5 * wc2);
    const RequantGroup& g = p.requant[cg / 8];
    // With a left shift the bias must be added before shifting: Requant adds it.
    const __m256i bias = kLeft ? _mm256_setzero_si256() : _mm256_load_si256(reinterpret_cast<const __m256i*>(g.bias));
    const int valid = std::min(8, C - cg);
    const size_t off = static_cast<size_t>(cg - bt.cb) * 2;
    for (int row = 0; row < bt.n; ++row) {
      const int16_t* e0 = bt.rows[row][0] + off;
      const int16_t* e1 = bt.rows[row][1] + off;
      const int16_t* e2 = bt.rows[row][2] + off;
      uint8_t* out = bt.out[row] + cg;
      for (int ox0 = 0; ox0 < W; ox0 += kChunk) {
        const int n = std::min(kChunk, W - ox0);
        int i = 0;
        for (; i + 4 <= n; i += 4, e0 += 4 * c2, e1 += 4 * c2, e2 += 4 * c2)
          Block3x3<4, kJ>(e0, e1, e2, c2, w, bias, acc + i);
        switch (n - i) {  // the last 1-3 pixels in one block
          case 3: Block3x3<3, kJ>(e0, e1, e2, c2, w, bias, acc + i); break;
          case 2: Block3x3<2, kJ>(e0, e1, e2, c2, w, bias, acc + i); break;
          case 1: Block3x3<1, kJ>(e0, e1, e2, c2, w, bias, acc + i); break;
          default: break;
        }
        e0 += (n - i) * c2;
        e1 += (n - i) * c2;
        e2 += (n - i) * c2;
        i = 0;
        for (; i + 4 <= n; i += 4, out += 4 * static_cast<size_t>(C)) {
          __m256i res[4];
          for (int k = 0; k < 4; ++k) res[k] = RequantMode<kMode, !kLeft, false>(acc[i + k], g);
          Store3x3<4, kUnsigned>(res, zp16, lo, hi, out, C, valid);
        }
        if (i < n) {  // the last 1-3 pixels: one pack and clamp
          __m256i res[4];
          for (int k = 0; k < n - i; ++k) res[k] = RequantMode<kMode, !kLeft, false>(acc[i + k], g);
          switch (n - i) {
            case 3: Store3x3<3, kUnsigned>(res, zp16, lo, hi, out, C, valid); break;
            case 2: Store3x3<2, kUnsigned>(res, zp16, lo, hi, out, C, valid); break;
            default: Store3x3<1, kUnsigned>(res, zp16, lo, hi, out, C, valid); break;
          }
          out += static_cast<size_t>(n - i) * C;
        }
      }
    }
  }
}

template <int kKH, int kPW>
void RowFloat(const RowCtx& r) {
  const Plan& p = *r.p;
  const int C = p.g.channels;
  const __m256 lo = _mm256_set1_ps(p.fact_min), hi = _mm256_set1_ps(p.fact_max);
  float* out_row = reinterpret_cast<float*>(r.out);
  for (int ox = 0; ox < p.g.out_w; ++ox) {
    float* out = out_row + static_cast<size_t>(ox) * C;
    for (int cb = 0; cb < p.c16; cb += 16) {
      __m256i a0, a1;
      Accumulate<kKH, kPW>(r, ox, cb, &a0, &a1);
      // float(acc) * (weight_scale * batch_scale), then + bias: the reference's two roundings.
      __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(a0), _mm256_loadu_ps(r.scale + cb));
      __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(a1), _mm256_loadu_ps(r.scale + cb + 8));
      if (r.fbias) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(r.fbias + cb));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(r.fbias + cb + 8));
      }
      v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
      v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
      const __m256 first = _mm256_permute2f128_ps(v0, v1, 0x20);   // channels 0-7
      const __m256 second = _mm256_permute2f128_ps(v0, v1, 0x31);  // channels 8-15
      if (cb + 16 <= C) {
        _mm256_storeu_ps(out + cb, first);
        _mm256_storeu_ps(out + cb + 8, second);
      } else {
        alignas(32) float tmp[16];
        _mm256_store_ps(tmp, first);
        _mm256_store_ps(tmp + 8, second);
        std::memcpy(out + cb, tmp, sizeof(float) * static_cast<size_t>(C - cb));
      }
    }
  }
}

template <int kKH, int kPW>
void RowInt16(const RowCtx& r) {
  const Plan& p = *r.p;
  const int C = p.g.channels;
  int16_t* out_row = reinterpret_cast<int16_t*>(r.out);
  const int64_t* bias = r.args->bias64;
  if (p.int16_row) {
    p.int16_row(p, r.rows, bias, out_row);
    return;
  }
  for (int ox = 0; ox < p.g.out_w; ++ox) {
    int16_t* out = out_row + static_cast<size_t>(ox) * C;
    for (int cb = 0; cb < p.c16; cb += 16) {
      __m256i a0, a1;
      Accumulate<kKH, kPW>(r, ox, cb, &a0, &a1);
      alignas(32) int32_t acc[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc), _mm256_permute2x128_si256(a0, a1, 0x20));
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc + 8), _mm256_permute2x128_si256(a0, a1, 0x31));
      const int n = std::min(16, C - cb);
      if (p.int16_stage) {
        p.int16_stage(p, acc, bias, cb, n, out);
        continue;
      }
      for (int i = 0; i < n; ++i) {
        const int c = cb + i;
        const int64_t x = int64_t{acc[i]} + (bias ? bias[c] : 0);
        const int32_t v = MultiplyByQuantizedMultiplier(x, p.mult16[c], p.shift16[c]);
        out[c] = static_cast<int16_t>(std::clamp(v, p.act_min, p.act_max));
      }
    }
  }
}

using RowFn = void (*)(const RowCtx&);

template <int kKH, int kPW, bool kUnsigned>
RowFn PickQuant8(const Plan& p) {
  switch (RqModeOf(p)) {
    case kRqLeft: return RowQuant8<kKH, kPW, kUnsigned, kRqLeft>;
    case kRqFast: return RowQuant8<kKH, kPW, kUnsigned, kRqFast>;
    default: return RowQuant8<kKH, kPW, kUnsigned, kRqPlain>;
  }
}

template <int kKH, int kPW>
RowFn PickRow(const Plan& p) {
  switch (p.kind) {
    case OutKind::kInt8: return PickQuant8<kKH, kPW, false>(p);
    case OutKind::kUInt8: return PickQuant8<kKH, kPW, true>(p);
    case OutKind::kFloat: return RowFloat<kKH, kPW>;
    case OutKind::kInt16: return RowInt16<kKH, kPW>;
  }
  return nullptr;
}

// The AVX2 rows for K3Picker.
struct Avx2Rows {
  static constexpr bool kFoldsZeroPoint = false;
  static constexpr bool kQuads = false;
  template <int kJ, bool kUnsigned, int kMode, int kW>
  static void Fn(const K3Batch& bt) {
    RowsQuant8K3<kJ, kUnsigned, kMode, kW>(bt);
  }
};

// 1: the 3x3 loop with kJ = 1 (stride 2), 2: kJ = 2 (stride 1), 4 or 8: kJ = 4 or 8 (16x8,
// dilated), 0: not that loop.
int K3Step(const Plan& p) {
  // 16x8 plans run it with the AVX-512 rows of depthwise_int16_avx512.cc (PlanInt16K3), also
  // with horizontal dilation (the pair-row entries of a filter row's two pairs kJ apart).
  const bool int16 = !p.int16_k3.empty();
  const bool quant8 = p.kind == OutKind::kInt8 || p.kind == OutKind::kUInt8 || int16;
  if (!quant8 || !p.natural || p.g.k_h != 3 || p.g.k_w != 3 || p.ox_step != 1) return 0;
  if (p.g.dil_w != 1) return int16 && Int16K3Step(p.j_step) ? p.j_step : 0;
  return p.j_step == 1 || p.j_step == 2 ? p.j_step : 0;
}

RowFn Pick(const Plan& p) {
  if (p.g.k_h == 3 && p.pairs_w == 2) return PickRow<3, 2>(p);
  if (p.g.k_h == 5 && p.pairs_w == 3) return PickRow<5, 3>(p);
  return PickRow<0, 0>(p);
}

// One whole pair row (all channels); the generic loops' ring holds p.ring of them.
size_t RowBytes(const Plan& p) {
  const size_t bytes = static_cast<size_t>(p.row_entries) * p.c16 * 2 * sizeof(int16_t);
  return (bytes + 63) / 64 * 64;
}
size_t RingBytes(const Plan& p) { return RowBytes(p) * static_cast<size_t>(p.ring); }

// The 3x3 loop's pair rows: bands of 16-channel blocks, as many blocks as keep 3 pair rows within
// K3RingBytes, and a ring of as many band rows as fit in it (a power of two, at least the 3
// filter rows), so that a batch of output rows is computed per weight load (small images: all
// rows). Stride 1: 40 KB (measured: 24 KB makes 56x56x144 read its input in 5 bands, 48 KB
// keeps 112x112x32's ring out of L1). Stride 2 reads 4x more input per output: 96 KB, one band
// for 112x112x96 (its 1.2 MB input does not fit L2; each band reads it again). 16x8 at stride 1:
// 48 KB, one band for 112x112x32, whose int16 input costs twice as much to read again (measured:
// 1.09x on that layer, the other MobileNetV2 layers keep their bands).
size_t K3RingBytes(const Plan& p) {
  const size_t stride1 = p.kind == OutKind::kInt16 ? 48 : 40;
  return (p.g.stride_h == 1 ? stride1 : 96) * size_t{1024};
}
struct K3Layout {
  int block_ch = 16;
  size_t row_bytes = 0;  // one band row, 64-byte multiple
  int ring_rows = 3;
  int batch = 1;  // output rows per batch: (batch - 1) * stride_h + 2 * dil_h + 1 <= ring_rows
};
K3Layout K3LayoutOf(const Plan& p) {
  K3Layout l;
  const int fit = std::max<int>(16, static_cast<int>(K3RingBytes(p) / (3 * static_cast<size_t>(p.row_entries) * 4)) / 16 * 16);
  const int bands = (p.c16 + fit - 1) / fit;
  l.block_ch = (p.c16 / 16 + bands - 1) / bands * 16;  // equal bands
  l.row_bytes = (static_cast<size_t>(p.row_entries) * l.block_ch * 4 + 63) / 64 * 64;
  const int span = 2 * p.g.dil_h + 1;  // input rows of one output row (<= 64, see PrepareFast)
  // A power of two (slot = iy & (ring_rows - 1)), at least span, at most 64.
  int fit_rows = 1;
  while (fit_rows * 2 <= static_cast<int>(std::min<size_t>(K3RingBytes(p) / l.row_bytes, 64))) fit_rows *= 2;
  int min_rows = 1;
  while (min_rows < span) min_rows *= 2;
  l.ring_rows = std::max(fit_rows, min_rows);
  l.batch = std::clamp((l.ring_rows - span) / p.g.stride_h + 1, 1, kMaxK3Batch);
  return l;
}

size_t PerThreadBytes(const Plan& p) {
  if (p.quads_kn) return KnScratchBytes(p);
  size_t bytes = RingBytes(p) + static_cast<size_t>(p.c16) * 2 * sizeof(float) + 64;
  if (K3Step(p)) {
    const K3Layout l = K3LayoutOf(p);
    // The ring and a zero row of the widest band (RowBytes: all channels).
    bytes = std::max(bytes, l.row_bytes * static_cast<size_t>(l.ring_rows) + RowBytes(p) + 64);
  }
  return bytes;
}

// The 3x3 loop over a thread's output rows [r0, r1): per band, batches of rows whose pair rows
// are built into the ring (each input row once per band) and then computed per 8-channel group.
// build512: PickPairRowAvx512's builder (the AVX-512 stride-1 rows), else nullptr (BuildPairRow);
// a template flag, so that the BuildPairRow loop stays as it was (measured: a runtime choice
// here made the stride-2 layers 15-25% slower).
template <typename T, bool kBuild512>
void RunK3Rows(const Plan& p, const Args& args, K3Fn fn, PairRowFn build512, int64_t r0, int64_t r1,
               uint8_t* scratch) {
  const Geom& g = p.g;
  const T* in = static_cast<const T*>(args.input);
  const T* in_end = in + args.input_elements;
  const K3Layout l = K3LayoutOf(p);
  int16_t* ring = reinterpret_cast<int16_t*>(scratch);
  const size_t row_elems = l.row_bytes / sizeof(int16_t);
  int16_t* zero_row = ring + row_elems * static_cast<size_t>(l.ring_rows);
  bool zero_ready = false;
  int64_t tags[64];
  const int ring_mask = l.ring_rows - 1;
  K3Batch bt;
  bt.p = &p;
  bt.c2 = static_cast<size_t>(l.block_ch) * 2;
  for (int cb = 0; cb < p.c16; cb += l.block_ch) {
    for (int i = 0; i < l.ring_rows; ++i) tags[i] = -1;
    bt.cb = cb;
    bt.cb_end = std::min(cb + l.block_ch, p.c16);
    int b = static_cast<int>(r0 / g.out_h), oy = static_cast<int>(r0 % g.out_h);
    for (int64_t row = r0; row < r1;) {
      // Rows of one image only: their input rows are distinct modulo ring_rows.
      bt.n = static_cast<int>(std::min<int64_t>({r1 - row, l.batch, g.out_h - oy}));
      for (int k = 0; k < bt.n; ++k, ++row, ++oy) {
        for (int ky = 0; ky < 3; ++ky) {
          const int iy = oy * g.stride_h - g.pad_h + ky * g.dil_h;
          if (iy < 0 || iy >= g.in_h) {
            if (!zero_ready) {
              // Padding rows: zeros, or the zero point when the pair rows hold raw values.
              // Quad rows: bytes, each the unsigned zero point.
              const int32_t fill = p.quads ? p.quad_zp * 0x101 : p.raw_input ? args.input_zero_point : 0;
              std::fill_n(zero_row, RowBytes(p) / sizeof(int16_t), static_cast<int16_t>(fill));
              zero_ready = true;
            }
            bt.rows[k][ky] = zero_row;
            continue;
          }
          const int slot = iy & ring_mask;
          int16_t* dst = ring + row_elems * static_cast<size_t>(slot);
          const int64_t tag = int64_t{b} * g.in_h + iy;
          if (tags[slot] != tag) {
            const T* src = in + (int64_t{b} * g.in_h + iy - args.in_row0) * g.in_w * g.channels;
            if constexpr (kBuild512) {
              build512(p, src, in_end, args.input_zero_point, dst, cb, bt.cb_end, bt.c2);
            } else if (p.raw_input) {
              BuildPairRow<T, true>(p, src, in_end, args.input_zero_point, dst, cb, bt.cb_end, bt.c2);
            } else {
              BuildPairRow<T>(p, src, in_end, args.input_zero_point, dst, cb, bt.cb_end, bt.c2);
            }
            tags[slot] = tag;
          }
          bt.rows[k][ky] = dst;
        }
        bt.out[k] = static_cast<uint8_t*>(args.output) +
                    static_cast<size_t>(row - args.out_row0) * g.out_w * g.channels * sizeof(T);
      }
      fn(bt);
      if (oy == g.out_h) {
        oy = 0;
        ++b;
      }
    }
  }
}

template <typename T>
void RunTyped(rt::ThreadPool& pool, const Plan& p, const Args& args) {
  const Geom& g = p.g;
  const T* in = static_cast<const T*>(args.input);
  const T* in_end = in + args.input_elements;
  const size_t elem = p.kind == OutKind::kFloat ? sizeof(float) : p.kind == OutKind::kInt16 ? sizeof(int16_t) : 1;
  const K3Fn k3 = !K3Step(p) ? nullptr : p.avx512 ? PickK3Avx512(p, K3Step(p)) : K3Picker<Avx2Rows>::Pick(p, K3Step(p));
  const RowFn row_fn = k3 ? nullptr : Pick(p);
  const PairRowFn build512 = k3 ? PickPairRowAvx512(p, std::is_same_v<T, uint8_t>) : nullptr;
  const int64_t total_rows = int64_t{g.batches} * g.out_h;
  const int threads = static_cast<int>(std::min<int64_t>(pool.num_threads(), total_rows));
  auto work = [&](int slot) {
    const int64_t r0 = total_rows * slot / threads, r1 = total_rows * (slot + 1) / threads;
    uint8_t* base = pool.SlotScratch(slot);
    if (k3) {
      return build512 ? RunK3Rows<T, true>(p, args, k3, build512, r0, r1, base)
                      : RunK3Rows<T, false>(p, args, k3, nullptr, r0, r1, base);
    }
    int16_t* ring = reinterpret_cast<int16_t*>(base);
    float* scale = reinterpret_cast<float*>(base + RingBytes(p));
    float* fbias = scale + p.c16;
    const size_t row_elems = RowBytes(p) / sizeof(int16_t);
    int64_t tags[64];
    for (int i = 0; i < p.ring; ++i) tags[i] = -1;
    RowCtx r;
    r.p = &p;
    r.args = &args;
    int last_batch = -1;
    for (int64_t row = r0; row < r1; ++row) {
      const int b = static_cast<int>(row / g.out_h), oy = static_cast<int>(row % g.out_h);
      const int32_t zp = args.batch_zero_point ? args.batch_zero_point[b] : args.input_zero_point;
      if (p.kind == OutKind::kFloat && b != last_batch) {
        // Per-channel float constants in the unpack order of the accumulators.
        for (int c = 0; c < p.c16; ++c) {
          const int block = c / 16, i = c % 16;
          const int src = block * 16 + (i < 8 ? (i < 4 ? i : i + 4) : (i < 12 ? i - 4 : i));
          const bool real = src < g.channels;
          scale[c] = real ? p.weight_scale[src] * args.batch_scale[b] : 0.0f;
          fbias[c] = real && args.float_bias ? args.float_bias[src] : 0.0f;
        }
        last_batch = b;
      }
      for (int ky = 0; ky < g.k_h; ++ky) {
        const int iy = oy * g.stride_h - g.pad_h + ky * g.dil_h;
        if (iy < 0 || iy >= g.in_h) {
          r.rows[ky] = nullptr;
          continue;
        }
        const int slot_index = iy % p.ring;
        int16_t* dst = ring + row_elems * static_cast<size_t>(slot_index);
        const int64_t tag = int64_t{b} * g.in_h + iy;
        if (tags[slot_index] != tag) {
          BuildPairRow<T>(p, in + (int64_t{b} * g.in_h + iy) * g.in_w * g.channels, in_end, zp, dst, 0, p.c16,
                          static_cast<size_t>(p.c16) * 2);
          tags[slot_index] = tag;
        }
        r.rows[ky] = dst;
      }
      r.b = b;
      r.out = static_cast<uint8_t*>(args.output) + static_cast<size_t>(row) * g.out_w * g.channels * elem;
      r.scale = scale;
      r.fbias = args.float_bias ? fbias : nullptr;
      row_fn(r);
    }
  };
  if (threads <= 1) {
    work(0);
    return;
  }
  pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) work(static_cast<int>(s));
  });
}

// The 3x3 loop's plan: raw input values when the folded bias fits, doubled in the short form.
void FoldZeroPointAndDouble(Plan* p, int32_t input_zero_point) {
  // Raw input values: acc + bias = sum(x * w) + (bias - zp * sum(w)), all partial sums far from
  // int32 limits when |bias - zp * sum(w)| < 2^29 (|sum(x * w)| <= 9 * 255 * 255).
  std::vector<int64_t> folded(p->c16);
  bool fits = true;
  for (int d = 0; d < p->c16; ++d) {
    int64_t sum = 0;
    for (int t = 0; t < p->g.k_h * p->pairs_w * 2; ++t) sum += p->weights[static_cast<size_t>(t / 2) * p->c16 * 2 + d * 2 + t % 2];
    folded[d] = p->requant[d / 8].bias[d % 8] - int64_t{input_zero_point} * sum;
    if (std::abs(folded[d]) >= (int64_t{1} << 29)) fits = false;
  }
  if (fits) {
    for (int d = 0; d < p->c16; ++d) p->requant[d / 8].bias[d % 8] = static_cast<int32_t>(folded[d]);
    p->raw_input = true;
  }
  if (!p->fast_requant) return;
  // |w| <= 255 after the zero point, so 2w fits int16 and |2 * (acc + bias)| < 2^30.
  for (int16_t& w : p->weights) w = static_cast<int16_t>(2 * w);
  for (RequantGroup& g : p->requant) {
    for (int32_t& b : g.bias) b *= 2;
    for (int64_t& r : g.round_e) r *= 2;
    for (int64_t& r : g.round_o) r *= 2;
  }
  p->doubled = true;
}

// The quad rows' plan (see Plan::quads) from the weights and bias before FoldZeroPointAndDouble:
// quad_weights (and quad_rest / quad_split where a weight leaves int8), quad_zp and, per channel
// position, the bias with -quad_zp * sum(weights) folded in. The split is exact: vpdpbusd adds
// x * a + x * r = x * w per tap, and no partial sum nears 2^31 (|folded bias| < 2^29, each
// vpdpbusd adds at most 3 * 255 * 128 < 2^17, 6 of them per pixel).
bool PlanQuads(Plan* p, int32_t input_zero_point, std::vector<int32_t>* quad_bias) {
  const int c16 = p->c16, k_h = p->g.k_h, k_w = p->g.k_w, groups = (k_w + 3) / 4;
  const int32_t zp = input_zero_point + (p->kind == OutKind::kInt8 ? 128 : 0);
  std::vector<int8_t> quad(static_cast<size_t>(k_h) * groups * c16 * 4, 0), rest(quad.size(), 0);
  std::vector<uint8_t> split(static_cast<size_t>(c16) / 16, 0);
  quad_bias->assign(c16, 0);
  for (int d = 0; d < c16; ++d) {
    int64_t sum = 0;
    for (int ky = 0; ky < k_h; ++ky)
      for (int kx = 0; kx < k_w; ++kx) {
        const int16_t w = p->weights[((static_cast<size_t>(ky) * p->pairs_w + kx / 2) * c16 + d) * 2 + kx % 2];
        const int a = std::clamp<int>(w, -128, 127), r = w - a;
        if (r > 127) return false;  // w = 255: no two int8 values add up to it
        const size_t at = ((static_cast<size_t>(ky) * groups + kx / 4) * c16 + d) * 4 + kx % 4;
        quad[at] = static_cast<int8_t>(a);
        rest[at] = static_cast<int8_t>(r);
        if (r != 0) split[d / 16] = 1;
        sum += w;
      }
    const int64_t folded = p->requant[d / 8].bias[d % 8] - int64_t{zp} * sum;
    if (std::abs(folded) >= (int64_t{1} << 29)) return false;
    (*quad_bias)[d] = static_cast<int32_t>(folded);
  }
  p->quad_weights = std::move(quad);
  if (std::find(split.begin(), split.end(), 1) != split.end()) {
    p->quad_rest = std::move(rest);
    p->quad_split = std::move(split);
  }
  p->quad_zp = zp;
  return true;
}

}  // namespace

bool Avx512RowsPay(int channels) {
  const int c16 = (channels + 15) / 16 * 16;
  return 4 * (c16 - channels) <= c16;
}

namespace {
// Filters the K x K quad loop takes (Plan::quads_kn), before its weights are looked at: 5 or 7
// rows of 5 to 8 taps, and 3x3 filters the 3x3 loop does not take (horizontal dilation, e.g.
// DeepLab's atrous layers); stride_w 1 or 2, any dilation.
bool KnShapeFits(const Plan& p) {
  const Geom& g = p.g;
  const bool filter = ((g.k_h == 5 || g.k_h == 7) && g.k_w >= 5 && g.k_w <= 8) || (g.k_h == 3 && g.k_w == 3);
  // Packed plans (kn_pixels): stride_w 1, tap groups a whole number of entries apart.
  const bool packed_ok = p.kn_pixels == 1 || (g.stride_w == 1 && g.channels == 16 && (4 * g.dil_w) % p.kn_pixels == 0);
  return (p.kind == OutKind::kInt8 || p.kind == OutKind::kUInt8) && p.natural && p.avx512 && filter && packed_ok &&
         (g.stride_w == 1 || g.stride_w == 2) && Avx512RowsPay(g.channels);
}
}  // namespace

void FinishPlan(Plan* p, int32_t input_zero_point) {
  if (p->kn_pixels > 1 || !K3Step(*p)) {
    if (p->quads_kn) return;  // finished already
    std::vector<int32_t> quad_bias;
    p->quads_kn = KnShapeFits(*p) && PlanQuads(p, input_zero_point, &quad_bias) && p->quad_rest.empty();
    if (!p->quads_kn) {
      // The generic loop: pair rows, no quads (a packed plan is dropped by its caller).
      p->avx512 = false;
      p->quad_weights.clear();
      p->quad_rest.clear();
      p->quad_split.clear();
      return;
    }
    p->kn_groups = (p->g.k_w + 3) / 4;
    // e.g. avx512/5x5s2/dp4; with horizontal dilation avx512/3x3s1d2/dp4.
    p->kn_name = "avx512/" + std::to_string(p->g.k_h) + "x" + std::to_string(p->g.k_w) + "s" +
                 std::to_string(p->g.stride_w) + (p->g.dil_w > 1 ? "d" + std::to_string(p->g.dil_w) : "") +
                 (p->kn_pixels > 1 ? "/p" + std::to_string(p->kn_pixels) : "") + "/dp4";
    FoldZeroPointAndDouble(p, input_zero_point);
    BuildRequant16(p);
    for (size_t d = 0; d < quad_bias.size(); ++d) p->requant16[d / 16].bias[d % 16] = quad_bias[d];
    FoldOutputZeroPoint16(p);
    PlanQuadFloat(p);
    return;
  }
  if (!Avx512RowsPay(p->g.channels)) p->avx512 = false;
  if (p->doubled || p->raw_input) return;  // finished already
  std::vector<int32_t> quad_bias;
  p->quads = p->avx512 && PlanQuads(p, input_zero_point, &quad_bias);
  FoldZeroPointAndDouble(p, input_zero_point);
  if (p->avx512) {
    BuildRequant16(p);
    if (p->quads) {
      for (size_t d = 0; d < quad_bias.size(); ++d) p->requant16[d / 16].bias[d % 16] = quad_bias[d];
      p->row_entries = p->g.out_w;  // one quad entry per output pixel
      if (K3Step(*p) == 2 && p->g.out_w >= kPairQuadsMinWidth) {
        // Pair quads: pixel 2j + 1's taps one byte up (byte 3 of every 3x3 quad is zero).
        const auto up = [](const std::vector<int8_t>& w) {
          std::vector<int8_t> b(w.size(), 0);
          for (size_t i = 0; i < w.size(); i += 4)
            std::copy_n(w.begin() + static_cast<ptrdiff_t>(i), 3, b.begin() + static_cast<ptrdiff_t>(i) + 1);
          return b;
        };
        p->quad_pairs = true;
        p->quad_weights_b = up(p->quad_weights);
        if (!p->quad_rest.empty()) p->quad_rest_b = up(p->quad_rest);
        p->row_entries = (p->g.out_w + 1) / 2;
      }
    }
    FoldOutputZeroPoint16(p);
    PlanQuadFloat(p);
  }
}

const char* LoopName(const Plan& p) {
  if (p.quads_kn || (!p.int16_k3.empty() && p.g.dil_w != 1)) return p.kn_name.c_str();
  switch (K3Step(p)) {
    case 2: {
      static const char* const kAvx2[kK3NarrowMax + 1] = {
          "avx2/3x3s1",    "avx2/3x3s1/w1", "avx2/3x3s1/w2", "avx2/3x3s1/w3", "avx2/3x3s1/w4",
          "avx2/3x3s1/w5", "avx2/3x3s1/w6", "avx2/3x3s1/w7", "avx2/3x3s1/w8"};
      static const char* const kAvx512[kK3NarrowMax + 1] = {
          "avx512/3x3s1",    "avx512/3x3s1/w1", "avx512/3x3s1/w2", "avx512/3x3s1/w3", "avx512/3x3s1/w4",
          "avx512/3x3s1/w5", "avx512/3x3s1/w6", "avx512/3x3s1/w7", "avx512/3x3s1/w8"};
      static const char* const kQuads[kK3NarrowMax + 1] = {
          "avx512/3x3s1/dp4",    "avx512/3x3s1/w1/dp4", "avx512/3x3s1/w2/dp4", "avx512/3x3s1/w3/dp4",
          "avx512/3x3s1/w4/dp4", "avx512/3x3s1/w5/dp4", "avx512/3x3s1/w6/dp4", "avx512/3x3s1/w7/dp4",
          "avx512/3x3s1/w8/dp4"};
      // Quad rows with split weights in some groups (Plan::quad_rest).
      static const char* const kSplit[kK3NarrowMax + 1] = {
          "avx512/3x3s1/dp4x2",    "avx512/3x3s1/w1/dp4x2", "avx512/3x3s1/w2/dp4x2", "avx512/3x3s1/w3/dp4x2",
          "avx512/3x3s1/w4/dp4x2", "avx512/3x3s1/w5/dp4x2", "avx512/3x3s1/w6/dp4x2", "avx512/3x3s1/w7/dp4x2",
          "avx512/3x3s1/w8/dp4x2"};
      // Pair quads (Plan::quad_pairs): the same names with /pairs.
      static const auto pairs = [](const char* const* names) {
        std::array<std::string, kK3NarrowMax + 1> a;
        for (int i = 0; i <= kK3NarrowMax; ++i) a[i] = std::string(names[i]) + "/pairs";
        return a;
      };
      static const std::array<std::string, kK3NarrowMax + 1> kQuadPairs = pairs(kQuads), kSplitPairs = pairs(kSplit);
      if (p.quad_pairs) return (p.quad_rest.empty() ? kQuadPairs : kSplitPairs)[K3NarrowWidth(p)].c_str();
      return (p.quads ? (p.quad_rest.empty() ? kQuads : kSplit) : p.avx512 ? kAvx512 : kAvx2)[K3NarrowWidth(p)];
    }
    case 1:
      return p.quads ? (p.quad_rest.empty() ? "avx512/3x3s2/dp4" : "avx512/3x3s2/dp4x2")
             : p.avx512 ? "avx512/3x3s2"
                        : "avx2/3x3s2";
    default: return "avx2/generic";
  }
}

size_t SlotBytes(const Plan& p) { return PerThreadBytes(p); }

bool RowsApply(const Plan& p) {
  return (p.quads_kn || K3Step(p) != 0) && (p.kind == OutKind::kInt8 || p.kind == OutKind::kUInt8);
}

template <typename T>
void RunRowsTyped(const Plan& p, const Args& args, int64_t r0, int64_t r1, uint8_t* scratch) {
  const K3Fn k3 = p.avx512 ? PickK3Avx512(p, K3Step(p)) : K3Picker<Avx2Rows>::Pick(p, K3Step(p));
  const PairRowFn build512 = PickPairRowAvx512(p, std::is_same_v<T, uint8_t>);
  if (build512) return RunK3Rows<T, true>(p, args, k3, build512, r0, r1, scratch);
  RunK3Rows<T, false>(p, args, k3, nullptr, r0, r1, scratch);
}

void RunRows(const Plan& plan, const Args& args, bool uint8_input, int64_t r0, int64_t r1, uint8_t* scratch) {
  if (plan.quads_kn) return RunKnRows(plan, args, r0, r1, scratch);
  if (uint8_input) return RunRowsTyped<uint8_t>(plan, args, r0, r1, scratch);
  RunRowsTyped<int8_t>(plan, args, r0, r1, scratch);
}

void Run(rt::ThreadPool& pool, const Plan& plan, const Args& args, bool uint8_input, bool int16_input) {
  if (plan.quads_kn) return RunKnAvx512(pool, plan, args);
  if (int16_input) return RunTyped<int16_t>(pool, plan, args);
  if (uint8_input) return RunTyped<uint8_t>(pool, plan, args);
  RunTyped<int8_t>(pool, plan, args);
}

}  // namespace edgeopt::kernels::dwq
