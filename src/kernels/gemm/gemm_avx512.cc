// AVX-512 micro-kernels: 12×32 tiles over pairs of the 16-column panels (24 zmm accumulators,
// two B vectors and one broadcast of A per k: 27 of the 32 zmm registers) for K ≥ 96, 12×16
// tiles for smaller K (see GroupFor). Same packing as every family (gemm.h), so only the tile
// differs: per k, 2 loads of B and 12 broadcasts feed 24 zmm multiply-adds (the AVX2 6×16 tile
// needs 8 loads for 12 ymm multiply-adds), and each B block read from L2 serves twice as many
// rows.
//
// Column tails: a last group of 9..16 columns runs one zmm per row, 1..8 one ymm (Zen 4 executes
// a zmm multiply-add as two ymm halves, so a ymm on the padding half costs half as much). Tiles
// of fewer than 12 rows run instances compiled for that many rows.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment (__Y = __Y) that
// -Wuninitialized reports inside every inlined min/max/cast (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <array>
#include <cstring>
#include <utility>

#include "kernels/common/vec_f32.h"
#include "kernels/gemm/gemm.h"

namespace edgeopt::kernels::gemm {
namespace {

constexpr int kMr = 12;

inline size_t Min(size_t a, size_t b) { return a < b ? a : b; }

// mask of the first n (0..16) lanes
inline __mmask16 Lanes(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// MR rows × (16·NZ + 8·kHalf) columns (used: NZ = 2 or 1 without the half, or the half alone).
// Panel j of the group is at w[j]; the ymm half reads the first 8 columns of panel NZ. Row r of C is at c + r·c_stride (computed where used: twelve row
// pointers would not fit the general registers beside A's).
template <int MR, int NZ, bool kHalf>
struct Tile {
  static constexpr int kZ = NZ > 0 ? NZ : 1;
  __m512 acc[MR][kZ];
  __m256 half[MR];

  inline void Init(const float* bias, float* c, size_t c_stride, size_t cols) {
    if (bias) {
#pragma GCC unroll 16
      for (int j = 0; j < NZ; ++j) {
        const __m512 b = _mm512_load_ps(bias + 16 * j);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) acc[r][j] = b;
      }
      if (kHalf) {
        const __m256 b = _mm256_load_ps(bias + 16 * NZ);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) half[r] = b;
      }
      return;
    }
#pragma GCC unroll 16
    for (int j = 0; j < NZ; ++j) {
      const __mmask16 m = Lanes(Min(16, cols - Min(cols, 16 * j)));
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_maskz_loadu_ps(m, c + r * c_stride + 16 * j);
    }
    if (kHalf) {
      const __mmask8 m = static_cast<__mmask8>(Lanes(Min(8, cols - 16 * NZ)));
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) half[r] = _mm256_maskz_loadu_ps(m, c + r * c_stride + 16 * NZ);
    }
  }

  inline void Step(const float* const* w, const float* const* a, size_t k) {
    __m512 b[kZ];
#pragma GCC unroll 16
    for (int j = 0; j < NZ; ++j) b[j] = _mm512_load_ps(w[j] + k * kNr);
    __m256 bh = kHalf ? _mm256_load_ps(w[NZ] + k * kNr) : _mm256_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      if (NZ > 0) {
        const __m512 va = _mm512_set1_ps(a[r][k]);
#pragma GCC unroll 16
        for (int j = 0; j < NZ; ++j) acc[r][j] = _mm512_fmadd_ps(va, b[j], acc[r][j]);
        if (kHalf) half[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(va), bh, half[r]);
      } else {
        half[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][k]), bh, half[r]);
      }
    }
  }

  inline void Store(float* c, size_t c_stride, size_t cols, MinMax mm) {
    const __m512 vmin = _mm512_set1_ps(mm.min), vmax = _mm512_set1_ps(mm.max);
    // max(min, x) then min(max, x): a NaN accumulator stays NaN, as with std::min/std::max.
#pragma GCC unroll 16
    for (int j = 0; j < NZ; ++j) {
      const size_t n = Min(16, cols - Min(cols, 16 * j));
      const __mmask16 m = Lanes(n);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const __m512 v = _mm512_min_ps(vmax, _mm512_max_ps(vmin, acc[r][j]));
        if (n == 16)
          _mm512_storeu_ps(c + r * c_stride + 16 * j, v);
        else
          _mm512_mask_storeu_ps(c + r * c_stride + 16 * j, m, v);
      }
    }
    if (kHalf) {
      const __m256 hmin = _mm512_castps512_ps256(vmin), hmax = _mm512_castps512_ps256(vmax);
      const __mmask8 m = static_cast<__mmask8>(Lanes(Min(8, cols - 16 * NZ)));
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r)
        _mm256_mask_storeu_ps(c + r * c_stride + 16 * NZ, m, _mm256_min_ps(hmax, _mm256_max_ps(hmin, half[r])));
    }
  }
};

