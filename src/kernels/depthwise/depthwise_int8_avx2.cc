// AVX2 quantized depthwise convolution: pair rows, the multiply-add loop and the output stages
// (depthwise_int8.h describes the method).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/quant_utils.h"
#include "kernels/depthwise/depthwise_int8.h"

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

// Pair row of one input row: entry j, channel c = (x[j*q - pad][c], x[j*q - pad + dil][c]) minus
// the zero point, zero outside the row; 16-channel blocks in the unpack order (see Plan).
template <typename T>
void BuildPairRow(const Plan& p, const T* row, const T* end, int32_t zp, int16_t* dst) {
  const Geom& g = p.g;
  const int C = g.channels;
  const __m256i vzp = _mm256_set1_epi16(static_cast<int16_t>(zp));
  const __m256i zero = _mm256_setzero_si256();
  if (p.q == 1 && g.dil_w == 1) {
    // Entry j pairs columns j - pad and j - pad + 1: each column is widened once and carried
    // to the next entry.
    const size_t c2 = static_cast<size_t>(p.c16) * 2;
    for (int cb = 0; cb < p.c16; cb += 16) {
      const auto column = [&](int x) {
        return x >= 0 && x < g.in_w ? _mm256_sub_epi16(Load16(row + int64_t{x} * C + cb, end), vzp) : zero;
      };
      __m256i prev = column(-g.pad_w);
      int16_t* e = dst + cb * 2;
      for (int j = 0; j < p.row_entries; ++j, e += c2) {
        const __m256i next = column(j - g.pad_w + 1);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e), _mm256_unpacklo_epi16(prev, next));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + 16), _mm256_unpackhi_epi16(prev, next));
        prev = next;
      }
    }
    return;
  }
  for (int j = 0; j < p.row_entries; ++j) {
    const int x1 = j * p.q - g.pad_w;
    const int x2 = x1 + g.dil_w;
    const bool in1 = x1 >= 0 && x1 < g.in_w, in2 = x2 >= 0 && x2 < g.in_w;
    int16_t* e = dst + static_cast<size_t>(j) * p.c16 * 2;
    if (!in1 && !in2) {
      std::memset(e, 0, sizeof(int16_t) * 2 * p.c16);
      continue;
    }
    const T* s1 = row + int64_t{x1} * C;
    const T* s2 = row + int64_t{x2} * C;
    for (int cb = 0; cb < p.c16; cb += 16) {
      const __m256i v1 = in1 ? _mm256_sub_epi16(Load16(s1 + cb, end), vzp) : zero;
      const __m256i v2 = in2 ? _mm256_sub_epi16(Load16(s2 + cb, end), vzp) : zero;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + cb * 2), _mm256_unpacklo_epi16(v1, v2));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + cb * 2 + 16), _mm256_unpackhi_epi16(v1, v2));
    }
  }
}

// The reference MultiplyByQuantizedMultiplier on 8 lanes (see RequantGroup):
// high = (x * m + 2^30) >> 31 (gemmlowp's doubling high multiply; its nudge makes it exactly this
// floor), then the rounding division by 2^e with ties away from zero, written as
// x' = high - (high < 0), (x' >> e) + bit e-1 of x' (no overflow: high > INT32_MIN).
// kBiasAdded: the accumulators already hold the bias.
template <bool kLeft, bool kBiasAdded = false>
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
  return _mm256_add_epi32(r, ld(g.zp));
}

// The same result in fewer steps when Plan::fast_requant holds (no left shift, |acc + bias| <
// 2^29, see BuildRequant): the rounding division's 2^(e-1) joins the 64-bit rounding constant
// (round_e/round_o = 2^30 + 2^(30+e)), which leaves h = high + 2^(e-1); "high < 0" is then
// h < neg_cmp (2^(e-1), or INT32_MIN when e = 0 so nothing is subtracted), and
// result = (h - (high < 0)) >> e. No int32 overflow: |high| <= 2^29.
inline __m256i RequantFast(__m256i x, const RequantGroup& g) {
  const auto ld = [](const void* v) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(v)); };
  const __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, ld(g.mult)), ld(g.round_e));
  const __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), ld(g.mult_o)), ld(g.round_o));
  const __m256i h = _mm256_blend_epi32(_mm256_srli_epi64(pe, 31), _mm256_slli_epi64(po, 1), 0xAA);
  const __m256i adjusted = _mm256_add_epi32(h, _mm256_cmpgt_epi32(ld(g.neg_cmp), h));
  return _mm256_add_epi32(_mm256_srav_epi32(adjusted, ld(g.shift)), ld(g.zp));
}

// Requantization modes of the int8/uint8 rows.
enum RqMode { kRqPlain = 0, kRqLeft = 1, kRqFast = 2 };

