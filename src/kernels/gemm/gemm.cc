// Packing, the portable scalar micro-kernels and the GEMM / indirect GEMM drivers.
#include "kernels/gemm/gemm.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels::gemm {

// ---------------------------------------------------------------------------------------------
// Packing

void PackedB::Allocate(int n, int k, bool pairs, int taps) {
  n_ = n;
  k_ = k;
  taps_ = taps;
  pairs_ = pairs;
  buf_.Reset(padded_n() + static_cast<size_t>(panels()) * panel_stride());
}

PackedB PackedB::FromNK(const float* w, const float* bias, int n, int k) {
  PackedB p;
  p.Allocate(n, k, false);
  float* out = p.buf_.data();
  if (bias) std::memcpy(out, bias, sizeof(float) * n);
  for (int panel = 0; panel < p.panels(); ++panel) {
    float* dst = out + p.padded_n() + static_cast<size_t>(panel) * p.panel_stride();
    const int n0 = panel * kNr;
    const int cols = std::min(kNr, n - n0);
    for (int j = 0; j < cols; ++j) {
      const float* src = w + static_cast<size_t>(n0 + j) * k;
      for (int kk = 0; kk < k; ++kk) dst[static_cast<size_t>(kk) * kNr + j] = src[kk];
    }
  }
  return p;
}

PackedB PackedB::FromKN(const float* w, const float* bias, int n, int k) {
  PackedB p;
  p.Allocate(n, k, false);
  float* out = p.buf_.data();
  if (bias) std::memcpy(out, bias, sizeof(float) * n);
  for (int panel = 0; panel < p.panels(); ++panel) {
    float* dst = out + p.padded_n() + static_cast<size_t>(panel) * p.panel_stride();
    const int n0 = panel * kNr;
    const int cols = std::min(kNr, n - n0);
    for (int kk = 0; kk < k; ++kk)
      std::memcpy(dst + static_cast<size_t>(kk) * kNr, w + static_cast<size_t>(kk) * n + n0, sizeof(float) * cols);
  }
  return p;
}

PackedB PackedB::FromNKPairs(const float* w, const float* bias, int n, int k, int taps) {
  PackedB p;
  if (taps < 1 || k % taps != 0) taps = 1;  // not an IGemm's K: one run
  p.Allocate(n, k, true, taps);  // zero-filled: padding columns and odd runs' last odd lanes stay 0
  float* out = p.buf_.data();
  if (bias) std::memcpy(out, bias, sizeof(float) * n);
  const size_t group_stride = p.panel_stride() / 2;
  const int kc = k / taps;
  const size_t tap_pairs = static_cast<size_t>(kc + 1) / 2;
  for (int j = 0; j < n; ++j) {
    float* dst = out + p.padded_n() + static_cast<size_t>(j / 8) * group_stride + 2 * (j % 8);
    const float* src = w + static_cast<size_t>(j) * k;
    for (int t = 0; t < taps; ++t)
      for (int kk = 0; kk < kc; ++kk) dst[(t * tap_pairs + static_cast<size_t>(kk / 2)) * 16 + kk % 2] = src[t * kc + kk];
  }
  return p;
}

PackedB PackNKFor(const Ukernels& uk, const float* w, const float* bias, int n, int k, int taps) {
  return uk.pairs ? PackedB::FromNKPairs(w, bias, n, k, taps) : PackedB::FromNK(w, bias, n, k);
}

// ---------------------------------------------------------------------------------------------
// Scalar micro-kernels: plain loops over a 2×16 tile with compile-time bounds, which compilers
// vectorize with the baseline ISA (SSE2: 8 accumulator registers, 4 for a row of B). The
// fallback for CPUs without AVX2.

namespace {

constexpr int kScalarMr = 2;

inline float Clamp(float x, MinMax mm) { return std::min(std::max(x, mm.min), mm.max); }

template <int MR>
struct ScalarTile {
  float acc[MR][kNr];

  void Init(const float* bias, float* const* c, size_t cols) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < kNr; ++j) acc[r][j] = bias ? bias[j] : (j < static_cast<int>(cols) ? c[r][j] : 0.0f);
  }
  void Step(const float* w, const float* const* a, size_t k) {
    for (int r = 0; r < MR; ++r) {
      const float av = a[r][k];
      for (int j = 0; j < kNr; ++j) acc[r][j] += av * w[j];
    }
  }
  void Store(float* const* c, size_t cols, MinMax mm) const {
    for (int r = 0; r < MR; ++r)
      for (size_t j = 0; j < cols; ++j) c[r][j] = Clamp(acc[r][j], mm);
  }
};