// One column group of a direct GEMM tile: rows ar[0..MR), K = kc.
template <int MR, int NZ, bool kHalf>
inline void GemmGroup(size_t kc, const float* const* ar, const float* const* wp, const float* bias, float* c,
                      size_t c_stride, size_t cols, MinMax mm) {
  Tile<MR, NZ, kHalf> t;
  t.Init(bias, c, c_stride, cols);
  size_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    t.Step(wp, ar, k);
    t.Step(wp, ar, k + 1);
  }
  if (k < kc) t.Step(wp, ar, k);
  t.Store(c, c_stride, cols, mm);
}

// One column group of an indirect GEMM tile: per tap, rows from the indirection buffer.
template <int MR, int NZ, bool kHalf>
inline void IgemmGroup(size_t kc, size_t taps, const float* const* ind, const float* const* wp, const float* bias,
                       float* c, size_t c_stride, size_t cols, MinMax mm) {
  Tile<MR, NZ, kHalf> t;
  t.Init(bias, c, c_stride, cols);
  const float* wt[2] = {wp[0], wp[1]};
  for (size_t tap = 0; tap < taps; ++tap, ind += kMr) {
    const float* ar[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) ar[r] = ind[r];
    for (size_t k = 0; k < kc; ++k) t.Step(wt, ar, k);
    wt[0] += kc * kNr;
    wt[1] += kc * kNr;
  }
  t.Store(c, c_stride, cols, mm);
}

// Which tile a group of `cols` remaining columns (> 0) takes: 25..32 columns two zmm, 9..16
// (and 17..24, then 1..8) one zmm, 1..8 one ymm. Groups cover 32 columns (two panels) or 16.
// Two-panel groups only when K ≥ the family's kWideMin: measured on Zen 4 (edgeopt_kernel_bench,
// hot caches), where a zmm multiply-add is two ymm halves, 12×32 tiles lose 5-15% against 12×16
// ones for K = 16..64 and win 5-20% for K ≥ 96 (kWideMinHalved). Where zmm run at full width
// (Zen 5), a 12×16 tile's 12 broadcasts and one B load per k keep the load ports as busy as its
// 12 multiply-adds keep the two FMA pipes, and 12×32 tiles (14 loads per 24 multiply-adds) won
// at every depth (GEMM alone, CPU time, alternated, M = 112-3136: K = 16 1.0-1.12x, K = 24-32
// 1.08-1.12x, K = 48-64 1.09-1.15x), so that family is always wide. A zmm + ymm tile for 17..24
// columns lost to a zmm tile followed by a ymm one (74 vs 88 GFLOP/s at K = 144, N = 24, Zen 4).
constexpr size_t kWideMinHalved = 96;
enum class Group { kTwo, kOne, kHalf };
inline Group GroupFor(size_t cols, bool wide) {
  if (wide && cols > 24) return Group::kTwo;
  if (cols > 8) return Group::kOne;
  return Group::kHalf;
}

// Walks nc columns in groups: Run::template Group<NZ, kHalf>(wp, bias, c, cols). k: the whole K.
template <size_t kWideMin, typename Run>
inline void ForEachGroup(size_t nc, size_t k, const float* w, size_t w_stride, const float* bias, float* c,
                         const Run& run) {
  const bool wide = k >= kWideMin;
  while (nc > 0) {
    const Group g = GroupFor(nc, wide);
    const bool two_panels = g == Group::kTwo;
    const float* wp[2] = {w, two_panels ? w + w_stride : w};
    const size_t cols = Min(nc, two_panels ? 2 * kNr : kNr);
    switch (g) {
      case Group::kTwo: run.template Group<2, false>(wp, bias, c, cols); break;
      case Group::kOne: run.template Group<1, false>(wp, bias, c, cols); break;
      case Group::kHalf: run.template Group<0, true>(wp, bias, c, cols); break;
    }
    const size_t panels = two_panels ? 2 : 1;
    nc -= cols;
    w += panels * w_stride;
    if (bias) bias += panels * kNr;
    c += panels * kNr;
  }
}

