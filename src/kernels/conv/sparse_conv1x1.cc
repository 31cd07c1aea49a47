// The sparse variant of float32 1x1 CONV_2D (pointwise convolution): a GEMM of the input pixels
// [pixels, in_c] by the filter [out_c, in_c], run by the sparse kernels of
// fully_connected/sparse_f32.h when the filter is sparse enough (see fully_connected/sparse_op.h).
// A 1x1 filter never reads padding, so any stride works: row m of A is input pixel
// (b, oy * stride_h, ox * stride_w).
#include "kernels/common/kernel_util.h"
#include "kernels/fully_connected/sparse_op.h"

namespace edgeopt::kernels {
namespace {

class SparseConv1x1Kernel : public SparseGemmOpKernel {
 public:
  SparseConv1x1Kernel(std::unique_ptr<rt::OpKernel> dense, const rt::CpuFeatures& cpu)
      : SparseGemmOpKernel("conv2d", std::move(dense), cpu) {}

 protected:
  Status ComputeGeometry(rt::KernelContext& ctx, Geometry* g) override {
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = ctx.input(1);
    const rt::RtTensor* out = ctx.output(0);
    const auto& o = GetOptions<tflite::Conv2DOptionsT>(ctx.op());
    g->m = 0;
    if (in->rank() != 4 || w->rank() != 4 || out->rank() != 4) return Status::Ok();
    if (w->dim(1) != 1 || w->dim(2) != 1 || w->dim(3) != in->dim(3)) return Status::Ok();
    g->activation = o.fused_activation_function;
    in_h_ = in->dim(1);
    in_w_ = in->dim(2);
    in_c_ = in->dim(3);
    out_h_ = out->dim(1);
    out_w_ = out->dim(2);
    stride_h_ = o.stride_h;
    stride_w_ = o.stride_w;
    // The last output pixel must read inside the input.
    if (out_h_ > 0 && (out_h_ - 1) * int64_t{stride_h_} >= in_h_) return Status::Ok();
    if (out_w_ > 0 && (out_w_ - 1) * int64_t{stride_w_} >= in_w_) return Status::Ok();
    g->m = static_cast<int>(int64_t{out->dim(0)} * out_h_ * out_w_);
    return Status::Ok();
  }

  void BindTensors(rt::KernelContext& ctx, sparse::GemmArgs* a) override {
    const rt::RtTensor* bias = ctx.input(2);
    input_ = ctx.input(0)->data_as<float>();
    a->bias = bias ? bias->data_as<float>() : nullptr;
    a->c = ctx.output(0)->data_as<float>();
    a->ldc = ctx.input(1)->dim(0);
    if (stride_h_ == 1 && stride_w_ == 1) {
      a->a = input_;
      a->lda = in_c_;
    } else {
      a->row_of = &RowOf;
      a->row_ctx = this;
    }
  }

 private:
  static const float* RowOf(const void* self, int m) {
    const auto* k = static_cast<const SparseConv1x1Kernel*>(self);
    const int per_image = k->out_h_ * k->out_w_;
    const int b = m / per_image, r = m % per_image;
    const int oy = r / k->out_w_, ox = r % k->out_w_;
    return k->input_ + ((int64_t{b} * k->in_h_ + int64_t{oy} * k->stride_h_) * k->in_w_ + int64_t{ox} * k->stride_w_) * k->in_c_;
  }

  const float* input_ = nullptr;
  int in_h_ = 0, in_w_ = 0, in_c_ = 0, out_h_ = 0, out_w_ = 0, stride_h_ = 1, stride_w_ = 1;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MaybeSparseConv1x1(const rt::KernelCreateContext& cc, std::unique_ptr<rt::OpKernel> dense) {
  if (!SparseGemmCandidate(cc)) return dense;
  const Tensor* w = cc.input(1);
  if (w->shape.size() != 4 || w->shape[1] != 1 || w->shape[2] != 1) return dense;
  const Tensor* in = cc.input(0);
  if (in->shape.size() == 4 && in->shape[3] != w->shape[3]) return dense;  // grouped
  return std::make_unique<SparseConv1x1Kernel>(std::move(dense), cc.cpu);
}

}  // namespace edgeopt::kernels