template <int kMode, bool kBiasAdded>
inline __m256i RequantMode(__m256i acc, const RequantGroup& g) {
  if constexpr (kMode == kRqFast) {
    const __m256i x = kBiasAdded ? acc : _mm256_add_epi32(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.bias)));
    return RequantFast(x, g);
  } else {
    return Requant<kMode == kRqLeft, kBiasAdded>(acc, g);
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

// 16 requantized int32 lanes (unpack order) to 16 int8/uint8 bytes in channel order, clamped.
template <bool kUnsigned>
inline __m128i PackClamp8(__m256i r0, __m256i r1, __m256i lo, __m256i hi) {
  const __m256i v16 = _mm256_packs_epi32(r0, r1);  // channels 0-7 | 8-15
  __m256i v8 = kUnsigned ? _mm256_packus_epi16(v16, v16) : _mm256_packs_epi16(v16, v16);
  v8 = _mm256_permute4x64_epi64(v8, 0x08);
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

// 3x3 filter, dilation 1 (either stride), rows with all three filter rows inside the input: the
// 12 weight vectors of a 16-channel block stay in registers while the block walks along the row,
// the bias starts the accumulators, and the taps are fixed offsets (kJ entries between the two
// pairs of a filter row: 2 for stride 1, 1 when the pair rows hold even columns only). Rows
// touching the top/bottom padding go to the generic loop.
template <int kJ, bool kUnsigned, int kMode>
void RowQuant8K3(const RowCtx& r) {
  if (!r.rows[0] || !r.rows[1] || !r.rows[2]) return RowQuant8<3, 2, kUnsigned, kMode>(r);
  constexpr bool kLeft = kMode == kRqLeft;
  const Plan& p = *r.p;
  const int C = p.g.channels, W = p.g.out_w;
  const size_t c2 = static_cast<size_t>(p.c16) * 2;
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(p.act_min));
  const __m256i hi = _mm256_set1_epi8(static_cast<char>(p.act_max));
  const auto ldu = [](const int16_t* v) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v)); };
  for (int cb = 0; cb < p.c16; cb += 16) {
    const int16_t* w = p.weights.data() + cb * 2;
    const __m256i w00 = ldu(w), w01 = ldu(w + 16), w10 = ldu(w + c2), w11 = ldu(w + c2 + 16);
    const __m256i w20 = ldu(w + 2 * c2), w21 = ldu(w + 2 * c2 + 16), w30 = ldu(w + 3 * c2), w31 = ldu(w + 3 * c2 + 16);
    const __m256i w40 = ldu(w + 4 * c2), w41 = ldu(w + 4 * c2 + 16), w50 = ldu(w + 5 * c2), w51 = ldu(w + 5 * c2 + 16);
    const RequantGroup& g0 = p.requant[cb / 8];
    const RequantGroup& g1 = p.requant[cb / 8 + 1];
    // With a left shift the bias must be added before shifting: Requant adds it.
    const __m256i b0 = kLeft ? _mm256_setzero_si256() : _mm256_load_si256(reinterpret_cast<const __m256i*>(g0.bias));
    const __m256i b1 = kLeft ? _mm256_setzero_si256() : _mm256_load_si256(reinterpret_cast<const __m256i*>(g1.bias));
    const int16_t* e0 = r.rows[0] + cb * 2;
    const int16_t* e1 = r.rows[1] + cb * 2;
    const int16_t* e2 = r.rows[2] + cb * 2;
    const size_t j = kJ * c2;
    uint8_t* out = r.out + cb;
    const int valid = C - cb;
    // One output pixel's 16 requantized int32 lanes (two vectors in unpack order).
    const auto pixel = [&](size_t o, __m256i* r0, __m256i* r1) {
      __m256i a0 = _mm256_add_epi32(b0, _mm256_madd_epi16(ldu(e0 + o), w00));
      __m256i a1 = _mm256_add_epi32(b1, _mm256_madd_epi16(ldu(e0 + o + 16), w01));
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(ldu(e0 + o + j), w10));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(ldu(e0 + o + j + 16), w11));
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(ldu(e1 + o), w20));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(ldu(e1 + o + 16), w21));
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(ldu(e1 + o + j), w30));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(ldu(e1 + o + j + 16), w31));
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(ldu(e2 + o), w40));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(ldu(e2 + o + 16), w41));
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(ldu(e2 + o + j), w50));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(ldu(e2 + o + j + 16), w51));
      *r0 = RequantMode<kMode, !kLeft>(a0, g0);
      *r1 = RequantMode<kMode, !kLeft>(a1, g1);
    };
    int ox = 0;
    // Two pixels share the packing and clamping: bytes [a0-7 b0-7 | a8-15 b8-15], reordered.
    for (; ox + 2 <= W; ox += 2, out += 2 * static_cast<size_t>(C)) {
      __m256i ra0, ra1, rb0, rb1;
      pixel(static_cast<size_t>(ox) * c2, &ra0, &ra1);
      pixel(static_cast<size_t>(ox + 1) * c2, &rb0, &rb1);
      const __m256i va = _mm256_packs_epi32(ra0, ra1), vb = _mm256_packs_epi32(rb0, rb1);
      __m256i v8 = kUnsigned ? _mm256_packus_epi16(va, vb) : _mm256_packs_epi16(va, vb);
      v8 = _mm256_permute4x64_epi64(v8, 0xD8);
      v8 = kUnsigned ? _mm256_min_epu8(_mm256_max_epu8(v8, lo), hi) : _mm256_min_epi8(_mm256_max_epi8(v8, lo), hi);
      Store16(out, valid, _mm256_castsi256_si128(v8));
      Store16(out + C, valid, _mm256_extracti128_si256(v8, 1));
    }
    if (ox < W) {
      __m256i r0, r1;
      pixel(static_cast<size_t>(ox) * c2, &r0, &r1);
      Store16(out, valid, PackClamp8<kUnsigned>(r0, r1, lo, hi));
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
  for (int ox = 0; ox < p.g.out_w; ++ox) {
    int16_t* out = out_row + static_cast<size_t>(ox) * C;
    for (int cb = 0; cb < p.c16; cb += 16) {
      __m256i a0, a1;
      Accumulate<kKH, kPW>(r, ox, cb, &a0, &a1);
      alignas(32) int32_t acc[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc), _mm256_permute2x128_si256(a0, a1, 0x20));
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc + 8), _mm256_permute2x128_si256(a0, a1, 0x31));
      const int n = std::min(16, C - cb);
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

