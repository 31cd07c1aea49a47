// Portable parts of the VNNI GEMM (qgemm_vnni.h): weight packing, the 16-lane output constants,
// the blocked and threaded driver (the micro-kernel is in qgemm_avx512vnni.cc).
#include "kernels/gemm_int8/qgemm_vnni.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "kernels/common/float_requant.h"
#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels::qgemm {
namespace {

// Whether the split form (qgemm_vnni.h) costs less than the row sums for `extra` remainder groups
// in all: per A row it adds one vpdpbusd and one broadcast per remainder group, where the row
// sums cost a pass over the packed row (~12 vector ops for K <= 64) and one add per panel to
// the accumulators' start values (see RunGemmVnni).
bool SplitPays(int64_t extra, int panels, int K4) { return 2 * extra <= 12 + K4 / 16 + 2 * int64_t{panels}; }

// A weight whose value minus the zero point leaves int8.
inline bool OutsideInt8(int32_t v, int32_t zp) { return v - zp < -128 || v - zp > 127; }

// The smallest and largest of count > 0 values (a pass the compiler vectorizes; an early-exit
// scan of every weight was a fifth of MobileNetV2 int8's init). Portable, unlike the AVX-512
// MinMaxInt8 of per-invoke packing: PackWeightsVnni's own tests (VnniSplitWeights) run it on any
// CPU, and it takes uint8 weights too.
template <typename W>
void MinMax(const W* w, int64_t count, int32_t* lo, int32_t* hi) {
  W l = w[0], h = w[0];
  for (int64_t i = 1; i < count; ++i) {
    l = std::min(l, w[i]);
    h = std::max(h, w[i]);
  }
  *lo = l;
  *hi = h;
}

template <typename W>
bool FitsInt8(const W* w, int64_t count, int32_t zp) {
  if (count <= 0) return true;
  int32_t lo, hi;
  MinMax(w, count, &lo, &hi);
  return !OutsideInt8(lo, zp) && !OutsideInt8(hi, zp);
}

// Zeroed column and absolute sums, the packed k offsets, no split form (out's N, K4 and
// panels set).
void ResetSums(PackedB8* out) {
  out->col_sum.assign(static_cast<size_t>(out->panels) * 16, 0);
  out->abs_sum.assign(static_cast<size_t>(out->N), 0);
  out->packed_koff.resize(static_cast<size_t>(out->K4));
  for (int g = 0; g < out->K4; ++g) out->packed_koff[static_cast<size_t>(g)] = 4 * g;
  out->extra_begin.clear();
  out->extra_group.clear();
  out->extra = {};
}

template <typename W>
void PackWeightsVnniImpl(const W* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB8* out) {
  const int32_t zp = zero_points.empty() ? 0 : zero_points[0];
  out->K = K;
  out->N = N;
  out->K4 = (K + 3) / 4;
  out->panels = (N + 15) / 16;
  const size_t count = static_cast<size_t>(N) * K;
  int32_t lo = 0, hi = 0;
  if (count > 0) MinMax(w, static_cast<int64_t>(count), &lo, &hi);
  const bool fits = !OutsideInt8(lo, zp) && !OutsideInt8(hi, zp);
  // The split form: remainder groups (panel, k group) holding a w - zp outside int8, each in
  // [-255, 254] so that w - zp = clamp(w - zp, -128, 127) + remainder with both in int8.
  std::vector<std::vector<int32_t>> groups;
  if (!fits && lo - zp >= -255 && hi - zp <= 254) {
    std::vector<uint8_t> outside(static_cast<size_t>(out->panels) * out->K4, 0);  // per (panel, k group)
    for (int n = 0; n < N; ++n) {
      uint8_t* o = outside.data() + static_cast<size_t>(n / 16) * out->K4;
      const W* row = w + static_cast<size_t>(n) * K;
      for (int k = 0; k < K; ++k) o[k >> 2] |= static_cast<uint8_t>(OutsideInt8(row[k], zp));
    }
    groups.resize(static_cast<size_t>(out->panels));
    int64_t extra = 0;
    for (int p = 0; p < out->panels; ++p)
      for (int g = 0; g < out->K4; ++g)
        if (outside[static_cast<size_t>(p) * out->K4 + g]) groups[static_cast<size_t>(p)].push_back(g), ++extra;
    if (!SplitPays(extra, out->panels, out->K4)) groups.clear();
  }
  const bool split = !groups.empty();
  out->b_offset = fits || split ? zp : std::is_signed_v<W> ? 0 : 128;
  out->f = out->b_offset - zp;
  out->data.Resize(static_cast<size_t>(out->panels) * out->K4 * 64);
  ResetSums(out);
  // Where the remainder of k group g of panel p goes (-1: none); built with the extra groups.
  std::vector<int32_t> slot;
  if (split) {
    slot.assign(static_cast<size_t>(out->panels) * out->K4, -1);
    out->extra_begin.push_back(0);
    for (int p = 0; p < out->panels; ++p) {
      for (int32_t g : groups[static_cast<size_t>(p)]) {
        slot[static_cast<size_t>(p) * out->K4 + g] = static_cast<int32_t>(out->extra_group.size());
        out->extra_group.push_back(g);
      }
      out->extra_begin.push_back(static_cast<int32_t>(out->extra_group.size()));
    }
    out->extra.Resize(out->extra_group.size() * 64);
  }
  // Per panel the 16 rows' values (w - b_offset; split: clamp(w - zp, -128, 127), the rest d - v
  // in the row's remainders) and sums in one pass the compiler vectorizes, then each 64-byte k
  // group of the panel (and of its extra groups) written whole from the rows' 4-byte groups.
  // Byte by byte into the panel this was half of MobileNetV2 int8's init and two thirds of the
  // uint8 MobileNetV2's (perf).
  const int32_t off = out->b_offset;
  const int K4 = out->K4;
  const size_t row_bytes = static_cast<size_t>(K4) * 4;
  std::vector<int8_t> v(16 * row_bytes), rest(split ? 16 * row_bytes : 0);  // zero past K and N
  for (int p = 0; p < out->panels; ++p) {
    const int rows = std::min(16, N - 16 * p);
    // Every panel overwrites its rows' first K values; only the last one has rows past N.
    if (rows < 16) {
      std::fill(v.begin() + static_cast<ptrdiff_t>(rows * row_bytes), v.end(), int8_t{0});
      if (split) std::fill(rest.begin() + static_cast<ptrdiff_t>(rows * row_bytes), rest.end(), int8_t{0});
    }
    for (int j = 0; j < rows; ++j) {
      const int n = 16 * p + j;
      const W* row = w + static_cast<size_t>(n) * K;
      int8_t* vr = v.data() + j * row_bytes;
      int32_t csum = 0;
      int64_t asum = 0;
      if (split) {
        int8_t* rr = rest.data() + j * row_bytes;
        for (int k = 0; k < K; ++k) {
          const int32_t d = int32_t{row[k]} - zp;
          const int32_t c = std::clamp(d, -128, 127);
          vr[k] = static_cast<int8_t>(c);
          rr[k] = static_cast<int8_t>(d - c);
          csum += d;
          asum += std::abs(d);
        }
      } else {
        for (int k = 0; k < K; ++k) {
          const int32_t x = row[k];
          vr[k] = static_cast<int8_t>(x - off);
          csum += x - off;
          asum += std::abs(x - zp);
        }
      }
      out->col_sum[static_cast<size_t>(n)] = csum;
      out->abs_sum[static_cast<size_t>(n)] = asum;
    }
    const auto put = [&](const std::vector<int8_t>& src, int g, int8_t* dst) {
      for (int j = 0; j < 16; ++j) std::memcpy(dst + j * 4, src.data() + j * row_bytes + 4 * g, 4);
    };
    int8_t* panel = out->data.get() + static_cast<size_t>(p) * K4 * 64;
    for (int g = 0; g < K4; ++g) put(v, g, panel + g * 64);
    if (split)
      for (int32_t g : groups[static_cast<size_t>(p)])
        put(rest, g, out->extra.get() + static_cast<size_t>(slot[static_cast<size_t>(p) * K4 + g]) * 64);
  }
}

// A channel whose weights all equal their zero point (accumulator bound 0): its accumulator is
// 0 for every input, so its output is a constant (dead channels of pruned models, e.g. vww_96,
// whose large biases would not fit the high-dword form's int64 bound otherwise).
bool ConstantChannel(const Requant8::Channel& ch) { return ch.acc_bound == 0; }

// VnniStage::kHigh's constant bias * m + 2^30 + 2^(30 + r) + zero_point * 2^(31 + r) (r >= 1).
__int128 HighConstant(const Requant8::Channel& ch, int32_t output_zero_point) {
  return __int128{ch.bias} * ch.mult + (__int128{1} << 30) + (__int128{1} << (30 + ch.right)) +
         __int128{output_zero_point} * (__int128{1} << (31 + ch.right));
}

constexpr int kRowQuantum = 24;                 // lcm of the tile heights 6, 8, 12
constexpr size_t kAChunkBytes = 24 * 1024;      // one thread's packed A rows: L1-resident

int64_t Lda(const PackedB8& b) { return int64_t{b.K4} * 4; }

int64_t ChunkRows(const PackedB8& b, int64_t M, int threads) {
  const int64_t quantum_bytes = kRowQuantum * Lda(b);
  int64_t q = std::clamp<int64_t>(static_cast<int64_t>(kAChunkBytes) / std::max<int64_t>(quantum_bytes, 1), 1, 8);
  const int64_t m_q = (M + kRowQuantum - 1) / kRowQuantum;
  if (threads > 1) q = std::min(q, std::max<int64_t>(1, (m_q + threads - 1) / threads));
  return q * kRowQuantum;
}

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

// A rows (plus 64 bytes the im2col copies may overrun), then the row terms.
size_t ABytes(const PackedB8& b, int64_t chunk_rows) { return Align64(static_cast<size_t>(chunk_rows * Lda(b)) + 64); }
size_t PerThreadScratch(const PackedB8& b, int64_t chunk_rows) {
  return ABytes(b, chunk_rows) + Align64(static_cast<size_t>(chunk_rows) * sizeof(int32_t));
}

// PackedB8::pairs from the panels.
void BuildPairs(PackedB8* out) {
  out->pairs = {};
  if (out->N > kPairMaxN || out->split() || out->K4 % 2 != 0) return;
  const int vectors = (out->N + 7) / 8;  // of 8 columns
  out->pairs.Resize(static_cast<size_t>(out->K4 / 2) * vectors * 64);
  int8_t* dst = out->pairs.get();
  for (int p = 0; p < out->K4 / 2; ++p)
    for (int col = 0; col < 8 * vectors; ++col) {
      const int8_t* panel = out->panel(col / 16);
      int8_t* d = dst + (static_cast<size_t>(p) * vectors + col / 8) * 64 + (col % 8) * 8;
      std::memcpy(d, panel + static_cast<size_t>(2 * p) * 64 + (col % 16) * 4, 4);
      std::memcpy(d + 4, panel + static_cast<size_t>(2 * p + 1) * 64 + (col % 16) * 4, 4);
    }
}

}  // namespace

