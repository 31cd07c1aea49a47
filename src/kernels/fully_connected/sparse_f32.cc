#include <algorithm>
#include <cmath>

#include "kernels/fully_connected/sparse_f32.h"

namespace edgeopt::kernels::sparse {

CsrF32 PackCsr(const float* w, int rows, int cols) {
  CsrF32 c;
  c.rows = rows;
  c.cols = cols;
  c.row_start.reserve(static_cast<size_t>(rows) + 1);
  c.row_start.push_back(0);
  for (int r = 0; r < rows; ++r) {
    const float* row = w + static_cast<int64_t>(r) * cols;
    for (int k = 0; k < cols; ++k) {
      if (row[k] == 0.0f) continue;
      c.col.push_back(k);
      c.val.push_back(row[k]);
    }
    c.row_start.push_back(static_cast<int32_t>(c.val.size()));
  }
  return c;
}

double ZeroFraction(const float* w, int64_t n) {
  if (n <= 0) return 0.0;
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) zeros += w[i] == 0.0f;
  return static_cast<double>(zeros) / static_cast<double>(n);
}

bool ZeroFractionAtLeast(const float* w, int64_t n, double fraction) {
  if (n <= 0) return fraction <= 0.0;
  const int64_t need = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(n)));
  if (need > n) return false;
  // Stop as soon as the non-zeros seen leave too few places for the zeros needed.
  const int64_t max_nonzeros = n - need;
  int64_t nonzeros = 0;
  for (int64_t i = 0; i < n; ++i)
    if (w[i] != 0.0f && ++nonzeros > max_nonzeros) return false;
  return true;
}

void SpmmPortable(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end) {
  for (int m = m_begin; m < m_end; ++m) {
    const float* a = g.row(m);
    float* c = g.c + static_cast<int64_t>(m) * g.ldc;
    for (int n = 0; n < w.rows; ++n) {
      float acc = g.bias ? g.bias[n] : 0.0f;
      for (int32_t j = w.row_start[n]; j < w.row_start[n + 1]; ++j) acc += w.val[j] * a[w.col[j]];
      c[n] = std::min(std::max(acc, g.lo), g.hi);
    }
  }
}

void RunSparseGemm(const CsrF32& w, const GemmArgs& g, SparseKernel kernel, rt::ThreadPool& pool, float* scratch) {
  if (g.m <= 0 || w.rows <= 0) return;
  if (kernel == SparseKernel::kPortable) {
    pool.ParallelFor(g.m, 1, [&](int64_t b, int64_t e) { SpmmPortable(w, g, static_cast<int>(b), static_cast<int>(e)); });
    return;
  }
  if (g.m <= kSpmvMaxRows) {
    // Split the output columns; each range handles every row.
    pool.ParallelFor(w.rows, 16, [&](int64_t b, int64_t e) {
      for (int m = 0; m < g.m; ++m) SpmvAvx2(w, g, m, static_cast<int>(b), static_cast<int>(e));
    });
    return;
  }
  const bool avx512 = kernel == SparseKernel::kAvx512;
  const int tile_rows = avx512 ? kTileRows512 : kTileRows;
  const auto spmm = [&](int mb, int me, float* s) {
    if (avx512)
      SpmmAvx512(w, g, mb, me, s);
    else
      SpmmAvx2(w, g, mb, me, s);
  };
  const int64_t tiles = (g.m + tile_rows - 1) / tile_rows;
  const int threads = std::max(1, std::min<int>(pool.num_threads(), static_cast<int>(tiles)));
  const int64_t per_thread = SpmmScratchFloats(kernel, w.cols);
  if (threads == 1) {
    spmm(0, g.m, scratch);
    return;
  }
  // Thread t takes a contiguous range of tiles and its own slice of the scratch.
  pool.RunOnAll([&](int t) {
    if (t >= threads) return;
    const int64_t tb = tiles * t / threads, te = tiles * (t + 1) / threads;
    const int mb = static_cast<int>(tb * tile_rows), me = static_cast<int>(std::min<int64_t>(g.m, te * tile_rows));
    if (mb < me) spmm(mb, me, scratch + per_thread * t);
  });
}

double SparsityThreshold(int m, int k, SparseKernel kernel) {
  // Measured with sparse_f32_bench.cc (one thread) against DenseGemmAvx2 and a dense AVX2 GEMV,
  // and with bench/micro/sparse_runtime_bench.cc against the runtime's fast dense kernels.
  // Portable: against the scalar reference loop.
  if (kernel == SparseKernel::kPortable) return 0.5;
  // SpMV (1-2 rows, AVX2 on both hosts) lost to the fast dense GEMV even at 90% on FC 1x1001x256,
  // 1x640x128 and 1x1024x1024 (0.45-0.99x), so it is kept for near-empty weights only.
  if (m <= kSpmvMaxRows) return 0.97;
  // AVX2 host (AVX2 dense kernels): SpMM (1x1 conv, batched FC) won from 70% (1.2-1.5x at 70%,
  // 1.8-3.8x at 90%; FC 8x1024x1024 0.94x at 70%).
  if (kernel == SparseKernel::kAvx2) return 0.7;
  // AVX-512 host (Zen 5, against the AVX-512 dense kernels, sparse_runtime_bench.cc): every
  // output column of a 64-row tile costs a fixed part (bias, clamps, stores, the transposes)
  // besides its K (1 - s) FMAs, so few input channels need more zeros: wins at 70% from K = 64
  // (784x64x64 1.19x, 196x128x128 1.09x, 49x256x256 1.15x, 196x512x512 1.08x, FC 32x512x512
  // 1.06x), at 80-85% for K = 32 (3136x32x32 0.96x / 1.02x, 576x128x32 1.07x / 1.12x), not even
  // at 95% for K = 16 (2304x64x16 0.98x); a fit of 0.52 + 10 / K, kept within [0.7, 0.97]. Fewer
  // than 16 rows leave the vectors part empty: FC 8x1024x1024 0.73x at 85%, 1.2x at 90%.
  double t = std::clamp(0.52 + 10.0 / std::max(k, 1), 0.7, 0.97);
  if (m < 16) t = std::max(t, 0.9);
  return t;
}

DensePackedF32 PackDense(const float* w, int n, int k) {
  DensePackedF32 p;
  p.n = n;
  p.k = k;
  const int panels = (n + 15) / 16;
  p.panels.assign(static_cast<size_t>(panels) * k * 16, 0.0f);
  for (int c = 0; c < n; ++c)
    for (int kk = 0; kk < k; ++kk)
      p.panels[(static_cast<size_t>(c / 16) * k + kk) * 16 + c % 16] = w[static_cast<int64_t>(c) * k + kk];
  return p;
}

}  // namespace edgeopt::kernels::sparse