template <int MR>
void ScalarGemmMr(size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
                  const float* bias, float* c, size_t c_stride, MinMax mm) {
  const float* ar[MR];
  float* cr[MR];
  for (int r = 0; r < MR; ++r) {
    ar[r] = a + r * a_stride;
    cr[r] = c + r * c_stride;
  }
  for (size_t n0 = 0; n0 < nc; n0 += kNr) {
    const size_t cols = std::min<size_t>(kNr, nc - n0);
    ScalarTile<MR> t;
    t.Init(bias, cr, cols);
    for (size_t k = 0; k < kc; ++k) t.Step(w + k * kNr, ar, k);
    t.Store(cr, cols, mm);
    w += w_stride;
    if (bias) bias += kNr;
    for (int r = 0; r < MR; ++r) cr[r] += kNr;
  }
}

void ScalarGemm(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
                const float* bias, float* c, size_t c_stride, MinMax mm) {
  if (mr == 2)
    ScalarGemmMr<2>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
  else if (mr == 1)
    ScalarGemmMr<1>(nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
}

template <int MR>
void ScalarIgemmMr(size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w, size_t w_stride,
                   const float* bias, float* c, size_t c_stride, MinMax mm) {
  float* cr[MR];
  for (int r = 0; r < MR; ++r) cr[r] = c + r * c_stride;
  for (size_t n0 = 0; n0 < nc; n0 += kNr) {
    const size_t cols = std::min<size_t>(kNr, nc - n0);
    ScalarTile<MR> t;
    t.Init(bias, cr, cols);
    const float* wp = w;
    for (size_t tap = 0; tap < taps; ++tap) {
      const float* ar[MR];
      for (int r = 0; r < MR; ++r) ar[r] = ind[tap * kScalarMr + r];
      for (size_t k = 0; k < kc; ++k, wp += kNr) t.Step(wp, ar, k);
    }
    t.Store(cr, cols, mm);
    w += w_stride;
    bias += kNr;
    for (int r = 0; r < MR; ++r) cr[r] += kNr;
  }
}

void ScalarIgemm(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w,
                 size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm) {
  if (mr == 2)
    ScalarIgemmMr<2>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
  else if (mr == 1)
    ScalarIgemmMr<1>(nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
}

void ScalarGemv(size_t nc, size_t kc, const float* a, const float* w, size_t w_stride, const float* bias, float* c,
                MinMax mm) {
  ScalarGemmMr<1>(nc, kc, a, 0, w, w_stride, bias, c, 0, mm);
}

}  // namespace

const Ukernels& ScalarUkernels() {
  static const Ukernels k{"scalar", kScalarMr, kNr, ScalarGemm, ScalarIgemm, ScalarGemv};
  return k;
}

const Ukernels& SelectUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n) {
  if (cpu.has_avx512() && !cpu.avx512_halved) return Avx512WideUkernels();
  if (cpu.has_avx512() && (k < 0 || k >= kAvx512MinK || (n > 0 && n <= 8))) return Avx512Ukernels();
  return cpu.has_avx2_fma() ? Avx2Ukernels() : ScalarUkernels();
}

namespace {
// Columns the seven-row tiles use well: whole panels, or whole panels and a last group of 1..8
// (one ymm).
bool Rows7Columns(int64_t n) { return n % kNr == 0 || (n > kNr && n % kNr <= 8); }
// Rows they use well: whole 7-row tiles, or enough rows that a short last tile hardly counts.
bool Rows7Rows(int64_t m) {
  return m >= kRows7MinM && (m % Avx512Rows7Ukernels().mr == 0 || m >= kRows7AnyM);
}
}  // namespace

const Ukernels& SelectDirectUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m) {
  const int64_t last = n % kNr;  // columns of the last panel (0: full)
  const bool small_k = cpu.avx512_halved ? k <= 16 || (k <= kSmallKMaxK && last == 0) ||
                                               (k <= kSmallKMaxKRagged && last != 0 && last != 8)
                                         : k <= 4 || (k <= 16 && n <= 32);
  if (cpu.has_avx512() && k >= 1 && n > 8 && small_k) return Avx512SmallKUkernels();
  if (cpu.has_avx512() && cpu.avx512_halved && k >= kAvx512MinK && Rows7Columns(n) && Rows7Rows(m))
    return Avx512Rows7Ukernels();
  return SelectUkernels(cpu, k, n);
}

