// AVX-512 VNNI rows of the 3x3 depthwise loop for 16x8 (int16 input and output, int8
// weights, int64 bias; variants depthwise_conv2d/int16x8/avx512/3x3s1[/wN], .../3x3s2, dilated .../3x3s1d2, ...). The
// driver, the pair-row ring and the schedule of the multiply-adds are the int8 loop's
// (depthwise_int8_avx2.cc RunK3Rows, EDGEOPT_DW_K3_ROWS, PairRowK3 on int16 columns); what
// differs is the output stage, the reference's 64-bit requantization per channel in the forms of
// Int16K3Group: per 16 channels two vpmuldq (even and odd lanes) with the rounding added (and in
// the general form two vpsraq), the result dwords merged by one masked in-lane shuffle, clamped
// and narrowed to int16.
// The pair rows hold the int16 inputs as they are (zero point 0), so one vpdpwssd adds two taps
// of 16 channels: 6 per pixel and 16 channels, 8 pixels per step with the entries each loaded
// once for the one or two pixels that use them (as the int8 pair rows).
#include <immintrin.h>

#include <algorithm>

#include "kernels/depthwise/depthwise_k3_avx512.h"

namespace edgeopt::kernels::dwq {
namespace {

struct Int16Out {
  __m512i mult_even, mult_odd, round_even, round_odd, shift_even, shift_odd, lo, hi;
  __mmask16 mask;  // channels written (all 16 but in the last group)
  bool full;
  size_t stride;   // int16 elements between output pixels
};

// The reference's requantization of 16 channels (Int16K3Group; kHigh: Plan::int16_high), clamped,
// stored.
template <bool kHigh>
__attribute__((always_inline)) inline void StorePixel(__m512i acc, const Int16Out& o, int16_t* out) {
  __m512i h;
  if constexpr (kHigh) {
    const __m512i round = _mm512_set1_epi64(int64_t{1} << 31);
    const __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(acc, o.mult_even), round);
    const __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), o.mult_odd), round);
    // Odd lanes: their high dword is in place; even lanes take theirs from pe.
    h = _mm512_mask_shuffle_epi32(po, 0x5555, pe, _MM_PERM_DDBB);
  } else {
    const __m512i pe = _mm512_srav_epi64(_mm512_add_epi64(_mm512_mul_epi32(acc, o.mult_even), o.round_even), o.shift_even);
    const __m512i po = _mm512_srav_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), o.mult_odd), o.round_odd), o.shift_odd);
    // Even lanes: their low dword is in place; odd lanes take theirs from po.
    h = _mm512_mask_shuffle_epi32(pe, 0xAAAA, po, _MM_PERM_CCAA);
  }
  const __m512i r = _mm512_min_epi32(_mm512_max_epi32(h, o.lo), o.hi);
  if (o.full) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(r));
  } else {
    _mm512_mask_cvtepi32_storeu_epi16(out, o.mask, r);
  }
}

// kNP (1..8) consecutive output pixels of one 16-channel group (see Pixels in
// depthwise_int8_avx512.cc): accumulated from the bias, requantized and stored.
template <int kNP, int kJ, bool kHigh>
__attribute__((always_inline)) inline void Pixels16(const int16_t* e0, const int16_t* e1, const int16_t* e2,
                                                    size_t c2, const W16& w, __m512i bias, const Int16Out& o,
                                                    int16_t* out) {
  EDGEOPT_DW512_ACCUMULATE(e0, e1, e2, c2, w, bias);
  StorePixel<kHigh>(a0, o, out);
  if constexpr (kNP > 1) StorePixel<kHigh>(a1, o, out + o.stride);
  if constexpr (kNP > 2) StorePixel<kHigh>(a2, o, out + 2 * o.stride);
  if constexpr (kNP > 3) StorePixel<kHigh>(a3, o, out + 3 * o.stride);
  if constexpr (kNP > 4) StorePixel<kHigh>(a4, o, out + 4 * o.stride);
  if constexpr (kNP > 5) StorePixel<kHigh>(a5, o, out + 5 * o.stride);
  if constexpr (kNP > 6) StorePixel<kHigh>(a6, o, out + 6 * o.stride);
  if constexpr (kNP > 7) StorePixel<kHigh>(a7, o, out + 7 * o.stride);
}

// The rows of a batch: per 16-channel group the weights, bias and multipliers are loaded once
// for all rows; each row is computed 8 pixels at a time, the last 1-7 in one step. kW > 0: the
// output width as a compile-time constant (narrow stride-1 rows, K3NarrowWidth).
template <int kJ, int kW, bool kHigh>
void RowsInt16K3(const K3Batch& bt) {
  const Plan& p = *bt.p;
  const int C = p.g.channels;
  const size_t wc2 = static_cast<size_t>(p.c16) * 2, c2 = bt.c2;
  Int16Out o;
  o.lo = _mm512_set1_epi32(p.act_min);
  o.hi = _mm512_set1_epi32(p.act_max);
  o.stride = static_cast<size_t>(C);
  for (int cg = bt.cb; cg < std::min(C, bt.cb_end); cg += 16) {
    const W16 w = LoadW16(p.weights.data() + cg * 2, wc2);
    const Int16K3Group& g = p.int16_k3[cg / 16];
    const __m512i bias = _mm512_load_si512(g.bias);
    o.mult_even = _mm512_load_si512(g.mult_even);
    o.mult_odd = _mm512_load_si512(g.mult_odd);
    if constexpr (!kHigh) {
      o.round_even = _mm512_load_si512(g.round_even);
      o.round_odd = _mm512_load_si512(g.round_odd);
      o.shift_even = _mm512_load_si512(g.shift_even);
      o.shift_odd = _mm512_load_si512(g.shift_odd);
    }
    const int valid = std::min(16, C - cg);
    o.full = valid == 16;
    o.mask = static_cast<__mmask16>((1u << valid) - 1);
    ForGroupPixels<kW, int16_t>(bt, cg, o.stride,
                                [&]<int kNP>(const int16_t* e0, const int16_t* e1, const int16_t* e2, int16_t* out)
                                    __attribute__((always_inline)) {
                                      Pixels16<kNP, kJ, kHigh>(e0, e1, e2, c2, w, bias, o, out);
                                    });
  }
}

