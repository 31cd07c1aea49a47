// AVX2 quantized ADD / SUB / MUL runs (see quant_binary.h): 8 lanes of int32, the reference
// fixed-point steps vectorized exactly (quant_avx2_util.h). A broadcast input (step 0) is
// scaled once with the scalar formula and splatted.
#include <algorithm>
#include <cstring>

#include "kernels/quant_fast/quant_avx2_util.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::qbin {
namespace {

using avx2q::Load8;
using avx2q::Requant;
using avx2q::Store8;

// Calls body(a8, b8, o8) over 8-element blocks; the tail goes through 8-element copies.
template <typename T, typename Body>
void ForBlocks(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, Body&& body) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) body(a + i * a_step, b + i * b_step, o + i);
  if (i < n) {
    const int64_t rest = n - i;
    T ta[8] = {}, tb[8] = {}, to[8];
    if (a_step) std::memcpy(ta, a + i, rest * sizeof(T));
    if (b_step) std::memcpy(tb, b + i, rest * sizeof(T));
    body(a_step ? ta : a, b_step ? tb : b, to);
    std::memcpy(o + i, to, rest * sizeof(T));
  }
}

}  // namespace

template <typename T>
void AddSubRun(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  const __m256i off1 = _mm256_set1_epi32(p.in1_offset), off2 = _mm256_set1_epi32(p.in2_offset);
  const __m128i left = _mm_cvtsi32_si128(p.left_shift);
  const Requant r1(p.in1_mult, p.in1_shift), r2(p.in2_mult, p.in2_shift), ro(p.out_mult, p.out_shift);
  const __m256i out_off = _mm256_set1_epi32(p.out_offset);
  const __m256i lo = _mm256_set1_epi32(p.act_min), hi = _mm256_set1_epi32(p.act_max);
  const bool sub = p.sub;
  // Broadcast inputs: one scaled value.
  const __m256i s1 = _mm256_set1_epi32(a_step ? 0 : AddSubScaledInput(a[0], p.in1_offset, p.left_shift, p.in1_mult, p.in1_shift));
  const __m256i s2 = _mm256_set1_epi32(b_step ? 0 : AddSubScaledInput(b[0], p.in2_offset, p.left_shift, p.in2_mult, p.in2_shift));
  ForBlocks(a, a_step, b, b_step, o, n, [&](const T* pa, const T* pb, T* po) {
    const __m256i v1 = a_step ? r1(_mm256_sll_epi32(_mm256_add_epi32(Load8(pa), off1), left)) : s1;
    const __m256i v2 = b_step ? r2(_mm256_sll_epi32(_mm256_add_epi32(Load8(pb), off2), left)) : s2;
    const __m256i raw = sub ? _mm256_sub_epi32(v1, v2) : _mm256_add_epi32(v1, v2);
    const __m256i v = _mm256_add_epi32(ro(raw), out_off);
    Store8(po, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  });
}

void AddSubPotInt16Run(const int16_t* a, int a_step, const int16_t* b, int b_step, int16_t* o, int64_t n,
                       const QuantBinaryParams& p) {
  const avx2q::RoundingShift r1(p.in1_pot_shift), r2(p.in2_pot_shift);
  const __m256i lo = _mm256_set1_epi32(std::max(p.act_min, -32768)), hi = _mm256_set1_epi32(std::min(p.act_max, 32767));
  const bool sub = p.sub;
  const __m256i s1 = _mm256_set1_epi32(a_step ? 0 : _mm256_cvtsi256_si32(r1(_mm256_set1_epi32(a[0]))));
  const __m256i s2 = _mm256_set1_epi32(b_step ? 0 : _mm256_cvtsi256_si32(r2(_mm256_set1_epi32(b[0]))));
  ForBlocks(a, a_step, b, b_step, o, n, [&](const int16_t* pa, const int16_t* pb, int16_t* po) {
    const __m256i v1 = a_step ? r1(Load8(pa)) : s1;
    const __m256i v2 = b_step ? r2(Load8(pb)) : s2;
    const __m256i raw = sub ? _mm256_sub_epi32(v1, v2) : _mm256_add_epi32(v1, v2);
    Store8(po, _mm256_min_epi32(_mm256_max_epi32(raw, lo), hi));
  });
}

template <typename T>
void MulRun(const T* a, int a_step, const T* b, int b_step, T* o, int64_t n, const QuantBinaryParams& p) {
  const __m256i off1 = _mm256_set1_epi32(p.in1_offset), off2 = _mm256_set1_epi32(p.in2_offset);
  const Requant ro(p.out_mult, p.out_shift);
  const __m256i out_off = _mm256_set1_epi32(p.out_offset);
  const __m256i lo = _mm256_set1_epi32(p.act_min), hi = _mm256_set1_epi32(p.act_max);
  const __m256i s1 = _mm256_set1_epi32(a_step ? 0 : p.in1_offset + a[0]);
  const __m256i s2 = _mm256_set1_epi32(b_step ? 0 : p.in2_offset + b[0]);
  ForBlocks(a, a_step, b, b_step, o, n, [&](const T* pa, const T* pb, T* po) {
    const __m256i v1 = a_step ? _mm256_add_epi32(Load8(pa), off1) : s1;
    const __m256i v2 = b_step ? _mm256_add_epi32(Load8(pb), off2) : s2;
    const __m256i v = _mm256_add_epi32(ro(_mm256_mullo_epi32(v1, v2)), out_off);
    Store8(po, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  });
}

namespace {

// Calls body(full8, vec8, out8) over each row's 8-channel blocks; a row's tail goes through
// 8-element copies (vec is padded to a multiple of 8).
template <typename T, typename Body>
void ForChannelBlocks(const T* full, const int32_t* vec, T* o, int64_t rows, int channels, Body&& body) {
  const int c8 = channels / 8 * 8;
  for (int64_t r = 0; r < rows; ++r, full += channels, o += channels) {
    int c = 0;
    for (; c < c8; c += 8) body(full + c, vec + c, o + c);
    if (c < channels) {
      T tf[8] = {}, to[8];
      std::memcpy(tf, full + c, (channels - c) * sizeof(T));
      body(tf, vec + c, to);
      std::memcpy(o + c, to, (channels - c) * sizeof(T));
    }
  }
}

}  // namespace

template <typename T>
void AddSubChannelRows(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                       const QuantBinaryParams& p) {
  const __m256i off = _mm256_set1_epi32(full_is_first ? p.in1_offset : p.in2_offset);
  const __m128i left = _mm_cvtsi32_si128(p.left_shift);
  const Requant rf(full_is_first ? p.in1_mult : p.in2_mult, full_is_first ? p.in1_shift : p.in2_shift);
  const Requant ro(p.out_mult, p.out_shift);
  const __m256i out_off = _mm256_set1_epi32(p.out_offset);
  const __m256i lo = _mm256_set1_epi32(p.act_min), hi = _mm256_set1_epi32(p.act_max);
  const bool sub = p.sub;
  ForChannelBlocks(full, vec, o, rows, channels, [&](const T* pf, const int32_t* pv, T* po) {
    const __m256i vf = rf(_mm256_sll_epi32(_mm256_add_epi32(Load8(pf), off), left));
    const __m256i vv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pv));
    const __m256i v1 = full_is_first ? vf : vv, v2 = full_is_first ? vv : vf;
    const __m256i raw = sub ? _mm256_sub_epi32(v1, v2) : _mm256_add_epi32(v1, v2);
    const __m256i v = _mm256_add_epi32(ro(raw), out_off);
    Store8(po, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  });
}

template <typename T>
void MulChannelRows(const T* full, bool full_is_first, const int32_t* vec, T* o, int64_t rows, int channels,
                    const QuantBinaryParams& p) {
  const __m256i off = _mm256_set1_epi32(full_is_first ? p.in1_offset : p.in2_offset);
  const Requant ro(p.out_mult, p.out_shift);
  const __m256i out_off = _mm256_set1_epi32(p.out_offset);
  const __m256i lo = _mm256_set1_epi32(p.act_min), hi = _mm256_set1_epi32(p.act_max);
  ForChannelBlocks(full, vec, o, rows, channels, [&](const T* pf, const int32_t* pv, T* po) {
    const __m256i prod = _mm256_mullo_epi32(_mm256_add_epi32(Load8(pf), off),
                                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pv)));
    const __m256i v = _mm256_add_epi32(ro(prod), out_off);
    Store8(po, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
  });
}

void RequantizeBatch(const int32_t* x, int32_t* y, int64_t n, int32_t mult, int shift) {
  const Requant r(mult, shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        r(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  for (; i < n; ++i) y[i] = MultiplyByQuantizedMultiplier(x[i], mult, shift);
}

#define EDGEOPT_QBIN_INSTANTIATE(T)                                                                     \
  template void AddSubRun<T>(const T*, int, const T*, int, T*, int64_t, const QuantBinaryParams&); \
  template void MulRun<T>(const T*, int, const T*, int, T*, int64_t, const QuantBinaryParams&); \
  template void AddSubChannelRows<T>(const T*, bool, const int32_t*, T*, int64_t, int, const QuantBinaryParams&); \
  template void MulChannelRows<T>(const T*, bool, const int32_t*, T*, int64_t, int, const QuantBinaryParams&);
EDGEOPT_QBIN_INSTANTIATE(int8_t)
EDGEOPT_QBIN_INSTANTIATE(uint8_t)
EDGEOPT_QBIN_INSTANTIATE(int16_t)
#undef EDGEOPT_QBIN_INSTANTIATE

}  // namespace edgeopt::kernels::qbin
