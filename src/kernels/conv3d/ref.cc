// CONV_3D and CONV_3D_TRANSPOSE reference kernels (float32 only, as TFLite 2.9).
//
// CONV_3D: input [N, D, H, W, Cin], filter [KD, KH, KW, Cin, Cout] (not CONV_2D's OHWI), optional
// bias [Cout]. out[n, od, oh, ow, co] = act(bias[co] + sum over (kd, kh, kw, ci) inside the input
// of in[n, od*sd - pd + kd*dd, ..., ci] * filter[kd, kh, kw, ci, co]); padding, strides and
// dilations as LiteRT's ComputePadding3DValues. TFLite's kernel takes float32 only (TF_LITE_ENSURE
// on the input and filter types), so other types are Unsupported at creation.
//
// CONV_3D_TRANSPOSE: inputs output_shape (int32 [5]), filter [KD, KH, KW, Cout, Cin], input
// [N, D, H, W, Cin], optional bias [Cout]. Every input pixel scatters input * filter into the output
// window at (id*sd - pd + kd*dd, ...), the padding being that of a CONV_3D over the requested
// output (whose output size must then equal the input's). Computed here in gather form (each
// output pixel sums the (input pixel, tap) pairs reaching it). Dilation is supported (TFLite runs
// its reference kernel then). The output channels must equal the filter's dimension 3 (TFLite
// checks only divisibility and would read past the filter otherwise). A non-constant
// output_shape makes the output dynamic.
#include <algorithm>
#include <string>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/planned_kernel.h"
#include "kernels/common/quant_utils.h"
#include "kernels/common/tensor_args.h"
#include "kernels/conv3d/conv3d.h"

namespace edgeopt::kernels::conv3d {

namespace {

std::string Triple(int a, int b, int c) {
  return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c);
}

Status RequireFloat(const rt::KernelContext& ctx, const rt::RtTensor* t, const char* role) {
  if (t && t->type != DType::kFloat32)
    return ctx.UnsupportedError(std::string(role) + " " + Describe(*t) + ": only float32 is supported");
  return Status::Ok();
}

}  // namespace

Status ComputeGeometry(const rt::KernelContext& ctx, const tflite::Conv3DOptionsT& o, int img_d, int img_h, int img_w,
                       Dims* d, int* win_d, int* win_h, int* win_w) {
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID)
    return ctx.Error("unknown padding " + std::to_string(o.padding) + " (expected SAME or VALID)");
  if (o.stride_d <= 0 || o.stride_h <= 0 || o.stride_w <= 0)
    return ctx.Error("strides (d x h x w) must be positive, got " + Triple(o.stride_d, o.stride_h, o.stride_w));
  if (o.dilation_d_factor <= 0 || o.dilation_h_factor <= 0 || o.dilation_w_factor <= 0)
    return ctx.Error("dilation factors (d x h x w) must be positive, got " +
                     Triple(o.dilation_d_factor, o.dilation_h_factor, o.dilation_w_factor));
  if (d->k_d <= 0 || d->k_h <= 0 || d->k_w <= 0)
    return ctx.Error("filter size must be positive, got " + Triple(d->k_d, d->k_h, d->k_w));
  d->stride_d = o.stride_d;
  d->stride_h = o.stride_h;
  d->stride_w = o.stride_w;
  d->dil_d = o.dilation_d_factor;
  d->dil_h = o.dilation_h_factor;
  d->dil_w = o.dilation_w_factor;
  *win_d = ComputeOutSize(o.padding, img_d, d->k_d, d->stride_d, d->dil_d);
  *win_h = ComputeOutSize(o.padding, img_h, d->k_h, d->stride_h, d->dil_h);
  *win_w = ComputeOutSize(o.padding, img_w, d->k_w, d->stride_w, d->dil_w);
  if (*win_d < 0 || *win_h < 0 || *win_w < 0)
    return ctx.Error("the " +
                     Triple((d->k_d - 1) * d->dil_d + 1, (d->k_h - 1) * d->dil_h + 1, (d->k_w - 1) * d->dil_w + 1) +
                     " window (with dilation) does not fit the " + Triple(img_d, img_h, img_w) +
                     " image with VALID padding");
  int unused_offset = 0;
  d->pad_d = ComputePadding(d->stride_d, d->dil_d, img_d, d->k_d, *win_d, &unused_offset);
  d->pad_h = ComputePadding(d->stride_h, d->dil_h, img_h, d->k_h, *win_h, &unused_offset);
  d->pad_w = ComputePadding(d->stride_w, d->dil_w, img_w, d->k_w, *win_w, &unused_offset);
  return Status::Ok();
}