bool WeightsFitInt8(const int8_t* w, int64_t count, int32_t zero_point) { return FitsInt8(w, count, zero_point); }
bool WeightsFitInt8(const uint8_t* w, int64_t count, int32_t zero_point) { return FitsInt8(w, count, zero_point); }

void PackWeightsVnni(const int8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB8* out) {
  PackWeightsVnniImpl(w, N, K, zero_points, out);
  BuildPairs(out);
}
void PackWeightsVnni(const uint8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB8* out) {
  PackWeightsVnniImpl(w, N, K, zero_points, out);
  BuildPairs(out);
}

void PackRhsVnni(const int8_t* w, bool k_major, int N, int K, int32_t zp, PackedB8* out) {
  out->K = K;
  out->N = N;
  out->K4 = (K + 3) / 4;
  out->panels = (N + 15) / 16;
  int32_t lo = 0, hi = 0;
  MinMaxInt8(w, int64_t{N} * K, &lo, &hi);
  const bool fits = lo - zp >= -128 && hi - zp <= 127;
  out->b_offset = fits ? zp : 0;
  out->f = out->b_offset - zp;
  const size_t bytes = static_cast<size_t>(out->panels) * out->K4 * 64;
  if (!out->data.get() || out->data.size != bytes) out->data.Resize(bytes);
  ResetSums(out);
  PackRhsPanels(w, k_major, zp, out);
  BuildPairs(out);
}

