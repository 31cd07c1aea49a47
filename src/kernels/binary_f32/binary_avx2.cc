// AVX2 binary elementwise runs: binary_runs.h on 8-lane ymm vectors (32 floats per iteration,
// vmaskmovps tail).
#include "kernels/binary_f32/binary_runs.h"
#include "kernels/common/vec_f32.h"

namespace edgeopt::kernels::binary {

void RunAvx2(Op op, const float* a, bool a_scalar, const float* b, bool b_scalar, float* out, size_t n,
             gemm::MinMax mm) {
  RunsOf<Avx2F32>(op, a, a_scalar, b, b_scalar, out, n, mm);
}

}  // namespace edgeopt::kernels::binary
