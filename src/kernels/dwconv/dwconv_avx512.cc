// AVX-512 depthwise convolution rows: the kernels of dwconv_rows.h on 16-lane zmm vectors
// (channel blocks of 16, masked loads and stores for the last block).
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment (__Y = __Y) that
// -Wuninitialized reports inside every inlined min/max (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/dwconv/dwconv_rows.h"

namespace edgeopt::kernels::dwconv {
namespace {

using Avx512Vec = Avx512F32;
static_assert(Avx512Vec::kLanes == kAvx512ChannelBlock);

}  // namespace

void RowsAvx512(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
                int cb_begin, int cb_end, gemm::MinMax mm) {
  RowsOf<Avx512Vec>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