const char* WeightFormSuffix(const PackedB8& b) { return b.split() ? "/wsplit" : b.f != 0 ? "/rowsum" : ""; }

bool HighStageFits(const Requant8::Channel& ch, int32_t output_zero_point) {
  if (ch.acc_bound < 0 || ch.left != 0 || ch.right < 1 || ch.right > 31 || ch.mult < 0) return false;
  const int64_t bias = ch.bias;
  if (ch.acc_bound + (bias < 0 ? -bias : bias) >= (int64_t{1} << 31)) return false;
  const __int128 c = HighConstant(ch, output_zero_point);
  const __int128 span = __int128{ch.acc_bound} * ch.mult;
  const __int128 limit = __int128{1} << 63;
  return c - span >= -limit && c + span < limit;
}

namespace {
bool SameRequant(const Requant8::Channel& a, const Requant8::Channel& b) {
  return a.bias == b.bias && a.mult == b.mult && a.left == b.left && a.right == b.right && a.acc_bound == b.acc_bound;
}
}  // namespace

namespace {
// The shift K that leaves C - K m in [0, m) (c in [0, s)), or nullopt when the shifted
// accumulators could leave kFloatStageMaxBound.
std::optional<int32_t> FloatStageShift(const Requant8::Channel& ch, __int128 C) {
  __int128 k = C / ch.mult;
  if (k * ch.mult > C) --k;
  if (k < -kFloatStageMaxBound || k > kFloatStageMaxBound) return std::nullopt;
  const int64_t K = static_cast<int64_t>(k);
  if ((K < 0 ? -K : K) + ch.acc_bound > kFloatStageMaxBound) return std::nullopt;
  return static_cast<int32_t>(K);
}

// Both float forms: f cleared, and the channel's high-dword constant C, or nullopt when the
// channel does not fit the high-dword form or the float forms' accumulator bound.
std::optional<__int128> FloatStageBase(const Requant8::Channel& ch, int32_t zp, FloatStageChannel* f) {
  *f = FloatStageChannel{};
  if (!HighStageFits(ch, zp) || ch.acc_bound > kFloatStageMaxBound) return std::nullopt;
  return HighConstant(ch, zp);
}
}  // namespace

