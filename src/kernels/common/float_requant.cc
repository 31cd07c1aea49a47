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

bool FloatRequantConstants(int64_t m, int right, __int128 C, int64_t B, int32_t lo, int32_t hi, float* s_out,
                           float* c_out) {
  if (m < 0 || right < 0 || right > 29 || B < 0 || B > kFloatRequantMaxBound || lo > hi ||
      hi - lo > kFloatRequantMaxLevels)
    return false;
  const int S = 31 + right;
  const bool avx512 = rt::Cpu().has_avx512();
  if (m == 0 || lo == hi) {
    // Constant over the range (or one level): floor(C / 2^S) clamped, as an exact float.
    const __int128 v = m == 0 ? FloorDiv(C, __int128{1} << S) : __int128{lo};
    *s_out = 0.f;
    *c_out = static_cast<float>(static_cast<int32_t>(std::clamp<__int128>(v, lo, hi)));
    return true;
  }
  // Below, int64 arithmetic is exact: m >= 2^20 keeps the thresholds' steps under 2^42, and a
  // slope's scale 2^-sh with sh <= 53 keeps v * 2^sh under 2^62 (multipliers are normalized to
  // [2^30, 2^31) in practice: sh = 24 + r or 25 + r).
  if (m < (int64_t{1} << 20) || m >= (int64_t{1} << 31)) return false;
  // Thresholds of the exact stage: T(v) = the smallest accumulator a with floor((a m + C) / 2^S)
  // >= v, i.e. ceil((v 2^S - C) / m), for the levels v = lo + 1 .. hi, clipped to [-B, B + 1]:
  // incrementally, as the numerator grows by 2^S per level (quotient q, remainder r), in 8 chains
  // of 8 levels' step (float_requant_internal.h).
  const int levels = hi - lo;
  alignas(64) int64_t T[kFloatRequantMaxLevels + 8];
  {
    const uint64_t P = uint64_t{1} << S;  // S <= 60
    const int64_t step_q = static_cast<int64_t>(P / static_cast<uint64_t>(m));
    const int64_t step_r = static_cast<int64_t>(P % static_cast<uint64_t>(m));
    const __int128 n0 = __int128{lo + 1} * static_cast<__int128>(P) - C;
    const __int128 q0 = FloorDiv(n0, m);
    if (q0 < -(__int128{1} << 60) || q0 > (__int128{1} << 60)) return false;
    detail::ThresholdChains c;
    c.m = m;
    c.bound = B;
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
    (avx512 ? detail::ThresholdsAvx512 : detail::Thresholds)(c, levels, T);
  }
  // For a float s = ms / 2^sh: L and U (header) as integers in units of 2^-sh; c at the smallest
  // float >= L.
  const float s0 = static_cast<float>(std::ldexp(static_cast<double>(m), -S));
  // (On MobileNetV2 int8, of ~17000 channels 93% took the nearest float, 6% a neighbour, 0.4% the
  // second neighbours, a handful the third or fourth: with those the 320 -> 1280 layer fits.)
  const int order[] = {0, 1, -1, 2, -2, 3, -3, 4, -4};
  for (int k : order) {
    float s = s0;
    for (int i = 0; i < (k < 0 ? -k : k); ++i) s = std::nextafter(s, k < 0 ? 0.f : 1.f);
    int e = 0;
    const float f = std::frexp(s, &e);  // s = f 2^e, f in [0.5, 1)
    const int64_t ms = static_cast<int64_t>(std::ldexp(f, 24));
    const int sh = 24 - e;              // s = ms / 2^sh
    if (!std::isnormal(s) || sh < 0 || sh > 53) continue;
    int64_t L = INT64_MIN, U = INT64_MAX;
    (avx512 ? detail::WindowAvx512 : detail::Window)(T, levels, lo + 1, ms, sh, B, &L, &U);
    // No level crossed inside the range from below (above): only c < U (c >= L) is required,
    // c at the nearest float to that bound.
    const __int128 X = L != INT64_MIN ? FloatGridCeil(L) : -FloatGridCeil(-(__int128{U} - 1));
    if (U != INT64_MAX && X >= U) continue;
    const double c = std::ldexp(static_cast<double>(X), -sh);  // X has at most 24 significant bits
    // a s + c stays inside int32 (vcvtps2dq) for every |a| <= B.
    if (static_cast<double>(B) * s + std::fabs(c) >= 1073741824.0) continue;
    *s_out = s;
    *c_out = static_cast<float>(c);
    return true;
  }
  return false;
}

namespace detail {

void Thresholds(const ThresholdChains& c, int n, int64_t* T) {
  int64_t q[8], r[8];
  std::copy_n(c.q, 8, q);
  std::copy_n(c.r, 8, r);
  for (int i = 0; i < n; i += 8)
    for (int j = 0; j < 8; ++j) {
      T[i + j] = std::clamp<int64_t>(q[j] + (r[j] != 0 ? 1 : 0), -c.bound, c.bound + 1);
      q[j] += c.step_q;
      r[j] += c.step_r;
      const bool carry = r[j] >= c.m;
      r[j] -= carry ? c.m : 0;
      q[j] += carry ? 1 : 0;
    }
}

void Window(const int64_t* T, int n, int32_t first, int64_t ms, int sh, int64_t B, int64_t* L, int64_t* U) {
  for (int i = 0; i < n; ++i) {
    const int64_t d = (static_cast<int64_t>(first + i) << sh) - ms * T[i];
    if (T[i] <= B) *L = std::max(*L, d);
    if (T[i] > -B) *U = std::min(*U, d + ms);
  }
}

}  // namespace detail

bool FloatRequantEnabled() { return g_enabled.load(std::memory_order_relaxed); }
void SetFloatRequantEnabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

}  // namespace edgeopt::kernels
