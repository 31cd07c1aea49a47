// AVX-512 binary elementwise runs: binary_runs.h on 16-lane zmm vectors (64 floats per
// iteration, the tail under a lane mask). On cores with full-width zmm (Zen 5) a zmm does twice
// a ymm's work per instruction.
// GCC 12's AVX-512 intrinsics start "undefined" vectors with a self-assignment that
// -Wuninitialized reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "kernels/binary_f32/binary_runs.h"
#include "kernels/common/vec_f32.h"

namespace edgeopt::kernels::binary {

void RunAvx512(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
               gemm::MinMax mm) {
  RunsOf<Avx512F32>(op, a, a_scalar, b, b_scalar, out, n, mm);
}

}  // namespace edgeopt::kernels::binary
