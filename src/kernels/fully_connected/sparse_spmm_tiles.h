// The SpMM of sparse_f32.h over tiles of A's rows, for one vector ISA (V): shared by the AVX2
// and AVX-512 kernels (sparse_f32_avx2.cc, sparse_f32_avx512.cc), each of which includes it
// with its own V. Everything here has internal linkage, so the two instantiations, compiled with
// different target flags, never stand in for each other at link time. Include only from those.
//
// V provides: Vec (float vector of kLanes lanes), kRows (rows per tile, a multiple of kLanes,
// at most 4 vectors), Set1 / Zero / Load / Store / Fma / Add / Clamp, and
//   PackTile(g, m0, mr, K, at): rows m0 .. m0 + mr of A into at[k * kRows + r], the rows past
//       mr up to a whole vector zero;
//   StoreTile(ct, nb, mr, c, ldc): ct[j * kRows + r] (nb <= kLanes columns, mr rows) into C's
//       rows from c (columns c[0 .. nb)).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/fully_connected/sparse_f32.h"

namespace edgeopt::kernels::sparse {
namespace {

// One output column n over the tile: out[0 .. kLanes NV) = clamp(bias + sum_j val[j] * at[col[j]][..]).
template <typename V, int NV>
inline void SpmmColumn(const float* at, const int32_t* col, const float* val, int count, float bias,
                       typename V::Vec lo, typename V::Vec hi, float* out) {
  using Vec = typename V::Vec;
  Vec a0[NV], a1[NV];
  for (int v = 0; v < NV; ++v) {
    a0[v] = V::Set1(bias);
    a1[v] = V::Zero();
  }
  int j = 0;
  // Two nonzeros per step into separate accumulators: 2 NV independent FMA chains.
  for (; j + 2 <= count; j += 2) {
    const float* p0 = at + static_cast<int64_t>(col[j]) * V::kRows;
    const float* p1 = at + static_cast<int64_t>(col[j + 1]) * V::kRows;
    const Vec w0 = V::Set1(val[j]);
    const Vec w1 = V::Set1(val[j + 1]);
    for (int v = 0; v < NV; ++v) {
      a0[v] = V::Fma(w0, V::Load(p0 + V::kLanes * v), a0[v]);
      a1[v] = V::Fma(w1, V::Load(p1 + V::kLanes * v), a1[v]);
    }
  }
  if (j < count) {
    const float* p0 = at + static_cast<int64_t>(col[j]) * V::kRows;
    const Vec w0 = V::Set1(val[j]);
    for (int v = 0; v < NV; ++v) a0[v] = V::Fma(w0, V::Load(p0 + V::kLanes * v), a0[v]);
  }
  for (int v = 0; v < NV; ++v) V::Store(out + V::kLanes * v, V::Clamp(V::Add(a0[v], a1[v]), lo, hi));
}

// Columns n0 .. n0 + nb of the tile into ct[j * kRows + r].
template <typename V, int NV>
void SpmmColumns(const CsrF32& w, const float* at, const GemmArgs& g, int n0, int nb, typename V::Vec lo,
                 typename V::Vec hi, float* ct) {
  for (int j = 0; j < nb; ++j) {
    const int n = n0 + j;
    const int32_t b = w.row_start[n];
    SpmmColumn<V, NV>(at, w.col.data() + b, w.val.data() + b, w.row_start[n + 1] - b, g.bias ? g.bias[n] : 0.0f, lo,
                      hi, ct + j * V::kRows);
  }
}

// Rows [m_begin, m_end): per tile, A packed once, then kLanes output columns at a time computed
// into the column block at the scratch's end and stored into C. scratch: kRows * K floats for the
// packed tile, then kLanes * kRows for the column block.
template <typename V>
void SpmmTiles(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end, float* scratch) {
  const int k_total = w.cols, n_total = w.rows;
  float* at = scratch;
  float* ct = scratch + static_cast<int64_t>(V::kRows) * k_total;
  const typename V::Vec lo = V::Set1(g.lo), hi = V::Set1(g.hi);
  for (int m0 = m_begin; m0 < m_end; m0 += V::kRows) {
    const int mr = std::min(V::kRows, m_end - m0);
    V::PackTile(g, m0, mr, k_total, at);
    float* c = g.c + static_cast<int64_t>(m0) * g.ldc;
    const int nv = (mr + V::kLanes - 1) / V::kLanes;
    for (int n0 = 0; n0 < n_total; n0 += V::kLanes) {
      const int nb = std::min(V::kLanes, n_total - n0);
      switch (nv) {
        case 1: SpmmColumns<V, 1>(w, at, g, n0, nb, lo, hi, ct); break;
        case 2: SpmmColumns<V, 2>(w, at, g, n0, nb, lo, hi, ct); break;
        case 3: SpmmColumns<V, 3>(w, at, g, n0, nb, lo, hi, ct); break;
        default: SpmmColumns<V, 4>(w, at, g, n0, nb, lo, hi, ct); break;
      }
      V::StoreTile(ct, nb, mr, c + n0, g.ldc);
    }
  }
}

// The scalar parts of PackTile: rows [r0, mr) of the tile (after the transposed blocks), and
// zeros for rows [mr, padded).
inline void PackTileRest(const float* const* rows, int r0, int mr, int padded, int k_total, int tile_rows, float* at) {
  for (int k = 0; k < k_total; ++k) {
    float* o = at + static_cast<int64_t>(k) * tile_rows;
    for (int r = r0; r < mr; ++r) o[r] = rows[r][k];
    for (int r = mr; r < padded; ++r) o[r] = 0.0f;
  }
}

// The scalar part of StoreTile: rows [r0, mr).
inline void StoreTileRest(const float* ct, int nb, int r0, int mr, int tile_rows, float* c, int64_t ldc) {
  for (int r = r0; r < mr; ++r)
    for (int j = 0; j < nb; ++j) c[r * ldc + j] = ct[j * tile_rows + r];
}

}  // namespace
}  // namespace edgeopt::kernels::sparse
