// AVX-512 VNNI rows of the int8/uint8 3x3 dilation-1 depthwise loop (variants .../avx512/3x3s1,
// .../avx512/3x3s2). The driver, the pair-row ring and the plan are shared with the AVX2 rows
// (depthwise_int8_avx2.cc, RowsQuant8K3; depthwise_int8.h describes the method). What differs:
// - 16 channels per zmm: a 64-byte pair-row entry of a 16-channel block (natural order: pairs of
//   channels 0-7, then 8-15) and the matching 64 bytes of weights are one register each.
// - vpdpwssd adds the two taps' products to the accumulator in one instruction (AVX2: vpmaddwd +
//   vpaddd), so a 3x3 filter costs 6 instructions per 16 channels and pixel.
// - 32 registers hold 8 accumulators, the 6 weights and the bias, so up to 8 pixels are computed
//   per step and requantized straight from the registers (the AVX2 rows go through an L1 buffer).
// - The requantization is the same arithmetic on 16 lanes; in the doubled short form one masked
//   in-lane shuffle merges the even lanes' high dwords into the odd lanes' products. The output
//   stage packs 4 pixels x 16 channels with the zero point added in int16 (as Store3x3), and one
//   vpermd puts each pixel's 16 bytes in one 128-bit lane; channel tails use masked stores.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "kernels/depthwise/depthwise_int8_k3.h"
#include "kernels/depthwise/depthwise_k3_avx512.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::dwq {
namespace {

inline __m512i Ld(const void* p) { return _mm512_load_si512(p); }

// The reference MultiplyByQuantizedMultiplier on 16 lanes in the plan's form (see RequantGroup
// and the AVX2 Requant / RequantFast / RequantFast2, whose steps these are), without the output
// zero point (but for kRqFast2Zp / kRqFast2ZpFloor, whose constants hold it: Plan::zp_folded).
// kRqLeft: acc does not hold the bias (it is added before the left shift); the other forms start
// the accumulators at the bias (doubled in the kRqFast2 forms).
template <int kMode>
__attribute__((always_inline)) inline __m512i Requant16(__m512i acc, const RequantGroup16& g) {
  if constexpr (kMode == kRqFloat || kMode == kRqFloatSplit || kMode == kRqFloatBits) {
    // Plan::quad_float: floor(float(acc) * s + c), the multiply-add and the conversion rounding
    // down; the output zero point is part of c (quad_float_split: c by the sign of acc;
    // quad_float_bits: acc's bits are the float already).
    constexpr int kDown = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
    __m512 c = _mm512_load_ps(g.foffset);
    if constexpr (kMode == kRqFloatSplit) c = _mm512_mask_blend_ps(_mm512_movepi32_mask(acc), c, _mm512_load_ps(g.foffset_neg));
    const __m512 x = kMode == kRqFloatBits ? _mm512_castsi512_ps(acc) : _mm512_cvtepi32_ps(acc);
    const __m512 y = _mm512_fmadd_round_ps(x, _mm512_load_ps(g.fscale), c, kDown);
    return _mm512_cvt_roundps_epi32(y, kDown);
  }
  // kRqHalfZpFloor: the arithmetic of kRqFast2ZpFloor (its constants are halved, the sums not doubled).
  constexpr bool kDoubled =
      kMode == kRqFast2 || kMode == kRqFast2Zp || kMode == kRqFast2ZpFloor || kMode == kRqHalfZpFloor;
  constexpr bool kFloor = kMode == kRqFast2ZpFloor || kMode == kRqHalfZpFloor;
  if constexpr (kMode == kRqFast || kDoubled) {
    const __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(acc, Ld(g.mult)), Ld(g.round_e));
    const __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), Ld(g.mult_o)), Ld(g.round_o));
    __m512i h;
    if constexpr (kDoubled) {
      // Doubled: h sits in the high dwords of both products; odd lanes are there already.
      h = _mm512_mask_shuffle_epi32(po, 0x5555, pe, _MM_PERM_DDBB);
    } else {
      h = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 31), _mm512_slli_epi64(po, 1));
    }
    // Plan::floor_clamps: results of h < 0 are clamped to act_min with or without the adjustment.
    if constexpr (kFloor) return _mm512_srav_epi32(h, Ld(g.shift));
    const __mmask16 neg = _mm512_cmpgt_epi32_mask(Ld(g.neg_cmp), h);
    return _mm512_srav_epi32(_mm512_mask_sub_epi32(h, neg, h, _mm512_set1_epi32(1)), Ld(g.shift));
  } else {
    __m512i x = acc;
    if constexpr (kMode == kRqLeft) x = _mm512_sllv_epi32(_mm512_add_epi32(acc, Ld(g.bias)), Ld(g.left));
    const __m512i round = _mm512_set1_epi64(int64_t{1} << 30);
    const __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(x, Ld(g.mult)), round);
    const __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), Ld(g.mult_o)), round);
    const __m512i high = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 31), _mm512_slli_epi64(po, 1));
    const __m512i xa = _mm512_add_epi32(high, _mm512_and_si512(_mm512_srai_epi32(high, 31), Ld(g.neg_adjust)));
    return _mm512_add_epi32(_mm512_srav_epi32(xa, Ld(g.shift)),
                            _mm512_and_si512(_mm512_srav_epi32(xa, Ld(g.shift_m1)), Ld(g.round_bit)));
  }
}

struct OutStage {
  __m512i zp16, lo, hi;
  __m512i order;  // dword 4j + k <- 4k + j: pixel j's 16 bytes into 128-bit lane j
  __mmask16 mask;  // channels written (all 16 but in the last group)
  bool full;
  bool flip;       // Plan::flip_output: the clamped bytes XOR 0x80
  size_t stride;   // bytes between output pixels

  explicit OutStage(const Plan& p)
      : zp16(_mm512_set1_epi16(static_cast<int16_t>(p.requant[0].zp[0]))),
        lo(_mm512_set1_epi8(static_cast<char>(p.act_min))),
        hi(_mm512_set1_epi8(static_cast<char>(p.act_max))),
        order(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)),
        mask(0xFFFF),
        full(true),
        flip(p.flip_output),
        stride(static_cast<size_t>(p.g.channels)) {}
  // The 16-channel group starting at channel cg.
  void Group(int cg) {
    const int valid = std::min<int>(16, static_cast<int>(stride) - cg);
    full = valid == 16;
    mask = static_cast<__mmask16>((1u << valid) - 1);
  }
};

// The bytes of r0..r3 (16 lanes each) as 64 bytes, r0's 16 lanes first: packed to int16 with
// saturation, the output zero point added there unless the lanes hold it (kHasZp; saturating: a
// lane that saturates is far outside [act_min, act_max] either way, so the clamped bytes equal the
// int32 reference's), packed to bytes, clamped (and flipped: Plan::flip_output). After the packs
// dword j of 128-bit lane k holds r_j's lanes 4k..4k+3; o.order puts them in order.
template <bool kUnsigned, bool kHasZp>
__attribute__((always_inline)) inline __m512i Pack4(__m512i r0, __m512i r1, __m512i r2, __m512i r3,
                                                    const OutStage& o) {
  __m512i a = _mm512_packs_epi32(r0, r1), b = _mm512_packs_epi32(r2, r3);
  if constexpr (!kHasZp) {
    a = _mm512_adds_epi16(a, o.zp16);
    b = _mm512_adds_epi16(b, o.zp16);
  }
  __m512i v8 = kUnsigned ? _mm512_packus_epi16(a, b) : _mm512_packs_epi16(a, b);
  v8 = kUnsigned ? _mm512_min_epu8(_mm512_max_epu8(v8, o.lo), o.hi) : _mm512_min_epi8(_mm512_max_epi8(v8, o.lo), o.hi);
  if (!kUnsigned && o.flip) v8 = _mm512_xor_si512(v8, _mm512_set1_epi8(static_cast<char>(0x80)));
  return _mm512_permutexvar_epi32(o.order, v8);
}

// Stores kNP (1..4) pixels x 16 channels from the requantized lanes r0..r3 (Pack4: pixel j's 16
// bytes in 128-bit lane j).
template <int kNP, bool kUnsigned, bool kHasZp>
__attribute__((always_inline)) inline void Store4(__m512i r0, __m512i r1, __m512i r2, __m512i r3, const OutStage& o,
                                                  uint8_t* out) {
  const __m512i v8 = Pack4<kUnsigned, kHasZp>(r0, r1, r2, r3, o);
  const __m128i p0 = _mm512_castsi512_si128(v8);
  const __m128i p1 = _mm512_extracti32x4_epi32(v8, 1);
  const __m128i p2 = _mm512_extracti32x4_epi32(v8, 2);
  const __m128i p3 = _mm512_extracti32x4_epi32(v8, 3);
  if (o.full) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), p0);
    if constexpr (kNP > 1) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + o.stride), p1);
    if constexpr (kNP > 2) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * o.stride), p2);
    if constexpr (kNP > 3) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * o.stride), p3);
  } else {
    _mm_mask_storeu_epi8(out, o.mask, p0);
    if constexpr (kNP > 1) _mm_mask_storeu_epi8(out + o.stride, o.mask, p1);
    if constexpr (kNP > 2) _mm_mask_storeu_epi8(out + 2 * o.stride, o.mask, p2);
    if constexpr (kNP > 3) _mm_mask_storeu_epi8(out + 3 * o.stride, o.mask, p3);
  }
}

template <int kNP, bool kUnsigned, int kMode>
__attribute__((always_inline)) inline void Finish4(__m512i a0, __m512i a1, __m512i a2, __m512i a3,
                                                   const RequantGroup16& g, const OutStage& o, uint8_t* out) {
  const __m512i r0 = Requant16<kMode>(a0, g);
  const __m512i r1 = kNP > 1 ? Requant16<kMode>(a1, g) : r0;
  const __m512i r2 = kNP > 2 ? Requant16<kMode>(a2, g) : r0;
  const __m512i r3 = kNP > 3 ? Requant16<kMode>(a3, g) : r0;
  Store4<kNP, kUnsigned, RqHoldsZeroPoint(kMode)>(r0, r1, r2, r3, o, out);
}