template <int MR>
struct GemmRun {
  const float* ar[MR];
  size_t kc, c_stride;
  MinMax mm;
  template <int NZ, bool kHalf>
  void Group(const float* const* wp, const float* bias, float* c, size_t cols) const {
    GemmGroup<MR, NZ, kHalf>(kc, ar, wp, bias, c, c_stride, cols, mm);
  }
};

template <int MR, size_t kWideMin>
void GemmMr(size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
            const float* bias, float* c, size_t c_stride, MinMax mm) {
  GemmRun<MR> run;
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) run.ar[r] = a + r * a_stride;
  run.kc = kc;
  run.c_stride = c_stride;
  run.mm = mm;
  ForEachGroup<kWideMin>(nc, kc, w, w_stride, bias, c, run);
}

template <int MR>
struct IgemmRun {
  const float* const* ind;
  size_t kc, taps, c_stride;
  MinMax mm;
  template <int NZ, bool kHalf>
  void Group(const float* const* wp, const float* bias, float* c, size_t cols) const {
    IgemmGroup<MR, NZ, kHalf>(kc, taps, ind, wp, bias, c, c_stride, cols, mm);
  }
};

template <int MR, size_t kWideMin>
void IgemmMr(size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w, size_t w_stride,
             const float* bias, float* c, size_t c_stride, MinMax mm) {
  ForEachGroup<kWideMin>(nc, kc * taps, w, w_stride, bias, c, IgemmRun<MR>{ind, kc, taps, c_stride, mm});
}

template <template <int> class Fn, typename... Args>
inline void ByRows(size_t mr, Args... args) {
  switch (mr) {
    case 12: return Fn<12>::Run(args...);
    case 11: return Fn<11>::Run(args...);
    case 10: return Fn<10>::Run(args...);
    case 9: return Fn<9>::Run(args...);
    case 8: return Fn<8>::Run(args...);
    case 7: return Fn<7>::Run(args...);
    case 6: return Fn<6>::Run(args...);
    case 5: return Fn<5>::Run(args...);
    case 4: return Fn<4>::Run(args...);
    case 3: return Fn<3>::Run(args...);
    case 2: return Fn<2>::Run(args...);
    case 1: return Fn<1>::Run(args...);
    default: return;
  }
}

// The row-count dispatch of one family (kWideMin: the depth from which it takes 12×32 tiles).
template <size_t kWideMin>
struct Family {
  template <int MR>
  struct GemmRows {
    template <typename... Args>
    static void Run(Args... args) { GemmMr<MR, kWideMin>(args...); }
  };
  template <int MR>
  struct IgemmRows {
    template <typename... Args>
    static void Run(Args... args) { IgemmMr<MR, kWideMin>(args...); }
  };
  static void Gemm(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
                   const float* bias, float* c, size_t c_stride, MinMax mm) {
    ByRows<GemmRows>(mr, nc, kc, a, a_stride, w, w_stride, bias, c, c_stride, mm);
  }
  static void Igemm(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w,
                    size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm) {
    ByRows<IgemmRows>(mr, nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
  }
};
using HalvedFamily = Family<kWideMinHalved>;
using FullWidthFamily = Family<0>;

// One row: eight panels at a time (eight zmm accumulators, eight weight streams, enough loads in
// flight for weights that come from L3 or memory), then one panel at a time with K unrolled by
// two.
void Gemv1x16(size_t nc, size_t kc, const float* a, const float* w, size_t w_stride, const float* bias, float* c,
              MinMax mm) {
  const __m512 vmin = _mm512_set1_ps(mm.min), vmax = _mm512_set1_ps(mm.max);
  constexpr int kP = 8;
  for (; nc >= kP * kNr; nc -= kP * kNr, w += kP * w_stride, bias += kP * kNr, c += kP * kNr) {
    __m512 acc[kP];
    #pragma GCC unroll 16
    for (int j = 0; j < kP; ++j) acc[j] = _mm512_load_ps(bias + 16 * j);
    for (size_t k = 0; k < kc; ++k) {
      const __m512 va = _mm512_set1_ps(a[k]);
      #pragma GCC unroll 16
      for (int j = 0; j < kP; ++j) acc[j] = _mm512_fmadd_ps(va, _mm512_load_ps(w + j * w_stride + k * kNr), acc[j]);
    }
    #pragma GCC unroll 16
    for (int j = 0; j < kP; ++j) _mm512_storeu_ps(c + 16 * j, _mm512_min_ps(vmax, _mm512_max_ps(vmin, acc[j])));
  }
  for (; nc > 0; w += w_stride, bias += kNr, c += kNr) {
    __m512 a0 = _mm512_load_ps(bias), a1 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 2 <= kc; k += 2) {
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), _mm512_load_ps(w + k * kNr), a0);
      a1 = _mm512_fmadd_ps(_mm512_set1_ps(a[k + 1]), _mm512_load_ps(w + k * kNr + kNr), a1);
    }
    if (k < kc) a0 = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), _mm512_load_ps(w + k * kNr), a0);
    const __m512 v = _mm512_min_ps(vmax, _mm512_max_ps(vmin, _mm512_add_ps(a0, a1)));
    const size_t cols = Min(kNr, nc);
    _mm512_mask_storeu_ps(c, Lanes(cols), v);
    nc -= cols;
  }
}

