// AVX-512 VNNI dot products for the hybrid kernels (hybrid_dot.h): tiles of up to 8 rows x 32
// units (1-2 rows x 64), one weight load per block and one broadcast per row for each group of 4
// depths, then the float output stage.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/hybrid/hybrid_dot.h"

namespace edgeopt::kernels::hybrid {
namespace {

// acc += a (unsigned bytes) · w (signed bytes), four products per 32-bit lane. In asm: GCC 12
// copies the accumulator around each _mm512_dpbusd_epi32 (a register move per product).
inline void Dpbusd(__m512i& acc, __m512i a, __m512i w) { asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w)); }

// The products of MR rows x NB consecutive blocks starting at block j, then the output stage
// (hybrid_dot.h), stored as floats. The MR·NB accumulators are independent chains, enough of them
// to hide vpdpbusd's latency. They start at -(128 + zp)·Σw, so they end at sum - (128 + zp)·Σw:
// the same integers modulo 2^32 as subtracting at the end (the reference's WrapToInt32).
template <int MR, int NB>
void TileFloat(const PackedWeights& p, const uint8_t* a, size_t a_stride, int j, const OutputStage& os, float* out,
               size_t out_stride) {
  const int groups = p.kp / 4;
  const size_t block_bytes = static_cast<size_t>(p.kp) * kUnits;
  const int8_t* w = p.w.data() + static_cast<size_t>(j) * block_bytes;
  const size_t u0 = static_cast<size_t>(j) * kUnits;
  __m512i acc[MR][NB];
  if (os.row_zero_point) {
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i neg_zp = _mm512_set1_epi32(-(128 + os.row_zero_point[r]));
      #pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_mullo_epi32(neg_zp, _mm512_loadu_si512(p.sums.data() + u0 + b * kUnits));
    }
  } else {
    const __m512i neg_zp = _mm512_set1_epi32(-(128 + os.zero_point));
    #pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) {
      const __m512i start = _mm512_mullo_epi32(neg_zp, _mm512_loadu_si512(p.sums.data() + u0 + b * kUnits));
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) acc[r][b] = start;
    }
  }
  for (int g = 0; g < groups; ++g) {
    __m512i wv[NB];
    #pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(w + b * block_bytes + static_cast<size_t>(g) * 64);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * a_stride + static_cast<size_t>(g) * 4, 4);
      const __m512i av = _mm512_set1_epi32(four);
      #pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) Dpbusd(acc[r][b], av, wv[b]);
    }
  }
  const __m512 lo = _mm512_set1_ps(os.lo), hi = _mm512_set1_ps(os.hi);
  #pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    const size_t ub = u0 + b * kUnits;
    const __m512 bias = _mm512_loadu_ps(os.bias + ub);
    const int left = p.n - static_cast<int>(ub);
    const __mmask16 m = left >= kUnits ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 scale = _mm512_loadu_ps(os.scale + r * os.scale_stride + ub);
      // The product is not fused into the bias addition (kept apart by the asm barrier).
      __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][b]), scale);
      asm("" : "+v"(prod));
      // std::max(v, lo) is (v < lo ? lo : v), vmaxps(lo, v) the same (NaN stays), likewise min.
      const __m512 o = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(prod, bias)));
      _mm512_mask_storeu_ps(out + r * out_stride + ub, m, o);
    }
  }
}

// MR rows x blocks [j0, j1): pairs of blocks (four when the rows are few), then the rest.
template <int MR>
void Tiles(const PackedWeights& p, const uint8_t* a, size_t a_stride, int j0, int j1, const OutputStage& os,
           float* out, size_t out_stride) {
  int j = j0;
  if constexpr (MR <= 2) {
    for (; j + 4 <= j1; j += 4) TileFloat<MR, 4>(p, a, a_stride, j, os, out, out_stride);
  }
  for (; j + 2 <= j1; j += 2) TileFloat<MR, 2>(p, a, a_stride, j, os, out, out_stride);
  if (j < j1) TileFloat<MR, 1>(p, a, a_stride, j, os, out, out_stride);
}

}  // namespace

void DotVnniFloat(const PackedWeights& p, const uint8_t* a, size_t a_stride, int rows, int j0, int j1,
                  const OutputStage& os, float* out, size_t out_stride) {
  // The stage of the rows from r on (per-row zero points and scales move along).
  auto from = [&](int r) {
    OutputStage o = os;
    if (o.row_zero_point) o.row_zero_point += r;
    o.scale += r * o.scale_stride;
    return o;
  };
  int r = 0;
  for (; r + 8 <= rows; r += 8) Tiles<8>(p, a + r * a_stride, a_stride, j0, j1, from(r), out + r * out_stride, out_stride);
  if (rows - r >= 4) {
    Tiles<4>(p, a + r * a_stride, a_stride, j0, j1, from(r), out + r * out_stride, out_stride);
    r += 4;
  }
  if (rows - r >= 2) {
    Tiles<2>(p, a + r * a_stride, a_stride, j0, j1, from(r), out + r * out_stride, out_stride);
    r += 2;
  }
  if (rows - r >= 1) Tiles<1>(p, a + r * a_stride, a_stride, j0, j1, from(r), out + r * out_stride, out_stride);
}

}  // namespace edgeopt::kernels::hybrid
