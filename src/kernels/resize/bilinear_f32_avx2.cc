// AVX2 float32 bilinear rows: bilinear_row.h on 8-lane ymm vectors; the channel tail uses
// vmaskmovps (masked-off lanes are neither read nor written).
#include <immintrin.h>

#include "kernels/resize/bilinear_row.h"

namespace edgeopt::kernels::resize {
namespace {

struct Avx2Vec {
  using T = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static T LoadU(const float* p) { return _mm256_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void StoreU(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm256_maskstore_ps(p, m, v); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Set1(float x) { return _mm256_set1_ps(x); }
  static T Zero() { return _mm256_setzero_ps(); }
  // first n (0..7) lanes: lane i is on when i < n
  static Mask TailMask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

}  // namespace

BilinearRowFn BilinearRowAvx2() { return BilinearRow<Avx2Vec>; }
BilinearRowInt8Fn BilinearRowInt8Avx2() { return BilinearRowInt8; }

}  // namespace edgeopt::kernels::resize