bool FloatStageConstants(const Requant8::Channel& ch, int32_t zp, int32_t lo, int32_t hi, FloatStageChannel* f) {
  const std::optional<__int128> base = FloatStageBase(ch, zp, f);
  if (!base) return false;
  const __int128 C = *base;
  if (FloatRequantConstants(ch.mult, ch.right, C, ch.acc_bound, lo, hi, &f->s, &f->c)) return true;
  const std::optional<int32_t> K = FloatStageShift(ch, C);
  if (!K || *K == 0) return false;
  f->shift = *K;
  return FloatRequantConstantsRange(ch.mult, ch.right, C - __int128{*K} * ch.mult, *K - ch.acc_bound,
                                    *K + ch.acc_bound, lo, hi, &f->s, &f->c);
}

bool FloatStage2Constants(const Requant8::Channel& ch, int32_t zp, int32_t lo, int32_t hi, FloatStageChannel* f) {
  const std::optional<__int128> base = FloatStageBase(ch, zp, f);
  if (!base) return false;
  const __int128 C = *base;
  const std::optional<int32_t> K = FloatStageShift(ch, C);
  if (!K) return false;
  f->shift = *K;
  return FloatRequantConstants2(ch.mult, ch.right, C - __int128{*K} * ch.mult, *K - ch.acc_bound, *K + ch.acc_bound,
                                lo, hi, &f->s, &f->s_lo, &f->c);
}

namespace {
// The clamping store mode for an activation range (uint8 when act_max > 127).
VnniStore ClampStore(int32_t act_max) { return act_max > 127 ? VnniStore::kClampU : VnniStore::kClamp; }
}  // namespace

VnniStore StoreFor(int32_t act_min, int32_t act_max) {
  if (act_min <= -128 && act_max >= 127) return VnniStore::kSat;
  if (act_max == 127) return VnniStore::kLoSat;
  if (act_min >= 0 && act_max == 255) return VnniStore::kLoUSat;
  return ClampStore(act_max);
}

