// AVX-512 float32 bilinear rows: bilinear_row.h on 16-lane zmm vectors, masked channel tails.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/resize/bilinear_row.h"

namespace edgeopt::kernels::resize {
namespace {

// The vertical blends of the two input columns output column `col` reads (left, right), computed
// again only when those columns change from the previous pixel's (*x0, *x1): an upsampling by f
// shares them between about f neighbouring pixels.
template <typename T, typename Load, typename Vertical>
inline void UpdateBlends(const BilinearColumnQ& col, const T* r0, const T* r1, const Load& load, const Vertical& vertical,
                         int64_t* x0, int64_t* x1, __m512i* left, __m512i* right) {
  if (col.x0 != *x0) {
    *x0 = col.x0;
    *left = vertical(load(r0 + *x0), load(r1 + *x0));
  }
  if (col.x1 != *x1) {
    *x1 = col.x1;
    *right = vertical(load(r0 + *x1), load(r1 + *x1));
  }
}

// The int8 row (resize.h) on 16 channels at a time in int32 lanes, masked channel tails (a
// plain loop vectorizes over 64 int8 lanes and leaves depths below 64 to scalar code).
void BilinearRowInt8Zmm(const int8_t* r0, const int8_t* r1, const BilinearColumnQ* cols, int32_t out_w, int32_t depth,
                        int32_t dy, int8_t* out) {
  const __m512i wy0 = _mm512_set1_epi32(1024 - dy), wy1 = _mm512_set1_epi32(dy);
  const __m512i half = _mm512_set1_epi32(1 << 19);
  // The same arithmetic on 16 int32 lanes: vertical blends of the left and right input columns
  // (a00 with a10, a01 with a11), their horizontal blend v, and v / 2^20 rounded half away from
  // zero (then truncated toward zero) as bytes.
  auto vertical = [&](__m512i top, __m512i bottom) {
    return _mm512_add_epi32(_mm512_mullo_epi32(top, wy0), _mm512_mullo_epi32(bottom, wy1));
  };
  // |v| < 2^28: sign(v) * ((|v| + 2^19) >> 20) is floor((v + 2^19 - [v < 0]) / 2^20), i.e. the
  // arithmetic shift of v + 2^19 + (v >> 31).
  auto finish = [&](__m512i left, __m512i right, __m512i wx0, __m512i wx1) {
    const __m512i v = _mm512_add_epi32(_mm512_mullo_epi32(left, wx0), _mm512_mullo_epi32(right, wx1));
    const __m512i r = _mm512_srai_epi32(_mm512_add_epi32(_mm512_add_epi32(v, half), _mm512_srai_epi32(v, 31)), 20);
    return _mm512_cvtepi32_epi8(r);  // keeps the low byte, as the cast
  };
  int32_t x = 0;
  if (depth <= 8) {
    // Two output pixels per vector (lanes 0..7 and 8..15), half the steps for narrow rows.
    const auto m8 = static_cast<__mmask16>((1u << depth) - 1u);
    auto load2 = [&](const int8_t* r, int64_t oa, int64_t ob) {
      if (depth == 8 && ob == oa + 8) return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + oa)));
      return _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(_mm_maskz_loadu_epi8(m8, r + oa), _mm_maskz_loadu_epi8(m8, r + ob)));
    };
    // Vertical blends of input columns j (lanes 0..7) and j + 1 (8..15) for a pixel whose right
    // column is its left one's neighbour (all but clamped edges): computed once per j and kept,
    // since neighbouring output pixels of an upsampling read the same columns.
    const __m512i k1024 = _mm512_set1_epi32(1024);
    int64_t pair_x0 = -1;
    __m512i pair_v = _mm512_setzero_si512();
    auto pair = [&](int64_t x0) {
      if (x0 != pair_x0) {
        pair_v = vertical(load2(r0, x0, x0 + depth), load2(r1, x0, x0 + depth));
        pair_x0 = x0;
      }
      return pair_v;
    };
    for (; x + 2 <= out_w; x += 2, out += 2 * depth) {
      const BilinearColumnQ& ca = cols[x];
      const BilinearColumnQ& cb = cols[x + 1];
      const __m512i wx1 = _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32(ca.dx), _mm512_set1_epi32(cb.dx));
      const __m512i wx0 = _mm512_sub_epi32(k1024, wx1);
      __m128i bytes;
      if (ca.x1 == ca.x0 + depth && cb.x1 == cb.x0 + depth) {
        const __m512i va = pair(ca.x0), vb = pair(cb.x0);
        // Left columns: the lower halves of both pairs; right columns: the upper halves.
        bytes = finish(_mm512_shuffle_i64x2(va, vb, 0x44), _mm512_shuffle_i64x2(va, vb, 0xEE), wx0, wx1);
      } else {
        bytes = finish(vertical(load2(r0, ca.x0, cb.x0), load2(r1, ca.x0, cb.x0)),
                       vertical(load2(r0, ca.x1, cb.x1), load2(r1, ca.x1, cb.x1)), wx0, wx1);
      }
      if (depth == 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
      } else {
        _mm_mask_storeu_epi8(out, m8, bytes);
        _mm_mask_storeu_epi8(out + depth, m8, _mm_srli_si128(bytes, 8));
      }
    }
  }
  if (x == out_w) return;
  // Per 16-channel chunk, the output pixels left to right. The vertical blends of the two input
  // columns a pixel reads (left, right) are computed again only when those columns change: an
  // upsampling by f shares them between about f neighbouring pixels.
  for (int32_t c = 0; c < depth; c += 16) {
    const __mmask16 m = depth - c >= 16 ? static_cast<__mmask16>(0xffff)
                                        : static_cast<__mmask16>((1u << (depth - c)) - 1u);
    auto load = [&](const int8_t* p) { return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p + c)); };
    __m512i left = _mm512_setzero_si512(), right = left;
    int64_t x0 = -1, x1 = -1;
    int8_t* o = out + c;
    for (int32_t xi = x; xi < out_w; ++xi, o += depth) {
      const BilinearColumnQ& col = cols[xi];
      UpdateBlends(col, r0, r1, load, vertical, &x0, &x1, &left, &right);
      _mm_mask_storeu_epi8(o, m, finish(left, right, _mm512_set1_epi32(1024 - col.dx), _mm512_set1_epi32(col.dx)));
    }
  }
}

