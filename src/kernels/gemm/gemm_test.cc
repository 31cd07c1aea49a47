// GEMM / indirect GEMM / GEMV micro-kernels and drivers against straightforward loops, for every
// family this CPU runs (portable, AVX2, AVX-512).
//
// Tolerance: float sums in a different order differ by rounding only. Each output is checked
// against |got - ref| <= 2e-5 * (|bias| + sum_k |a_k * b_k|) + 1e-30 — a relative 2e-5 of the
// magnitude the K products accumulate (generous next to the worst-case K * 2^-24 for the sizes
// here, so the tests are not flaky, but far below any indexing or packing error).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels::gemm {
namespace {

std::vector<const Ukernels*> Families() {
  std::vector<const Ukernels*> f = {&ScalarUkernels()};
  if (rt::CpuHardware().has_avx2_fma()) f.push_back(&Avx2Ukernels());
  if (rt::CpuHardware().has_avx512()) {
    f.push_back(&Avx512Ukernels());
    f.push_back(&Avx512WideUkernels());
    f.push_back(&Avx512Rows7Ukernels());
  }
  return f;
}

// Families for the direct GEMM only: the above, the small-K one and the k-pair one (no indirect
// kernel; the k-pair family with its own packing, PackNKFor).
std::vector<const Ukernels*> DirectFamilies() {
  std::vector<const Ukernels*> f = Families();
  if (rt::CpuHardware().has_avx512()) {
    f.push_back(&Avx512SmallKUkernels());
    f.push_back(&Avx512PairUkernels());
  }
  return f;
}

// The fastest family is the one chosen; a cap selects the others.
TEST(GemmF32, SelectsTheWidestFamilyTheCpuHas) {
  const rt::CpuFeatures& hw = rt::CpuHardware();
  EXPECT_STREQ(SelectUkernels(rt::CapFeatures(hw, "generic")).isa, "scalar");
  if (!hw.has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  EXPECT_STREQ(SelectUkernels(rt::CapFeatures(hw, "avx2")).isa, "avx2");
  if (!hw.has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL, DQ)";
  // Cores that split zmm operations in halves (Zen 4) and full-width ones choose differently;
  // the caps force either on this machine.
  const rt::CpuFeatures halved = rt::CapFeatures(hw, "avx512-halved"), full = rt::CapFeatures(hw, "avx512-full");
  EXPECT_TRUE(halved.avx512_halved);
  EXPECT_FALSE(full.avx512_halved);
  EXPECT_TRUE(full.has_avx512());
  EXPECT_STREQ(SelectUkernels(hw).isa, "avx512");
  EXPECT_EQ(&SelectUkernels(halved), &Avx512Ukernels());
  EXPECT_STREQ(SelectUkernels(halved, kAvx512MinK).isa, "avx512");
  EXPECT_STREQ(SelectUkernels(halved, kAvx512MinK - 1).isa, "avx2");
  EXPECT_STREQ(SelectUkernels(halved, kAvx512MinK - 1, 9).isa, "avx2");
  // 8 columns or fewer: the AVX-512 family's one-ymm tiles, whatever the depth.
  EXPECT_STREQ(SelectUkernels(halved, 27, 8).isa, "avx512");
  EXPECT_STREQ(SelectUkernels(halved, 1, 1).isa, "avx512");
  EXPECT_STREQ(SelectUkernels(rt::CapFeatures(hw, "avx2"), 27, 8).isa, "avx2");
  EXPECT_EQ(Avx512Ukernels().mr, 12);
  // Full width: the always-wide AVX-512 tiles at every depth.
  EXPECT_EQ(&SelectUkernels(full), &Avx512WideUkernels());
  EXPECT_EQ(&SelectUkernels(full, 1, 64), &Avx512WideUkernels());
  EXPECT_EQ(&SelectUkernels(full, 27, 32), &Avx512WideUkernels());
  // Direct-only callers on halved cores: the small-K family for k <= 16 beyond 8 columns, and
  // up to k = 32 when the columns fill whole panels, up to k = 48 when the last panel is ragged
  // (n % 16 not 0 or 8).
  EXPECT_STREQ(SelectDirectUkernels(halved, 24, 28).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 48, 60).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 24, 12).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 49, 60).isa, "avx2");
  EXPECT_STREQ(SelectDirectUkernels(halved, 24, 24).isa, "avx2");
  EXPECT_STREQ(SelectDirectUkernels(halved, 48, 56).isa, "avx2");
  EXPECT_STREQ(SelectDirectUkernels(halved, 8, 16).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 16, 24).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 1, 9).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 32, 96).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(halved, 32, 24).isa, "avx2");
  EXPECT_STREQ(SelectDirectUkernels(halved, 33, 32).isa, "avx2");
  EXPECT_STREQ(SelectDirectUkernels(halved, 8, 8).isa, "avx512");
  // From k = 64 on with whole panels: the seven-row tiles; else the selection above.
  // (rows known and at least kRows7MinM).
  EXPECT_EQ(&SelectDirectUkernels(halved, 64, 64, 784), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 960, 1280, 49), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectPointwiseUkernels(halved, 960, 1280, 49), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 256, 256, 9), &Avx512Ukernels());
  // Below kRows7AnyM rows only whole 7-row tiles.
  EXPECT_EQ(&SelectDirectUkernels(halved, 256, 1024, 50), &Avx512Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 256, 1024, 196), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 256, 1024, 1089), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 256, 256), &Avx512Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 144, 24, 784), &Avx512Rows7Ukernels());  // 16 + 8 on ymm
  EXPECT_EQ(&SelectDirectUkernels(halved, 144, 28, 784), &Avx512Ukernels());        // 16 + 12
  EXPECT_EQ(&SelectDirectUkernels(halved, 144, 8, 784), &Avx512Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(halved, 48, 288), &Avx2Ukernels());
  EXPECT_EQ(&SelectDirectUkernels(full, 144, 96), &Avx512WideUkernels());
  EXPECT_EQ(Avx512Rows7Ukernels().mr, 7);
  // On full-width cores: k <= 4, or k <= 16 with at most two panels.
  EXPECT_STREQ(SelectDirectUkernels(full, 4, 144).isa, "avx512/smallk");
  EXPECT_STREQ(SelectDirectUkernels(full, 16, 32).isa, "avx512/smallk");
  EXPECT_EQ(&SelectDirectUkernels(full, 16, 96), &Avx512WideUkernels());
  EXPECT_EQ(&SelectDirectUkernels(full, 32, 96), &Avx512WideUkernels());
  EXPECT_EQ(&SelectDirectUkernels(full, 8, 8), &Avx512WideUkernels());
  EXPECT_STREQ(SelectDirectUkernels(rt::CapFeatures(hw, "avx2"), 8, 16).isa, "avx2");
  EXPECT_EQ(Avx512SmallKUkernels().igemm, nullptr);
  // 1×1 convolutions: the k-pair family where zmm run at full width and N mod 32 is 1..24,
  // unless the small-K family takes the shape (depth <= 16 with at most 32 columns there).
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 24), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 32, 16), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 17, 9), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 1001, 23), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 8), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 64, 1), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 16, 40), &Avx512PairUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 576, 88), &Avx512PairUkernels());
  EXPECT_STREQ(SelectPointwiseUkernels(full, 16, 24).isa, "avx512/smallk");
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 25), &Avx512WideUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 32), &Avx512WideUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 96), &Avx512WideUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(full, 144, 60), &Avx512WideUkernels());
  EXPECT_EQ(&SelectPointwiseUkernels(halved, 144, 24), &SelectDirectUkernels(halved, 144, 24));
  EXPECT_STREQ(SelectPointwiseUkernels(rt::CapFeatures(hw, "avx2"), 144, 24).isa, "avx2");
  EXPECT_TRUE(Avx512PairUkernels().pairs);
  // Other convolutions: every N > 1 with AVX-512; the k-pair family where zmm run at full width.
  EXPECT_EQ(&SelectConvUkernels(full, 144, 24), &Avx512PairUkernels());
  EXPECT_EQ(&SelectConvUkernels(full, 144, 32), &Avx512PairUkernels());
  EXPECT_EQ(&SelectConvUkernels(full, 4608, 512), &Avx512PairUkernels());
  EXPECT_EQ(&SelectConvUkernels(full, 27, 2), &Avx512PairUkernels());
  EXPECT_EQ(&SelectConvUkernels(full, 144, 1), &Avx512WideUkernels());
  // Where zmm are halved: the always-wide tiles at every depth (not AVX2 below K = 64).
  EXPECT_EQ(&SelectConvUkernels(halved, 144, 24), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 27, 32), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 27, 8), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 144, 1), &SelectUkernels(halved, 144, 1));
  // ... and the seven-row tiles for whole panels with the output pixels known (>= kRows7MinM).
  EXPECT_EQ(&SelectConvUkernels(halved, 27, 32, 12544), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 288, 64, 49), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 288, 64, 48), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 288, 64, 42), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 288, 64, 4096), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 400, 24, 784), &Avx512Rows7Ukernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 400, 12, 784), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(halved, 27, 8, 12544), &Avx512WideUkernels());
  EXPECT_EQ(&SelectConvUkernels(full, 27, 32, 12544), &Avx512PairUkernels());
  EXPECT_STREQ(SelectConvUkernels(rt::CapFeatures(hw, "avx2"), 144, 24).isa, "avx2");
  EXPECT_STREQ(PackKeyFor(Avx512PairUkernels()), "f32gemm-nk-pairs");
  EXPECT_STREQ(PackKeyFor(Avx512PairUkernels(), 3), "f32gemm-nk-pairs-per-tap");
  EXPECT_STREQ(PackKeyFor(Avx512WideUkernels(), 3), "f32gemm-nk");
  EXPECT_STREQ(PackKeyFor(Avx512WideUkernels()), "f32gemm-nk");
}