// Small-K family: for a GEMM of few columns of A (K <= 32: the 1×1 convolutions right after a
// depthwise layer of 8-32 channels), where the tile above spends as long loading and storing its
// 12 rows of accumulators as multiplying. Here one panel's K×16 weights (K <= 16 per pass: 16
// zmm) stay in registers while rows of A stream past, four at a time, each row's accumulator
// fed by K broadcast multiply-adds and stored once. K > 16 runs in passes of 16 through C.
// The sum runs in the same order as the tiles' (bias, then k = 0, 1, ...), so results are the
// same bit for bit. Rows come in blocks of kSmallKMr (the driver's tiles): a block's A and C stay
// in L1 while the panels pass over it. 64 rows: 128-row tiles were ~2% faster at 1 thread but
// split small layers unevenly between 2 threads (vww_96 1.06x slower at 2 threads than 32 rows).
constexpr int kSmallKMr = 64;
constexpr int kSmallKPass = 16;
constexpr int kSmallKRows = 4;

// Rows [0, rows) × one panel (cols lanes of `mask`) for KC (0..16) columns of A from a.
// bias != null: accumulators start from the bias; null: from C. `last`: clamp to mm.
template <int KC>
void SmallKPass(size_t rows, const float* a, size_t a_stride, const float* w, const float* bias, float* c,
                size_t c_stride, __mmask16 mask, bool last, MinMax mm) {
  const __m512 vmin = _mm512_set1_ps(mm.min), vmax = _mm512_set1_ps(mm.max);
  __m512 b[KC > 0 ? KC : 1];
#pragma GCC unroll 16
  for (int k = 0; k < KC; ++k) b[k] = _mm512_loadu_ps(w + kNr * k);
  const __m512 vb = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  auto finish = [&](__m512 v, float* out) {
    if (last) v = _mm512_min_ps(vmax, _mm512_max_ps(vmin, v));
    _mm512_mask_storeu_ps(out, mask, v);
  };
  size_t i = 0;
  for (; i + kSmallKRows <= rows; i += kSmallKRows, a += kSmallKRows * a_stride, c += kSmallKRows * c_stride) {
    __m512 acc[kSmallKRows];
#pragma GCC unroll 16
    for (int r = 0; r < kSmallKRows; ++r) acc[r] = bias ? vb : _mm512_maskz_loadu_ps(mask, c + r * c_stride);
#pragma GCC unroll 16
    for (int k = 0; k < KC; ++k)
#pragma GCC unroll 16
      for (int r = 0; r < kSmallKRows; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * a_stride + k]), b[k], acc[r]);
#pragma GCC unroll 16
    for (int r = 0; r < kSmallKRows; ++r) finish(acc[r], c + r * c_stride);
  }
  for (; i < rows; ++i, a += a_stride, c += c_stride) {
    __m512 acc = bias ? vb : _mm512_maskz_loadu_ps(mask, c);
#pragma GCC unroll 16
    for (int k = 0; k < KC; ++k) acc = _mm512_fmadd_ps(_mm512_set1_ps(a[k]), b[k], acc);
    finish(acc, c);
  }
}