Status PrepareConv3D(rt::KernelContext& ctx, Dims* d, float* act_min, float* act_max) {
  RETURN_IF_ERROR(CheckIo(ctx, 2, 3, 1));
  const rt::RtTensor* in = ctx.input(0);
  const rt::RtTensor* filter = ctx.input(1);
  const rt::RtTensor* bias = ctx.input(2);
  RETURN_IF_ERROR(RequireFloat(ctx, in, "input"));
  RETURN_IF_ERROR(RequireFloat(ctx, filter, "filter"));
  RETURN_IF_ERROR(RequireFloat(ctx, bias, "bias"));
  RETURN_IF_ERROR(RequireFloat(ctx, ctx.output(0), "output"));
  if (in->rank() != 5) return ctx.Error("input " + Describe(*in) + " must have rank 5 (NDHWC)");
  if (filter->rank() != 5)
    return ctx.Error("filter " + Describe(*filter) + " must have rank 5 ([KD, KH, KW, in_channels, out_channels])");
  if (in->dim(4) != filter->dim(3))
    return ctx.Error("input " + Describe(*in) + " has " + std::to_string(in->dim(4)) + " channels, the filter " +
                     Describe(*filter) + " expects " + std::to_string(filter->dim(3)));
  if (bias && bias->num_elements() != filter->dim(4))
    return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(filter->dim(4)) +
                     " elements (the filter's output channels)");
  const auto& o = GetOptions<tflite::Conv3DOptionsT>(ctx.op());
  RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, act_min, act_max));
  Dims g;
  g.batch = in->dim(0);
  g.in_d = in->dim(1);
  g.in_h = in->dim(2);
  g.in_w = in->dim(3);
  g.in_c = in->dim(4);
  g.k_d = filter->dim(0);
  g.k_h = filter->dim(1);
  g.k_w = filter->dim(2);
  g.out_c = filter->dim(4);
  RETURN_IF_ERROR(ComputeGeometry(ctx, o, g.in_d, g.in_h, g.in_w, &g, &g.out_d, &g.out_h, &g.out_w));
  *d = g;
  return ctx.SetOutputShape(0, {g.batch, g.out_d, g.out_h, g.out_w, g.out_c});
}

void Conv3DRef(const Dims& d, const float* in, const float* filter, const float* bias, float act_min, float act_max,
               float* out, rt::ThreadPool& pool) {
  const int64_t rows = int64_t{d.batch} * d.out_d * d.out_h;  // (n, od, oh)
  const int64_t cin = d.in_c, cout = d.out_c;
  pool.ParallelFor(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int oh = static_cast<int>(row % d.out_h);
      const int od = static_cast<int>(row / d.out_h % d.out_d);
      const int n = static_cast<int>(row / (int64_t{d.out_h} * d.out_d));
      for (int ow = 0; ow < d.out_w; ++ow) {
        float* acc = out + (row * d.out_w + ow) * cout;
        std::fill_n(acc, cout, 0.0f);
        for (int kd = 0; kd < d.k_d; ++kd) {
          const int id = od * d.stride_d - d.pad_d + kd * d.dil_d;
          if (id < 0 || id >= d.in_d) continue;
          for (int kh = 0; kh < d.k_h; ++kh) {
            const int ih = oh * d.stride_h - d.pad_h + kh * d.dil_h;
            if (ih < 0 || ih >= d.in_h) continue;
            for (int kw = 0; kw < d.k_w; ++kw) {
              const int iw = ow * d.stride_w - d.pad_w + kw * d.dil_w;
              if (iw < 0 || iw >= d.in_w) continue;
              const float* x = in + (((int64_t{n} * d.in_d + id) * d.in_h + ih) * d.in_w + iw) * cin;
              const float* w = filter + ((int64_t{kd} * d.k_h + kh) * d.k_w + kw) * cin * cout;
              for (int64_t ci = 0; ci < cin; ++ci) {
                const float xv = x[ci];
                const float* wr = w + ci * cout;
                for (int64_t co = 0; co < cout; ++co) acc[co] += xv * wr[co];  // contiguous: vectorizes
              }
            }
          }
        }
        for (int64_t co = 0; co < cout; ++co)
          acc[co] = ApplyFloatActivation(acc[co] + (bias ? bias[co] : 0.0f), act_min, act_max);
      }
    }
  });
}