// kNP (1..8) consecutive output pixels of one 16-channel group: accumulated from the bias, then
// requantized and stored. e0/e1/e2: the three pair rows at the first pixel's entry, entries c2
// int16 apart; pixel i uses entries i and i + kJ of each row, and each entry is loaded once for
// the (one or two) pixels that use it.
template <int kNP, int kJ, bool kUnsigned, int kMode>
__attribute__((always_inline)) inline void Pixels(const int16_t* e0, const int16_t* e1, const int16_t* e2, size_t c2,
                                                  const W16& w, __m512i bias, const RequantGroup16& g,
                                                  const OutStage& o, uint8_t* out) {
  EDGEOPT_DW512_ACCUMULATE(e0, e1, e2, c2, w, bias);
  Finish4<std::min(kNP, 4), kUnsigned, kMode>(a0, a1, a2, a3, g, o, out);
  if constexpr (kNP > 4) Finish4<kNP - 4, kUnsigned, kMode>(a4, a5, a6, a7, g, o, out + 4 * o.stride);
}

// The batch loop of the AVX-512 rows (pair and quad rows): per 16-channel group cg, `group(cg)`
// loads the group's weights into a state; then per row, 8 pixels per step and the last 1-7 in one,
// step.template operator()<kNP>(state, e0, e1, e2, g, o, out) with e0/e1/e2 at the first pixel's
// entries. kW > 0: the output width as a compile-time constant; kPerEntry: output pixels per
// entry (2: pair quads).
template <int kW, int kPerEntry = 1, typename Group, typename Step>
__attribute__((always_inline)) inline void RowsK3Loop(const K3Batch& bt, const Group& group, const Step& step) {
  const Plan& p = *bt.p;
  const int C = p.g.channels;
  OutStage o(p);
  for (int cg = bt.cb; cg < std::min(C, bt.cb_end); cg += 16) {
    const auto state = group(cg);
    const RequantGroup16& g = p.requant16[cg / 16];
    o.Group(cg);
    ForGroupPixels<kW, uint8_t, kPerEntry>(bt, cg, o.stride,
                                [&]<int kNP>(const int16_t* e0, const int16_t* e1, const int16_t* e2, uint8_t* out)
                                    __attribute__((always_inline)) {
                                      step.template operator()<kNP>(state, e0, e1, e2, g, o, out);
                                    });
  }
}

// The rows of a batch (see K3Batch and the AVX2 RowsQuant8K3): per 16-channel group the weights
// and the bias are loaded once for all rows; each row is computed 8 pixels at a time, the last 1-7
// in one step. kW > 0: the output width as a compile-time constant (narrow stride-1 rows, see
// K3NarrowWidth), so that a row is one step without loop or switch.
template <int kJ, bool kUnsigned, int kMode, int kW>
void RowsQuant8K3Avx512(const K3Batch& bt) {
  const Plan& p = *bt.p;
  const size_t wc2 = static_cast<size_t>(p.c16) * 2, c2 = bt.c2;
  struct State {
    W16 w;
    __m512i bias;
  };
  const auto group = [&](int cg) __attribute__((always_inline)) {
    State st;
    st.w = LoadW16(p.weights.data() + cg * 2, wc2);
    // With a left shift the bias must be added before shifting: Requant16 adds it.
    st.bias = kMode == kRqLeft ? _mm512_setzero_si512() : Ld(p.requant16[cg / 16].bias);
    return st;
  };
  const auto step = [c2]<int kNP>(const State& st, const int16_t* e0, const int16_t* e1, const int16_t* e2,
                                  const RequantGroup16& g, const OutStage& o, uint8_t* out)
                        __attribute__((always_inline)) {
    Pixels<kNP, kJ, kUnsigned, kMode>(e0, e1, e2, c2, st.w, st.bias, g, o, out);
  };
  RowsK3Loop<kW>(bt, group, step);
}

// The AVX-512 rows for K3Picker.
struct Avx512Rows {
  static constexpr bool kFoldsZeroPoint = true;
  static constexpr bool kQuads = false;
  template <int kJ, bool kUnsigned, int kMode, int kW>
  static void Fn(const K3Batch& bt) {
    RowsQuant8K3Avx512<kJ, kUnsigned, kMode, kW>(bt);
  }
};

// The weights of one 16-channel group for the quad rows: a filter row each, and with kSplit the
// rest of the weights that leave int8 (Plan::quad_rest).
struct QuadW {
  __m512i w0, w1, w2, r0, r1, r2;
};

// One pixel's sum over the three quad-row entries v0/v1/v2: one vpdpbusd per filter row (kSplit:
// two, the second with the rest of the weights on the same entry), accumulated from the (folded)
// bias; doubled in the doubled forms.
template <int kMode, bool kSplit>
__attribute__((always_inline)) inline __m512i QuadDot(__m512i bias, __m512i v0, __m512i v1, __m512i v2,
                                                      const QuadW& w) {
  __m512i a = _mm512_dpbusd_epi32(bias, v0, w.w0);
  a = _mm512_dpbusd_epi32(a, v1, w.w1);
  a = _mm512_dpbusd_epi32(a, v2, w.w2);
  if constexpr (kSplit) {
    a = _mm512_dpbusd_epi32(a, v0, w.r0);
    a = _mm512_dpbusd_epi32(a, v1, w.r1);
    a = _mm512_dpbusd_epi32(a, v2, w.r2);
  }
  return RqDoublesSums(kMode) ? _mm512_add_epi32(a, a) : a;
}

// kNP (1..8) consecutive output pixels of one 16-channel group from the three quad rows (entries
// c2 int16 apart), requantized and stored. kPairs = false (Plan::quads): pixel i from entry i
// with the weights wa. kPairs (Plan::quad_pairs): pixel 2i from entry i with wa (taps in bytes
// 0-2), pixel 2i + 1 from the same loaded entry with wb (bytes 1-3).
template <int kNP, bool kUnsigned, int kMode, bool kSplit, bool kPairs>
__attribute__((always_inline)) inline void QuadPixels(const int16_t* e0, const int16_t* e1, const int16_t* e2,
                                                      size_t c2, const QuadW& wa, const QuadW& wb, __m512i bias,
                                                      const RequantGroup16& g, const OutStage& o, uint8_t* out) {
  static_assert(kNP >= 1 && kNP <= 8, "8 pixels at most");
  // Pixel i (and with kPairs, when kBoth, pixel i + 1) into a / b.
  const auto pixels = [&]<bool kBoth>(int i, __m512i& a, __m512i& b) __attribute__((always_inline)) {
    const size_t at = static_cast<size_t>(kPairs ? i / 2 : i) * c2;
    const __m512i v0 = _mm512_loadu_si512(e0 + at), v1 = _mm512_loadu_si512(e1 + at),
                  v2 = _mm512_loadu_si512(e2 + at);
    a = QuadDot<kMode, kSplit>(bias, v0, v1, v2, wa);
    if constexpr (kPairs && kBoth) b = QuadDot<kMode, kSplit>(bias, v0, v1, v2, wb);
  };
  // Pixels k .. k + 3 (those below kNP; the others copy pixel k).
  const auto four = [&](int k, __m512i& a0, __m512i& a1, __m512i& a2, __m512i& a3) __attribute__((always_inline)) {
    const int n = kNP - k;
    if constexpr (kPairs) {
      if (n > 1)
        pixels.template operator()<true>(k, a0, a1);
      else
        pixels.template operator()<false>(k, a0, a1);
      if (n > 3)
        pixels.template operator()<true>(k + 2, a2, a3);
      else if (n > 2)
        pixels.template operator()<false>(k + 2, a2, a3);
    } else {
      __m512i unused;
      pixels.template operator()<false>(k, a0, unused);
      if (n > 1) pixels.template operator()<false>(k + 1, a1, unused);
      if (n > 2) pixels.template operator()<false>(k + 2, a2, unused);
      if (n > 3) pixels.template operator()<false>(k + 3, a3, unused);
    }
    if (n < 2) a1 = a0;
    if (n < 3) a2 = a0;
    if (n < 4) a3 = a0;
  };
  __m512i a0, a1, a2, a3;
  four(0, a0, a1, a2, a3);
  Finish4<std::min(kNP, 4), kUnsigned, kMode>(a0, a1, a2, a3, g, o, out);
  if constexpr (kNP > 4) {
    __m512i a4, a5, a6, a7;
    four(4, a4, a5, a6, a7);
    Finish4<kNP - 4, kUnsigned, kMode>(a4, a5, a6, a7, g, o, out + 4 * o.stride);
  }
}

// Whether QuadGroupsWide takes the groups [cb, end): whole 16-channel groups (channels a multiple
// of 16), at least two (a lone group would store 16 bytes per pixel either way, and RowsQuadK3
// computes four pixels per store).
inline bool QuadWideApplies(const Plan& p, int cb, int end) {
  return p.g.channels % 16 == 0 && end - cb >= 32;
}
// Whether some of the kG groups from cg0 have split weights (Plan::quad_split).
inline bool AnySplit(const Plan& p, int cg0, int kG) {
  if (p.quad_split.empty()) return false;
  for (int g = 0; g < kG; ++g)
    if (p.quad_split[cg0 / 16 + g]) return true;
  return false;
}

// Calls f(std::integral_constant<int, g>) for g = 0 .. kN - 1, unrolled.
template <int kN, typename F>
__attribute__((always_inline)) inline void ForEach(const F& f) {
  [&]<int... kI>(std::integer_sequence<int, kI...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, kI>{}), ...);
  }(std::make_integer_sequence<int, kN>{});
}

