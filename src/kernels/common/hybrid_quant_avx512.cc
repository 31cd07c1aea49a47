// AVX-512 version of QuantizeRows (hybrid_quant.h) for the hybrid kernels: the same
// parameters (SymmetricParams / AsymmetricParams from the row's min and max) and the same
// values bit for bit — the product rounded to float, then (asymmetric) the float zero point
// added, then std::round's half-away-from-zero, then the clamp.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/opaque.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels {
namespace {

inline __mmask16 Lanes(int64_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1u); }

void MinMax(const float* x, int64_t n, float* lo, float* hi) {
  __m512 mn = _mm512_set1_ps(x[0]), mx = mn;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 v = _mm512_mask_loadu_ps(mn, m, x + i);  // lanes past n repeat a value already seen
    mn = _mm512_min_ps(mn, v);
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, m, x + i));
  }
  *lo = _mm512_reduce_min_ps(mn);
  *hi = _mm512_reduce_max_ps(mx);
}

// std::round: truncate, then one step away from zero when the dropped part is at least 1/2
// (the dropped part v - trunc(v) is exact in float).
inline __m512i RoundAway(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(frac), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

// q[i] = clamp(round(zp + x[i] · inverse)) for i < n (symmetric: no zp). The parameters are
// values, not captures: the int8 stores may alias anything, which made the loop reload every
// captured variable from memory at each step. Whole groups of 64 are narrowed with saturating
// packs (no-ops after the clamp) and stored as one vector: a masked narrowing store (vpmovdb to
// memory) per 16 values took most of the loop's time on Zen 4.
template <bool kAsymmetric>
void QuantizeSpan(const float* x, int8_t* q, int64_t n, float inverse, int32_t zp) {
  const __m512 inv = _mm512_set1_ps(inverse), zpf = _mm512_set1_ps(static_cast<float>(zp));
  const __m512i qmin = _mm512_set1_epi32(kAsymmetric ? -128 : -127), qmax = _mm512_set1_epi32(127);
  const auto quantize = [&](__m512 values) {
    __m512 v = Opaque(_mm512_mul_ps(values, inv));
    if constexpr (kAsymmetric) v = _mm512_add_ps(zpf, v);
    return _mm512_min_epi32(_mm512_max_epi32(RoundAway(v), qmin), qmax);
  };
  // The packs interleave 128-bit lanes: dword 4k + v of the result holds lane k of vector v.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i ab = _mm512_packs_epi32(quantize(_mm512_loadu_ps(x + i)), quantize(_mm512_loadu_ps(x + i + 16)));
    const __m512i cd =
        _mm512_packs_epi32(quantize(_mm512_loadu_ps(x + i + 32)), quantize(_mm512_loadu_ps(x + i + 48)));
    _mm512_storeu_si512(q + i, _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd)));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    _mm_mask_storeu_epi8(q + i, m, _mm512_cvtepi32_epi8(quantize(_mm512_maskz_loadu_ps(m, x + i))));
  }
}

}  // namespace

void QuantizeRowsAvx512(const float* values, int64_t rows, int64_t cols, bool asymmetric, int8_t* quantized,
                        float* scales, int32_t* zero_points, rt::ThreadPool* pool) {
  // Long rows (a convolution's whole image) are cut into chunks spread over the threads: the
  // chunks' minima and maxima first, then the quantization (elementwise, so the same bytes).
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (cols + kChunk - 1) / kChunk;
  const bool split = pool && pool->num_threads() > 1 && chunks > 1;
  std::vector<float> chunk_lo(split ? chunks : 0), chunk_hi(split ? chunks : 0);
  auto over_chunks = [&](const auto& fn) {
    if (split)
      pool->ParallelTasks(chunks, [&](int64_t c) { fn(c * kChunk, std::min(cols, (c + 1) * kChunk)); });
    else
      fn(0, cols);
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = values + r * cols;
    int8_t* q = quantized + r * cols;
    float lo = 0, hi = 0, inverse = 0;
    if (cols > 0) {
      if (split) {
        over_chunks([&](int64_t b, int64_t e) { MinMax(x + b, e - b, &chunk_lo[b / kChunk], &chunk_hi[b / kChunk]); });
        lo = *std::min_element(chunk_lo.begin(), chunk_lo.end());
        hi = *std::max_element(chunk_hi.begin(), chunk_hi.end());
      } else {
        MinMax(x, cols, &lo, &hi);
      }
    }
    int32_t zp = 0;
    const bool nonzero = asymmetric ? AsymmetricParams(lo, hi, &scales[r], &zp, &inverse)
                                    : SymmetricParams(lo, hi, &scales[r], &inverse);
    if (zero_points) zero_points[r] = zp;
    if (!nonzero) {
      std::memset(q, 0, static_cast<size_t>(cols));
      continue;
    }
    over_chunks([&](int64_t b, int64_t e) {
      if (asymmetric) {
        QuantizeSpan<true>(x + b, q + b, e - b, inverse, zp);
      } else {
        QuantizeSpan<false>(x + b, q + b, e - b, inverse, zp);
      }
    });
  }
}

}  // namespace edgeopt::kernels