void BuildVnniOutput(const PackedB8& b, const Requant8& q, int32_t z_u, VnniOutput* out, bool two_round,
                     bool allow_float) {
  out->panels.assign(static_cast<size_t>(b.panels), RequantPanel16{});
  const bool high = !two_round && !q.channels.empty() &&
                    std::all_of(q.channels.begin(), q.channels.end(), [&](const auto& ch) {
                      return ConstantChannel(ch) || HighStageFits(ch, q.output_zero_point);
                    });
  out->stage = two_round ? VnniStage::kTwoRound
               : high    ? VnniStage::kHigh
               : q.half_range ? VnniStage::kHalf
                              : VnniStage::kGeneral;
  // The general and half-range forms keep their clamps and truncation.
  out->store = high ? StoreFor(q.act_min, q.act_max) : ClampStore(q.act_max);
  out->act_min = q.act_min;
  out->act_max = q.act_max;
  // The float forms' accumulator shifts (added to init below).
  std::vector<int32_t> fshift(static_cast<size_t>(b.panels) * 16, 0);
  if (high) {
    // The float forms too when every channel has exact constants (a constant channel: s = 0 and
    // its clamped output as c); the levels are those the store can produce (kSat saturates to
    // int8 whatever the activation range). Channels without one-multiply-add constants get the
    // two-multiply-add form's (kFloat2, all channels then run it: s_lo = 0 for the others).
    bool all_float = allow_float && FloatRequantEnabled(), two = false;
    const int32_t lo = out->store == VnniStore::kSat ? -128 : std::max(q.act_min, -128);
    const int32_t hi = out->store == VnniStore::kSat ? 127 : std::min(q.act_max, 255);
    for (int n = 0; n < b.N; ++n) {
      const Requant8::Channel& ch = q.channels[static_cast<size_t>(n)];
      RequantPanel16& p = out->panels[static_cast<size_t>(n / 16)];
      const int j = n % 16;
      p.fscale_lo[j] = 0.f;
      if (ConstantChannel(ch)) {
        // acc is 0 for every input: y = C = the reference's output (before the clamp) * 2^32,
        // shift 0; in the float form the clamped value (an exact float).
        const int32_t v = static_cast<int32_t>(
            static_cast<uint32_t>(MultiplyByQuantizedMultiplierRuy(ch.bias, ch.mult, ch.left - ch.right)) +
            static_cast<uint32_t>(q.output_zero_point));
        (j % 2 == 0 ? p.high_e : p.high_o)[j / 2] = static_cast<int64_t>(uint64_t{static_cast<uint32_t>(v)} << 32);
        p.high_shift[j] = 0;
        p.fscale[j] = 0.f;
        p.foffset[j] = static_cast<float>(std::clamp(v, lo, hi));
        continue;
      }
      (j % 2 == 0 ? p.high_e : p.high_o)[j / 2] = static_cast<int64_t>(HighConstant(ch, q.output_zero_point));
      p.high_shift[j] = ch.right - 1;
      if (!all_float) continue;
      // A channel like the previous one (per-tensor quantization, no bias: e.g. BATCH_MATMUL, which
      // builds its output stage at every invoke for its new rhs) takes its constants.
      const Requant8::Channel* before = n > 0 ? &q.channels[static_cast<size_t>(n - 1)] : nullptr;
      if (before && !ConstantChannel(*before) && SameRequant(ch, *before)) {
        const RequantPanel16& prev = out->panels[static_cast<size_t>((n - 1) / 16)];
        const int i = (n - 1) % 16;
        p.fscale[j] = prev.fscale[i];
        p.foffset[j] = prev.foffset[i];
        p.fscale_lo[j] = prev.fscale_lo[i];
        fshift[static_cast<size_t>(n)] = fshift[static_cast<size_t>(n - 1)];
        continue;
      }
      // Once a channel needed the two-multiply-add form every channel runs it: the rest go to
      // its one search directly (the one-multiply-add searches try up to 9 slopes, twice).
      FloatStageChannel f;
      if (two || !FloatStageConstants(ch, q.output_zero_point, lo, hi, &f)) {
        all_float = FloatStage2Constants(ch, q.output_zero_point, lo, hi, &f);
        two = true;
      }
      p.fscale[j] = f.s;
      p.foffset[j] = f.c;
      p.fscale_lo[j] = f.s_lo;
      fshift[static_cast<size_t>(n)] = f.shift;
    }
    if (all_float) out->stage = two ? VnniStage::kFloat2 : VnniStage::kFloat;
    else std::fill(fshift.begin(), fshift.end(), 0);
  }
  // Wrapping int32 arithmetic (the accumulators wrap the same way).
  const uint32_t row_const = static_cast<uint32_t>(b.f) * static_cast<uint32_t>(b.K) * static_cast<uint32_t>(z_u);
  for (int n = 0; n < b.panels * 16; ++n) {
    RequantPanel16& p = out->panels[static_cast<size_t>(n / 16)];
    const RequantGroup& g = q.groups[static_cast<size_t>(n / 8)];
    const int j = n % 16, lane = n % 8;
    p.init[j] = static_cast<int32_t>(0u - static_cast<uint32_t>(z_u) * static_cast<uint32_t>(b.col_sum[n]) - row_const +
                                     static_cast<uint32_t>(fshift[static_cast<size_t>(n)]));
    p.bias[j] = g.bias[lane];
    p.left[j] = g.left[lane];
    p.mult[j] = g.mult[lane];
    p.mult_o[j] = j % 2 == 0 ? g.mult[lane + 1] : 0;
    p.zp_adj[j] = g.zp_adj[lane];
    p.rshift[j] = g.rshift[lane];
    if (j % 2 == 0) {
      p.round_e[j / 2] = g.round_e[lane / 2];
      p.shift_e[j / 2] = g.shift_e[lane / 2];
    } else {
      p.round_o[j / 2] = g.round_o[lane / 2];
      p.shift_o[j / 2] = g.shift_o[lane / 2];
    }
  }
  if (two_round) {
    // Unfolded bias, left shift, multipliers; 2^30 before the arithmetic shift by 31 (one
    // immediate shift for all lanes); then the rounding division by 2^r and the zero point.
    for (int n = 0; n < b.panels * 16; ++n) {
      RequantPanel16& p = out->panels[static_cast<size_t>(n / 16)];
      const int j = n % 16;
      const bool real = n < b.N;
      const Requant8::Channel ch = real ? q.channels[static_cast<size_t>(n)] : Requant8::Channel{};
      p.bias[j] = ch.bias;
      p.left[j] = ch.left;
      p.mult[j] = ch.mult;
      p.mult_o[j] = j % 2 == 0 && n + 1 < b.N ? q.channels[static_cast<size_t>(n + 1)].mult : 0;
      p.zp_adj[j] = q.output_zero_point;
      p.rshift[j] = ch.right;
      p.rmask[j] = static_cast<int32_t>((int64_t{1} << ch.right) - 1);
      p.rhalf[j] = p.rmask[j] >> 1;
      (j % 2 == 0 ? p.round_e : p.round_o)[j / 2] = int64_t{1} << 30;
    }
  }
}

