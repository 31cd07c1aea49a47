// AVX2 + FMA F(2×2, 3×3) transforms: winograd_tiles.h on 8-lane ymm vectors.
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/gemm/winograd_tiles.h"

namespace edgeopt::kernels::winograd {

void InputTilesAvx2(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es) {
  InputTiles<Avx2F32>(g, in, t0, n, u, es);
}

void OutputTilesAvx2(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n,
                     float* out, gemm::MinMax mm) {
  OutputTiles<Avx2F32>(g, m, es, bias, t0, n, out, mm);
}

}  // namespace edgeopt::kernels::winograd