using SmallKPassFn = void (*)(size_t, const float*, size_t, const float*, const float*, float*, size_t, __mmask16, bool,
                              MinMax);
template <int... KC>
constexpr std::array<SmallKPassFn, sizeof...(KC)> SmallKPasses(std::integer_sequence<int, KC...>) {
  return {&SmallKPass<KC>...};
}
// Indexed by the pass's depth, 0..16 (0: K = 0, the bias alone).
constexpr auto kSmallKPasses = SmallKPasses(std::make_integer_sequence<int, kSmallKPass + 1>{});

void GemmSmallK(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
                const float* bias, float* c, size_t c_stride, MinMax mm) {
  for (size_t n0 = 0; n0 < nc; n0 += kNr, w += w_stride, c += kNr) {
    const __mmask16 mask = Lanes(Min(kNr, nc - n0));
    size_t k0 = 0;
    do {
      const size_t pass = Min(kSmallKPass, kc - k0);
      kSmallKPasses[pass](mr, a + k0, a_stride, w + k0 * kNr, k0 == 0 && bias ? bias + n0 : nullptr, c, c_stride, mask,
                          k0 + pass >= kc, mm);
      k0 += pass;
    } while (k0 < kc);
  }
}

// K-pair family: for GEMMs whose columns leave the tiles above a group of 1..24 (the 1×1
// projections of MobileNet-style blocks, N = 16-24; N = 40, 56, 88, ...). There the tiles run
// one zmm (or ymm) of B per row: per k, 12 broadcasts of A and one load of B feed only 12
// multiply-adds (and a 17..24-column group a second 12 for 8 columns), so the loads, not the
// two FMA pipes, set the pace (61-64% of the FMA peak on Zen 5 at K = 32-144, N = 16-24). Here
// a zmm holds 8 columns for two consecutive k (lane 2j: B[k][j], lane 2j+1: B[k+1][j];
// PackedB::FromNKPairs), and one 64-bit broadcast of A[r][k..k+1] feeds a multiply-add per 8
// columns: a 12-row × 16-column tile takes 12 broadcasts and 2 loads per 24 multiply-adds, an
// 8 × 24 one 8 and 3 per 24, as the 12×32 tiles do. At the end the even and odd lanes (the sums
// over even and over odd k) are added, then the bias. Standalone, alternated with the tiles
// above (Zen 5, M = 768-12544): K = 48-144, N = 24 1.43-1.47x; K = 32, N = 16 1.33x; K = 192,
// N = 16 1.17x (190-220 GFLOP/s); the selection's figures are in gemm.h. The sums run in another
// order than the tiles' (float rounding only). An odd K's last k runs alone; K is never cut
// into blocks (the packing is not the panels' layout, Gemm passes the whole depth).
constexpr int kPairMr = 24;  // driver tiles: three 8-row tiles of 24 columns, two 12-row of 16
constexpr int kPairNr = 48;  // N blocks of whole 24-column chunks

inline __m512 BroadcastPair(const float* p) {
  double d;
  std::memcpy(&d, p, sizeof d);
  return _mm512_castpd_ps(_mm512_set1_pd(d));
}

// The end of a pair tile: even plus odd lanes, plus the bias (or C when bias is null), clamped,
// stored (nc <= 8·G columns).
template <int MR, int G>
__attribute__((always_inline)) inline void PairStore(const __m512 (&acc)[MR][G], const float* bias, float* c,
                                                     size_t c_stride, size_t nc, MinMax mm) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 vmin = _mm512_set1_ps(mm.min), vmax = _mm512_set1_ps(mm.max);
  const size_t n0 = Min(nc, 16), n1 = nc - n0;  // columns of the first 16 and of the rest
  const __mmask16 m0 = Lanes(n0), m1 = Lanes(n1);
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * c_stride;
    // Lanes 0..7 from group 0, 8..15 from group 1 (or nothing without one).
    const __m512 hi = G >= 2 ? acc[r][1] : _mm512_setzero_ps();
    __m512 s = _mm512_add_ps(_mm512_permutex2var_ps(acc[r][0], even, hi), _mm512_permutex2var_ps(acc[r][0], odd, hi));
    s = _mm512_add_ps(s, bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_maskz_loadu_ps(m0, cr));
    _mm512_mask_storeu_ps(cr, m0, _mm512_min_ps(vmax, _mm512_max_ps(vmin, s)));
    if (G == 3) {
      const __m512 t = acc[r][G - 1];
      __m512 s2 = _mm512_add_ps(_mm512_permutexvar_ps(even, t), _mm512_permutexvar_ps(odd, t));
      s2 = _mm512_add_ps(s2, bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_maskz_loadu_ps(m1, cr + 16));
      _mm512_mask_storeu_ps(cr + 16, m1, _mm512_min_ps(vmax, _mm512_max_ps(vmin, s2)));
    }
  }
}

