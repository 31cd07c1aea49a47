#include <algorithm>

// GCC 12's unmasked AVX-512 intrinsics start from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/reduce/reduce_fast.h"

namespace edgeopt::kernels {
namespace {

// Channels [c0, c0 + 16 * NV) (the last vector masked by `last`) of one outer block.
template <int NV>
void Block(const float* x, float* y, int64_t rows, int64_t c, __mmask16 last, float divisor) {
  __m512 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, x += c) {
    for (int v = 0; v + 1 < NV; ++v) acc[v] = _mm512_add_ps(acc[v], _mm512_loadu_ps(x + 16 * v));
    acc[NV - 1] = _mm512_add_ps(acc[NV - 1], _mm512_maskz_loadu_ps(last, x + 16 * (NV - 1)));
  }
  const __m512 d = _mm512_set1_ps(divisor);
  for (int v = 0; v < NV; ++v) {
    const __m512 out = divisor != 0.0f ? _mm512_div_ps(acc[v], d) : acc[v];
    if (v + 1 < NV) _mm512_storeu_ps(y + 16 * v, out);
    else _mm512_mask_storeu_ps(y + 16 * v, last, out);
  }
}

}  // namespace

void ReduceMiddleSumF32Avx512(const float* x, float* y, int64_t outer, int64_t rows, int64_t c, float divisor) {
  for (int64_t o = 0; o < outer; ++o, x += rows * c, y += c) {
    for (int64_t c0 = 0; c0 < c; c0 += 64) {
      const int64_t n = std::min<int64_t>(64, c - c0);
      const int nv = static_cast<int>((n + 15) / 16);
      const int tail = static_cast<int>(n - 16 * (nv - 1));
      const auto last = static_cast<__mmask16>(tail == 16 ? 0xFFFF : (1u << tail) - 1);
      switch (nv) {
        case 1: Block<1>(x + c0, y + c0, rows, c, last, divisor); break;
        case 2: Block<2>(x + c0, y + c0, rows, c, last, divisor); break;
        case 3: Block<3>(x + c0, y + c0, rows, c, last, divisor); break;
        default: Block<4>(x + c0, y + c0, rows, c, last, divisor); break;
      }
    }
  }
}

}  // namespace edgeopt::kernels