// The quad rows (Plan::quads / quad_pairs) of kG (1..4) 16-channel groups from cg0 at once, pixel
// by pixel: a pixel's 16 kG output channels are one contiguous store (Pack4 of the groups' lanes:
// one 64-byte store for four groups) where RowsQuadK3's group-by-group order stores 16 bytes per
// pixel and group (Store4: a permute, three lane extracts and four stores per four pixels, which
// bound the rows). The weights are read from a copy on the stack by the vpdpbusd (12 to 48
// vectors; the accumulators, biases and output-stage constants take the registers). kSplit: some
// group has split weights (Plan::quad_split), so every group adds its rest (zeros where none).
template <int kG, bool kSplit, bool kUnsigned, int kMode, int kW, bool kPairs>
__attribute__((always_inline)) inline void QuadGroupsWide(const K3Batch& bt, int cg0, const OutStage& o) {
  const Plan& p = *bt.p;
  const size_t c2 = bt.c2, C = o.stride;
  const size_t row_stride = static_cast<size_t>(p.c16) * 4;  // bytes between filter rows of quad_weights
  const int W = kW ? kW : p.g.out_w;
  constexpr int kPer = kPairs ? 2 : 1;  // output pixels per entry
  // The groups' weights gathered on the stack (weights[set][g][filter row]: set 0 quad_weights,
  // 1 quad_weights_b (pair quads), then their rests with kSplit), so that the vpdpbusd read them
  // at fixed offsets from one base.
  constexpr int kSets = (kPairs ? 2 : 1) * (kSplit ? 2 : 1);
  alignas(64) __m512i weights[kSets][kG][3];
  const std::vector<int8_t>* sources[4] = {&p.quad_weights, kPairs ? &p.quad_weights_b : &p.quad_rest, &p.quad_rest,
                                           &p.quad_rest_b};
  for (int set = 0; set < kSets; ++set) {
    const int8_t* w = sources[set]->data() + size_t{4} * cg0;
    ForEach<kG>([&](auto g) {
      for (int ky = 0; ky < 3; ++ky) weights[set][g][ky] = _mm512_loadu_si512(w + 64 * g + ky * row_stride);
    });
  }
  // The sets of pixel 2 ox (a) and 2 ox + 1 (b), and their rests.
  constexpr int kA = 0, kRa = kSplit ? (kPairs ? 2 : 1) : 0;
  [[maybe_unused]] constexpr int kB = kPairs ? 1 : 0, kRb = kSplit ? (kPairs ? 3 : 1) : 0;
  const RequantGroup16* rq = &p.requant16[cg0 / 16];
  __m512i bias[kG];
  ForEach<kG>([&](auto g) { bias[g] = kMode == kRqLeft ? _mm512_setzero_si512() : Ld(rq[g].bias); });
  // Group g's sum over the entries v[0..2] with the weights w[0..2] (kSplit: and the rest r[0..2]).
  const auto dot = [&](int g, const __m512i* w, const __m512i* r, const __m512i* v) __attribute__((always_inline)) {
    __m512i a = _mm512_dpbusd_epi32(bias[g], v[0], w[0]);
    a = _mm512_dpbusd_epi32(a, v[1], w[1]);
    a = _mm512_dpbusd_epi32(a, v[2], w[2]);
    if constexpr (kSplit) {
      a = _mm512_dpbusd_epi32(a, v[0], r[0]);
      a = _mm512_dpbusd_epi32(a, v[1], r[1]);
      a = _mm512_dpbusd_epi32(a, v[2], r[2]);
    }
    return RqDoublesSums(kMode) ? _mm512_add_epi32(a, a) : a;
  };
  const auto store = [&](const __m512i* acc, uint8_t* out) __attribute__((always_inline)) {
    __m512i r[4];
    ForEach<kG>([&](auto g) { r[g] = Requant16<kMode>(acc[g], rq[g]); });
    ForEach<4 - kG>([&](auto g) { r[kG + g] = r[0]; });
    const __m512i v8 = Pack4<kUnsigned, RqHoldsZeroPoint(kMode)>(r[0], r[1], r[2], r[3], o);
    if constexpr (kG == 4) {
      _mm512_storeu_si512(out, v8);
    } else if constexpr (kG >= 2) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(v8));
      if constexpr (kG == 3) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32), _mm512_extracti32x4_epi32(v8, 2));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(v8));
    }
  };
  const size_t off = static_cast<size_t>(cg0 - bt.cb) * 2;
  for (int row = 0; row < bt.n; ++row) {
    const int16_t* e0 = bt.rows[row][0] + off;
    const int16_t* e1 = bt.rows[row][1] + off;
    const int16_t* e2 = bt.rows[row][2] + off;
    uint8_t* out = bt.out[row] + cg0;
    for (int ox = 0; ox < W; ox += kPer, e0 += c2, e1 += c2, e2 += c2, out += kPer * C) {
      __m512i a[kG], b[kG];
      ForEach<kG>([&](auto g) {
        const __m512i v[3] = {_mm512_loadu_si512(e0 + 32 * g), _mm512_loadu_si512(e1 + 32 * g),
                              _mm512_loadu_si512(e2 + 32 * g)};
        a[g] = dot(g, weights[kA][g], weights[kRa][g], v);
        if constexpr (kPairs) b[g] = dot(g, weights[kB][g], weights[kRb][g], v);
      });
      store(a, out);
      if constexpr (kPairs) {
        if (ox + 1 < W) store(b, out + C);
      }
    }
  }
}

// The rows of a batch over quad rows: entry ox belongs to output pixel ox (stride 1 and 2 alike),
// or with kPairs (pair quads) to pixels 2 ox and 2 ox + 1.
template <bool kUnsigned, int kMode, int kW, bool kPairs>
void RowsQuadK3(const K3Batch& bt) {
  const Plan& p = *bt.p;
  // With the fp32 output stages (the forms AVX-512 VNNI plans take) and rows of a runtime width
  // only (7x7 rows with a compile-time width, kW, measured the same either way): the other
  // instantiations would only lengthen the build.
  constexpr bool kWide = kW == 0 && (kMode == kRqFloat || kMode == kRqFloatSplit || kMode == kRqFloatBits);
  if constexpr (kWide) {
    if (QuadWideApplies(p, bt.cb, std::min(p.g.channels, bt.cb_end))) {
      OutStage o(p);
      const int end = std::min(p.g.channels, bt.cb_end);
      // kG groups from cg, with or without their rests.
      const auto groups = [&]<int kG>(int cg) {
        if (AnySplit(p, cg, kG))
          QuadGroupsWide<kG, true, kUnsigned, kMode, kW, kPairs>(bt, cg, o);
        else
          QuadGroupsWide<kG, false, kUnsigned, kMode, kW, kPairs>(bt, cg, o);
      };
      int cg = bt.cb;
      for (; cg + 64 <= end; cg += 64) groups.template operator()<4>(cg);
      switch ((end - cg) / 16) {
        case 3: groups.template operator()<3>(cg); break;
        case 2: groups.template operator()<2>(cg); break;
        case 1: groups.template operator()<1>(cg); break;
        default: break;
      }
      return;
    }
  }
  const size_t c2 = bt.c2;
  const size_t row_stride = static_cast<size_t>(p.c16) * 4;  // bytes between filter rows of quad_weights
  struct State {
    QuadW a, b;
    __m512i bias;
    bool split;
  };
  const auto group = [&](int cg) __attribute__((always_inline)) {
    const size_t at = static_cast<size_t>(cg) * 4;
    // The weights of the group's three filter rows in w (`rest`: its r0..r2) from v.
    const auto ld3 = [&](const std::vector<int8_t>& v, QuadW& w, bool rest) {
      const int8_t* wp = v.data() + at;
      (rest ? w.r0 : w.w0) = _mm512_loadu_si512(wp);
      (rest ? w.r1 : w.w1) = _mm512_loadu_si512(wp + row_stride);
      (rest ? w.r2 : w.w2) = _mm512_loadu_si512(wp + 2 * row_stride);
    };
    const __m512i z = _mm512_setzero_si512();
    State st;
    st.a = st.b = QuadW{z, z, z, z, z, z};
    ld3(p.quad_weights, st.a, false);
    if (kPairs) ld3(p.quad_weights_b, st.b, false);
    st.split = !p.quad_split.empty() && p.quad_split[cg / 16];
    if (st.split) {
      ld3(p.quad_rest, st.a, true);
      if (kPairs) ld3(p.quad_rest_b, st.b, true);
    }
    // With a left shift the bias must be added before shifting: Requant16 adds it.
    st.bias = kMode == kRqLeft ? _mm512_setzero_si512() : Ld(p.requant16[cg / 16].bias);
    return st;
  };
  const auto step = [c2]<int kNP>(const State& st, const int16_t* e0, const int16_t* e1, const int16_t* e2,
                                  const RequantGroup16& g, const OutStage& o, uint8_t* out)
                        __attribute__((always_inline)) {
    if (st.split)
      QuadPixels<kNP, kUnsigned, kMode, true, kPairs>(e0, e1, e2, c2, st.a, st.b, st.bias, g, o, out);
    else
      QuadPixels<kNP, kUnsigned, kMode, false, kPairs>(e0, e1, e2, c2, st.a, st.b, st.bias, g, o, out);
  };
  RowsK3Loop<kW, kPairs ? 2 : 1>(bt, group, step);
}

// The quad rows for K3Picker (the stride does not matter to them: kJ is ignored), and the pair
// quads (stride 1 only).
template <bool kPairs>
struct QuadRows {
  static constexpr bool kFoldsZeroPoint = true;
  static constexpr bool kQuads = true;
  template <int kJ, bool kUnsigned, int kMode, int kW>
  static void Fn(const K3Batch& bt) {
    RowsQuadK3<kUnsigned, kMode, kW, kPairs>(bt);
  }
};

