// The integer GEMM path against the reference kernels, bit for bit:
// - the micro-kernel against plain loops (all row counts, odd K, zero points folded into B);
// - the vectorized ruy requantization against MultiplyByQuantizedMultiplierRuy on edge values
//   (INT32_MIN/MAX accumulators, every shift from -31 to 30, extreme multipliers, zero points);
// - CONV_2D and FULLY_CONNECTED graphs (int8 per-channel/per-tensor, uint8, hybrid, 16x8) run
//   with the fast kernels (1 and 2 threads) and with reference kernels only, over many shapes:
//   odd sizes, channel counts that are not multiples of 16, batch 2, strides, dilations,
//   padding, every fused activation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <type_traits>

#include "graph/builder.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm_int8/qgemm.h"
#include "kernels/gemm_int8/qgemm_vnni.h"
#include "runtime/cpu.h"
#include "support/fast_vs_reference.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

using namespace kernels::qgemm;
using kernels::MultiplyByQuantizedMultiplier;
using kernels::MultiplyByQuantizedMultiplierSingleRound;
using kernels::WrapToInt32;

class QGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  }
};

template <typename T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> v) {
  return *(v.begin() + std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng));
}

TEST_F(QGemmTest, MicroKernelMatchesLoops) {
  std::mt19937_64 rng(1);
  for (int it = 0; it < 120; ++it) {
    const int rows = 1 + it % 6;
    const int K = 1 + static_cast<int>(rng() % 200);
    const int K2 = (K + 1) / 2;
    const int64_t lda = K2 * 2 + static_cast<int64_t>(rng() % 3) * 2;
    const int N = 1 + static_cast<int>(rng() % 16);
    std::vector<uint8_t> w(static_cast<size_t>(N) * K);
    for (auto& v : w) v = static_cast<uint8_t>(rng());
    const int32_t zp = static_cast<int32_t>(rng() % 256);
    PackedB pb;
    PackWeights(w.data(), N, K, {zp}, &pb);
    ASSERT_EQ(pb.abs_sum.size(), static_cast<size_t>(N));
    for (int n = 0; n < N; ++n) {
      int64_t s = 0;
      for (int k = 0; k < K; ++k) s += std::abs(int32_t{w[static_cast<size_t>(n) * K + k]} - zp);
      ASSERT_EQ(pb.abs_sum[n], s) << "n " << n;
    }
    std::vector<int16_t> a(static_cast<size_t>(6 * lda + kASlack));
    for (auto& v : a) v = static_cast<int16_t>(static_cast<int>(rng() % 511) - 255);
    alignas(32) int32_t acc[kMR * kNR];
    MicroKernel(rows, K2, a.data(), lda, pb.panel(0), acc);
    for (int r = 0; r < rows; ++r)
      for (int n = 0; n < N; ++n) {
        int32_t s = 0;
        for (int k = 0; k < K; ++k) s += a[r * lda + k] * (int32_t{w[static_cast<size_t>(n) * K + k]} - zp);
        // Beyond K the packed weights are zero, whatever A holds there.
        ASSERT_EQ(acc[r * kNR + n], s) << "rows " << rows << " K " << K << " r " << r << " n " << n;
      }
  }
}

TEST_F(QGemmTest, RuyRequantizationEdgeValues) {
  std::mt19937_64 rng(2);
  std::vector<int32_t> xs = {0,         1,          -1,          2,        -2,       INT32_MAX, INT32_MIN,
                             INT32_MAX - 1, INT32_MIN + 1, 1 << 30, -(1 << 30), (1 << 30) - 1, 65535, -65536};
  for (int i = 0; i < 180; ++i) xs.push_back(static_cast<int32_t>(rng()));
  for (int i = 0; i < 180; ++i) xs.push_back(static_cast<int32_t>(rng() % 200001) - 100000);
  std::vector<int32_t> ms = {0, 1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1, 1518500250};
  for (int i = 0; i < 6; ++i) ms.push_back((1 << 30) + static_cast<int32_t>(rng() % (1u << 30)));
  int64_t checked = 0;
  for (int shift = -31; shift <= 30; ++shift)
    for (int32_t m : ms)
      for (int zp : {-128, 0, 127})
        for (bool uns : {false, true}) {
          const int N = 16;
          std::vector<int32_t> bias(N);
          for (auto& b : bias) b = static_cast<int32_t>(rng() % 1000) - 500;
          const int32_t lo = uns ? 0 : -128, hi = uns ? 255 : 127, z = uns ? zp + 128 : zp;
          Requant8 q;
          BuildRequant8(N, bias.data(), {m}, {shift}, z, lo, hi, &q);
          for (size_t base = 0; base < xs.size(); base += kMR * kNR) {
            alignas(32) int32_t acc[kMR * kNR];
            for (int i = 0; i < kMR * kNR; ++i) acc[i] = base + i < xs.size() ? xs[base + i] : 0;
            uint8_t out[kMR * kNR];
            GemmOutput o;
            o.kind = uns ? OutKind::kUInt8 : OutKind::kInt8;
            o.q8 = &q;
            o.c = out;
            o.ldc = kNR;
            StoreTile(o, acc, kMR, 0, 0, kNR);
            for (int i = 0; i < kMR * kNR; ++i) {
              const int32_t x = kernels::WrapToInt32(int64_t{acc[i]} + bias[i % kNR]);
              int32_t v = kernels::MultiplyByQuantizedMultiplierRuy(x, m, shift);
              v = static_cast<int32_t>(static_cast<uint32_t>(v) + static_cast<uint32_t>(z));
              v = std::min(std::max(v, lo), hi);
              const int32_t got = uns ? out[i] : static_cast<int8_t>(out[i]);
              ASSERT_EQ(got, v) << "x " << x << " m " << m << " shift " << shift << " zp " << z;
              ++checked;
            }
          }
        }
  EXPECT_GT(checked, 1000000);
}

// An accumulator within +-bound whose requantized value (acc + bias) * m / 2^(31 + r) is a small
// number plus or minus up to one output step, so that outputs are not saturated and the rounding
// boundaries are hit (random accumulators up to a large bound almost always saturate).
int64_t InRangeAcc(std::mt19937_64& rng, int32_t bias, int32_t m, int shift, int64_t bound) {
  const int r = shift < 0 ? -shift : 0;
  const double step = m > 0 ? std::ldexp(1.0, 31 + r) / m : 1.0;
  const int64_t t = static_cast<int64_t>(rng() % 301) - 150;
  const int64_t s = static_cast<int64_t>(step) + 1;
  const int64_t x = std::llround(static_cast<double>(t) * step) + static_cast<int64_t>(rng() % (2 * s + 1)) - s;
  return std::clamp<int64_t>(x - bias, -bound, bound);
}

// The bounded output stages against the reference formula: per-channel accumulator bounds
// (small ones as in real layers, and ones right at the limit) with biases that bring |acc + bias|
// up to `limit` - 1, extreme multipliers, every right shift 0..`max_right_shift`, N = 37 (not a
// multiple of 8 or 16), full and 5-row tiles (rows past the tile must stay unwritten).
// `half_range`: the stage must be the half-range one (limit 2^30), else the folded-bias one (2^31).
// Returns the number of outputs checked.
int64_t CheckBoundedOutputStage(uint64_t seed, int64_t limit, int max_right_shift, bool half_range) {
  std::mt19937_64 rng(seed);
  const int N = 37;
  std::vector<int32_t> ms = {0, 1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MAX - 1, 1518500250};
  int64_t checked = 0;
  for (int shift = -max_right_shift; shift <= 0; ++shift)
    for (int32_t m0 : ms)
      for (bool uns : {false, true}) {
        std::vector<int32_t> mult(N), bias(N);
        std::vector<int> shifts(N);
        std::vector<int64_t> bound(N);
        for (int n = 0; n < N; ++n) {
          mult[n] = n % 3 == 0 ? m0 : (1 << 30) + static_cast<int32_t>(rng() % (1u << 30));
          shifts[n] = n % 2 == 0 ? shift : -static_cast<int>(rng() % static_cast<uint64_t>(max_right_shift + 1));
          bound[n] = n % 5 == 0 ? static_cast<int64_t>(rng() % 600000) : static_cast<int64_t>(rng() % static_cast<uint64_t>(limit));
          const int64_t room = limit - 1 - bound[n];
          const int64_t b = n % 4 == 0 ? room : static_cast<int64_t>(rng() % static_cast<uint64_t>(room + 1));
          bias[n] = static_cast<int32_t>(n % 2 == 0 ? b : -b);
        }
        const int32_t lo = uns ? 0 : -128, hi = uns ? 255 : 127, z = uns ? 3 : -7;
        Requant8 q;
        BuildRequant8(N, bias.data(), mult, shifts, z, lo, hi, &q, bound.data());
        EXPECT_TRUE(q.bias_folded) << "shift " << shift;
        EXPECT_EQ(q.half_range, half_range) << "shift " << shift;
        if (!q.bias_folded || q.half_range != half_range) return checked;
        for (int rep = 0; rep < 8; ++rep)
          for (int col0 = 0; col0 < N; col0 += kNR) {
            const int cols = std::min(kNR, N - col0);
            alignas(32) int32_t acc[kMR * kNR];
            for (int i = 0; i < kMR * kNR; ++i) {
              const int n = col0 + i % kNR;
              const int64_t bd = n < N ? bound[n] : 0;
              // Both ends of the bound, random values in between, and (rep >= 3) values whose
              // result lands inside the 8-bit range, next to rounding boundaries.
              const int64_t v = rep == 0   ? bd
                                : rep == 1 ? -bd
                                : rep == 2 ? static_cast<int64_t>(rng() % (2 * bd + 1)) - bd
                                : n < N    ? InRangeAcc(rng, bias[n], mult[n], shifts[n], bd)
                                           : 0;
              acc[i] = static_cast<int32_t>(v);
            }
            for (int rows : {kMR, 5}) {  // odd row counts take the single-row tail of the stage
              std::vector<uint8_t> out(static_cast<size_t>(kMR) * N, 0xAB);  // C is kMR x N
              GemmOutput o;
              o.kind = uns ? OutKind::kUInt8 : OutKind::kInt8;
              o.q8 = &q;
              o.c = out.data();
              o.ldc = N;
              StoreTile(o, acc, rows, 0, col0, cols);
              for (int r = 0; r < kMR; ++r)
                for (int j = 0; j < cols; ++j) {
                  const int n = col0 + j;
                  const uint8_t g = out[static_cast<size_t>(r) * N + n];
                  if (r >= rows) {
                    EXPECT_EQ(g, 0xAB) << "row " << r << " written";
                    if (g != 0xAB) return checked;
                    continue;
                  }
                  const int32_t x = kernels::WrapToInt32(int64_t{acc[r * kNR + j]} + bias[n]);
                  int32_t v = kernels::MultiplyByQuantizedMultiplierRuy(x, mult[n], shifts[n]);
                  v = static_cast<int32_t>(static_cast<uint32_t>(v) + static_cast<uint32_t>(z));
                  v = std::min(std::max(v, lo), hi);
                  const int32_t got = uns ? g : static_cast<int8_t>(g);
                  EXPECT_EQ(got, v) << "acc " << acc[r * kNR + j] << " bias " << bias[n] << " m " << mult[n]
                                    << " shift " << shifts[n];
                  if (got != v) return checked;
                  ++checked;
                }
            }
          }
      }
  return checked;
}

