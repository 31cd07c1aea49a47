// In-register work on 16 vectors of 16 lanes for the AVX-512 files (include only from files
// compiled with AVX-512 flags: names containing "avx512"): a 16x16 transpose, and the 16 lane
// sums of 16 vectors at once.
#pragma once

#include <immintrin.h>

namespace edgeopt::kernels {

// In-register 16x16 transpose: afterwards v[c] lane r = (before) v[r] lane c.
inline void Transpose16(__m512* v) {
  // t[2i], t[2i + 1]: per 128-bit lane L, columns 4L, 4L + 1 / 4L + 2, 4L + 3 of rows 2i, 2i + 1.
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(v[i], v[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(v[i], v[i + 1]);
  }
  // u[j][m]: per 128-bit lane L, column 4L + m of rows 4j .. 4j + 3.
  __m512 u[4][4];
  for (int j = 0; j < 4; ++j) {
    const __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * j + 1]), d = _mm512_castps_pd(t[4 * j + 3]);
    u[j][0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[j][1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[j][2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    u[j][3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  // Column 4L + m: lane L of u[0][m] .. u[3][m] (a 4x4 transpose of 128-bit lanes).
  for (int m = 0; m < 4; ++m) {
    const __m512 p0 = _mm512_shuffle_f32x4(u[0][m], u[1][m], 0x44), p1 = _mm512_shuffle_f32x4(u[0][m], u[1][m], 0xEE);
    const __m512 p2 = _mm512_shuffle_f32x4(u[2][m], u[3][m], 0x44), p3 = _mm512_shuffle_f32x4(u[2][m], u[3][m], 0xEE);
    v[m] = _mm512_shuffle_f32x4(p0, p2, 0x88);
    v[4 + m] = _mm512_shuffle_f32x4(p0, p2, 0xDD);
    v[8 + m] = _mm512_shuffle_f32x4(p1, p3, 0x88);
    v[12 + m] = _mm512_shuffle_f32x4(p1, p3, 0xDD);
  }
}

// Lane p of the result: the sum, by add(a, b), of v[p]'s 16 lanes. Four levels of pairwise
// shuffles and adds leave vector 4 d + k's sum in lane 4 k + d; one permute orders them. Integer
// lanes go through it bit-cast to float registers with an integer add.
template <typename Add>
inline __m512 ReduceLanes16(const __m512* v, Add add) {
  __m512 c[8], e[4], g[2];
  for (int i = 0; i < 8; ++i)  // 128-bit halves: [a0 + a2, a1 + a3, b0 + b2, b1 + b3]
    c[i] = add(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // lane k: the 4-lane partial of vector 4 i + k
    e[i] = add(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88), _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i) {
    const __m512d a = _mm512_castps_pd(e[2 * i]), b = _mm512_castps_pd(e[2 * i + 1]);
    g[i] = add(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  const __m512 k = add(_mm512_shuffle_ps(g[0], g[1], 0x88), _mm512_shuffle_ps(g[0], g[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, k);
}

}  // namespace edgeopt::kernels
