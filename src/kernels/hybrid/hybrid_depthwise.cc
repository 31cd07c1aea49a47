// Hybrid ("dynamic range") DEPTHWISE_CONV_2D: float input and output, constant int8 weights with
// one scale per output channel (or one in all). A depthwise convolution does a handful of
// multiply-adds per input value, so quantizing the input at every invoke (what the reference and
// TFLite's hybrid kernel do) costs as much as the convolution itself. Instead the weights are
// dequantized once at prepare time (float(w) · scale[c], rounded once, as DEQUANTIZE does) into
// the float depthwise kernels' packed layout (kernels/dwconv), and every invoke runs their row
// kernels.
//
// The result is the float model computed with the dequantized weights: it lacks the reference's
// input quantization error (at most half an input step times Σ|w| per output), so it differs
// from the reference by up to that much and is closer to the float model than the reference.
// A depth multiplier M > 1 repeats each input channel M times into scratch (channel c·M + m reads
// input channel c), which turns the op into a depth multiplier 1 one over C·M channels.
#include "kernels/hybrid/hybrid_depthwise.h"

#include <string>
#include <vector>

#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/gemm/f32_op_util.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::hybrid {
namespace {

class HybridDepthwise final : public FastKernel {
 public:
  HybridDepthwise(std::unique_ptr<rt::OpKernel> ref, const dwconv::VectorRows* vec, gemm::MinMax mm)
      : FastKernel(std::move(ref)), vec_(vec), mm_(mm) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* f = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    if (!f->data || !f->quant || (bias && !bias->data)) return false;
    const int c = in->dim(3), oc = f->dim(3), kh = f->dim(1), kw = f->dim(2);
    if (kh > 64) return false;  // as the float kernel's vector path
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, kh, kw, in->dim(1), in->dim(2), &wg));
    // The reference Prepare checked oc = c·M and the quantization (one scale or oc of them).
    g_ = dwconv::GeometryOf(o, wg, in->dim(0), in->dim(1), in->dim(2), oc, kh, kw, /*depth_multiplier=*/1);
    multiplier_ = oc / c;
    if (multiplier_ > 1) {
      expanded_scratch_ = ctx.RequestScratch(static_cast<size_t>(in->num_elements()) * multiplier_ * sizeof(float));
    }
    packed_ = GetOrPack<AlignedFloats>(ctx, std::string("hybrid-") + vec_->pack_key, [&] {
      const int8_t* q = f->data_as<int8_t>();
      std::vector<float> w(static_cast<size_t>(kh) * kw * oc);
      for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(q[i]) * WeightScale(*f, static_cast<int>(i % oc));
      return dwconv::PackWeights(w.data(), bias ? bias->data_as<float>() : nullptr, kh, kw, oc, vec_->block);
    });
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const float* in = ctx.input(0)->data_as<float>();
    if (multiplier_ > 1) {  // channel c·M + m of the expanded input is input channel c
      float* x = ctx.Scratch<float>(expanded_scratch_);
      RepeatEach(in, ctx.input(0)->num_elements(), multiplier_, x);
      in = x;
    }
    dwconv::RunVectorRows(ctx.threads(), *vec_, g_, in, packed_->data(), ctx.output(0)->data_as<float>(), mm_);
    return Status::Ok();
  }

  std::string FastVariant() const override { return std::string("depthwise_conv2d/hybrid/dequant-") + vec_->isa; }
  size_t PackedBytes() const override { return packed_ ? packed_->bytes() : 0; }

 private:
  const dwconv::VectorRows* const vec_;
  const gemm::MinMax mm_;
  dwconv::Geometry g_;  // over the output channels, depth multiplier 1
  int multiplier_ = 1;
  int expanded_scratch_ = -1;
  std::shared_ptr<const AlignedFloats> packed_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeHybridDepthwise(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || cc.num_inputs() < 2 || cc.num_outputs() != 1) return nullptr;
  if (!HybridDequantAllowed()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* f = cc.input(1);
  const Tensor* bias = cc.input(2);
  if (!IsFloat32(in) || !IsFloat32(cc.output(0)) || !f || f->type != DType::kInt8 || !cc.is_constant(1)) return nullptr;
  if (f->shape.size() != 4 || in->shape.size() != 4 || f->sparsity) return nullptr;
  if (bias && (!IsFloat32(bias) || !cc.is_constant(2))) return nullptr;
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(cc.op);
  gemm::MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  const dwconv::VectorRows* vec = dwconv::SelectVectorRows(cc.cpu, f->shape[3]);
  if (!vec) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  return ref ? std::make_unique<HybridDepthwise>(std::move(ref), vec, mm) : nullptr;
}

}  // namespace edgeopt::kernels::hybrid