// The folded-bias output stage (Requant8::bias_folded): |acc + bias| up to 2^31 - 1, every right
// shift 0..31; and the cases where folding must be refused.
TEST_F(QGemmTest, FoldedBiasRequantizationMatchesRuy) {
  EXPECT_GT(CheckBoundedOutputStage(3, int64_t{1} << 31, 31, /*half_range=*/false), 50000);

  // Refused: a bound that lets acc + bias reach 2^31, any left shift, or no bound at all.
  std::vector<int32_t> bias = {100, -5};
  std::vector<int64_t> bound = {(int64_t{1} << 31) - 100, 10};
  Requant8 q;
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -1}, 0, -128, 127, &q, bound.data());
  EXPECT_FALSE(q.bias_folded);
  bound[0] -= 1;
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -1}, 0, -128, 127, &q, bound.data());
  EXPECT_TRUE(q.bias_folded);
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, 1}, 0, -128, 127, &q, bound.data());
  EXPECT_FALSE(q.bias_folded);
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -1}, 0, -128, 127, &q);
  EXPECT_FALSE(q.bias_folded);
}

// The half-range output stage (Requant8::half_range): |acc + bias| up to 2^30 - 1, every right
// shift 0..30; and the cases where it must be refused (bound reaching 2^30, a right shift of 31,
// a left shift).
TEST_F(QGemmTest, HalfRangeRequantizationMatchesRuy) {
  const int64_t kLimit = int64_t{1} << 30;
  EXPECT_GT(CheckBoundedOutputStage(4, kLimit, 30, /*half_range=*/true), 50000);

  std::vector<int32_t> bias = {100, -5};
  std::vector<int64_t> bound = {kLimit - 100, 10};
  Requant8 q;
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -30}, 0, -128, 127, &q, bound.data());
  EXPECT_FALSE(q.half_range);  // |acc + bias| may reach 2^30
  EXPECT_TRUE(q.bias_folded);
  bound[0] -= 1;
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -30}, 0, -128, 127, &q, bound.data());
  EXPECT_TRUE(q.half_range);
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -31}, 0, -128, 127, &q, bound.data());
  EXPECT_FALSE(q.half_range);  // right shift 31
  EXPECT_TRUE(q.bias_folded);
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, 1}, 0, -128, 127, &q, bound.data());
  EXPECT_FALSE(q.half_range);  // left shift
  BuildRequant8(2, bias.data(), {1 << 30, 1 << 30}, {-1, -1}, 0, -128, 127, &q);
  EXPECT_FALSE(q.half_range);  // no bound
}

// ---- The AVX-512 VNNI GEMM (qgemm_vnni.h) against the int16 GEMM, bit for bit ----

class QGemmVnniTest : public QGemmTest {
 protected:
  void SetUp() override {
    QGemmTest::SetUp();
    if (IsSkipped()) return;
    if (!rt::Cpu().has_avx512_vnni())
      GTEST_SKIP() << "no AVX-512 VNNI (avx512f+bw+vl+dq+vnni) on this CPU or EDGEOPT_CPU caps it: the VNNI GEMM "
                      "is not used here";
  }
};

// int16 A rows (input - zero point) for RunGemm, from raw 8-bit rows of `depth` values.
template <typename T>
class WidenRows final : public APacker {
 public:
  WidenRows(const T* in, int depth, int32_t zp) : in_(in), depth_(depth), zp_(zp) {}
  void Pack(int64_t row0, int rows, int16_t* dst, int64_t lda) const override {
    for (int i = 0; i < rows; ++i)
      for (int64_t k = 0; k < lda; ++k)
        dst[i * lda + k] = k < depth_ ? static_cast<int16_t>(int32_t{in_[(row0 + i) * depth_ + k]} - zp_) : 0;
  }

 private:
  const T* in_;
  int depth_;
  int32_t zp_;
};

// One VNNI GEMM case: shapes, weights inside / outside int8 after the zero point (`fits`), an
// accumulator bound or not, left shifts, a channel with right shift 0 (`zero_right`: the
// high-dword stage refuses it), the activation range (`act`: 0 narrowed at both ends, 1 the full
// 8-bit range, 2 act_max at 127 with act_min raised, 3 act_min raised with act_max at the type's
// top), and `extreme`: right shifts 20..26, output zero points at the ends of their range and
// biases pushed to the high-dword stage's int64 limits (HighStageFits) or cancelling the
// zero-point term.
struct VnniCase {
  int M = 1, K = 1, N = 1, threads = 1;
  bool fits = true, bounded = true, left_shift = false, zero_right = false, extreme = false;
  // Channel N / 2 with every weight at the zero point and a bias and shift that the high-dword
  // form's int64 bound refuses (its output is a constant; BuildVnniOutput's constant channel).
  bool dead_channel = false;
  int act = 0;
  // With `fits`: this many weights moved to the end of the type's range farther from the zero
  // point (uint8 zero points then come from 0, 1, 127, 128, 255 too): the split form when few.
  int outliers = 0;
  // false: BuildVnniOutput keeps the high-dword stage where its fp32 form would apply.
  bool allow_float = true;
};
struct VnniUsed {
  bool dead_refused = false;  // the dead channel alone would not fit HighStageFits
  int32_t f = 0;  // the VNNI weights' f (see qgemm_vnni.h)
  bool split = false;  // PackedB8::split()
  VnniStage stage = VnniStage::kGeneral;
  VnniStore store = VnniStore::kClamp;
};