// acc[r][g] += rows[r][0, kc) · the kc rows of group g (w: group 0, group g at w + g·gstride),
// pair by pair; an odd kc's last k runs alone on even lanes (its pair's odd lanes of B are zero,
// rows[r][kc] is not read, and an infinite A times that zero padding cannot make a NaN).
template <int MR, int G>
__attribute__((always_inline)) inline void PairSteps(__m512 (&acc)[MR][G], const float* const (&rows)[MR], size_t kc,
                                                     const float* w, size_t gstride) {
  size_t p = 0;
  for (; p < kc / 2; ++p) {
    __m512 b[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) b[g] = _mm512_load_ps(w + g * gstride + p * 16);
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const __m512 va = BroadcastPair(rows[r] + 2 * p);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_fmadd_ps(va, b[g], acc[r][g]);
    }
  }
  if (kc % 2) {
    __m512 b[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) b[g] = _mm512_load_ps(w + g * gstride + p * 16);
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const __m512 va = _mm512_set1_ps(rows[r][2 * p]);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_mask3_fmadd_ps(va, b[g], acc[r][g], 0x5555);
    }
  }
}

// MR rows × G groups of 8 columns (nc <= 8·G). w: group 0; group g at w + g·gstride.
template <int MR, int G>
void PairTile(size_t kc, const float* a, size_t a_stride, const float* w, size_t gstride, const float* bias, float* c,
              size_t c_stride, size_t nc, MinMax mm) {
  __m512 acc[MR][G];
  const float* rows[MR];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
    rows[r] = a + r * a_stride;
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  }
  PairSteps<MR, G>(acc, rows, kc, w, gstride);
  PairStore<MR, G>(acc, bias, c, c_stride, nc, mm);
}

// The indirect form: per tap, row r's kc floats at ind[tap · ind_stride + r]; each tap's
// ceil(kc/2) pairs follow each other in the packed groups (FromNKPairs with the taps).
template <int MR, int G>
void PairIgemmTile(size_t kc, size_t taps, const float* const* ind, size_t ind_stride, const float* w, size_t gstride,
                   const float* bias, float* c, size_t c_stride, size_t nc, MinMax mm) {
  __m512 acc[MR][G];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  for (size_t tap = 0; tap < taps; ++tap, ind += ind_stride, w += (kc + 1) / 2 * 16) {
    const float* rows[MR];
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) rows[r] = ind[r];
    PairSteps<MR, G>(acc, rows, kc, w, gstride);
  }
  PairStore<MR, G>(acc, bias, c, c_stride, nc, mm);
}

template <int G, int... Rows>
void PairIgemmRowsOf(std::integer_sequence<int, Rows...>, size_t mr, size_t nc, size_t kc, size_t taps,
                     const float* const* ind, const float* w, size_t gstride, const float* bias, float* c,
                     size_t c_stride, MinMax mm) {
  using TileFn = void (*)(size_t, size_t, const float* const*, size_t, const float*, size_t, const float*, float*, size_t,
                          size_t, MinMax);
  static constexpr TileFn kTiles[] = {&PairIgemmTile<Rows + 1, G>...};  // kTiles[r - 1]: r rows
  constexpr size_t kR = sizeof...(Rows);
  for (size_t r0 = 0; r0 < mr; r0 += kR)
    kTiles[Min(kR, mr - r0) - 1](kc, taps, ind + r0, kPairMr, w, gstride, bias, c + r0 * c_stride, c_stride, nc, mm);
}

