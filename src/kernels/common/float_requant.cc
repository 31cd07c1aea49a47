#include "kernels/common/float_requant.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>

#include "kernels/common/float_requant_internal.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels {

namespace {

std::atomic<bool> g_enabled{true};
std::atomic<bool> g_bits_enabled{true};

// floor(n / d) for d > 0.
__int128 FloorDiv(__int128 n, __int128 d) {
  __int128 q = n / d;
  if (q * d > n) --q;
  return q;
}

// Number of significant bits of x > 0.
int BitLength(unsigned __int128 x) {
  const uint64_t hi = static_cast<uint64_t>(x >> 64), lo = static_cast<uint64_t>(x);
  return hi != 0 ? 128 - __builtin_clzll(hi) : lo != 0 ? 64 - __builtin_clzll(lo) : 0;
}

// The smallest X >= x (x an integer count of units 2^e) whose value X * 2^e is a float: X itself
// when |x| < 2^24, else x rounded to 24 significant bits (up for x > 0, toward zero for x < 0).
// (The largest X <= x is -FloatGridCeil(-x).)
__int128 FloatGridCeil(__int128 x) {
  const unsigned __int128 mag = x < 0 ? static_cast<unsigned __int128>(-x) : static_cast<unsigned __int128>(x);
  const int bits = BitLength(mag);
  if (bits <= 24) return x;
  const __int128 sp = __int128{1} << (bits - 24);
  return x > 0 ? FloorDiv(x + sp - 1, sp) * sp : -FloorDiv(-x, sp) * sp;
}

}  // namespace

