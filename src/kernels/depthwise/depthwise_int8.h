// Fast quantized DEPTHWISE_CONV_2D (int8, uint8, hybrid, 16x8; depth multiplier 1; any filter
// size, stride, dilation and padding), AVX2 (and AVX-512 VNNI for the int8/uint8 3x3 loop),
// bit-exact with ref.cc.
//
// How it computes: input rows are widened to int16 with the zero point subtracted (padding
// columns are zeros) and stored as "pair rows": entry x holds, per channel, the two int16 values
// at x and x + dilation, i.e. the inputs of two horizontally adjacent filter taps. One vpmaddwd
// of a pair-row entry with the matching pair of weights adds both taps for 8 channels, so a 3x3
// filter costs 6 multiply-adds per 8 channels and output pixel, with no shuffles in the inner
// loop. Pair rows live in a small per-thread ring (each input row is built once per thread and
// used by every output row that needs it); taps in the top/bottom padding are skipped.
// Requantization is the reference MultiplyByQuantizedMultiplier (gemmlowp rounding), vectorized
// (a shorter exact form when the accumulators are known to stay below 2^29, see RequantGroup).
// 3x3 filters with horizontal dilation 1 (stride 1 or 2, int8/uint8 outputs; variants .../3x3s1,
// .../3x3s2) have their own loop (depthwise_int8_avx2.cc, RowsQuant8K3): channels in natural
// order; pair rows of a band of 16-channel blocks in a per-thread ring sized to stay in cache,
// computed for a batch of output rows per weight load (small images: all rows at once); filter
// rows in the top/bottom padding read a padding row; per 8 channels the 6 weight vectors stay in
// registers and up to 4 output pixels are accumulated together (each pair-row entry loaded once
// for the taps of those pixels that use it) into an L1 buffer, then requantized, packed and
// stored in a second pass. When it fits, the pair rows hold raw input values (the zero point is
// folded into the bias), and in the short requantization form weights and bias are doubled so the
// results come out in the high dwords of the 64-bit products (FinishPlan).
// Stride-1 outputs 1 to 8 pixels wide (e.g. kws_dscnn's 25x5, MobileNetV2's 7x7) use instantiations
// of that loop with the width as a compile-time constant (variants .../3x3s1/w1 ... /w8).
// On CPUs with AVX-512 VNNI the same loop (driver, ring, pair rows, plan) runs AVX-512 rows
// (depthwise_int8_avx512.cc, variants .../avx512/3x3s1[/wN], .../avx512/3x3s2): 16 channels per
// zmm, vpdpwssd for the two taps of a pair, 8 pixels per step requantized straight from the
// registers; not for channel counts that leave many lanes empty (Avx512RowsPay). There the
// doubled short form also carries the output zero point in its rounding constants (zp_folded)
// and, under RELU/RELU6-like clamps, skips the ties-away adjustment (floor_clamps), and the
// stride-1 pair rows are built with one vpermt2w per entry (PickPairRowAvx512).
// Where the weights (minus their zero point) fit int8, or a sum of two int8 values (uint8), and the
// input zero point folds into the bias (Plan::quads: all int8 and nearly all uint8 models), the
// AVX-512 rows use "quad rows" instead (variants .../dp4): per channel the three bytes of a filter
// row's taps as unsigned values (int8 xor 0x80, the 128 folded into the bias), so one vpdpbusd adds
// a filter row: 3 instructions per 16 channels and pixel instead of 6 vpdpwssd, one entry per
// output pixel (stride 2 builds only the entries it uses), and a quad-row entry is derived from
// the previous one with a shift, a vpshufb and a vpternlogd. Measured before them (perf, Zen 4,
// 56x56x144): a quarter of the time went into building pair rows, and GCC kept every loaded
// pair-row entry on the stack between its two vpdpwssd. Measured (edgeopt_kernel_bench, Zen 4, CPU time, 1 thread, median of 5 alternated
// rounds): 1.08x-1.33x the AVX2 rows on MobileNetV2's layers (least on the large stride-2 and
// 112x112 layers), 1.20x on kws's 25x5x64; channel counts that leave a half-empty last 16-group
// (e.g. 40) gain nothing.
// At stride 1 from 6 output pixels wide the quad rows are "pair quads" (Plan::quad_pairs,
// variants .../dp4/pairs): an entry holds four columns, 2j - pad .. 2j - pad + 3, and serves
// pixel 2j (taps in bytes 0-2) and 2j + 1 (the taps one byte up, a second set of weight
// registers), derived from the previous entry as the stride-2 quads are (shift by 16 bits, two
// new columns). Half the entries are built, stored and loaded; the vpdpbusd count is the same.
// Measured before them (perf, Zen 4, 14x14x576): building quad rows was 28% of the layer.
// In-process A/B (Zen 4, 1 thread): MobileNetV2 int8's stride-1 layers 0.82-0.87x the time,
// the whole model 0.95x (see kPairQuadsMinWidth for narrow rows).
// On CPUs with AVX-512 VBMI, stride-2 quads and pair quads in bands of fewer than 8 blocks are
// built from 64-byte loads of four blocks' channels, one vpermt2b per block and entry putting
// the two new columns in place (depthwise_int8_avx512.cc, QuadRowVbmi; the same entries):
// whole models 0.96-0.99x the time (MobileNetV1 0.25 uint8, vww_96, face detection int8).
// Quad rows requantize in fp32 where every channel has exact constants (Plan::quad_float,
// variants .../rqfloat): 3 instructions per 16 outputs instead of 7 under RELU-like clamps, 5
// with a sign-dependent offset otherwise, the same bytes (kernels/common/float_requant.h);
// MobileNetV2 int8's depthwise layers 0.78-0.88x the time. Where every channel also has the
// form without the conversion (float_requant.h FloatBits; the bias then starts the sums so that
// their bits read as floats are exact: variants .../rqbits), 2 instructions: MobileNetV2 int8
// 0.984-0.991x the time (two interpreters in one process, invokes alternated pair by pair; the
// same form in the VNNI GEMM's output stage measured 0.996-1.002x and was left out).
// Other filters on AVX-512 VNNI (5x5 and 7x7 with widths 5-8, dilated 3x3; stride_w 1 or 2) run
// the K x K quad loop (Plan::quads_kn, depthwise_int8_avx512.cc, variants .../avx512/5x5s1/dp4,
// .../3x3s1d2/dp4), and so do layers of 4 or 8 channels at stride_w 1, several pixels per vector
// (Plan::kn_pixels, .../3x3s1/p2/dp4). Measured (kernel bench, Zen 4, 1 thread, CPU time) against
// the generic loop: 28x28x240 5x5 253 -> 87 us (float: 133 us), 112x112x8 3x3 against the AVX2
// 3x3 rows 46-54 -> 31-32 us (float: 54-58 us).
// 16x8 (int16 input and output, int8 weights, int64 bias) 3x3 filters on AVX-512 VNNI CPUs run
// the same loop with the rows of depthwise_int16_avx512.cc (Plan::int16_k3, variants
// int16x8/avx512/...): pair rows of the int16 values as they are (zero point 0), the bias in the
// int32 accumulators where |bias| + 32768 * sum|w| < 2^31 (else added in the 64-bit stage, /sra),
// the reference's 64-bit requantization per channel in vpmuldq lanes (Int16K3Group). Filters
// dilated by 2 or 4 too (/3x3s1d2, /3x3s1d4: a filter row's two pairs 4 or 8 entries apart, pair
// rows from BuildPairRow): DeepLabV3 16x8's atrous layers 0.57 -> 0.22 ms (33x33x480, d4) and
// 0.32 -> 0.11 ms (33x33x288, d2), the model from 1.07x to 1.38x faster than float. Other 16x8
// filters up to 5 rows and 3 tap pairs per row (5x5: MediaPipe's pose / hand / selfie nets) run
// the generic loop with AVX-512 rows (Plan::int16_row, variant int16x8/avx512): per 16-channel
// block the weights stay in registers and 4 pixels are accumulated at once (before: per pixel all
// blocks, the weights reloaded from L2 for every pixel): 14x14x384 5x5 0.108 -> 0.046 ms;
// pose_landmark_lite 16x8's depthwise layers 2.77 -> 2.17 ms, the model from 1.26x slower to
// 1.08x faster than its float original. Measured
// (edgeopt_op_profile, MobileNetV2 16x8, 1 thread, medians of 3 alternated runs): the 17
// depthwise layers 2.12 -> 0.80 ms against the generic loop; building pair rows is still about
// 40% of it (perf), the stride-2 layers the slowest per MAC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels {

