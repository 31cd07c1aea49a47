// AVX2 float32 bilinear rows: bilinear_row.h on 8-lane ymm vectors; the channel tail uses
// vmaskmovps (masked-off lanes are neither read nor written).
#include <immintrin.h>

#include "kernels/common/vec_f32.h"
#include "kernels/resize/bilinear_row.h"

namespace edgeopt::kernels::resize {

BilinearRowFn BilinearRowAvx2() { return BilinearRow<Avx2F32>; }
BilinearRowInt8Fn BilinearRowInt8Avx2() { return BilinearRowInt8; }

}  // namespace edgeopt::kernels::resize
