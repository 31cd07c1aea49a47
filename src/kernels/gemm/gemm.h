// Packed float32 GEMM: C[M,N] = A[M,K] · B[K,N] + bias[N], clamped to [min, max].
//
// A is row-major with a row stride (NHWC pixels × channels, so a 1×1 convolution runs directly
// on its input), or is given indirectly as row pointers (indirect GEMM for general convolution).
// B is packed once at prepare time into panels of kNr = 16 columns:
//
//   [bias: Np floats][panel 0: K rows × 16][panel 1: K rows × 16]...   Np = 16·ceil(N/16)
//
// Columns past N are zero in every panel, so micro-kernels always compute whole panels and only
// their stores are partial. Every micro-kernel family (AVX2+FMA, portable scalar, the AVX-512
// tiles) uses this one packing, so those packed weights do not depend on the CPU; the one
// exception, the AVX-512 k-pair family, has its own layout (PackedB::FromNKPairs) and cache key
// (PackKeyFor).
//
// Micro-kernels compute mr (≤ Ukernels::mr) rows × nc columns: the tile's A rows stay in L1
// while the kernel walks the nc columns panel by panel (B streams from L2). The drivers below
// cut M into tiles, N into L2-sized blocks and K into L1-sized blocks, and spread the tiles over
// the thread pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/gemm/aligned.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels::gemm {

constexpr int kNr = 16;

struct MinMax {
  float min;
  float max;
};

// Packed B (see the file comment). Immutable once packed; shared between interpreters.
class PackedB {
 public:
  int n() const { return n_; }
  int k() const { return k_; }
  int panels() const { return (n_ + kNr - 1) / kNr; }
  size_t padded_n() const { return static_cast<size_t>(panels()) * kNr; }
  const float* bias() const { return buf_.data(); }
  const float* panel(int p) const { return buf_.data() + padded_n() + static_cast<size_t>(p) * panel_stride(); }
  // Floats per panel: K rows of 16, or for the k-pair layout taps · ceil(K/taps/2) pairs of 16.
  size_t panel_stride() const {
    return static_cast<size_t>(pairs_ ? taps_ * ((k_ / taps_ + 1) / 2 * 2) : k_) * kNr;
  }
  bool pairs() const { return pairs_; }
  size_t bytes() const { return buf_.bytes(); }

  // From weights stored [N][K] row-major (FULLY_CONNECTED [out, in]; CONV_2D [O, H, W, I] is the
  // same with K = H·W·I in (ky, kx, ci) order). bias may be null (zeros).
  static PackedB FromNK(const float* w, const float* bias, int n, int k);
  // From weights stored [K][N] row-major (BATCH_MATMUL right-hand side, TFLite "transposed").
  static PackedB FromKN(const float* w, const float* bias, int n, int k);
  // The k-pair layout of the Avx512PairUkernels family, from weights [N][K]: each panel is two
  // groups of 8 columns; a group holds ceil(K/2) vectors of 16 floats, vector p lane 2j = B[2p][j]
  // and lane 2j+1 = B[2p+1][j] (zero past K). Same bias and panel addressing as above. With
  // taps > 1 (the indirect GEMM's K = taps · kc), each tap's kc rows are laid out so on their own:
  // for an odd kc no pair spans two taps (the last pair of each tap has zero odd lanes).
  static PackedB FromNKPairs(const float* w, const float* bias, int n, int k, int taps = 1);

 private:
  void Allocate(int n, int k, bool pairs, int taps = 1);
  int n_ = 0;
  int k_ = 0;
  int taps_ = 1;  // k-pair layout: runs of K / taps rows, each padded to whole pairs
  bool pairs_ = false;
  AlignedFloats buf_;
};

// Micro-kernel signatures. Strides are in floats. `w` points at panel 0 (at the K offset of the
// block), `w_stride` is the distance between panels. bias != null: accumulators start from the
// bias (16 per panel, first block of K); null: they start from C (later blocks of K).
// Rows r ≥ mr are never read or written.
using GemmFn = void (*)(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w,
                        size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm);
