// FloatRequantConstants (float_requant.h): the fp32 form floor(float(a) * s + c), computed with
// the AVX-512 instructions the kernels use (multiply-add and conversion rounding down), must equal
// the integer form floor((a m + C) / 2^(31 + r)) after the clamp for every accumulator in range.
#include "kernels/common/float_requant.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/float_requant_avx512.h"
#include "kernels/common/float_requant_internal.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels {
namespace {

__int128 FloorDiv(__int128 n, __int128 d) {
  __int128 q = n / d;
  if (q * d > n) --q;
  return q;
}

int32_t Exact(int64_t m, int r, __int128 C, int64_t a, int32_t lo, int32_t hi) {
  return static_cast<int32_t>(std::clamp<__int128>(FloorDiv(__int128{a} * m + C, __int128{1} << (31 + r)), lo, hi));
}

// floor(a * s + c) clamped, in exact integer arithmetic (no CPU needed): s and c times 2^60 are
// integers here (their last mantissa bits are worth at least 2^-38).
int32_t Emulated(float s, float c, int64_t a, int32_t lo, int32_t hi) {
  const auto fixed = [](float v) { return static_cast<__int128>(std::ldexp(static_cast<long double>(v), 60)); };
  const __int128 z = __int128{a} * fixed(s) + fixed(c);
  return static_cast<int32_t>(std::clamp<__int128>(FloorDiv(z, __int128{1} << 60), lo, hi));
}

// The kernels' stage (float_requant_avx512.h) on a[0..n) (n a multiple of 16), then clamped.
__attribute__((target("avx512f"))) void FloatStage(const int32_t* a, size_t n, float s, float c, int32_t lo,
                                                   int32_t hi, int32_t* y) {
  const __m512i vs = _mm512_castps_si512(_mm512_set1_ps(s)), vc = _mm512_castps_si512(_mm512_set1_ps(c));
  for (size_t i = 0; i < n; i += 16) _mm512_storeu_si512(y + i, FloatRequant16(_mm512_loadu_si512(a + i), vs, vc));
  for (size_t i = 0; i < n; ++i) y[i] = std::clamp(y[i], lo, hi);
}

struct Channel {
  int64_t m;
  int r;
  __int128 C;
  int64_t B;
  int32_t lo, hi;
};

// A convolution channel: C = bias m + 2^30 + 2^(30 + r) + zp 2^(31 + r) (the high-dword form).
Channel RandomChannel(std::mt19937_64& rng, int r, int64_t B) {
  Channel ch;
  ch.m = (int64_t{1} << 30) + static_cast<int64_t>(rng() % (uint64_t{1} << 30));
  ch.r = r;
  const int32_t zp = static_cast<int32_t>(rng() % 256) - 128;
  const int64_t bias = static_cast<int64_t>(rng() % 200001) - 100000;
  ch.C = __int128{bias} * ch.m + (__int128{1} << 30) + (__int128{1} << (30 + r)) + __int128{zp} * (__int128{1} << (31 + r));
  ch.B = B;
  ch.lo = -128 + static_cast<int32_t>(rng() % 3 == 0 ? rng() % 100 : 0);
  ch.hi = 127 - static_cast<int32_t>(rng() % 3 == 0 ? rng() % 100 : 0);
  return ch;
}

// Every accumulator in [-B, B] when B <= 2^16, else around every level's threshold (the only
// places where two non-decreasing step functions can differ) and at random.
std::vector<int32_t> Accumulators(const Channel& ch, std::mt19937_64& rng) {
  std::vector<int32_t> a;
  if (ch.B <= (int64_t{1} << 16)) {
    for (int64_t x = -ch.B; x <= ch.B; ++x) a.push_back(static_cast<int32_t>(x));
  } else {
    for (int32_t v = ch.lo + 1; v <= ch.hi; ++v) {
      const __int128 t = -FloorDiv(-(__int128{v} * (__int128{1} << (31 + ch.r)) - ch.C), ch.m);  // ceil
      for (int d = -2; d <= 1; ++d) {
        const __int128 x = t + d;
        if (x >= -ch.B && x <= ch.B) a.push_back(static_cast<int32_t>(x));
      }
    }
    for (int i = 0; i < 4096; ++i) a.push_back(static_cast<int32_t>(static_cast<int64_t>(rng() % (2 * ch.B + 1)) - ch.B));
    a.push_back(static_cast<int32_t>(-ch.B));
    a.push_back(static_cast<int32_t>(ch.B));
  }
  while (a.size() % 16 != 0) a.push_back(0);
  return a;
}

TEST(FloatRequant, MatchesIntegerFormOverTheWholeRange) {
  const bool avx512 = rt::Cpu().avx512f;
  if (!avx512) std::printf("no AVX-512F: checking the constants by exact emulation only\n");
  std::mt19937_64 rng(2026);
  int found = 0, tried = 0, found_small_r = 0, tried_small_r = 0;
  for (int it = 0; it < 240; ++it) {
    const int r = 1 + it % 14;
    const int64_t B = it % 4 == 0 ? (int64_t{1} << 24) : it % 4 == 1 ? (int64_t{1} << 20) : 1 + static_cast<int64_t>(rng() % (1u << 16));
    const Channel ch = RandomChannel(rng, r, B);
    float s = 0, c = 0;
    ++tried;
    if (r <= 8) ++tried_small_r;
    if (!FloatRequantConstants(ch.m, ch.r, ch.C, ch.B, ch.lo, ch.hi, &s, &c)) continue;
    ++found;
    if (r <= 8) ++found_small_r;
    const std::vector<int32_t> a = Accumulators(ch, rng);
    std::vector<int32_t> y(a.size());
    if (avx512) FloatStage(a.data(), a.size(), s, c, ch.lo, ch.hi, y.data());
    for (size_t i = 0; i < a.size(); ++i) {
      const int32_t want = Exact(ch.m, ch.r, ch.C, a[i], ch.lo, ch.hi);
      const int32_t emu = Emulated(s, c, a[i], ch.lo, ch.hi);
      if (want != emu || (avx512 && want != y[i])) {
        ADD_FAILURE() << "it " << it << " m " << ch.m << " r " << ch.r << " B " << ch.B << " a " << a[i] << ": integer "
                      << want << " emulated " << emu << " avx512 " << (avx512 ? y[i] : -999) << " (s " << s << " c "
                      << c << ")";
        break;
      }
    }
  }
  // Most channels of moderate shift get constants (MobileNetV2 int8: ~99%); large shifts less often.
  EXPECT_GT(found_small_r, tried_small_r * 9 / 10) << found_small_r << " of " << tried_small_r;
  EXPECT_GT(found, tried / 2) << found << " of " << tried;
}

// The per-level loops: AVX-512 against portable (FloatRequantConstants takes the former on
// AVX-512 CPUs, so the tests above cover the latter only elsewhere).
TEST(FloatRequant, AvxLoopsMatchPortable) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: only the portable loops run";
  std::mt19937_64 rng(7);
  for (int it = 0; it < 300; ++it) {
    detail::ThresholdChains c;
    c.m = (int64_t{1} << 30) + static_cast<int64_t>(rng() % (uint64_t{1} << 30));
    const int64_t bound = 1 + static_cast<int64_t>(rng() % (uint64_t{1} << 24));
    c.amin = it % 3 == 0 ? 0 : -bound;
    c.amax = it % 3 == 1 ? -1 : bound;
    c.step_q = static_cast<int64_t>(rng() % (uint64_t{1} << 20)) * (it % 2 ? 1 : 8);
    c.step_r = static_cast<int64_t>(rng() % static_cast<uint64_t>(c.m));
    const int64_t base = static_cast<int64_t>(rng() % (uint64_t{1} << 26)) - (int64_t{1} << 25);
    for (int j = 0; j < 8; ++j) {
      c.q[j] = base + j * (c.step_q / 8);
      c.r[j] = static_cast<int64_t>(rng() % static_cast<uint64_t>(c.m));
    }
    const int n = 1 + it % 255;
    std::vector<int64_t> a(264, 0), b(264, 0);
    detail::Thresholds(c, n, a.data());
    detail::ThresholdsAvx512(c, n, b.data());
    ASSERT_EQ(std::vector<int64_t>(a.begin(), a.begin() + n), std::vector<int64_t>(b.begin(), b.begin() + n)) << it;
    const int64_t ms = (int64_t{1} << 23) + static_cast<int64_t>(rng() % (1u << 23));
    const int sh = 30 + it % 24;
    const int32_t first = -128 + static_cast<int32_t>(rng() % 100);
    int64_t la = INT64_MIN, ua = INT64_MAX, lb = INT64_MIN, ub = INT64_MAX;
    detail::Window(a.data(), n, first, ms, sh, c.amin, c.amax, &la, &ua);
    detail::WindowAvx512(a.data(), n, first, ms, sh, c.amin, c.amax, &lb, &ub);
    EXPECT_EQ(la, lb) << it;
    EXPECT_EQ(ua, ub) << it;
  }
}