// Quad rows (Plan::quads): entry j of a 16-channel block holds, per channel (dword), the bytes of
// columns x, x + 1, x + 2 (x = j * stride - pad; int8 values xor 0x80) and a zero byte; pair
// quads (Plan::quad_pairs, stride 1) the four columns x .. x + 3 with x = 2j - pad. Interior
// entries are derived from the previous one, whose last column is this entry's first (stride 2)
// or whose last two are this entry's first two (stride 1; pair quads: stride 2): shifted right
// by 16 (8) bits, with the new column(s) put in place by vpshufb (16 bytes broadcast to the four
// 128-bit lanes) and flipped by the same vpternlogd that merges them (at stride 1 also when the
// new column is right padding; pair quads derive their right edge from the previous entry too). Other entries (left padding, the input's end) are built from widened columns. Bands
// of fewer than 8 16-channel blocks are built block by block with the previous entry in a
// register (a chain of two instructions per entry), four chains at a time (four blocks, or the
// row of one or two blocks cut into segments) so that their latencies overlap; wider bands entry
// by entry, all blocks of an entry together (the input read in order), the previous entry read
// back from L1. Measured on Zen 4 (kernel bench, alternated): 112x112x32 ran 1.4x slower entry
// by entry, 14x14x576 1.05-1.15x faster. On Zen 5 (in-process A/B, medians of 300 alternated
// pairs): stride-2 bands of 4-6 blocks 1.04x-1.09x faster as chains than entry by entry
// (112x112x96, 48x48x96, 28x28x64), 9-36 blocks 0.73x-1.0x (so 8 is the bound at both strides);
// four chains against one (kernel bench, 10 alternated rounds, min / median): 112x112x32 1.09x
// / 1.04x, 56x56x144 1.06x / 1.11x, 28x28x192 1.05x / 1.01x.
// The kinds of entry: kQ1 (3 columns, stride 1), kQ2 (3 columns, stride 2), kQP (pair quads).
enum QuadKind { kQ1 = 0, kQ2 = 1, kQP = 2 };
template <int kQ>
struct QuadShape {
  static constexpr int kSw = kQ == kQ1 ? 1 : 2;     // input columns between entries
  static constexpr int kLast = kQ == kQP ? 3 : 2;   // the entry's last column: x + kLast
  static constexpr int kNew = kQ == kQ1 ? 1 : 2;    // columns an interior entry adds
  static constexpr int kFirstNew = kLast - kNew + 1;
};

// Quad-row entries built from widened columns (at the edges: padding, the input's end):
// Entry(x, cb) holds columns x .. x + 2 (pair quads: x + 3) of the 16-channel block cb, int8
// values flipped into the unsigned domain, padding columns the unsigned zero point.
template <typename T>
struct QuadEdges {
  const T* row;
  const T* end;
  int C, in_w;
  bool pairs;
  __m512i pad;
  __m128i flip8;
  QuadEdges(const Plan& p, const T* row_, const T* end_)
      : row(row_), end(end_), C(p.g.channels), in_w(p.g.in_w), pairs(p.quad_pairs),
        pad(_mm512_set1_epi32(p.quad_zp)),
        flip8(_mm_set1_epi8(std::is_signed_v<T> ? static_cast<char>(0x80) : 0)) {}
  // The 16 bytes at src (masked at the input's end), flipped, one per dword.
  __attribute__((always_inline)) __m512i Widen(const T* src) const {
    const ptrdiff_t left = end - src;
    __m128i b = left >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(src))
                           : _mm_maskz_loadu_epi8(left > 0 ? static_cast<__mmask16>((1u << left) - 1) : 0, src);
    if constexpr (std::is_signed_v<T>) b = _mm_xor_si128(b, flip8);
    return _mm512_cvtepu8_epi32(b);
  }
  __attribute__((always_inline)) __m512i Column(int xc, int cb) const {
    return xc >= 0 && xc < in_w ? Widen(row + int64_t{xc} * C + cb) : pad;
  }
  __attribute__((always_inline)) __m512i Entry(int x, int cb) const {
    const __m512i e = _mm512_ternarylogic_epi32(Column(x, cb), _mm512_slli_epi32(Column(x + 1, cb), 8),
                                                _mm512_slli_epi32(Column(x + 2, cb), 16), 0xFE);
    return pairs ? _mm512_or_si512(e, _mm512_slli_epi32(Column(x + 3, cb), 24)) : e;
  }
  // Pair quads at the right edge (x + 3 >= in_w; 0 < j): from the previous entry `prev` (columns
  // x - 2 .. x + 1) shifted down, column x + 2 widened (or padding) and padding in byte 3; the
  // bytes of Entry(x, cb) for a quarter of its work.
  __attribute__((always_inline)) __m512i RightPair(__m512i prev, int x, int cb) const {
    const __m512i c2 = _mm512_slli_epi32(Column(x + 2, cb), 16);
    return _mm512_ternarylogic_epi32(_mm512_srli_epi32(prev, 16), c2, _mm512_slli_epi32(pad, 24), 0xFE);
  }
};

template <typename T>
void QuadRowK3(const Plan& p, const void* row_v, const void* end_v, int32_t /*zp*/, int16_t* dst, int cb_begin,
               int cb_end, size_t entry_stride) {
  const T* row = static_cast<const T*>(row_v);
  const T* end = static_cast<const T*>(end_v);
  const Geom& g = p.g;
  const int C = g.channels, W = p.row_entries;
  const int kind = p.quad_pairs ? kQP : g.stride_w == 2 ? kQ2 : kQ1;
  constexpr bool kSigned = std::is_signed_v<T>;
  const QuadEdges<T> edges(p, row, end);
  // vpshufb of a column broadcast to the four 128-bit lanes: lane k puts the column's bytes
  // 4k..4k+3 at byte t + 1 (at[t]) of its dwords and zeros the rest.
  alignas(64) int8_t at[3][64];
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 64; ++i)
      at[t][i] = i % 4 == t + 1 ? static_cast<int8_t>(i / 16 * 4 + i % 16 / 4) : int8_t{-128};
  const __m512i at1 = _mm512_load_si512(at[0]), at2 = _mm512_load_si512(at[1]), at3 = _mm512_load_si512(at[2]);
  // The bytes an interior entry takes new, flipped (int8).
  const auto flip_of = [](int q) {
    const uint32_t bytes = q == kQ1 ? 0x00800000u : q == kQ2 ? 0x00808000u : 0x80800000u;
    return _mm512_set1_epi32(kSigned ? static_cast<int>(bytes) : 0);
  };
  const auto bcast = [](const T* src) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  };
  const __m512i pad_fresh = _mm512_set1_epi32(((p.quad_zp ^ (kSigned ? 0x80 : 0)) & 0xFF) << 16);
  // The entries j of block cb whose new column(s) lie inside the row with 16 bytes readable at
  // the last one (x = j * kSw - pad_w; the new columns are x + kFirstNew .. x + kLast), as the
  // interval [*j0, *j1): derived from their predecessor without a check.
  const auto interior = [&]<int kQ>(int cb, int* j0, int* j1) {
    using S = QuadShape<kQ>;
    // x + kFirstNew >= 0 and j >= 1.
    *j0 = std::max(1, (g.pad_w - S::kFirstNew + S::kSw - 1) / S::kSw);
    // x + kLast <= last readable column: < in_w, and 16 bytes from it stay inside the input.
    const ptrdiff_t room = end - (row + cb) - 16;
    const int64_t last_col = room < 0 ? -1 : std::min<int64_t>(g.in_w - 1, room / C);
    // j * kSw - pad_w + kLast <= last_col.
    const int64_t top = last_col + g.pad_w - S::kLast;
    *j1 = top < 0 ? *j0 : static_cast<int>(std::clamp<int64_t>(top / S::kSw + 1, *j0, W));
    *j0 = std::min(*j0, W);
  };
  // The interior entry after `prev`, its column x + kLast at `last`: prev's kept columns shifted
  // down, the new column(s) (two: also the one before `last`) put in place, and
  // (kept | fresh) ^ flip.
  const auto next_entry = [&]<int kQ>(__m512i prev, const T* last, __m512i flip) __attribute__((always_inline)) {
    __m512i fresh;
    if constexpr (kQ == kQ2) {
      fresh = _mm512_mask_shuffle_epi8(_mm512_shuffle_epi8(bcast(last - C), at1), 0x4444444444444444ull, bcast(last),
                                       at2);
    } else if constexpr (kQ == kQP) {
      fresh = _mm512_mask_shuffle_epi8(_mm512_shuffle_epi8(bcast(last - C), at2), 0x8888888888888888ull, bcast(last),
                                       at3);
    } else {
      fresh = _mm512_shuffle_epi8(bcast(last), at2);
    }
    return _mm512_ternarylogic_epi32(_mm512_srli_epi32(prev, kQ == kQ1 ? 8 : 16), fresh, flip, 0x56);
  };
  // Narrow bands (< 8 blocks): each block's entries are a chain, each derived from the previous
  // one in a register (two instructions of latency per entry). One chain alone waits on that
  // latency, so kNB blocks (1-4) are built together, each block's interior cut into kSeg
  // segments (kNB * kSeg chains, a segment's first predecessor built from widened columns).
  const auto narrow = [&]<int kQ, int kNB, int kSeg>(int cb0) __attribute__((always_inline)) {
    using S = QuadShape<kQ>;
    constexpr int kSw = S::kSw, kN = kNB * kSeg;
    const __m512i flip = flip_of(kQ);
    int16_t* e[kNB];
    int j1[kNB];
    __m512i prev[kN];  // chain b * kSeg + s: block b, segment s
    int j0 = 0;
    for (int b = 0; b < kNB; ++b) {
      e[b] = dst + static_cast<size_t>(cb0 + 16 * b - cb_begin) * 2;
      interior.template operator()<kQ>(cb0 + 16 * b, &j0, &j1[b]);
    }
    // Edges: left padding and the first entry from widened columns; stride 1 derives right
    // padding from the previous entry by a shift. `at`: the block's chain holding entry j - 1.
    const auto other = [&](int b, int j, __m512i& at) __attribute__((always_inline)) {
      const int x = j * kSw - g.pad_w;
      if (kQ == kQ1 && j > 0 && x + 2 >= g.in_w) {
        // The new column is right padding: its byte, flipped back by the vpternlogd.
        at = _mm512_ternarylogic_epi32(_mm512_srli_epi32(at, 8), pad_fresh, flip, 0x56);
      } else if (kQ == kQP && j > 0 && x + 3 >= g.in_w) {
        at = edges.RightPair(at, x, cb0 + 16 * b);
      } else {
        at = edges.Entry(x, cb0 + 16 * b);
      }
      _mm512_store_si512(e[b] + static_cast<size_t>(j) * entry_stride, at);
    };
    // Interior entry j of block b after `at` (entry j - 1), its column x + kLast at `last`.
    const auto step = [&](int b, int j, const T* last, __m512i& at) __attribute__((always_inline)) {
      at = next_entry.template operator()<kQ>(at, last, flip);
      _mm512_store_si512(e[b] + static_cast<size_t>(j) * entry_stride, at);
    };
    for (int b = 0; b < kNB; ++b) prev[b * kSeg] = _mm512_setzero_si512();
    for (int j = 0; j < j0; ++j)
      for (int b = 0; b < kNB; ++b) other(b, j, prev[b * kSeg]);
    int common = W;
    for (int b = 0; b < kNB; ++b) common = std::min(common, j1[b]);
    const int len = (common - j0) / kSeg;
    // Segment s starts at entry j0 + s * len; its predecessor from widened columns.
    for (int c = 0; c < kN; ++c)
      if (c % kSeg != 0) prev[c] = edges.Entry((j0 + c % kSeg * len - 1) * kSw - g.pad_w, cb0 + 16 * (c / kSeg));
    const T* last = row + int64_t{j0 * kSw - g.pad_w + S::kLast} * C + cb0;  // column x + kLast of block 0, segment 0
    const int64_t seg_step = int64_t{len} * kSw * C;
    for (int k = 0; k < len; ++k, last += kSw * C) {
      _Pragma("GCC unroll 4")
      for (int c = 0; c < kN; ++c)
        step(c / kSeg, j0 + c % kSeg * len + k, last + 16 * (c / kSeg) + c % kSeg * seg_step, prev[c]);
    }
    // The rest of each block: its last segment's chain goes on.
    for (int b = 0; b < kNB; ++b) {
      __m512i& at = prev[b * kSeg + kSeg - 1];
      int j = j0 + kSeg * len;
      const T* lb = row + int64_t{j * kSw - g.pad_w + S::kLast} * C + cb0 + 16 * b;
      for (; j < j1[b]; ++j, lb += kSw * C) step(b, j, lb, at);
      for (; j < W; ++j) other(b, j, at);
    }
  };
  // Up to four blocks at a time; one or two blocks cut their rows into segments of 12 entries
  // or more (measured against four chains at every width, in-process A/B, Zen 5: 1.09x-1.32x on
  // rows of 6-40 entries, e.g. 48x48x16 at stride 2; eight chains spilled and ran 0.72x-0.85x).
  const auto narrow_band = [&]<int kQ>() __attribute__((always_inline)) {
    for (int cb0 = cb_begin; cb0 < cb_end; cb0 += 4 * 16) {
      const int nb = std::min(4, (cb_end - cb0) / 16);
      const int segs = std::min(4 / nb, W >= 48 ? 4 : W >= 24 ? 2 : 1);
      if (nb == 4) {
        narrow.template operator()<kQ, 4, 1>(cb0);
      } else if (nb == 3) {
        narrow.template operator()<kQ, 3, 1>(cb0);
      } else if (nb == 2) {
        if (segs == 2)
          narrow.template operator()<kQ, 2, 2>(cb0);
        else
          narrow.template operator()<kQ, 2, 1>(cb0);
      } else if (segs == 4) {
        narrow.template operator()<kQ, 1, 4>(cb0);
      } else if (segs == 2) {
        narrow.template operator()<kQ, 1, 2>(cb0);
      } else {
        narrow.template operator()<kQ, 1, 1>(cb0);
      }
    }
  };
  // Wide bands: entry by entry.
  const auto wide_band = [&]<int kQ>() __attribute__((always_inline)) {
    using S = QuadShape<kQ>;
    const __m512i flip = flip_of(kQ);
    int16_t* e = dst;
    for (int j = 0, x = -g.pad_w; j < W; ++j, x += S::kSw, e += entry_stride) {
      const T* last = row + int64_t{x + S::kLast} * C;  // column x + kLast
      int cb = cb_begin;
      if (j > 0 && x + S::kFirstNew >= 0 && x + S::kLast < g.in_w) {
        // Interior blocks (all but, at the input's end, a last one short of 16 bytes).
        for (; cb < cb_end && end - (last + cb) >= 16; cb += 16) {
          int16_t* eb = e + static_cast<size_t>(cb - cb_begin) * 2;
          const __m512i prev = _mm512_load_si512(eb - entry_stride);
          _mm512_store_si512(eb, next_entry.template operator()<kQ>(prev, last + cb, flip));
        }
      }
      if (kQ == kQP && j > 0 && x + 3 >= g.in_w) {
        for (; cb < cb_end; cb += 16) {
          int16_t* eb = e + static_cast<size_t>(cb - cb_begin) * 2;
          _mm512_store_si512(eb, edges.RightPair(_mm512_load_si512(eb - entry_stride), x, cb));
        }
      }
      for (; cb < cb_end; cb += 16) _mm512_store_si512(e + static_cast<size_t>(cb - cb_begin) * 2, edges.Entry(x, cb));
    }
  };
  const bool narrow_rows = cb_end - cb_begin < 8 * 16;
  switch (kind) {
    case kQ1: return narrow_rows ? narrow_band.template operator()<kQ1>() : wide_band.template operator()<kQ1>();
    case kQ2: return narrow_rows ? narrow_band.template operator()<kQ2>() : wide_band.template operator()<kQ2>();
    default: return narrow_rows ? narrow_band.template operator()<kQP>() : wide_band.template operator()<kQP>();
  }
}