// The requantization mode of a plan.
int RqModeOf(const Plan& p) { return p.any_left_shift ? kRqLeft : p.fast_requant ? kRqFast : kRqPlain; }

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

template <int kJ, bool kUnsigned>
RowFn PickK3Mode(const Plan& p) {
  switch (RqModeOf(p)) {
    case kRqLeft: return RowQuant8K3<kJ, kUnsigned, kRqLeft>;
    case kRqFast: return RowQuant8K3<kJ, kUnsigned, kRqFast>;
    default: return RowQuant8K3<kJ, kUnsigned, kRqPlain>;
  }
}

template <int kJ>
RowFn PickK3(const Plan& p) {
  return p.kind == OutKind::kInt8 ? PickK3Mode<kJ, false>(p) : PickK3Mode<kJ, true>(p);
}

RowFn Pick(const Plan& p) {
  const bool quant8 = p.kind == OutKind::kInt8 || p.kind == OutKind::kUInt8;
  if (quant8 && p.g.k_h == 3 && p.g.k_w == 3 && p.g.dil_w == 1 && p.ox_step == 1) {
    if (p.j_step == 2) return PickK3<2>(p);
    if (p.j_step == 1) return PickK3<1>(p);
  }
  if (p.g.k_h == 3 && p.pairs_w == 2) return PickRow<3, 2>(p);
  if (p.g.k_h == 5 && p.pairs_w == 3) return PickRow<5, 3>(p);
  return PickRow<0, 0>(p);
}

size_t RingBytes(const Plan& p) {
  const size_t bytes = static_cast<size_t>(p.ring) * p.row_entries * p.c16 * 2 * sizeof(int16_t);
  return (bytes + 63) / 64 * 64;
}
size_t PerThreadBytes(const Plan& p) {
  return RingBytes(p) + static_cast<size_t>(p.c16) * 2 * sizeof(float) + 64;
}

template <typename T>
void RunTyped(rt::ThreadPool& pool, const Plan& p, const Args& args) {
  const Geom& g = p.g;
  const T* in = static_cast<const T*>(args.input);
  const T* in_end = in + args.input_elements;
  const size_t elem = p.kind == OutKind::kFloat ? sizeof(float) : p.kind == OutKind::kInt16 ? sizeof(int16_t) : 1;
  const RowFn row_fn = Pick(p);
  const int64_t total_rows = int64_t{g.batches} * g.out_h;
  const int threads = static_cast<int>(std::min<int64_t>(pool.num_threads(), total_rows));
  const size_t per_thread = PerThreadBytes(p);
  auto work = [&](int slot) {
    const int64_t r0 = total_rows * slot / threads, r1 = total_rows * (slot + 1) / threads;
    uint8_t* base = static_cast<uint8_t*>(args.scratch) + per_thread * static_cast<size_t>(slot);
    int16_t* ring = reinterpret_cast<int16_t*>(base);
    float* scale = reinterpret_cast<float*>(base + RingBytes(p));
    float* fbias = scale + p.c16;
    const size_t row_elems = static_cast<size_t>(p.row_entries) * p.c16 * 2;
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
          BuildPairRow<T>(p, in + (int64_t{b} * g.in_h + iy) * g.in_w * g.channels, in_end, zp, dst);
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

}  // namespace

size_t ScratchBytes(const Plan& p, int threads) { return PerThreadBytes(p) * static_cast<size_t>(std::max(threads, 1)); }

void Run(rt::ThreadPool& pool, const Plan& plan, const Args& args, bool uint8_input, bool int16_input) {
  if (int16_input) return RunTyped<int16_t>(pool, plan, args);
  if (uint8_input) return RunTyped<uint8_t>(pool, plan, args);
  RunTyped<int8_t>(pool, plan, args);
}

}  // namespace edgeopt::kernels::dwq
