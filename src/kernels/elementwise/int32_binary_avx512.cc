// int32_binary.h's run with 16-lane AVX-512 vectors.
#include <immintrin.h>

#include "kernels/elementwise/int32_binary_simd.h"

namespace edgeopt::kernels::elementwise {
namespace {

// maskz forms (all lanes): GCC 12 warns about the undefined source of the plain ones.
struct V512 {
  static constexpr int kLanes = 16;
  using I = __m512i;
  static I Load(const int32_t* p) { return _mm512_loadu_si512(p); }
  static void Store(int32_t* p, I v) { _mm512_storeu_si512(p, v); }
  static I Set(int32_t v) { return _mm512_set1_epi32(v); }
  static I Add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I Sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I Mul(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I Min(I a, I b) { return _mm512_maskz_min_epi32(0xFFFF, a, b); }
  static I Max(I a, I b) { return _mm512_maskz_max_epi32(0xFFFF, a, b); }
};

}  // namespace

void Int32RunAvx512(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar,
                    int32_t* out, int64_t n) {
  simd::Run<V512>(r, a, a_scalar, b, b_scalar, out, n);
}

}  // namespace edgeopt::kernels::elementwise