namespace {

class Conv3DRefKernel : public rt::OpKernel {
 public:
  Status Prepare(rt::KernelContext& ctx) override { return PrepareConv3D(ctx, &d_, &act_min_, &act_max_); }
  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* bias = ctx.input(2);
    Conv3DRef(d_, ctx.input(0)->data_as<float>(), ctx.input(1)->data_as<float>(),
              bias ? bias->data_as<float>() : nullptr, act_min_, act_max_, ctx.output(0)->data_as<float>(),
              ctx.threads());
    return Status::Ok();
  }
  std::string variant() const override { return "conv3d/f32/ref"; }
  int64_t Macs(const rt::KernelContext&) const override { return d_.out_pixels() * d_.taps() * d_.in_c * d_.out_c; }

 private:
  Dims d_;
  float act_min_ = 0, act_max_ = 0;
};

class Conv3DTransposeKernel : public PlannedKernel {
 public:
  Conv3DTransposeKernel() : PlannedKernel("conv3d_transpose/f32/ref", {0}) {}
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{d_.batch} * d_.in_d * d_.in_h * d_.in_w * d_.taps() * d_.in_c * d_.out_c;
  }

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 4, 1));
    const rt::RtTensor* shape_t = ctx.input(0);
    const rt::RtTensor* filter = ctx.input(1);
    const rt::RtTensor* in = ctx.input(2);
    const rt::RtTensor* bias = ctx.input(3);
    if (shape_t->type != DType::kInt32 || shape_t->rank() != 1 || shape_t->num_elements() != 5)
      return ctx.Error("output_shape " + Describe(*shape_t) + " must be a 1-D int32 tensor of 5 values");
    RETURN_IF_ERROR(RequireFloat(ctx, in, "input"));
    RETURN_IF_ERROR(RequireFloat(ctx, filter, "filter"));
    RETURN_IF_ERROR(RequireFloat(ctx, bias, "bias"));
    RETURN_IF_ERROR(RequireFloat(ctx, ctx.output(0), "output"));
    if (in->rank() != 5) return ctx.Error("input " + Describe(*in) + " must have rank 5 (NDHWC)");
    if (filter->rank() != 5)
      return ctx.Error("filter " + Describe(*filter) + " must have rank 5 ([KD, KH, KW, out_channels, in_channels])");
    if (in->dim(4) != filter->dim(4))
      return ctx.Error("input " + Describe(*in) + " has " + std::to_string(in->dim(4)) + " channels, the filter " +
                       Describe(*filter) + " expects " + std::to_string(filter->dim(4)));
    if (bias && bias->num_elements() != filter->dim(3))
      return ctx.Error("bias " + Describe(*bias) + " must have " + std::to_string(filter->dim(3)) +
                       " elements (the filter's output channels)");
    const auto& o = GetOptions<tflite::Conv3DOptionsT>(ctx.op());
    return FloatActivation(ctx, o.fused_activation_function, &act_min_, &act_max_);
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor* filter = ctx.input(1);
    const rt::RtTensor* in = ctx.input(2);
    const int32_t* s = ctx.input(0)->data_as<int32_t>();
    const rt::Shape out = {s[0], s[1], s[2], s[3], s[4]};
    Dims g;
    g.batch = in->dim(0);
    g.in_d = in->dim(1);
    g.in_h = in->dim(2);
    g.in_w = in->dim(3);
    g.in_c = in->dim(4);
    g.k_d = filter->dim(0);
    g.k_h = filter->dim(1);
    g.k_w = filter->dim(2);
    g.out_c = filter->dim(3);
    if (out[0] != g.batch || out[4] != g.out_c || out[1] < 0 || out[2] < 0 || out[3] < 0)
      return ctx.Error("output_shape " + rt::ShapeToString(out) + " must be [" + std::to_string(g.batch) +
                       ", D, H, W, " + std::to_string(g.out_c) + "] (D, H, W >= 0) for input " + Describe(*in) +
                       " and filter " + Describe(*filter));
    g.out_d = out[1];
    g.out_h = out[2];
    g.out_w = out[3];
    const auto& o = GetOptions<tflite::Conv3DOptionsT>(ctx.op());
    int wd = 0, wh = 0, ww = 0;
    RETURN_IF_ERROR(ComputeGeometry(ctx, o, g.out_d, g.out_h, g.out_w, &g, &wd, &wh, &ww));
    if (wd != g.in_d || wh != g.in_h || ww != g.in_w)
      return ctx.Error("output_shape " + rt::ShapeToString(out) + " does not match input " + Describe(*in) +
                       ": a convolution over it gives " + Triple(wd, wh, ww) + ", the input has " +
                       Triple(g.in_d, g.in_h, g.in_w));
    d_ = g;
    return ctx.SetOutputShape(0, out);
  }

  Status Run(rt::KernelContext& ctx) override {
    const Dims& d = d_;
    const float* filter = ctx.input(1)->data_as<float>();
    const float* in = ctx.input(2)->data_as<float>();
    const rt::RtTensor* bias_t = ctx.input(3);
    const float* bias = bias_t ? bias_t->data_as<float>() : nullptr;
    float* out = ctx.output(0)->data_as<float>();
    const int64_t cin = d.in_c, cout = d.out_c;
    const float lo = act_min_, hi = act_max_;
    const int64_t rows = int64_t{d.batch} * d.out_d * d.out_h;
    // Output pixel (od, oh, ow) receives tap k from input position i when o = i*s - p + k*dil,
    // i.e. i = (o + p - k*dil) / s if that divides exactly and lies inside the input.
    ctx.threads().ParallelFor(rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int oh = static_cast<int>(row % d.out_h);
        const int od = static_cast<int>(row / d.out_h % d.out_d);
        const int n = static_cast<int>(row / (int64_t{d.out_h} * d.out_d));
        for (int ow = 0; ow < d.out_w; ++ow) {
          float* acc = out + (row * d.out_w + ow) * cout;
          std::fill_n(acc, cout, 0.0f);
          for (int kd = 0; kd < d.k_d; ++kd) {
            const int td = od + d.pad_d - kd * d.dil_d;
            if (td < 0 || td % d.stride_d != 0 || td / d.stride_d >= d.in_d) continue;
            const int id = td / d.stride_d;
            for (int kh = 0; kh < d.k_h; ++kh) {
              const int th = oh + d.pad_h - kh * d.dil_h;
              if (th < 0 || th % d.stride_h != 0 || th / d.stride_h >= d.in_h) continue;
              const int ih = th / d.stride_h;
              for (int kw = 0; kw < d.k_w; ++kw) {
                const int tw = ow + d.pad_w - kw * d.dil_w;
                if (tw < 0 || tw % d.stride_w != 0 || tw / d.stride_w >= d.in_w) continue;
                const int iw = tw / d.stride_w;
                const float* x = in + (((int64_t{n} * d.in_d + id) * d.in_h + ih) * d.in_w + iw) * cin;
                const float* w = filter + ((int64_t{kd} * d.k_h + kh) * d.k_w + kw) * cout * cin;
                for (int64_t co = 0; co < cout; ++co) {
                  const float* wr = w + co * cin;
                  float s = 0.0f;
                  for (int64_t ci = 0; ci < cin; ++ci) s += x[ci] * wr[ci];
                  acc[co] += s;
                }
              }
            }
          }
          for (int64_t co = 0; co < cout; ++co) acc[co] = ApplyFloatActivation(acc[co] + (bias ? bias[co] : 0.0f), lo, hi);
        }
      }
    });
    return Status::Ok();
  }

 private:
  Dims d_;
  float act_min_ = 0, act_max_ = 0;
};

