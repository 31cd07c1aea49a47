// Non-overlapping transposed convolutions (stride = filter size, no padding: every output pixel
// gets exactly one tap, as in segmentation heads' 2x2 / stride-2 upsamplings) with at most 16
// products per input pixel (KH·KW·Cout <= 16), on AVX-512: the GEMM those take otherwise uses
// a few of its 16 columns and leaves a strided gather pass behind. Here 16 input pixels at a
// time become the lanes: their channels are transposed 16 x 16 in registers, each product n is
// one vector of 16 pixels built by multiply-adds with broadcast weights (starting from the bias),
// clamped, and written straight into the output rows (for KW·Cout = 1 one store, for 2 two
// interleaving permutes, else a 16 x 16 transpose and overlapping stores).
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "kernels/common/lanes16_avx512.h"
#include "kernels/conv/transpose_conv.h"

namespace edgeopt::kernels {
namespace {

// Input pixels [x0, x0 + np) of one input row, np <= 16; kN products per pixel.
template <int kN>
void TilePixels(const TransposeTiles& t, const float* in, int np, const float* w, const float* bias, float lo, float hi,
                float* out_rows, int64_t out_row_floats) {
  const int cin = t.cin;
  __m512 acc[16];  // the first kN used
  for (int n = 0; n < kN; ++n) acc[n] = _mm512_set1_ps(bias ? bias[n % t.cout] : 0.0f);
  for (int kb = 0; kb < cin; kb += 16) {
    const int kn = std::min(16, cin - kb);
    const __mmask16 km = static_cast<__mmask16>((1u << kn) - 1u);
    __m512 v[16];
    for (int p = 0; p < 16; ++p)
      v[p] = p < np ? _mm512_maskz_loadu_ps(km, in + static_cast<int64_t>(p) * cin + kb) : _mm512_setzero_ps();
    Transpose16(v);  // v[k]: channel kb + k of the 16 pixels
    const float* wk = w + kb;
    for (int k = 0; k < kn; ++k, ++wk)
      for (int n = 0; n < kN; ++n) acc[n] = _mm512_fmadd_ps(v[k], _mm512_set1_ps(wk[static_cast<int64_t>(n) * t.cin_padded]), acc[n]);
  }
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int n = 0; n < kN; ++n) acc[n] = _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc[n]));
  // Output row ky: pixel p's m = KW·Cout values (product ky·m + j at j) at p·m.
  const int m = t.kw * t.cout;
  for (int ky = 0; ky < t.kh; ++ky) {
    float* o = out_rows + ky * out_row_floats;
    // Product ky·m + j (< kN <= 16; clamped to the array for the compiler's bounds check).
    auto a = [&](int j) { return acc[std::min(ky * m + j, 15)]; };
    if (m == 1) {
      _mm512_mask_storeu_ps(o, static_cast<__mmask16>((1u << np) - 1u), a(0));
    } else if (m == 2) {
      const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      const int floats = 2 * np;
      _mm512_mask_storeu_ps(o, static_cast<__mmask16>((1u << std::min(16, floats)) - 1u),
                            _mm512_permutex2var_ps(a(0), first, a(1)));
      if (floats > 16)
        _mm512_mask_storeu_ps(o + 16, static_cast<__mmask16>((1u << (floats - 16)) - 1u),
                              _mm512_permutex2var_ps(a(0), second, a(1)));
    } else {
      __m512 v[16];
      for (int j = 0; j < 16; ++j) v[j] = j < m ? a(j) : _mm512_setzero_ps();
      Transpose16(v);  // v[p]: pixel p's m values, then zeros
      const __mmask16 mm = static_cast<__mmask16>((1u << m) - 1u);
      for (int p = 0; p < np; ++p) _mm512_mask_storeu_ps(o + p * m, mm, v[p]);
    }
  }
}