namespace {

// Lane l's output constants (channel 16 p + l of panel p) in every lane; the odd-lane arrays
// read the same channel.
RequantPanel16 SplatChannel(const RequantPanel16& p, int l) {
  RequantPanel16 q;
  const int i = l / 2;
  const bool even = l % 2 == 0;
  for (int j = 0; j < 16; ++j) {
    q.init[j] = p.init[l];
    q.bias[j] = p.bias[l];
    q.left[j] = p.left[l];
    q.mult[j] = p.mult[l];
    q.mult_o[j] = j % 2 == 0 ? p.mult[l] : 0;
    q.zp_adj[j] = p.zp_adj[l];
    q.rshift[j] = p.rshift[l];
    q.high_shift[j] = p.high_shift[l];
    q.fscale[j] = p.fscale[l];
    q.foffset[j] = p.foffset[l];
    q.fscale_lo[j] = p.fscale_lo[l];
    q.rmask[j] = p.rmask[l];
    q.rhalf[j] = p.rhalf[l];
  }
  for (int j = 0; j < 8; ++j) {
    q.round_e[j] = q.round_o[j] = even ? p.round_e[i] : p.round_o[i];
    q.shift_e[j] = q.shift_o[j] = even ? p.shift_e[i] : p.shift_o[i];
    q.high_e[j] = q.high_o[j] = even ? p.high_e[i] : p.high_o[i];
  }
  return q;
}

}  // namespace

void BuildVnniSingle(const int8_t* w, const uint8_t* wu, int32_t zp, int k_h, int k_w, int C, int64_t ky_stride,
                     const VnniOutput& out, VnniSingle* s) {
  const int seg = k_w * C;
  s->k_h = k_h;
  s->blocks = (seg + 63) / 64;
  s->ky_stride = ky_stride;
  s->masks.assign(static_cast<size_t>(s->blocks), 0);
  for (int b = 0; b < s->blocks; ++b) {
    const int n = std::min(64, seg - 64 * b);
    s->masks[static_cast<size_t>(b)] = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  }
  s->w.Resize(static_cast<size_t>(k_h) * s->blocks * 64);
  std::fill(s->w.get(), s->w.get() + static_cast<size_t>(k_h) * s->blocks * 64, int8_t{0});
  for (int ky = 0; ky < k_h; ++ky)
    for (int t = 0; t < seg; ++t) {
      const size_t i = static_cast<size_t>(ky) * seg + t;
      const int32_t v = (w ? int32_t{w[i]} : int32_t{wu[i]}) - zp;
      s->w.get()[static_cast<size_t>(ky) * s->blocks * 64 + t] = static_cast<int8_t>(v);
    }
  s->q = SplatChannel(out.panels.at(0), 0);
}

