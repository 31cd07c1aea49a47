// Pieces shared by the AVX-512 rows of the 3x3 depthwise loop over pair rows: the int8/uint8
// rows (depthwise_int8_avx512.cc) and the 16x8 rows (depthwise_int16_avx512.cc). Include only
// from sources built with AVX-512 VNNI (*_avx512.cc). Internal to depthwise/.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/depthwise/depthwise_int8_k3.h"

// GCC 12's AVX-512 headers initialize their "undefined" pass-through operands with themselves
// (`__m512i __Y = __Y;`), which -Wmaybe-uninitialized (and, for _mm512_zextsi256_si512,
// -Wuninitialized) reports at every inlined use (GCC bug 105593); for the files including this.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace edgeopt::kernels::dwq {

// The 16x8 generic loop's requantization (Plan::rq16_*, the reference's 64-bit
// MultiplyByQuantizedMultiplier per channel) for channels [cb, cb + n) (n <= 16), with its
// constants and the int64 bias (null: none) loaded once: Int16StageAvx512 and the generic
// loop's AVX-512 rows (depthwise_int16_avx512.cc) both store through it.
struct Int16Stage64 {
  __m512i mult[2], round[2], shift[2], bias64[2], lo, hi;  // [h]: channels cb + 8h .. cb + 8h + 7
  __mmask16 mask;
  bool full;
  Int16Stage64(const Plan& p, const int64_t* bias, int cb, int n)
      : lo(_mm512_set1_epi32(p.act_min)), hi(_mm512_set1_epi32(p.act_max)),
        mask(n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u)), full(n >= 16) {
    for (int h = 0; h < 2; ++h) {
      const int c0 = cb + 8 * h, left = n - 8 * h;
      const __mmask8 m = left >= 8 ? static_cast<__mmask8>(0xff) : left <= 0 ? 0 : static_cast<__mmask8>((1u << left) - 1u);
      mult[h] = _mm512_loadu_si512(p.rq16_mult.data() + c0);
      round[h] = _mm512_loadu_si512(p.rq16_round.data() + c0);
      shift[h] = _mm512_loadu_si512(p.rq16_shift.data() + c0);
      bias64[h] = bias ? _mm512_maskz_loadu_epi64(m, bias + c0) : _mm512_setzero_si512();
    }
  }
  // 16 int32 sums in channel order: (x + bias) * mult + round >> shift in 64 bits, the low dword
  // (as the reference's cast), clamped, stored as int16 (the valid channels only).
  __attribute__((always_inline)) void Store(__m512i v, int16_t* out) const {
    __m256i r32[2];
    for (int h = 0; h < 2; ++h) {
      __m512i x = _mm512_cvtepi32_epi64(h == 0 ? _mm512_castsi512_si256(v) : _mm512_extracti64x4_epi64(v, 1));
      x = _mm512_add_epi64(_mm512_mullo_epi64(_mm512_add_epi64(x, bias64[h]), mult[h]), round[h]);
      r32[h] = _mm512_cvtepi64_epi32(_mm512_srav_epi64(x, shift[h]));
    }
    const __m512i y = _mm512_min_epi32(_mm512_max_epi32(_mm512_inserti64x4(_mm512_castsi256_si512(r32[0]), r32[1], 1), lo), hi);
    if (full) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(y));
    } else {
      _mm256_mask_storeu_epi16(out, mask, _mm512_cvtepi32_epi16(y));
    }
  }
};

// The six weight vectors of one 16-channel group of a 3x3 filter (row r: taps 0-1 in wN[2r], tap
// 2 and a zero in wN[2r + 1]). Plain members, no array: arrays of vectors stayed on the stack.
struct W16 {
  __m512i w0, w1, w2, w3, w4, w5;
};

// The group's weights from Plan::weights at wp (the group's first pair), rows of pairs wc2
// int16 apart.
__attribute__((always_inline)) inline W16 LoadW16(const int16_t* wp, size_t wc2) {
  W16 w;
  w.w0 = _mm512_loadu_si512(wp);
  w.w1 = _mm512_loadu_si512(wp + wc2);
  w.w2 = _mm512_loadu_si512(wp + 2 * wc2);
  w.w3 = _mm512_loadu_si512(wp + 3 * wc2);
  w.w4 = _mm512_loadu_si512(wp + 4 * wc2);
  w.w5 = _mm512_loadu_si512(wp + 5 * wc2);
  return w;
}