// The factory hook for depthwise/ref.cc (see kernels/common/fast_kernel.h).
std::unique_ptr<rt::OpKernel> MakeDepthwiseQuant(const rt::KernelCreateContext& cc, RefFactory reference);

namespace dwq {

struct Geom {
  int batches = 0, in_h = 0, in_w = 0, channels = 0;
  int out_h = 0, out_w = 0;
  int k_h = 0, k_w = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = 0, pad_w = 0;
};

// Requantization constants of 8 channels (in the kernel's channel order, see Plan).
struct alignas(32) RequantGroup {
  int32_t bias[8];
  int32_t mult[8];
  int32_t left[8];
  int32_t shift[8];       // right shift e
  int32_t shift_m1[8];    // max(e - 1, 0)
  int32_t round_bit[8];   // e > 0 ? 1 : 0
  int32_t neg_adjust[8];  // e > 0 ? -1 : 0
  int32_t zp[8];
  // The shorter form (Plan::fast_requant): mult_o[2i] = mult[2i + 1]; round_e/round_o per even/odd
  // lane = 2^30 + (e > 0 ? 2^(30 + e) : 0); neg_cmp = e > 0 ? 2^(e - 1) : INT32_MIN.
  int32_t mult_o[8];
  int64_t round_e[4];
  int64_t round_o[4];
  int32_t neg_cmp[8];
};

// The same constants for 16 channels (the AVX-512 rows of the 3x3 loop): lanes 0-7 from one
// RequantGroup, 8-15 from the next.
struct alignas(64) RequantGroup16 {
  int32_t bias[16];
  int32_t mult[16];
  int32_t left[16];
  int32_t shift[16];
  int32_t shift_m1[16];
  int32_t round_bit[16];
  int32_t neg_adjust[16];
  int32_t zp[16];
  int32_t mult_o[16];
  int64_t round_e[8];
  int64_t round_o[8];
  int32_t neg_cmp[16];
  float fscale[16];   // Plan::quad_float: floor(float(acc) * fscale + foffset), output zero point included
  float foffset[16];
  float foffset_neg[16];  // Plan::quad_float_split: the offset for acc < 0
};

// One 16-channel group of a 16x8 plan in the 3x3 loop. The reference's requantization of x =
// acc + bias is the low dword of (x * m + 2^(t-1)) >> t (m: the reduced 16-bit multiplier, t:
// the total shift, both per channel): per 8 lanes one vpmuldq, the rounding added, one vpsraq.
// Where every channel has t <= 32 and m * 2^(32 - t) < 2^31 (Plan::int16_high: all but
// multipliers above 1/2), mult holds m * 2^(32 - t) instead and the result is the high dword of
// x * mult + 2^31 (it fits 31 bits: |x| < 2^31, mult < 2^31), without the shift. The int32
// accumulators start at the bias: |bias| + 32768 * sum|w| < 2^31 bounds every partial sum.
struct alignas(64) Int16K3Group {
  int32_t bias[16];
  int64_t mult_even[8];  // channels 0, 2, ..., 14 of the group
  int64_t mult_odd[8];   // channels 1, 3, ..., 15
  int64_t round_even[8], round_odd[8];  // 2^(t-1) (not with int16_high)
  int64_t shift_even[8], shift_odd[8];  // t (not with int16_high)
};

enum class OutKind { kInt8, kUInt8, kFloat, kInt16 };

// Everything fixed at Prepare. Channels are handled in blocks of 16 whose int16 pairs are stored
// either in the order vpunpck{l,h}wd produce (float and int16 outputs: the first 8 dwords hold
// channels 0-3 and 8-11, the second 4-7 and 12-15) or, when `natural` is set (int8/uint8
// outputs), in channel order (first 8 dwords: channels 0-7), so that 8-channel groups can be
// computed, requantized and stored on their own. Weights and requantization constants use the
// same order as the pair rows.
struct Plan {
  Geom g;
  bool natural = false;  // set before BuildPlan
  int c16 = 0;      // channels rounded up to 16
  int pairs_w = 0;  // ceil(k_w / 2)
  int q = 1;        // pair-row entries exist at input columns x = j * q (2 when stride_w is even)
  int ox_step = 1;  // pair-row entries between consecutive output columns (stride_w / q)
  int j_step = 2;   // pair-row entries between the filter-column pairs of one row (2 * dil_w / q)
  int row_entries = 0;
  int ring = 0;     // pair rows per thread
  std::vector<int16_t> weights;       // [k_h][pairs_w][c16] pairs (zero beyond the filter and channels)
  std::vector<RequantGroup> requant;  // c16 / 8 groups
  bool any_left_shift = false;
  bool fast_requant = false;  // no left shift and |acc + bias| < 2^29 for any input (RequantFast)
  // 3x3 loop in the short form: weights, bias and round_e/round_o doubled (FinishPlan), so the
  // requantization finds its result in the high dwords of the products (RequantFast2).
  bool doubled = false;
  // 3x3 loop: pair rows hold the raw input values (padding = input zero point) and the bias
  // -zp * sum(weights) (FinishPlan), which saves the subtraction per widened value.
  bool raw_input = false;
  // 3x3 loop with the AVX-512 VNNI rows (set before FinishPlan when the CPU has them; cleared
  // there for plans of other loops). requant16: the constants of 16-channel groups.
  bool avx512 = false;
  std::vector<RequantGroup16> requant16;
  // AVX-512 rows, doubled plans: requant16's round_e/round_o hold zp * 2^(e + 32) more and
  // neg_cmp zp * 2^e more, so the shifted result already includes the output zero point zp
  // ((h + zp * 2^e) >> e = (h >> e) + zp; set when |h + 2^(e-1) + zp * 2^e| < 2^31 for every lane).
  bool zp_folded = false;
  // zp_folded and act_min >= zp: a negative requantized value (h < 0) gives at most zp and is
  // clamped to act_min whatever its rounding, so the rows skip the ties-away adjustment.
  bool floor_clamps = false;
  // Quad plans (quads, quads_kn) with floor_clamps and every lane's right shift e >= 1: the rows
  // do not double their vpdpbusd sums (one vpaddd per 16 outputs) and requant16's round_e /
  // round_o hold half the doubled constants, shift e - 1 (FoldOutputZeroPoint16). The high dword
  // of x * m + R / 2 is floor(h / 2) for the doubled form's h = high dword of 2 x m + R (R is
  // even), and floor(floor(h / 2) / 2^(e-1)) = floor(h / 2^e): the same bits (mode kRqHalfZpFloor).
  bool quad_halved = false;
  // Quad plans (quads, quads_kn) whose every channel has exact fp32 constants for its
  // requantization (kernels/common/float_requant.h, requant16's fscale / foffset): the rows then
  // requantize with one conversion, one multiply-add and one conversion back, rounding down (mode
  // kRqFloat: 3 instructions per 16 outputs instead of 7). The quad sums plus the folded bias are
  // the reference's acc + bias = x; with a RELU-like clamp (act_min >= output zero point zp) the
  // two roundings of the reference give, for every level above zp, the single-rounding result
  // floor((x m + 2^30 + 2^(30+e) + zp 2^(31+e)) / 2^(31+e)) (ties only differ below zp), which is
  // the form float_requant matches.
  bool quad_float = false;
  // quad_float for layers whose clamp keeps values below the zero point (no activation,
  // RELU_N1_TO_1): there the reference's ties go away from zero, so the offset depends on the sign
  // of x: foffset for x >= 0, foffset_neg for x < 0 (mode kRqFloatSplit: one more compare and
  // blend, 5 instructions per 16 outputs; float_requant.h's FloatRequantConstantsSplit).
  bool quad_float_split = false;
  // quad_float (not split) where every channel also has the bits form of its constants
  // (float_requant.h FloatBits): requant16's bias starts the accumulators kFloatBitsBase + M_d
  // higher, so that their bits read as floats are M_d + x exactly, and foffset holds c_bits: the
  // rows skip the conversion to float (mode kRqFloatBits: 2 instructions per 16 outputs).
  bool quad_float_bits = false;
  // int8 outputs stored XOR 0x80 (the uint8 domain the VNNI GEMM reads A in): set by a fused chain
  // whose own plan feeds its projection (kernels/fused/dw_chain_int8.cc), which then reads the
  // band in place instead of flipping a copy. Only the AVX-512 row stores honour it (Plan::avx512
  // 3x3 rows, the K x K quad loop).
  bool flip_output = false;
  // AVX-512 rows with vpdpbusd (depthwise_int8_avx512.cc, variants .../avx512/3x3s1/dp4 ...): the
  // ring holds "quad rows" instead of pair rows: entry ox of a 16-channel block holds, per channel,
  // the three unsigned bytes of the filter row's taps of output pixel ox (int8 inputs xor 0x80,
  // i.e. + 128) and a zero byte, so one vpdpbusd with quad_weights adds a whole filter row (3
  // instructions per 16 channels and pixel, half the vpdpwssd count of the pair rows). Set by
  // FinishPlan when the weights (minus their zero point) fit int8 and the bias with
  // -quad_zp * sum(weights) folded in stays below 2^29; then row_entries = out_w, requant16's bias
  // is that folded bias (not doubled: the rows double the sums in the doubled forms).
  bool quads = false;
  int32_t quad_zp = 0;                // unsigned input zero point: zp (+ 128 for int8); padding value
  // [k_h filter rows][groups][c16][4]: per filter row the taps in groups of 4 (groups = ceil(k_w / 4),
  // 1 in the 3x3 loop: taps 0, 1, 2 and a zero), zeros past the filter's width.
  std::vector<int8_t> quad_weights;
  // uint8 weights whose w - zw leaves int8 (zero points far from 128): per tap w - zw = a + r with
  // a = clamp(w - zw, -128, 127) in quad_weights and the rest r (|r| <= 127; only w - zw = 255,
  // i.e. w = 255 with zw = 0, has no such split: no quads then) in quad_rest, same layout. The
  // 16-channel groups with some r != 0 (quad_split[group]) add a second vpdpbusd per filter row
  // on the same quad-row entry (6 per pixel); the others keep 3. Empty when no group needs it.
  std::vector<int8_t> quad_rest;
  std::vector<uint8_t> quad_split;  // per 16-channel group
  // Stride-1 quad rows as "pair quads" (FinishPlan, 3x3 loop at stride_w 1): entry j holds the
  // four columns 2j - pad .. 2j - pad + 3 per channel, read by output pixels 2j (taps in bytes
  // 0-2: quad_weights) and 2j + 1 (bytes 1-3: quad_weights_b, the same taps one byte up; with
  // split weights quad_rest_b likewise), so a row has (out_w + 1) / 2 entries, half as many to
  // build, store and load.
  // Taken for outputs kPairQuadsMinWidth or more pixels wide (variants .../dp4/pairs).
  bool quad_pairs = false;
  std::vector<int8_t> quad_weights_b, quad_rest_b;
  // The K x K quad loop (depthwise_int8_avx512.cc, RunKnAvx512; variants .../avx512/5x5s1/dp4 ...):
  // 5 or 7 filter rows of 5 to 8 taps, and 3x3 filters with horizontal dilation (the 3x3 loop's
  // other case); stride_w 1 or 2, any dilation; on AVX-512 VNNI, where the quad weights fit int8
  // without a rest. One 16-channel block at a time, each input row becomes a quad row (a ring of
  // the filter's rows per thread): entry j holds, per channel (dword), the unsigned bytes of input
  // columns j * stride_w - pad_w + t * dil_w (t = 0..3), so a filter row of output pixel ox costs
  // kn_groups vpdpbusd, on entries ox + (4 * dil_w / stride_w) * group. Up to 8 pixels per step,
  // the requantization of the 3x3 quad rows (Requant16 forms, folded bias).
  bool quads_kn = false;
  int kn_groups = 0;
  // Packed K x K plans (set before FinishPlan): a layer of C = 16 / kn_pixels channels (4 or 8),
  // stride_w 1, planned as 16 channels whose channel l is the real channel l % C (g.channels =
  // 16; weights, bias and multipliers repeated), so that one 16-lane vector holds kn_pixels
  // neighbouring output pixels: NHWC puts their C channels next to each other, and the taps of
  // those pixels are 16 consecutive input bytes. 1: not packed.
  int kn_pixels = 1;
  std::string kn_name;  // its variant, e.g. "avx512/5x5s1/dp4" (also a dilated int16_k3 plan's)
  int32_t act_min = 0, act_max = 0;
  OutKind kind = OutKind::kInt8;
  // Hybrid: out = float(acc) * (weight_scale[c] * batch_scale[b]) + bias[c].
  std::vector<float> weight_scale;  // natural channel order
  float fact_min = 0, fact_max = 0;
  // 16x8: reference 64-bit requantization per element.
  std::vector<int32_t> mult16;
  std::vector<int> shift16;
  // 16x8 on AVX-512: the reference's 64-bit requantization per channel (MultiplyByQuantizedMultiplier
  // with an int64 input: x · reduced multiplier + 2^(total shift - 1), >> total shift), its
  // constants padded to whole 16-channel groups; null stage: the scalar loop.
  std::vector<int64_t> rq16_mult, rq16_round, rq16_shift;
  void (*int16_stage)(const struct Plan& p, const int32_t* acc, const int64_t* bias, int cb, int n,
                      int16_t* out) = nullptr;
  // 16x8 generic loop on AVX-512 (PickInt16RowAvx512): one output row from the pair rows of its
  // filter rows (null: padding), the int64 bias (null: none); null: the AVX2 rows.
  void (*int16_row)(const struct Plan& p, const int16_t* const* rows, const int64_t* bias, int16_t* out) = nullptr;
  // 16x8 through the AVX-512 3x3 loop (depthwise_int16_avx512.cc; set by PlanInt16K3, natural
  // order, Plan::avx512 set): per 16-channel group the bias and the multipliers of its even and
  // odd channels (see Int16K3Group). Empty: the generic loop with int16_stage.
  std::vector<Int16K3Group> int16_k3;
  bool int16_high = false;  // Int16K3Group's high-dword form
};

// Pair quads (Plan::quad_pairs) from this output width: a row of pair quads has two edge entries
// (built from widened columns) of (out_w + 1) / 2, so narrow rows gain little. Measured (in-process
// A/B, Zen 4, 1 thread, single int8 layers): 12 rows x 5 x 256 1.00-1.02x the time of the
// 3-column quads, kws's 25 x 5 x 64 1.08x; widths 6 / 7 / 8 / 10 / 12 (x 256) 0.92 / 0.95 /
// 0.89 / 0.84 / 0.80x; MobileNetV2's 14x14 to 112x112 layers 0.82-0.87x.
constexpr int kPairQuadsMinWidth = 6;

// The layer's channels: g.channels, or for a packed plan (planned as 16 channels) 16 / kn_pixels.
inline int LayerChannels(const Plan& p) { return p.kn_pixels > 1 ? 16 / p.kn_pixels : p.g.channels; }

// Builds everything but the requantization constants from the geometry and the weights
// (w - weight_zero_point, [k_h][k_w][channels] as in the filter tensor).
template <typename W>
void BuildPlan(const Geom& g, const W* weights, int32_t weight_zero_point, Plan* plan);
// Fills plan->requant from per-channel (or single) multipliers and shifts.
void BuildRequant(const Plan& p, const int32_t* bias, const std::vector<int32_t>& multiplier,
                  const std::vector<int>& shift, int32_t output_zero_point, Plan* plan);

// An int8 / uint8 layer's weights and requantization, as DEPTHWISE_CONV_2D reads them.
struct Quant8Layer {
  const int8_t* weights_i8 = nullptr;   // int8 weights (zero point 0), or
  const uint8_t* weights_u8 = nullptr;  // uint8 weights with weight_zero_point
  int32_t weight_zero_point = 0;
  const int32_t* bias = nullptr;        // or null
  std::vector<int32_t> multiplier;      // one, or one per channel
  std::vector<int> shift;               // likewise, each at most 30
  int32_t input_zero_point = 0, output_zero_point = 0;
  int32_t act_min = 0, act_max = 0;
};
// Fills l from an int8 / uint8 DEPTHWISE_CONV_2D's tensors (filter [1][k_h][k_w][channels]) as its
// fast path reads them: uint8 weights the legacy per-tensor multiplier, int8 one per channel, the
// fused activation's range, the bias and zero points. False when a shift exceeds 30, which the
// loops' requantization does not take.
Expected<bool> Quant8LayerOf(rt::KernelContext& ctx, const rt::RtTensor& input, const rt::RtTensor& filter,
                             const rt::RtTensor* bias, const rt::RtTensor& output, int activation, int channels,
                             Quant8Layer* l);
// The plan of an int8 / uint8 layer (filter [1][k_h][k_w][g.channels]) that DEPTHWISE_CONV_2D's
// fast path and the fused int8 chains run: for 4 or 8 channels at stride_w 1 on AVX-512 the
// packed K x K quad loop where it takes the layer (Plan::kn_pixels), else BuildPlan, BuildRequant
// and FinishPlan in natural channel order (avx512: the CPU has AVX-512 VNNI).
void PlanQuant8(const Geom& g, const Quant8Layer& layer, bool avx512, Plan* plan);

// Per-thread scratch Run needs (rt::ThreadPool::ReserveSlotScratch: a ring per thread).
size_t SlotBytes(const Plan& p);

struct Args {
  const void* input = nullptr;    // int8 / uint8 / int16 (16x8) / int8 quantized (hybrid)
  int64_t input_elements = 0;
  int32_t input_zero_point = 0;
  const int32_t* batch_zero_point = nullptr;  // hybrid: per batch
  const float* batch_scale = nullptr;         // hybrid
  const float* float_bias = nullptr;          // hybrid
  const int64_t* bias64 = nullptr;            // 16x8
  void* output = nullptr;
  // RunRows on a band of rows (a fused chain's buffers): args.input holds the input rows from
  // in_row0 on (of the batches * in_h rows) and args.output the output rows from out_row0 on.
  int64_t in_row0 = 0, out_row0 = 0;
};

// Last step after BuildRequant (int8/uint8 outputs): plans of the 3x3 loop switch to raw_input
// (when the folded bias fits) and, in the short requantization form, to `doubled`; `avx512`
// stays set only where Avx512RowsPay, and then they get requant16.
void FinishPlan(Plan* plan, int32_t input_zero_point);

// The instruction set and loop Run uses for the plan's rows: "avx2/3x3s1" / "avx2/3x3s2"
// (int8/uint8 3x3 dilation-1 loop, every row, 8 channels x 4 pixels per step; narrow stride-1
// widths "avx2/3x3s1/wN"), "avx512/3x3s1[/wN]" / "avx512/3x3s2" (the same loop with AVX-512
// VNNI rows, 16 channels x up to 8 pixels per step) or "avx2/generic".
const char* LoopName(const Plan& plan);

// Whether the AVX-512 rows pay for a 3x3 plan of `channels` channels: not when more than a
// quarter of the 16-lane groups' lanes would be empty (measured: 48x48x8 ran 1.5x slower than
// the AVX2 rows' 8-channel groups, 13x7x40 the same; exactly a quarter pays: SSD MobileNet's
// 150x150x24 uint8 layer made the whole model 0.97x in A/B runs).
bool Avx512RowsPay(int channels);

// 16x8 output stage on AVX-512 (depthwise_int8_avx512.cc): channels [cb, cb + n) (n <= 16) from
// their int32 sums acc[0..n) plus the int64 bias (null: none), the reference's bits.
void Int16StageAvx512(const Plan& p, const int32_t* acc, const int64_t* bias, int cb, int n, int16_t* out);
// Fills the plan's rq16_* constants and picks the AVX-512 stage when every channel's total shift
// is in 1..63 (the reference's range); avx512: the CPU has AVX-512.
void PlanInt16Stage(Plan* plan, bool avx512);
// The generic loop's int16 rows on AVX-512 for the plan (k_h <= 5, pairs_w <= 3; depthwise_int16_avx512.cc):
// per 16-channel block the filter's weight vectors stay in registers and 4 output pixels are
// accumulated at once (vpdpwssd), then requantized as Int16StageAvx512 does; null otherwise.
using Int16RowFn = void (*)(const Plan& p, const int16_t* const* rows, const int64_t* bias, int16_t* out);
Int16RowFn PickInt16RowAvx512(const Plan& plan);

// 16x8 plans: fills Plan::int16_k3 from mult16 / shift16, the int64 bias (null: none) and the
// weights of a natural-order 3x3 plan, and sets Plan::avx512; false (and nothing set) when a
// channel's constants are outside the bounds Int16K3Group needs. Dilated filters too when their
// pair-row step (Plan::j_step) is one the rows are instantiated for (Int16K3Step).
bool PlanInt16K3(Plan* plan, const int64_t* bias);
inline bool Int16K3Step(int j_step) { return j_step == 1 || j_step == 2 || j_step == 4 || j_step == 8; }

// AVX2 (depthwise_int8_avx2.cc).
void Run(rt::ThreadPool& pool, const Plan& plan, const Args& args, bool uint8_input, bool int16_input);

// Whether RunRows takes the plan: the 3x3 loop or the K x K quad loop (Plan::quads_kn), with
// int8 / uint8 outputs.
bool RowsApply(const Plan& plan);
// Output rows [r0, r1) of the batches * out_h rows on the calling thread, as Run computes them
// (same loop and ring; the same bits), with SlotBytes(plan) bytes of scratch. The input rows the
// band reads (and only those) must be in args.input from args.in_row0 on.
void RunRows(const Plan& plan, const Args& args, bool uint8_input, int64_t r0, int64_t r1, uint8_t* scratch);

}  // namespace dwq
}  // namespace edgeopt::kernels
