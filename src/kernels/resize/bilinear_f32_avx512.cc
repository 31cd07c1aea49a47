// AVX-512 float32 bilinear rows: bilinear_row.h on 16-lane zmm vectors, masked channel tails.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/resize/bilinear_row.h"

namespace edgeopt::kernels::resize {
namespace {

struct Avx512Vec {
  using T = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static T LoadU(const float* p) { return _mm512_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void StoreU(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm512_mask_storeu_ps(p, m, v); }
  static T Mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Set1(float x) { return _mm512_set1_ps(x); }
  static T Zero() { return _mm512_setzero_ps(); }
  static Mask TailMask(int n) { return static_cast<Mask>((1u << n) - 1u); }  // first n (0..15) lanes
};

}  // namespace

BilinearRowFn BilinearRowAvx512() { return BilinearRow<Avx512Vec>; }

}  // namespace edgeopt::kernels::resize
