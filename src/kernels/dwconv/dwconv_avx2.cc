// AVX2 + FMA depthwise convolution rows: the kernels of dwconv_rows.h on 8-lane ymm vectors.
#include <immintrin.h>

#include "kernels/dwconv/dwconv_rows.h"

namespace edgeopt::kernels::dwconv {
namespace {

struct Avx2Vec {
  using T = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static T Load(const float* p) { return _mm256_load_ps(p); }
  static T LoadU(const float* p) { return _mm256_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void StoreU(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm256_maskstore_ps(p, m, v); }
  static T Fma(T a, T b, T acc) { return _mm256_fmadd_ps(a, b, acc); }
  // max(lo, x) then min(hi, x): NaN propagates, as with std::min/std::max.
  static T Clamp(T x, T lo, T hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  static T Set1(float x) { return _mm256_set1_ps(x); }
  // the first n (1..8) lanes
  static Mask TailMask(int n) {
    alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
  }
};
static_assert(Avx2Vec::kLanes == kAvx2ChannelBlock);

}  // namespace

void RowsAvx2(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
              int cb_begin, int cb_end, gemm::MinMax mm) {
  RowsOf<Avx2Vec>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
