// int8 / uint8 GEMM with AVX-512 VNNI (vpdpbusd: 64 u8 x s8 multiply-adds per instruction into
// 16 int32 lanes) for CONV_2D and FULLY_CONNECTED, chosen at prepare time when the CPU has
// avx512f+bw+vl+vnni (rt::CpuFeatures::has_avx512_vnni); the int16 GEMM of qgemm.h stays for
// other CPUs and for 16x8 / hybrid.
//
// Operands (exact, no saturation: vpdpbusd sums u8 x s8 products into int32 without clamping):
// - A (activations) as uint8 `a_u`: int8 inputs with the sign bit flipped (a + 128), uint8 inputs
//   as they are. `z_u` is the input zero point in that domain (int8: zp + 128).
// - B (weights) as int8 `w - b_offset`: b_offset = the weight zero point when every w - zp fits
//   int8 (always for symmetric int8 weights), else 0 (int8) or 128 (uint8); then
//   f = b_offset - zp is not 0. Exception, the split form: when only a few k groups of a panel
//   hold a w - zp outside int8 (asymmetric uint8 weights: the values at the ends of the range),
//   b_offset = zp (f = 0) and the panel holds clamp(w - zp, -128, 127); the remainder
//   (w - zp - clamp(...), in [-127, 127] for w - zp in [-255, 254]) of those groups is kept in
//   extra 64-byte groups that the micro-kernel multiplies after the panel's K4 groups.
// - The accumulator the reference computes is
//     sum_k (a_u - z_u)(w - zp) = sum_k a_u B - z_u sum_k B - f K z_u + f sum_k a_u
//   i.e. the vpdpbusd sum plus a per-channel constant (VnniColumnTerms, the accumulators' start
//   value) plus f times the row sum of A (computed after packing A, only when f != 0). Padding
//   taps of a convolution hold z_u, so they add nothing, as in the reference. All of it wraps
//   modulo 2^32 like the int16 GEMM, so the int32 accumulators are the same and the output stage
//   (Requant8, ruy rounding: general, folded-bias or half-range form) gives the same bits.
// - B is packed once: panels of 16 output channels, k in groups of 4:
//   panel[k/4][channel 0..15][k%4] int8 (one zmm per k group), zero beyond N and K.
// - A rows are packed per chunk as uint8 rows of K4 * 4 bytes (zero beyond K).
// - The micro-kernel (qgemm_avx512vnni.cc) computes R rows x NV panels (R x 16 NV outputs, up
//   to 24 zmm accumulators) and requantizes and stores them itself (16 lanes per instruction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/common/float_requant.h"
#include "kernels/gemm_int8/qgemm.h"

namespace edgeopt::kernels::qgemm {

// Weights [N][K] packed for vpdpbusd.
constexpr int kPairMaxN = 24;  // the widest B the pair tiles take (three vectors of 8 columns)

struct PackedB8 {
  int K = 0, N = 0;
  int K4 = 0;      // k groups of 4: ceil(K / 4)
  int panels = 0;  // ceil(N / 16)
  int32_t b_offset = 0;  // packed value = w - b_offset
  int32_t f = 0;         // b_offset - weight zero point (0: no row sums needed)
  AlignedArray<int8_t> data;
  std::vector<int32_t> col_sum;  // [panels * 16]: sum over k of the packed values (0 beyond N)
  std::vector<int64_t> abs_sum;  // [N]: sum over k of |w - zero point| (bounds the accumulators)
  std::vector<int32_t> packed_koff;  // [K4]: 4 g, where k group g lies in a packed A row (VnniChunk)
  // Split form (see the header comment; empty otherwise): panel p's remainder groups are
  // [extra_begin[p], extra_begin[p + 1]), group e multiplies k group extra_group[e] of A by the 64
  // bytes at extra + 64 e (16 channels x 4 k, as a panel's group). col_sum includes them.
  std::vector<int32_t> extra_begin;  // [panels + 1]
  std::vector<int32_t> extra_group;
  AlignedArray<int8_t> extra;
  // N <= kPairMaxN, K4 even, no split form: the panels again in k-group pairs, for the AVX-512
  // VNNI pair tiles (VnniChunk): pair p is ceil(N / 8) vectors of 64 bytes, vector v holding
  // columns 8v..8v+7, column j's dword lanes 2 (j % 8) and 2 (j % 8) + 1 its groups 2p and
  // 2p + 1 (zeros past N). Empty otherwise.
  AlignedArray<int8_t> pairs;

