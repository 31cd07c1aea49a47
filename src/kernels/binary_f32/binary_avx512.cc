// AVX-512 binary elementwise runs: 64 floats per iteration, the tail under a lane mask (no
// masked-load table). On cores with full-width zmm (Zen 5) a zmm does twice a ymm's work per
// instruction; the same IEEE operation per element as the AVX2 and portable runs.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/binary_f32/binary_dispatch.h"
#include "kernels/binary_f32/binary_f32.h"

namespace edgeopt::kernels::binary {
namespace {

template <Op O>
inline __m512 Apply(__m512 a, __m512 b) {
  if (O == Op::kAdd) return _mm512_add_ps(a, b);
  if (O == Op::kSub) return _mm512_sub_ps(a, b);
  if (O == Op::kDiv) return _mm512_div_ps(a, b);
  if (O == Op::kSquaredDifference) {
    const __m512 d = _mm512_sub_ps(a, b);
    return _mm512_mul_ps(d, d);
  }
  if (O == Op::kMaximum) return _mm512_max_ps(a, b);  // a > b ? a : b
  if (O == Op::kMinimum) return _mm512_min_ps(a, b);  // a < b ? a : b
  return _mm512_mul_ps(a, b);
}

struct Kernels {
  template <Op O, bool kAScalar, bool kBScalar>
  static void Run(const float* a, const float* b, float* out, size_t n, gemm::MinMax mm) {
    const __m512 vmin = _mm512_set1_ps(mm.min), vmax = _mm512_set1_ps(mm.max);
    const __m512 as = _mm512_set1_ps(*a), bs = _mm512_set1_ps(*b);
    auto load_a = [&](size_t i) { return kAScalar ? as : _mm512_loadu_ps(a + i); };
    auto load_b = [&](size_t i) { return kBScalar ? bs : _mm512_loadu_ps(b + i); };
    auto clamp = [&](__m512 v) { return _mm512_min_ps(vmax, _mm512_max_ps(vmin, v)); };
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      const __m512 r0 = Apply<O>(load_a(i), load_b(i));
      const __m512 r1 = Apply<O>(load_a(i + 16), load_b(i + 16));
      const __m512 r2 = Apply<O>(load_a(i + 32), load_b(i + 32));
      const __m512 r3 = Apply<O>(load_a(i + 48), load_b(i + 48));
      _mm512_storeu_ps(out + i, clamp(r0));
      _mm512_storeu_ps(out + i + 16, clamp(r1));
      _mm512_storeu_ps(out + i + 32, clamp(r2));
      _mm512_storeu_ps(out + i + 48, clamp(r3));
    }
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, clamp(Apply<O>(load_a(i), load_b(i))));
    if (i < n) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
      const __m512 va = kAScalar ? as : _mm512_maskz_loadu_ps(m, a + i);
      const __m512 vb = kBScalar ? bs : _mm512_maskz_loadu_ps(m, b + i);
      // Lanes past n compute on zeros and are never stored.
      _mm512_mask_storeu_ps(out + i, m, clamp(Apply<O>(va, vb)));
    }
  }
};

}  // namespace

void RunAvx512(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm) {
  Dispatch<Kernels>(op, a, a_scalar, b, b_scalar, out, n, mm);
}

}  // namespace edgeopt::kernels::binary
