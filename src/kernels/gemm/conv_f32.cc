// CONV_2D and FULLY_CONNECTED, float32, on the packed GEMM.
//
// CONV_2D paths (chosen at prepare from the shapes):
//   gemm     1×1, stride 1, no padding: the NHWC input is A[N·H·W, C] as is.
//            Also a filter covering the whole (VALID) input: A[N, H·W·C].
//   igemm    anything else: an indirection buffer holds, per output pixel and filter tap, a
//            pointer to the input pixel's C channels or to a zero row (padding). It is sized at
//            prepare and filled at the first invoke (the input's address is known only then),
//            again only if that address changes.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ops_f32.h"

namespace edgeopt::kernels {
namespace {

using gemm::MinMax;
using gemm::PackedB;

// Static checks shared by CONV_2D and FULLY_CONNECTED: float tensors, constant (or folded)
// float weights and bias (or no bias).
bool FloatWeightsAndBias(const rt::KernelCreateContext& cc, int weights_rank) {
  if (cc.reference_only || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const Tensor* bias = cc.input(2);
  if (!IsFloat32(in) || !IsFloat32(w) || !IsFloat32(cc.output(0))) return false;
  if (static_cast<int>(w->shape.size()) != weights_rank || !ConstantOrFolded(cc, 1)) return false;
  if (bias && (!IsFloat32(bias) || bias->num_elements() != w->shape[0] || !ConstantOrFolded(cc, 2))) return false;
  return true;
}

// Packs weights [N][K] (and bias) once their data exists: in Prepare for constants, at the
// first Invoke for weights that constant folding produces.
std::shared_ptr<const PackedB> PackNK(rt::KernelContext& ctx, int n, int k) {
  const rt::RtTensor* w = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  if (!w->data || (bias && !bias->data)) return nullptr;
  return GetOrPack<PackedB>(ctx, "f32gemm-nk", [&] {
    return PackedB::FromNK(w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, n, k);
  });
}

class Conv2DF32 : public rt::OpKernel {
 public:
  Conv2DF32(const gemm::Ukernels& uk, MinMax mm) : uk_(uk), mm_(mm) {}

  // Shapes are checked as the reference kernel checks them (kernels/conv), with its messages.
  Status Prepare(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::Conv2DOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = ctx.input(1);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    const int batch = in->dim(0), h = in->dim(1), wd = in->dim(2), c = in->dim(3);
    const int oc = w->dim(0), kh = w->dim(1), kw = w->dim(2), ic = w->dim(3);
    if (ic != c)  // grouped convolution is declined at creation; the input was resized since
      return ctx.UnsupportedError("input channels " + std::to_string(c) + " of " + Describe(*in) +
                                  " differ from the filter's " + std::to_string(ic) +
                                  " (grouped convolution is left to the reference kernel)");
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, kh, kw, h, wd, &wg));
    const int oh = wg.out_h, ow = wg.out_w;
    pad_top_ = wg.pad_h;
    pad_left_ = wg.pad_w;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, oh, ow, oc}));
    geom_ = {batch, h, wd, c, oh, ow, kh, kw, o.stride_h, o.stride_w, o.dilation_h_factor, o.dilation_w_factor};

    const bool pointwise = kh == 1 && kw == 1 && o.stride_h == 1 && o.stride_w == 1;
    const bool whole_input = o.padding == tflite::Padding_VALID && kh == h && kw == wd;
    if (pointwise) {
      gemm_m_ = static_cast<size_t>(batch) * h * wd;
      gemm_k_stride_ = c;
    } else if (whole_input) {
      gemm_m_ = batch;
      gemm_k_stride_ = static_cast<size_t>(h) * wd * c;
    } else {
      gemm_m_ = 0;
    }
    if (!packed_) packed_ = PackNK(ctx, oc, kh * kw * ic);
    if (gemm_m_ == 0) {
      const size_t m = static_cast<size_t>(batch) * oh * ow;
      indirection_.assign(gemm::IndirectionSize(m, static_cast<size_t>(kh) * kw, uk_.mr), nullptr);
      if (zero_.size() < static_cast<size_t>(c)) zero_.Reset(c);
      indirection_base_ = nullptr;
    } else {
      indirection_.clear();
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!packed_ && !(packed_ = PackNK(ctx, ctx.input(1)->dim(0), geom_.kh * geom_.kw * geom_.c)))
      return ctx.Error("filter has no data");
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const Geometry& g = geom_;
    if (gemm_m_) {
      gemm::Gemm(uk_, &ctx.threads(), gemm_m_, in, gemm_k_stride_, *packed_, out, packed_->n(), mm_);
      return Status::Ok();
    }
    if (in != indirection_base_) BuildIndirection(in);
    const size_t m = static_cast<size_t>(g.batch) * g.oh * g.ow;
    gemm::IGemm(uk_, &ctx.threads(), m, static_cast<size_t>(g.kh) * g.kw, indirection_.data(), *packed_, out,
                packed_->n(), mm_);
    return Status::Ok();
  }

  std::string variant() const override { return std::string("conv2d/f32/") + uk_.isa; }
  int64_t Macs(const rt::KernelContext&) const override {
    return packed_ ? int64_t{geom_.batch} * geom_.oh * geom_.ow * packed_->n() * packed_->k() : 0;
  }
  size_t PackedBytes() const override {
    return (packed_ ? packed_->bytes() : 0) + indirection_.size() * sizeof(void*) + zero_.bytes();
  }

 private:
  struct Geometry {
    int batch, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw;
  };

  void BuildIndirection(const float* in) {
    const Geometry& g = geom_;
    const size_t m = static_cast<size_t>(g.batch) * g.oh * g.ow;
    const size_t taps = static_cast<size_t>(g.kh) * g.kw;
    const int mr = uk_.mr;
    for (size_t tile = 0; tile * mr < m; ++tile)
      for (int r = 0; r < mr; ++r) {
        const size_t p = std::min(m - 1, tile * mr + r);
        const int b = static_cast<int>(p / (static_cast<size_t>(g.oh) * g.ow));
        const int rem = static_cast<int>(p % (static_cast<size_t>(g.oh) * g.ow));
        const int oy = rem / g.ow, ox = rem % g.ow;
        for (int ky = 0; ky < g.kh; ++ky)
          for (int kx = 0; kx < g.kw; ++kx) {
            const int iy = oy * g.sh - pad_top_ + ky * g.dh;
            const int ix = ox * g.sw - pad_left_ + kx * g.dw;
            const float* ptr = zero_.data();
            if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
              ptr = in + ((static_cast<size_t>(b) * g.h + iy) * g.w + ix) * g.c;
            indirection_[(tile * taps + static_cast<size_t>(ky) * g.kw + kx) * mr + r] = ptr;
          }
      }
    indirection_base_ = in;
  }

  const gemm::Ukernels& uk_;
  const MinMax mm_;
  std::shared_ptr<const PackedB> packed_;
  Geometry geom_{};
  int pad_top_ = 0, pad_left_ = 0;
  size_t gemm_m_ = 0, gemm_k_stride_ = 0;
  std::vector<const float*> indirection_;
  const float* indirection_base_ = nullptr;
  AlignedFloats zero_;
};