namespace {

// One side of the search: F's thresholds over accumulators [amin, amax] for the levels lo + 1 ..
// hi (see the header).
struct Side {
  int64_t amin = 0, amax = 0;
  int levels = 0;
  alignas(64) int64_t T[kFloatRequantMaxLevels + 8];
};

// T(v) = the smallest accumulator a with floor((a m + C) / 2^S) >= v, i.e. ceil((v 2^S - C) / m),
// for v = lo + 1 .. hi, clipped to [amin, amax + 1]: incrementally, as the numerator grows by
// 2^S per level (quotient q, remainder r), in 8 chains of 8 levels' step. False when out of range.
bool SideThresholds(int64_t m, int S, __int128 C, int32_t lo, int32_t hi, bool avx512, Side* side) {
  side->levels = hi - lo;
  const uint64_t P = uint64_t{1} << S;  // S <= 60
  const int64_t step_q = static_cast<int64_t>(P / static_cast<uint64_t>(m));
  const int64_t step_r = static_cast<int64_t>(P % static_cast<uint64_t>(m));
  const __int128 n0 = __int128{lo + 1} * static_cast<__int128>(P) - C;
  const __int128 q0 = FloorDiv(n0, m);
  if (q0 < -(__int128{1} << 60) || q0 > (__int128{1} << 60)) return false;
  detail::ThresholdChains c;
  c.m = m;
  c.amin = side->amin;
  c.amax = side->amax;
  c.q[0] = static_cast<int64_t>(q0);
  c.r[0] = static_cast<int64_t>(n0 - q0 * m);
  for (int j = 1; j < 8; ++j) {
    c.q[j] = c.q[j - 1] + step_q;
    c.r[j] = c.r[j - 1] + step_r;
    if (c.r[j] >= m) {
      c.r[j] -= m;
      ++c.q[j];
    }
  }
  const uint64_t step8 = P * 8;  // <= 2^63
  c.step_q = static_cast<int64_t>(step8 / static_cast<uint64_t>(m));
  c.step_r = static_cast<int64_t>(step8 % static_cast<uint64_t>(m));
  (avx512 ? detail::ThresholdsAvx512 : detail::Thresholds)(c, side->levels, side->T);
  return true;
}

// The bits form (FloatBits) for slope s = ms / 2^sh over accumulators [amin, amax] and the window
// [L, U) of c in units of 2^-sh (INT64_MIN / INT64_MAX: unbounded): M in [2^23 - amin, 2^24 - 1 -
// amax] and X on the float grid with L <= M ms + X < U; c_bits = X 2^-sh.
bool BitsOffset(int64_t L, int64_t U, int64_t ms, int sh, int64_t amin, int64_t amax, FloatBits* bits) {
  bits->ok = false;
  const int64_t m_lo = (int64_t{1} << 23) - amin, m_hi = (int64_t{1} << 24) - 1 - amax;
  if (m_lo > m_hi || ms <= 0) return false;
  // Checks M: X the smallest grid value >= L - M ms (without L: the largest <= U - 1 - M ms).
  const auto try_m = [&](int64_t M) {
    const __int128 Z = __int128{M} * ms;
    const __int128 X = L != INT64_MIN ? FloatGridCeil(__int128{L} - Z)
                                      : -FloatGridCeil(Z - (__int128{U} - 1));
    if ((U != INT64_MAX && Z + X >= U) || (L != INT64_MIN && Z + X < L)) return false;
    const double c = std::ldexp(static_cast<double>(X), -sh);  // X has at most 24 significant bits
    if (!(std::fabs(c) <= 3.0e38) || (c != 0 && std::fabs(c) < 1.2e-38)) return false;
    bits->c = static_cast<float>(c);
    bits->offset = kFloatBitsBase + static_cast<uint32_t>(M);
    bits->ok = true;
    return true;
  };
  if (L == INT64_MIN || U == INT64_MAX) return try_m(m_lo);
  // X = k 2^q with 2^q the grid's step at |X| (~ |M ms - L|): the grid value above L - M ms is
  // below U - M ms iff (M ms - L) mod 2^q < W = U - L. With ms = odd 2^g, M ms mod 2^q is
  // 2^g (M odd mod 2^(q - g)): the smallest t >= 0 with L + t = 0 mod 2^g must be below W, and then
  // M = ((L + t) / 2^g) odd^-1 mod 2^(q - g). Every q that |M ms - L| allows over the range of M
  // is tried (below 2^24 units the grid's step is 1: q = 0), each solution checked.
  const int g = __builtin_ctzll(static_cast<uint64_t>(ms));
  const uint64_t odd = static_cast<uint64_t>(ms) >> g;
  uint64_t inv = odd;  // odd^-1 mod 2^64 (Newton: each step doubles the correct bits)
  for (int i = 0; i < 6; ++i) inv *= 2 - odd * inv;
  const __int128 W = __int128{U} - L;
  if (W <= 0) return false;
  const __int128 d_lo = __int128{m_lo} * ms - L, d_hi = __int128{m_hi} * ms - L;  // d = M ms - L grows with M
  const auto mag = [](__int128 v) { return static_cast<unsigned __int128>(v < 0 ? -v : v); };
  const unsigned __int128 d_min = d_lo <= 0 && d_hi >= 0 ? 0 : std::min(mag(d_lo), mag(d_hi));
  const unsigned __int128 d_max = std::max(mag(d_lo), mag(d_hi)) + static_cast<unsigned __int128>(W);
  const int q_lo = std::max(0, BitLength(d_min) - 25);
  const int q_hi = BitLength(d_max) - 23;
  // The M whose |M ms - L| has 24 + q bits (q = 0: at most 24), as [a, b] within [m_lo, m_hi],
  // for M ms above L (up) or below it.
  const auto sub_range = [&](int q, bool up, int64_t* a, int64_t* b) {
    const __int128 lo_mag = q == 0 ? 0 : __int128{1} << (q + 23), hi_mag = (__int128{1} << (q + 24)) - 1;
    // up: M ms - L in [lo_mag, hi_mag]; else L - M ms in [lo_mag, hi_mag] (and > 0).
    const __int128 lo_z = up ? L + lo_mag : L - hi_mag;
    const __int128 hi_z = up ? L + hi_mag : L - std::max<__int128>(lo_mag, 1);
    const __int128 lo_m = -FloorDiv(-lo_z, ms), hi_m = FloorDiv(hi_z, ms);  // ceil, floor
    *a = static_cast<int64_t>(std::max<__int128>(lo_m, m_lo));
    *b = static_cast<int64_t>(std::min<__int128>(hi_m, m_hi));
    return *a <= *b;
  };
  for (int q = q_lo; q <= q_hi && q < 62; ++q) {
    for (const bool up : {true, false}) {
      int64_t a = 0, b = 0;
      if (!sub_range(q, up, &a, &b)) continue;
      if (g >= q) {  // M ms = 0 mod 2^q: L's residue decides for every M
        if (try_m(a)) return true;
        continue;
      }
      const uint64_t P = uint64_t{1} << (q - g);
      // t in [0, W) with L + t = 0 mod 2^g (t0 + multiples of 2^g). Each gives one M mod P,
      // which falls inside [a, b] with odds about (b - a) / P for t drawn at random (t in a
      // regular pattern can give M in one: residues repeat with the pattern's period mod P): a
      // few dozen suffice. The draws are a fixed sequence (splitmix64): the same constants every time.
      const uint64_t t0 = (0 - static_cast<uint64_t>(L)) & ((uint64_t{1} << g) - 1);
      if (__int128{t0} >= W) continue;
      const __int128 slots = ((W - 1 - t0) >> g) + 1;  // the t: t0 + i 2^g, i < slots
      constexpr int kTries = 64;
      uint64_t seed = 0x9E3779B97F4A7C15ull;
      for (int j = 0; j < kTries && j < slots; ++j) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const __int128 i = j == 0 ? 0 : static_cast<__int128>(static_cast<unsigned __int128>(z) % static_cast<unsigned __int128>(slots));
        const __int128 t = __int128{t0} + (i << g);
        const uint64_t target = static_cast<uint64_t>((__int128{L} + t) >> g);  // exact: L + t = 0 mod 2^g
        const uint64_t residue = (target * inv) & (P - 1);
        // The smallest M >= a with M = residue mod P.
        const int64_t M = a + static_cast<int64_t>((residue - static_cast<uint64_t>(a)) & (P - 1));
        if (M <= b && try_m(M)) return true;
      }
    }
  }
  return false;
}