const Ukernels& SelectPointwiseUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m) {
  const Ukernels& direct = SelectDirectUkernels(cpu, k, n, m);
  const int64_t tail = n % (2 * kNr);  // columns the 12×32 tiles leave to a 12×16 or 12×8 group
  if (cpu.has_avx512() && !cpu.avx512_halved && tail >= 1 && tail <= 24 && &direct != &Avx512SmallKUkernels())
    return Avx512PairUkernels();
  return direct;
}

const Ukernels& SelectConvUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m) {
  if (cpu.has_avx512() && cpu.avx512_halved && Rows7Columns(n) && Rows7Rows(m)) return Avx512Rows7Ukernels();
  if (cpu.has_avx512() && n > 1) return cpu.avx512_halved ? Avx512WideUkernels() : Avx512PairUkernels();
  return SelectUkernels(cpu, k, n);
}

// ---------------------------------------------------------------------------------------------
// Drivers

namespace {

// Blocking: a block of B (kc × nc) should stay in L2 while tiles of A pass over it; a tile of A
// (mr × kc) should stay in L1 while the micro-kernel walks the block's panels.
constexpr size_t kL2BlockFloats = 48 * 1024;  // 192 KB of B per N block
constexpr size_t kMaxKc = 512;                 // 6 rows × 512 × 4 B = 12 KB of A per tile
constexpr size_t kMMajorMaxBBytes = size_t{1} << 20;  // B that threads may each stream whole (Plan::m_major)

struct Plan {
  size_t nc;       // columns per N block (multiple of uk.nr)
  size_t n_blocks;
  size_t mc;       // tiles per M chunk
  size_t m_chunks;
  // Task order. N blocks outermost keeps one block of B in L2 while a thread's consecutive tasks
  // pass over M. When B fits one L2 block and N is cut only to make enough tasks, or B as a whole
  // stays within kMMajorMaxBBytes, M chunks go outermost instead: the caller takes tasks from the
  // front and workers from the back, so each thread then computes whole rows (all channels) of
  // the same part of the output, as the row-split ops before and after it do, and the
  // activations stay in its core's cache (vww_96 float at 2 threads: the 6x6x128 layers' N split
  // made every next depthwise read half its input from the other core; DeepLabV3 at 2 threads,
  // whose 33×33 160->480 layers B of 300 KB took two N blocks: 0.969 of the time with the whole-B
  // rule, other float models 0.99-1.00, in-process A/B).
  bool m_major = false;

  // Task t's N block and M chunk.
  std::pair<size_t, size_t> Split(size_t t) const {
    return m_major ? std::pair{t % n_blocks, t / n_blocks} : std::pair{t / m_chunks, t % m_chunks};
  }
};

Plan MakePlan(size_t m, size_t n, size_t k, const Ukernels& uk, int threads) {
  Plan p;
  const size_t mr = uk.mr, nr = uk.nr;
  const size_t tiles = (m + mr - 1) / mr;
  const size_t padded_n = (n + kNr - 1) / kNr * kNr;
  p.nc = std::max<size_t>(nr, kL2BlockFloats / std::max<size_t>(1, std::min(k, kMaxKc)) / nr * nr);
  p.nc = std::min(p.nc, padded_n);
  if (threads > 1) {
    // About four tasks per thread, each at least ~64K multiply-adds; prefer cutting M (each
    // task then reads its own rows of A once), cut N when M has too few tiles.
    const size_t macs = m * n * k;
    const size_t target = static_cast<size_t>(TaskCount(threads, static_cast<int64_t>(std::max<size_t>(1, macs >> 16)), 1));
    size_t n_blocks = (padded_n + p.nc - 1) / p.nc;
    p.m_major = n_blocks == 1 || k * padded_n * sizeof(float) <= kMMajorMaxBBytes;
    if (tiles * n_blocks < target) {
      const size_t units = (padded_n + nr - 1) / nr;
      const size_t want_n_blocks = std::min(units, (target + tiles - 1) / tiles);
      if (want_n_blocks > n_blocks) p.nc = (units + want_n_blocks - 1) / want_n_blocks * nr;
    }
    n_blocks = (padded_n + p.nc - 1) / p.nc;
    const size_t m_chunks = std::max<size_t>(1, std::min(tiles, (target + n_blocks - 1) / n_blocks));
    p.mc = (tiles + m_chunks - 1) / m_chunks;
  } else {
    p.mc = tiles;
  }
  p.n_blocks = (padded_n + p.nc - 1) / p.nc;
  p.m_chunks = (tiles + p.mc - 1) / p.mc;
  return p;
}

}  // namespace

