// float_act.h's loops with 16-lane AVX-512 vectors.
#include <immintrin.h>

#include "kernels/activations/float_act_simd.h"

namespace edgeopt::kernels::activations {
namespace {

// The maskz forms (all lanes) avoid GCC 12's maybe-uninitialized warnings on the plain
// intrinsics, whose expansions pass an undefined source vector.
struct V512 {
  static constexpr int kLanes = 16;
  using F = __m512;
  static F Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F LoadN(const float* p, int64_t m) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << m) - 1), p); }
  static void StoreN(float* p, F v, int64_t m) { _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << m) - 1), v); }
  static F Set(float v) { return _mm512_set1_ps(v); }
  static F Add(F a, F b) { return _mm512_add_ps(a, b); }
  static F Sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F Div(F a, F b) { return _mm512_div_ps(a, b); }
  static F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F Max(F a, F b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }
  static F Min(F a, F b) { return _mm512_maskz_min_ps(0xFFFF, a, b); }
  static F SelectGt(F a, F b, F x, F y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x); }
  static F SelectLt(F a, F b, F x, F y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x); }
  static F SelectGe(F a, F b, F x, F y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GE_OQ), y, x); }
  static F Round(F v) { return _mm512_maskz_roundscale_ps(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F Pow2I(F n) {
    const __m512i e = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(0xFFFF, n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, e, 23));
  }
  static F SelectEq(F a, F b, F x, F y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ), y, x); }
  static F SelectNan(F a, F x, F y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), y, x); }
  static F Floor(F v) { return _mm512_maskz_roundscale_ps(0xFFFF, v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static F Ceil(F v) { return _mm512_maskz_roundscale_ps(0xFFFF, v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static F Sqrt(F v) { return _mm512_maskz_sqrt_ps(0xFFFF, v); }
  static F Neg(F v) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN))); }
  // getexp / getmant handle denormals: x = m' 2^g with m' in [1, 2), so m = m' / 2, e = g + 1.
  static F Frexp(F v, F* e) {
    *e = _mm512_add_ps(_mm512_maskz_getexp_ps(0xFFFF, v), _mm512_set1_ps(1.0f));
    return _mm512_mul_ps(_mm512_maskz_getmant_ps(0xFFFF, v, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero), _mm512_set1_ps(0.5f));
  }
  static F Abs(F v) { return _mm512_abs_ps(v); }
  static F CopySign(F mag, F sign) {
    const __m512i s = _mm512_set1_epi32(0x80000000u);
    // Bitwise select s ? sign : mag.
    const __m512i r = _mm512_ternarylogic_epi32(_mm512_castps_si512(mag), _mm512_castps_si512(sign), s, 0xD8);
    return _mm512_castsi512_ps(r);
  }
};

}  // namespace

void FloatActAvx512(const FloatActParams& p, const float* x, float* y, int64_t n) { simd::Run<V512>(p, x, y, n); }
void PreluAvx512(const float* x, const float* alpha, float* y, int64_t n) { simd::PreluRun<V512>(x, alpha, y, n); }
void SoftmaxAvx512(const SoftmaxParams& p, const float* x, float* y, int64_t rows, int64_t depth) {
  simd::SoftmaxRows<V512>(p, x, y, rows, depth);
}

}  // namespace edgeopt::kernels::activations