// The output pixels of 16-channel group cg over the batch's rows: per row 8 pixels per step and
// the last 1-7 in one, step.template operator()<kNP>(e0, e1, e2, out) with e0/e1/e2 at the first
// pixel's pair-row entries and out (OutT) at its output for channel cg, pixels `stride` elements
// apart. kW > 0: the output width as a compile-time constant. kPerEntry: output pixels per
// entry (2: pair quads, Plan::quad_pairs).
template <int kW, typename OutT, int kPerEntry = 1, typename Step>
__attribute__((always_inline)) inline void ForGroupPixels(const K3Batch& bt, int cg, size_t stride, const Step& step) {
  const int W = kW ? kW : bt.p->g.out_w;
  const size_t c2 = bt.c2;
  const size_t off = static_cast<size_t>(cg - bt.cb) * 2;
  for (int row = 0; row < bt.n; ++row) {
    const int16_t* e0 = bt.rows[row][0] + off;
    const int16_t* e1 = bt.rows[row][1] + off;
    const int16_t* e2 = bt.rows[row][2] + off;
    OutT* out = reinterpret_cast<OutT*>(bt.out[row]) + cg;
    int ox = 0;
    constexpr size_t kStep = 8 / kPerEntry;
    for (; ox + 8 <= W; ox += 8, e0 += kStep * c2, e1 += kStep * c2, e2 += kStep * c2, out += 8 * stride)
      step.template operator()<8>(e0, e1, e2, out);
    switch (W - ox) {
      case 7: step.template operator()<7>(e0, e1, e2, out); break;
      case 6: step.template operator()<6>(e0, e1, e2, out); break;
      case 5: step.template operator()<5>(e0, e1, e2, out); break;
      case 4: step.template operator()<4>(e0, e1, e2, out); break;
      case 3: step.template operator()<3>(e0, e1, e2, out); break;
      case 2: step.template operator()<2>(e0, e1, e2, out); break;
      case 1: step.template operator()<1>(e0, e1, e2, out); break;
      default: break;
    }
  }
}

}  // namespace edgeopt::kernels::dwq

// acc += the two taps' products (vpdpwssd). The empty asm keeps each accumulator in its register
// and the order of the adds (see EDGEOPT_DW_MAC in the AVX2 rows).
#define EDGEOPT_DW512_MAC(acc, v, w)          \
  do {                                        \
    acc = _mm512_dpwssd_epi32(acc, (v), (w)); \
    asm("" : "+v"(acc));                      \
  } while (0)

// acc of pixel P (a compile-time constant, accumulators a0..a7) += v * wt.
#define EDGEOPT_DW512_MACP(P, v, wt)                           \
  do {                                                         \
    if constexpr ((P) == 0) EDGEOPT_DW512_MAC(a0, v, wt);      \
    else if constexpr ((P) == 1) EDGEOPT_DW512_MAC(a1, v, wt); \
    else if constexpr ((P) == 2) EDGEOPT_DW512_MAC(a2, v, wt); \
    else if constexpr ((P) == 3) EDGEOPT_DW512_MAC(a3, v, wt); \
    else if constexpr ((P) == 4) EDGEOPT_DW512_MAC(a4, v, wt); \
    else if constexpr ((P) == 5) EDGEOPT_DW512_MAC(a5, v, wt); \
    else if constexpr ((P) == 6) EDGEOPT_DW512_MAC(a6, v, wt); \
    else EDGEOPT_DW512_MAC(a7, v, wt);                         \
  } while (0)

// Declares the accumulators a0..a7 of kNP (1..8, a compile-time constant, as kJ) consecutive
// output pixels, started at `bias`, and adds the products of the pair rows e0/e1/e2 (entries c2
// int16 apart) with the weights w (W16): each entry loaded once for the pixels that use it.
#define EDGEOPT_DW512_ACCUMULATE(e0, e1, e2, c2, w, bias)                                                  \
  static_assert(kNP >= 1 && kNP <= 8 && (kJ == 1 || kJ == 2 || kJ == 4 || kJ == 8), "8 pixels at most");   \
  __m512i a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias, a7 = bias;          \
  const auto ld = [c2](const int16_t* e, int i) { return _mm512_loadu_si512(e + static_cast<size_t>(i) * c2); }; \
  EDGEOPT_DW_K3_ROWS(e0, e1, e2, w, EDGEOPT_DW512_MACP)