void Gemm(const Ukernels& uk, rt::ThreadPool* pool, size_t m, const float* a, size_t a_stride, const PackedB& b,
          float* c, size_t c_stride, MinMax mm, const float* bias) {
  const size_t n = b.n(), k = b.k();
  if (m == 0 || n == 0) return;
  if (!bias) bias = b.bias();
  const int threads = pool ? pool->num_threads() : 1;
  const MinMax no_clamp{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};

  if (m == 1 && uk.gemv) {
    // One row: split the panels between threads; the weights are streamed once.
    const size_t panels = b.panels();
    const size_t tasks = static_cast<size_t>(TaskCount(threads, static_cast<int64_t>(panels),
                                                       std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, k)), 1));
    RunTasks(pool, static_cast<int64_t>(tasks), [&](int64_t t) {
      const size_t p0 = panels * t / tasks, p1 = panels * (t + 1) / tasks;
      if (p0 == p1) return;
      const size_t n0 = p0 * kNr, n1 = std::min(n, p1 * kNr);
      uk.gemv(n1 - n0, k, a, b.panel(static_cast<int>(p0)), b.panel_stride(), bias + n0, c + n0, mm);
    });
    return;
  }

  const Plan plan = MakePlan(m, n, k, uk, threads);
  const size_t tiles = (m + uk.mr - 1) / uk.mr;
  RunTasks(pool, static_cast<int64_t>(plan.n_blocks * plan.m_chunks), [&](int64_t task) {
    const auto [nb, mb] = plan.Split(static_cast<size_t>(task));
    const size_t n0 = nb * plan.nc, nc = std::min(plan.nc, n - std::min(n, n0));
    if (nc == 0) return;
    const size_t t0 = mb * plan.mc, t1 = std::min(tiles, t0 + plan.mc);
    const float* w = b.panel(static_cast<int>(n0 / kNr));
    for (size_t t = t0; t < t1; ++t) {
      const size_t m0 = t * uk.mr, mr = std::min<size_t>(uk.mr, m - m0);
      const float* at = a + m0 * a_stride;
      float* ct = c + m0 * c_stride + n0;
      // K in blocks of kMaxKc (the k-pair layout in one: its blocks would not start at k0·kNr).
      const size_t max_kc = b.pairs() ? std::max<size_t>(k, 1) : kMaxKc;
      for (size_t k0 = 0; k0 < k || k0 == 0; k0 += max_kc) {
        const size_t kc = std::min(max_kc, k - k0);
        const bool last = k0 + kc >= k;
        uk.gemm(mr, nc, kc, at + k0, a_stride, w + k0 * kNr, b.panel_stride(), k0 == 0 ? bias + n0 : nullptr, ct,
                c_stride, last ? mm : no_clamp);
        if (kc == 0) break;
      }
    }
  });
}

void IGemm(const Ukernels& uk, rt::ThreadPool* pool, size_t m, size_t taps, const float* const* ind,
           const PackedB& b, float* c, size_t c_stride, MinMax mm) {
  const size_t n = b.n(), k = b.k();
  if (m == 0 || n == 0) return;
  const size_t kc = k / taps;
  const int threads = pool ? pool->num_threads() : 1;
  const Plan plan = MakePlan(m, n, k, uk, threads);
  const size_t tiles = (m + uk.mr - 1) / uk.mr;
  RunTasks(pool, static_cast<int64_t>(plan.n_blocks * plan.m_chunks), [&](int64_t task) {
    const auto [nb, mb] = plan.Split(static_cast<size_t>(task));
    const size_t n0 = nb * plan.nc, nc = std::min(plan.nc, n - std::min(n, n0));
    if (nc == 0) return;
    const size_t t0 = mb * plan.mc, t1 = std::min(tiles, t0 + plan.mc);
    const float* w = b.panel(static_cast<int>(n0 / kNr));
    for (size_t t = t0; t < t1; ++t) {
      const size_t m0 = t * uk.mr, mr = std::min<size_t>(uk.mr, m - m0);
      uk.igemm(mr, nc, kc, taps, ind + t * taps * uk.mr, w, b.panel_stride(), b.bias() + n0, c + m0 * c_stride + n0,
               c_stride, mm);
    }
  });
}

}  // namespace edgeopt::kernels::gemm
