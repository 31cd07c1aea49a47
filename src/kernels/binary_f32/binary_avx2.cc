// AVX2 binary elementwise runs: 32 floats per iteration, masked tail.
#include <immintrin.h>

#include "kernels/binary_f32/binary_dispatch.h"
#include "kernels/binary_f32/binary_f32.h"

namespace edgeopt::kernels::binary {
namespace {

inline __m256i LaneMask(size_t n) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
}

template <Op O>
inline __m256 Apply(__m256 a, __m256 b) {
  if (O == Op::kAdd) return _mm256_add_ps(a, b);
  if (O == Op::kSub) return _mm256_sub_ps(a, b);
  if (O == Op::kDiv) return _mm256_div_ps(a, b);
  if (O == Op::kSquaredDifference) {
    const __m256 d = _mm256_sub_ps(a, b);
    return _mm256_mul_ps(d, d);
  }
  if (O == Op::kMaximum) return _mm256_max_ps(a, b);  // a > b ? a : b
  if (O == Op::kMinimum) return _mm256_min_ps(a, b);  // a < b ? a : b
  return _mm256_mul_ps(a, b);
}

struct Kernels {
  template <Op O, bool kAScalar, bool kBScalar>
  static void Run(const float* a, const float* b, float* out, size_t n, gemm::MinMax mm) {
    const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
    const __m256 as = _mm256_broadcast_ss(a), bs = _mm256_broadcast_ss(b);
    auto load_a = [&](size_t i) { return kAScalar ? as : _mm256_loadu_ps(a + i); };
    auto load_b = [&](size_t i) { return kBScalar ? bs : _mm256_loadu_ps(b + i); };
    auto clamp = [&](__m256 v) { return _mm256_min_ps(vmax, _mm256_max_ps(vmin, v)); };
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m256 r0 = Apply<O>(load_a(i), load_b(i));
      const __m256 r1 = Apply<O>(load_a(i + 8), load_b(i + 8));
      const __m256 r2 = Apply<O>(load_a(i + 16), load_b(i + 16));
      const __m256 r3 = Apply<O>(load_a(i + 24), load_b(i + 24));
      _mm256_storeu_ps(out + i, clamp(r0));
      _mm256_storeu_ps(out + i + 8, clamp(r1));
      _mm256_storeu_ps(out + i + 16, clamp(r2));
      _mm256_storeu_ps(out + i + 24, clamp(r3));
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, clamp(Apply<O>(load_a(i), load_b(i))));
    if (i < n) {
      const __m256i m = LaneMask(n - i);
      const __m256 va = kAScalar ? as : _mm256_maskload_ps(a + i, m);
      const __m256 vb = kBScalar ? bs : _mm256_maskload_ps(b + i, m);
      _mm256_maskstore_ps(out + i, m, clamp(Apply<O>(va, vb)));
    }
  }
};

}  // namespace

void RunAvx2(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
             gemm::MinMax mm) {
  Dispatch<Kernels>(op, a, a_scalar, b, b_scalar, out, n, mm);
}

}  // namespace edgeopt::kernels::binary
