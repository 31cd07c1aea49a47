// ARG_MAX / ARG_MIN along the last axis on AVX-512 (ref_arg_minmax.cc): one row's extreme over
// 16-lane vectors (8-bit values widened to 32 bits), then the first position equal to it, the
// same position the reference's sequential strict scan keeps (float: position 0 when the first
// value is NaN; NaNs elsewhere never win).
#include <cstdint>
#include <limits>
#include <type_traits>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

inline __mmask16 Lanes(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1); }

// The first position i < n where equal(16-aligned block start) has its bit set (one exists).
// Rows of up to 64 values: every block's bits gathered into one word, no branch on the data (a
// segmentation model's per-pixel classes put the extreme anywhere: an early exit mispredicts).
template <typename Equal>
int64_t FirstEqual(int64_t n, const Equal& equal) {
  if (n <= 64) {
    uint64_t bits = 0;
    for (int64_t i = 0; i < n; i += 16) bits |= equal(i) << i;
    return bits ? __builtin_ctzll(bits) : 0;
  }
  for (int64_t i = 0; i < n; i += 16)
    if (const uint64_t eq = equal(i)) return i + __builtin_ctzll(eq);
  return 0;  // not reached: the extreme is one of the values
}

template <bool kMax>
int64_t RowF32(const float* p, int64_t n) {
  const float first = p[0];
  if (first != first) return 0;  // NaN
  __m512 acc = _mm512_set1_ps(first);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = Lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(k, p + i);
    const __mmask16 valid = _mm512_mask_cmp_ps_mask(k, v, v, _CMP_ORD_Q);
    acc = kMax ? _mm512_mask_max_ps(acc, valid, acc, v) : _mm512_mask_min_ps(acc, valid, acc, v);
  }
  const __m512 m = _mm512_set1_ps(kMax ? _mm512_reduce_max_ps(acc) : _mm512_reduce_min_ps(acc));
  auto equal = [&](int64_t i) {
    const __mmask16 k = Lanes(n - i);
    return static_cast<uint64_t>(_mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, p + i), m, _CMP_EQ_OQ));
  };
  return FirstEqual(n, equal);
}

template <bool kMax, typename T>
int64_t Row8(const T* p, int64_t n) {
  auto load = [&](int64_t i, __mmask16 k) {
    const __m128i b = _mm_maskz_loadu_epi8(k, p + i);
    return std::is_signed_v<T> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
  };
  __m512i acc = _mm512_set1_epi32(p[0]);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = Lanes(n - i);
    acc = kMax ? _mm512_mask_max_epi32(acc, k, acc, load(i, k)) : _mm512_mask_min_epi32(acc, k, acc, load(i, k));
  }
  const __m512i m = _mm512_set1_epi32(kMax ? _mm512_reduce_max_epi32(acc) : _mm512_reduce_min_epi32(acc));
  auto equal = [&](int64_t i) {
    const __mmask16 k = Lanes(n - i);
    return static_cast<uint64_t>(_mm512_mask_cmpeq_epi32_mask(k, load(i, k), m));
  };
  return FirstEqual(n, equal);
}

}  // namespace

int64_t ArgExtremeRowAvx512(const float* p, int64_t n, bool is_max) {
  return is_max ? RowF32<true>(p, n) : RowF32<false>(p, n);
}
int64_t ArgExtremeRowAvx512(const int8_t* p, int64_t n, bool is_max) {
  return is_max ? Row8<true>(p, n) : Row8<false>(p, n);
}
int64_t ArgExtremeRowAvx512(const uint8_t* p, int64_t n, bool is_max) {
  return is_max ? Row8<true>(p, n) : Row8<false>(p, n);
}

}  // namespace edgeopt::kernels::transform