// The largest |bias| (in the direction `sign`) with which channel `ch` still fits the high-dword
// stage, given |bias| <= limit (the caller checked limit 0 fits).
int32_t EdgeBias(Requant8::Channel ch, int32_t zp, int sign, int64_t limit) {
  int64_t lo = 0, hi = limit;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    ch.bias = static_cast<int32_t>(sign * mid);
    if (HighStageFits(ch, zp)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return static_cast<int32_t>(sign * lo);
}

// One random GEMM (8-bit input of type T, weights of type W) through RunGemm and RunGemmVnni
// with the same Requant8; returns what the VNNI output stage used, for coverage checks.
template <typename T, typename W>
VnniUsed CheckVnniGemm(std::mt19937_64& rng, const VnniCase& c, const std::string& what) {
  constexpr bool kUnsigned = std::is_same_v<T, uint8_t>;
  const int M = c.M, K = c.K, N = c.N;
  const int32_t in_zp = static_cast<int32_t>(rng() % 256) - (kUnsigned ? 0 : 128);
  // Weights: `fits` keeps every w - zp inside int8, else the full range with a zero point that
  // pushes some outside.
  const int32_t w_lo = std::is_same_v<W, uint8_t> ? 0 : -128;
  int32_t w_zp = std::is_same_v<W, uint8_t> ? static_cast<int32_t>(rng() % 256) : static_cast<int32_t>(rng() % 21) - 10;
  if (std::is_same_v<W, uint8_t> && c.outliers > 0 && rng() % 2) w_zp = Pick(rng, {0, 1, 127, 128, 255});
  std::vector<W> w(static_cast<size_t>(N) * K);
  for (auto& v : w) {
    int32_t x = w_lo + static_cast<int32_t>(rng() % 256);
    if (c.fits) x = std::clamp(x, std::max(w_lo, w_zp - 128), std::min(w_lo + 255, w_zp + 127));
    v = static_cast<W>(x);
  }
  const W far_end = static_cast<W>(w_zp - w_lo >= 128 ? w_lo : w_lo + 255);
  if (!c.fits) w[0] = far_end;  // at least one outside
  for (int i = 0; i < c.outliers; ++i) w[rng() % w.size()] = far_end;
  const int dead = c.dead_channel && N > 1 ? N / 2 : -1;
  if (dead >= 0) std::fill_n(w.begin() + static_cast<ptrdiff_t>(dead) * K, K, static_cast<W>(w_zp));
  std::vector<T> in(static_cast<size_t>(M) * K);
  for (auto& v : in) v = static_cast<T>(rng());
  std::vector<int32_t> mult(N), bias(N);
  std::vector<int> shift(N);
  // Scales that keep most outputs inside the 8-bit range (so rounding matters).
  const int base_shift = -static_cast<int>(std::lround(std::log2(5500.0 * std::sqrt(double(K)) / 60.0)));
  for (int n = 0; n < N; ++n) {
    mult[n] = (1 << 30) + static_cast<int32_t>(rng() % (1u << 30));
    shift[n] = c.left_shift && n % 3 == 0 ? 1 : std::min(0, base_shift + static_cast<int>(rng() % 5) - 2);
    if (c.extreme) shift[n] = -20 - static_cast<int>(rng() % 7);
    bias[n] = static_cast<int32_t>(rng() % 200001) - 100000;
  }
  if (c.zero_right) shift[0] = 0;
  PackedB b16;
  PackWeights(w.data(), N, K, {w_zp}, &b16);
  PackedB8 b8;
  PackWeightsVnni(w.data(), N, K, {w_zp}, &b8);
  EXPECT_EQ(b8.abs_sum, b16.abs_sum) << what;
  const int64_t max_in = kUnsigned ? std::max(255 - in_zp, in_zp) : std::max(127 - in_zp, in_zp + 128);
  std::vector<int64_t> bound(N);
  for (int n = 0; n < N; ++n) bound[n] = b16.abs_sum[n] * max_in;
  int32_t out_zp = static_cast<int32_t>(rng() % 21) - 10 + (kUnsigned ? 128 : 0);
  if (c.extreme) {
    out_zp = kUnsigned ? (rng() % 2 ? 255 : 0) : (rng() % 2 ? 127 : -128);
    for (int n = 0; n < N; ++n) {
      Requant8::Channel ch;
      ch.mult = mult[n];
      ch.acc_bound = bound[n];
      const int64_t limit = (int64_t{1} << 31) - 1 - bound[n];
      // Even channels at the int64 limit on the zero point's side (saturated outputs: a wrong sign
      // or carry in the 64-bit sum shows), odd ones with the bias cancelling the zero-point term
      // (outputs inside the 8-bit range, computed from large partial sums). A right shift too
      // large for the zero point is lowered until the channel fits (down to 20).
      for (;; ++shift[n]) {
        ch.right = -shift[n];
        ch.bias = 0;
        if (n % 2 == 0 && HighStageFits(ch, out_zp)) {
          bias[n] = EdgeBias(ch, out_zp, out_zp >= 0 ? 1 : -1, limit);
        } else {
          const double cancel = -static_cast<double>(out_zp) * std::ldexp(1.0, 31 + ch.right) / ch.mult;
          bias[n] = static_cast<int32_t>(std::clamp<double>(cancel, static_cast<double>(-limit), static_cast<double>(limit)));
        }
        ch.bias = bias[n];
        if (HighStageFits(ch, out_zp) || ch.right <= 20) break;
      }
    }
  }
  VnniUsed used;
  if (dead >= 0) {
    out_zp = std::max(out_zp, 1);
    bias[dead] = INT32_MAX - 5;
    shift[dead] = -31;
    Requant8::Channel ch;
    ch.bias = bias[dead];
    ch.mult = mult[dead];
    ch.right = 31;
    ch.acc_bound = 1;  // any nonzero bound: the int64 bound alone refuses this channel
    used.dead_refused = !HighStageFits(ch, out_zp);
  }
  int32_t lo = kUnsigned ? static_cast<int32_t>(rng() % 40) : -128 + static_cast<int32_t>(rng() % 40);
  int32_t hi = kUnsigned ? 255 - static_cast<int32_t>(rng() % 40) : 127 - static_cast<int32_t>(rng() % 40);
  switch (c.act) {
    case 1: lo = kUnsigned ? 0 : -128, hi = kUnsigned ? 255 : 127; break;
    case 2: lo = kUnsigned ? 1 + static_cast<int32_t>(rng() % 40) : -127 + static_cast<int32_t>(rng() % 40), hi = 127; break;
    case 3: lo = kUnsigned ? 1 + static_cast<int32_t>(rng() % 40) : -127 + static_cast<int32_t>(rng() % 40), hi = kUnsigned ? 255 : 127; break;
    default: break;
  }
  Requant8 q;
  BuildRequant8(N, bias.data(), mult, shift, out_zp, lo, hi, &q, c.bounded ? bound.data() : nullptr);

  rt::ThreadPool pool(c.threads);
  // c8 has 64 guard bytes after the output: no store may reach them.
  std::vector<uint8_t> c16(static_cast<size_t>(M) * N, 0xCD), c8(static_cast<size_t>(M) * N + 64, 0xCD);
  {
    EXPECT_TRUE(pool.ReserveSlotScratch(GemmSlotBytes(b16, M, c.threads)));
    GemmOutput o;
    o.kind = kUnsigned ? OutKind::kUInt8 : OutKind::kInt8;
    o.q8 = &q;
    o.c = c16.data();
    o.ldc = N;
    RunGemm(pool, M, b16, WidenRows<T>(in.data(), K, in_zp), o);
  }
  VnniOutput vo;
  BuildVnniOutput(b8, q, in_zp + (kUnsigned ? 0 : 128), &vo, false, c.allow_float);
  {
    EXPECT_TRUE(pool.ReserveSlotScratch(GemmVnniSlotBytes(b8, M, c.threads)));
    ContiguousRowsPacker8 pack(in.data(), K, kUnsigned ? 0 : 0x80);
    RunGemmVnni(pool, M, b8, pack, vo, c8.data(), N);
  }
  for (size_t i = c16.size(); i < c8.size(); ++i)
    if (c8[i] != 0xCD) {
      ADD_FAILURE() << what << ": byte " << i - c16.size() << " past the output written";
      break;
    }
  for (size_t i = 0; i < c16.size(); ++i) {
    if (c16[i] != c8[i]) {
      ADD_FAILURE() << what << ": row " << i / N << " column " << i % N << " int16 GEMM " << int{c16[i]} << " VNNI "
                    << int{c8[i]} << " stage " << static_cast<int>(vo.stage) << " store "
                    << static_cast<int>(vo.store) << " act " << lo << ".." << hi;
      break;
    }
  }
  used.f = b8.f;
  used.split = b8.split();
  used.stage = vo.stage;
  used.store = vo.store;
  return used;
}

// M = 1..odd, K not a multiple of 4/16/64 (and K < 4), N not a multiple of 16 (1..4 panels and
// more: every tile width), int8 and uint8 inputs and weights, weights inside / outside int8 after
// the zero point (row-sum correction; a few outside: split weights), every output stage (general, left shift, half range,
// high dword and its exact fp32 form with each store mode, and the high-dword stage at its int64
// limits), 1 and 2 threads.
TEST_F(QGemmVnniTest, GemmMatchesInt16Gemm) {
  std::mt19937_64 rng(31);
  const int Ks[] = {1, 2, 3, 4, 5, 7, 15, 16, 17, 24, 27, 40, 63, 64, 65, 144, 255, 576, 961};
  const int Ns[] = {1, 3, 8, 15, 16, 17, 24, 31, 33, 48, 50, 60, 64, 65, 96, 120, 144, 160};
  const int Ms[] = {1, 2, 5, 6, 7, 11, 12, 13, 23, 24, 25, 49, 97, 200};
  const int kCases = 600;
  int f_nonzero = 0, f_zero = 0, split = 0, cases = 0;
  int stages[6] = {}, high_stores[5] = {}, float_stores[5] = {}, float2_stores[5] = {}, extreme_high = 0, dead_high = 0;
  for (int it = 0; it < kCases && !HasFailure(); ++it) {
    VnniCase c;
    c.K = Ks[it % std::size(Ks)];
    c.N = Ns[(it / 3) % std::size(Ns)];
    c.M = Ms[(it / 7) % std::size(Ms)];
    c.threads = 1 + (it / 4) % 2;
    c.fits = it % 5 != 0;
    c.bounded = it % 4 != 1;
    c.left_shift = it % 9 == 4;
    c.zero_right = it % 7 == 3;
    c.act = (it / 2 + it / 8) % 4;  // it / 8: uint8 cases (it % 4 == 1, 2) meet every range and bound
    c.extreme = it % 6 == 5;
    c.dead_channel = it % 8 == 2;
    c.allow_float = it % 5 != 3;
    if (it % 3 == 1) c.outliers = it % 11 == 1 ? 400 : 1 + static_cast<int>(rng() % 4);
    std::ostringstream what;
    what << "it " << it << " M " << c.M << " K " << c.K << " N " << c.N << " threads " << c.threads
         << (c.fits ? " fits" : "") << (c.bounded ? " bounded" : "") << (c.left_shift ? " left shift" : "")
         << (c.zero_right ? " zero right shift" : "") << (c.extreme ? " extreme" : "")
         << (c.dead_channel ? " dead channel" : "") << (c.allow_float ? "" : " no float stage") << " act " << c.act
         << " outliers " << c.outliers;
    VnniUsed u;
    const bool flip = it % 4 >= 2;  // weights outside int8 for the other half of the fits cases
    if (flip) c.fits = !c.fits;
    switch (it % 4) {
      case 0: case 3: u = CheckVnniGemm<int8_t, int8_t>(rng, c, what.str() + " s8/s8"); break;
      default: u = CheckVnniGemm<uint8_t, uint8_t>(rng, c, what.str() + " u8/u8"); break;
    }
    (u.f != 0 ? f_nonzero : f_zero) += 1;
    if (u.split) ++split;
    stages[static_cast<int>(u.stage)] += 1;
    if (u.stage == VnniStage::kHigh || u.stage == VnniStage::kFloat || u.stage == VnniStage::kFloat2) {
      (u.stage == VnniStage::kHigh    ? high_stores
       : u.stage == VnniStage::kFloat ? float_stores
                                      : float2_stores)[static_cast<int>(u.store)] += 1;
      if (c.extreme) ++extreme_high;
      if (u.dead_refused) ++dead_high;
    }
    ++cases;
  }
  EXPECT_GT(f_nonzero, 40);  // the row-sum correction was exercised
  EXPECT_GT(f_zero, 40);
  EXPECT_GT(split, 40);  // the split weights' remainder groups were exercised
  std::printf("stages (general, half, high, two-round, float, float2): %d %d %d %d %d %d\n", stages[0], stages[1],
              stages[2], stages[3], stages[4], stages[5]);
  for (VnniStage s : {VnniStage::kGeneral, VnniStage::kHalf, VnniStage::kHigh, VnniStage::kFloat, VnniStage::kFloat2})
    EXPECT_GT(stages[static_cast<int>(s)], 30) << "stage " << static_cast<int>(s);
  for (int s : high_stores) EXPECT_GT(s, 4);    // kClamp, kSat, kLoSat, kLoUSat, kClampU
  for (int s : float_stores) EXPECT_GT(s, 4);
  for (int s : float2_stores) EXPECT_GT(s, 4);
  EXPECT_GT(extreme_high, 30);
  EXPECT_GT(dead_high, 20);  // constant channels that only the constant form admits
  EXPECT_EQ(cases, kCases);
}

// PackWeightsVnni's split form (qgemm_vnni.h): which weights take it, and that panel plus
// remainder groups hold exactly w - zp (the GEMMs themselves are checked above and by QGemmOps).
TEST(VnniSplitWeights, PackedExactly) {
  std::mt19937_64 rng(77);
  struct Expect {
    int32_t zp;
    std::vector<std::pair<int, uint8_t>> set;  // (index, value) over a base inside int8 of zp
    bool split, rowsum;
  };
  const int N = 37, K = 29;  // 3 panels (the last partial), 8 k groups (the last partial)
  const Expect cases[] = {
      {128, {{0, 0}, {5, 255}}, false, false},            // 0 - 128 and 255 - 128 fit
      {1, {{3, 255}}, true, false},                       // 254: 127 + 127
      {1, {{3, 255}, {N * K - 1, 255}, {40, 255}}, true, false},
      {127, {{0, 255}, {30 * K + 28, 255}}, true, false},  // 128 = 127 + 1; 0 - 127 fits
      {255, {{17 * K + 4, 0}}, true, false},              // -255: -128 - 127
      {0, {{17 * K + 4, 255}}, false, true},              // 255 is not a sum of two int8
      {1, {}, false, false},
  };
  for (const Expect& e : cases) {
    std::vector<uint8_t> w(static_cast<size_t>(N) * K);
    for (auto& v : w)
      v = static_cast<uint8_t>(std::clamp<int32_t>(static_cast<int32_t>(rng() % 256), std::max(0, e.zp - 128),
                                                   std::min(255, e.zp + 127)));
    for (auto [i, v] : e.set) w[static_cast<size_t>(i)] = v;
    PackedB8 b;
    PackWeightsVnni(w.data(), N, K, {e.zp}, &b);
    SCOPED_TRACE("zp " + std::to_string(e.zp) + " outliers " + std::to_string(e.set.size()));
    EXPECT_EQ(b.split(), e.split);
    EXPECT_EQ(b.f != 0, e.rowsum);
    EXPECT_STREQ(WeightFormSuffix(b), e.split ? "/wsplit" : e.rowsum ? "/rowsum" : "");
    if (!b.split()) continue;
    ASSERT_EQ(b.extra_begin.size(), static_cast<size_t>(b.panels + 1));
    for (int n = 0; n < N; ++n) {
      const int p = n / 16, j = n % 16;
      int32_t col = 0;
      for (int k = 0; k < K; ++k) {
        const int32_t d = int32_t{w[static_cast<size_t>(n) * K + k]} - e.zp;
        int32_t got = b.panel(p)[(k / 4) * 64 + j * 4 + k % 4];
        EXPECT_EQ(got, std::clamp(d, -128, 127)) << "n " << n << " k " << k;
        int groups = 0;
        for (int x = b.extra_begin[p]; x < b.extra_begin[p + 1]; ++x)
          if (b.extra_group[x] == k / 4) got += b.extra.get()[x * 64 + j * 4 + k % 4], ++groups;
        EXPECT_EQ(got, d) << "n " << n << " k " << k;
        EXPECT_LE(groups, 1);
        col += d;
      }
      EXPECT_EQ(b.col_sum[n], col) << "n " << n;
    }
    // Remainder groups only where some weight of the (panel, k group) leaves int8.
    EXPECT_EQ(b.extra_group.size(), e.set.size());
  }
  // Outside int8 everywhere: the row sums cost less than a remainder group per k group.
  std::vector<uint8_t> w(static_cast<size_t>(N) * K);
  for (auto& v : w) v = rng() % 2 ? 0 : 255;
  PackedB8 b;
  PackWeightsVnni(w.data(), N, K, {127}, &b);
  EXPECT_FALSE(b.split());
  EXPECT_NE(b.f, 0);
}

// PackRhsVnni (BATCH_MATMUL's per-invoke rhs packing) against PackWeightsVnni on the same
// [N][K] matrix, read as [N][K] or [K][N]: byte-identical panels, pairs and sums where
// PackWeightsVnni keeps w - zp in int8 or takes row sums; where it would split, the row-sum form
// holding w exactly (same column and absolute sums). Odd N and K (partial panels and k groups),
// zero points at the limits, values inside and outside int8 of them, storage reused.
TEST(VnniRhsPacking, MatchesPackWeightsVnni) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: PackRhsVnni is not used";
  std::mt19937_64 rng(515);
  int cases = 0, splits = 0, rowsums = 0, fits = 0;
  PackedB8 reused;
  for (int N : {1, 5, 16, 17, 24, 40})
    for (int K : {1, 2, 3, 4, 5, 8, 63, 64, 65})
      for (int32_t zp : {0, -128, 127, 9}) {
        const int narrow = cases % 3;  // 0: full int8 range; 1: inside int8 of zp; 2: a few outliers
        std::vector<int8_t> w(static_cast<size_t>(N) * K);
        for (auto& v : w) {
          const int32_t full = static_cast<int32_t>(rng() % 256) - 128;
          v = static_cast<int8_t>(narrow == 0 ? full : std::clamp(full, std::max(-128, zp - 128), std::min(127, zp + 127)));
        }
        if (narrow == 2) w[rng() % w.size()] = zp > 0 ? -128 : 127;
        std::vector<int8_t> kn(w.size());  // [K][N]
        for (int n = 0; n < N; ++n)
          for (int k = 0; k < K; ++k) kn[static_cast<size_t>(k) * N + n] = w[static_cast<size_t>(n) * K + k];
        PackedB8 want;
        PackWeightsVnni(w.data(), N, K, {zp}, &want);
        const std::string what = "N " + std::to_string(N) + " K " + std::to_string(K) + " zp " + std::to_string(zp);
        for (bool k_major : {false, true}) {
          PackedB8 fresh;
          PackedB8& got = k_major ? reused : fresh;
          PackRhsVnni(k_major ? kn.data() : w.data(), k_major, N, K, zp, &got);
          SCOPED_TRACE(what + (k_major ? " [K][N]" : " [N][K]"));
          ASSERT_FALSE(got.split());
          ASSERT_EQ(got.K4, want.K4);
          ASSERT_EQ(got.panels, want.panels);
          EXPECT_EQ(got.f, got.b_offset - zp);
          EXPECT_EQ(got.abs_sum, want.abs_sum);
          EXPECT_EQ(got.packed_koff, want.packed_koff);
          if (!want.split()) {
            EXPECT_EQ(got.b_offset, want.b_offset);
            ASSERT_EQ(got.data.size, want.data.size);
            EXPECT_EQ(std::memcmp(got.data.get(), want.data.get(), got.data.size), 0);
            EXPECT_EQ(got.col_sum, want.col_sum);
            ASSERT_EQ(got.pairs.size, want.pairs.size);
            if (got.pairs.size) {
              EXPECT_EQ(std::memcmp(got.pairs.get(), want.pairs.get(), got.pairs.size), 0);
            }
          } else {
            EXPECT_EQ(got.b_offset, 0);
          }
          // Every packed value is w - b_offset, zeros past N and K, col_sum their sums.
          for (int p = 0; p < got.panels; ++p)
            for (int j = 0; j < 16; ++j) {
              const int n = 16 * p + j;
              int32_t col = 0;
              for (int k = 0; k < 4 * got.K4; ++k) {
                const int32_t v = got.panel(p)[(k / 4) * 64 + j * 4 + k % 4];
                const int32_t expect = n < N && k < K ? int32_t{w[static_cast<size_t>(n) * K + k]} - got.b_offset : 0;
                ASSERT_EQ(v, expect) << "n " << n << " k " << k;
                col += v;
              }
              EXPECT_EQ(got.col_sum[static_cast<size_t>(n)], col) << "n " << n;
            }
        }
        ++cases;
        (want.split() ? splits : want.f != 0 ? rowsums : fits) += 1;
      }
  EXPECT_EQ(cases, 6 * 9 * 4);
  EXPECT_GT(splits, 0);
  EXPECT_GT(fits, 0);
  std::printf("[rhs packing] %d matrices: %d fit int8, %d row sums, %d split by PackWeightsVnni\n", cases, fits, rowsums,
              splits);
}

