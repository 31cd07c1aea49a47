// float_act.h's loops with 8-lane AVX2 vectors.
#include <immintrin.h>

#include "kernels/activations/float_act_simd.h"

namespace edgeopt::kernels::activations {
namespace {

struct V256 {
  static constexpr int kLanes = 8;
  using F = __m256;
  static F Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, F v) { _mm256_storeu_ps(p, v); }
  // Lane j of the mask is all ones for j < m (vmaskmovps: the other lanes read as 0, left unwritten).
  static __m256i Lanes(int64_t m) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(m)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F LoadN(const float* p, int64_t m) { return _mm256_maskload_ps(p, Lanes(m)); }
  static void StoreN(float* p, F v, int64_t m) { _mm256_maskstore_ps(p, Lanes(m), v); }
  static F Set(float v) { return _mm256_set1_ps(v); }
  static F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static F Sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Div(F a, F b) { return _mm256_div_ps(a, b); }
  static F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F Max(F a, F b) { return _mm256_max_ps(a, b); }
  static F Min(F a, F b) { return _mm256_min_ps(a, b); }
  static F SelectGt(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
  static F SelectLt(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  static F SelectGe(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
  static F Round(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F Pow2I(F n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static F SelectEq(F a, F b, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
  static F SelectNan(F a, F x, F y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, a, _CMP_UNORD_Q)); }
  static F Floor(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F Ceil(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static F Sqrt(F v) { return _mm256_sqrt_ps(v); }
  static F Neg(F v) { return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); }
  // From the exponent bits; a denormal is first scaled by 2^23 (its exponent then corrected).
  static F Frexp(F v, F* e) {
    const F denormal = _mm256_cmp_ps(v, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    const F x = _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(8388608.0f)), denormal);
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i biased = _mm256_srli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7F800000)), 23);
    *e = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(biased, _mm256_set1_epi32(126))),
                       _mm256_and_ps(denormal, _mm256_set1_ps(23.0f)));
    const __m256i mant = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F000000));
    return _mm256_castsi256_ps(mant);
  }
  static F Abs(F v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static F CopySign(F mag, F sign) {
    const F s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sign));
  }
};

}  // namespace

void FloatActAvx2(const FloatActParams& p, const float* x, float* y, int64_t n) { simd::Run<V256>(p, x, y, n); }
void PreluAvx2(const float* x, const float* alpha, float* y, int64_t n) { simd::PreluRun<V256>(x, alpha, y, n); }
void SoftmaxAvx2(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth) {
  simd::SoftmaxRows<V256>(p, x, y, rows, depth);
}

}  // namespace edgeopt::kernels::activations
