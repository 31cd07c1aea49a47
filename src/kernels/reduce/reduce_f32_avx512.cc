#include <algorithm>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/lanes16_avx512.h"
#include "kernels/reduce/reduce_fast.h"

namespace edgeopt::kernels {
namespace {

// acc combined with v as the reference's loop does.
template <ReduceCombine kOp>
inline __m512 Combine(__m512 acc, __m512 v) {
  if constexpr (kOp == ReduceCombine::kAdd) return _mm512_add_ps(acc, v);
  if constexpr (kOp == ReduceCombine::kMax) return _mm512_max_ps(v, acc);  // v > acc ? v : acc
  return _mm512_min_ps(v, acc);                                            // v < acc ? v : acc
}

// Channels [c0, c0 + 16 * NV) (the last vector masked by `last`) of one outer block.
template <ReduceCombine kOp, int NV>
void Block(float init, const float* x, float* y, int64_t rows, int64_t c, __mmask16 last, float divisor) {
  __m512 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_set1_ps(init);
  for (int64_t r = 0; r < rows; ++r, x += c) {
    for (int v = 0; v + 1 < NV; ++v) acc[v] = Combine<kOp>(acc[v], _mm512_loadu_ps(x + 16 * v));
    acc[NV - 1] = Combine<kOp>(acc[NV - 1], _mm512_maskz_loadu_ps(last, x + 16 * (NV - 1)));
  }
  const __m512 d = _mm512_set1_ps(divisor);
  for (int v = 0; v < NV; ++v) {
    const __m512 out = divisor != 0.0f ? _mm512_div_ps(acc[v], d) : acc[v];
    if (v + 1 < NV) _mm512_storeu_ps(y + 16 * v, out);
    else _mm512_mask_storeu_ps(y + 16 * v, last, out);
  }
}

template <ReduceCombine kOp>
void Middle(float init, const float* x, float* y, int64_t outer, int64_t rows, int64_t c, float divisor) {
  for (int64_t o = 0; o < outer; ++o, x += rows * c, y += c) {
    for (int64_t c0 = 0; c0 < c; c0 += 64) {
      const int64_t n = std::min<int64_t>(64, c - c0);
      const int nv = static_cast<int>((n + 15) / 16);
      const int tail = static_cast<int>(n - 16 * (nv - 1));
      const auto last = static_cast<__mmask16>(tail == 16 ? 0xFFFF : (1u << tail) - 1);
      switch (nv) {
        case 1: Block<kOp, 1>(init, x + c0, y + c0, rows, c, last, divisor); break;
        case 2: Block<kOp, 2>(init, x + c0, y + c0, rows, c, last, divisor); break;
        case 3: Block<kOp, 3>(init, x + c0, y + c0, rows, c, last, divisor); break;
        default: Block<kOp, 4>(init, x + c0, y + c0, rows, c, last, divisor); break;
      }
    }
  }
}

template <ReduceCombine kOp>
void Trailing(float init, const float* x, float* y, int64_t outer, int64_t rows, float divisor) {
  const __m512 d = _mm512_set1_ps(divisor);
  for (int64_t o0 = 0; o0 < outer; o0 += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, outer - o0));
    const float* base = x + o0 * rows;
    __m512 acc = _mm512_set1_ps(init);
    for (int64_t i = 0; i < rows; i += 16) {
      const int k = static_cast<int>(std::min<int64_t>(16, rows - i));
      const auto m = static_cast<__mmask16>(k == 16 ? 0xFFFF : (1u << k) - 1u);
      __m512 v[16];
      for (int r = 0; r < 16; ++r) v[r] = r < n ? _mm512_maskz_loadu_ps(m, base + r * rows + i) : _mm512_setzero_ps();
      Transpose16(v);
      for (int j = 0; j < k; ++j) acc = Combine<kOp>(acc, v[j]);
    }
    const __m512 out = divisor != 0.0f ? _mm512_div_ps(acc, d) : acc;
    _mm512_mask_storeu_ps(y + o0, static_cast<__mmask16>(n == 16 ? 0xFFFF : (1u << n) - 1u), out);
  }
}

}  // namespace

void ReduceMiddleF32Avx512(ReduceCombine op, float init, const float* x, float* y, int64_t outer, int64_t rows,
                           int64_t c, float divisor) {
  switch (op) {
    case ReduceCombine::kAdd: return Middle<ReduceCombine::kAdd>(init, x, y, outer, rows, c, divisor);
    case ReduceCombine::kMax: return Middle<ReduceCombine::kMax>(init, x, y, outer, rows, c, divisor);
    case ReduceCombine::kMin: return Middle<ReduceCombine::kMin>(init, x, y, outer, rows, c, divisor);
  }
}

void ReduceTrailingF32Avx512(ReduceCombine op, float init, const float* x, float* y, int64_t outer, int64_t rows,
                             float divisor) {
  switch (op) {
    case ReduceCombine::kAdd: return Trailing<ReduceCombine::kAdd>(init, x, y, outer, rows, divisor);
    case ReduceCombine::kMax: return Trailing<ReduceCombine::kMax>(init, x, y, outer, rows, divisor);
    case ReduceCombine::kMin: return Trailing<ReduceCombine::kMin>(init, x, y, outer, rows, divisor);
  }
}

}  // namespace edgeopt::kernels