bool VnniLanesFit(int k_w, int C, int stride_w) {
  const int groups = (k_w * C + 3) / 4;
  return 15 * stride_w * C + 4 * groups <= 128;
}

void BuildVnniLanes(const int8_t* w, const uint8_t* wu, int32_t zp, int N, int k_h, int k_w, int C, int stride_w,
                    int64_t ky_stride, const VnniOutput& out, VnniLanes* s) {
  const int seg = k_w * C;
  const int G = (seg + 3) / 4;
  const int NB = N <= 4 ? 4 : 8;  // channels computed: whole quads
  s->N = N;
  s->pixel_stride = stride_w * C;
  s->row_off.resize(static_cast<size_t>(k_h) * G);
  s->idx.Resize(static_cast<size_t>(k_h) * G * 64);
  for (int ky = 0; ky < k_h; ++ky)
    for (int j = 0; j < G; ++j) {
      s->row_off[static_cast<size_t>(ky) * G + j] = ky * ky_stride;
      for (int p = 0; p < 16; ++p)
        for (int t = 0; t < 4; ++t)
          s->idx.get()[(ky * G + j) * 64 + 4 * p + t] = static_cast<int8_t>(p * s->pixel_stride + 4 * j + t);
    }
  // Weights minus b_offset: the zero point when every w - zp fits int8 (always for int8 weights),
  // else 128 (uint8: any w - 128 fits); then f = b_offset - zp times each pixel's window sum
  // completes the sum (see VnniLanes::f).
  const int64_t count = static_cast<int64_t>(N) * k_h * seg;
  const int32_t b_offset = w ? (WeightsFitInt8(w, count, zp) ? zp : 0) : (WeightsFitInt8(wu, count, zp) ? zp : 128);
  s->f = b_offset - zp;
  s->w.Resize(static_cast<size_t>(k_h) * G * NB);  // zero past N
  s->ones.Resize(static_cast<size_t>(k_h) * G);
  for (int ky = 0; ky < k_h; ++ky)
    for (int j = 0; j < G; ++j) {
      uint32_t ones = 0;
      for (int t = 0; t < 4 && 4 * j + t < seg; ++t) ones |= uint32_t{1} << (8 * t);
      s->ones.get()[ky * G + j] = static_cast<int32_t>(ones);
      for (int n = 0; n < N; ++n) {
        uint32_t word = 0;
        for (int t = 0; t < 4 && 4 * j + t < seg; ++t) {
          const size_t i = (static_cast<size_t>(n) * k_h + ky) * seg + 4 * j + t;
          const int32_t v = (w ? int32_t{w[i]} : int32_t{wu[i]}) - b_offset;
          word |= uint32_t{static_cast<uint8_t>(static_cast<int8_t>(v))} << (8 * t);
        }
        s->w.get()[(static_cast<size_t>(ky) * G + j) * NB + n] = static_cast<int32_t>(word);
      }
    }
  // Pixel quad k's byte pp * N + ch: channel ch of pixel 4k + pp, i.e. byte 16k + 4 (ch % 4) + pp
  // of the packed vector of quad ch / 4 (the vpermi2b's first or second source).
  s->out_idx.Resize(4 * 64);
  for (int k = 0; k < 4; ++k)
    for (int pp = 0; pp < 4; ++pp)
      for (int ch = 0; ch < N; ++ch)
        s->out_idx.get()[k * 64 + pp * N + ch] = static_cast<int8_t>(ch / 4 * 64 + 16 * k + 4 * (ch % 4) + pp);
  s->q.resize(static_cast<size_t>(NB));
  for (int n = 0; n < NB; ++n) s->q[static_cast<size_t>(n)] = SplatChannel(out.panels.at(0), n);
}

