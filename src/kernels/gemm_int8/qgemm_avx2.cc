// AVX2 parts of the integer GEMM: the 6x16 int16 micro-kernel, the output stages and the
// widening used to pack A. See qgemm.h for the design.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/common/quant_utils.h"
#include "kernels/gemm_int8/qgemm.h"

namespace edgeopt::kernels::qgemm {
namespace {

// One row of the micro-kernel: broadcast the row's next k pair (two int16), multiply with the two
// B vectors in ymm0/ymm1 and add into the row's accumulators.
#define QG_ROW(mem, acc0, acc1)                 \
  "vpbroadcastd " mem ", %%ymm2\n\t"            \
  "vpmaddwd %%ymm0, %%ymm2, %%ymm3\n\t"         \
  "vpaddd %%ymm3, %%ymm" #acc0 ", %%ymm" #acc0 "\n\t" \
  "vpmaddwd %%ymm1, %%ymm2, %%ymm2\n\t"         \
  "vpaddd %%ymm2, %%ymm" #acc1 ", %%ymm" #acc1 "\n\t"
#define QG_ZERO(acc0, acc1) \
  "vpxor %%xmm" #acc0 ", %%xmm" #acc0 ", %%xmm" #acc0 "\n\t" "vpxor %%xmm" #acc1 ", %%xmm" #acc1 ", %%xmm" #acc1 "\n\t"
#define QG_STORE(acc0, acc1, off0, off1) \
  "vmovdqu %%ymm" #acc0 ", " #off0 "(%[c])\n\t" "vmovdqu %%ymm" #acc1 ", " #off1 "(%[c])\n\t"

#define QG_R0 QG_ROW("(%[a0])", 4, 5)
#define QG_R1 QG_ROW("(%[a0],%[ld])", 6, 7)
#define QG_R2 QG_ROW("(%[a0],%[ld],2)", 8, 9)
#define QG_R3 QG_ROW("(%[a3])", 10, 11)
#define QG_R4 QG_ROW("(%[a3],%[ld])", 12, 13)
#define QG_R5 QG_ROW("(%[a3],%[ld],2)", 14, 15)
#define QG_Z0 QG_ZERO(4, 5)
#define QG_Z1 QG_ZERO(6, 7)
#define QG_Z2 QG_ZERO(8, 9)
#define QG_Z3 QG_ZERO(10, 11)
#define QG_Z4 QG_ZERO(12, 13)
#define QG_Z5 QG_ZERO(14, 15)
#define QG_S0 QG_STORE(4, 5, 0, 32)
#define QG_S1 QG_STORE(6, 7, 64, 96)
#define QG_S2 QG_STORE(8, 9, 128, 160)
#define QG_S3 QG_STORE(10, 11, 192, 224)
#define QG_S4 QG_STORE(12, 13, 256, 288)
#define QG_S5 QG_STORE(14, 15, 320, 352)

#define QG_KERNEL(ZEROS, ROWS, STORES)                                                              \
  __asm__ volatile(ZEROS                                                                            \
                   "1:\n\t"                                                                         \
                   "vmovdqa (%[b]), %%ymm0\n\t"                                                     \
                   "vmovdqa 32(%[b]), %%ymm1\n\t" ROWS                                              \
                   "add $64, %[b]\n\t"                                                              \
                   "add $4, %[a0]\n\t"                                                              \
                   "add $4, %[a3]\n\t"                                                              \
                   "dec %[k]\n\t"                                                                   \
                   "jnz 1b\n\t" STORES                                                              \
                   : [a0] "+r"(a0), [a3] "+r"(a3), [b] "+r"(b), [k] "+r"(k)                         \
                   : [ld] "r"(ld), [c] "r"(c)                                                       \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
                     "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory")

// 8 lanes of ruy's requantization (see RequantGroup): x + bias, then ((x << l) * m + round) >> s
// in 64 bits, plus the adjusted output zero point.
// folded: Requant8::bias_folded (the bias is inside round_e/round_o).
inline __m256i RequantRuy(__m256i x, const RequantGroup& g, __m256i m_e, __m256i m_o, bool left, bool folded) {
  if (!folded) x = _mm256_add_epi32(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.bias)));
  if (left) x = _mm256_sllv_epi32(x, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.left)));
  const __m256i x_o = _mm256_srli_epi64(x, 32);
  __m256i p_e = _mm256_mul_epi32(x, m_e);
  __m256i p_o = _mm256_mul_epi32(x_o, m_o);
  p_e = _mm256_add_epi64(p_e, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.round_e)));
  p_o = _mm256_add_epi64(p_o, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.round_o)));
  p_e = _mm256_srlv_epi64(p_e, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.shift_e)));
  p_o = _mm256_srlv_epi64(p_o, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.shift_o)));
  const __m256i r = _mm256_blend_epi32(p_e, _mm256_slli_epi64(p_o, 32), 0xAA);
  return _mm256_add_epi32(r, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.zp_adj)));
}