// Quad rows whose entries are two input columns apart on CPUs with AVX-512 VBMI: stride-2 quads
// (kQ2: columns x .. x + 2 of entry j, x = 2j - pad) and pair quads (kQP: x .. x + 3), in bands
// of fewer than 8 blocks. Each interior entry takes two new columns, x + kFirst and
// x + kFirst + 1 (kFirst = 1 and 2), into bytes kFirst and kFirst + 1 of each channel's dword,
// and keeps the previous entry's last column(s), shifted down 16 bits, as QuadRowK3 derives
// them. Here the channels of up to four 16-channel blocks (a group) are loaded 64 bytes at a
// time per new column, and one vpermt2b per block moves each channel's two new bytes into place
// (the rest zero); a vpternlogd merges them with the shifted previous entry and flips them. Per
// block and entry one shuffle, a shift and a vpternlogd, against two vpshufb of two 16-byte
// broadcasts in QuadRowK3's chains; a group's blocks are four independent chains. Masked loads
// cover the group's channels only, so reading never passes the input's end. Edge entries are
// built from widened columns (QuadEdges), pair quads' right edge from the previous entry.
// Measured (in-process A/B, alternated invokes, medians of 300-400, Zen 5, 1 thread): layers
// 112x112x32 stride 2 0.86x the time, 57x57x40 0.87x, 14x14x96 0.73x, 112x112x96 0.94x;
// stride 1 (pair quads) 112x112x32 0.94-0.96x, 96x96x16 0.96-0.97x. Wide bands stay with
// QuadRowK3 (groups there: 56x56x144 / 28x28x192 stride 2 0.92-0.95x, but 14x14x576 and
// 28x28x576 stride 2, 14x14x576 and 7x7x960 stride 1 1.02-1.17x). Whole models against
// QuadRowK3 everywhere: MobileNetV2 int8 0.992x (2 threads 0.993x), uint8 0.987x, vww_96 int8
// 0.975x (0.976x), MobileNetV1 0.25 uint8 0.973x, SSD MobileNet uint8 0.995x, int8
// face_detection_short_range 0.964x (0.965x), hand_landmark_full 0.999x.
template <int kFirst>
struct QuadFreshIndex {
  alignas(64) uint8_t b[4][64];  // block q: byte kFirst of channel c's dword from the first table
};
template <int kFirst>
constexpr QuadFreshIndex<kFirst> MakeQuadFreshIndex() {
  QuadFreshIndex<kFirst> t{};
  for (int q = 0; q < 4; ++q)
    for (int c = 0; c < 16; ++c) {
      t.b[q][4 * c + kFirst] = static_cast<uint8_t>(16 * q + c);           // column x + kFirst
      t.b[q][4 * c + kFirst + 1] = static_cast<uint8_t>(64 + 16 * q + c);  // column x + kFirst + 1
    }
  return t;
}
template <int kFirst>
constexpr QuadFreshIndex<kFirst> kQuadFresh = MakeQuadFreshIndex<kFirst>();