class FullyConnectedF32 : public rt::OpKernel {
 public:
  FullyConnectedF32(const gemm::Ukernels& uk, MinMax mm, bool keep_num_dims)
      : uk_(uk), mm_(mm), keep_num_dims_(keep_num_dims) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = ctx.input(1);
    const int n = w->dim(0), k = w->dim(1);
    rt::Shape out;
    if (keep_num_dims_) {
      if (in->rank() < 1 || in->dim(-1) != k)
        return ctx.Error("with keep_num_dims the input " + Describe(*in) + " must end in the weights' depth " +
                         std::to_string(k));
      out = in->shape;
      out.back() = n;
    } else {
      if (k <= 0 || in->num_elements() % k != 0)
        return ctx.Error("input " + Describe(*in) + " has " + std::to_string(in->num_elements()) +
                         " elements, not a multiple of the weights' depth " + std::to_string(k) + " (" +
                         Describe(*w) + ")");
      out = {static_cast<int32_t>(in->num_elements() / k), n};
    }
    batch_ = k > 0 ? in->num_elements() / k : 0;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(out)));
    if (!packed_) packed_ = PackNK(ctx, n, k);
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!packed_ && !(packed_ = PackNK(ctx, ctx.input(1)->dim(0), ctx.input(1)->dim(1))))
      return ctx.Error("weights have no data");
    gemm::Gemm(uk_, &ctx.threads(), static_cast<size_t>(batch_), ctx.input(0)->data_as<float>(), packed_->k(),
               *packed_, ctx.output(0)->data_as<float>(), packed_->n(), mm_);
    return Status::Ok();
  }

  std::string variant() const override { return std::string("fully_connected/f32/") + uk_.isa; }
  int64_t Macs(const rt::KernelContext&) const override {
    return packed_ ? batch_ * packed_->n() * packed_->k() : 0;
  }
  size_t PackedBytes() const override { return packed_ ? packed_->bytes() : 0; }

 private:
  const gemm::Ukernels& uk_;
  const MinMax mm_;
  const bool keep_num_dims_;
  int64_t batch_ = 0;
  std::shared_ptr<const PackedB> packed_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeConv2DF32(const rt::KernelCreateContext& cc) {
  if (!FloatWeightsAndBias(cc, 4)) return nullptr;
  // Grouped convolution (input channels a multiple of the filter's) is left to the reference.
  const Tensor* in = cc.input(0);
  if (in->shape.size() != 4 || in->shape[3] != cc.input(1)->shape[3]) return nullptr;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return nullptr;
  const auto& fs = cc.input(1)->shape;
  return std::make_unique<Conv2DF32>(gemm::SelectUkernels(cc.cpu, int64_t{fs[1]} * fs[2] * fs[3]), mm);
}

std::unique_ptr<rt::OpKernel> MakeFullyConnectedF32(const rt::KernelCreateContext& cc) {
  if (!FloatWeightsAndBias(cc, 2)) return nullptr;
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT) return nullptr;
  return std::make_unique<FullyConnectedF32>(gemm::SelectUkernels(cc.cpu, cc.input(1)->shape[1]), mm,
                                             o.keep_num_dims);
}

}  // namespace edgeopt::kernels
