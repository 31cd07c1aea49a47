// Pieces shared by the AVX-512 rows of the 3x3 depthwise loop over pair rows: the int8/uint8
// rows (depthwise_int8_avx512.cc) and the 16x8 rows (depthwise_int16_avx512.cc). Include only
// from sources built with AVX-512 VNNI (*_avx512.cc). Internal to depthwise/.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/depthwise/depthwise_int8_k3.h"

namespace edgeopt::kernels::dwq {

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
  static_assert(kNP >= 1 && kNP <= 8 && (kJ == 1 || kJ == 2), "8 pixels at most");                         \
  __m512i a0 = bias, a1 = bias, a2 = bias, a3 = bias, a4 = bias, a5 = bias, a6 = bias, a7 = bias;          \
  const auto ld = [c2](const int16_t* e, int i) { return _mm512_loadu_si512(e + static_cast<size_t>(i) * c2); }; \
  EDGEOPT_DW_K3_ROWS(e0, e1, e2, w, EDGEOPT_DW512_MACP)