// Requant8::half_range (see there): x = acc (the bias is folded), |x| < 2^30, right shift <= 30.
inline __m256i RequantHalf(__m256i x, const RequantGroup& g, __m256i m_e, __m256i m_o) {
  const __m256i x2 = _mm256_add_epi32(x, x);
  __m256i p_e = _mm256_mul_epi32(x2, m_e);
  __m256i p_o = _mm256_mul_epi32(_mm256_shuffle_epi32(x2, 0xF5), m_o);
  p_e = _mm256_add_epi64(p_e, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.round_e)));
  p_o = _mm256_add_epi64(p_o, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.round_o)));
  // High dwords: even channels from p_e (moved down), odd channels from p_o (already in place).
  __m256i h = _mm256_blend_epi32(_mm256_shuffle_epi32(p_e, 0xF5), p_o, 0xAA);
  h = _mm256_srlv_epi32(h, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.rshift)));
  return _mm256_add_epi32(h, _mm256_load_si256(reinterpret_cast<const __m256i*>(g.zp_adj)));
}

template <bool kUnsigned, bool kLeft, bool kFolded = false, bool kHalf = false>
void StoreQuant8(const GemmOutput& out, const int32_t* acc, int rows, int64_t row0, int col0, int cols) {
  const Requant8& q = *out.q8;
  const RequantGroup& g0 = q.groups[col0 / 8];
  const RequantGroup& g1 = q.groups[col0 / 8 + 1];
  const __m256i m0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(g0.mult));
  const __m256i m1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(g1.mult));
  const __m256i m0_o = _mm256_srli_epi64(m0, 32), m1_o = _mm256_srli_epi64(m1, 32);
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(q.act_min));
  const __m256i hi = _mm256_set1_epi8(static_cast<char>(q.act_max));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  uint8_t* c = static_cast<uint8_t*>(out.c) + (static_cast<int64_t>(row0) * out.ldc + col0);
  for (int r = 0; r < rows; r += 2) {
    const int32_t* a = acc + r * kNR;
    const int32_t* b = r + 1 < rows ? a + kNR : a;
    auto rq = [&](const int32_t* p, const RequantGroup& g, __m256i m_e, __m256i m_o) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      return kHalf ? RequantHalf(x, g, m_e, m_o) : RequantRuy(x, g, m_e, m_o, kLeft, kFolded);
    };
    const __m256i ra0 = rq(a, g0, m0, m0_o);
    const __m256i ra1 = rq(a + 8, g1, m1, m1_o);
    const __m256i rb0 = rq(b, g0, m0, m0_o);
    const __m256i rb1 = rq(b + 8, g1, m1, m1_o);
    // [a0-3 a8-11 | a4-7 a12-15] and the same for b, then bytes in order a0..15, b0..15.
    const __m256i va = _mm256_packs_epi32(ra0, ra1);
    const __m256i vb = _mm256_packs_epi32(rb0, rb1);
    __m256i v = kUnsigned ? _mm256_packus_epi16(va, vb) : _mm256_packs_epi16(va, vb);
    v = _mm256_permutevar8x32_epi32(v, order);
    if (kUnsigned) {
      v = _mm256_min_epu8(_mm256_max_epu8(v, lo), hi);
    } else {
      v = _mm256_min_epi8(_mm256_max_epi8(v, lo), hi);
    }
    uint8_t* ca = c + static_cast<int64_t>(r) * out.ldc;
    if (cols == kNR) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ca), _mm256_castsi256_si128(v));
      if (r + 1 < rows) _mm_storeu_si128(reinterpret_cast<__m128i*>(ca + out.ldc), _mm256_extracti128_si256(v, 1));
    } else {
      alignas(32) uint8_t tmp[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), v);
      std::memcpy(ca, tmp, cols);
      if (r + 1 < rows) std::memcpy(ca + out.ldc, tmp + 16, cols);
    }
  }
}