// The offset c (a float) for slope s = ms / 2^sh on one side, if one exists: L and U (header) as
// integers in units of 2^-sh, c at the smallest float >= L; |a s + c| < 2^30 on the side's range
// (vcvtps2dq stays inside int32). bits: also the bits form's offset (BitsOffset).
bool SideOffset(const Side& side, int32_t lo, float s, int64_t ms, int sh, bool avx512, float* c_out,
                FloatBits* bits = nullptr) {
  int64_t L = INT64_MIN, U = INT64_MAX;
  (avx512 ? detail::WindowAvx512 : detail::Window)(side.T, side.levels, lo + 1, ms, sh, side.amin, side.amax, &L, &U);
  // No level crossed inside the range from below (above): only c < U (c >= L) is required, c at
  // the nearest float to that bound.
  const __int128 X = L != INT64_MIN ? FloatGridCeil(L) : -FloatGridCeil(-(__int128{U} - 1));
  if (U != INT64_MAX && X >= U) return false;
  const double c = std::ldexp(static_cast<double>(X), -sh);  // X has at most 24 significant bits
  const double reach = static_cast<double>(std::max(-side.amin, side.amax)) * s;
  if (reach + std::fabs(c) >= 1073741824.0) return false;
  *c_out = static_cast<float>(c);
  if (bits) BitsOffset(L, U, ms, sh, side.amin, side.amax, bits);
  return true;
}