void ContiguousRowsPacker8::Pack(int64_t row0, int rows, uint8_t* dst, int64_t lda) const {
  if (lda == depth_) {
    // Depth a multiple of 4: the packed rows are the input rows, flipped in one pass (one call
    // per row cost ~10 cycles of masks and tails for depth 16 or 24, as much as the copy).
    CopyFlip(in_ + row0 * depth_, int64_t{rows} * depth_, flip_, dst);
    return;
  }
  for (int i = 0; i < rows; ++i) {
    uint8_t* row = dst + i * lda;
    CopyFlip(in_ + (row0 + i) * depth_, depth_, flip_, row);
    for (int64_t k = depth_; k < lda; ++k) row[k] = 0;
  }
}

size_t GemmVnniSlotBytes(const PackedB8& b, int64_t M, int threads) {
  return PerThreadScratch(b, ChunkRows(b, M, std::max(threads, 1)));
}

namespace {

// Rows [row0, row0 + rows) of A for VnniChunk: in place when the packer allows, else packed into
// buf; with `fill` (a new chunk) also packed and, for b.f != 0, each row's term f * row sum.
// Forced inline: as a call it cost the tiny products' inline path ~7% (hello_world_int8).
__attribute__((always_inline)) inline const uint8_t* ChunkRowsA(const APacker8& pack, const PackedB8& b,
                                                                int64_t row0, int rows, bool fill, uint8_t* buf,
                                                                int32_t* row_term) {
  const int64_t lda = Lda(b);
  const uint8_t* in_place = pack.InPlace(row0, lda);
  const uint8_t* a = in_place ? in_place : buf;
  if (fill) {
    if (!in_place) pack.Pack(row0, rows, buf, lda);
    if (b.f != 0)
      for (int r = 0; r < rows; ++r)
        row_term[r] = static_cast<int32_t>(static_cast<uint32_t>(b.f) * static_cast<uint32_t>(RowSumU8(a + r * lda, lda)));
  }
  return a;
}

}  // namespace

// RunGemmVnni's inline path: products of at most kInlineWork row x panel x k-group steps (one
// vpdpbusd each) whose packed A fits kInlineABytes. hello_world_int8 (three FULLY_CONNECTED ops
// of 1 -> 16, 16 -> 16, 16 -> 1): 104 -> 94 ns an inference (old and new binary alternated),
// against TFLite 2.9 + XNNPACK 1.17 -> 1.00. At more threads such products no longer wait for
// a worker: the task split cut their one panel's columns between threads.
constexpr int64_t kInlineWork = 256;
constexpr size_t kInlineABytes = 1024;

void RunGemmVnni(rt::ThreadPool& pool, int64_t M, const PackedB8& b, const APacker8& pack, const VnniOutput& out,
                 void* c, int64_t ldc) {
  if (M <= 0 || b.N <= 0) return;
  const int64_t lda = Lda(b);
  uint8_t* c8 = static_cast<uint8_t*>(c);
  if (M * b.panels * b.K4 <= kInlineWork && ABytes(b, M) <= kInlineABytes) {
    // A tiny product (e.g. a FULLY_CONNECTED of 16 x 16 on one row) on the calling thread, A
    // packed on the stack: the task split, its call through FunctionRef and the slot scratch
    // cost as much as the product (see kInlineWork).
    alignas(64) uint8_t buf[kInlineABytes];
    int32_t row_term[kInlineWork];
    const uint8_t* a = ChunkRowsA(pack, b, 0, static_cast<int>(M), true, buf, row_term);
    VnniChunk(a, lda, b.packed_koff.data(), static_cast<int>(M), b, 0, b.panels, out, b.f != 0 ? row_term : nullptr,
              c8, ldc);
    return;
  }
  const int64_t chunk_rows = ChunkRows(b, M, pool.num_threads());
  ForEachGemmTask(pool, M, chunk_rows, b.panels, int64_t{b.K4} * 64, [&](const GemmTask& t) {
    uint8_t* buf = pool.SlotScratch(t.slot);
    int32_t* row_term = reinterpret_cast<int32_t*>(buf + ABytes(b, chunk_rows));
    const uint8_t* a = ChunkRowsA(pack, b, t.row0, t.rows, t.new_chunk, buf, row_term);
    VnniChunk(a, lda, b.packed_koff.data(), t.rows, b, t.p0, t.p1, out, b.f != 0 ? row_term : nullptr,
              c8 + t.row0 * ldc, ldc);
  });
}

}  // namespace edgeopt::kernels::qgemm