  const int8_t* panel(int p) const { return data.get() + static_cast<size_t>(p) * K4 * 64; }
  bool split() const { return !extra_begin.empty(); }
  size_t bytes() const { return data.size + extra.size + pairs.size; }
};

// Whether every weight minus the zero point lies in int8: then PackWeightsVnni packs them as
// they are (f == 0, no split form).
bool WeightsFitInt8(const int8_t* w, int64_t count, int32_t zero_point);
bool WeightsFitInt8(const uint8_t* w, int64_t count, int32_t zero_point);

// Packs int8 or uint8 weights with one zero point for all channels (empty: 0).
void PackWeightsVnni(const int8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB8* out);
void PackWeightsVnni(const uint8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB8* out);

// Packs a matrix that changes at every invoke (BATCH_MATMUL's int8 rhs) as PackWeightsVnni
// would, vectorized and without the split form: w - zp fits int8 (f == 0) or the row-sum form
// (b_offset 0). w is [N][K] (k_major false) or [K][N] (true: no transposed copy needed). Reuses
// out's storage when its size matches. AVX-512 VNNI CPUs only.
void PackRhsVnni(const int8_t* w, bool k_major, int N, int K, int32_t zp, PackedB8* out);

// Variant suffix naming how the weights' zero point is handled: "/wsplit" (split form),
// "/rowsum" (f != 0), "" (w - zp fits int8).
const char* WeightFormSuffix(const PackedB8& b);

// Output-stage constants of 16 consecutive output channels, 16 lanes (built from a Requant8),
// plus the accumulators' start value.
struct alignas(64) RequantPanel16 {
  int32_t init[16];     // per-channel column term of the accumulators (see the header comment)
  int32_t bias[16];     // 0 when the bias is folded (Requant8::bias_folded)
  int32_t left[16];
  int32_t mult[16];     // even channels' multipliers in the even lanes (vpmuldq reads lanes 0, 2, ...)
  int32_t mult_o[16];   // odd channels' multipliers moved to the even lanes
  int32_t zp_adj[16];
  int32_t rshift[16];   // half-range form
  int64_t round_e[8], round_o[8];
  int64_t shift_e[8], shift_o[8];
  int64_t high_e[8], high_o[8];  // high-dword form: bias * m + rounding + zero point * 2^(31 + r)
  int32_t high_shift[16];        // high-dword form: r - 1
  int32_t rmask[16];             // two-round form: 2^r - 1
  int32_t rhalf[16];             // two-round form: 2^(r - 1) - 1 (0 for r = 0)
  float fscale[16];              // float forms: s (FloatStageConstants), s_hi in kFloat2
  float foffset[16];             // float forms: c
  float fscale_lo[16];           // kFloat2: s_lo (0 for channels of the one-multiply-add form)
};

// Requantization forms of the micro-kernel's output stage.
enum class VnniStage {
  kGeneral,  // Requant8's general / folded-bias form (RequantGroup)
  kHalf,     // Requant8::half_range
  // High-dword form: with no left shift, a right shift r >= 1 and a bound on the accumulators,
  //   y = acc * m + (bias * m + 2^30 + 2^(30 + r) + zero_point * 2^(31 + r))
  // is computed exactly in signed 64 bits when the bound proves -2^63 <= y < 2^63 (HighStageFits).
  // ruy's result plus the output zero point is floor(y / 2^(31 + r)) (the 2^62 offset of the
  // other forms is not needed: that identity holds for negative y too, and a multiple of
  // 2^(31 + r) added to y adds exactly zero_point to the quotient). The high dword of y read as
  // int32 is floor(y / 2^32) for any y in that range, and an arithmetic shift by r - 1 finishes:
  // floor(floor(y / 2^32) / 2^(r - 1)) = floor(y / 2^(31 + r)). So per 16 outputs: two vpmuldq,
  // one shuffle, two 64-bit adds, one merging shuffle, one vpsravd; no doubling (half range) and
  // no separate zero-point add.
  kHigh,
  // TFLite's reference rounding of DEPTHWISE_CONV_2D (gemmlowp's, two roundings): v =
  // SaturatingRoundingDoublingHighMul((acc + bias) << l, m) = floor(((acc + bias) << l) * m + 2^30)
  // / 2^31) (for every product, m > 0), then RoundingDivideByPOT(v, r): v / 2^r rounded half away
  // from zero, plus the zero point. For a one-channel depthwise op run as a convolution
  // (BuildVnniOutput's two_round): convolutions round once (ruy), and the two differ on ties.
  kTwoRound,
  // The high-dword form's results computed in fp32: y = floor(float(acc) * s + c) with per-channel
  // float constants s ~ m / 2^(31 + r) and c ~ C / 2^(31 + r), the multiply-add and the
  // conversion back rounding down (embedded {rd-sae}): 3 instructions per 16 outputs instead of
  // 7, none on the shift / shuffle port. Exact, not approximate: floor(RD(z)) = floor(z) for the
  // exact z = acc * s + c, and s, c are chosen per channel so that floor(acc * s + c) crosses
  // every output level at the same accumulator as the high-dword form, over the channel's whole
  // accumulator range (FloatStageConstants); used only when every channel has such a pair.
  kFloat,
  // The same where some channel's s needs more than a float's 24 bits (projections with right
  // shifts 9-12, classifier heads): y = floor(float(acc) * s_hi + RN(float(acc) * s_lo + c)),
  // s_hi + s_lo being m / 2^(31 + r) exactly (float_requant.h FloatRequantConstants2); 4
  // instructions and a register copy per 16 outputs instead of 7, the high-dword form's.
  kFloat2,
};

// How the requantized int32 values become bytes: saturating down-conversions (vpmovsdb,
// vpmovusdb) make clamps that the activation range does not narrow unnecessary.
enum class VnniStore {
  kClamp,   // max(act_min), min(act_max), truncate (vpmovdb): any range
  kSat,     // signed saturation only: act_min <= -128 and act_max >= 127 (int8, no narrowing)
  kLoSat,   // max(act_min), signed saturation: act_max == 127 (values then lie in [act_min, 127])
  kLoUSat,  // max(act_min), unsigned saturation: act_min >= 0 and act_max == 255 (uint8)
  kClampU,  // kClamp for uint8 outputs (act_max > 127): rows of 2-4 panels pack without sign
};

struct VnniOutput {
  std::vector<RequantPanel16> panels;
  VnniStage stage = VnniStage::kGeneral;
  VnniStore store = VnniStore::kClamp;
  int32_t act_min = -128, act_max = 127;
};

// Whether the high-dword form (VnniStage::kHigh) is exact for channel `ch` of a Requant8 with
// this output zero point: a known accumulator bound B with B + |bias| < 2^31 (acc + bias does
// not wrap in int32, as in ruy), no left shift, 1 <= r <= 31, m >= 0, and both
// -B * m + C and B * m + C (C the constant above) inside [-2^63, 2^63).
bool HighStageFits(const Requant8::Channel& ch, int32_t output_zero_point);

// The float forms' constants of one channel: y = floor(a' * s + RN(a' * s_lo + c)) (s_lo = 0: the
// one-multiply-add form, kFloat) on the accumulator a' = a + shift (the shift added to the
// accumulators' start value, RequantPanel16::init).
struct FloatStageChannel {
  float s = 0.f, s_lo = 0.f, c = 0.f;
  int32_t shift = 0;
};
// VnniStage::kFloat: constants such that floor(a' * s + c) clamped to [lo, hi] equals the
// high-dword form's clamped result for every accumulator |a| <= acc_bound (proved at build time:
// kernels/common/float_requant.h), first with shift 0, else with the shift that leaves c in [0, s)
// (so that a float holds c finely enough); false when the channel does not fit the high-dword form
// or float_requant's limits, or no such pair was found. FloatStage2Constants: the same for
// kFloat2 (FloatRequantConstants2, shifted).
constexpr int64_t kFloatStageMaxBound = kFloatRequantMaxBound;
bool FloatStageConstants(const Requant8::Channel& ch, int32_t output_zero_point, int32_t lo, int32_t hi,
                         FloatStageChannel* f);
bool FloatStage2Constants(const Requant8::Channel& ch, int32_t output_zero_point, int32_t lo, int32_t hi,
                          FloatStageChannel* f);

// The store mode for an activation range (the cheapest VnniStore that is exact for it).
VnniStore StoreFor(int32_t act_min, int32_t act_max);

// The output stage of `q` in 16-lane form, with the column terms for input zero point z_u
// (already in the uint8 domain) of weights `b`: the high-dword form when every channel fits it
// or has an accumulator bound of 0 (weights all at the zero point: its output is a constant,
// stored as C = output * 2^32 with shift 0) - as its fp32 form (VnniStage::kFloat) when every
// channel moreover has exact float constants (FloatStageConstants), or as the two-multiply-add
// form (kFloat2) when every channel has those or FloatStage2Constants' - else Requant8's own form.
// two_round: VnniStage::kTwoRound whatever the accumulators' bounds (always clamped stores).
// allow_float false keeps the high-dword form where the float form would apply (tests).
void BuildVnniOutput(const PackedB8& b, const Requant8& q, int32_t z_u, VnniOutput* out, bool two_round = false,
                     bool allow_float = true);

// Fills rows [row0, row0 + rows) of A into dst: uint8 rows lda bytes apart holding K values,
// zeros from K up to lda.
class APacker8 {
 public:
  virtual ~APacker8() = default;
  virtual void Pack(int64_t row0, int rows, uint8_t* dst, int64_t lda) const = 0;
  // Row row0 of A in memory when the rows already have the packed layout (lda bytes apart, no
  // bytes past K), so that nothing needs to be packed; null otherwise.
  virtual const uint8_t* InPlace(int64_t /*row0*/, int64_t /*lda*/) const { return nullptr; }
};

// Per-thread scratch bytes RunGemmVnni needs with `threads` threads (the pool's slot scratch,
// reserved in Prepare: rt::ThreadPool::ReserveSlotScratch).
size_t GemmVnniSlotBytes(const PackedB8& b, int64_t M, int threads);

// int8 / uint8 C (row stride ldc) = requantize(A x B) for M rows; same task split as RunGemm.
void RunGemmVnni(rt::ThreadPool& pool, int64_t M, const PackedB8& b, const APacker8& pack, const VnniOutput& out,
                 void* c, int64_t ldc);

// ---- AVX-512 VNNI entry points (qgemm_avx512vnni.cc) ----

// Rows [0, rows) of A times panels [p0, p1) of B, requantized into C (c points at row 0 /
// column 0 of the chunk; ldc bytes between rows). Row r's k group g (4 bytes) is read at
// a + r * lda + koff[g]: koff[g] = 4 g for packed rows (PackedB8::packed_koff), other tables
// read a convolution's windows in place. row_term: f * row sum per A row, or null.
// With PackedB8::pairs and k groups 2p, 2p + 1 adjacent in A (koff), one 8-byte broadcast per
// row feeds a vpdpbusd per 8 columns (8 k each) instead of one per 16 columns and 4 k.
// groups > 1: the same for `groups` chunks of `rows` rows, chunk g at a + g * a_group and c +
// g * c_group (its row terms at row_term + g * rows), with the tiles chosen once for all (a
// convolution's output rows read in place: one call per thread's share of them).
void VnniChunk(const uint8_t* a, int64_t lda, const int32_t* koff, int rows, const PackedB8& b, int p0, int p1,
               const VnniOutput& out, const int32_t* row_term, uint8_t* c, int64_t ldc, int groups = 1,
               int64_t a_group = 0, int64_t c_group = 0);
// PackRhsVnni's vector parts: the smallest and largest of n int8 values; the panels of w (as
// described there) with packed value w - out->b_offset, col_sum and abs_sum (out's sizes set).
void MinMaxInt8(const int8_t* w, int64_t n, int32_t* lo, int32_t* hi);
void PackRhsPanels(const int8_t* w, bool k_major, int32_t zp, PackedB8* out);
// Whether VnniChunk runs b's pair tiles for A rows read through koff (kernels name it "/pairs").
bool PairTilesApply(const PackedB8& b, const int32_t* koff);

// One-output-channel convolutions (N = 1) whose windows are read in place: a tile of the
// micro-kernel would fill 1 of its 16 lanes. Instead each output pixel's filter rows are dot
// products of whole window rows (kw * C bytes, 64 a vpdpbusd) with the weights in the same byte
// order, 16 pixels are reduced across lanes at once, and the output stage runs on 16 pixels.
struct VnniSingle {
  int k_h = 0;
  int blocks = 0;                 // 64-byte blocks per window row
  int64_t ky_stride = 0;          // bytes between a window's rows in the padded image
  std::vector<uint64_t> masks;    // [blocks]: the bytes of each block inside the window row
  AlignedArray<int8_t> w;         // [k_h][blocks][64]: weights minus their zero point, zeros past the row
  RequantPanel16 q;               // channel 0's output constants in every lane
};
// Fills `s` for filter [1][k_h][k_w][C] (weights minus zero point `zp` must fit int8), windows
// whose rows lie ky_stride bytes apart, and output `out` (built for the op's N = 1 weights).
void BuildVnniSingle(const int8_t* w, const uint8_t* wu, int32_t zp, int k_h, int k_w, int C, int64_t ky_stride,
                     const VnniOutput& out, VnniSingle* s);
// `pixels` output pixels whose windows start pixel_stride bytes apart from a, into c[0..pixels).
void VnniSingleRow(const uint8_t* a, int64_t pixel_stride, int pixels, const VnniSingle& s, const VnniOutput& out,
                   uint8_t* c);

// Convolutions of few input channels (stems: C not a multiple of 4, windows of 16 neighbouring
// pixels within 128 bytes of a padded image row) and at most 8 output channels, windows read
// in place ("/lanes"). The tiles above put 16 output channels in the lanes: with N = 8 half of
// every vpdpbusd and output stage is idle. Here the 16 lanes are 16 output pixels: per filter
// row, one vpermi2b gathers every pixel's k group j (4 bytes) from the 128 bytes its windows
// span, and one vpdpbusd per output channel multiplies it by that channel's 4 weights (a
// broadcast memory operand); channels in quads of 4 (1 or 2). The output stage runs per channel
// on 16 pixels (the channel's constants in every lane), two saturating packs give, per 128-bit
// lane k, pixels 4k..4k+3 of four channels, and one vpermi2b per pixel quad transposes them
// into 4 N pixel-major bytes. Same sums and output stage as the tiles: the bytes equal theirs.
// (Measured against the tiles for 16 and 32 channels, kernel bench, Zen 5: even at N = 16
// (ResNet-8's stem), 1.6x slower at N = 32 (MobileNetV2's): the tiles' vpdpbusd count is the
// same there, and the per-channel output stage costs more than the broadcasts it saves.)
struct VnniLanes {
  int N = 0;             // output channels (1..8), computed in whole quads: q.size() = 4 or 8
  int pixel_stride = 0;  // bytes between neighbouring windows (stride_w * C)
  // One step per k group j of filter row ky (groups = ceil(k_w * C / 4) per row, steps =
  // row_off.size() = k_h * groups): the window row's offset from the first window's start
  // (ky * ky_stride) and the vpermi2b index of its bytes (byte 4p + t = p * pixel_stride + 4 j + t).
  std::vector<int64_t> row_off;  // [steps]
  AlignedArray<int8_t> idx;      // [steps][64]
  AlignedArray<int32_t> w;       // [steps][q.size()]: each computed channel's 4 weight bytes (0 past N)
  AlignedArray<int8_t> out_idx;  // [4][64]: pixel quad k's bytes from the packed channels
  std::vector<RequantPanel16> q;  // [4 or 8]: channel n's output constants in every lane
  // The weights are stored minus b_offset (their zero point when every w - zp fits int8, else
  // 128 for uint8) and f = b_offset - zp: the reference's sum over the window is then
  //   sum (a_u - z_u)(w - zp) = sum a_u (w - b_offset) + f sum a_u - z_u sum (w - zp),
  // the last term being the output constants' init (the same for every form of PackedB8). For
  // f != 0 the window sums of 16 pixels come from one more vpdpbusd per step, with `ones` (1 for
  // the step's bytes inside the filter row, 0 for the next pixels' bytes past it).
  int32_t f = 0;
  AlignedArray<int32_t> ones;  // [steps]
};
constexpr int kLanesMaxN = 8;
// Bytes past a padded image's end that VnniLanesRows may read (its loads are 128 bytes).
constexpr int kLanesSlack = 128;
// Whether 16 neighbouring windows of a k_w x C filter row at stride_w span at most 128 bytes.
bool VnniLanesFit(int k_w, int C, int stride_w);
// Fills `s` for filter [N][k_h][k_w][C] (N <= kLanesMaxN; int8 `w` or uint8 `wu` with zero
// point `zp`), windows whose rows lie ky_stride bytes apart, and output `out` (built for these
// weights, in any PackedB8 form).
void BuildVnniLanes(const int8_t* w, const uint8_t* wu, int32_t zp, int N, int k_h, int k_w, int C, int stride_w,
                    int64_t ky_stride, const VnniOutput& out, VnniLanes* s);
// `rows` output rows of `pixels` pixels: row r's windows start at a + r * a_row, its outputs at
// c + r * c_row (N bytes per pixel). Needs AVX-512 VBMI besides VNNI.
void VnniLanesRows(const uint8_t* a, int64_t a_row, int rows, int pixels, const VnniLanes& s, const VnniOutput& out,
                   uint8_t* c, int64_t c_row);

// Sum of n (a multiple of 64) bytes.
int32_t RowSumU8(const uint8_t* p, int64_t n);

// dst[i] = src[i] ^ flip for i < n (flip 0x80 turns int8 into the uint8 domain, 0 copies).
void CopyFlip(const uint8_t* src, int64_t n, uint8_t flip, uint8_t* dst);

// A zero-padded uint8 image of NHWC input bytes (int8 flipped into the uint8 domain by flip =
// 0x80; uint8: flip 0): `batches` images of ph x pw pixels of C bytes, the input's in_h x in_w
// pixels at row pad_h and column pad_w, every other byte `border` (the zero point z_u).
struct PaddedImage8 {
  const uint8_t* in = nullptr;
  int in_h = 0, in_w = 0, C = 0, pad_h = 0, pad_w = 0, ph = 0, pw = 0;
  uint8_t flip = 0, border = 0;
};
// Writes rows [r0, r1) of the batches * ph rows of `img` (nothing outside them: threads may
// fill neighbouring rows at once).
void FillPaddedImage8(const PaddedImage8& f, int64_t r0, int64_t r1, uint8_t* img);

}  // namespace edgeopt::kernels::qgemm

namespace edgeopt::kernels::qgemm {

// A rows that are contiguous runs of `depth` input values (FULLY_CONNECTED rows, pointwise
// CONV_2D pixels): flip 0x80 for int8 inputs, 0 for uint8.
class ContiguousRowsPacker8 final : public APacker8 {
 public:
  ContiguousRowsPacker8(const void* in, int depth, uint8_t flip)
      : in_(static_cast<const uint8_t*>(in)), depth_(depth), flip_(flip) {}
  void Pack(int64_t row0, int rows, uint8_t* dst, int64_t lda) const override;
  // uint8 rows whose depth is a multiple of 4 are read where they are.
  const uint8_t* InPlace(int64_t row0, int64_t lda) const override {
    return flip_ == 0 && lda == depth_ ? in_ + row0 * depth_ : nullptr;
  }

 private:
  const uint8_t* in_;
  int depth_;
  uint8_t flip_;
};

}  // namespace edgeopt::kernels::qgemm