// The 16x8 VNNI GEMM (Int16VnniChunk, vpdpwssd) against plain loops and the reference's scalar
// requantizations (quant_utils.h) for the three roundings: full-range int16 A and int8 B, every
// shift each stage admits (and refusal outside), extreme multipliers (the reduced multiplier's
// 0x7FFF0000 edge), int32 biases that make acc + bias wrap, large int64 biases, no bias, random
// activation ranges, odd K, N not a multiple of 16, all tile row counts, panel ranges starting
// past 0.
TEST(QGemmInt16Vnni, ChunkMatchesReferenceRequantization) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  std::mt19937_64 rng(41);
  const int Ks[] = {1, 2, 3, 5, 8, 16, 17, 27, 31, 64, 72, 129, 300};
  const int Ns[] = {1, 2, 7, 8, 15, 16, 17, 31, 33, 48, 64, 65, 100};
  const int Ms[] = {1, 2, 5, 6, 7, 8, 11, 12, 13, 25, 37};
  const Int16Rounding roundings[] = {Int16Rounding::kInt64Bias, Int16Rounding::kSingleRound,
                                     Int16Rounding::kGemmlowp32};
  int by_rounding[3] = {}, refused = 0, by_narrow = 0;
  for (int it = 0; it < 900 && !::testing::Test::HasFailure(); ++it) {
    const int K = Ks[it % std::size(Ks)], N = Ns[(it / 3) % std::size(Ns)], M = Ms[(it / 5) % std::size(Ms)];
    const Int16Rounding rounding = roundings[it % 3];
    const int K2 = (K + 1) / 2;
    const int64_t lda = int64_t{K2} * 2;
    const bool narrow_case = rounding == Int16Rounding::kInt64Bias && (it / 3) % 2 == 0;
    std::vector<int8_t> w(static_cast<size_t>(N) * K);
    for (auto& v : w) v = static_cast<int8_t>(rng());
    std::vector<int16_t> a(static_cast<size_t>(M * lda + kASlack));
    for (auto& v : a) v = static_cast<int16_t>(rng());
    if (it % 7 == 0) std::fill(a.begin(), a.begin() + M * lda, int16_t{-32768});
    PackedB pb;
    PackWeights(w.data(), N, K, {0}, &pb);
    std::vector<int32_t> mult(N), bias32(N);
    std::vector<int> shift(N);
    std::vector<int64_t> bias64(N);
    const int32_t edge_m[] = {INT32_MAX, 0x7FFF0000, 0x7FFEFFFF, 0x7FFF8000, 1 << 30, 0};
    for (int n = 0; n < N; ++n) {
      mult[n] = rng() % 4 == 0 ? edge_m[rng() % std::size(edge_m)]
                               : (1 << 30) + static_cast<int32_t>(rng() % (1u << 30));
      // Shifts the stage admits, and now and then one it must refuse.
      const bool out_of_range = it % 29 == 0 && n == N / 2;
      switch (rounding) {
        case Int16Rounding::kInt64Bias:
          // Every other kInt64Bias case within the 32-bit stage's shifts (15 - shift in [17, 46]).
          shift[n] = out_of_range ? 15 : narrow_case ? -31 + static_cast<int>(rng() % 30) : -48 + static_cast<int>(rng() % 63);
          break;
        case Int16Rounding::kSingleRound: shift[n] = out_of_range ? 31 : -32 + static_cast<int>(rng() % 63); break;
        case Int16Rounding::kGemmlowp32: shift[n] = out_of_range ? -32 : -31 + static_cast<int>(rng() % 63); break;
      }
      bias32[n] = static_cast<int32_t>(rng());
      bias64[n] = narrow_case ? static_cast<int64_t>(rng() % (uint64_t{1} << 25)) - (int64_t{1} << 24)
                              : static_cast<int64_t>(rng() % (uint64_t{1} << 46)) - (int64_t{1} << 45);
    }
    // The accumulator bound the operators pass (|a| <= 32768); in some narrow cases the last
    // channel's bias at the edge of what fits int32: one past it must keep the 64-bit stage.
    std::vector<int64_t> bound(N);
    for (int n = 0; n < N; ++n) bound[n] = pb.abs_sum[n] * 32768;
    const int narrow_edge = narrow_case ? (it / 6) % 3 : 0;  // 1: at the edge, 2: one past it
    if (narrow_edge > 0) {
      const int64_t room = (int64_t{1} << 31) - 1 - bound[N - 1];
      bias64[N - 1] = (it % 4 == 0 ? -1 : 1) * (narrow_edge == 1 ? room : room + 1);
    }
    const bool has_bias = it % 4 != 1;
    Int16Out q;
    q.rounding = rounding;
    q.bias32 = has_bias && rounding != Int16Rounding::kInt64Bias ? bias32.data() : nullptr;
    q.bias64 = has_bias && rounding == Int16Rounding::kInt64Bias ? bias64.data() : nullptr;
    q.multiplier = mult.data();
    q.shift = shift.data();
    q.act_min = -32768 + static_cast<int32_t>(rng() % 3) * 16000;
    q.act_max = 32767 - static_cast<int32_t>(rng() % 3) * 16000;
    Int16VnniOutput out;
    const bool built = BuildInt16VnniOutput(q, N, &out, it % 2 == 0 || narrow_case ? bound.data() : nullptr);
    if (it % 29 == 0) {
      EXPECT_FALSE(built) << "it " << it << ": a shift outside the stage's range was accepted";
      ++refused;
      continue;
    }
    ASSERT_TRUE(built) << "it " << it;
    EXPECT_EQ(out.two_round, rounding == Int16Rounding::kGemmlowp32);
    const bool want_narrow = narrow_case && (narrow_edge != 2 || q.bias64 == nullptr);
    EXPECT_EQ(out.narrow, want_narrow) << "it " << it << " edge " << narrow_edge;
    by_narrow += out.narrow;
    std::vector<int16_t> c(static_cast<size_t>(M) * N, 0x5555);
    // Two calls: panels [0, mid) and [mid, panels).
    const int mid = pb.panels / 2;
    Int16VnniChunk(a.data(), lda, M, pb, 0, mid, out, c.data(), N);
    Int16VnniChunk(a.data(), lda, M, pb, mid, pb.panels, out, c.data(), N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        int32_t acc = 0;
        for (int k = 0; k < K; ++k) acc += int32_t{a[m * lda + k]} * w[static_cast<size_t>(n) * K + k];
        int32_t v = 0;
        switch (rounding) {
          case Int16Rounding::kInt64Bias:
            v = MultiplyByQuantizedMultiplier(int64_t{acc} + (q.bias64 ? bias64[n] : 0), mult[n], shift[n]);
            break;
          case Int16Rounding::kSingleRound:
            v = MultiplyByQuantizedMultiplierSingleRound(WrapToInt32(int64_t{acc} + (q.bias32 ? bias32[n] : 0)),
                                                         mult[n], shift[n]);
            break;
          case Int16Rounding::kGemmlowp32:
            v = MultiplyByQuantizedMultiplier(WrapToInt32(int64_t{acc} + (q.bias32 ? bias32[n] : 0)), mult[n],
                                              shift[n]);
            break;
        }
        const auto want = static_cast<int16_t>(std::clamp(v, q.act_min, q.act_max));
        ASSERT_EQ(c[static_cast<size_t>(m) * N + n], want)
            << "it " << it << " rounding " << static_cast<int>(rounding) << " M " << M << " K " << K << " N " << N
            << " m " << m << " n " << n << " acc " << acc << " mult " << mult[n] << " shift " << shift[n];
      }
    ++by_rounding[it % 3];
  }
  for (int r : by_rounding) EXPECT_GT(r, 250);
  EXPECT_GT(refused, 25);
  EXPECT_GT(by_narrow, 80);
}