template <int kN>
void RowsOf(const TransposeTiles& t, const float* in, const float* w, const float* bias, float lo, float hi, float* out,
            int64_t r0, int64_t r1) {
  const int64_t in_row = static_cast<int64_t>(t.in_w) * t.cin;
  const int64_t out_row = static_cast<int64_t>(t.in_w) * t.kw * t.cout;  // floats per output row
  for (int64_t r = r0; r < r1; ++r) {  // input rows over all images; output rows r·KH ..
    const float* x = in + r * in_row;
    float* o = out + r * t.kh * out_row;
    for (int x0 = 0; x0 < t.in_w; x0 += 16)
      TilePixels<kN>(t, x + static_cast<int64_t>(x0) * t.cin, std::min(16, t.in_w - x0), w, bias, lo, hi,
                     o + static_cast<int64_t>(x0) * t.kw * t.cout, out_row);
  }
}

}  // namespace

void TransposeTilesRowsAvx512(const TransposeTiles& t, const float* in, const float* w, const float* bias, float lo,
                              float hi, float* out, int64_t r0, int64_t r1) {
  switch (t.kh * t.kw * t.cout) {
#define EDGEOPT_TILES_CASE(N) \
  case N: return RowsOf<N>(t, in, w, bias, lo, hi, out, r0, r1);
    EDGEOPT_TILES_CASE(1) EDGEOPT_TILES_CASE(2) EDGEOPT_TILES_CASE(3) EDGEOPT_TILES_CASE(4)
    EDGEOPT_TILES_CASE(5) EDGEOPT_TILES_CASE(6) EDGEOPT_TILES_CASE(7) EDGEOPT_TILES_CASE(8)
    EDGEOPT_TILES_CASE(9) EDGEOPT_TILES_CASE(10) EDGEOPT_TILES_CASE(11) EDGEOPT_TILES_CASE(12)
    EDGEOPT_TILES_CASE(13) EDGEOPT_TILES_CASE(14) EDGEOPT_TILES_CASE(15) EDGEOPT_TILES_CASE(16)
#undef EDGEOPT_TILES_CASE
    default: return;
  }
}

}  // namespace edgeopt::kernels

namespace edgeopt::kernels {

void TransposeRequantRowAvx512(const TransposeRequant& q, const int32_t* acc, int64_t pixels, void* out) {
  const int oc = q.oc;
  auto* o = static_cast<uint8_t*>(out);
  const __m512i zp = _mm512_set1_epi32(q.out_zp), lo = _mm512_set1_epi32(q.lo), hi = _mm512_set1_epi32(q.hi);
  const __m512i one = _mm512_set1_epi32(1), nudge = _mm512_set1_epi64(int64_t{1} << 30);
  for (int64_t px = 0; px < pixels; ++px) {
    const int32_t* a = acc + px * oc;
    for (int c = 0; c < oc; c += 16) {
      const __mmask16 k = oc - c >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (oc - c)) - 1);
      auto load = [&](const std::vector<int32_t>& v) { return _mm512_loadu_si512(v.data() + c); };
      // MultiplyByQuantizedMultiplier with each lane's multiplier and shifts.
      const __m512i x = _mm512_sllv_epi32(_mm512_add_epi32(_mm512_maskz_loadu_epi32(k, a + c), load(q.bias)), load(q.left));
      const __m512i m = load(q.mult);
      const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, m), nudge);
      const __m512i odd = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(m, 32)), nudge);
      const __m512i h = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
      const __m512i right = load(q.right);
      const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
      const __m512i threshold = _mm512_sub_epi32(_mm512_srli_epi32(mask, 1), _mm512_srai_epi32(h, 31));
      __m512i y = _mm512_srav_epi32(h, right);
      y = _mm512_mask_add_epi32(y, _mm512_cmpgt_epi32_mask(_mm512_and_si512(h, mask), threshold), y, one);
      y = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(y, zp), lo), hi);
      _mm512_mask_cvtepi32_storeu_epi8(o + px * oc + c, k, y);
    }
  }
}

}  // namespace edgeopt::kernels