template <bool kHigh, int kW = kK3NarrowMax>
K3Fn NarrowWidth(const Plan& p) {
  if constexpr (kW >= 1) {
    return K3NarrowWidth(p) == kW ? RowsInt16K3<2, kW, kHigh> : NarrowWidth<kHigh, kW - 1>(p);
  } else {
    return RowsInt16K3<2, 0, kHigh>;
  }
}

// kj = Plan::j_step, the pair-row entries between a filter row's two pairs (2 * dil_w / q): 2
// stride 1, 1 stride 2, 4 and 8 dilated filters.
template <bool kHigh>
K3Fn Pick(const Plan& p, int kj) {
  switch (kj) {
    case 2: return NarrowWidth<kHigh>(p);
    case 4: return RowsInt16K3<4, 0, kHigh>;
    case 8: return RowsInt16K3<8, 0, kHigh>;
    default: return RowsInt16K3<1, 0, kHigh>;
  }
}

}  // namespace

K3Fn PickK3Int16Avx512(const Plan& p, int kj) { return p.int16_high ? Pick<true>(p, kj) : Pick<false>(p, kj); }

namespace {

// The generic loop's rows (Plan::int16_row). Pair rows and weights hold a 16-channel block in
// the unpack order (dwords: channels 0-3, 8-11, 4-7, 12-15); the accumulators are permuted to
// channel order before the stage (Int16Stage64).
template <int kKH, int kPW, int kNP>
__attribute__((always_inline)) inline void Int16Pixels(const int16_t* const* rows, size_t off, size_t ox_stride,
                                                       size_t step, const __m512i (&w)[kKH][kPW], const Int16Stage64& s,
                                                       int16_t* out, size_t out_stride) {
  const __m512i natural = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  __m512i acc[kNP];
  for (int px = 0; px < kNP; ++px) acc[px] = _mm512_setzero_si512();
  for (int ky = 0; ky < kKH; ++ky) {
    if (!rows[ky]) continue;
    const int16_t* e = rows[ky] + off;
    for (int j = 0; j < kPW; ++j)
      for (int px = 0; px < kNP; ++px)
        acc[px] = _mm512_dpwssd_epi32(acc[px], _mm512_loadu_si512(e + px * ox_stride + j * step), w[ky][j]);
  }
  for (int px = 0; px < kNP; ++px) s.Store(_mm512_permutexvar_epi32(natural, acc[px]), out + px * out_stride);
}

template <int kKH, int kPW>
void Int16RowAvx512(const Plan& p, const int16_t* const* rows, const int64_t* bias, int16_t* out) {
  const int C = p.g.channels, W = p.g.out_w;
  const size_t c2 = static_cast<size_t>(p.c16) * 2;
  const size_t ox_stride = static_cast<size_t>(p.ox_step) * c2, step = static_cast<size_t>(p.j_step) * c2;
  for (int cb = 0; cb < p.c16; cb += 16) {
    __m512i w[kKH][kPW];
    for (int ky = 0; ky < kKH; ++ky)
      for (int j = 0; j < kPW; ++j)
        w[ky][j] = _mm512_loadu_si512(p.weights.data() + (static_cast<size_t>(ky) * kPW + j) * c2 + cb * 2);
    const Int16Stage64 s(p, bias, cb, std::min(16, C - cb));
    const size_t off = static_cast<size_t>(cb) * 2;
    int ox = 0;
    for (; ox + 4 <= W; ox += 4)
      Int16Pixels<kKH, kPW, 4>(rows, off + ox * ox_stride, ox_stride, step, w, s, out + static_cast<size_t>(ox) * C + cb, C);
    for (; ox < W; ++ox)
      Int16Pixels<kKH, kPW, 1>(rows, off + ox * ox_stride, ox_stride, step, w, s, out + static_cast<size_t>(ox) * C + cb, C);
  }
}

template <int kKH>
Int16RowFn Int16RowOf(int pw) {
  switch (pw) {
    case 1: return Int16RowAvx512<kKH, 1>;
    case 2: return Int16RowAvx512<kKH, 2>;
    case 3: return Int16RowAvx512<kKH, 3>;
    default: return nullptr;
  }
}

}  // namespace

Int16RowFn PickInt16RowAvx512(const Plan& p) {
  if (p.natural || p.kind != OutKind::kInt16) return nullptr;
  switch (p.g.k_h) {
    case 1: return Int16RowOf<1>(p.pairs_w);
    case 2: return Int16RowOf<2>(p.pairs_w);
    case 3: return Int16RowOf<3>(p.pairs_w);
    case 4: return Int16RowOf<4>(p.pairs_w);
    case 5: return Int16RowOf<5>(p.pairs_w);
    default: return nullptr;
  }
}

}  // namespace edgeopt::kernels::dwq
