// The per-level loops of FloatRequantConstants (float_requant.cc), portable and AVX-512
// (float_requant_avx512.cc).
#pragma once

#include <cstdint>

namespace edgeopt::kernels::detail {

// Level j (0..7) of every group of 8 starts at quotient q[j], remainder r[j] (0 <= r < m) of its
// threshold's numerator; 8 levels on, both grow by step_q, step_r (with a carry when r >= m).
struct ThresholdChains {
  int64_t q[8], r[8];
  int64_t step_q = 0, step_r = 0, m = 1;
  int64_t amin = 0, amax = 0;  // the accumulators' range
};

// T[i] = clamp(q + (r != 0), amin, amax + 1) for the levels i < n, rounded up to a multiple of 8
// (T has room for them).
void Thresholds(const ThresholdChains& c, int n, int64_t* T);
void ThresholdsAvx512(const ThresholdChains& c, int n, int64_t* T);

// Over levels i < n (level value first + i, threshold T[i], |T| < 2^31), d = (first + i) 2^sh -
// ms T[i]: L = max(L, d) where T[i] <= amax, U = min(U, d + ms) where T[i] > amin.
void Window(const int64_t* T, int n, int32_t first, int64_t ms, int sh, int64_t amin, int64_t amax, int64_t* L,
            int64_t* U);
void WindowAvx512(const int64_t* T, int n, int32_t first, int64_t ms, int sh, int64_t amin, int64_t amax, int64_t* L,
                  int64_t* U);

// FloatRequantConstants2's window relative to C: over levels i < n, e = n0 + i step - T[i] m in
// wrapping 64-bit arithmetic (|T| < 2^31, 0 < m < 2^31); le = max e, ue = min e. False (le, ue
// unset) unless every T[i] lies in (amin, amax] (then each e is exact: in (-m, 0]).
bool WindowRel(const int64_t* T, int n, uint64_t n0, uint64_t step, int64_t m, int64_t amin, int64_t amax, int64_t* le,
               int64_t* ue);
bool WindowRelAvx512(const int64_t* T, int n, uint64_t n0, uint64_t step, int64_t m, int64_t amin, int64_t amax,
                     int64_t* le, int64_t* ue);

}  // namespace edgeopt::kernels::detail
