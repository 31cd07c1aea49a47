// Portable parts of the integer GEMM: weight packing, requantization constants, the blocked and
// threaded driver (the AVX2 micro-kernel and output stages are in qgemm_avx2.cc).
#include "kernels/gemm_int8/qgemm.h"

#include "runtime/weight_memory.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace edgeopt::kernels::qgemm {

template <typename T>
void AlignedArray<T>::Free::operator()(T* p) const {
  rt::FreeWeightMemory(p);
}

template <typename T>
void AlignedArray<T>::Resize(size_t n) {
  data.reset(static_cast<T*>(rt::AllocateWeightMemory(std::max<size_t>(n, 1) * sizeof(T))));
  size = n;
}

template struct AlignedArray<int16_t>;
template struct AlignedArray<int8_t>;   // qgemm_vnni.h
template struct AlignedArray<int32_t>;  // qgemm_vnni.h (VnniLanes)

namespace {

template <typename W>
void PackWeightsImpl(const W* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB* out) {
  out->K = K;
  out->N = N;
  out->K2 = (K + 1) / 2;
  out->panels = (N + kNR - 1) / kNR;
  out->data.Resize(static_cast<size_t>(out->panels) * out->K2 * 2 * kNR);
  int16_t* d = out->data.get();
  out->abs_sum.assign(static_cast<size_t>(N), 0);
  for (int p = 0; p < out->panels; ++p) {
    int16_t* panel = d + static_cast<size_t>(p) * out->K2 * 2 * kNR;
    for (int j = 0; j < kNR; ++j) {
      const int n = p * kNR + j;
      if (n >= N) break;
      const int32_t zp = zero_points.empty() ? 0 : zero_points.size() == 1 ? zero_points[0] : zero_points[n];
      const W* row = w + static_cast<size_t>(n) * K;
      for (int k = 0; k < K; ++k) {
        const int32_t v = int32_t{row[k]} - zp;
        panel[(static_cast<size_t>(k / 2) * kNR + j) * 2 + (k & 1)] = static_cast<int16_t>(v);
        out->abs_sum[static_cast<size_t>(n)] += std::abs(v);
      }
    }
  }
}

constexpr size_t kAChunkBytes = 24 * 1024;  // one thread's packed A rows: L1-resident
constexpr size_t kBBlockBytes = 160 * 1024; // B panels used with one A chunk: L2-resident

int64_t Lda(const PackedB& b) { return int64_t{b.K2} * 2; }

int64_t ChunkRows(const PackedB& b, int64_t M, int threads) {
  const int64_t tile_bytes = kMR * Lda(b) * int64_t{sizeof(int16_t)};
  int64_t tiles = std::clamp<int64_t>(static_cast<int64_t>(kAChunkBytes) / std::max<int64_t>(tile_bytes, 1), 1, 16);
  // Split the rows over the threads first.
  const int64_t m_tiles = (M + kMR - 1) / kMR;
  if (threads > 1) tiles = std::min(tiles, std::max<int64_t>(1, (m_tiles + threads - 1) / threads));
  return tiles * kMR;
}

size_t PerThreadScratch(const PackedB& b, int64_t chunk_rows) {
  const size_t bytes = (static_cast<size_t>(chunk_rows * Lda(b)) + kASlack) * sizeof(int16_t);
  return (bytes + 63) / 64 * 64;
}

}  // namespace

void PackWeights(const int8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB* out) {
  PackWeightsImpl(w, N, K, zero_points, out);
}
void PackWeights(const uint8_t* w, int N, int K, const std::vector<int32_t>& zero_points, PackedB* out) {
  PackWeightsImpl(w, N, K, zero_points, out);
}