// HighStageFits at the edges of its conditions.
TEST(VnniHighStage, FitsAtTheEdges) {
  Requant8::Channel ch;
  ch.mult = INT32_MAX;
  ch.right = 22;
  ch.acc_bound = INT32_MAX;
  // (2^31 - 1)^2 + 2^30 + 2^52 + zp * 2^53 < 2^63 exactly for zp <= 511, and >= -2^63 for zp >= -512.
  EXPECT_TRUE(HighStageFits(ch, 511));
  EXPECT_FALSE(HighStageFits(ch, 512));
  EXPECT_TRUE(HighStageFits(ch, -512));
  EXPECT_FALSE(HighStageFits(ch, -513));
  // |acc + bias| must stay below 2^31 (no int32 wrap, as ruy's acc + bias).
  ch.acc_bound = (int64_t{1} << 31) - 101;
  ch.bias = -100;
  EXPECT_TRUE(HighStageFits(ch, 0));
  ch.bias = 101;
  EXPECT_FALSE(HighStageFits(ch, 0));
  ch.bias = 0;
  ch.right = 1;
  EXPECT_TRUE(HighStageFits(ch, 0));
  ch.right = 0;  // r - 1 would be negative
  EXPECT_FALSE(HighStageFits(ch, 0));
  ch.right = 31;  // C = 2^30 + 2^61 + zp * 2^62, B * m just below 2^62
  EXPECT_TRUE(HighStageFits(ch, 0));
  EXPECT_FALSE(HighStageFits(ch, 1));
  EXPECT_TRUE(HighStageFits(ch, -1));
  EXPECT_FALSE(HighStageFits(ch, -2));
  ch.right = 32;
  EXPECT_FALSE(HighStageFits(ch, 0));
  ch.right = 5;
  ch.left = 1;
  EXPECT_FALSE(HighStageFits(ch, 0));
  ch.left = 0;
  ch.acc_bound = -1;  // no bound known
  EXPECT_FALSE(HighStageFits(ch, 0));
  // Store modes.
  EXPECT_EQ(StoreFor(-128, 127), VnniStore::kSat);
  EXPECT_EQ(StoreFor(-127, 127), VnniStore::kLoSat);
  EXPECT_EQ(StoreFor(0, 127), VnniStore::kLoSat);
  EXPECT_EQ(StoreFor(0, 255), VnniStore::kLoUSat);
  EXPECT_EQ(StoreFor(-128, 126), VnniStore::kClamp);
  EXPECT_EQ(StoreFor(0, 254), VnniStore::kClampU);
  EXPECT_EQ(StoreFor(0, 126), VnniStore::kClamp);
}

// ---- Whole operators, fast vs reference ----

enum class Path { kInt8, kUInt8, kHybrid, kInt16 };
const char* PathName(Path p) {
  switch (p) {
    case Path::kInt8: return "int8";
    case Path::kUInt8: return "uint8";
    case Path::kHybrid: return "hybrid";
    case Path::kInt16: return "int16x8";
  }
  return "?";
}

struct Case {
  Path path = Path::kInt8;
  bool per_channel = true;
  bool has_bias = true;
  DType bias_type = DType::kInt32;
  int n = 1, h = 5, w = 5, c = 3, oc = 4, kh = 3, kw = 3;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int padding = tflite::Padding_SAME;
  int act = tflite::ActivationFunctionType_NONE;
  bool asymmetric = false;  // FC hybrid: asymmetric_quantize_inputs
  // uint8 weights with this zero point (>= 0), all within int8 of it except `w_outliers` of them
  // at the end of [0, 255] farther from it (PackWeightsVnni's split form when few).
  int w_zp = -1;
  int w_outliers = 0;

  std::string Describe(const char* op) const {
    std::ostringstream s;
    s << op << " " << PathName(path) << (per_channel ? " per-channel" : " per-tensor") << " in [" << n << "," << h
      << "," << w << "," << c << "] filter [" << oc << "," << kh << "," << kw << "] stride " << stride_h << "x"
      << stride_w << " dilation " << dil_h << "x" << dil_w << (padding == tflite::Padding_SAME ? " SAME" : " VALID")
      << " act " << act << (has_bias ? "" : " no bias") << (asymmetric ? " asymmetric" : "");
    if (w_zp >= 0) s << " weight zp " << w_zp << " outliers " << w_outliers;
    return s.str();
  }
};

int OutSize(int padding, int in, int k, int stride, int dil) {
  const int eff = (k - 1) * dil + 1;
  return padding == tflite::Padding_SAME ? (in + stride - 1) / stride : (in + stride - eff) / stride;
}

// Input, weights (per output channel: `oc` rows of `k` values), bias and output of a quantized
// op; `terms` sizes the output scale.
struct Operands {
  int32_t x, w, bias = kNoTensor, y;
};

Operands MakeOperands(GraphBuilder& b, const Case& c, std::vector<int32_t> in_shape, std::vector<int32_t> w_shape,
                      std::vector<int32_t> out_shape, int64_t terms) {
  auto& rng = b.rng();
  Operands o;
  if (c.path == Path::kHybrid) {
    o.x = b.Input("x", DType::kFloat32, in_shape);
    auto scales = testing::RandomWeightScales(rng, c.oc, c.per_channel);
    o.w = b.ConstRandom("w", DType::kInt8, w_shape, -127, 127, testing::WeightQuant(rng, DType::kInt8, scales, 0));
    if (c.has_bias) o.bias = b.ConstRandom("bias", DType::kFloat32, {c.oc}, -1, 1);
    o.y = b.Tensor("y", DType::kFloat32, out_shape);
    return o;
  }
  const DType t = c.path == Path::kUInt8 ? DType::kUInt8 : c.path == Path::kInt8 ? DType::kInt8 : DType::kInt16;
  const DType wt = c.path == Path::kUInt8 ? DType::kUInt8 : DType::kInt8;
  QuantParams in_q = testing::RandomActivationQuant(rng, t);
  auto scales = testing::RandomWeightScales(rng, c.oc, c.per_channel);
  const double lo = wt == DType::kUInt8 ? 0 : -127, hi = wt == DType::kUInt8 ? 255 : 127;
  if (wt == DType::kUInt8 && c.w_zp >= 0) {
    int64_t count = 1;
    for (int32_t d : w_shape) count *= d;
    std::vector<uint8_t> w(static_cast<size_t>(count));
    for (auto& v : w)
      v = static_cast<uint8_t>(std::clamp<int32_t>(static_cast<int32_t>(rng() % 256), std::max(0, c.w_zp - 128),
                                                   std::min(255, c.w_zp + 127)));
    for (int i = 0; i < c.w_outliers; ++i) w[rng() % w.size()] = c.w_zp >= 128 ? 0 : 255;
    o.w = b.Const("w", wt, w_shape, w, Quant(scales[0], c.w_zp));
  } else {
    o.w = b.ConstRandom("w", wt, w_shape, lo, hi, testing::WeightQuant(rng, wt, scales, 0));
  }
  const float out_scale = testing::OutputScaleFor(t, terms, in_q.scale[0], scales[0]);
  QuantParams out_q = testing::RandomActivationQuant(rng, t);
  out_q.scale[0] = out_scale;
  o.x = b.Input("x", t, in_shape, in_q);
  if (c.has_bias) o.bias = testing::QuantizedBias(b, "bias", c.bias_type, c.oc, in_q.scale[0], scales, out_scale * 40, rng);
  o.y = b.Tensor("y", t, out_shape, out_q);
  return o;
}

Graph BuildConv(const Case& c, uint64_t seed) {
  GraphBuilder b(seed);
  const int oh = OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h);
  const int ow = OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w);
  Operands o = MakeOperands(b, c, {c.n, c.h, c.w, c.c}, {c.oc, c.kh, c.kw, c.c}, {c.n, oh, ow, c.oc},
                            int64_t{c.kh} * c.kw * c.c);
  tflite::Conv2DOptionsT opt;
  opt.padding = static_cast<tflite::Padding>(c.padding);
  opt.stride_h = c.stride_h;
  opt.stride_w = c.stride_w;
  opt.dilation_h_factor = c.dil_h;
  opt.dilation_w_factor = c.dil_w;
  opt.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  std::vector<int32_t> inputs = {o.x, o.w};
  if (o.bias != kNoTensor) inputs.push_back(o.bias);
  b.Op(tflite::BuiltinOperator_CONV_2D, inputs, {o.y}, opt);
  b.Output(o.y);
  return b.Finish();
}