void StoreFloat(const GemmOutput& out, const int32_t* acc, int rows, int64_t row0, int col0, int cols) {
  const FloatOut& f = out.f;
  alignas(32) float scale[kNR], bias[kNR];
  for (int j = 0; j < kNR; ++j) {
    scale[j] = j < cols ? f.col_scale[col0 + j] : 0.0f;
    bias[j] = j < cols && f.bias ? f.bias[col0 + j] : 0.0f;
  }
  const __m256 lo = _mm256_set1_ps(f.act_min), hi = _mm256_set1_ps(f.act_max);
  float* c = static_cast<float*>(out.c) + (static_cast<int64_t>(row0) * out.ldc + col0);
  for (int r = 0; r < rows; ++r) {
    const __m256 rs = _mm256_set1_ps(out.row_scale[(row0 + r) / out.rows_per_batch]);
    alignas(32) float tmp[kNR];
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * kNR + 8 * h)));
      // The reference multiplies by (weight_scale * input_scale) and then adds the bias: two
      // roundings, kept separate (no FMA).
      const __m256 s = _mm256_mul_ps(_mm256_load_ps(scale + 8 * h), rs);
      __m256 y = _mm256_mul_ps(v, s);
      if (f.bias) y = _mm256_add_ps(y, _mm256_load_ps(bias + 8 * h));
      // std::min(std::max(y, lo), hi) including NaN: max_ps/min_ps return their second operand
      // when either is NaN, so the bound goes first.
      y = _mm256_min_ps(hi, _mm256_max_ps(lo, y));
      _mm256_store_ps(tmp + 8 * h, y);
    }
    std::memcpy(c + static_cast<int64_t>(r) * out.ldc, tmp, sizeof(float) * cols);
  }
}

void StoreInt16(const GemmOutput& out, const int32_t* acc, int rows, int64_t row0, int col0, int cols) {
  const Int16Out& q = out.i16;
  int16_t* c = static_cast<int16_t*>(out.c) + (static_cast<int64_t>(row0) * out.ldc + col0);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < cols; ++j) {
      const int n = col0 + j;
      const int32_t a = acc[r * kNR + j];
      int32_t v;
      switch (q.rounding) {
        case Int16Rounding::kGemmlowp32: {
          const int32_t x = q.bias32 ? WrapToInt32(int64_t{a} + q.bias32[n]) : a;
          v = MultiplyByQuantizedMultiplier(x, q.multiplier[n], q.shift[n]);
          break;
        }
        case Int16Rounding::kInt64Bias: {
          const int64_t x = int64_t{a} + (q.bias64 ? q.bias64[n] : 0);
          v = MultiplyByQuantizedMultiplier(x, q.multiplier[n], q.shift[n]);
          break;
        }
        default: {
          const int32_t x = q.bias32 ? WrapToInt32(int64_t{a} + q.bias32[n]) : a;
          v = MultiplyByQuantizedMultiplierSingleRound(x, q.multiplier[n], q.shift[n]);
          break;
        }
      }
      c[static_cast<int64_t>(r) * out.ldc + j] = static_cast<int16_t>(std::clamp(v, q.act_min, q.act_max));
    }
  }
}

}  // namespace

void MicroKernel(int rows, int K2, const int16_t* a, int64_t lda, const int16_t* panel, int32_t* acc) {
  const int16_t* a0 = a;
  const int16_t* a3 = a + 3 * lda;
  const int16_t* b = panel;
  int64_t k = K2;
  const int64_t ld = lda * 2;  // bytes
  int32_t* c = acc;
  if (k <= 0) {
    std::memset(acc, 0, sizeof(int32_t) * kMR * kNR);
    return;
  }
  switch (rows) {
    case 6: QG_KERNEL(QG_Z0 QG_Z1 QG_Z2 QG_Z3 QG_Z4 QG_Z5, QG_R0 QG_R1 QG_R2 QG_R3 QG_R4 QG_R5,
                      QG_S0 QG_S1 QG_S2 QG_S3 QG_S4 QG_S5); break;
    case 5: QG_KERNEL(QG_Z0 QG_Z1 QG_Z2 QG_Z3 QG_Z4, QG_R0 QG_R1 QG_R2 QG_R3 QG_R4,
                      QG_S0 QG_S1 QG_S2 QG_S3 QG_S4); break;
    case 4: QG_KERNEL(QG_Z0 QG_Z1 QG_Z2 QG_Z3, QG_R0 QG_R1 QG_R2 QG_R3, QG_S0 QG_S1 QG_S2 QG_S3); break;
    case 3: QG_KERNEL(QG_Z0 QG_Z1 QG_Z2, QG_R0 QG_R1 QG_R2, QG_S0 QG_S1 QG_S2); break;
    case 2: QG_KERNEL(QG_Z0 QG_Z1, QG_R0 QG_R1, QG_S0 QG_S1); break;
    default: QG_KERNEL(QG_Z0, QG_R0, QG_S0); break;
  }
}