// TFLite's depthwise requantization (gemmlowp's two roundings, ties away from zero), clamped.
int32_t TwoRounding(int64_t a, int32_t m, int e, int32_t zp, int32_t lo, int32_t hi) {
  const int64_t ab = a * m;
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  const int32_t x = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));  // truncation toward zero
  const int32_t mask = (1 << e) - 1, rem = x & mask, threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return std::clamp((x >> e) + (rem > threshold ? 1 : 0) + zp, lo, hi);
}

// The split form (a sign-dependent offset) against that reference over the whole range, every
// level on both sides of the zero point: C_pos = 2^30 + 2^(30+e) + zp 2^(31+e) for a >= 0 and
// C_neg = 2^(30+e) - 2^30 + zp 2^(31+e) for a < 0 (depthwise_int8.h, Plan::quad_float).
TEST(FloatRequant, SplitFormMatchesTwoRoundings) {
  const bool avx512 = rt::Cpu().avx512f;
  std::mt19937_64 rng(99);
  int found = 0, tried = 0;
  for (int it = 0; it < 100; ++it) {
    const int e = 1 + it % 10;
    const int32_t m = static_cast<int32_t>((int64_t{1} << 30) + static_cast<int64_t>(rng() % (uint64_t{1} << 30)));
    const int32_t zp = static_cast<int32_t>(rng() % 256) - 128;
    const int32_t lo = it % 4 == 0 ? -128 + static_cast<int32_t>(rng() % 60) : -128;
    const int32_t hi = it % 4 == 1 ? 127 - static_cast<int32_t>(rng() % 60) : 127;
    const int64_t B = it % 3 == 0 ? (int64_t{1} << 20) : 1 + static_cast<int64_t>(rng() % (1u << 16));
    const __int128 base = (__int128{1} << (30 + e)) + __int128{zp} * (__int128{1} << (31 + e));
    float s = 0, cp = 0, cn = 0;
    ++tried;
    if (!FloatRequantConstantsSplit(m, e, base + (__int128{1} << 30), base - (__int128{1} << 30), B, lo, hi, &s, &cp,
                                    &cn))
      continue;
    ++found;
    // Every accumulator for small ranges, else around every level's threshold on both sides.
    std::vector<int32_t> a;
    if (B <= (int64_t{1} << 16)) {
      for (int64_t x = -B; x <= B; ++x) a.push_back(static_cast<int32_t>(x));
    } else {
      for (int64_t x = -B; x <= B; x += 1 + static_cast<int64_t>(rng() % 7)) a.push_back(static_cast<int32_t>(x));
    }
    while (a.size() % 16 != 0) a.push_back(0);
    std::vector<int32_t> yp(a.size()), yn(a.size());
    if (avx512) {
      FloatStage(a.data(), a.size(), s, cp, lo, hi, yp.data());
      FloatStage(a.data(), a.size(), s, cn, lo, hi, yn.data());
    }
    for (size_t i = 0; i < a.size(); ++i) {
      const int32_t want = TwoRounding(a[i], m, e, zp, lo, hi);
      const float c = a[i] < 0 ? cn : cp;
      const int32_t emu = Emulated(s, c, a[i], lo, hi);
      const int32_t hw = a[i] < 0 ? yn[i] : yp[i];
      if (want != emu || (avx512 && want != hw)) {
        ADD_FAILURE() << "it " << it << " m " << m << " e " << e << " zp " << zp << " a " << a[i] << ": reference "
                      << want << " emulated " << emu << " avx512 " << (avx512 ? hw : -999);
        break;
      }
    }
  }
  EXPECT_GT(found, tried * 8 / 10) << found << " of " << tried;
}

