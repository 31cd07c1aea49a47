// Sparse float32 GEMM for constant weights with many exact zeros (pruned models): the
// computation of FULLY_CONNECTED and of 1x1 CONV_2D,
//   C[m, n] = clamp(bias[n] + sum_k A[m, k] * W[n, k], lo, hi),   W: [N, K] (OHWI with H = W = 1)
// with W kept as CSR (only its nonzeros). Used by the FULLY_CONNECTED and CONV_2D factories'
// sparse variants (sparse_op.cc, conv/sparse_conv1x1.cc; registered by register_sparse_f32.cc in
// front of the fast dense kernels), chosen at prepare time when the
// measured sparsity of the (constant) weights is high enough to beat dense kernels
// (PreferSparse; thresholds measured by sparse_f32_bench.cc).
//
// Kernels:
//   portable   row by row: for each nonzero of W[n, :], acc += w * A[m, k]
//   AVX2 SpMM  tiles of up to 32 rows of A transposed into [K][32] (8x8 AVX transposes), then for
//              each n and each nonzero: one broadcast of w and up to 4 FMAs over 32 rows; 8 values
//              of n are gathered in an [8][32] block and transposed back into C's rows
//   AVX-512 SpMM  the same on 16-lane vectors: tiles of up to 64 rows ([K][64], 16x16
//              transposes), up to 4 FMAs per nonzero over 64 rows, blocks of 16 values of n
//              (sparse_spmm_tiles.h holds the loop both SpMMs share)
//   AVX2 SpMV  one row of A (M = 1, 2): 8 nonzeros at a time, A gathered by column index
// Results differ from the dense reference only by summation order (zeros skipped).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace edgeopt::kernels::sparse {

// The nonzeros of a row-major [rows, cols] float matrix, row by row.
struct CsrF32 {
  int32_t rows = 0, cols = 0;
  std::vector<int32_t> row_start;  // rows + 1
  std::vector<int32_t> col;        // nnz
  std::vector<float> val;          // nnz
  int64_t nnz() const { return static_cast<int64_t>(val.size()); }
  double sparsity() const {
    const double n = static_cast<double>(rows) * cols;
    return n > 0 ? 1.0 - static_cast<double>(nnz()) / n : 0.0;
  }
  size_t bytes() const { return row_start.size() * 4 + col.size() * 4 + val.size() * 4; }
};

// Packs W; an element is a nonzero unless it compares equal to 0 (NaN is kept).
CsrF32 PackCsr(const float* w, int rows, int cols);
// Fraction of elements equal to 0.
double ZeroFraction(const float* w, int64_t n);
// Whether at least `fraction` of w[0..n) are zeros (ZeroFraction(w, n) >= fraction, for the
// fraction's ceiling count); stops early on dense data (after (1 - fraction) n non-zeros).
bool ZeroFractionAtLeast(const float* w, int64_t n, double fraction);

// One GEMM: rows of A are given by pointers (FC and 1x1 stride-1 conv: A + m * K; strided 1x1
// conv: every `stride`-th pixel), C is row-major with row stride ldc.
struct GemmArgs {
  int m = 0;
  const float* a = nullptr;  // row m at a + m * lda, unless row_of is set
  int64_t lda = 0;
  // Optional: the address of row m (strided convolution).
  const float* (*row_of)(const void* ctx, int m) = nullptr;
  const void* row_ctx = nullptr;
  const float* bias = nullptr;  // [N] or null
  float lo = -3.4e38f, hi = 3.4e38f;
  float* c = nullptr;
  int64_t ldc = 0;
  const float* row(int i) const { return row_of ? row_of(row_ctx, i) : a + static_cast<int64_t>(i) * lda; }
};

enum class SparseKernel { kPortable, kAvx2, kAvx512 };

// Rows per AVX2 tile and the scratch (floats, per thread) the AVX2 SpMM needs for K columns.
constexpr int kTileRows = 32;
inline int64_t Avx2ScratchFloats(int k) { return int64_t{kTileRows} * k + 8 * kTileRows + 16; }
// The same for the AVX-512 SpMM (64-row tiles, blocks of 16 columns).
constexpr int kTileRows512 = 64;
inline int64_t Avx512ScratchFloats(int k) { return int64_t{kTileRows512} * k + 16 * kTileRows512 + 16; }
// Scratch floats per thread of `kernel`'s SpMM for K columns (0: none).
inline int64_t SpmmScratchFloats(SparseKernel kernel, int k) {
  return kernel == SparseKernel::kAvx512 ? Avx512ScratchFloats(k)
         : kernel == SparseKernel::kAvx2 ? Avx2ScratchFloats(k)
                                         : 0;
}
// "portable", "avx2" or "avx512" (the variant's suffix).
inline const char* KernelName(SparseKernel kernel) {
  return kernel == SparseKernel::kAvx512 ? "avx512" : kernel == SparseKernel::kAvx2 ? "avx2" : "portable";
}
// The fastest kernel this CPU runs.
inline SparseKernel BestKernel(const rt::CpuFeatures& cpu) {
  return cpu.has_avx512() ? SparseKernel::kAvx512 : cpu.has_avx2_fma() ? SparseKernel::kAvx2 : SparseKernel::kPortable;
}

// Portable: rows [m_begin, m_end).
void SpmmPortable(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end);
// AVX2 (only call when the CPU has AVX2+FMA): rows [m_begin, m_end) in tiles; `scratch` holds
// Avx2ScratchFloats(K) floats (32-byte aligned not required).
void SpmmAvx2(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end, float* scratch);
// AVX-512 (only call when the CPU has it, Cpu().has_avx512()): rows [m_begin, m_end) in 64-row
// tiles; `scratch` holds Avx512ScratchFloats(K) floats.
void SpmmAvx512(const CsrF32& w, const GemmArgs& g, int m_begin, int m_end, float* scratch);
// AVX2 one-row kernel: row m, output columns [n_begin, n_end) (the AVX-512 kernel's too).
void SpmvAvx2(const CsrF32& w, const GemmArgs& g, int m, int n_begin, int n_end);

// Runs the whole GEMM on the pool: SpMV over N for M <= kSpmvMaxRows, else SpMM tiles over M
// (threads x SpmmScratchFloats(kernel, K) floats of `scratch`).
constexpr int kSpmvMaxRows = 2;
void RunSparseGemm(const CsrF32& w, const GemmArgs& g, SparseKernel kernel, rt::ThreadPool& pool, float* scratch);

// Whether the sparse kernel is expected to beat the runtime's dense kernel (AVX2 or AVX-512,
// as the sparse one) at this sparsity for M rows of K columns; the thresholds come from
// sparse_f32_bench.cc and bench/micro/sparse_runtime_bench.cc.
double SparsityThreshold(int m, int k, SparseKernel kernel);
inline bool PreferSparse(double sparsity, int m, int k, SparseKernel kernel) {
  return sparsity >= SparsityThreshold(m, k, kernel);
}

// Dense AVX2 GEMM with the same contract (W packed in panels of 16 columns), the baseline the
// sparse kernels are measured against in tests and benchmarks. The runtime's dense path is the
// FULLY_CONNECTED / CONV_2D factory's own dense kernel.
struct DensePackedF32 {
  int n = 0, k = 0;
  std::vector<float> panels;  // [ceil(N/16)][K][16], columns past N zero
};
DensePackedF32 PackDense(const float* w, int n, int k);
void DenseGemmAvx2(const DensePackedF32& w, const GemmArgs& g, int m_begin, int m_end);

}  // namespace edgeopt::kernels::sparse