// Indirect: for tap t, row r reads kc floats at ind[t * Ukernels::mr + r]; K = taps · kc.
// Every one of the Ukernels::mr pointers per tap must be valid (tails repeat the last row).
using IgemmFn = void (*)(size_t mr, size_t nc, size_t kc, size_t taps, const float* const* ind, const float* w,
                         size_t w_stride, const float* bias, float* c, size_t c_stride, MinMax mm);
// One row (M = 1): c[0, nc) = a · B + bias; streams the weights once.
using GemvFn = void (*)(size_t nc, size_t kc, const float* a, const float* w, size_t w_stride, const float* bias,
                        float* c, MinMax mm);

struct Ukernels {
  const char* isa;  // "avx512", "avx2", "scalar": the last part of variant names
  int mr;           // rows per tile
  int nr;           // columns per tile (a multiple of kNr): N blocks are cut in multiples of it
  GemmFn gemm;
  IgemmFn igemm;
  GemvFn gemv;
  // B packed in k pairs (PackedB::FromNKPairs) instead of the panels' rows: pack with PackNKFor.
  bool pairs = false;
};

// Weights [N][K] (and bias) packed as `uk` reads them, and the packed-weight cache key of that
// layout (interpreters of one model share packed weights per op and key). taps: the indirect
// GEMM's taps (K = taps · kc) that B will run with; 1 for the direct GEMM.
PackedB PackNKFor(const Ukernels& uk, const float* w, const float* bias, int n, int k, int taps = 1);
inline const char* PackKeyFor(const Ukernels& uk, int taps = 1) {
  return !uk.pairs ? "f32gemm-nk" : taps > 1 ? "f32gemm-nk-pairs-per-tap" : "f32gemm-nk-pairs";
}

const Ukernels& ScalarUkernels();
const Ukernels& Avx2Ukernels();    // needs AVX2 + FMA: select through SelectUkernels
// AVX-512 12×32 / 12×16 tiles (needs CpuFeatures::has_avx512(); select through SelectUkernels):
// tuned for cores that split a zmm operation in two halves (12×32 tiles from K = 96 on), and for
// full-width ones (12×32 tiles at every depth). Both are named "avx512" and give the same sums.
const Ukernels& Avx512Ukernels();
const Ukernels& Avx512WideUkernels();
// The fastest family this CPU runs for a GEMM of depth k and n columns (< 0: unknown). Where zmm
// run at full width (CpuFeatures::avx512_halved false): AVX-512 at every depth (on Zen 5 it ran
// 1.4-1.6x the AVX2 6×16 tiles at K = 16-64: DeepLabV3's K = 48 1×1 layers 0.28 -> 0.17 ms, the
// K = 27 stem of MobileNetV2 0.25 -> 0.18 ms). On halved cores (Zen 4):
// AVX-512 from kAvx512MinK on, below that AVX2 (in MobileNetV2 the 112×112 1×1 layer with
// K = 16 ran in 0.42-0.46 ms with AVX2 vs 0.55-0.59 ms with AVX-512, the K = 27 stem
// 0.31-0.33 vs 0.34-0.35) — except for n <= 8, where the AVX2 6×16 tile would spend half its
// multiply-adds on padding columns and the AVX-512 family runs 12-row one-ymm tiles (the
// 3×3 stem of MobileNetV1 0.25 / vww_96, 8 columns, K = 27: 0.130-0.132 vs 0.146-0.147 ms).
constexpr int64_t kAvx512MinK = 64;
const Ukernels& SelectUkernels(const rt::CpuFeatures& cpu, int64_t k = -1, int64_t n = -1);

