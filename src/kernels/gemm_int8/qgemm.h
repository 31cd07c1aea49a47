// Integer GEMM for quantized CONV_2D / FULLY_CONNECTED (int8, uint8, hybrid, 16x8) on AVX2
// (int8 / uint8 on AVX-512 VNNI CPUs: qgemm_vnni.h).
//
// Design (README.md in this folder has the measurements behind it):
// - Operands are widened to int16 and multiplied with vpmaddwd (16 MACs per instruction, no
//   saturation: |a|, |w| <= 255 for 8-bit data, int16 x int8 for 16x8). vpmaddubsw would be as
//   fast but saturates u8 x s8 pair sums to int16, so it is not used.
// - Zero points are applied while packing: A holds (input - input_zero_point), B holds
//   (weight - weight_zero_point). Padding taps of a convolution are plain zeros, so no zero-point
//   correction terms exist and the int32 accumulators equal the reference kernels' sums exactly
//   (wrapping modulo 2^32 like theirs).
// - B (weights) is packed once: panels of 16 output channels, k in pairs:
//   panel[k/2][channel 0..15][k%2] int16, zero beyond N and K.
// - A rows (output pixels / batch rows) are packed per tile of up to 6 rows as int16 rows.
// - The 6x16 micro-kernel (inline assembly: GCC spills the 12 accumulators of the intrinsics
//   version) broadcasts an A pair, multiplies it with two B vectors and accumulates 6x16 int32.
// - Output stages turn a 6x16 int32 tile into int8/uint8 (ruy's requantization, bit-exact),
//   float (hybrid) or int16 (16x8, scalar).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/thread_pool.h"

namespace edgeopt::kernels::qgemm {

inline constexpr int kMR = 6;   // rows per micro-tile
inline constexpr int kNR = 16;  // columns per panel

// 64-byte aligned heap array (vmovdqa needs 32).
template <typename T>
struct AlignedArray {
  struct Free {
    void operator()(T* p) const;
  };
  std::unique_ptr<T[], Free> data;
  size_t size = 0;
  void Resize(size_t n);  // zero-filled
  T* get() { return data.get(); }
  const T* get() const { return data.get(); }
};

// Weights [N][K] (row n holds output channel n's K values) packed for the micro-kernel.
struct PackedB {
  int K = 0, N = 0;
  int K2 = 0;      // k pairs: ceil(K / 2)
  int panels = 0;  // ceil(N / 16)
  AlignedArray<int16_t> data;
  std::vector<int64_t> abs_sum;  // [N]: sum over k of |packed value| (bounds the accumulators)

