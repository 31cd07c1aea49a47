// Same-shape int8 / uint8 ADD / SUB in fp32 (quant_binary.h AddSubFloat512).
//
// The reference computes out = clamp(R(v1 ± v2) + zo) with v_i = R_i((x_i + off_i) << 20), each R
// a fixed-point multiply with rounding: nearly linear in (x_a, x_b), with the roundings of the
// two input steps 2^-20 of an output step fine. So out = floor(x_a fa + x_b fb + fc) for the
// effective multipliers fa = 2^20 m1 2^(s1 - 31) mo 2^(so - 31) (fb likewise, negative for SUB)
// and an fc inside the window that all 65536 pairs leave it, which is almost always non-empty
// (~2^-16 wide against the inputs' ~2^-20 perturbations; 197 of 200 random parameter sets, and
// the analytic fc = fa off_a + fb off_b + zo + 1/2 alone 186). Where ties of negative values
// (rounded away from zero by the reference) leave no window, no constants: the integer forms
// stay. The float arithmetic is not exact, but it is deterministic per pair, and the plan runs
// the very loop below on every pair and compares with the exact integer form before it takes
// the constants: the bytes are the integer form's by construction.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::qbin {
namespace {

// 16 values of T as floats: all 16 at p, or those of mask k (a plain load where all are read).
template <typename T>
inline __m512 Floats16(__m128i b) {
  return _mm512_cvtepi32_ps(std::is_signed_v<T> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}
template <typename T>
inline __m512 LoadFloat16(const T* p) {
  return Floats16<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <typename T>
inline __m512 LoadFloat16(const T* p, __mmask16 k) {
  return Floats16<T>(_mm_maskz_loadu_epi8(k, p));
}

// floor(a fa + RN(b fb + fc)) on 16 lanes.
inline __m512i FloatStep(__m512 a, __m512 b, __m512 fa, __m512 fb, __m512 fc) {
  const __m512 t = _mm512_fmadd_round_ps(b, fb, fc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 z = _mm512_fmadd_round_ps(a, fa, t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  return _mm512_cvt_roundps_epi32(z, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

// Exact integer results of every pair: a[i] = i & 255, b[i] = i >> 8 (as bytes of T).
template <typename T>
void AllPairs(std::vector<T>* a, std::vector<T>* b) {
  a->resize(65536);
  b->resize(65536);
  for (int i = 0; i < 65536; ++i) {
    const uint8_t x = static_cast<uint8_t>(i & 255), y = static_cast<uint8_t>(i >> 8);
    std::memcpy(a->data() + i, &x, 1);
    std::memcpy(b->data() + i, &y, 1);
  }
}

}  // namespace

template <typename T>
void AddSubFloatRun512(const T* a, const T* b, T* o, int64_t n, const AddSubFloat512& q) {
  const __m512 fa = _mm512_set1_ps(q.fa), fb = _mm512_set1_ps(q.fb), fc = _mm512_set1_ps(q.fc);
  constexpr bool kU = std::is_unsigned_v<T>;
  const __m512i lo = _mm512_set1_epi8(static_cast<char>(q.act_min)), hi = _mm512_set1_epi8(static_cast<char>(q.act_max));
  // After the in-lane packs dword j of 128-bit lane k holds values 16j + 4k .. 16j + 4k + 3.
  const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const auto bytes = [&](__m512i y0, __m512i y1, __m512i y2, __m512i y3) {
    const __m512i w0 = _mm512_packs_epi32(y0, y1), w1 = _mm512_packs_epi32(y2, y3);
    __m512i v = kU ? _mm512_packus_epi16(w0, w1) : _mm512_packs_epi16(w0, w1);
    v = _mm512_permutexvar_epi32(perm, v);
    return kU ? _mm512_min_epu8(_mm512_max_epu8(v, lo), hi) : _mm512_min_epi8(_mm512_max_epi8(v, lo), hi);
  };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i y[4];
    for (int k = 0; k < 4; ++k)
      y[k] = FloatStep(LoadFloat16(a + i + 16 * k), LoadFloat16(b + i + 16 * k), fa, fb, fc);
    _mm512_storeu_si512(o + i, bytes(y[0], y[1], y[2], y[3]));
  }
  if (i < n) {
    __m512i y[4];
    for (int k = 0; k < 4; ++k) {
      const int64_t left = std::clamp<int64_t>(n - i - 16 * k, 0, 16);
      const __mmask16 m = static_cast<__mmask16>((1u << left) - 1);
      y[k] = FloatStep(LoadFloat16(a + i + 16 * k, m), LoadFloat16(b + i + 16 * k, m), fa, fb, fc);
    }
    _mm512_mask_storeu_epi8(o + i, (~__mmask64{0}) >> (64 - (n - i)), bytes(y[0], y[1], y[2], y[3]));
  }
}

template <typename T>
AddSubFloat512 PlanAddSubFloat512(const QuantBinaryParams& p, const AddSubLinear512& exact) {
  AddSubFloat512 q;
  if (!AddSubAvx512Applies(p) || p.pot_int16 || p.left_shift != 20) return q;
  q.act_min = std::max<int32_t>(p.act_min, std::numeric_limits<T>::min());
  q.act_max = std::min<int32_t>(p.act_max, std::numeric_limits<T>::max());
  if (q.act_min > q.act_max) return q;
  // The effective real multipliers of the integer steps (MultiplyByQuantizedMultiplier(x, m, s)
  // ~ x m 2^(s - 31)).
  const auto eff = [](int32_t m, int s) { return std::ldexp(static_cast<double>(m), s - 31); };
  const double out = eff(p.out_mult, p.out_shift) * std::ldexp(1.0, p.left_shift);
  const double ea = eff(p.in1_mult, p.in1_shift) * out;
  const double eb = (p.sub ? -1.0 : 1.0) * eff(p.in2_mult, p.in2_shift) * out;
  q.fa = static_cast<float>(ea);
  q.fb = static_cast<float>(eb);
  if (!std::isfinite(q.fa) || !std::isfinite(q.fb) || std::fabs(ea) > 1e6 || std::fabs(eb) > 1e6) return q;
  std::vector<T> a, b, want(65536), got(65536);
  AllPairs(&a, &b);
  if (exact.ok) AddSubLinearRun512<T>(a.data(), b.data(), want.data(), 65536, exact);
  else AddSubRun512<T>(a.data(), 1, b.data(), 1, want.data(), 65536, p);
  const auto passes = [&](float c) {
    q.fc = c;
    AddSubFloatRun512<T>(a.data(), b.data(), got.data(), 65536, q);
    return std::memcmp(want.data(), got.data(), 65536 * sizeof(T)) == 0;
  };
  const double analytic = ea * p.in1_offset + eb * p.in2_offset + p.out_offset + 0.5;
  if (std::fabs(analytic) < 1e6 && passes(static_cast<float>(analytic))) return q.ok = true, q;
  // The window of fc: out <= x_a fa + x_b fb + fc < out + 1 wherever out is not clamped.
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 65536; ++i) {
    const double z = static_cast<double>(q.fa) * a[static_cast<size_t>(i)] + static_cast<double>(q.fb) * b[static_cast<size_t>(i)];
    const int32_t y = want[static_cast<size_t>(i)];
    if (y > q.act_min) lo = std::max(lo, y - z);
    if (y < q.act_max) hi = std::min(hi, y + 1 - z);
  }
  if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi)) return q;
  q.ok = passes(static_cast<float>((lo + hi) / 2));
  return q;
}

#define EDGEOPT_QBIN_FLOAT_INSTANTIATE(T)                                                     \
  template AddSubFloat512 PlanAddSubFloat512<T>(const QuantBinaryParams&, const AddSubLinear512&); \
  template void AddSubFloatRun512<T>(const T*, const T*, T*, int64_t, const AddSubFloat512&);
EDGEOPT_QBIN_FLOAT_INSTANTIATE(int8_t)
EDGEOPT_QBIN_FLOAT_INSTANTIATE(uint8_t)
#undef EDGEOPT_QBIN_FLOAT_INSTANTIATE

}  // namespace edgeopt::kernels::qbin
