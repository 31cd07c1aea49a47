// FloatRequantConstants (float_requant.h): the fp32 form floor(float(a) * s + c), computed with
// the AVX-512 instructions the kernels use (multiply-add and conversion rounding down), must equal
// the integer form floor((a m + C) / 2^(31 + r)) after the clamp for every accumulator in range.
#include "kernels/common/float_requant.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <algorithm>
#include <cfenv>
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

// The bits form (FloatRequantBits16) on a[0..n) plus `offset` (wrapping), then clamped.
__attribute__((target("avx512f"))) void FloatBitsStage(const int32_t* a, size_t n, uint32_t offset, float s, float c,
                                                       int32_t lo, int32_t hi, int32_t* y) {
  const __m512i vs = _mm512_castps_si512(_mm512_set1_ps(s)), vc = _mm512_castps_si512(_mm512_set1_ps(c));
  const __m512i off = _mm512_set1_epi32(static_cast<int32_t>(offset));
  for (size_t i = 0; i < n; i += 16)
    _mm512_storeu_si512(y + i, FloatRequantBits16(_mm512_add_epi32(_mm512_loadu_si512(a + i), off), vs, vc));
  for (size_t i = 0; i < n; ++i) y[i] = std::clamp(y[i], lo, hi);
}

// The bits form in exact integers: the float that the bits of a + offset encode (which must be
// M + a with M + a in [2^23, 2^24)), times s plus c, floored and clamped.
int32_t EmulatedBits(uint32_t offset, float s, float c, int64_t a, int32_t lo, int32_t hi) {
  const int64_t f = a + static_cast<int64_t>(offset) - static_cast<int64_t>(kFloatBitsBase);  // M + a
  if (f < (int64_t{1} << 23) || f >= (int64_t{1} << 24)) return INT32_MIN;  // not that float
  return Emulated(s, c, f, lo, hi);
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

// Case `it` of the searches' tests: right shift 1 + it % 14, accumulator bound `large` (it % 4
// == 0), `medium` (it % 4 == 1) or random up to 2^16, the rest of the channel random.
Channel CaseChannel(std::mt19937_64& rng, int it, int64_t large, int64_t medium) {
  const int64_t B = it % 4 == 0 ? large : it % 4 == 1 ? medium : 1 + static_cast<int64_t>(rng() % (1u << 16));
  return RandomChannel(rng, 1 + it % 14, B);
}

// Whether the stages run on this CPU (AVX-512F); without, says that only emulation checks them.
bool StagesRunHere() {
  const bool avx512 = rt::Cpu().avx512f;
  if (!avx512) std::printf("no AVX-512F: checking the constants by exact emulation only\n");
  return avx512;
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
  const bool avx512 = StagesRunHere();
  std::mt19937_64 rng(2026);
  int found = 0, tried = 0, found_small_r = 0, tried_small_r = 0;
  for (int it = 0; it < 240; ++it) {
    const Channel ch = CaseChannel(rng, it, (int64_t{1} << 24), (int64_t{1} << 20));
    const int r = ch.r;
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
    // The relative window: thresholds inside (amin, amax] or not (every third case clips some).
    std::vector<int64_t> t(a.begin(), a.begin() + n);
    if (it % 3 != 0)
      for (int64_t& x : t) x = std::clamp<int64_t>(x, c.amin + 1, c.amax);
    const uint64_t n0 = rng(), step = uint64_t{1} << (31 + it % 30);
    int64_t lr = 0, ur = 0, lv = 0, uv = 0;
    const bool pr = detail::WindowRel(t.data(), n, n0, step, c.m, c.amin, c.amax, &lr, &ur);
    const bool vr = detail::WindowRelAvx512(t.data(), n, n0, step, c.m, c.amin, c.amax, &lv, &uv);
    ASSERT_EQ(pr, vr) << it;
    if (pr) {
      EXPECT_EQ(lr, lv) << it;
      EXPECT_EQ(ur, uv) << it;
    }
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

// The two-multiply-add form as the kernels run it (float_requant_avx512.h FloatRequant2x16) on
// a[0..n) (n a multiple of 16), then clamped.
__attribute__((target("avx512f"))) void Float2Stage(const int32_t* a, size_t n, float s_hi, float s_lo, float c,
                                                    int32_t lo, int32_t hi, int32_t* y) {
  const __m512i vh = _mm512_castps_si512(_mm512_set1_ps(s_hi)), vl = _mm512_castps_si512(_mm512_set1_ps(s_lo)),
                vc = _mm512_castps_si512(_mm512_set1_ps(c));
  for (size_t i = 0; i < n; i += 16)
    _mm512_storeu_si512(y + i, FloatRequant2x16(_mm512_loadu_si512(a + i), vh, vl, vc));
  for (size_t i = 0; i < n; ++i) y[i] = std::clamp(y[i], lo, hi);
}

// The same by the C library's correctly rounded fmaf under the rounding modes the instructions
// name: t = RN(a s_lo + c), then floor(RD(a s_hi + t)).
int32_t Emulated2(float s_hi, float s_lo, float c, int64_t a, int32_t lo, int32_t hi) {
  const float x = static_cast<float>(a);
  const float t = std::fmaf(x, s_lo, c);
  std::fesetround(FE_DOWNWARD);
  const float z = std::fmaf(x, s_hi, t);
  std::fesetround(FE_TONEAREST);
  const double y = std::floor(static_cast<double>(z));
  return static_cast<int32_t>(std::clamp<double>(y, lo, hi));
}

// K with C - K m in [0, m), as the VNNI output stage shifts its accumulators (qgemm_vnni.cc).
int64_t ShiftFor(const Channel& ch) { return static_cast<int64_t>(FloorDiv(ch.C, ch.m)); }

// The shifted forms (FloatRequantConstantsRange, FloatRequantConstants2) on accumulators a' = a + K,
// against the integer form of a over [-B, B]: every channel of moderate shift, and nearly every
// one of large shift, gets two-multiply-add constants (one multiply-add: fewer), and both
// forms' results are the integer form's around every level's threshold, at random and at the
// ends (all of [-B, B] for small B), on the CPU and emulated.
TEST(FloatRequant, ShiftedFormsMatchIntegerForm) {
  const bool avx512 = StagesRunHere();
  std::mt19937_64 rng(4242);
  int tried = 0, found1 = 0, found2 = 0, found_plain = 0;
  for (int it = 0; it < 280; ++it) {
    const Channel ch = CaseChannel(rng, it, (int64_t{1} << 23), (int64_t{1} << 20));
    const int64_t B = ch.B;
    const int64_t K = ShiftFor(ch);
    if ((K < 0 ? -K : K) + B > kFloatRequantMaxBound) continue;
    ++tried;
    const __int128 Cs = ch.C - __int128{K} * ch.m;
    float s = 0, c = 0, s_hi = 0, s_lo = 0, c2 = 0;
    float ps = 0, pc = 0;
    found_plain += FloatRequantConstants(ch.m, ch.r, ch.C, ch.B, ch.lo, ch.hi, &ps, &pc);
    const bool one = FloatRequantConstantsRange(ch.m, ch.r, Cs, K - B, K + B, ch.lo, ch.hi, &s, &c);
    const bool two = FloatRequantConstants2(ch.m, ch.r, Cs, K - B, K + B, ch.lo, ch.hi, &s_hi, &s_lo, &c2);
    found1 += one;
    found2 += two;
    if (!one && !two) continue;
    const std::vector<int32_t> a = Accumulators(ch, rng);
    std::vector<int32_t> shifted(a.size()), y1(a.size()), y2(a.size());
    for (size_t i = 0; i < a.size(); ++i) shifted[i] = static_cast<int32_t>(a[i] + K);
    if (avx512 && one) FloatStage(shifted.data(), a.size(), s, c, ch.lo, ch.hi, y1.data());
    if (avx512 && two) Float2Stage(shifted.data(), a.size(), s_hi, s_lo, c2, ch.lo, ch.hi, y2.data());
    for (size_t i = 0; i < a.size(); ++i) {
      const int32_t want = Exact(ch.m, ch.r, ch.C, a[i], ch.lo, ch.hi);
      const bool bad1 = one && (Emulated(s, c, shifted[i], ch.lo, ch.hi) != want || (avx512 && y1[i] != want));
      const bool bad2 = two && (Emulated2(s_hi, s_lo, c2, shifted[i], ch.lo, ch.hi) != want || (avx512 && y2[i] != want));
      if (bad1 || bad2) {
        ADD_FAILURE() << "it " << it << " m " << ch.m << " r " << ch.r << " B " << ch.B << " K " << K << " a " << a[i]
                      << ": integer " << want << (bad1 ? " (one multiply-add form)" : "")
                      << (bad2 ? " (two multiply-add form)" : "") << " s_hi " << s_hi << " s_lo " << s_lo << " c "
                      << c2;
        break;
      }
    }
  }
  std::printf("%d channels: unshifted one multiply-add %d, shifted %d, two multiply-adds %d\n", tried, found_plain,
              found1, found2);
  EXPECT_GT(found2, tried * 97 / 100) << found2 << " of " << tried;
  EXPECT_GE(found1, found_plain * 9 / 10);
}

// The bits form (FloatBits): for the s the search returns, an offset M and c_bits with the same
// results as the integer form, read straight from the accumulators' bits (shifted as the kernels
// shift them, and unshifted), around every threshold, at random and at the ends, on the CPU
// and emulated; nearly every channel whose range spans less than 2^23 gets one.
TEST(FloatRequant, BitsFormMatchesIntegerForm) {
  const bool avx512 = StagesRunHere();
  std::mt19937_64 rng(99);
  int tried = 0, found = 0, bits_found = 0, found_small = 0, bits_small = 0;  // small: B <= 2^18
  for (int it = 0; it < 400; ++it) {
    const Channel ch = CaseChannel(rng, it, (int64_t{1} << 21), (int64_t{1} << 18));
    const int64_t B = ch.B;
    const bool shifted = it % 2 == 0;
    const int64_t K = shifted ? ShiftFor(ch) : 0;
    if ((K < 0 ? -K : K) + B > kFloatRequantMaxBound) continue;
    ++tried;
    float s = 0, c = 0;
    FloatBits bits;
    if (!FloatRequantConstantsRange(ch.m, ch.r, ch.C - __int128{K} * ch.m, K - B, K + B, ch.lo, ch.hi, &s, &c, &bits))
      continue;
    ++found;
    found_small += B <= (int64_t{1} << 18);
    if (!bits.ok) continue;
    ++bits_found;
    bits_small += B <= (int64_t{1} << 18);
    const std::vector<int32_t> a = Accumulators(ch, rng);
    std::vector<int32_t> moved(a.size()), y(a.size());
    for (size_t i = 0; i < a.size(); ++i) moved[i] = static_cast<int32_t>(a[i] + K);
    if (avx512) FloatBitsStage(moved.data(), a.size(), bits.offset, s, bits.c, ch.lo, ch.hi, y.data());
    for (size_t i = 0; i < a.size(); ++i) {
      const int32_t want = Exact(ch.m, ch.r, ch.C, a[i], ch.lo, ch.hi);
      const int32_t emu = EmulatedBits(bits.offset, s, bits.c, moved[i], ch.lo, ch.hi);
      if (emu != want || (avx512 && y[i] != want)) {
        ADD_FAILURE() << "it " << it << " m " << ch.m << " r " << ch.r << " B " << ch.B << " K " << K << " a " << a[i]
                      << ": integer " << want << " emulated " << emu << " avx512 " << (avx512 ? y[i] : -999)
                      << " (s " << s << " c_bits " << bits.c << " offset " << bits.offset << ")";
        break;
      }
    }
  }
  std::printf("%d channels: one multiply-add %d, with the bits form %d (ranges up to 2^19: %d of %d)\n", tried, found,
              bits_found, bits_small, found_small);
  // M has 2^23 - (amax - amin) values to take: wide ranges (here 2^22) leave it half as many.
  EXPECT_GT(bits_small, found_small * 98 / 100) << bits_small << " of " << found_small;
  EXPECT_GT(bits_found, found * 9 / 10) << bits_found << " of " << found;
  // A range of 2^23 accumulators or more has no bits form; a constant channel has.
  float s = 0, c = 0;
  FloatBits bits;
  ASSERT_TRUE(FloatRequantConstantsRange(int64_t{1} << 30, 6, __int128{1} << 40, -(int64_t{1} << 22), int64_t{1} << 22,
                                         -128, 127, &s, &c, &bits));
  EXPECT_FALSE(bits.ok);
  ASSERT_TRUE(FloatRequantConstantsRange(0, 5, __int128{7} << 36, -1000, 1000, -128, 127, &s, &c, &bits));
  EXPECT_TRUE(bits.ok);
  EXPECT_EQ(bits.c, 7.f);
}

// The two-multiply-add form's edge cases: a constant channel, the limits, and its s_hi + s_lo.
TEST(FloatRequant, TwoFormEdgeCases) {
  float sh = 1, sl = 1, c = 1;
  ASSERT_TRUE(FloatRequantConstants2(0, 5, __int128{7} << 36, -1000, 1000, -128, 127, &sh, &sl, &c));
  EXPECT_EQ(sh, 0.f);
  EXPECT_EQ(sl, 0.f);
  EXPECT_EQ(c, 7.f);
  EXPECT_FALSE(FloatRequantConstants2(int64_t{1} << 30, 5, 0, 1000, -1000, -128, 127, &sh, &sl, &c));  // empty range
  EXPECT_FALSE(FloatRequantConstants2(int64_t{1} << 30, 5, 0, -1000, kFloatRequantMaxBound + 1, -128, 127, &sh, &sl, &c));
  // m with 31 significant bits: s_hi + s_lo is m / 2^(31 + r) exactly.
  const int64_t m = (int64_t{1} << 31) - 12345;
  ASSERT_TRUE(FloatRequantConstants2(m, 9, 0, -50000, 50000, -128, 127, &sh, &sl, &c));
  EXPECT_NE(sl, 0.f);
  EXPECT_EQ(static_cast<long double>(sh) + static_cast<long double>(sl), std::ldexp(static_cast<long double>(m), -40));
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