// FC: input [n, h, c] flattened to (n*h) rows of depth c.
Graph BuildFc(const Case& c, uint64_t seed) {
  GraphBuilder b(seed);
  Operands o = MakeOperands(b, c, {c.n, c.h, c.c}, {c.oc, c.c}, {c.n * c.h, c.oc}, c.c);
  tflite::FullyConnectedOptionsT opt;
  opt.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.act);
  opt.asymmetric_quantize_inputs = c.asymmetric;
  std::vector<int32_t> inputs = {o.x, o.w};
  if (o.bias != kNoTensor) inputs.push_back(o.bias);
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, inputs, {o.y}, opt);
  b.Output(o.y);
  return b.Finish();
}

Case RandomConv(std::mt19937_64& rng, Path path) {
  Case c;
  c.path = path;
  for (;;) {
    c.n = Pick(rng, {1, 1, 2});
    c.h = Pick(rng, {1, 2, 5, 7, 9, 13});
    c.w = Pick(rng, {1, 3, 4, 7, 8, 11});
    c.c = Pick(rng, {1, 2, 3, 5, 8, 16, 17, 31, 40});
    c.oc = Pick(rng, {1, 3, 8, 15, 16, 17, 33, 48});
    c.kh = Pick(rng, {1, 1, 2, 3, 3, 5});
    c.kw = Pick(rng, {1, 1, 2, 3, 3, 4});
    c.stride_h = Pick(rng, {1, 1, 2, 3});
    c.stride_w = Pick(rng, {1, 1, 2});
    c.dil_h = Pick(rng, {1, 1, 1, 2});
    c.dil_w = Pick(rng, {1, 1, 1, 2, 3});
    c.padding = Pick(rng, {static_cast<int>(tflite::Padding_SAME), static_cast<int>(tflite::Padding_VALID)});
    c.act = Pick(rng, {static_cast<int>(tflite::ActivationFunctionType_NONE),
                       static_cast<int>(tflite::ActivationFunctionType_RELU),
                       static_cast<int>(tflite::ActivationFunctionType_RELU6),
                       static_cast<int>(tflite::ActivationFunctionType_RELU_N1_TO_1)});
    c.per_channel = path == Path::kUInt8 ? false : Pick(rng, {true, true, false});
    c.has_bias = Pick(rng, {true, true, true, false});
    if (path == Path::kInt16) c.bias_type = Pick(rng, {DType::kInt64, DType::kInt32});
    if (OutSize(c.padding, c.h, c.kh, c.stride_h, c.dil_h) >= 1 &&
        OutSize(c.padding, c.w, c.kw, c.stride_w, c.dil_w) >= 1)
      return c;
  }
}

Case RandomFc(std::mt19937_64& rng, Path path) {
  Case c = RandomConv(rng, path);
  c.h = Pick(rng, {1, 1, 2, 3, 7, 13});
  c.c = Pick(rng, {1, 2, 7, 16, 33, 100, 257});
  c.oc = Pick(rng, {1, 5, 16, 17, 40, 100});
  c.asymmetric = path == Path::kHybrid && Pick(rng, {true, false});
  if (path == Path::kInt16) c.bias_type = Pick(rng, {DType::kInt64, DType::kInt32});
  return c;
}

// The integer GEMMs an op of `path` can run on this CPU: the int16 AVX2 one (CPU capped to
// AVX2) and, on a CPU with AVX-512 VNNI, the VNNI one (vpdpbusd for int8 / uint8, vpdpwssd for
// 16x8).
struct Isa {
  const char* name;  // variant part: "avx2", "avx512vnni"
  const rt::CpuFeatures* cpu;
};
std::vector<Isa> IsasFor(Path path) {
  static const rt::CpuFeatures avx2 = rt::CapFeatures(rt::Cpu(), "avx2");
  std::vector<Isa> v = {{"avx2", &avx2}};
  if (path == Path::kHybrid) return v;  // declined by the GEMM path (reference kernel)
  if (rt::Cpu().has_avx512_vnni()) {
    v.push_back({"avx512vnni", nullptr});
  } else {
    std::printf("[ SKIPPED  ] %s: no AVX-512 VNNI on this CPU, only the AVX2 path is checked\n", PathName(path));
  }
  return v;
}

class QGemmOps : public QGemmTest {
 protected:
  template <typename Make, typename Build>
  void Run(const char* op, const char* type, Path path, int count, uint64_t seed, Make make, Build build) {
    for (const Isa& isa : IsasFor(path)) {
      std::mt19937_64 rng(seed);
      int failures = 0;
      for (int i = 0; i < count && failures < 3; ++i) {
        const Case c = make(rng, path);
        testing::FastCheck check;
        // Hybrid CONV_2D / FULLY_CONNECTED are declined by the fast path (not bit-exact yet): the
        // cases still must match, but run the reference kernel.
        if (path != Path::kHybrid) check.op_type = type;
        check.variant = isa.name;
        check.cpu = isa.cpu;
        check.threads = 1 + i % 2;
        check.seed = seed * 1000 + i;
        if (!testing::ExpectFastMatchesReference(
                build(c, check.seed), std::string(isa.name) + " case " + std::to_string(i) + ": " + c.Describe(op), check))
          ++failures;
      }
    }
  }
};

TEST_F(QGemmOps, Conv2DInt8) { Run("conv2d", "CONV_2D", Path::kInt8, 120, 11, RandomConv, BuildConv); }
TEST_F(QGemmOps, Conv2DUInt8) { Run("conv2d", "CONV_2D", Path::kUInt8, 80, 12, RandomConv, BuildConv); }
TEST_F(QGemmOps, Conv2DHybrid) { Run("conv2d", "CONV_2D", Path::kHybrid, 60, 13, RandomConv, BuildConv); }
TEST_F(QGemmOps, Conv2DInt16x8) { Run("conv2d", "CONV_2D", Path::kInt16, 60, 14, RandomConv, BuildConv); }
TEST_F(QGemmOps, FullyConnectedInt8) {
  Run("fully_connected", "FULLY_CONNECTED", Path::kInt8, 80, 21, RandomFc, BuildFc);
}
TEST_F(QGemmOps, FullyConnectedUInt8) {
  Run("fully_connected", "FULLY_CONNECTED", Path::kUInt8, 60, 22, RandomFc, BuildFc);
}
TEST_F(QGemmOps, FullyConnectedHybrid) {
  Run("fully_connected", "FULLY_CONNECTED", Path::kHybrid, 60, 23, RandomFc, BuildFc);
}
TEST_F(QGemmOps, FullyConnectedInt16x8) {
  Run("fully_connected", "FULLY_CONNECTED", Path::kInt16, 60, 24, RandomFc, BuildFc);
}

// A convolution of the layer tests below and the variant (suffix) it must run.
struct ConvLayer {
  int n, h, w, c, oc, kh, kw, stride_h, stride_w, dil, padding;
  const char* variant;
};

// Whether an int8 layer `l` on this VNNI CPU computes output pixels in lanes (conv_int8.cc's
// PrepareLanes: qgemm::VnniLanes).
bool TakesLanes(const ConvLayer& l) {
  return rt::Cpu().avx512vbmi && l.c % 4 != 0 && l.oc > 1 && l.oc <= kLanesMaxN && l.dil == 1 &&
         VnniLanesFit(l.kw, l.c, l.stride_w);
}

// The Case of layer `l` for `path` (int8 per channel, uint8 per tensor) with activation `act`.
Case LayerCase(const ConvLayer& l, Path path, int act) {
  Case c;
  c.path = path;
  c.per_channel = path == Path::kInt8;
  c.n = l.n;
  c.h = l.h;
  c.w = l.w;
  c.c = l.c;
  c.oc = l.oc;
  c.kh = l.kh;
  c.kw = l.kw;
  c.stride_h = l.stride_h;
  c.stride_w = l.stride_w;
  c.dil_h = c.dil_w = l.dil;
  c.padding = l.padding;
  c.act = act;
  return c;
}

// Larger layers like those of real networks (many tiles, several panel blocks, both threads).
TEST_F(QGemmOps, RealisticLayers) {
  const int kSame = tflite::Padding_SAME;
  const ConvLayer layers[] = {
      {1, 28, 28, 32, 96, 1, 1, 1, 1, 1, kSame, ""},     {1, 14, 14, 96, 40, 1, 1, 1, 1, 1, kSame, ""},
      {1, 7, 7, 320, 1280, 1, 1, 1, 1, 1, kSame, ""},    {1, 30, 30, 3, 32, 3, 3, 2, 2, 1, kSame, ""},
      {1, 12, 12, 64, 64, 3, 3, 1, 1, 1, kSame, ""},     {1, 9, 5, 960, 320, 1, 1, 1, 1, 1, kSame, ""}};
  int i = 0;
  for (const ConvLayer& l : layers) {
    for (Path p : {Path::kInt8, Path::kUInt8}) {
      const Case c = LayerCase(l, p, tflite::ActivationFunctionType_RELU6);
      for (const Isa& isa : IsasFor(p))
        for (int threads : {1, 2}) {
          testing::FastCheck check;
          check.op_type = "CONV_2D";
          check.variant = isa.name;
          check.cpu = isa.cpu;
          check.threads = threads;
          check.seed = 500 + i++;
          testing::ExpectFastMatchesReference(BuildConv(c, check.seed), c.Describe("conv2d"), check);
        }
    }
  }
}

// 16x8 layers like vww_96's and MobileNetV2's (stems through the padded im2col, 1x1 layers with
// small and large K, N not a multiple of 16, several panel blocks) with each bias form (int64:
// the reduced-multiplier rounding; int32: gemmlowp's two roundings; none), every activation,
// both ISAs and 1 and 2 threads, the variant checked.
TEST_F(QGemmOps, Int16x8Layers) {
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  const ConvLayer layers[] = {
      {1, 33, 31, 3, 8, 3, 3, 2, 2, 1, kSame, "/padded"},     // vww stem, odd size
      {1, 24, 24, 8, 16, 1, 1, 1, 1, 1, kSame, ""},           // K = 8
      {1, 12, 12, 16, 32, 1, 1, 1, 1, 1, kSame, ""},
      {1, 7, 9, 144, 24, 1, 1, 1, 1, 1, kSame, ""},
      {2, 5, 7, 37, 75, 1, 1, 1, 1, 1, kValid, ""},           // odd K, N = 4 panels + 11
      {1, 6, 6, 96, 160, 1, 1, 1, 1, 1, kSame, ""},           // 10 panels: blocks of 4 + 3 + 3
      {1, 11, 10, 5, 33, 3, 2, 1, 2, 2, kSame, "/padded"},    // dilation 2, stride 1x2
  };
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                      tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (const ConvLayer& l : layers) {
    for (int bias = 0; bias < 3; ++bias) {
      Case c = LayerCase(l, Path::kInt16, acts[i % 4]);
      c.per_channel = i % 2 == 0;
      c.has_bias = bias < 2;
      c.bias_type = bias == 0 ? DType::kInt64 : DType::kInt32;
      for (const Isa& isa : IsasFor(Path::kInt16))
        for (int threads : {1, 2}) {
          testing::FastCheck check;
          check.op_type = "CONV_2D";
          check.variant = std::string(isa.name) + l.variant;
          check.cpu = isa.cpu;
          check.threads = threads;
          check.seed = 1700 + i;
          testing::ExpectFastMatchesReference(BuildConv(c, check.seed), isa.name + std::string(" ") + c.Describe("conv2d"),
                                              check);
        }
      ++i;
    }
  }
}

