// AVX-512 versions of FloatRequantConstants' per-level loops (float_requant_internal.h): 8 levels
// per vector, as int64 lanes.
// GCC 12's AVX-512 intrinsics headers make -Wuninitialized / -Wmaybe-uninitialized reports at
// inlined uses (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/float_requant_internal.h"

namespace edgeopt::kernels::detail {

void ThresholdsAvx512(const ThresholdChains& c, int n, int64_t* T) {
  __m512i q = _mm512_loadu_si512(c.q), r = _mm512_loadu_si512(c.r);
  const __m512i sq = _mm512_set1_epi64(c.step_q), sr = _mm512_set1_epi64(c.step_r), m = _mm512_set1_epi64(c.m);
  const __m512i lo = _mm512_set1_epi64(c.amin), hi = _mm512_set1_epi64(c.amax + 1), one = _mm512_set1_epi64(1);
  for (int i = 0; i < n; i += 8) {
    const __m512i t = _mm512_mask_add_epi64(q, _mm512_test_epi64_mask(r, r), q, one);
    _mm512_storeu_si512(T + i, _mm512_min_epi64(_mm512_max_epi64(t, lo), hi));
    q = _mm512_add_epi64(q, sq);
    r = _mm512_add_epi64(r, sr);
    const __mmask8 carry = _mm512_cmpge_epi64_mask(r, m);
    r = _mm512_mask_sub_epi64(r, carry, r, m);
    q = _mm512_mask_add_epi64(q, carry, q, one);
  }
}

void WindowAvx512(const int64_t* T, int n, int32_t first, int64_t ms, int sh, int64_t amin, int64_t amax, int64_t* L,
                  int64_t* U) {
  __m512i vsh = _mm512_sllv_epi64(
      _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7)), _mm512_set1_epi64(sh));
  const __m512i step = _mm512_set1_epi64(int64_t{8} << sh), vms = _mm512_set1_epi64(ms);
  const __m512i hi = _mm512_set1_epi64(amax), lo = _mm512_set1_epi64(amin);
  __m512i l = _mm512_set1_epi64(*L), u = _mm512_set1_epi64(*U);
  for (int i = 0; i < n; i += 8) {
    const __mmask8 valid = n - i >= 8 ? 0xFF : static_cast<__mmask8>((1u << (n - i)) - 1);
    const __m512i t = _mm512_maskz_loadu_epi64(valid, T + i);
    // |T| < 2^31 and ms < 2^25: the signed 32 x 32 -> 64-bit product of the low dwords.
    const __m512i d = _mm512_sub_epi64(vsh, _mm512_mul_epi32(t, vms));
    l = _mm512_mask_max_epi64(l, valid & _mm512_cmple_epi64_mask(t, hi), l, d);
    u = _mm512_mask_min_epi64(u, valid & _mm512_cmpgt_epi64_mask(t, lo), u, _mm512_add_epi64(d, vms));
    vsh = _mm512_add_epi64(vsh, step);
  }
  *L = _mm512_reduce_max_epi64(l);
  *U = _mm512_reduce_min_epi64(u);
}

bool WindowRelAvx512(const int64_t* T, int n, uint64_t n0, uint64_t step, int64_t m, int64_t amin, int64_t amax,
                     int64_t* le, int64_t* ue) {
  __m512i num = _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(n0)),
                                 _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
                                                    _mm512_set1_epi64(static_cast<int64_t>(step))));
  const __m512i step8 = _mm512_set1_epi64(static_cast<int64_t>(step * 8)), vm = _mm512_set1_epi64(m);
  const __m512i hi = _mm512_set1_epi64(amax), lo = _mm512_set1_epi64(amin);
  __m512i l = _mm512_set1_epi64(INT64_MIN), u = _mm512_set1_epi64(INT64_MAX);
  __mmask8 outside = 0;
  for (int i = 0; i < n; i += 8) {
    const __mmask8 valid = n - i >= 8 ? 0xFF : static_cast<__mmask8>((1u << (n - i)) - 1);
    const __m512i t = _mm512_maskz_loadu_epi64(valid, T + i);
    outside |= valid & ~(_mm512_cmpgt_epi64_mask(t, lo) & _mm512_cmple_epi64_mask(t, hi));
    // |T| < 2^31 and m < 2^31: the signed 32 x 32 -> 64-bit product of the low dwords.
    const __m512i e = _mm512_sub_epi64(num, _mm512_mul_epi32(t, vm));
    l = _mm512_mask_max_epi64(l, valid, l, e);
    u = _mm512_mask_min_epi64(u, valid, u, e);
    num = _mm512_add_epi64(num, step8);
  }
  if (outside != 0 || n <= 0) return false;
  *le = _mm512_reduce_max_epi64(l);
  *ue = _mm512_reduce_min_epi64(u);
  return true;
}

}  // namespace edgeopt::kernels::detail