// The common part of both forms: the limits, then for each side its thresholds, then s at the
// float nearest m / 2^S and its neighbours up to 4 ulps away, the first with an offset on every
// side. (On MobileNetV2 int8, of ~17000 channels 93% took the nearest float, 6% a neighbour, 0.4%
// the second neighbours, a handful the third or fourth: with those the 320 -> 1280 layer fits.)
bool Search(int64_t m, int right, Side* sides, const __int128* C, int n_sides, int32_t lo, int32_t hi, float* s_out,
            float* c_out, FloatBits* bits = nullptr) {
  const int S = 31 + right;
  const bool avx512 = rt::Cpu().has_avx512();
  for (int i = 0; i < n_sides; ++i)
    if (!SideThresholds(m, S, C[i], lo, hi, avx512, &sides[i])) return false;
  const float s0 = static_cast<float>(std::ldexp(static_cast<double>(m), -S));
  const int order[] = {0, 1, -1, 2, -2, 3, -3, 4, -4};
  for (int k : order) {
    float s = s0;
    for (int i = 0; i < (k < 0 ? -k : k); ++i) s = std::nextafter(s, k < 0 ? 0.f : 1.f);
    int e = 0;
    const float f = std::frexp(s, &e);  // s = f 2^e, f in [0.5, 1)
    const int64_t ms = static_cast<int64_t>(std::ldexp(f, 24));
    const int sh = 24 - e;              // s = ms / 2^sh
    if (!std::isnormal(s) || sh < 0 || sh > 53) continue;
    bool all = true;
    for (int i = 0; i < n_sides && all; ++i) all = SideOffset(sides[i], lo, s, ms, sh, avx512, &c_out[i], bits);
    if (!all) continue;
    *s_out = s;
    return true;
  }
  return false;
}

// The limits shared by both forms; m == 0 or one level: the constant (true, s and c set).
bool Limits(int64_t m, int right, __int128 C, int64_t B, int32_t lo, int32_t hi, bool* done, float* s_out,
            float* c_out) {
  *done = false;
  if (m < 0 || right < 0 || right > 29 || B < 0 || B > kFloatRequantMaxBound || lo > hi ||
      hi - lo > kFloatRequantMaxLevels)
    return false;
  if (m == 0 || lo == hi) {
    // Constant over the range (or one level): floor(C / 2^S) clamped, as an exact float.
    const __int128 v = m == 0 ? FloorDiv(C, __int128{1} << (31 + right)) : __int128{lo};
    *s_out = 0.f;
    *c_out = static_cast<float>(static_cast<int32_t>(std::clamp<__int128>(v, lo, hi)));
    *done = true;
    return true;
  }
  // Below, int64 arithmetic is exact: m >= 2^20 keeps the thresholds' steps under 2^42, and a
  // slope's scale 2^-sh with sh <= 53 keeps v * 2^sh under 2^62 (multipliers are normalized to
  // [2^30, 2^31) in practice: sh = 24 + r or 25 + r).
  return m >= (int64_t{1} << 20) && m < (int64_t{1} << 31);
}

}  // namespace

bool FloatRequantConstants(int64_t m, int right, __int128 C, int64_t B, int32_t lo, int32_t hi, float* s_out,
                           float* c_out, FloatBits* bits) {
  return B >= 0 && FloatRequantConstantsRange(m, right, C, -B, B, lo, hi, s_out, c_out, bits);
}

bool FloatRequantConstantsRange(int64_t m, int right, __int128 C, int64_t amin, int64_t amax, int32_t lo, int32_t hi,
                                float* s_out, float* c_out, FloatBits* bits) {
  if (bits) *bits = FloatBits{};
  if (amin > amax) return false;
  bool done = false;
  if (!Limits(m, right, C, std::max(-amin, amax), lo, hi, &done, s_out, c_out)) return false;
  if (done) {
    // m == 0 (the value of C alone) or a single level: s = 0, any normal float times 0 is 0.
    if (bits && amax - amin < (int64_t{1} << 23)) {
      bits->c = *c_out;
      bits->offset = kFloatBitsBase + static_cast<uint32_t>((int64_t{1} << 23) - amin);
      bits->ok = true;
    }
    return true;
  }
  Side side;
  side.amin = amin;
  side.amax = amax;
  return Search(m, right, &side, &C, 1, lo, hi, s_out, c_out, bits);
}