template <typename T, int kFirst, int kNB>
__attribute__((target("avx512vbmi"), always_inline)) inline void QuadGroupVbmi(const Plan& p, const QuadEdges<T>& edges,
                                                                             int16_t* dst, int cb0, size_t entry_stride) {
  const Geom& g = p.g;
  const int C = g.channels, W = p.row_entries;
  const int bytes = std::min(16 * kNB, C - cb0);
  const __mmask64 load = bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << std::max(bytes, 0)) - 1;
  // Bytes kFirst and kFirst + 1 of each dword.
  const __mmask64 fresh_bytes = kFirst == 1 ? 0x6666666666666666ull : 0xCCCCCCCCCCCCCCCCull;
  const __m512i flip = _mm512_set1_epi32(std::is_signed_v<T> ? (0x8080 << (8 * kFirst)) : 0);
  __m512i idx[kNB];
  for (int q = 0; q < kNB; ++q) idx[q] = _mm512_load_si512(kQuadFresh<kFirst>.b[q]);
  // Interior entries [j0, j1): j >= 1, x + kFirst >= 0 and x + kFirst + 1 < in_w.
  const int j0 = std::min(W, std::max(1, (g.pad_w - kFirst + 1) / 2));
  const int top = g.in_w - 2 - kFirst + g.pad_w;  // 2j <= top
  const int j1 = top < 0 ? j0 : std::clamp(top / 2 + 1, j0, W);
  __m512i prev[kNB];
  // Entry j from widened columns, or at pair quads' right edge (x + 3 >= in_w, j > 0) from the
  // previous entry, as QuadRowK3 builds them.
  const auto edge = [&](int j) __attribute__((always_inline)) {
    const int x = 2 * j - g.pad_w;
    const bool right_pair = kFirst == 2 && j > 0 && x + 3 >= g.in_w;
    for (int q = 0; q < kNB; ++q) {
      prev[q] = right_pair ? edges.RightPair(prev[q], x, cb0 + 16 * q) : edges.Entry(x, cb0 + 16 * q);
      _mm512_store_si512(dst + static_cast<size_t>(16 * q) * 2 + static_cast<size_t>(j) * entry_stride, prev[q]);
    }
  };
  for (int j = 0; j < j0; ++j) edge(j);
  const T* col = edges.row + int64_t{2 * j0 - g.pad_w + kFirst} * C + cb0;  // column x + kFirst of entry j0
  int16_t* e = dst + static_cast<size_t>(j0) * entry_stride;
  for (int j = j0; j < j1; ++j, col += 2 * C, e += entry_stride) {
    // A masked load costs one more vector uop than a plain one: plain loads wherever all 64 bytes
    // lie inside the input (the bytes past the band's channels are not selected by idx).
    const bool plain = bytes >= 64 || col + C + 64 <= edges.end;
    const __m512i c1 = plain ? _mm512_loadu_si512(col) : _mm512_maskz_loadu_epi8(load, col);
    const __m512i c2 = plain ? _mm512_loadu_si512(col + C) : _mm512_maskz_loadu_epi8(load, col + C);
    for (int q = 0; q < kNB; ++q) {
      const __m512i fresh = _mm512_maskz_permutex2var_epi8(fresh_bytes, c1, idx[q], c2);
      prev[q] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(prev[q], 16), fresh, flip, 0x56);
      _mm512_store_si512(e + static_cast<size_t>(16 * q) * 2, prev[q]);
    }
  }
  for (int j = j1; j < W; ++j) edge(j);
}

// A PairRowFn for stride-2 quads (kFirst 1) and pair quads (kFirst 2): the band's groups of
// four blocks, then the last one to three.
template <typename T, int kFirst>
__attribute__((target("avx512vbmi"))) void QuadRowVbmi(const Plan& p, const void* row_v, const void* end_v,
                                                      int32_t zp, int16_t* dst, int cb_begin, int cb_end,
                                                      size_t entry_stride) {
  // Wide bands (8 blocks or more) entry by entry as QuadRowK3 builds them: the groups were
  // 0.97-1.17x the time there on rows of 4-14 entries (7x7x960, 14x14x576 stride 1; 28x28x576
  // stride 2) and within noise on longer ones.
  if (cb_end - cb_begin >= 8 * 16) return QuadRowK3<T>(p, row_v, end_v, zp, dst, cb_begin, cb_end, entry_stride);
  const QuadEdges<T> edges(p, static_cast<const T*>(row_v), static_cast<const T*>(end_v));
  const auto at = [&](int cb) { return dst + static_cast<size_t>(cb - cb_begin) * 2; };
  int cb = cb_begin;
  for (; cb + 64 <= cb_end; cb += 64) QuadGroupVbmi<T, kFirst, 4>(p, edges, at(cb), cb, entry_stride);
  switch ((cb_end - cb) / 16) {
    case 3: return QuadGroupVbmi<T, kFirst, 3>(p, edges, at(cb), cb, entry_stride);
    case 2: return QuadGroupVbmi<T, kFirst, 2>(p, edges, at(cb), cb, entry_stride);
    case 1: return QuadGroupVbmi<T, kFirst, 1>(p, edges, at(cb), cb, entry_stride);
    default: return;
  }
}

// Pair rows of the 3x3 loop (horizontal stride 1 or 2, dilation 1): entry j of a 16-channel
// block pairs columns j * q - pad and j * q - pad + 1, channels in natural order. Columns are
// widened (masked load at the input's end) and one vpermt2w interleaves two into an entry; at
// stride 1 each column is widened once and carried to the next entry.
template <typename T, bool kRaw>
void PairRowK3(const Plan& p, const void* row_v, const void* end_v, int32_t zp, int16_t* dst, int cb_begin,
               int cb_end, size_t entry_stride) {
  const T* row = static_cast<const T*>(row_v);
  const T* end = static_cast<const T*>(end_v);
  const Geom& g = p.g;
  const int C = g.channels;
  const __m256i vzp = _mm256_set1_epi16(static_cast<int16_t>(zp));
  const __m512i pad = _mm512_zextsi256_si512(kRaw ? vzp : _mm256_setzero_si256());
  // Word 2i <- first column's channel i, word 2i + 1 <- second column's (the second operand).
  alignas(64) int16_t order[32];
  for (int i = 0; i < 16; ++i) {
    order[2 * i] = static_cast<int16_t>(i);
    order[2 * i + 1] = static_cast<int16_t>(32 + i);
  }
  const __m512i idx = _mm512_load_si512(order);
  const auto widen = [&](const T* src) {
    const ptrdiff_t left = end - src;
    const __mmask16 tail = left > 0 ? static_cast<__mmask16>((1u << std::min<ptrdiff_t>(left, 16)) - 1) : 0;
    __m256i v;
    if constexpr (sizeof(T) == 2) {  // 16x8: int16 values as they are
      v = left >= 16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)) : _mm256_maskz_loadu_epi16(tail, src);
    } else {
      const __m128i b = left >= 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)) : _mm_maskz_loadu_epi8(tail, src);
      v = std::is_signed_v<T> ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b);
    }
    return _mm512_zextsi256_si512(kRaw ? v : _mm256_sub_epi16(v, vzp));
  };
  if constexpr (sizeof(T) == 2) {
    if (p.q == 2 && cb_end - cb_begin >= 4 * 16) {
      // 16x8 at stride 2, bands of 4 or more blocks: entry by entry, all blocks of an entry
      // together, so that the (twice as large) int16 input is read in order. Measured
      // (edgeopt_op_profile, MobileNetV2 16x8, medians of 4 alternated runs): the stride-2 layers
      // 1.04x-1.10x faster; at stride 1 it was 0.87x (two loads per entry instead of one carried).
      for (int j = 0, x = -g.pad_w; j < p.row_entries; ++j, x += p.q) {
        int16_t* e = dst + static_cast<size_t>(j) * entry_stride;
        const bool in1 = x >= 0 && x < g.in_w, in2 = x + 1 >= 0 && x + 1 < g.in_w;
        const T* s1 = row + int64_t{x} * C;
        if (in1 && in2 && s1 + C + cb_end <= end) {  // both columns inside, no load past `end`
          for (int cb = cb_begin; cb < cb_end; cb += 16, e += 32) {
            const __m512i a = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + cb)));
            const __m512i b = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + C + cb)));
            _mm512_store_si512(e, _mm512_permutex2var_epi16(a, idx, b));
          }
          continue;
        }
        for (int cb = cb_begin; cb < cb_end; cb += 16, e += 32) {
          const __m512i a = in1 ? widen(s1 + cb) : pad, b = in2 ? widen(s1 + C + cb) : pad;
          _mm512_store_si512(e, _mm512_permutex2var_epi16(a, idx, b));
        }
      }
      return;
    }
  }
  for (int cb = cb_begin; cb < cb_end; cb += 16) {
    const auto column = [&](int x) { return x >= 0 && x < g.in_w ? widen(row + int64_t{x} * C + cb) : pad; };
    int16_t* e = dst + static_cast<size_t>(cb - cb_begin) * 2;
    if (p.q == 2) {
      // Stride 2: entry j pairs columns 2j - pad and 2j - pad + 1, each used by one entry.
      for (int j = 0, x = -g.pad_w; j < p.row_entries; ++j, x += 2, e += entry_stride)
        _mm512_store_si512(e, _mm512_permutex2var_epi16(column(x), idx, column(x + 1)));
      continue;
    }
    // Entry j's new column x = j - pad + 1: left padding, then the columns whose 16 values lie
    // before `end` (loaded without checks), then the rest (right padding, the input's end).
    const ptrdiff_t room = end - (row + cb + 16);
    const int x_fast = room < 0 ? 0 : static_cast<int>(std::min<ptrdiff_t>(g.in_w, room / C + 1));
    __m512i prev = column(-g.pad_w);
    const auto emit = [&](__m512i next) {
      _mm512_store_si512(e, _mm512_permutex2var_epi16(prev, idx, next));
      prev = next;
      e += entry_stride;
    };
    int j = 0;
    for (; j < p.row_entries && j - g.pad_w + 1 < 0; ++j) emit(pad);
    const T* src = row + cb + int64_t{j - g.pad_w + 1} * C;
    for (; j < p.row_entries && j - g.pad_w + 1 < x_fast; ++j, src += C) {
      __m256i v;
      if constexpr (sizeof(T) == 2) {
        v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      } else {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
        v = std::is_signed_v<T> ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b);
      }
      emit(_mm512_zextsi256_si512(kRaw ? v : _mm256_sub_epi16(v, vzp)));
    }
    for (; j < p.row_entries; ++j) emit(column(j - g.pad_w + 1));
  }
}

template <typename T>
PairRowFn PickPairRowTyped(const Plan& p) {
  return p.raw_input ? PairRowK3<T, true> : PairRowK3<T, false>;
}

// ---- The K x K quad loop (Plan::quads_kn) ----

// Ring geometry of one 16-channel block: `entries` quad-row entries of 64 bytes per input row
// (output pixel ox reads entries ox + group_step * group, groups < kn_groups), built from
// `stage_cols` staged columns of 16 bytes; a ring of ring_rows (a power of two covering the
// filter's input rows) quad rows, one padding row (every byte the unsigned input zero point) and
// the staging row. Entry j holds the columns j * stride_w + t * dil_w (t = 0..3) of the padded
// row, so a group of 4 taps lies 4 * dil_w columns, i.e. group_step = 4 * dil_w / stride_w
// entries, after the previous (stride_w is 1 or 2: a whole number of entries).
struct KnLayout {
  int entries = 0, stage_cols = 0, ring_rows = 1, group_step = 0;
  size_t row_bytes = 0;
};
// The channels of a real input / output pixel: the plan's, or 16 / P in a packed plan (whose
// plan has 16 channels, P pixels' worth).