void BuildRequant8(int N, const int32_t* bias, const std::vector<int32_t>& multiplier, const std::vector<int>& shift,
                   int32_t output_zero_point, int32_t act_min, int32_t act_max, Requant8* out,
                   const int64_t* acc_bound) {
  const int panels = (N + kNR - 1) / kNR;
  out->groups.assign(static_cast<size_t>(panels) * 2, RequantGroup{});
  out->any_left_shift = false;
  out->bias_folded = false;
  out->half_range = false;
  out->act_min = act_min;
  out->act_max = act_max;
  out->output_zero_point = output_zero_point;
  out->channels.assign(static_cast<size_t>(N), Requant8::Channel{});
  for (int n = 0; n < panels * kNR; ++n) {
    RequantGroup& g = out->groups[n / 8];
    const int lane = n % 8;
    const bool real = n < N;
    const size_t c = multiplier.size() == 1 ? 0 : static_cast<size_t>(std::min(n, N - 1));
    const int32_t m = real ? multiplier[c] : 0;
    const int s = real ? shift[c] : 0;
    const int left = s > 0 ? s : 0;
    const int right = s > 0 ? 0 : -s;
    g.bias[lane] = real && bias ? bias[n] : 0;
    g.mult[lane] = m;
    g.left[lane] = left;
    if (real) {
      Requant8::Channel& ch = out->channels[static_cast<size_t>(n)];
      ch.bias = g.bias[lane];
      ch.mult = m;
      ch.left = left;
      ch.right = right;
      ch.acc_bound = acc_bound ? acc_bound[n] : -1;
    }
    if (left > 0) out->any_left_shift = true;
    const int total = 31 + right;
    const int64_t round = (int64_t{1} << 62) + (int64_t{1} << 30) + (right > 0 ? int64_t{1} << (30 + right) : 0);
    // Subtracting 2^(62 - total) undoes the 2^62 offset after the shift (wrapping like int32).
    g.zp_adj[lane] = static_cast<int32_t>(static_cast<uint32_t>(output_zero_point) -
                                          static_cast<uint32_t>(uint64_t{1} << (62 - total)));
    if (lane % 2 == 0) {
      g.round_e[lane / 2] = round;
      g.shift_e[lane / 2] = total;
    } else {
      g.round_o[lane / 2] = round;
      g.shift_o[lane / 2] = total;
    }
  }
  if (!acc_bound || out->any_left_shift) return;
  bool half = true;
  for (int n = 0; n < N; ++n) {
    const int64_t b = bias ? std::abs(int64_t{bias[n]}) : 0;
    if (acc_bound[n] < 0 || acc_bound[n] + b >= (int64_t{1} << 31)) return;
    const size_t c = multiplier.size() == 1 ? 0 : static_cast<size_t>(n);
    if (acc_bound[n] + b >= (int64_t{1} << 30) || -shift[c] > 30) half = false;
  }
  out->bias_folded = true;
  if (half) {
    out->half_range = true;
    for (int n = 0; n < panels * kNR; ++n) {
      RequantGroup& g = out->groups[n / 8];
      const int lane = n % 8;
      const int right = static_cast<int>(lane % 2 == 0 ? g.shift_e[lane / 2] : g.shift_o[lane / 2]) - 31;
      const int64_t round = (int64_t{1} << 61) + (int64_t{1} << 30) + (right > 0 ? int64_t{1} << (30 + right) : 0);
      // 0 < bias * m + round < 2^63 (|bias| < 2^30, 0 <= m < 2^31); doubled it may pass 2^63, so
      // it is kept as the uint64 bit pattern (the kernel's 64-bit add wraps the same way).
      const uint64_t v = 2 * static_cast<uint64_t>(int64_t{g.bias[lane]} * g.mult[lane] + round);
      (lane % 2 == 0 ? g.round_e : g.round_o)[lane / 2] = static_cast<int64_t>(v);
      g.rshift[lane] = right;
      g.zp_adj[lane] = output_zero_point - (int32_t{1} << (30 - right));
      g.bias[lane] = 0;
    }
    return;
  }
  for (int n = 0; n < N; ++n) {
    RequantGroup& g = out->groups[n / 8];
    const int lane = n % 8;
    // Wrapping uint64 arithmetic: the final per-element sum is the exact non-negative value.
    const uint64_t add = static_cast<uint64_t>(int64_t{g.bias[lane]} * g.mult[lane]);
    int64_t& round = lane % 2 == 0 ? g.round_e[lane / 2] : g.round_o[lane / 2];
    round = static_cast<int64_t>(static_cast<uint64_t>(round) + add);
    g.bias[lane] = 0;
  }
}