bool FloatRequantConstants2(int64_t m, int right, __int128 C, int64_t amin, int64_t amax, int32_t lo, int32_t hi,
                            float* s_hi, float* s_lo, float* c_out) {
  if (amin > amax) return false;
  bool done = false;
  if (!Limits(m, right, C, std::max(-amin, amax), lo, hi, &done, s_hi, c_out)) return false;
  *s_lo = 0.f;
  if (done) return true;
  const int S = 31 + right;
  Side side;
  side.amin = amin;
  side.amax = amax;
  const bool avx512 = rt::Cpu().has_avx512();
  if (!SideThresholds(m, S, C, lo, hi, avx512, &side)) return false;
  // s_hi = m / 2^S to nearest; the rest, res / 2^S, has |res| < 2^8 (m < 2^31, at most 7 bits
  // below s_hi's 24), so s_lo = res / 2^S is a float and s_hi + s_lo = m / 2^S exactly.
  const float hi_f = static_cast<float>(std::ldexp(static_cast<double>(m), -S));
  const long double hi_units = std::ldexp(static_cast<long double>(hi_f), S);  // s_hi 2^S: an integer
  if (hi_units != std::floor(hi_units) || hi_units >= 0x1p62L) return false;
  const int64_t res = m - static_cast<int64_t>(hi_units);
  if (res <= -(int64_t{1} << 24) || res >= (int64_t{1} << 24)) return false;
  const float lo_f = static_cast<float>(std::ldexp(static_cast<double>(res), -S));
  // The window in units of 2^-S: level v's threshold T gives D = v 2^S - T m; c >= D where T is
  // reached (T <= amax), c < D + m where T - 1 is (T > amin).
  // (|T| <= 2^24 + 1 and m < 2^31 keep T m in int64.) Relative to C: E = D - C = v 2^S - C - T m
  // lies in (-m, 0] for every threshold inside (amin, amax] (T = ceil((v 2^S - C) / m)), so that
  // when all are inside, E is exact in wrapping 64-bit arithmetic: one multiply, no int128.
  __int128 L = 0, U = 0;
  bool has_l = false, has_u = false;
  const uint64_t step64 = uint64_t{1} << S;
  const uint64_t n0 = static_cast<uint64_t>(static_cast<unsigned __int128>(__int128{lo + 1} * static_cast<__int128>(step64) - C));
  int64_t le = 0, ue = 0;
  if ((avx512 ? detail::WindowRelAvx512 : detail::WindowRel)(side.T, side.levels, n0, step64, m, amin, amax, &le, &ue)) {
    L = C + le;
    U = C + ue + m;
    has_l = has_u = true;
  } else {
    const __int128 step = __int128{1} << S;
    __int128 v_units = __int128{lo + 1} * step;
    for (int i = 0; i < side.levels; ++i, v_units += step) {
      const int64_t T = side.T[i];
      const __int128 D = v_units - T * m;
      if (T <= amax) L = has_l ? std::max(L, D) : D, has_l = true;
      if (T > amin) U = has_u ? std::min(U, D + m) : D + m, has_u = true;
    }
  }
  const int64_t A = std::max(-amin, amax);
  // c = X 2^-S with X on the float grid. The inner rounding's error, in units of 2^-S: below one
  // ulp of A |res| + |X| (which bounds |a s_lo + c| 2^S), 0 when that is under 2^24 (exact).
  const auto error = [&](__int128 X) -> __int128 {
    const unsigned __int128 t = static_cast<unsigned __int128>(__int128{A} * (res < 0 ? -res : res)) +
                                static_cast<unsigned __int128>(X < 0 ? -X : X);
    const int bits = BitLength(t);
    return bits <= 24 ? 0 : __int128{1} << (bits - 24);
  };
  // Two tries: the first error estimate from the window's bound, then from the X it gave.
  __int128 X = 0, e = error(has_l ? L : has_u ? U : 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    X = has_l ? FloatGridCeil(L + e) : has_u ? -FloatGridCeil(-(U - e - 1)) : 0;
    const __int128 e_x = error(X);
    if (e_x <= e) break;
    e = e_x;
  }
  if ((has_l && X - e < L) || (has_u && X + e >= U) || error(X) > e) return false;
  if (2 * e >= m) return false;  // the argument must grow with a
  const long double c = std::ldexp(static_cast<long double>(X), -S);
  // |a s + c| < 2^30 over the range: the conversion stays inside int32 (clamped after).
  if (static_cast<long double>(A) * std::ldexp(static_cast<long double>(m), -S) + std::fabs(c) >= 0x1p30L) return false;
  *s_hi = hi_f;
  *s_lo = lo_f;
  *c_out = static_cast<float>(c);
  return static_cast<long double>(*c_out) == c;
}