// Rows [0, mr) in tiles of R rows (the last one shorter), G groups.
template <int G, int... Rows>
void PairRowsOf(std::integer_sequence<int, Rows...>, size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride,
                const float* w, size_t gstride, const float* bias, float* c, size_t c_stride, MinMax mm) {
  using TileFn = void (*)(size_t, const float*, size_t, const float*, size_t, const float*, float*, size_t, size_t,
                          MinMax);
  static constexpr TileFn kTiles[] = {&PairTile<Rows + 1, G>...};  // kTiles[r - 1]: r rows
  constexpr size_t kR = sizeof...(Rows);
  for (size_t r0 = 0; r0 < mr; r0 += kR)
    kTiles[Min(kR, mr - r0) - 1](kc, a + r0 * a_stride, a_stride, w, gstride, bias, c + r0 * c_stride, c_stride, nc, mm);
}

// w_stride: a 16-column panel, two groups of 8 (ceil(K/2) pairs × 16 floats each).
// Columns of the next pass over a row tile with nc columns left: 24 (8×3-vector tiles), but the
// last 32 as 16 + 16 (12×2) rather than 24 + 8, whose 12×1 pass loads one B vector per 12
// multiply-adds. In-process A/B (1 thread): 3×3 convolutions with N = 32 / 56 / 80 1.02-1.05x,
// the RGB stem 224->32 1.11x, 1×1 with N = 56 1.02-1.03x.
inline size_t PairCols(size_t nc) { return nc == 32 ? 16 : Min(nc, 24); }

// The passes over a row tile's nc columns (PairCols each): pass.template operator()<G>(rows,
// cols, w, bias, c) with G groups of 8 columns, rows the tile heights (PairRowsOf's sequence),
// w / bias / c at the pass's first column.
template <typename Pass>
__attribute__((always_inline)) inline void ForPairPasses(size_t nc, const float* w, size_t gstride, const float* bias,
                                                         float* c, Pass&& pass) {
  for (size_t cols; nc > 0; w += cols / 8 * gstride, bias = bias ? bias + cols : nullptr, c += cols, nc -= cols) {
    cols = PairCols(nc);
    if (cols > 16)
      pass.template operator()<3>(std::make_integer_sequence<int, 8>{}, cols, w, bias, c);
    else if (cols > 8)
      pass.template operator()<2>(std::make_integer_sequence<int, 12>{}, cols, w, bias, c);
    else
      pass.template operator()<1>(std::make_integer_sequence<int, 12>{}, cols, w, bias, c);
  }
}

void GemmPairs(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
               const float* bias, float* c, size_t c_stride, MinMax mm) {
  const size_t gstride = w_stride / 2;
  ForPairPasses(nc, w, gstride, bias, c,
                [&]<int G>(auto rows, size_t cols, const float* wp, const float* bp, float* cp) {
                  PairRowsOf<G>(rows, mr, cols, kc, a, a_stride, wp, gstride, bp, cp, c_stride, mm);
                });
}

// Indirect: ind holds taps × kPairMr pointers (IGemm's tile); B packed with the taps.
void IgemmPairs(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w, size_t w_stride,
                const float* bias, float* c, size_t c_stride, MinMax mm) {
  const size_t gstride = w_stride / 2;
  ForPairPasses(nc, w, gstride, bias, c,
                [&]<int G>(auto rows, size_t cols, const float* wp, const float* bp, float* cp) {
                  PairIgemmRowsOf<G>(rows, mr, cols, kc, taps, ind, wp, gstride, bp, cp, c_stride, mm);
                });
}

void GemvPairs(size_t nc, size_t kc, const float* a, const float* w, size_t w_stride, const float* bias, float* c,
               MinMax mm) {
  GemmPairs(1, nc, kc, a, kc, w, w_stride, bias, c, nc, mm);
}

// Seven rows × one panel (7 accumulators; per k one B load and seven broadcasts), panel after
// panel, for halved-zmm cores (Avx512Rows7Ukernels; gemm.h has the measurements): a last group
// of 1..8 columns runs on ymm (half a zmm's cost there). The same sums bit for bit as the other
// families (one multiply-add per k in k order, from the bias or from C). The direct GEMM is the
// indirect one with one tap (a compile-time one: with the tap loop left in, GEMMs ran 1-2% slower)
// and the rows' own addresses.
constexpr int kRows7Mr = 7;