// Weights-in-registers AVX-512 family for small K (gemm_avx512.cc): direct GEMM only (its
// igemm is null; select it through SelectDirectUkernels).
const Ukernels& Avx512SmallKUkernels();
// For callers that only run Gemm (never IGemm): as SelectUkernels, except that with AVX-512 a
// GEMM of depth k <= kSmallKMaxK and n > 8 columns gets the small-K family when its panels are
// mostly used: k <= 16, or n a multiple of 16 (and on halved cores see kSmallKMaxKRagged). In
// isolation (M = 3136-12544) it ran K = 8, N = 16 1.7x as fast as the AVX2 6×16 tiles, K = 16,
// N = 32 1.2x, K = 32, N = 16 1.13x, K = 16-32, N = 96 1.0-1.1x; K = 48, N = 24 (a half-empty
// second panel) 0.85x. Those figures are Zen 4's.
// With full-width zmm (Zen 5, M = 112-3136, alternated, CPU time) the always-wide tiles caught
// up where there are many panels: the small-K family keeps k <= 4 (1.2-1.7x) and k <= 16 with
// n <= 32 (1.07-1.6x); at k = 8-16 with n = 96-144 it ran 0.86-0.99x, at k = 24-48 0.72-0.95x.
// Where zmm are halved (Zen 4), the direct GEMMs that the small-K family does not take, whose
// columns fill whole panels (n a multiple of 16, or more than 16 with a last group of 1..8 that
// runs on ymm), with k >= kAvx512MinK and at least kRows7MinM (a multiple of 7 below kRows7AnyM)
// rows (m: the GEMM's rows when the caller knows them, else -1) get the seven-row family
// (Avx512Rows7Ukernels). Single 1×1 convolutions of MobileNetV2 / MobileNetV1 0.25 / DeepLabV3,
// two interpreters in one process alternated (7-9 x 10-50 runs, medians of the round ratios):
// K = 64-960, N = 32-1280, M = 49-1089 1.01-1.07x; N = 21 / 24 with the ymm group 1.02-1.04x
// (with a half-empty zmm instead: 0.85x); it lost at K = 40-48 (0.96-0.98x), where the small-K
// family runs (0.95-0.98x), and in
// vww_96's 3×3-pixel layers (M = 9: 0.87-0.92x; M = 36 even). Whole models (in-process A/B, 1
// thread): MobileNetV2 float 0.992x the time, MobileNet v1 0.25 0.978x, DeepLabV3 0.979x. Below
// kRows7AnyM rows they also need M a multiple of 7 (MobileNet's 7·2^k pixels): with a short last
// tile, M = 50 / 64 ran 0.97x / 0.92x the 12-row tiles (K = 256 / 768), M = 128 1.00x.
constexpr int64_t kSmallKMaxK = 32;
// On halved cores also up to this depth when the last panel is ragged (n % 16 not 0 or 8), where
// the AVX2 6×16 tiles run a whole ymm or 16-lane group for a few columns: single 1×1 layers
// (two interpreters alternated, 9 x 50 runs) K = 24, N = 12 0.62x the time; K = 44, N = 44
// 0.85x; K = 48, N = 60 0.90x; K = 20, N = 50 0.93x; K = 40, N = 20 / K = 33, N = 17 0.98x;
// in BlazeFace (MediaPipe) K = 24, N = 28 0.66x, K = 36, N = 42 0.84x, K = 32, N = 36 0.95x, the
// model 0.952x; MobileNetV2 / MobileNet v1 0.25 / vww_96 / ResNet-8 float 0.999-1.007x (no such
// layer). With n % 16 = 8 the AVX2 tiles fit exactly and won (K = 24, N = 24: 1.10x; K = 48,
// N = 56: 1.08x), as K = 48, N = 24 did above.
constexpr int64_t kSmallKMaxKRagged = 48;
constexpr int64_t kRows7MinM = 48;
constexpr int64_t kRows7AnyM = 256;
const Ukernels& SelectDirectUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m = -1);
// 7 rows × 16 columns, one panel at a time (gemm_avx512.cc; direct and indirect GEMM; the
// panels' packing): one B load and seven broadcasts per seven multiply-adds. Variants name it
// "avx512/7x16" ("conv2d/f32/avx512/7x16").
const Ukernels& Avx512Rows7Ukernels();

