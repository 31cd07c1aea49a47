// float32 vector traits for kernels written once over a vector type (dwconv/dwconv_rows.h,
// resize/bilinear_row.h, the 7-row GEMM tiles of gemm/gemm_avx512.cc): include this only from a
// file compiled with the instruction set (a name containing avx2 / avx512, see CMakeLists.txt);
// each including file gets its own copy (internal linkage), so code for one instruction set never
// reaches another.
//
// V provides: T (vector), Mask, kLanes, kRegisters, Load (aligned), LoadU, MaskLoad, StoreU, MaskStore,
// Fma(a, b, acc), Mul, Add, Sub, Div, Max(a, b) = a > b ? a : b, Min(a, b) = a < b ? a : b (what
// vmaxps / vminps compute, NaN and signed zeros included), Clamp(x, lo, hi), Set1, Zero,
// TailMask(n lanes, 0..kLanes).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace edgeopt::kernels {
namespace {

#if defined(__AVX2__) && defined(__FMA__)
struct Avx2F32 {
  using T = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 16;  // vector registers of the instruction set
  static T Load(const float* p) { return _mm256_load_ps(p); }
  static T LoadU(const float* p) { return _mm256_loadu_ps(p); }
  // Masked-off lanes are neither read nor written (vmaskmovps).
  static T MaskLoad(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void StoreU(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm256_maskstore_ps(p, m, v); }
  static T Fma(T a, T b, T acc) { return _mm256_fmadd_ps(a, b, acc); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T Div(T a, T b) { return _mm256_div_ps(a, b); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  // max(lo, x) then min(hi, x): NaN propagates, as with std::min/std::max.
  static T Clamp(T x, T lo, T hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  static T Set1(float x) { return _mm256_set1_ps(x); }
  static T Zero() { return _mm256_setzero_ps(); }
  // the first n (0..8) lanes
  static Mask TailMask(int n) {
    alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
  }
};
#endif

#if defined(__AVX512F__) && defined(__AVX512DQ__)
struct Avx512F32 {
  using T = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kRegisters = 32;
  static T Load(const float* p) { return _mm512_load_ps(p); }
  static T LoadU(const float* p) { return _mm512_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void StoreU(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm512_mask_storeu_ps(p, m, v); }
  static T Fma(T a, T b, T acc) { return _mm512_fmadd_ps(a, b, acc); }
  static T Mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T Div(T a, T b) { return _mm512_div_ps(a, b); }
  static T Max(T a, T b) { return _mm512_max_ps(a, b); }
  static T Min(T a, T b) { return _mm512_min_ps(a, b); }
  static T Clamp(T x, T lo, T hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); }
  static T Set1(float x) { return _mm512_set1_ps(x); }
  static T Zero() { return _mm512_setzero_ps(); }
  // the first n (0..16) lanes
  static Mask TailMask(int n) { return static_cast<Mask>((1u << n) - 1u); }
};
#endif

#if defined(__AVX512F__) && defined(__AVX512VL__)
// 8 lanes with AVX-512 masks (AVX512VL): masked loads and stores are plain instructions here,
// unlike Avx2F32's vmaskmovps.
struct Avx512VlF32 {
  using T = __m256;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 32;
  static T Load(const float* p) { return _mm256_load_ps(p); }
  static T LoadU(const float* p) { return _mm256_loadu_ps(p); }
  static T MaskLoad(const float* p, Mask m) { return _mm256_maskz_loadu_ps(m, p); }
  static void StoreU(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, T v) { _mm256_mask_storeu_ps(p, m, v); }
  static T Fma(T a, T b, T acc) { return _mm256_fmadd_ps(a, b, acc); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T Div(T a, T b) { return _mm256_div_ps(a, b); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  static T Clamp(T x, T lo, T hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  static T Set1(float x) { return _mm256_set1_ps(x); }
  static T Zero() { return _mm256_setzero_ps(); }
  // the first n (0..8) lanes
  static Mask TailMask(int n) { return static_cast<Mask>((1u << n) - 1u); }
};
#endif

}  // namespace
}  // namespace edgeopt::kernels