// The int16 row (resize.h): per 16-channel chunk, the vertical blends in int32 lanes (shared by
// neighbouring pixels as in the int8 row), the horizontal blend of each half in int64 lanes,
// v / 2^20 rounded half away from zero, and the low 16 bits (the reference's cast).
void BilinearRowInt16Zmm(const int16_t* r0, const int16_t* r1, const BilinearColumnQ* cols, int32_t out_w,
                         int32_t depth, int32_t dy, int16_t* out) {
  const __m512i wy0 = _mm512_set1_epi32(1024 - dy), wy1 = _mm512_set1_epi32(dy);
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 19);
  auto vertical = [&](__m512i top, __m512i bottom) {
    return _mm512_add_epi32(_mm512_mullo_epi32(top, wy0), _mm512_mullo_epi32(bottom, wy1));
  };
  // 8 outputs from 8 int32 lefts / rights.
  auto finish8 = [&](__m256i left, __m256i right, __m512i wx0, __m512i wx1) {
    const __m512i v = _mm512_add_epi64(_mm512_mul_epi32(_mm512_cvtepi32_epi64(left), wx0),
                                       _mm512_mul_epi32(_mm512_cvtepi32_epi64(right), wx1));
    const __m512i magnitude = _mm512_srai_epi64(_mm512_add_epi64(_mm512_abs_epi64(v), half), 20);
    const __mmask8 positive = _mm512_cmpgt_epi64_mask(v, _mm512_setzero_si512());
    const __m512i r = _mm512_mask_mov_epi64(_mm512_sub_epi64(_mm512_setzero_si512(), magnitude), positive, magnitude);
    return _mm512_cvtepi64_epi16(r);  // the low 16 bits, as the cast
  };
  for (int32_t c = 0; c < depth; c += 16) {
    const __mmask16 m = depth - c >= 16 ? static_cast<__mmask16>(0xffff)
                                        : static_cast<__mmask16>((1u << (depth - c)) - 1u);
    const auto m_lo = static_cast<__mmask8>(m & 0xff), m_hi = static_cast<__mmask8>(m >> 8);
    auto load = [&](const int16_t* p) { return _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, p + c)); };
    __m512i left = _mm512_setzero_si512(), right = left;
    int64_t x0 = -1, x1 = -1;
    int16_t* o = out + c;
    for (int32_t xi = 0; xi < out_w; ++xi, o += depth) {
      const BilinearColumnQ& col = cols[xi];
      UpdateBlends(col, r0, r1, load, vertical, &x0, &x1, &left, &right);
      const __m512i wx0 = _mm512_set1_epi64(1024 - col.dx), wx1 = _mm512_set1_epi64(col.dx);
      _mm_mask_storeu_epi16(o, m_lo, finish8(_mm512_castsi512_si256(left), _mm512_castsi512_si256(right), wx0, wx1));
      if (m_hi)
        _mm_mask_storeu_epi16(o + 8, m_hi,
                              finish8(_mm512_extracti64x4_epi64(left, 1), _mm512_extracti64x4_epi64(right, 1), wx0, wx1));
    }
  }
}

}  // namespace

BilinearRowInt16Fn BilinearRowInt16Avx512() { return BilinearRowInt16Zmm; }
namespace {

// Up to 8 channels on 8-lane vectors (AVX-512 VL masks), the same bits: a 16-lane pass did every
// pixel as a masked tail. One row function alternated in one process, 2x upsampling: 128x128x8
// (MediaPipe pose's segmentation branch) 257 -> 147 us, 64x64x8 0.61x, 1 to 6 channels
// 0.78-0.82x.
void BilinearRowZmm(const float* r0, const float* r1, const BilinearColumn* cols, int32_t out_w, int32_t depth,
                    float fy, float* out) {
  if (depth <= 8) BilinearRow<Avx512VlF32>(r0, r1, cols, out_w, depth, fy, out);
  else BilinearRow<Avx512F32>(r0, r1, cols, out_w, depth, fy, out);
}

}  // namespace

BilinearRowFn BilinearRowAvx512() { return BilinearRowZmm; }
BilinearRowInt8Fn BilinearRowInt8Avx512() { return BilinearRowInt8Zmm; }

}  // namespace edgeopt::kernels::resize
