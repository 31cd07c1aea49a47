// DEPTHWISE_CONV_2D, float32: the AVX-512 or AVX2 row kernels (a depth multiplier > 1 on the
// input with its channels repeated; one input channel as a convolution), the portable path on
// CPUs without AVX2.
#include <algorithm>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/ops_f32.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels {
namespace {

using gemm::MinMax;

class DepthwiseConv2DF32 : public rt::OpKernel {
 public:
  // vec: null on CPUs without AVX2 (portable path only).
  // as_conv: MakeDepthwiseAsConvF32's kernel for one input channel (null when not offered).
  DepthwiseConv2DF32(const dwconv::VectorRows* vec, MinMax mm, std::unique_ptr<rt::OpKernel> as_conv)
      : vec_(vec), mm_(mm), as_conv_(std::move(as_conv)) {}

  // Shapes are checked as the reference kernel checks them (kernels/depthwise), with its messages.
  Status Prepare(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* f = ctx.input(1);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    if (f->dim(0) != 1) return ctx.Error("filter " + Describe(*f) + " must have 1 as its first dimension");
    const int c = in->dim(3), oc = f->dim(3);
    if (c <= 0 || oc % c != 0)
      return ctx.Error("filter channels " + std::to_string(oc) + " (" + Describe(*f) +
                       ") are not a multiple of the input channels " + std::to_string(c) + " (" + Describe(*in) + ")");
    if (o.depth_multiplier != 0 && o.depth_multiplier != oc / c)
      return ctx.Error("depth_multiplier " + std::to_string(o.depth_multiplier) + " does not match the filter: " +
                       std::to_string(oc) + " channels for " + std::to_string(c) + " input channels");
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, f->dim(1), f->dim(2), in->dim(1), in->dim(2), &wg));
    const dwconv::Geometry g =
        dwconv::GeometryOf(o, wg, in->dim(0), in->dim(1), in->dim(2), c, f->dim(1), f->dim(2), oc / c);
    g_ = g;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {g.batch, g.oh, g.ow, oc}));
    use_conv_ = as_conv_ && c == 1 && oc > 1;
    if (use_conv_) return as_conv_->Prepare(ctx);
    vector_path_ = vec_ && g.kh <= 64;
    // A depth multiplier M > 1: output channel o reads input channel o / M, so with each input
    // channel repeated M times (a scratch copy of the input, oc channels) the op is a depth
    // multiplier 1 one over oc channels, with the same filter, bias and sums.
    repeat_scratch_ = -1;
    if (vector_path_ && g.depth_multiplier > 1) {
      g_.c = oc;
      g_.depth_multiplier = 1;
      repeat_scratch_ = ctx.RequestScratch(static_cast<size_t>(g.batch) * g.h * g.w * oc * sizeof(float));
    }
    if (vector_path_ && !packed_) Pack(ctx);
    return Status::Ok();
  }

  // Once the filter's data exists: in Prepare for constants, at the first Invoke when constant
  // folding produces it.
  void Pack(rt::KernelContext& ctx) {
    const rt::RtTensor* f = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    if (!f->data || (bias && !bias->data)) return;
    packed_ = GetOrPack<AlignedFloats>(ctx, vec_->pack_key, [&] {
      return dwconv::PackWeights(f->data_as<float>(), bias ? bias->data_as<float>() : nullptr, g_.kh, g_.kw, g_.c,
                                 vec_->block);
    });
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (use_conv_) return as_conv_->Invoke(ctx);
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const dwconv::Geometry& g = g_;
    if (vector_path_ && !packed_) {
      Pack(ctx);
      if (!packed_) return ctx.Error("filter has no data");
    }
    const int rows = g.batch * g.oh;
    const int threads = ctx.threads().num_threads();
    const int64_t row_work = int64_t{g.ow} * g.out_c() * g.kh * g.kw;
    if (!vector_path_) {
      const float* filter = ctx.input(1)->data_as<float>();
      const rt::RtTensor* bias_t = ctx.input(2);
      const float* bias = bias_t ? bias_t->data_as<float>() : nullptr;
      const int64_t tasks = TaskCount(threads, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_work)));
      RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
        dwconv::RowsGeneric(g, in, filter, bias, out, static_cast<int>(rows * t / tasks),
                            static_cast<int>(rows * (t + 1) / tasks), mm_);
      });
      return Status::Ok();
    }
    if (repeat_scratch_ >= 0) {
      float* rep = ctx.Scratch<float>(repeat_scratch_);
      RepeatEach(in, ctx.input(0)->num_elements(), g.c / ctx.input(0)->dim(3), rep);
      in = rep;
    }
    dwconv::RunVectorRows(ctx.threads(), *vec_, g, in, packed_->data(), out, mm_);
    return Status::Ok();
  }

  std::string variant() const override {
    if (use_conv_) return as_conv_->variant();
    return std::string("depthwise_conv2d/f32/") + (vector_path_ ? vec_->isa : "scalar");
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{g_.batch} * g_.oh * g_.ow * g_.out_c() * g_.kh * g_.kw;
  }
  size_t PackedBytes() const override {
    if (use_conv_) return as_conv_->PackedBytes();
    return packed_ ? packed_->bytes() : 0;
  }
  // The vector rows read the packed filter and bias; the scalar rows the tensors.
  bool ReadsInputAtInvoke(int input) const override {
    if (use_conv_) return as_conv_->ReadsInputAtInvoke(input);
    return input == 0 || !vector_path_ || !packed_;
  }

 private:
  const dwconv::VectorRows* const vec_;
  const MinMax mm_;
  dwconv::Geometry g_;
  bool vector_path_ = false;
  int repeat_scratch_ = -1;  // depth multiplier > 1: the input with each channel repeated (Prepare)
  std::shared_ptr<const AlignedFloats> packed_;
  std::unique_ptr<rt::OpKernel> as_conv_;
  bool use_conv_ = false;  // one input channel: as_conv_ runs the op
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeDepthwiseConv2DF32(const rt::KernelCreateContext& cc) {
  if (cc.reference_only || cc.num_inputs() < 2 || cc.num_outputs() != 1) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* f = cc.input(1);
  const Tensor* bias = cc.input(2);
  if (!IsFloat32(in) || !IsFloat32(f) || !IsFloat32(cc.output(0))) return nullptr;
  if (f->shape.size() != 4 || !ConstantOrFolded(cc, 1)) return nullptr;
  if (in->shape.size() != 4) return nullptr;
  // TFLite 2.9 requires the bias of DEPTHWISE_CONV_2D (an omitted one fails to prepare there):
  // leave that case to the reference, which reports it.
  if (!bias || !IsFloat32(bias) || bias->num_elements() != f->shape[3] || !ConstantOrFolded(cc, 2)) return nullptr;
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return nullptr;
  // One input channel, several output channels: the convolution GEMM (AVX2 / AVX-512 CPUs).
  std::unique_ptr<rt::OpKernel> as_conv;
  if (cc.cpu.has_avx2_fma() && in->shape[3] == 1 && f->shape[3] > 1) {
    const auto& os = cc.output(0)->shape;
    const int64_t pixels = os.size() == 4 && os[0] > 0 ? int64_t{os[0]} * os[1] * os[2] : -1;
    const bool pointwise = f->shape[1] == 1 && f->shape[2] == 1 && o.stride_h == 1 && o.stride_w == 1;
    as_conv = MakeDepthwiseAsConvF32(cc.cpu, f->shape[1], f->shape[2], f->shape[3], pixels, pointwise, mm.min, mm.max);
  }
  // The rows run over the output channels (the input's, repeated for a depth multiplier > 1).
  return std::make_unique<DepthwiseConv2DF32>(dwconv::SelectVectorRows(cc.cpu, f->shape[3]), mm, std::move(as_conv));
}

}  // namespace edgeopt::kernels
