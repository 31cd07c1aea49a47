// AVX2 + FMA depthwise convolution rows: the kernels of dwconv_rows.h on 8-lane ymm vectors.
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/dwconv/dwconv_rows.h"

namespace edgeopt::kernels::dwconv {
namespace {

using Avx2Vec = Avx2F32;
static_assert(Avx2Vec::kLanes == kAvx2ChannelBlock);

}  // namespace

void RowsAvx2(const Geometry& g, const float* in, const float* packed, float* out, int row_begin, int row_end,
              int cb_begin, int cb_end, gemm::MinMax mm) {
  RowsOf<Avx2Vec>(g, in, packed, out, row_begin, row_end, cb_begin, cb_end, mm);
}

}  // namespace edgeopt::kernels::dwconv
