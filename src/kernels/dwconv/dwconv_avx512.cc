// AVX-512 depthwise convolution rows: the kernels of dwconv_rows.h on 16-lane zmm vectors
// (channel blocks of 16, masked loads and stores for the last block).
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment (__Y = __Y) that
// -Wuninitialized reports inside every inlined min/max (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/dwconv/dwconv_rows.h"

namespace edgeopt::kernels::dwconv {
namespace {

struct Avx512Vec {
  using T = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static T Load(const float* p) { return _mm512_load_ps(p); }
  static T LoadU(const float* p) { return _mm512_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void StoreU(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm512_mask_storeu_ps(p, m, v); }
  static T Fma(T a, T b, T acc) { return _mm512_fmadd_ps(a, b, acc); }
  // max(lo, x) then min(hi, x): NaN propagates, as with std::min/std::max.
  static T Clamp(T x, T lo, T hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); }
  static T Set1(float x) { return _mm512_set1_ps(x); }
  // the first n (1..16) lanes
  static Mask TailMask(int n) { return static_cast<Mask>((1u << n) - 1u); }
};
static_assert(Avx512Vec::kLanes == kAvx512ChannelBlock);

}  // namespace

void RowsAvx512(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
                int cb_begin, int cb_end, gemm::MinMax mm) {
  RowsOf<Avx512Vec>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