  const int16_t* panel(int p) const { return data.get() + static_cast<size_t>(p) * K2 * 2 * kNR; }
  size_t bytes() const { return data.size * sizeof(int16_t); }
};

// Packs int8 or uint8 weights: element (n, k) is w[n * K + k] - zero_point[n] (zero_points may
// hold one value for all channels).
void PackWeights(const int8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB* out);
void PackWeights(const uint8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB* out);

// Requantization constants of 8 consecutive output channels in the layout the AVX2 output stage
// loads directly. ruy's rounding (MultiplyByQuantizedMultiplierRuy) is computed in 64 bits as one
// shift: for right shift r and left shift l,
//   result = ((x << l) * m + 2^30 + (r > 0 ? 2^(30+r) : 0)) >> (31 + r)
// which equals ruy's two roundings including its overflow lane; adding 2^62 first keeps the
// 64-bit value non-negative so a logical shift can be used, and the 2^(62-31-r) it leaves in the
// result is subtracted together with the output zero point.
struct alignas(32) RequantGroup {
  int32_t bias[8];
  int32_t mult[8];
  int32_t left[8];
  int32_t zp_adj[8];    // output_zero_point - 2^(31 - r), wrapping
  int64_t round_e[4];   // channels 0, 2, 4, 6
  int64_t round_o[4];   // channels 1, 3, 5, 7
  int64_t shift_e[4];
  int64_t shift_o[4];
  int32_t rshift[8];    // Requant8::half_range: the right shift r of each channel
};

// Per-output-channel requantization (ruy rounding) for int8/uint8 outputs.
struct Requant8 {
  std::vector<RequantGroup> groups;  // panels * 2
  bool any_left_shift = false;
  // The bias is folded into round_e/round_o (as bias * m) and the output stage skips the int32
  // bias add. Exact only when acc + bias cannot wrap in int32 (then (acc + bias) * m + round ==
  // acc * m + (bias * m + round) in 64 bits), so BuildRequant8 sets it only when told a bound.
  bool bias_folded = false;
  // "Half range" output stage (implies bias_folded): every |acc + bias| < 2^30 and every right
  // shift r <= 30. Then 2 * acc fits in int32 and, with the offset 2^61 instead of 2^62,
  //   2 * y = (2 * acc) * m + 2 * (bias * m + 2^61 + rounding) < 2^64,
  // so floor(y / 2^31) is the high dword of that 64-bit sum and one 32-bit variable shift by r
  // finishes: round_e/round_o hold 2 * (bias * m + 2^61 + rounding), zp_adj holds
  // output_zero_point - 2^(30 - r) and rshift holds r. Two 64-bit shifts, the odd-lane shift and
  // the blend shift of the general stage become shuffles (the shift unit is the bottleneck of
  // the output stage on this machine).
  bool half_range = false;
  int32_t act_min = -128, act_max = 127;
  // What the groups were built from, for output stages laid out differently (qgemm_vnni.h).
  struct Channel {
    int32_t bias = 0, mult = 0;
    int left = 0, right = 0;
    int64_t acc_bound = -1;  // bound on |accumulator| for any input; -1: none known
  };
  std::vector<Channel> channels;  // [N]
  int32_t output_zero_point = 0;
};
// bias may be null; multiplier/shift have one entry per channel or one for all. acc_bound, if not
// null, holds per output channel a bound on |accumulator| for any input (N entries); the bias is
// folded (Requant8::bias_folded) when no channel has a left shift and every
// acc_bound[n] + |bias[n]| < 2^31; the half-range stage (Requant8::half_range) is chosen when
// moreover every acc_bound[n] + |bias[n]| < 2^30 and every right shift is at most 30.
void BuildRequant8(int N, const int32_t* bias, const std::vector<int32_t>& multiplier, const std::vector<int>& shift,
                   int32_t output_zero_point, int32_t act_min, int32_t act_max, Requant8* out,
                   const int64_t* acc_bound = nullptr);

// Where a tile's results go. Rows of the tile are consecutive rows of C (row stride ldc).
enum class OutKind { kInt8, kUInt8, kFloat, kInt16 };

struct FloatOut {               // hybrid: out = float(acc) * (col_scale[n] * row_scale[row]) + bias[n]
  const float* col_scale;       // [N] weight scales (per channel or replicated)
  const float* bias;            // [N] or null
  float act_min, act_max;
};

enum class Int16Rounding { kGemmlowp32, kInt64Bias, kSingleRound };
struct Int16Out {               // 16x8: scalar reference requantization per element
  Int16Rounding rounding;
  const int32_t* bias32;        // kGemmlowp32 / kSingleRound (may be null)
  const int64_t* bias64;        // kInt64Bias (may be null)
  const int32_t* multiplier;    // [N]
  const int* shift;             // [N]
  int32_t act_min, act_max;
};

// 16x8 output stage of the AVX-512 VNNI int16 GEMM (vpdpwssd, qgemm_avx512vnni.cc), 16 channels
// per panel: y = (acc + bias) * mult + add in 64 bits (wrapping), v = int32(y >> shift)
// (arithmetic), clamped to the activation range and truncated to int16. The two roundings of
// Int16Out that are one 64-bit multiply, add and shift:
// - kInt64Bias: bias = 0, mult = the reference's 16-bit reduced multiplier, shift = 15 - s,
//   add = bias64 * mult + 2^(shift - 1): (acc + b) * m + r == acc * m + (b * m + r) modulo 2^64,
//   the same bits as the reference's int64 arithmetic;
// - kSingleRound: bias = the int32 bias (acc + bias wraps in int32 as in the reference), mult = m,
//   shift = 31 - s, add = 2^(shift - 1).
// - kGemmlowp32 (Int16VnniOutput::two_round): x = (acc + bias) << left (wrapping), then gemmlowp's
//   SaturatingRoundingDoublingHighMul(x, m), which for m >= 0 (no saturating lane) is exactly
//   (x * m + 2^30) >> 31 (arithmetic: its sign-dependent nudge and truncation toward zero give the
//   floor for both signs), i.e. the form above with add = 2^30 and shift = 31; then
//   RoundingDivideByPOT by the right shift r (half away from zero): (h >> r) + 1 when
//   (h & rmask) > rhalf - (h >> 31), rmask = 2^r - 1, rhalf = rmask >> 1.
// The accumulators start at `bias` (int32 sums wrap like acc + bias would).
// - kInt64Bias in 32 bits (Int16VnniOutput::narrow, when acc + b fits int32, the reduced
//   multiplier m < 2^15 and the shift s is in [17, 46]): bias = b, and with x = xh * 2^16 + xl
//   (xh its signed high half, xl its unsigned low half), floor((x * m + 2^(s-1)) / 2^s) =
//   (xh * m + ((xl * m) >> 16) + 2^(s-17)) >> (s - 16), every term in int32: vpmaddwd gives
//   xh * m (m_hi = m << 16), vpmulhuw (xl * m) >> 16 (m_lo = m), then round and nshift = s - 16.
struct alignas(64) Requant16Panel {
  int32_t bias[16];
  int32_t m_hi[16], m_lo[16], round[16], nshift[16];  // narrow only
  int32_t mult[16];    // even channels' multipliers in the even lanes (vpmuldq reads lanes 0, 2, ...)
  int32_t mult_o[16];  // odd channels' multipliers moved to the even lanes
  int64_t add_e[8], add_o[8];
  int64_t shift_e[8], shift_o[8];
  int32_t left[16], rshift[16], rmask[16], rhalf[16];  // two_round only
  // long_sums only: lane j's multiplier, add and shift in 64-bit lanes (j < 8, then j >= 8).
  int64_t lane_mult[16], lane_add[16], lane_shift[16];
};
struct Int16VnniOutput {
  std::vector<Requant16Panel> panels;  // ceil(N / 16)
  bool two_round = false;              // kGemmlowp32
  bool narrow = false;                 // kInt64Bias in 32-bit arithmetic (see Requant16Panel)
  // kInt64Bias whose int32 sums could overflow (long K, large weights; the reference sums in
  // int64): the k pairs summed in blocks of kLongBlockPairs in int32, each block added into int64
  // sums, and the stage applied to those.
  bool long_sums = false;
  // N = 1 without long sums: channel 0's constants in all 16 lanes. Int16VnniChunk then puts 16
  // rows in the lanes instead of 16 columns (one of which would be used): each row's dot product
  // with the weights on whole vectors of k pairs, the 16 rows' sums reduced across lanes, one
  // output stage for 16 rows.
  std::vector<Requant16Panel> single;
  // N <= 8 without long sums: the 8 channels' constants in lanes 0-7 and again in lanes 8-15, so
  // that one output stage requantizes two rows (Int16VnniChunk's tiles of one panel).
  std::vector<Requant16Panel> pairs;
  int32_t act_min = -32768, act_max = 32767;
};
// Builds the stage for N channels of q (bias pointers, multiplier and shift arrays of N entries);
// false when a shift lies outside the range the stage is exact for (the 64-bit shift in [1, 63];
// kGemmlowp32: left and right shifts up to 31, multipliers >= 0).
// acc_bound (optional, [N]): a bound on |acc| per channel, which lets kInt64Bias run narrow.
// long_sums: Int16VnniOutput::long_sums (kInt64Bias only).
bool BuildInt16VnniOutput(const Int16Out& q, int N, Int16VnniOutput* out, const int64_t* acc_bound = nullptr,
                          bool long_sums = false);
// k pairs per int32 block of the long sums: each vpdpwssd adds at most 2 * 32768 * 128 = 2^23.
inline constexpr int kLongBlockPairs = 128;

// Everything the driver needs besides A.
struct GemmOutput {
  OutKind kind = OutKind::kInt8;
  const Requant8* q8 = nullptr;
  FloatOut f{};
  Int16Out i16{};
  const Int16VnniOutput* i16v = nullptr;  // kInt16 on AVX-512 VNNI: RunGemm runs Int16VnniChunk
  void* c = nullptr;            // output base (row 0, column 0)
  int64_t ldc = 0;              // elements between rows
  const float* row_scale = nullptr;  // kFloat: per batch; row r belongs to batch r / rows_per_batch
  int64_t rows_per_batch = 1;
};

// Fills rows [row0, row0 + rows) of A into dst: int16 rows lda apart, K values each (values past
// K up to lda are multiplied by zero weights and may hold anything).
class APacker {
 public:
  virtual ~APacker() = default;
  virtual void Pack(int64_t row0, int rows, int16_t* dst, int64_t lda) const = 0;
  // Row row0 of A in memory when the rows already have the packed layout (int16, lda apart, no
  // values past K, zero point 0), so that nothing needs to be packed; null otherwise.
  virtual const int16_t* InPlace(int64_t /*row0*/, int64_t /*lda*/) const { return nullptr; }
};

// Per-thread scratch bytes RunGemm needs with `threads` threads (reserve them in Prepare:
// rt::ThreadPool::ReserveSlotScratch).
size_t GemmSlotBytes(const PackedB& b, int64_t M, int threads);

// C = requantize(A x B) for M rows: A chunks are packed by `pack` into per-thread scratch (the
// pool's slot scratch, GemmSlotBytes per slot), then multiplied with blocks of B panels; tasks
// (row chunk x panel block) are taken dynamically by the pool's threads.
void RunGemm(rt::ThreadPool& pool, int64_t M, const PackedB& b, const APacker& pack, const GemmOutput& out);

// One task of a GEMM driver: rows [row0, row0 + rows) x B panels [p0, p1), on thread `slot`;
// new_chunk: that thread's packed A does not hold these rows yet.
struct GemmTask {
  int slot = 0;
  int64_t row0 = 0;
  int rows = 0;
  bool new_chunk = true;
  int p0 = 0, p1 = 0;
};
// The task split of RunGemm and RunGemmVnni (qgemm_vnni.h): row chunks of at most chunk_rows (with
// more than one thread, inside one part of M per thread: M * s / threads) x blocks of
// B panels sized to stay in L2 (the columns are cut too when there are too few row chunks for
// the threads), taken dynamically by the pool's threads; a thread keeps its chunk for the
// chunk's following blocks.
void ForEachGemmTask(rt::ThreadPool& pool, int64_t M, int64_t chunk_rows, int panels, int64_t panel_bytes,
                     FunctionRef<void(const GemmTask&)> run);

// ---- AVX2 entry points (qgemm_avx2.cc) ----

// acc[r][0..15] = sum_k a[r][k] * panel[k] for r < rows (1..6); a rows are lda int16 apart.
void MicroKernel(int rows, int K2, const int16_t* a, int64_t lda, const int16_t* panel, int32_t* acc);

// Writes rows x cols (cols <= 16) of a tile starting at C row `row0` / column `col0`.
void StoreTile(const GemmOutput& out, const int32_t* acc, int rows, int64_t row0, int col0, int cols);

// a16[i] = src[i] - zero_point for i < n (src int8, uint8 or int16). May write up to 15 elements
// past n (the caller leaves room); reads stay inside [src, src_end).
void WidenSub(const int8_t* src, const int8_t* src_end, int n, int32_t zero_point, int16_t* dst);
void WidenSub(const uint8_t* src, const uint8_t* src_end, int n, int32_t zero_point, int16_t* dst);
void WidenSub(const int16_t* src, const int16_t* src_end, int n, int32_t zero_point, int16_t* dst);

// WidenSub of `segments` runs of `seg` values, run s read from src + s * src_stride and written to
// dst + s * seg (one call per im2col row of a convolution whose window rows are all inside).
void WidenSubSegments(const int8_t* src, int64_t src_stride, int segments, int seg, const int8_t* src_end,
                      int32_t zero_point, int16_t* dst);
void WidenSubSegments(const uint8_t* src, int64_t src_stride, int segments, int seg, const uint8_t* src_end,
                      int32_t zero_point, int16_t* dst);
void WidenSubSegments(const int16_t* src, int64_t src_stride, int segments, int seg, const int16_t* src_end,
                      int32_t zero_point, int16_t* dst);

// ---- AVX-512 VNNI entry point of the 16x8 GEMM (qgemm_avx512vnni.cc) ----

// Rows [0, rows) of packed int16 A (lda int16 apart, K2 pairs, zero past K) times panels [p0, p1)
// of B (PackedB: one 64-byte vector per k pair and panel), requantized by `out` into int16 C
// (c points at row 0 / column 0 of the chunk; ldc elements between rows).
void Int16VnniChunk(const int16_t* a, int64_t lda, int rows, const PackedB& b, int p0, int p1,
                    const Int16VnniOutput& out, int16_t* c, int64_t ldc);

// One-output-channel 16x8 convolutions read in place from a padded int16 image (Int16VnniOutput::
// single): k_h window rows of row_len values, ky_stride apart; w holds [k_h][blocks * 32] weights
// (zeros past row_len), taken from the packed column 0 (BuildInt16SingleWeights).
struct Int16SingleWeights {
  int k_h = 0, row_len = 0, blocks = 0;
  int64_t ky_stride = 0;
  std::vector<int16_t> w;
};
void BuildInt16SingleWeights(const PackedB& b, int k_h, int row_len, int64_t ky_stride, Int16SingleWeights* s);
// `pixels` outputs whose windows start pixel_stride values apart from a, into c[0..pixels).
void Int16SingleRow(const int16_t* a, int64_t pixel_stride, int pixels, const Int16SingleWeights& s,
                    const Int16VnniOutput& out, int16_t* c);

// Extra int16 elements a packed A buffer needs after its last row (WidenSub overrun).
inline constexpr int kASlack = 32;

}  // namespace edgeopt::kernels::qgemm