// Packed plans (Plan::kn_pixels = P > 1, stride_w 1): a "pixel" of the loop is P real output
// pixels (16 lanes: P pixels x C channels), entry X's tap t reads the 16 staged bytes at real
// column P X + t dil_w (C bytes per staged column), tap groups are 4 dil_w / P entries apart.
KnLayout KnLayoutOf(const Plan& p) {
  KnLayout l;
  const Geom& g = p.g;
  const int P = p.kn_pixels;
  if (P > 1) {
    l.group_step = 4 * g.dil_w / P;
    l.entries = (g.out_w + P - 1) / P + l.group_step * (p.kn_groups - 1);
    l.stage_cols = P * l.entries + 3 * g.dil_w;  // real columns: the last entry reads up to here
  } else {
    l.group_step = 4 * g.dil_w / g.stride_w;
    l.entries = g.out_w + l.group_step * (p.kn_groups - 1);
    l.stage_cols = (l.entries - 1) * g.stride_w + 3 * g.dil_w + 1;
  }
  const int span = (g.k_h - 1) * g.dil_h + 1;  // <= 64 (PrepareFast)
  while (l.ring_rows < span) l.ring_rows *= 2;
  l.row_bytes = static_cast<size_t>(l.entries) * 64;
  return l;
}

// A quad entry from four 16-byte tap slices, slice t in 128-bit lane t: byte 4c + t <- byte 16t +
// c (vpermd moves dword k of slice t to dword 4k + t, i.e. lane k holds channels 4k..4k+3 of the
// four slices; vpshufb transposes each lane's 4x4 bytes).
inline __m512i QuadEntry(__m512i slices) {
  const __m512i dwords = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dwords, slices), bytes);
}

// Four 16-byte slices `step` bytes apart, one per 128-bit lane.
inline __m512i LoadSlices(const uint8_t* p, size_t step) {
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + step)), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * step)), 2);
  return _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * step)), 3);
}

// The quad row of channels [cb, cb + 16) of one input row (int8 values xor 0x80 = flip, uint8 as
// they are; columns outside the input: the unsigned zero point): the columns staged 16 bytes
// each, then each entry is 4 consecutive staged columns with channel c's four bytes put in dword c.
void BuildKnRow(const Plan& p, const KnLayout& l, const uint8_t* row, int cb, uint8_t flip, uint8_t* stage,
                uint8_t* dst) {
  const Geom& g = p.g;
  const int C = g.channels;
  const __mmask16 m = C - cb >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (C - cb)) - 1);
  const __m128i pad = _mm_set1_epi8(static_cast<char>(p.quad_zp));
  const __m128i fl = _mm_set1_epi8(static_cast<char>(flip));
  const int x_begin = std::clamp(g.pad_w, 0, l.stage_cols), x_end = std::clamp(g.pad_w + g.in_w, x_begin, l.stage_cols);
  for (int xx = 0; xx < x_begin; ++xx) _mm_store_si128(reinterpret_cast<__m128i*>(stage + 16 * xx), pad);
  const uint8_t* src = row + cb + static_cast<ptrdiff_t>(x_begin - g.pad_w) * C;
  for (int xx = x_begin; xx < x_end; ++xx, src += C)
    _mm_store_si128(reinterpret_cast<__m128i*>(stage + 16 * xx), _mm_xor_si128(_mm_maskz_loadu_epi8(m, src), fl));
  for (int xx = x_end; xx < l.stage_cols; ++xx) _mm_store_si128(reinterpret_cast<__m128i*>(stage + 16 * xx), pad);
  const size_t step = static_cast<size_t>(16) * g.stride_w;
  if (g.dil_w == 1) {
    // The four columns of an entry are 64 consecutive staged bytes.
    for (int j = 0; j < l.entries; ++j)
      _mm512_store_si512(dst + 64 * static_cast<size_t>(j), QuadEntry(_mm512_loadu_si512(stage + step * j)));
    return;
  }
  const size_t d16 = static_cast<size_t>(16) * g.dil_w;
  for (int j = 0; j < l.entries; ++j)
    _mm512_store_si512(dst + 64 * static_cast<size_t>(j), QuadEntry(LoadSlices(stage + step * j, d16)));
}

// The quad row of a packed plan (C = 16 / P real channels): the real row staged as it is (C
// bytes per column, int8 values xor 0x80, padding columns the unsigned zero point), then entry X
// gathers its four taps' 16-byte slices (real columns P X + t dil_w) and transposes them as
// BuildKnRow does.
void BuildKnRowPacked(const Plan& p, const KnLayout& l, const uint8_t* row, uint8_t flip, uint8_t* stage, uint8_t* dst) {
  const Geom& g = p.g;
  const int C = LayerChannels(p);
  const int64_t bytes = int64_t{l.stage_cols} * C;
  const int64_t x_begin = std::clamp<int64_t>(int64_t{g.pad_w} * C, 0, bytes);
  const int64_t x_end = std::clamp<int64_t>(int64_t{g.pad_w + g.in_w} * C, x_begin, bytes);
  const __m512i pad = _mm512_set1_epi8(static_cast<char>(p.quad_zp)), fl = _mm512_set1_epi8(static_cast<char>(flip));
  const auto fill = [&](int64_t b, int64_t e) {
    for (; b < e; b += 64)
      _mm512_mask_storeu_epi8(stage + b, e - b >= 64 ? ~__mmask64{0} : (__mmask64{1} << (e - b)) - 1, pad);
  };
  fill(0, x_begin);
  const uint8_t* src = row - x_begin;
  for (int64_t b = x_begin; b < x_end; b += 64) {
    const __mmask64 m = x_end - b >= 64 ? ~__mmask64{0} : (__mmask64{1} << (x_end - b)) - 1;
    _mm512_mask_storeu_epi8(stage + b, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + b), fl));
  }
  fill(x_end, bytes);
  const size_t tap = static_cast<size_t>(g.dil_w) * C;
  for (int j = 0; j < l.entries; ++j)
    _mm512_store_si512(dst + 64 * static_cast<size_t>(j), QuadEntry(LoadSlices(stage + static_cast<size_t>(16) * j, tap)));
}

// kNP (1..8) consecutive output pixels of one 16-channel group: filter row ky of pixel i is
// kG vpdpbusd on entries i + group * (gstep / 64) of quad row rows[ky]; accumulated from the
// (folded) bias, doubled in the doubled forms, requantized and stored as the 3x3 quad rows do.
template <int kNP, int kKH, int kG, bool kUnsigned, int kMode>
__attribute__((always_inline)) inline void KnPixels(const uint8_t* const* rows, size_t at, size_t gstep,
                                                    const __m512i (&w)[kKH][kG], __m512i bias,
                                                    const RequantGroup16& g, const OutStage& o, uint8_t* out) {
  static_assert(kNP >= 1 && kNP <= 8, "8 pixels at most");
  __m512i a[8];
#pragma GCC unroll 8
  for (int i = 0; i < kNP; ++i) a[i] = bias;
#pragma GCC unroll 8
  for (int ky = 0; ky < kKH; ++ky) {
    const uint8_t* e = rows[ky] + at;
#pragma GCC unroll 2
    for (int gg = 0; gg < kG; ++gg)
#pragma GCC unroll 8
      for (int i = 0; i < kNP; ++i)
        a[i] = _mm512_dpbusd_epi32(a[i], _mm512_load_si512(e + gg * gstep + 64 * static_cast<size_t>(i)), w[ky][gg]);
  }
  if constexpr (RqDoublesSums(kMode)) {
#pragma GCC unroll 8
    for (int i = 0; i < kNP; ++i) a[i] = _mm512_add_epi32(a[i], a[i]);
  }
  Finish4<std::min(kNP, 4), kUnsigned, kMode>(a[0], a[kNP > 1 ? 1 : 0], a[kNP > 2 ? 2 : 0], a[kNP > 3 ? 3 : 0], g, o,
                                              out);
  if constexpr (kNP > 4)
    Finish4<kNP - 4, kUnsigned, kMode>(a[4], a[kNP > 5 ? 5 : 4], a[kNP > 6 ? 6 : 4], a[kNP > 7 ? 7 : 4], g, o,
                                       out + 4 * o.stride);
}

// One output row of one 16-channel group cg: rows[ky] are the quad rows of its filter rows, out
// the output row at channel cg.
using KnRowFn = void (*)(const Plan& p, const uint8_t* const* rows, int cg, uint8_t* out);

template <int kKH, int kG, bool kUnsigned, int kMode>
void KnRow(const Plan& p, const uint8_t* const* rows, int cg, uint8_t* out) {
  // Packed plans: W loop pixels of P real pixels (16 bytes apart), then a partial one.
  const int C = p.g.channels, P = p.kn_pixels, W = p.g.out_w / P;
  const RequantGroup16& g = p.requant16[cg / 16];
  OutStage o(p);
  o.Group(cg);
  __m512i w[kKH][kG];
  for (int ky = 0; ky < kKH; ++ky)
    for (int gg = 0; gg < kG; ++gg)
      w[ky][gg] = _mm512_loadu_si512(p.quad_weights.data() + ((static_cast<size_t>(ky) * kG + gg) * p.c16 + cg) * 4);
  // With a left shift the bias must be added before shifting: Requant16 adds it.
  const __m512i bias = kMode == kRqLeft ? _mm512_setzero_si512() : Ld(g.bias);
  const size_t gstep = static_cast<size_t>(P > 1 ? 4 * p.g.dil_w / P : 4 * p.g.dil_w / p.g.stride_w) * 64;
  int ox = 0;
  for (; ox + 8 <= W; ox += 8)
    KnPixels<8, kKH, kG, kUnsigned, kMode>(rows, static_cast<size_t>(ox) * 64, gstep, w, bias, g, o,
                                           out + static_cast<size_t>(ox) * C);
  const size_t at = static_cast<size_t>(ox) * 64;
  uint8_t* tail = out + static_cast<size_t>(ox) * C;
  switch (W - ox) {
    case 1: KnPixels<1, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 2: KnPixels<2, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 3: KnPixels<3, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 4: KnPixels<4, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 5: KnPixels<5, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 6: KnPixels<6, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    case 7: KnPixels<7, kKH, kG, kUnsigned, kMode>(rows, at, gstep, w, bias, g, o, tail); break;
    default: break;
  }
  if (const int rest = p.g.out_w - W * P; rest > 0) {
    // The last real pixels of a packed row: their rest * 16 / P lanes only.
    o.full = false;
    o.mask = static_cast<__mmask16>((1u << (rest * 16 / P)) - 1);
    KnPixels<1, kKH, kG, kUnsigned, kMode>(rows, static_cast<size_t>(W) * 64, gstep, w, bias, g, o,
                                           out + static_cast<size_t>(W) * C);
  }
}