// 16x8 layers with int64 biases whose int32 sums could overflow (long K, full-range weights and
// inputs: the reference sums in int64): on AVX-512 VNNI the GEMM sums blocks of k pairs in int32
// and adds them into int64 sums (Int16VnniOutput::long_sums) instead of leaving the layer to the
// reference kernel; byte-exact, the variant checked, 1-2 threads. (AVX2 still declines them.)
TEST_F(QGemmOps, Int16x8LongSums) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU: long 16x8 sums run the reference kernel";
  const int kSame = tflite::Padding_SAME;
  const ConvLayer layers[] = {
      {1, 7, 7, 512, 40, 3, 3, 1, 1, 1, kSame, "/padded"},  // K = 4608: 36 blocks of 128 pairs
      {1, 3, 5, 4096, 19, 1, 1, 1, 1, 1, kSame, ""},        // K = 4096, N not a multiple of 16
      {2, 4, 3, 1031, 33, 1, 1, 1, 1, 1, kSame, ""},        // odd K past a block boundary
  };
  int i = 0;
  for (const ConvLayer& l : layers)
    for (int act : {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU}) {
      Case c = LayerCase(l, Path::kInt16, act);
      c.per_channel = i % 2 == 0;
      c.has_bias = true;
      c.bias_type = DType::kInt64;
      testing::FastCheck check;
      check.op_type = "CONV_2D";
      check.variant = std::string("avx512vnni") + l.variant;
      check.threads = 1 + i % 2;
      check.seed = 2900 + i++;
      testing::ExpectFastMatchesReference(BuildConv(c, check.seed), "long sums " + c.Describe("conv2d"), check);
    }
}

// "|" + prefix + variant with "/rqhigh" as "/rqfloat": the high-dword stage's exact fp32 form
// (VnniStage::kFloat), taken where that applies, as an alternative for FastCheck::variant; "" when
// variant names no high-dword stage.
std::string FloatStageAlternative(const std::string& prefix, const std::string& variant) {
  const size_t at = variant.find("/rqhigh");
  if (at == std::string::npos) return "";
  std::string alt = "|" + prefix;
  alt.append(variant, 0, at).append("/rqfloat").append(variant, at + 7, std::string::npos);
  return alt;
}

// The paths of issue 6 (and their VNNI twins), each checked to be the one taken: im2col from the padded int16 image
// (stems with C = 1 and 3, SAME / VALID, stride 1 / 2, dilation, odd K, N not a multiple of
// 16, pixel counts not a multiple of the 6-row tile) and the half-range output stage on
// small-K 1x1 layers; 1 and 2 threads, int8 and uint8.
TEST_F(QGemmOps, PaddedIm2colAndHalfRangeStage) {
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  const ConvLayer layers[] = {
      {1, 49, 10, 1, 64, 10, 4, 2, 2, 1, kSame, "/padded/rqhalf"},   // kws_dscnn stem
      {1, 49, 10, 1, 37, 10, 4, 2, 2, 1, kValid, "/padded/rqhalf"},
      {1, 31, 29, 3, 32, 3, 3, 2, 2, 1, kSame, "/padded/rqhalf"},    // MobileNet stem, odd size
      {2, 17, 15, 3, 24, 3, 3, 2, 2, 1, kValid, "/padded/rqhalf"},
      {1, 13, 11, 1, 17, 5, 3, 1, 1, 1, kSame, "/padded/rqhalf"},
      {1, 12, 13, 2, 33, 3, 3, 1, 2, 2, kSame, "/padded/rqhalf"},   // dilation 2
      {1, 9, 10, 5, 19, 3, 2, 2, 1, 1, kSame, "/padded/rqhalf"},
      {1, 9, 9, 16, 20, 1, 1, 2, 2, 1, kSame, "/padded/rqhalf"},    // 1x1 stride 2
      {1, 25, 5, 64, 64, 1, 1, 1, 1, 1, kSame, "/rqhalf"},          // kws 1x1 64->64, 125 px
      {1, 23, 19, 16, 96, 1, 1, 1, 1, 1, kValid, "/rqhalf"},        // K = 16, 437 px
      {1, 11, 13, 17, 37, 1, 1, 1, 1, 1, kSame, "/rqhalf"},         // odd K and N
      {2, 7, 9, 24, 144, 1, 1, 1, 1, 1, kSame, "/rqhalf"},
  };
  int i = 0;
  for (const ConvLayer& l : layers) {
    for (Path p : {Path::kInt8, Path::kUInt8}) {
      const Case c = LayerCase(l, p, i % 3 == 0 ? tflite::ActivationFunctionType_RELU6 : tflite::ActivationFunctionType_NONE);
      for (const Isa& isa : IsasFor(p))
        for (int threads : {1, 2}) {
          testing::FastCheck check;
          check.op_type = "CONV_2D";
          // The VNNI GEMM takes its high-dword stage where the int16 GEMM takes the half-range
          // one (or that stage's fp32 form), and reads windows in place (int8; uint8 only when its weights fit int8 after the
          // zero point, which these random weights may not: not checked): C = 4k, and these
          // stems with dilation 1 too (their filter rows' weights spread to whole k groups, or
          // output pixels in lanes).
          std::string variant = l.variant;
          if (isa.cpu == nullptr && variant.ends_with("/rqhalf")) variant.replace(variant.size() - 4, 4, "high");
          if (isa.cpu == nullptr && (l.c % 4 == 0 || l.dil == 1) && variant.starts_with("/padded"))
            variant = p == Path::kInt8 ? (TakesLanes(l) ? "/lanes" : "/direct") + variant.substr(7) : "";
          check.variant = std::string(isa.name) + variant;
          check.variant += FloatStageAlternative(isa.name, variant);
          check.cpu = isa.cpu;
          check.threads = threads;
          check.seed = 900 + i++;
          testing::ExpectFastMatchesReference(BuildConv(c, check.seed), c.Describe("conv2d"), check);
        }
    }
  }
}

// Each layer as int8 and uint8, at 1 and 2 threads, against the reference kernels, activations
// cycling through NONE, RELU, RELU6, RELU_N1_TO_1; an int8 layer must run a VNNI variant holding
// its `variant`, a uint8 one any VNNI variant (its random weights may leave int8 after the zero
// point). adjust(case, layer index) may change a case (e.g. its dilations).
void CheckVnniLayers(const std::vector<ConvLayer>& layers, uint64_t seed,
                     const std::function<void(Case&, size_t)>& adjust = nullptr) {
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                      tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1};
  int i = 0;
  for (size_t li = 0; li < layers.size(); ++li) {
    const ConvLayer& l = layers[li];
    for (Path p : {Path::kInt8, Path::kUInt8}) {
      Case c = LayerCase(l, p, acts[i % 4]);
      if (adjust) adjust(c, li);
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.op_type = "CONV_2D";
        std::string variant = p == Path::kInt8 ? l.variant : "";
        // Output pixels in lanes need AVX-512 VBMI; without it the same layers read windows in place.
        if (variant.rfind("/lanes", 0) == 0 && !rt::Cpu().avx512vbmi) variant = "/direct" + variant.substr(6);
        check.variant = "avx512vnni" + variant;
        check.variant += FloatStageAlternative("avx512vnni", variant);
        check.threads = threads;
        check.seed = seed + static_cast<uint64_t>(i++);
        testing::ExpectFastMatchesReference(BuildConv(c, check.seed), c.Describe("conv2d"), check);
      }
    }
  }
}

// Convolutions whose windows the VNNI GEMM reads in place from the padded image (C a multiple of
// 4, int8: "/direct"): 3x3 stride 1 / 2, SAME / VALID, dilation, non-square filters, batch 2,
// output rows wider than a tile (12 rows) and not a multiple of it, N not a multiple of 16, more
// tiles per output row than VnniChunk keeps chosen for all rows;
// weights past the direct path's limit take the packed im2col; uint8 (weights may leave int8
// after the zero point: then packed) must match either way. 1 and 2 threads, every activation.
TEST_F(QGemmOps, DirectIm2colVnni) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  const ConvLayer layers[] = {  // variants: int8
      {1, 32, 32, 16, 16, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},   // CIFAR ResNet-8
      {1, 16, 16, 32, 32, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},
      {1, 8, 8, 64, 64, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},
      {1, 32, 32, 16, 32, 3, 3, 2, 2, 1, kSame, "/direct/rqhigh"},
      {2, 9, 11, 8, 17, 3, 3, 2, 2, 1, kValid, "/direct/rqhigh"},
      {1, 13, 7, 4, 33, 5, 3, 1, 2, 1, kSame, "/direct/rqhigh"},
      {1, 12, 13, 8, 20, 3, 3, 1, 1, 2, kSame, "/direct/rqhigh"},    // dilation 2
      {1, 30, 29, 12, 48, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},   // 29 windows per row
      {2, 5, 27, 20, 65, 2, 4, 1, 3, 1, kValid, "/direct/rqhigh"},
      {1, 3, 100, 8, 320, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},   // 85 tiles per output row
      {1, 6, 6, 64, 320, 3, 3, 1, 1, 1, kSame, "/padded/rqhigh"},    // 184 KB of weights
  };
  CheckVnniLayers(std::vector<ConvLayer>(std::begin(layers), std::end(layers)), 1300);
}

