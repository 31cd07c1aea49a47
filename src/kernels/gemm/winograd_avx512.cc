// AVX-512 F(2×2, 3×3) transforms: winograd_tiles.h on 16-lane zmm vectors (masked last block).
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports at every inlined use (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/gemm/winograd_tiles.h"

namespace edgeopt::kernels::winograd {

void InputTilesAvx512(const TileGeometry& g, const float* in, int64_t t0, int n, float* u, size_t es) {
  InputTiles<Avx512F32>(g, in, t0, n, u, es);
}

void OutputTilesAvx512(const TileGeometry& g, const float* m, size_t es, const float* bias, int64_t t0, int n,
                       float* out, gemm::MinMax mm) {
  OutputTiles<Avx512F32>(g, m, es, bias, t0, n, out, mm);
}

}  // namespace edgeopt::kernels::winograd
