// The sparse variants of float32 FULLY_CONNECTED and 1x1 CONV_2D: a kernel that wraps the op's
// dense kernel and, at prepare time, measures the sparsity of the constant weights (constants,
// or DENSIFY/DEQUANTIZE outputs that the interpreter folds before this Prepare), packs them to
// CSR once (shared through the model's packed-weight cache) and runs the sparse GEMM of
// sparse_f32.h when PreferSparse says it wins; otherwise every call goes to the dense kernel.
#pragma once

#include <memory>
#include <string>

#include "kernels/fully_connected/sparse_f32.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

class SparseGemmOpKernel : public rt::OpKernel {
 public:
  SparseGemmOpKernel(std::string op_name, std::unique_ptr<rt::OpKernel> dense, const rt::CpuFeatures& cpu);

  Status Prepare(rt::KernelContext& ctx) final;
  Status Invoke(rt::KernelContext& ctx) final;
  std::string variant() const final;
  int64_t Macs(const rt::KernelContext& ctx) const final { return dense_->Macs(ctx); }
  size_t PackedBytes() const final { return sparse_ ? csr_->bytes() : dense_->PackedBytes(); }
  // The sparse path reads the weights from the CSR copy (the bias tensor as it is).
  bool ReadsInputAtInvoke(int input) const final { return sparse_ ? input != 1 : dense_->ReadsInputAtInvoke(input); }
  bool OutputMayAliasInput() const final { return dense_->OutputMayAliasInput(); }

  bool sparse() const { return sparse_; }
  double weight_sparsity() const { return csr_ ? csr_->sparsity() : 0.0; }

 protected:
  // The GEMM view of the op at the prepared shapes: M rows, fused activation. Rows of A, C and
  // the bias are bound at invoke time by BindTensors.
  struct Geometry {
    int m = 0;
    int activation = 0;  // tflite::ActivationFunctionType
  };
  virtual Status ComputeGeometry(rt::KernelContext& ctx, Geometry* g) = 0;
  // Fills a, lda (or row_of), bias, c, ldc from the current tensors.
  virtual void BindTensors(rt::KernelContext& ctx, sparse::GemmArgs* args) = 0;

 private:
  std::string op_name_;
  std::unique_ptr<rt::OpKernel> dense_;
  sparse::SparseKernel kernel_;
  std::shared_ptr<const sparse::CsrF32> csr_;
  bool sparse_ = false;
  Geometry geometry_;
  float lo_ = 0, hi_ = 0;
  int scratch_ = -1;
};

// FULLY_CONNECTED: wraps `dense` when the op could use the sparse path (float32 input, weights
// and output; weights constant or made by an op; not reference-only); returns `dense` as is
// otherwise.
std::unique_ptr<rt::OpKernel> MaybeSparseFullyConnected(const rt::KernelCreateContext& cc,
                                                        std::unique_ptr<rt::OpKernel> dense);

// CONV_2D with a 1x1 filter (conv/sparse_conv1x1.cc): likewise.
std::unique_ptr<rt::OpKernel> MaybeSparseConv1x1(const rt::KernelCreateContext& cc, std::unique_ptr<rt::OpKernel> dense);

// Shared by both: the static conditions above.
bool SparseGemmCandidate(const rt::KernelCreateContext& cc);

}  // namespace edgeopt::kernels