namespace {

// kInt64Bias's reduced 16-bit multiplier and shift (quant_utils.h, MultiplyByQuantizedMultiplier(int64_t)).
int32_t ReducedMultiplier(int32_t m) { return m < 0x7FFF0000 ? ((m + (1 << 15)) >> 16) : 0x7FFF; }

// Whether every channel of a kInt64Bias stage can run in 32 bits (Requant16Panel, narrow).
bool NarrowFits(const Int16Out& q, int N, const int64_t* acc_bound) {
  if (q.rounding != Int16Rounding::kInt64Bias || acc_bound == nullptr) return false;
  for (int n = 0; n < N; ++n) {
    const int32_t m = ReducedMultiplier(q.multiplier[n]);
    const int s = 15 - q.shift[n];
    const int64_t b = q.bias64 ? q.bias64[n] : 0;
    const int64_t abs_b = b < 0 ? -b : b;
    if (m < 0 || m > 0x7FFF || s < 17 || s > 46 || abs_b >= (int64_t{1} << 31) || acc_bound[n] < 0 ||
        acc_bound[n] >= (int64_t{1} << 31) - abs_b)
      return false;
  }
  return true;
}

}  // namespace

bool BuildInt16VnniOutput(const Int16Out& q, int N, Int16VnniOutput* out, const int64_t* acc_bound, bool long_sums) {
  const int panels = (N + kNR - 1) / kNR;
  out->panels.assign(static_cast<size_t>(panels), Requant16Panel{});
  out->two_round = q.rounding == Int16Rounding::kGemmlowp32;
  if (long_sums && q.rounding != Int16Rounding::kInt64Bias) return false;
  out->long_sums = long_sums;
  out->narrow = !long_sums && NarrowFits(q, N, acc_bound);
  out->act_min = q.act_min;
  out->act_max = q.act_max;
  // Lane `lane` of panel p takes channel n's constants (n >= N: an empty column).
  const auto fill = [&](Requant16Panel& p, int lane, int n) {
    int32_t mult = 0, bias = 0;
    int shift = 1;
    uint64_t add = 0;
    if (n < N) {
      const int32_t m = q.multiplier[n];
      if (q.rounding == Int16Rounding::kInt64Bias) {
        // The reference's reduced multiplier (quant_utils.h, MultiplyByQuantizedMultiplier(int64_t)).
        mult = ReducedMultiplier(m);
        shift = 15 - q.shift[n];
        const int64_t b = q.bias64 ? q.bias64[n] : 0;
        if (out->narrow) {
          bias = static_cast<int32_t>(b);
          p.m_hi[lane] = mult << 16;
          p.m_lo[lane] = mult;
          p.round[lane] = 1 << (shift - 17);
          p.nshift[lane] = shift - 16;
        } else {
          add = static_cast<uint64_t>(b) * static_cast<uint64_t>(static_cast<int64_t>(mult));
        }
      } else if (q.rounding == Int16Rounding::kSingleRound) {
        mult = m;
        shift = 31 - q.shift[n];
        bias = q.bias32 ? q.bias32[n] : 0;
      } else {  // kGemmlowp32
        const int left = std::max(q.shift[n], 0), right = std::max(-q.shift[n], 0);
        if (m < 0 || left > 31 || right > 31) return false;
        mult = m;
        shift = 31;
        bias = q.bias32 ? q.bias32[n] : 0;
        p.left[lane] = left;
        p.rshift[lane] = right;
        p.rmask[lane] = static_cast<int32_t>((int64_t{1} << right) - 1);
        p.rhalf[lane] = p.rmask[lane] >> 1;
      }
      if (shift < 1 || shift > 63) return false;
      add += uint64_t{1} << (shift - 1);
    }
    p.bias[lane] = bias;
    p.lane_mult[lane] = mult;
    p.lane_add[lane] = static_cast<int64_t>(add);
    p.lane_shift[lane] = shift;
    (lane % 2 == 0 ? p.mult : p.mult_o)[lane / 2 * 2] = mult;
    (lane % 2 == 0 ? p.add_e : p.add_o)[lane / 2] = static_cast<int64_t>(add);
    (lane % 2 == 0 ? p.shift_e : p.shift_o)[lane / 2] = shift;
    return true;
  };
  for (int n = 0; n < panels * kNR; ++n)
    if (!fill(out->panels[static_cast<size_t>(n / kNR)], n % kNR, n)) return false;
  // One output channel: channel 0's constants in every lane, for the rows-in-lanes form.
  out->single.clear();
  if (N == 1 && !long_sums) {
    out->single.assign(1, Requant16Panel{});
    for (int lane = 0; lane < kNR; ++lane)
      if (!fill(out->single[0], lane, 0)) return false;
  }
  out->pairs.clear();
  if (N <= 8 && !long_sums) {
    out->pairs.assign(1, Requant16Panel{});
    for (int lane = 0; lane < kNR; ++lane)
      if (!fill(out->pairs[0], lane, lane % 8)) return false;
  }
  return true;
}