template <int kKH, int kG, bool kUnsigned>
KnRowFn PickKnMode(const Plan& p) {
  // The float forms first, whatever RqModeOf says of the integer forms (as K3Picker).
  if (p.quad_float) return WithFloatRqMode(p, []<int kMode>() -> KnRowFn { return KnRow<kKH, kG, kUnsigned, kMode>; });
  switch (RqModeOf(p)) {
    case kRqLeft: return KnRow<kKH, kG, kUnsigned, kRqLeft>;
    case kRqFast:
      if (p.zp_folded && p.quad_halved) return KnRow<kKH, kG, kUnsigned, kRqHalfZpFloor>;
      if (p.zp_folded)
        return p.floor_clamps ? KnRow<kKH, kG, kUnsigned, kRqFast2ZpFloor> : KnRow<kKH, kG, kUnsigned, kRqFast2Zp>;
      return p.doubled ? KnRow<kKH, kG, kUnsigned, kRqFast2> : KnRow<kKH, kG, kUnsigned, kRqFast>;
    default: return KnRow<kKH, kG, kUnsigned, kRqPlain>;
  }
}

template <int kKH, int kG>
KnRowFn PickKnSign(const Plan& p) {
  return p.kind == OutKind::kUInt8 ? PickKnMode<kKH, kG, true>(p) : PickKnMode<kKH, kG, false>(p);
}

// The filters of KnShapeFits (depthwise_int8_avx2.cc): 3x3 (one tap group) and 5 or 7 rows of
// 5 to 8 taps (two).
KnRowFn PickKnRow(const Plan& p) {
  if (p.g.k_h == 3) return PickKnSign<3, 1>(p);
  return p.g.k_h == 5 ? PickKnSign<5, 2>(p) : PickKnSign<7, 2>(p);
}

}  // namespace

PairRowFn QuadRowBuilder(const Plan& p, bool uint8_input, bool vbmi) {
  if (vbmi && p.quad_pairs) return uint8_input ? QuadRowVbmi<uint8_t, 2> : QuadRowVbmi<int8_t, 2>;
  if (vbmi && p.g.stride_w == 2) return uint8_input ? QuadRowVbmi<uint8_t, 1> : QuadRowVbmi<int8_t, 1>;
  return uint8_input ? QuadRowK3<uint8_t> : QuadRowK3<int8_t>;
}

PairRowFn PickPairRowAvx512(const Plan& p, bool uint8_input) {
  if (!p.avx512 || !p.natural || (p.q != 1 && p.q != 2) || p.g.dil_w != 1) return nullptr;
  if (p.kind == OutKind::kInt16) return PairRowK3<int16_t, true>;  // zero point 0: raw values
  if (p.quads) return QuadRowBuilder(p, uint8_input, rt::Cpu().avx512vbmi);
  return uint8_input ? PickPairRowTyped<uint8_t>(p) : PickPairRowTyped<int8_t>(p);
}

K3Fn PickK3Avx512(const Plan& p, int kj) {
  if (p.kind == OutKind::kInt16) return PickK3Int16Avx512(p, kj);
  if (p.quad_pairs) return K3Picker<QuadRows<true>>::Pick(p, kj);
  return p.quads ? K3Picker<QuadRows<false>>::Pick(p, kj) : K3Picker<Avx512Rows>::Pick(p, kj);
}

void Int16StageAvx512(const Plan& p, const int32_t* acc, const int64_t* bias, int cb, int n, int16_t* out) {
  const Int16Stage64 stage(p, bias, cb, n);
  stage.Store(_mm512_maskz_loadu_epi32(stage.mask, acc), out + cb);
}

size_t KnScratchBytes(const Plan& p) {
  const KnLayout l = KnLayoutOf(p);
  // Staged columns: 16 bytes each, or C = 16 / P real bytes in packed plans (64 more for the
  // masked whole-vector fills).
  const size_t col_bytes = p.kn_pixels > 1 ? static_cast<size_t>(LayerChannels(p)) : 16;
  const size_t stage = (static_cast<size_t>(l.stage_cols) * col_bytes + 64 + 63) / 64 * 64;
  return l.row_bytes * static_cast<size_t>(l.ring_rows + 1) + stage;
}

namespace {

// Output rows [r0, r1) of the 16-channel block at channel cb, with the ring (and the padding row
// and staging buffer after it) at `ring`: each input row the filter reads becomes a quad row once.
// in: the input from row in_row0 (of the batches * in_h rows) on; out: the output from row
// out_row0 on.
void KnBlockRows(const Plan& p, const KnLayout& l, KnRowFn row_fn, const uint8_t* in, int64_t in_row0, uint8_t* out,
                 int64_t out_row0, int cb, int64_t r0, int64_t r1, uint8_t* ring) {
  const Geom& g = p.g;
  // Packed plans: one 16-lane block of P pixels x C real channels (C bytes per real pixel).
  const int C = LayerChannels(p);
  const uint8_t flip = p.kind == OutKind::kInt8 ? 0x80 : 0;
  uint8_t* pad_row = ring + l.row_bytes * static_cast<size_t>(l.ring_rows);
  uint8_t* stage = pad_row + l.row_bytes;
  int64_t tags[64];
  const uint8_t* rows[7];
  for (int i = 0; i < l.ring_rows; ++i) tags[i] = -1;
  for (int64_t row = r0; row < r1; ++row) {
    const int b = static_cast<int>(row / g.out_h), oy = static_cast<int>(row % g.out_h);
    for (int ky = 0; ky < g.k_h; ++ky) {
      const int iy = oy * g.stride_h - g.pad_h + ky * g.dil_h;
      if (iy < 0 || iy >= g.in_h) {
        rows[ky] = pad_row;
        continue;
      }
      const int slot_i = iy & (l.ring_rows - 1);
      uint8_t* dst = ring + l.row_bytes * static_cast<size_t>(slot_i);
      const int64_t tag = int64_t{b} * g.in_h + iy;
      if (tags[slot_i] != tag) {
        const uint8_t* src = in + static_cast<size_t>(tag - in_row0) * g.in_w * C;
        if (p.kn_pixels > 1)
          BuildKnRowPacked(p, l, src, flip, stage, dst);
        else
          BuildKnRow(p, l, src, cb, flip, stage, dst);
        tags[slot_i] = tag;
      }
      rows[ky] = dst;
    }
    row_fn(p, rows, cb, out + static_cast<size_t>(row - out_row0) * g.out_w * C + cb);
  }
}

// The padding row after the ring: every entry the padding value.
void FillKnPadRow(const Plan& p, const KnLayout& l, uint8_t* ring) {
  uint8_t* pad_row = ring + l.row_bytes * static_cast<size_t>(l.ring_rows);
  const __m512i pad = _mm512_set1_epi8(static_cast<char>(p.quad_zp));
  for (int j = 0; j < l.entries; ++j) _mm512_store_si512(pad_row + 64 * static_cast<size_t>(j), pad);
}

}  // namespace

// Tasks: (band of output rows, 16-channel block), bands first; a single band unless the blocks
// are too few to give every thread about 4 tasks. Each thread takes a contiguous range of tasks
// (the top of the image on the first thread), and per task builds each input row's quad row once.
void RunKnAvx512(rt::ThreadPool& pool, const Plan& p, const Args& args) {
  const Geom& g = p.g;
  const KnLayout l = KnLayoutOf(p);
  const KnRowFn row_fn = PickKnRow(p);
  const int blocks = p.c16 / 16;
  const int64_t total_rows = int64_t{g.batches} * g.out_h;
  const int threads = pool.num_threads();
  int64_t bands = 1;
  if (threads > 1 && blocks < 4 * threads) bands = std::min<int64_t>(total_rows, (4 * threads + blocks - 1) / blocks);
  const int64_t tasks = bands * blocks;
  const int slots = static_cast<int>(std::min<int64_t>(threads, tasks));
  const uint8_t* in = static_cast<const uint8_t*>(args.input);
  uint8_t* out = static_cast<uint8_t*>(args.output);
  const auto work = [&](int slot) {
    uint8_t* ring = pool.SlotScratch(slot);
    FillKnPadRow(p, l, ring);
    for (int64_t t = tasks * slot / slots; t < tasks * (slot + 1) / slots; ++t) {
      const int64_t band = t / blocks;
      KnBlockRows(p, l, row_fn, in, 0, out, 0, static_cast<int>(t % blocks) * 16, total_rows * band / bands,
                  total_rows * (band + 1) / bands, ring);
    }
  };
  if (slots <= 1) return work(0);
  pool.ParallelFor(slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) work(static_cast<int>(s));
  });
}

void RunKnRows(const Plan& p, const Args& args, int64_t r0, int64_t r1, uint8_t* scratch) {
  const KnLayout l = KnLayoutOf(p);
  const KnRowFn row_fn = PickKnRow(p);
  FillKnPadRow(p, l, scratch);
  for (int cb = 0; cb < p.c16; cb += 16)
    KnBlockRows(p, l, row_fn, static_cast<const uint8_t*>(args.input), args.in_row0, static_cast<uint8_t*>(args.output),
                args.out_row0, cb, r0, r1, scratch);
}

}  // namespace edgeopt::kernels::dwq