// AVX-512 tiles over k pairs (gemm_avx512.cc), B packed with PackedB::FromNKPairs (for its
// igemm with the IGemm's taps).
const Ukernels& Avx512PairUkernels();
// For 1×1 convolutions (Gemm only, packing through PackNKFor): as SelectDirectUkernels, except
// that where zmm run at full width a GEMM that does not get the small-K family and whose columns
// leave the 12×32 tiles a last group of 1..24 (N mod 32 = 1..24) gets the k-pair family. GEMM
// alone, alternated, hot caches (Zen 5): N = 16-24 1.17-1.65x (MobileNetV2's projections), N =
// 1-8 1.5-1.8x, N = 40-120 with such a tail 1.08-1.28x (N mod 32 = 16 at K >= 64: 1.0-1.08x);
// with N a multiple of 32 both ran within 0.96-1.04x, so the 12×32 tiles keep those.
const Ukernels& SelectPointwiseUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m = -1);
// For other convolutions (IGemm, packing through PackNKFor with the taps): as SelectUkernels,
// except for every n > 1 with AVX-512: where zmm run at full width the k-pair family takes them.
// In-process A/B on Zen 5 (1 thread, two interpreters alternated, medians of 300 pairs): 3×3
// convolutions ran 1.15-1.9x faster with it, N = 2..512 (N = 32..512 too: 1.37-1.51x), 1×1 at
// stride 2 1.40-1.43x, RGB stems (9 floats per filter-row tap) 1.14-1.52x; a 3×3 over one channel
// (3 floats per tap) at N = 32 0.95x. Where zmm are halved (Zen 4) the always-wide tiles
// (Avx512WideUkernels: 12×32 at every depth) take them: against the AVX2 / K-dependent AVX-512
// tiles (single convolutions, two interpreters alternated, 9 x 30-50 runs, medians of the round
// ratios) 3×3 with N = 32-256, C = 1-256 1.12-1.41x, 7×7 stride-2 stem 3 -> 64 1.18x, the RGB 3×3
// stems 224 -> 32 / 96 -> 16 / 224 -> 8 1.02-1.04x, 5×5 16 -> 24 1.01x; the k-pair family there
// ran 0.80-0.97x of these (its pairs leave half of every odd tap's last pair empty). And there,
// with N and the output pixels m (-1: unknown) as for SelectDirectUkernels,
// the seven-row tiles (Avx512Rows7Ukernels) take them: against the wide tiles (same A/B) the RGB stems
// 224 -> 32 / 96 -> 16 1.12-1.14x, 3×3 with N = 32-256 1.04-1.07x, 7×7/2 3 -> 64 1.07x, 3×3 over
// one channel 1.15x; N = 24 / 40 / 56 (a last group of 8 on ymm) 1.03-1.04x (on a half-used
// zmm instead: 0.89x / 0.94x).
const Ukernels& SelectConvUkernels(const rt::CpuFeatures& cpu, int64_t k, int64_t n, int64_t m = -1);

// C = A · B + bias, clamped. pool may be null (single thread). bias: B's packed bias, or when
// given b.padded_n() floats that replace it (a bias known only at invoke time).
void Gemm(const Ukernels& uk, rt::ThreadPool* pool, size_t m, const float* a, size_t a_stride, const PackedB& b,
          float* c, size_t c_stride, MinMax mm, const float* bias = nullptr);

// Indirect GEMM over `m` output rows: the indirection buffer holds, for each tile of uk.mr rows,
// taps × uk.mr row pointers (tile-major: ind[(tile * taps + tap) * uk.mr + r]), each pointing at
// kc = B.k / taps floats. Rows of a partial last tile repeat its last row.
void IGemm(const Ukernels& uk, rt::ThreadPool* pool, size_t m, size_t taps, const float* const* ind,
           const PackedB& b, float* c, size_t c_stride, MinMax mm);

// A one-output-channel convolution over IGemm's indirection buffer (AVX-512, conv_single_avx512.cc):
// output rows [m0, m1) are dot products of their taps (kc floats each) with w ([taps][kc]),
// plus bias, clamped; 16 rows at once, reduced across lanes. IGemm's tile would use 1 of 16+
// columns.
void SingleChannelConvAvx512(const float* const* ind, int mr, size_t m0, size_t m1, int taps, int kc, const float* w,
                             float bias, MinMax mm, float* c);

// Size of an indirection buffer for m rows and `taps` taps with tiles of mr rows.
inline size_t IndirectionSize(size_t m, size_t taps, int mr) { return (m + mr - 1) / mr * taps * mr; }

}  // namespace edgeopt::kernels::gemm
