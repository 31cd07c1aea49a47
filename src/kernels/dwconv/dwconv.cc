// Depthwise weight packing and the portable depthwise path (any depth multiplier).
#include "kernels/dwconv/dwconv.h"

#include <algorithm>

#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels::dwconv {

AlignedFloats PackWeights(const float* filter, const float* bias, int kh, int kw, int c, int block) {
  const int taps = kh * kw;
  const size_t wblock = static_cast<size_t>(taps + 1) * block;
  AlignedFloats packed(static_cast<size_t>(ChannelBlocks(c, block)) * wblock);
  float* p = packed.data();
  for (int cb = 0; cb < ChannelBlocks(c, block); ++cb) {
    float* blk = p + cb * wblock;
    const int c0 = cb * block, n = std::min(block, c - c0);
    for (int j = 0; j < n; ++j) {
      blk[j] = bias ? bias[c0 + j] : 0.0f;
      for (int t = 0; t < taps; ++t) blk[(t + 1) * block + j] = filter[static_cast<size_t>(t) * c + c0 + j];
    }
  }
  return packed;
}

const VectorRows* SelectVectorRows(const rt::CpuFeatures& cpu, int c) {
  static constexpr VectorRows kAvx2{"avx2", "f32dw", kAvx2ChannelBlock, RowsAvx2};
  static constexpr VectorRows kAvx512{"avx512", "f32dw16", kAvx512ChannelBlock, RowsAvx512};
  if (cpu.has_avx512() && c > kAvx2ChannelBlock) return &kAvx512;
  return cpu.has_avx2_fma() ? &kAvx2 : nullptr;
}

void RunVectorRows(rt::ThreadPool& pool, const VectorRows& vec, const Geometry& g, const float* in,
                   const float* packed, float* out, gemm::MinMax mm) {
  const int rows = g.batch * g.oh;
  const int cbs = ChannelBlocks(g.c, vec.block);
  const int64_t row_work = int64_t{g.ow} * g.out_c() * g.kh * g.kw;
  const int64_t want = TaskCount(pool.num_threads(), int64_t{rows} * cbs,
                                 std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_work / cbs)));
  const int64_t row_tasks = std::min<int64_t>(rows, want);
  const int64_t cb_tasks = std::min<int64_t>(cbs, (want + row_tasks - 1) / row_tasks);
  RunTasks(&pool, row_tasks * cb_tasks, [&](int64_t t) {
    const int64_t rt = t / cb_tasks, ct = t % cb_tasks;
    vec.rows(g, in, packed, out, static_cast<int>(rows * rt / row_tasks), static_cast<int>(rows * (rt + 1) / row_tasks),
             static_cast<int>(cbs * ct / cb_tasks), static_cast<int>(cbs * (ct + 1) / cb_tasks), mm);
  });
}

void RowsGeneric(const Geometry& g, const float* in, const float* filter, const float* bias, float* out,
                 int row_begin, int row_end, gemm::MinMax mm) {
  const int oc_n = g.out_c(), dm = g.depth_multiplier;
  for (int row = row_begin; row < row_end; ++row) {
    const int b = row / g.oh, oy = row % g.oh;
    for (int ox = 0; ox < g.ow; ++ox) {
      float* o = out + (static_cast<ptrdiff_t>(row - g.out_row0) * g.ow + ox) * oc_n;
      for (int oc = 0; oc < oc_n; ++oc) o[oc] = bias ? bias[oc] : 0.0f;
      for (int ky = 0; ky < g.kh; ++ky) {
        const int iy = oy * g.sh - g.pad_top + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int kx = 0; kx < g.kw; ++kx) {
          const int ix = ox * g.sw - g.pad_left + kx * g.dw;
          if (ix < 0 || ix >= g.w) continue;
          const float* ip = in + ((static_cast<ptrdiff_t>(b) * g.h + iy - g.in_row0) * g.w + ix) * g.c;
          const float* wp = filter + (static_cast<size_t>(ky) * g.kw + kx) * oc_n;
          if (dm == 1) {
            for (int c = 0; c < oc_n; ++c) o[c] += ip[c] * wp[c];
          } else {
            for (int ic = 0; ic < g.c; ++ic)
              for (int m = 0; m < dm; ++m) o[ic * dm + m] += ip[ic] * wp[ic * dm + m];
          }
        }
      }
      for (int oc = 0; oc < oc_n; ++oc) o[oc] = std::min(std::max(o[oc], mm.min), mm.max);
    }
  }
}

}  // namespace edgeopt::kernels::dwconv