void StoreTile(const GemmOutput& out, const int32_t* acc, int rows, int64_t row0, int col0, int cols) {
  switch (out.kind) {
    case OutKind::kInt8:
      if (out.q8->any_left_shift) return StoreQuant8<false, true>(out, acc, rows, row0, col0, cols);
      if (out.q8->half_range) return StoreQuant8<false, false, true, true>(out, acc, rows, row0, col0, cols);
      if (out.q8->bias_folded) return StoreQuant8<false, false, true>(out, acc, rows, row0, col0, cols);
      return StoreQuant8<false, false>(out, acc, rows, row0, col0, cols);
    case OutKind::kUInt8:
      if (out.q8->any_left_shift) return StoreQuant8<true, true>(out, acc, rows, row0, col0, cols);
      if (out.q8->half_range) return StoreQuant8<true, false, true, true>(out, acc, rows, row0, col0, cols);
      if (out.q8->bias_folded) return StoreQuant8<true, false, true>(out, acc, rows, row0, col0, cols);
      return StoreQuant8<true, false>(out, acc, rows, row0, col0, cols);
    case OutKind::kFloat: return StoreFloat(out, acc, rows, row0, col0, cols);
    case OutKind::kInt16: return StoreInt16(out, acc, rows, row0, col0, cols);
  }
}

namespace {
template <typename T, typename Widen>
void WidenSubImpl(const T* src, const T* src_end, int n, int32_t zero_point, int16_t* dst, Widen widen) {
  constexpr int kStep = 32 / static_cast<int>(sizeof(int16_t));  // 16 outputs per step
  const __m256i zp = _mm256_set1_epi16(static_cast<int16_t>(zero_point));
  int i = 0;
  for (; i + kStep <= n; i += kStep)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_sub_epi16(widen(src + i), zp));
  if (i < n) {
    if (src + i + kStep <= src_end) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_sub_epi16(widen(src + i), zp));
    } else {
      for (; i < n; ++i) dst[i] = static_cast<int16_t>(static_cast<int32_t>(src[i]) - zero_point);
    }
  }
}
template <typename T, typename Widen>
void WidenSubSegmentsImpl(const T* src, int64_t src_stride, int segments, int seg, const T* src_end,
                          int32_t zero_point, int16_t* dst, Widen widen) {
  for (int s = 0; s < segments; ++s)
    WidenSubImpl(src + s * src_stride, src_end, seg, zero_point, dst + static_cast<int64_t>(s) * seg, widen);
}

inline __m256i Widen8(const int8_t* p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i Widen8(const uint8_t* p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i Widen8(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

}  // namespace

void WidenSubSegments(const int8_t* src, int64_t src_stride, int segments, int seg, const int8_t* src_end,
                      int32_t zero_point, int16_t* dst) {
  WidenSubSegmentsImpl(src, src_stride, segments, seg, src_end, zero_point, dst,
                       [](const int8_t* p) { return Widen8(p); });
}
void WidenSubSegments(const uint8_t* src, int64_t src_stride, int segments, int seg, const uint8_t* src_end,
                      int32_t zero_point, int16_t* dst) {
  WidenSubSegmentsImpl(src, src_stride, segments, seg, src_end, zero_point, dst,
                       [](const uint8_t* p) { return Widen8(p); });
}
void WidenSubSegments(const int16_t* src, int64_t src_stride, int segments, int seg, const int16_t* src_end,
                      int32_t /*zero_point: 0 for int16*/, int16_t* dst) {
  WidenSubSegmentsImpl(src, src_stride, segments, seg, src_end, 0, dst, [](const int16_t* p) { return Widen8(p); });
}

void WidenSub(const int8_t* src, const int8_t* src_end, int n, int32_t zero_point, int16_t* dst) {
  WidenSubImpl(src, src_end, n, zero_point, dst, [](const int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  });
}

void WidenSub(const uint8_t* src, const uint8_t* src_end, int n, int32_t zero_point, int16_t* dst) {
  WidenSubImpl(src, src_end, n, zero_point, dst, [](const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  });
}

void WidenSub(const int16_t* src, const int16_t* src_end, int n, int32_t zero_point, int16_t* dst) {
  // int16 activations (16x8) have zero point 0: a plain copy.
  (void)zero_point;
  WidenSubImpl(src, src_end, n, 0, dst,
               [](const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); });
}

}  // namespace edgeopt::kernels::qgemm