TEST(FloatRequant, EdgeCases) {
  float s = 1, c = 1;
  // m = 0: a constant, clamped.
  ASSERT_TRUE(FloatRequantConstants(0, 5, __int128{-300} << 36, 1000, -128, 127, &s, &c));
  EXPECT_EQ(s, 0.f);
  EXPECT_EQ(c, -128.f);
  ASSERT_TRUE(FloatRequantConstants(0, 5, __int128{7} << 36, 1000, -128, 127, &s, &c));
  EXPECT_EQ(c, 7.f);
  // One level: the level.
  ASSERT_TRUE(FloatRequantConstants(int64_t{1} << 30, 5, 0, 1000, 3, 3, &s, &c));
  EXPECT_EQ(s, 0.f);
  EXPECT_EQ(c, 3.f);
  // Outside the limits.
  EXPECT_FALSE(FloatRequantConstants(int64_t{1} << 30, 30, 0, 1000, -128, 127, &s, &c));   // r > 29
  EXPECT_FALSE(FloatRequantConstants(int64_t{1} << 30, 5, 0, kFloatRequantMaxBound + 1, -128, 127, &s, &c));
  EXPECT_FALSE(FloatRequantConstants(int64_t{1} << 30, 5, 0, 1000, -128, 255, &s, &c));  // 383 levels
  EXPECT_FALSE(FloatRequantConstants(-5, 5, 0, 1000, -128, 127, &s, &c));
  EXPECT_FALSE(FloatRequantConstants(int64_t{1} << 30, 5, 0, 1000, 10, 9, &s, &c));
  // An offset far above the range (the integer form's c is 2^30): every accumulator gives hi, and
  // so must the constants found (a c near the range, inside int32 for the conversion).
  ASSERT_TRUE(FloatRequantConstants(int64_t{1} << 30, 1, __int128{1} << 62, 1000, -128, 127, &s, &c));
  EXPECT_EQ(Emulated(s, c, -1000, -128, 127), 127);
  EXPECT_LT(std::fabs(c), 1 << 20);
  // Far below (every accumulator gives lo), with a slope too fine for a float offset near the
  // range to place a level exactly (r = 20): no level is crossed, so any c below it does.
  ASSERT_TRUE(FloatRequantConstants(int64_t{1} << 30, 20, -(__int128{1} << 60), 7000, -127, 127, &s, &c));
  EXPECT_EQ(Emulated(s, c, 7000, -127, 127), -127);
  EXPECT_EQ(Emulated(s, c, -7000, -127, 127), -127);
}

}  // namespace
}  // namespace edgeopt::kernels
