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
  const int64_t tiles = (g.m + kTileRows - 1) / kTileRows;
  const int threads = std::max(1, std::min<int>(pool.num_threads(), static_cast<int>(tiles)));
  const int64_t per_thread = Avx2ScratchFloats(w.cols);
  if (threads == 1) {
    SpmmAvx2(w, g, 0, g.m, scratch);
    return;
  }
  // Thread t takes a contiguous range of tiles and its own slice of the scratch.
  pool.RunOnAll([&](int t) {
    if (t >= threads) return;
    const int64_t tb = tiles * t / threads, te = tiles * (t + 1) / threads;
    const int mb = static_cast<int>(tb * kTileRows), me = static_cast<int>(std::min<int64_t>(g.m, te * kTileRows));
    if (mb < me) SpmmAvx2(w, g, mb, me, scratch + per_thread * t);
  });
}

double SparsityThreshold(int m, SparseKernel kernel) {
  // Measured with sparse_f32_bench.cc (one thread) against DenseGemmAvx2 and a dense AVX2 GEMV,
  // and with bench/micro/sparse_runtime_bench.cc against the runtime's fast dense kernels.
  // Portable: against the scalar reference loop.
  if (kernel == SparseKernel::kPortable) return 0.5;
  // Runtime benchmark on this 2-core AVX2 host, idle (bench/micro/sparse_runtime_bench.cc):
  // SpMV (1-2 rows) lost to the fast dense GEMV even at 90% on FC 1x1001x256, 1x640x128 and
  // 1x1024x1024 (0.45-0.99x), so it is kept for near-empty weights only; SpMM (1x1 conv,
  // batched FC) wins from 70% (1.2-1.5x at 70%, 1.8-3.8x at 90%; FC 8x1024x1024 0.94x at 70%).
  return m <= kSpmvMaxRows ? 0.97 : 0.7;
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
