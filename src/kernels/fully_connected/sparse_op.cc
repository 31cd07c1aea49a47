#include "kernels/fully_connected/sparse_op.h"

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "runtime/constant_fold.h"

namespace edgeopt::kernels {

SparseGemmOpKernel::SparseGemmOpKernel(std::string op_name, std::unique_ptr<rt::OpKernel> dense,
                                       const rt::CpuFeatures& cpu)
    : op_name_(std::move(op_name)),
      dense_(std::move(dense)),
      kernel_(sparse::BestKernel(cpu)) {}

Status SparseGemmOpKernel::Prepare(rt::KernelContext& ctx) {
  // The dense kernel validates the op, sets the output shape and requests its scratch; it stays
  // ready to run whatever is decided here.
  RETURN_IF_ERROR(dense_->Prepare(ctx));
  sparse_ = false;
  const rt::RtTensor* w = ctx.input(1);
  const rt::RtTensor* out = ctx.output(0);
  if (!w || !w->is_constant() || !w->data || w->type != DType::kFloat32 || w->rank() < 2) return Status::Ok();
  if (ctx.output(0)->num_elements() == 0) return Status::Ok();
  const int n = w->dim(0);
  const int64_t k = w->num_elements() / std::max(n, 1);
  if (n <= 0 || k <= 0 || k > (int64_t{1} << 30) || w->bytes < static_cast<size_t>(n * k) * 4) return Status::Ok();
  RETURN_IF_ERROR(ComputeGeometry(ctx, &geometry_));
  if (geometry_.m <= 0 || int64_t{geometry_.m} * n != out->num_elements()) return Status::Ok();
  if (!FloatActivationRange(geometry_.activation, &lo_, &hi_)) return Status::Ok();
  if (!csr_) {
    // Dense weights are not packed at all: the zeros are counted first, stopping as soon as too
    // few remain possible. A CSR copy of every dense layer's weights (built by push_back, page
    // faults included) made most of MobileNetV2 float's init: 50-57 -> 14-19 ms.
    if (!sparse::ZeroFractionAtLeast(w->data_as<float>(), int64_t{n} * k, sparse::SparsityThreshold(geometry_.m, static_cast<int>(k), kernel_)))
      return Status::Ok();
    // Weights are constant: pack once per model (interpreters sharing the model share it).
    const std::string key = "sparse_f32_csr/sg" + std::to_string(ctx.host()->subgraph_index()) + "/op" +
                            std::to_string(ctx.graph_op_index());
    const float* data = w->data_as<float>();
    auto packed = ctx.host()->packed_cache()->GetOrCreate(key, [&]() -> std::shared_ptr<const void> {
      return std::make_shared<const sparse::CsrF32>(sparse::PackCsr(data, n, static_cast<int>(k)));
    });
    csr_ = std::static_pointer_cast<const sparse::CsrF32>(packed);
  }
  if (!sparse::PreferSparse(csr_->sparsity(), geometry_.m, csr_->cols, kernel_)) return Status::Ok();
  sparse_ = true;
  if (kernel_ != sparse::SparseKernel::kPortable && geometry_.m > sparse::kSpmvMaxRows) {
    const int64_t floats = sparse::SpmmScratchFloats(kernel_, csr_->cols) * ctx.threads().num_threads();
    scratch_ = ctx.RequestScratch(static_cast<size_t>(floats) * sizeof(float));
  } else {
    scratch_ = -1;
  }
  return Status::Ok();
}

Status SparseGemmOpKernel::Invoke(rt::KernelContext& ctx) {
  if (!sparse_) return dense_->Invoke(ctx);
  sparse::GemmArgs args;
  args.m = geometry_.m;
  args.lo = lo_;
  args.hi = hi_;
  BindTensors(ctx, &args);
  float* scratch = scratch_ >= 0 ? ctx.Scratch<float>(scratch_) : nullptr;
  sparse::RunSparseGemm(*csr_, args, kernel_, ctx.threads(), scratch);
  return Status::Ok();
}

std::string SparseGemmOpKernel::variant() const {
  if (!sparse_) return dense_->variant();
  return op_name_ + "/f32/sparse_" + sparse::KernelName(kernel_);
}

bool SparseGemmCandidate(const rt::KernelCreateContext& cc) {
  if (cc.reference_only) return false;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  const Tensor* out = cc.output(0);
  if (!in || !w || !out) return false;
  if (in->type != DType::kFloat32 || w->type != DType::kFloat32 || out->type != DType::kFloat32) return false;
  if (bias && bias->type != DType::kFloat32) return false;
  if (w->sparsity) return false;
  // Constant weights, or weights a chain of foldable ops computes (DENSIFY of a sparse constant,
  // DEQUANTIZE of float16, both): the interpreter folds such ops before this op's Prepare, which
  // checks that the weights did become constant.
  return rt::IsConstantOrFoldable(cc.graph, cc.subgraph, cc.op.inputs[1]);
}

namespace {

class SparseFullyConnectedKernel : public SparseGemmOpKernel {
 public:
  SparseFullyConnectedKernel(std::unique_ptr<rt::OpKernel> dense, const rt::CpuFeatures& cpu)
      : SparseGemmOpKernel("fully_connected", std::move(dense), cpu) {}

 protected:
  Status ComputeGeometry(rt::KernelContext& ctx, Geometry* g) override {
    const rt::RtTensor* w = ctx.input(1);
    const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(ctx.op());
    g->m = static_cast<int>(ctx.input(0)->num_elements() / std::max(w->dim(1), 1));
    g->activation = o.fused_activation_function;
    if (w->rank() != 2) g->m = 0;
    return Status::Ok();
  }
  void BindTensors(rt::KernelContext& ctx, sparse::GemmArgs* a) override {
    const rt::RtTensor* w = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    a->a = ctx.input(0)->data_as<float>();
    a->lda = w->dim(1);
    a->bias = bias ? bias->data_as<float>() : nullptr;
    a->c = ctx.output(0)->data_as<float>();
    a->ldc = w->dim(0);
  }
};

}  // namespace

std::unique_ptr<rt::OpKernel> MaybeSparseFullyConnected(const rt::KernelCreateContext& cc,
                                                        std::unique_ptr<rt::OpKernel> dense) {
  if (!SparseGemmCandidate(cc)) return dense;
  return std::make_unique<SparseFullyConnectedKernel>(std::move(dense), cc.cpu);
}

}  // namespace edgeopt::kernels