bool FloatRequantConstantsSplit(int64_t m, int right, __int128 C_pos, __int128 C_neg, int64_t B, int32_t lo,
                                int32_t hi, float* s_out, float* c_pos, float* c_neg) {
  bool done = false;
  if (!Limits(m, right, C_pos, B, lo, hi, &done, s_out, c_pos)) return false;
  if (done) {
    // One level, or m == 0: every product a m is 0, which the integer stage rounds as C_pos.
    *c_neg = *c_pos;
    return true;
  }
  Side sides[2];
  sides[0].amin = 0;
  sides[0].amax = B;
  sides[1].amin = -B;
  sides[1].amax = -1;
  const __int128 C[2] = {C_pos, C_neg};
  float c[2];
  if (B == 0) {  // no negative accumulators
    sides[1] = sides[0];
    if (!Search(m, right, sides, C, 1, lo, hi, s_out, c)) return false;
    *c_pos = *c_neg = c[0];
    return true;
  }
  if (!Search(m, right, sides, C, 2, lo, hi, s_out, c)) return false;
  *c_pos = c[0];
  *c_neg = c[1];
  return true;
}

namespace detail {

void Thresholds(const ThresholdChains& c, int n, int64_t* T) {
  int64_t q[8], r[8];
  std::copy_n(c.q, 8, q);
  std::copy_n(c.r, 8, r);
  for (int i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) {
      T[i + j] = std::clamp<int64_t>(q[j] + (r[j] != 0 ? 1 : 0), c.amin, c.amax + 1);
      q[j] += c.step_q;
      r[j] += c.step_r;
      const bool carry = r[j] >= c.m;
      r[j] -= carry ? c.m : 0;
      q[j] += carry ? 1 : 0;
    }
}

void Window(const int64_t* T, int n, int32_t first, int64_t ms, int sh, int64_t amin, int64_t amax, int64_t* L,
            int64_t* U) {
  for (int i = 0; i < n; ++i) {
    const int64_t d = (static_cast<int64_t>(first + i) << sh) - ms * T[i];
    if (T[i] <= amax) *L = std::max(*L, d);
    if (T[i] > amin) *U = std::min(*U, d + ms);
  }
}

bool WindowRel(const int64_t* T, int n, uint64_t n0, uint64_t step, int64_t m, int64_t amin, int64_t amax, int64_t* le,
               int64_t* ue) {
  bool inside = n > 0;
  int64_t l = INT64_MIN, u = INT64_MAX;
  uint64_t num = n0;
  for (int i = 0; i < n; ++i, num += step) {
    inside &= T[i] > amin && T[i] <= amax;
    const int64_t e = static_cast<int64_t>(num - static_cast<uint64_t>(T[i]) * static_cast<uint64_t>(m));
    l = std::max(l, e);
    u = std::min(u, e);
  }
  if (!inside) return false;
  *le = l;
  *ue = u;
  return true;
}

}  // namespace detail

bool FloatRequantEnabled() { return g_enabled.load(std::memory_order_relaxed); }
void SetFloatRequantEnabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool FloatBitsEnabled() { return g_bits_enabled.load(std::memory_order_relaxed); }
void SetFloatBitsEnabled(bool on) { g_bits_enabled.store(on, std::memory_order_relaxed); }

}  // namespace edgeopt::kernels