// One panel (cols <= the vector's lanes) of MR rows: per tap, row r's kc floats at
// ind[tap · kRows7Mr + r]; w: the panel at the first tap. V: common/vec_f32.h's Avx512F32 (zmm)
// or Avx512VlF32 (ymm).
template <typename V, int MR, bool kOneTap>
__attribute__((always_inline)) inline void Rows7Panel(size_t cols, size_t kc, size_t taps, const float* const* ind,
                                                      const float* w, const float* bias, float* c, size_t c_stride,
                                                      MinMax mm) {
  const typename V::Mask m = V::TailMask(static_cast<int>(cols));
  typename V::T acc[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = bias ? V::Load(bias) : V::MaskLoad(c + r * c_stride, m);
  if (kOneTap) taps = 1;
  for (size_t tap = 0; tap < taps; ++tap) {
    const float* rows[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) rows[r] = ind[tap * kRows7Mr + r];
    for (size_t k = 0; k < kc; ++k, w += kNr) {
      const typename V::T b = V::Load(w);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) acc[r] = V::Fma(V::Set1(rows[r][k]), b, acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    V::MaskStore(c + r * c_stride, m, V::Clamp(acc[r], V::Set1(mm.min), V::Set1(mm.max)));
}

template <int MR, bool kOneTap>
void Rows7Tile(size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w, size_t w_stride,
               const float* bias, float* c, size_t c_stride, MinMax mm) {
  for (; nc > 0; w += w_stride, c += kNr, bias = bias ? bias + kNr : nullptr) {
    const size_t cols = Min(kNr, nc);
    if (cols > 8)
      Rows7Panel<Avx512F32, MR, kOneTap>(cols, kc, taps, ind, w, bias, c, c_stride, mm);
    else
      Rows7Panel<Avx512VlF32, MR, kOneTap>(cols, kc, taps, ind, w, bias, c, c_stride, mm);
    nc -= cols;
  }
}

template <bool kOneTap, int... Rows>
void Rows7Of(std::integer_sequence<int, Rows...>, size_t mr, size_t nc, size_t kc, size_t taps,
             const float* const* ind, const float* w, size_t w_stride, const float* bias, float* c, size_t c_stride,
             MinMax mm) {
  using TileFn = void (*)(size_t, size_t, size_t, const float* const*, const float*, size_t, const float*, float*,
                          size_t, MinMax);
  static constexpr TileFn kTiles[] = {&Rows7Tile<Rows + 1, kOneTap>...};  // kTiles[r - 1]: r rows
  if (mr >= 1 && mr <= sizeof...(Rows)) kTiles[mr - 1](nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
}

void IgemmRows7(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w,
                size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm) {
  Rows7Of<false>(std::make_integer_sequence<int, kRows7Mr>{}, mr, nc, kc, taps, ind, w, w_stride, bias, c, c_stride, mm);
}

void GemmRows7(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, size_t w_stride,
               const float* bias, float* c, size_t c_stride, MinMax mm) {
  const float* rows[kRows7Mr];  // only the tile's mr rows are read (no address past A is formed)
  for (size_t r = 0; r < mr && r < kRows7Mr; ++r) rows[r] = a + r * a_stride;
  Rows7Of<true>(std::make_integer_sequence<int, kRows7Mr>{}, mr, nc, kc, 1, rows, w, w_stride, bias, c, c_stride, mm);
}

}  // namespace

const Ukernels& Avx512Rows7Ukernels() {
  static const Ukernels k{"avx512/7x16", kRows7Mr, kNr, GemmRows7, IgemmRows7, Gemv1x16};
  return k;
}

const Ukernels& Avx512PairUkernels() {
  static const Ukernels k{"avx512/kpair", kPairMr, kPairNr, GemmPairs, IgemmPairs, GemvPairs, /*pairs=*/true};
  return k;
}

const Ukernels& Avx512SmallKUkernels() {
  static const Ukernels k{"avx512/smallk", kSmallKMr, kNr, GemmSmallK, nullptr, Gemv1x16};
  return k;
}

const Ukernels& Avx512Ukernels() {
  static const Ukernels k{"avx512", kMr, 2 * kNr, HalvedFamily::Gemm, HalvedFamily::Igemm, Gemv1x16};
  return k;
}

const Ukernels& Avx512WideUkernels() {
  static const Ukernels k{"avx512", kMr, 2 * kNr, FullWidthFamily::Gemm, FullWidthFamily::Igemm, Gemv1x16};
  return k;
}

}  // namespace edgeopt::kernels::gemm