// Only float32 (TFLite 2.9 rejects other types in both kernels).
Status RequireFloatModel(const rt::KernelCreateContext& cc, std::initializer_list<std::pair<const char*, int>> roles) {
  for (const auto& [role, index] : roles) {
    const Tensor* t = index < 0 ? cc.output(0) : cc.input(index);
    if (t && t->type != DType::kFloat32)
      return cc.Error(std::string(role) + " '" + t->name + "' is " + TypeName(t->type) +
                      ": only float32 is supported (" + DescribeTypes(cc, roles) + ")");
  }
  return Status::Ok();
}

}  // namespace

void Register(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_CONV_3D,
        [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
          RETURN_IF_ERROR(RequireFloatModel(cc, {{"input", 0}, {"filter", 1}, {"bias", 2}, {"output", -1}}));
          if (auto k = MakeConv3DF32(cc)) return k;
          return std::unique_ptr<rt::OpKernel>(new Conv3DRefKernel());
        });
  r.Add(tflite::BuiltinOperator_CONV_3D_TRANSPOSE,
        [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
          RETURN_IF_ERROR(RequireFloatModel(cc, {{"input", 2}, {"filter", 1}, {"bias", 3}, {"output", -1}}));
          return std::unique_ptr<rt::OpKernel>(new Conv3DTransposeKernel());
        });
}

}  // namespace edgeopt::kernels::conv3d