// Convolutions whose C is not a multiple of 4 (stems) read in place with each filter row's
// kw * C weights spread to whole k groups of 4 ("/direct"): the group past a row's last weight
// reads the next pixels' bytes (times zero weights), up to 3 bytes past the padded image at its
// end (VALID windows that end on the image's last byte). With at most 8 output channels and 16
// neighbouring windows within 128 bytes (and AVX-512 VBMI), output pixels in lanes instead
// ("/lanes", qgemm::VnniLanes: reads up to 128 bytes past a window row's start; one or two
// channel quads, N odd, rows not a multiple of 16 pixels). C = 1, 2, 3, 5, 6, 7, filter rows of
// 1 to 7 values per channel, stride 1 / 2 / 3, SAME / VALID, batch 2, N within one panel, across
// panels, odd. Declined, and checked to be: dilation in x, added groups past the packing they
// save (3x1 on C = 1 with 4 panels), weights past the direct path's limit. uint8 (weights may
// leave int8 after the zero point: then split, or packed with row sums) must match either way.
// 1 and 2 threads.
TEST_F(QGemmOps, DirectSpreadStemsVnni) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  const ConvLayer layers[] = {  // variants: int8
      {1, 32, 32, 3, 16, 3, 3, 1, 1, 1, kSame, "/direct/rqhigh"},    // CIFAR ResNet-8 stem
      {1, 23, 25, 3, 8, 3, 3, 2, 2, 1, kSame, "/lanes/rqhigh"},      // VWW stem, odd size
      {1, 49, 10, 1, 64, 10, 4, 2, 2, 1, kSame, "/direct/rqhigh"},   // kws stem
      {2, 7, 7, 3, 17, 3, 3, 2, 2, 1, kValid, "/direct/rqhigh"},     // last window ends the image
      {2, 7, 7, 3, 5, 3, 3, 2, 2, 1, kValid, "/lanes/rqhigh"},       // the same in lanes
      {1, 9, 11, 1, 33, 3, 3, 1, 1, 1, kValid, "/direct/rqhigh"},
      {1, 10, 9, 2, 20, 3, 3, 1, 2, 1, kSame, "/direct/rqhigh"},
      {1, 11, 8, 5, 19, 3, 2, 2, 1, 1, kSame, "/direct/rqhigh"},
      {1, 8, 13, 6, 24, 2, 3, 1, 3, 1, kValid, "/direct/rqhigh"},
      {1, 12, 9, 7, 40, 5, 5, 1, 1, 1, kSame, "/direct/rqhigh"},
      {2, 13, 6, 3, 31, 7, 1, 1, 1, 1, kSame, "/direct/rqhigh"},
      {1, 17, 40, 3, 4, 3, 3, 1, 1, 1, kSame, "/lanes/rqhigh"},      // one quad, 2.5 groups of 16 pixels
      {1, 9, 19, 1, 7, 5, 5, 2, 2, 1, kValid, "/lanes/rqhigh"},      // two quads, N odd
      {1, 6, 50, 2, 6, 3, 3, 1, 3, 1, kSame, "/lanes/rqhigh"},       // stride 3
      {2, 11, 13, 5, 3, 3, 2, 2, 1, 1, kSame, "/lanes/rqhigh"},      // C = 5, batch 2
      {1, 8, 13, 6, 8, 2, 3, 1, 3, 1, kValid, "/direct/rqhigh"},     // 16 windows span 279 bytes
      {1, 12, 13, 3, 33, 3, 3, 1, 1, 2, kSame, "/padded/rqhigh"},    // dilation 2
      {1, 20, 20, 1, 64, 3, 1, 1, 1, 1, kSame, "/padded/rqhigh"},    // 3 groups for 1 value each
      {1, 8, 8, 3, 1024, 7, 7, 2, 2, 1, kSame, "/padded/rqhigh"},    // 172 KB spread
  };
  CheckVnniLayers(std::vector<ConvLayer>(std::begin(layers), std::end(layers)), 1700);
  // Dilation in y only (windows' rows 2 padded rows apart), read in place either way.
  const std::vector<ConvLayer> dilated_y = {
      {1, 13, 12, 3, 6, 3, 3, 1, 1, 1, kSame, "/lanes/rqhigh"},
      {2, 11, 9, 3, 20, 3, 3, 2, 1, 1, kValid, "/direct/rqhigh"},
  };
  CheckVnniLayers(dilated_y, 1750, [](Case& c, size_t) { c.dil_h = 2; });
}

// One-output-channel convolutions (segmentation heads) on VNNI: each pixel's window rows are
// dot products with the weights, 16 pixels reduced across lanes at once ("/single"): C from 1 to
// 80 (window rows of 3 to 400 bytes: one 64-byte block with the weights in registers for 1, 3,
// 5 and 7 filter rows, else several blocks, masked tails), 1x1 strided, 3x3,
// 5x5, 7x1 and 1x7 filters, strides 1 to 3, SAME / VALID, batch 2, rows of 1 to 61 pixels (a last
// group of 1..15), dilation 2 in y (in x: the packed im2col). uint8 weights may leave int8 after
// the zero point (then the GEMM serves). Every activation, 1 and 2 threads.
TEST_F(QGemmOps, SingleChannelVnni) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  struct L {
    ConvLayer l;
    int dil_h, dil_w;
  };
  const L layers[] = {  // variants: int8
      {{1, 64, 61, 8, 1, 3, 3, 1, 1, 1, kSame, "/single"}, 1, 1},    // pose segmentation head, odd width
      {{2, 9, 17, 3, 1, 3, 3, 1, 1, 1, kValid, "/single"}, 1, 1},
      {{1, 20, 33, 32, 1, 3, 3, 2, 2, 1, kSame, "/single"}, 1, 1},   // 96-byte window rows
      {{1, 11, 14, 80, 1, 5, 5, 1, 3, 1, kSame, "/single"}, 1, 1},   // 400-byte window rows
      {{1, 16, 16, 17, 1, 1, 1, 2, 2, 1, kValid, "/single"}, 1, 1},  // 1x1 stride 2
      {{1, 23, 5, 1, 1, 7, 1, 1, 1, 1, kSame, "/single"}, 1, 1},
      {{1, 13, 19, 6, 1, 5, 5, 2, 1, 1, kSame, "/single"}, 1, 1},    // 5x5, 30-byte rows
      {{1, 6, 40, 4, 1, 1, 7, 1, 2, 1, kSame, "/single"}, 1, 1},
      {{1, 1, 1, 5, 1, 1, 1, 2, 2, 1, kSame, "/single"}, 1, 1},      // one pixel
      {{1, 12, 13, 8, 1, 3, 3, 1, 1, 1, kSame, "/single"}, 2, 1},    // dilation 2 in y
      {{1, 12, 13, 8, 1, 3, 3, 1, 1, 1, kSame, "/direct"}, 1, 2},    // dilation 2 in x
  };
  std::vector<ConvLayer> conv_layers;
  for (const L& x : layers) conv_layers.push_back(x.l);
  CheckVnniLayers(conv_layers, 1900, [&](Case& c, size_t li) {
    c.dil_h = layers[li].dil_h;
    c.dil_w = layers[li].dil_w;
  });
}

// uint8 weights (per tensor, as MobileNet's) around zero points 0, 1, 127, 128, 255 with a few or
// many weights at 0 / 255 outside int8 after the zero point: the split form (few, "/wsplit"),
// the row sums (many, or a weight 255 with zero point 0: "/rowsum") and neither (zero point
// 128), each checked to be taken. 1x1 layers read in place, 3x3 stems and C = 8 windows read in
// place ("/direct", which needs f = 0: split or neither) or through the packed im2col (row sums),
// stems of 5 and 8 channels in lanes (weights minus 128 with window sums where they leave int8),
// FULLY_CONNECTED; 1 and 2
// threads, every activation, bit-exact with the reference kernels.
TEST_F(QGemmOps, SplitUInt8WeightsVnni) {
  if (!rt::Cpu().has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int kSame = tflite::Padding_SAME, kValid = tflite::Padding_VALID;
  const ConvLayer layers[] = {
      {1, 23, 19, 16, 96, 1, 1, 1, 1, 1, kSame, ""},          // MobileNetV2's K = 16 1x1
      {1, 13, 11, 32, 16, 1, 1, 1, 1, 1, kSame, ""},          // one panel
      {2, 7, 9, 24, 65, 1, 1, 1, 1, 1, kValid, ""},           // N = 4 panels + 1
      {1, 11, 13, 17, 37, 1, 1, 1, 1, 1, kSame, ""},          // odd K: packed rows
      {1, 31, 29, 3, 32, 3, 3, 2, 2, 1, kSame, "/direct"},    // stem (weights spread)
      {1, 31, 29, 3, 8, 3, 3, 2, 2, 1, kSame, "/direct"},     // the same with 8 channels (or lanes)
      {1, 17, 21, 1, 5, 5, 5, 1, 1, 1, kValid, "/direct"},    // C = 1, 5 channels (or lanes)
      {1, 12, 13, 8, 20, 3, 3, 1, 1, 1, kSame, "/direct"},
      {2, 9, 11, 8, 17, 3, 3, 2, 2, 2, kValid, "/direct"},    // stride 2, dilation 2
  };
  const int acts[] = {tflite::ActivationFunctionType_NONE, tflite::ActivationFunctionType_RELU,
                      tflite::ActivationFunctionType_RELU6, tflite::ActivationFunctionType_RELU_N1_TO_1};
  struct Weights {
    int zp, outliers;
    const char* form;
  };
  const Weights forms[] = {{1, 1, "/wsplit"},  {127, 3, "/wsplit"}, {255, 2, "/wsplit"}, {0, 1, "/rowsum"},
                           {128, 5, ""},      {127, 100000, "/rowsum"}};
  int i = 0;
  for (const ConvLayer& l : layers) {
    for (const Weights& f : forms) {
      Case c = LayerCase(l, Path::kUInt8, acts[i % 4]);
      c.w_zp = f.zp;
      c.w_outliers = f.outliers;
      // The direct path needs f = 0 (no row sums; the split form is read in place, also with
      // the stem's spread weights); otherwise the windows are packed ("/padded").
      std::string path = l.variant;
      const std::string form = f.form;
      std::string expect_form = form;
      if (path == "/direct" && TakesLanes(l)) {
        // Output pixels in lanes (with VBMI): weights minus 128 and window sums wherever some
        // w - zp leaves int8 ("/rowsum"), as they are otherwise.
        path = "/lanes";
        if (!form.empty()) expect_form = "/rowsum";
      } else if (path == "/direct" && form == "/rowsum") {
        path = "/padded";
      }
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.op_type = "CONV_2D";
        check.variant = "avx512vnni" + path;
        check.threads = threads;
        check.seed = 2100 + i;
        const std::string what = c.Describe("conv2d");
        const Graph g = BuildConv(c, check.seed);
        testing::ExpectFastMatchesReference(g, what, check);
        check.variant = expect_form;  // the weights' form, at the variant's end
        if (!check.variant.empty()) testing::ExpectFastMatchesReference(g, what, check);
      }
      ++i;
    }
  }
  // FULLY_CONNECTED: rows of odd depth (packed) and of a multiple of 4 (read in place).
  for (int depth : {33, 64}) {
    for (const Weights& f : forms) {
      Case c;
      c.path = Path::kUInt8;
      c.per_channel = false;
      c.n = 1;
      c.h = 7;
      c.c = depth;
      c.oc = 40;
      c.act = acts[i % 4];
      c.w_zp = f.zp;
      c.w_outliers = f.outliers;
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.op_type = "FULLY_CONNECTED";
        check.variant = std::string("avx512vnni") + f.form;
        check.threads = threads;
        check.seed = 2300 + i;
        testing::ExpectFastMatchesReference(BuildFc(c, check.seed), c.Describe("fully_connected"), check);
      }
      ++i;
    }
  }
}

}  // namespace
}  // namespace edgeopt