std::vector<float> Random(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
const MinMax kClamps[] = {{-kInf, kInf}, {0.0f, kInf}, {0.0f, 6.0f}, {-1.0f, 1.0f}, {-0.25f, 0.5f}};

// got[m][n] (row stride c_stride) vs the naive product of rows given by `row(m)`.
template <typename RowFn>
void CheckAgainstNaive(const std::vector<float>& got, size_t c_stride, size_t m, size_t n, size_t k, RowFn row,
                       const std::vector<float>& w_nk, const std::vector<float>& bias, MinMax mm,
                       const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < m; ++i) {
    const float* a = row(i);
    for (size_t j = 0; j < n; ++j) {
      double sum = bias.empty() ? 0.0 : bias[j];
      double mag = std::fabs(sum);
      for (size_t kk = 0; kk < k; ++kk) {
        const double p = static_cast<double>(a[kk]) * w_nk[j * k + kk];
        sum += p;
        mag += std::fabs(p);
      }
      const double ref = std::min<double>(std::max<double>(sum, mm.min), mm.max);
      const double tol = 2e-5 * mag + 1e-30;
      const float g = got[i * c_stride + j];
      if (!(std::fabs(g - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << " at (" << i << "," << j << "): got " << g << " want " << ref << " tol " << tol;
    }
  }
}

TEST(GemmF32, PackingMatchesLayouts) {
  std::mt19937 rng(1);
  for (int n : {1, 15, 16, 17, 40})
    for (int k : {1, 3, 20}) {
      auto w = Random(rng, static_cast<size_t>(n) * k);
      auto bias = Random(rng, n);
      std::vector<float> w_kn(w.size());
      for (int j = 0; j < n; ++j)
        for (int kk = 0; kk < k; ++kk) w_kn[static_cast<size_t>(kk) * n + j] = w[static_cast<size_t>(j) * k + kk];
      PackedB a = PackedB::FromNK(w.data(), bias.data(), n, k);
      PackedB b = PackedB::FromKN(w_kn.data(), bias.data(), n, k);
      ASSERT_EQ(a.bytes(), b.bytes());
      EXPECT_EQ(0, std::memcmp(a.bias(), b.bias(), a.bytes()));
      for (int j = 0; j < n; ++j) {
        EXPECT_EQ(a.bias()[j], bias[j]);
        for (int kk = 0; kk < k; ++kk)
          EXPECT_EQ(a.panel(j / kNr)[kk * kNr + j % kNr], w[static_cast<size_t>(j) * k + kk]);
      }
      for (size_t j = n; j < a.padded_n(); ++j) EXPECT_EQ(a.bias()[j], 0.0f);
      // k pairs: group g of 8 columns at g * ceil(K/2) * 16 floats from panel 0, B[k][j] at
      // lane 2 (j % 8) + k % 2 of vector k / 2; zeros elsewhere.
      PackedB p = PackedB::FromNKPairs(w.data(), bias.data(), n, k);
      ASSERT_TRUE(p.pairs());
      ASSERT_EQ(p.panel_stride(), static_cast<size_t>((k + 1) / 2 * 2 * kNr));
      EXPECT_EQ(0, std::memcmp(p.bias(), a.bias(), a.padded_n() * sizeof(float)));
      const size_t group = p.panel_stride() / 2;
      std::vector<float> want(p.panels() * p.panel_stride(), 0.0f);
      for (int j = 0; j < n; ++j)
        for (int kk = 0; kk < k; ++kk)
          want[(j / 8) * group + (kk / 2) * 16 + 2 * (j % 8) + kk % 2] = w[static_cast<size_t>(j) * k + kk];
      EXPECT_EQ(0, std::memcmp(p.panel(0), want.data(), want.size() * sizeof(float))) << "n=" << n << " k=" << k;
    }
}

TEST(GemmF32, AnyShapeStrideClampAndThreads) {
  std::mt19937 rng(2);
  rt::ThreadPool pool2(2);
  int cases = 0;
  for (const Ukernels* uk : DirectFamilies())
    // 127-301: several of the small-K family's 64-row tiles, whole and partial, and its 4-row groups.
    for (size_t m : {1, 2, 5, 6, 7, 11, 12, 13, 25, 37, 100, 127, 130, 301})
      // Column groups of the 12×32 AVX-512 tile: 1..8 (ymm), 9..16, 17..24 (zmm + ymm), 25..32.
      for (size_t n : {1, 7, 8, 9, 16, 17, 24, 25, 31, 32, 33, 40, 100})
        for (size_t k : {1, 3, 8, 16, 17, 32, 64, 515}) {
          const size_t a_stride = k + (m % 3), c_stride = n + (k % 2) * 5;
          auto a = Random(rng, m * a_stride);
          auto w = Random(rng, n * k);
          std::vector<float> bias = (n % 2) ? Random(rng, n) : std::vector<float>();
          PackedB packed = PackNKFor(*uk, w.data(), bias.empty() ? nullptr : bias.data(), static_cast<int>(n),
                                     static_cast<int>(k));
          const MinMax mm = kClamps[cases % 5];
          rt::ThreadPool* pool = (cases % 2) ? &pool2 : nullptr;
          std::vector<float> c(m * c_stride, 1234.0f);
          Gemm(*uk, pool, m, a.data(), a_stride, packed, c.data(), c_stride, mm);
          const std::string what = std::string(uk->isa) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                   " k=" + std::to_string(k);
          CheckAgainstNaive(c, c_stride, m, n, k, [&](size_t i) { return a.data() + i * a_stride; }, w, bias, mm, what);
          // Columns past N in each row are untouched.
          for (size_t i = 0; i < m; ++i)
            for (size_t j = n; j < c_stride; ++j) ASSERT_EQ(c[i * c_stride + j], 1234.0f) << what;
          ++cases;
        }
  EXPECT_GT(cases, 2000);
}

// The small-K family sums in the tiles' order (bias, then k = 0, 1, ...): choosing it by shape
// changes no result.
TEST(GemmF32, SmallKFamilyEqualsTheTilesBitForBit) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL, DQ)";
  std::mt19937 rng(5);
  for (size_t m : {3, 130, 1000})
    for (size_t n : {9, 16, 24, 28, 42, 48, 96})
      for (size_t k : {1, 4, 8, 12, 16, 24, 32, 36, 48}) {
        auto a = Random(rng, m * k);
        auto w = Random(rng, n * k);
        auto bias = Random(rng, n);
        PackedB packed = PackedB::FromNK(w.data(), bias.data(), static_cast<int>(n), static_cast<int>(k));
        std::vector<float> tiles(m * n), small(m * n);
        Gemm(Avx512Ukernels(), nullptr, m, a.data(), k, packed, tiles.data(), n, kClamps[1]);
        Gemm(Avx512SmallKUkernels(), nullptr, m, a.data(), k, packed, small.data(), n, kClamps[1]);
        ASSERT_EQ(0, std::memcmp(tiles.data(), small.data(), tiles.size() * sizeof(float)))
            << "m=" << m << " n=" << n << " k=" << k;
      }
}

TEST(GemmF32, IndirectWithZeroRows) {
  std::mt19937 rng(3);
  rt::ThreadPool pool2(2);
  std::vector<const Ukernels*> families = Families();
  if (rt::CpuHardware().has_avx512()) families.push_back(&Avx512PairUkernels());
  for (const Ukernels* uk : families)
    for (size_t m : {1, 5, 6, 7, 12, 13, 29})
      for (size_t n : {3, 8, 16, 21, 24, 32, 48})
        for (size_t taps : {1, 4, 9})
          for (size_t kc : {1, 2, 3, 8, 13, 16}) {
            const size_t k = taps * kc;
            const size_t pool_rows = 11;
            auto rows = Random(rng, pool_rows * kc);
            std::vector<float> zero(kc, 0.0f);
            // Logical A: row i, tap t -> rows[(i*7 + t*3) % 12] or the zero row when that is 11.
            auto row_ptr = [&](size_t i, size_t t) -> const float* {
              const size_t r = (i * 7 + t * 3) % (pool_rows + 1);
              return r == pool_rows ? zero.data() : rows.data() + r * kc;
            };
            std::vector<const float*> ind(IndirectionSize(m, taps, uk->mr));
            for (size_t tile = 0; tile * uk->mr < m; ++tile)
              for (size_t t = 0; t < taps; ++t)
                for (int r = 0; r < uk->mr; ++r)
                  ind[(tile * taps + t) * uk->mr + r] = row_ptr(std::min(m - 1, tile * uk->mr + r), t);
            std::vector<float> a_full(m * k);
            for (size_t i = 0; i < m; ++i)
              for (size_t t = 0; t < taps; ++t) std::memcpy(&a_full[i * k + t * kc], row_ptr(i, t), kc * sizeof(float));
            auto w = Random(rng, n * k);
            auto bias = Random(rng, n);
            PackedB packed =
                PackNKFor(*uk, w.data(), bias.data(), static_cast<int>(n), static_cast<int>(k), static_cast<int>(taps));
            const MinMax mm = kClamps[(m + n + taps) % 5];
            std::vector<float> c(m * n, 1234.0f);
            IGemm(*uk, (n % 2) ? &pool2 : nullptr, m, taps, ind.data(), packed, c.data(), n, mm);
            CheckAgainstNaive(c, n, m, n, k, [&](size_t i) { return a_full.data() + i * k; }, w, bias, mm,
                              std::string(uk->isa) + " igemm m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                  " taps=" + std::to_string(taps) + " kc=" + std::to_string(kc));
          }
}

TEST(GemmF32, GemvLargeK) {
  std::mt19937 rng(4);
  rt::ThreadPool pool2(2);
  for (const Ukernels* uk : DirectFamilies())
    for (size_t n : {1, 16, 63, 64, 65, 127, 128, 130, 1001})
      for (size_t k : {1, 2, 7, 256, 1024}) {
        auto a = Random(rng, k);
        auto w = Random(rng, n * k);
        auto bias = Random(rng, n);
        PackedB packed = PackNKFor(*uk, w.data(), bias.data(), static_cast<int>(n), static_cast<int>(k));
        std::vector<float> c(n);
        const MinMax mm = kClamps[n % 5];
        Gemm(*uk, (k % 2) ? &pool2 : nullptr, 1, a.data(), k, packed, c.data(), n, mm);
        CheckAgainstNaive(c, n, 1, n, k, [&](size_t) { return a.data(); }, w, bias, mm,
                          std::string(uk->isa) + " gemv n=" + std::to_string(n) + " k=" + std::to_string(k));
      }
}

}  // namespace
}  // namespace edgeopt::kernels::gemm
