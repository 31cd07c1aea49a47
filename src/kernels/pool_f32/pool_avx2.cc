// AVX2 pooling: per output pixel, 32 channels at a time (four independent accumulators), then 16
// and 8 (two accumulators per 8 channels), then a masked tail.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <limits>

#include "kernels/pool_f32/pool_f32.h"

namespace edgeopt::kernels::pool {
namespace {

inline __m256i LaneMask(int n) {
  alignas(32) static const int32_t kTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kTable + 8 - n));
}

template <Kind K>
inline __m256 Combine(__m256 acc, __m256 x) {
  return K == Kind::kAverage ? _mm256_add_ps(acc, x) : _mm256_max_ps(acc, x);
}

template <Kind K>
inline __m256 Start() {
  return K == Kind::kAverage ? _mm256_setzero_ps() : _mm256_set1_ps(std::numeric_limits<float>::lowest());
}

template <Kind K>
void Rows(const Geometry& g, const float* in, float* out, int row_begin, int row_end, gemm::MinMax mm) {
  const __m256 vmin = _mm256_set1_ps(mm.min), vmax = _mm256_set1_ps(mm.max);
  const int tail = g.c % 8;
  const __m256i mask = LaneMask(tail ? tail : 8);
  const ptrdiff_t row_stride = static_cast<ptrdiff_t>(g.w) * g.c;
  const float* const task_end = out + static_cast<ptrdiff_t>(row_end) * g.ow * g.c;  // this task's last output + 1
  for (int row = row_begin; row < row_end; ++row) {
    const int b = row / g.oh, oy = row % g.oh;
    const int iy0 = oy * g.sh - g.pad_top;
    const int fy0 = std::max(0, -iy0), fy1 = std::min(g.fh, g.h - iy0);
    for (int ox = 0; ox < g.ow; ++ox) {
      const int ix0 = ox * g.sw - g.pad_left;
      const int fx0 = std::max(0, -ix0), fx1 = std::min(g.fw, g.w - ix0);
      const int count = std::max(0, fy1 - fy0) * std::max(0, fx1 - fx0);
      const __m256 scale = _mm256_set1_ps(count > 0 ? 1.0f / static_cast<float>(count) : 0.0f);
      const float* base = in + ((static_cast<ptrdiff_t>(b) * g.h + iy0 + fy0) * g.w + ix0 + fx0) * g.c;
      const int ny = fy1 - fy0, nx = fx1 - fx0;
      float* o = out + (static_cast<ptrdiff_t>(row) * g.ow + ox) * g.c;
      auto finish = [&](__m256 acc) {
        if (K == Kind::kAverage) acc = _mm256_mul_ps(acc, scale);
        return _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc));
      };
      int c = 0;
      for (; c + 32 <= g.c; c += 32) {
        __m256 a0 = Start<K>(), a1 = a0, a2 = a0, a3 = a0;
        for (int y = 0; y < ny; ++y)
          for (int x = 0; x < nx; ++x) {
            const float* p = base + y * row_stride + static_cast<ptrdiff_t>(x) * g.c + c;
            a0 = Combine<K>(a0, _mm256_loadu_ps(p));
            a1 = Combine<K>(a1, _mm256_loadu_ps(p + 8));
            a2 = Combine<K>(a2, _mm256_loadu_ps(p + 16));
            a3 = Combine<K>(a3, _mm256_loadu_ps(p + 24));
          }
        _mm256_storeu_ps(o + c, finish(a0));
        _mm256_storeu_ps(o + c + 8, finish(a1));
        _mm256_storeu_ps(o + c + 16, finish(a2));
        _mm256_storeu_ps(o + c + 24, finish(a3));
      }
      // Fewer than 32 channels left: 16 and then 8 at a time, each chunk with two accumulators
      // (even and odd window columns) so that a long window (a global pool) is not one chain.
      for (; c + 16 <= g.c; c += 16) {
        __m256 a0 = Start<K>(), a1 = a0, b0 = a0, b1 = a0;
        for (int y = 0; y < ny; ++y) {
          const float* p = base + y * row_stride + c;
          int x = 0;
          for (; x + 2 <= nx; x += 2, p += 2 * g.c) {
            a0 = Combine<K>(a0, _mm256_loadu_ps(p));
            b0 = Combine<K>(b0, _mm256_loadu_ps(p + 8));
            a1 = Combine<K>(a1, _mm256_loadu_ps(p + g.c));
            b1 = Combine<K>(b1, _mm256_loadu_ps(p + g.c + 8));
          }
          if (x < nx) {
            a0 = Combine<K>(a0, _mm256_loadu_ps(p));
            b0 = Combine<K>(b0, _mm256_loadu_ps(p + 8));
          }
        }
        _mm256_storeu_ps(o + c, finish(Combine<K>(a0, a1)));
        _mm256_storeu_ps(o + c + 8, finish(Combine<K>(b0, b1)));
      }
      for (; c + 8 <= g.c; c += 8) {
        __m256 a0 = Start<K>(), a1 = a0;
        for (int y = 0; y < ny; ++y) {
          const float* p = base + y * row_stride + c;
          int x = 0;
          for (; x + 2 <= nx; x += 2, p += 2 * g.c) {
            a0 = Combine<K>(a0, _mm256_loadu_ps(p));
            a1 = Combine<K>(a1, _mm256_loadu_ps(p + g.c));
          }
          if (x < nx) a0 = Combine<K>(a0, _mm256_loadu_ps(p));
        }
        _mm256_storeu_ps(o + c, finish(Combine<K>(a0, a1)));
      }
      if (tail) {
        __m256 a0 = Start<K>();
        for (int y = 0; y < ny; ++y)
          for (int x = 0; x < nx; ++x)
            a0 = Combine<K>(a0, _mm256_maskload_ps(base + y * row_stride + static_cast<ptrdiff_t>(x) * g.c + c, mask));
        // A masked store (vmaskmovps) is slow on AMD cores; all 8 lanes may be stored when the
        // extra ones land in later output pixels of this task, which are written after.
        if (o + c + 8 <= task_end) {
          _mm256_storeu_ps(o + c, finish(a0));
        } else {
          _mm256_maskstore_ps(o + c, mask, finish(a0));
        }
      }
    }
  }
}

}  // namespace

void RowsAvx2(Kind kind, const Geometry& g, const float* in, float* out, int row_begin, int row_end, gemm::MinMax mm) {
  if (kind == Kind::kAverage)
    Rows<Kind::kAverage>(g, in, out, row_begin, row_end, mm);
  else
    Rows<Kind::kMax>(g, in, out, row_begin, row_end, mm);
}

}  // namespace edgeopt::kernels::pool
