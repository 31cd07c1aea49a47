// int32_binary.h's run with 8-lane AVX2 vectors.
#include <immintrin.h>

#include "kernels/elementwise/int32_binary_simd.h"

namespace edgeopt::kernels::elementwise {
namespace {

struct V256 {
  static constexpr int kLanes = 8;
  using I = __m256i;
  static I Load(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void Store(int32_t* p, I v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static I Set(int32_t v) { return _mm256_set1_epi32(v); }
  static I Add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I Sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I Mul(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I Min(I a, I b) { return _mm256_min_epi32(a, b); }
  static I Max(I a, I b) { return _mm256_max_epi32(a, b); }
};

}  // namespace

void Int32RunAvx2(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar, int32_t* out,
                  int64_t n) {
  simd::Run<V256>(r, a, a_scalar, b, b_scalar, out, n);
}

}  // namespace edgeopt::kernels::elementwise