void BuildInt16SingleWeights(const PackedB& b, int k_h, int row_len, int64_t ky_stride, Int16SingleWeights* s) {
  s->k_h = k_h;
  s->row_len = row_len;
  s->blocks = (row_len + 31) / 32;
  s->ky_stride = ky_stride;
  s->w.assign(static_cast<size_t>(k_h) * s->blocks * 32, 0);
  const int16_t* panel = b.panel(0);
  for (int ky = 0; ky < k_h; ++ky)
    for (int i = 0; i < row_len; ++i) {
      const int k = ky * row_len + i;  // im2col order: filter row, column, channel
      s->w[static_cast<size_t>(ky) * s->blocks * 32 + i] = panel[32 * (k / 2) + k % 2];
    }
}

size_t GemmSlotBytes(const PackedB& b, int64_t M, int threads) {
  return PerThreadScratch(b, ChunkRows(b, M, std::max(threads, 1)));
}

void ForEachGemmTask(rt::ThreadPool& pool, int64_t M, int64_t chunk_rows, int panels, int64_t panel_bytes,
                     FunctionRef<void(const GemmTask&)> run) {
  const int threads = pool.num_threads();
  if (threads == 1 && M <= chunk_rows && int64_t{panels} * panel_bytes <= static_cast<int64_t>(kBBlockBytes)) {
    // One task, as the plan below would make it, without its divisions (a small FULLY_CONNECTED
    // spent a third of its ~60 ns here).
    GemmTask t;
    t.rows = static_cast<int>(M);
    t.p1 = panels;
    run(t);
    return;
  }
  // With more than one thread the rows are first cut into one part per thread, M * s / threads
  // (the split of the row-split ops around the GEMM, e.g. DEPTHWISE_CONV_2D's output rows), and
  // each part into chunks of chunk_rows (the last one shorter): when the threads take their
  // tasks at the same pace, each computes exactly its part, so the next op reads rows its own
  // core wrote; a late thread still takes fewer chunks. (MobileNetV2 int8 / uint8 at 2 threads:
  // 1.018x / 1.023x faster, in-process A/B, medians of 200 alternated pairs.)
  // (Not for a few rows, e.g. FULLY_CONNECTED's one: their tasks come from cutting the columns.)
  const int64_t parts = threads > 1 && M >= 4 * int64_t{threads} ? threads : 1;
  const int64_t part_max = (M + parts - 1) / parts;
  const int64_t chunks_per_part = (part_max + chunk_rows - 1) / chunk_rows;
  const int64_t m_chunks = parts * chunks_per_part;
  const auto chunk = [&](int64_t mc, int64_t* row0) {
    const int64_t s = mc / chunks_per_part, j = mc % chunks_per_part;
    const int64_t begin = M * s / parts, end = M * (s + 1) / parts;
    *row0 = begin + j * chunk_rows;
    return std::min(chunk_rows, end - *row0);
  };
  int64_t block_panels = std::max<int64_t>(1, static_cast<int64_t>(kBBlockBytes) / std::max<int64_t>(panel_bytes, 1));
  int64_t n_blocks = (panels + block_panels - 1) / block_panels;
  if (threads > 1 && m_chunks < 2 * threads) {
    // Too few row chunks to keep the threads busy: cut the columns too.
    const int64_t want = (2 * threads + m_chunks - 1) / m_chunks;
    n_blocks = std::min<int64_t>(panels, std::max(n_blocks, want));
  }
  block_panels = (panels + n_blocks - 1) / n_blocks;
  n_blocks = (panels + block_panels - 1) / block_panels;
  const int64_t tasks = m_chunks * n_blocks;

  // Unclaimed tasks [front, end) in one word (front in the high half). Slot 1 claims from the end,
  // every other slot from the front: with two threads each computes one contiguous part of the
  // output rows (the top or the bottom), as the row-split ops around it do, so activations stay
  // in the core that wrote them; a slot that starts late still just takes fewer tasks.
  std::atomic<uint64_t> range{static_cast<uint64_t>(tasks)};
  const auto claim = [&](bool from_end) -> int64_t {
    uint64_t r = range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t f = r >> 32, e = r & 0xFFFFFFFFu;
      if (f >= e) return -1;
      const uint64_t next = from_end ? (f << 32 | (e - 1)) : ((f + 1) << 32 | e);
      if (range.compare_exchange_weak(r, next, std::memory_order_relaxed)) return static_cast<int64_t>(from_end ? e - 1 : f);
    }
  };
  auto worker = [&](int64_t slot) {
    int64_t packed = -1;
    for (;;) {
      const int64_t task = claim(slot == 1);
      if (task < 0) break;
      const int64_t mc = task / n_blocks, nb = task % n_blocks;
      GemmTask t;
      t.slot = static_cast<int>(slot);
      const int64_t rows = chunk(mc, &t.row0);
      if (rows <= 0) continue;  // a part shorter than its chunks
      t.rows = static_cast<int>(rows);
      t.new_chunk = mc != packed;
      packed = mc;
      t.p0 = static_cast<int>(nb * block_panels);
      t.p1 = static_cast<int>(std::min<int64_t>(panels, t.p0 + block_panels));
      run(t);
    }
  };
  if (tasks == 1 || threads == 1) {
    worker(0);
    return;
  }
  pool.ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) worker(s);
  });
}

