// The int8/uint8 3x3 dilation-1 loop's interface between its driver (depthwise_int8_avx2.cc:
// pair-row ring, batches of output rows) and its row kernels (AVX2 in depthwise_int8_avx2.cc,
// AVX-512 VNNI in depthwise_int8_avx512.cc). Internal to depthwise/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/depthwise/depthwise_int8.h"

namespace edgeopt::kernels::dwq {

// A batch of output rows for the 3x3 loop: the pair rows of each (filter rows in the top/bottom
// padding point at the zero row) hold channels [cb, cb_end) only, entries c2 int16 apart.
constexpr int kMaxK3Batch = 62;
struct K3Batch {
  const Plan* p = nullptr;
  int n = 0;
  const int16_t* rows[kMaxK3Batch][3];
  uint8_t* out[kMaxK3Batch];
  int cb = 0, cb_end = 0;
  size_t c2 = 0;
};

// Requantization modes of the int8/uint8 rows (kRqFast2: the 3x3 loop only, doubled plans;
// kRqFast2Zp / kRqFast2ZpFloor: the AVX-512 rows only, doubled plans with Plan::zp_folded, the
// latter also with Plan::floor_clamps; kRqHalfZpFloor: the AVX-512 quad rows of plans with
// Plan::quad_halved, kRqFast2ZpFloor's arithmetic on sums that are not doubled).
enum RqMode {
  kRqPlain = 0,
  kRqLeft = 1,
  kRqFast = 2,
  kRqFast2 = 3,
  kRqFast2Zp = 4,
  kRqFast2ZpFloor = 5,
  kRqHalfZpFloor = 6,
  kRqFloat = 7,       // Plan::quad_float (the AVX-512 quad rows)
  kRqFloatSplit = 8,  // Plan::quad_float_split
  kRqFloatBits = 9    // Plan::quad_float_bits
};

// Modes whose rows double their sums (the doubled plans' quad rows; pair rows double the weights).
constexpr bool RqDoublesSums(int mode) { return mode == kRqFast2 || mode == kRqFast2Zp || mode == kRqFast2ZpFloor; }
// Modes whose requantized lanes already hold the output zero point (Plan::zp_folded, the float forms).
constexpr bool RqHoldsZeroPoint(int mode) {
  return mode == kRqFast2Zp || mode == kRqFast2ZpFloor || mode == kRqHalfZpFloor || mode == kRqFloat ||
         mode == kRqFloatSplit || mode == kRqFloatBits;
}

// f.template operator()<kMode>() for the fp32 mode of a Plan::quad_float plan: kRqFloatSplit,
// kRqFloatBits or kRqFloat.
template <typename F>
decltype(auto) WithFloatRqMode(const Plan& p, const F& f) {
  if (p.quad_float_split) return f.template operator()<kRqFloatSplit>();
  if (p.quad_float_bits) return f.template operator()<kRqFloatBits>();
  return f.template operator()<kRqFloat>();
}

// The requantization mode of a plan (kRqFast also for doubled plans).
inline int RqModeOf(const Plan& p) { return p.any_left_shift ? kRqLeft : p.fast_requant ? kRqFast : kRqPlain; }

using K3Fn = void (*)(const K3Batch&);

// Narrow stride-1 outputs (1 to kK3NarrowMax pixels wide: the last stages of most CNNs, audio and
// keyword-spotting maps) have their own instantiations of the rows with the width as a
// compile-time constant (AVX2 variants .../3x3s1/wN); 0 = any width, the generic row loop.
constexpr int kK3NarrowMax = 8;
inline int K3NarrowWidth(const Plan& p) {
  if (p.j_step != 2) return 0;
  return p.g.out_w >= 1 && p.g.out_w <= kK3NarrowMax ? p.g.out_w : 0;
}

// The row function of a plan from a family of instantiations: Rows::Fn<kJ, kUnsigned, kMode, kW>
// (kJ = 2 stride 1, 1 stride 2; kW: compile-time narrow width or 0), chosen by the plan's
// requantization form, output type and narrow width.
template <typename Rows>
struct K3Picker {
  template <int kJ, bool kUnsigned, int kW>
  static K3Fn Mode(const Plan& p) {
    // The float forms first: they need no more than quad plans without a left shift
    // (PlanQuadFloat), whatever RqModeOf says of the integer forms.
    if constexpr (Rows::kFoldsZeroPoint && Rows::kQuads) {
      if (p.quad_float)
        return WithFloatRqMode(p, []<int kMode>() -> K3Fn { return Rows::template Fn<kJ, kUnsigned, kMode, kW>; });
    }
    switch (RqModeOf(p)) {
      case kRqLeft: return Rows::template Fn<kJ, kUnsigned, kRqLeft, kW>;
      case kRqFast:
        if constexpr (Rows::kFoldsZeroPoint) {
          if (p.zp_folded && p.quad_halved) return Rows::template Fn<kJ, kUnsigned, kRqHalfZpFloor, kW>;
          if (p.zp_folded)
            return p.floor_clamps ? Rows::template Fn<kJ, kUnsigned, kRqFast2ZpFloor, kW>
                                  : Rows::template Fn<kJ, kUnsigned, kRqFast2Zp, kW>;
        }
        return p.doubled ? Rows::template Fn<kJ, kUnsigned, kRqFast2, kW> : Rows::template Fn<kJ, kUnsigned, kRqFast, kW>;
      default: return Rows::template Fn<kJ, kUnsigned, kRqPlain, kW>;
    }
  }
  template <int kJ, bool kUnsigned, int kW = kK3NarrowMax>
  static K3Fn Width(const Plan& p) {
    if constexpr (kJ == 2 && kW >= 1) {
      if (K3NarrowWidth(p) == kW) return Mode<kJ, kUnsigned, kW>(p);
      return Width<kJ, kUnsigned, kW - 1>(p);
    } else {
      return Mode<kJ, kUnsigned, 0>(p);
    }
  }
  template <int kJ>
  static K3Fn Sign(const Plan& p) {
    return p.kind == OutKind::kUInt8 ? Width<kJ, true>(p) : Width<kJ, false>(p);
  }
  static K3Fn Pick(const Plan& p, int kj) { return kj == 2 ? Sign<2>(p) : Sign<1>(p); }
};

// The multiply-add schedule of kNP consecutive output pixels (kNP + kJ <= 16), shared by the
// AVX2 and AVX-512 rows. Used inside a function with compile-time kNP and kJ, a loader
// `ld(e, i)` (entry i of pair row e) and a macro MACP(P, v, wt) (accumulator of pixel P += v * wt):
// entry I of a row holds tap pair 0 of pixel I and tap pair 1 of pixel I - kJ, so each entry is
// loaded once for the one or two pixels that use it. w.w0..w.w5: the weights of the three rows.
#define EDGEOPT_DW_K3_ENTRY(e, I, wa, wb, MACP)                                 \
  do {                                                                          \
    if constexpr ((I) < kNP + kJ) {                                             \
      const auto v = ld(e, I);                                                  \
      if constexpr ((I) < kNP) MACP(I, v, wa);                                  \
      if constexpr ((I) >= kJ && (I) - kJ < kNP) MACP((I) - kJ, v, wb);         \
    }                                                                           \
  } while (0)
#define EDGEOPT_DW_K3_ROW(e, wa, wb, MACP)                                      \
  do {                                                                          \
    EDGEOPT_DW_K3_ENTRY(e, 0, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 1, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 2, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 3, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 4, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 5, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 6, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 7, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 8, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 9, wa, wb, MACP);                                    \
    EDGEOPT_DW_K3_ENTRY(e, 10, wa, wb, MACP);                                   \
    EDGEOPT_DW_K3_ENTRY(e, 11, wa, wb, MACP);                                   \
    EDGEOPT_DW_K3_ENTRY(e, 12, wa, wb, MACP);                                   \
    EDGEOPT_DW_K3_ENTRY(e, 13, wa, wb, MACP);                                   \
    EDGEOPT_DW_K3_ENTRY(e, 14, wa, wb, MACP);                                   \
    EDGEOPT_DW_K3_ENTRY(e, 15, wa, wb, MACP);                                   \
  } while (0)
#define EDGEOPT_DW_K3_ROWS(e0, e1, e2, w, MACP)                                 \
  do {                                                                          \
    static_assert(kNP + kJ <= 16, "entries 0..15 of a row");                    \
    EDGEOPT_DW_K3_ROW(e0, (w).w0, (w).w1, MACP);                                \
    EDGEOPT_DW_K3_ROW(e1, (w).w2, (w).w3, MACP);                                \
    EDGEOPT_DW_K3_ROW(e2, (w).w4, (w).w5, MACP);                                \
  } while (0)

// AVX-512 VNNI rows of the loop for a plan with Plan::avx512 set; kj = 2 for stride 1, 1 for
// stride 2, 4 or 8 for 16x8 filters dilated by 2 or 4 (depthwise_int8_avx512.cc).
K3Fn PickK3Avx512(const Plan& p, int kj);

// The 16x8 rows (depthwise_int16_avx512.cc) for a plan with Plan::int16_k3; PickK3Avx512 calls it.
K3Fn PickK3Int16Avx512(const Plan& p, int kj);

// Builds the pair rows of channel blocks [cb_begin, cb_end) of one input row (row, end: the
// input row and the input's end, of the plan's 8-bit type) into dst, entries entry_stride int16
// apart, as BuildPairRow in depthwise_int8_avx2.cc does (raw values when Plan::raw_input).
using PairRowFn = void (*)(const Plan& p, const void* row, const void* end, int32_t zp, int16_t* dst, int cb_begin,
                           int cb_end, size_t entry_stride);
// The AVX-512 builder for the 3x3 loop's rows of a plan with Plan::avx512 (one vpermt2w
// interleaves two widened columns into a 64-byte entry); nullptr for other plans.
PairRowFn PickPairRowAvx512(const Plan& p, bool uint8_input);

// The quad-row builder of a plan with Plan::quads: with vbmi (the CPU has AVX-512 VBMI), stride-2
// quads and pair quads in bands of fewer than 8 blocks take the vpermt2b groups
// (depthwise_int8_avx512.cc, QuadRowVbmi), else QuadRowK3. PickPairRowAvx512 passes the CPU's
// flag; tests compare both builders' entries.
PairRowFn QuadRowBuilder(const Plan& p, bool uint8_input, bool vbmi);

// Plan::requant16 from Plan::requant (two 8-lane groups per 16-lane group).
void BuildRequant16(Plan* p);

// Quad plans (quads, quads_kn) with requant16 and the quad rows' folded bias in place: sets
// Plan::quad_float and requant16's fscale / foffset when every channel has exact constants.
void PlanQuadFloat(Plan* p);

// AVX-512 rows of a doubled plan: folds the output zero point into requant16 (Plan::zp_folded)
// where every lane allows it, and sets Plan::floor_clamps and Plan::quad_halved (see there).
void FoldOutputZeroPoint16(Plan* p);

// The K x K quad loop (Plan::quads_kn, depthwise_int8_avx512.cc): scratch bytes per thread (a
// multiple of 64) and the run over all output rows and channels.
size_t KnScratchBytes(const Plan& p);
void RunKnAvx512(rt::ThreadPool& pool, const Plan& p, const Args& args);
// Output rows [r0, r1) of the batches * out_h rows of a quads_kn plan on the calling thread, all
// 16-channel blocks, with KnScratchBytes(p) bytes of scratch; args.input holds the input rows from
// args.in_row0 on, args.output the output rows from args.out_row0 on (RunRows).
void RunKnRows(const Plan& p, const Args& args, int64_t r0, int64_t r1, uint8_t* scratch);

}  // namespace edgeopt::kernels::dwq