void RunGemm(rt::ThreadPool& pool, int64_t M, const PackedB& b, const APacker& pack, const GemmOutput& out) {
  if (M <= 0 || b.N <= 0) return;
  const int64_t lda = Lda(b);
  const int64_t chunk_rows = ChunkRows(b, M, pool.num_threads());
  const int64_t panel_bytes = int64_t{b.K2} * 2 * kNR * int64_t{sizeof(int16_t)};
  ForEachGemmTask(pool, M, chunk_rows, b.panels, panel_bytes, [&](const GemmTask& t) {
    const int16_t* a = pack.InPlace(t.row0, lda);
    if (a == nullptr) {
      int16_t* packed = reinterpret_cast<int16_t*>(pool.SlotScratch(t.slot));
      if (t.new_chunk) pack.Pack(t.row0, t.rows, packed, lda);
      a = packed;
    }
    alignas(32) int32_t acc[kMR * kNR];
    if (out.i16v) {
      Int16VnniChunk(a, lda, t.rows, b, t.p0, t.p1, *out.i16v, static_cast<int16_t*>(out.c) + t.row0 * out.ldc,
                     out.ldc);
      return;
    }
    for (int r = 0; r < t.rows; r += kMR) {
      const int mr = std::min(kMR, t.rows - r);
      for (int p = t.p0; p < t.p1; ++p) {
        MicroKernel(mr, b.K2, a + r * lda, lda, b.panel(p), acc);
        StoreTile(out, acc, mr, t.row0 + r, p * kNR, std::min(kNR, b.N - p * kNR));
      }
    }
  });
}

}  // namespace edgeopt::kernels::qgemm
