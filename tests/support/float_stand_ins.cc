// Minimal float32 stand-ins for RESIZE_BILINEAR, CONCATENATION and MEAN, so that whole float
// models (MobileNetV2's MEAN, DeepLabV3's resize and concatenation) run end to end in tests and
// benchmarks before those families are merged. Plain loops, float32 only, LiteRT 2.9 semantics.
// Never part of the library: only through FloatStandInsForMissingOps().
#include "support/float_stand_ins.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"

namespace edgeopt::kernels {
namespace {

bool AllFloat(const rt::KernelCreateContext& cc, int data_inputs) {
  for (int i = 0; i < data_inputs; ++i)
    if (!cc.input(i) || cc.input(i)->type != DType::kFloat32) return false;
  return cc.num_outputs() == 1 && cc.output(0)->type == DType::kFloat32;
}

class ResizeBilinearTmp : public rt::OpKernel {
 public:
  ResizeBilinearTmp(bool align_corners, bool half_pixel) : align_(align_corners), half_(half_pixel) {}
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* size = ctx.input(1);
    if (in->rank() != 4) return ctx.Error("input must be 4-D");
    if (!size || size->type != DType::kInt32 || size->num_elements() != 2 || !size->data)
      return ctx.UnsupportedError("size must be a constant int32 [2] (temporary kernel)");
    const int32_t* s = size->data_as<int32_t>();
    return ctx.SetOutputShape(0, {in->dim(0), s[0], s[1], in->dim(3)});
  }
  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    rt::RtTensor* out = ctx.output(0);
    const int b_n = in->dim(0), ih = in->dim(1), iw = in->dim(2), c = in->dim(3);
    const int oh = out->dim(1), ow = out->dim(2);
    const float hs = align_ && oh > 1 ? (ih - 1) / static_cast<float>(oh - 1) : static_cast<float>(ih) / oh;
    const float ws = align_ && ow > 1 ? (iw - 1) / static_cast<float>(ow - 1) : static_cast<float>(iw) / ow;
    auto interp = [&](int v, float scale, int size, float* scaled, int* lo, int* hi) {
      *scaled = half_ ? (v + 0.5f) * scale - 0.5f : v * scale;
      *lo = std::max(static_cast<int>(std::floor(*scaled)), 0);
      *hi = std::min(static_cast<int>(std::ceil(*scaled)), size - 1);
    };
    const float* x = in->data_as<float>();
    float* y = out->data_as<float>();
    for (int b = 0; b < b_n; ++b)
      for (int oy = 0; oy < oh; ++oy) {
        float fy;
        int y0, y1;
        interp(oy, hs, ih, &fy, &y0, &y1);
        for (int ox = 0; ox < ow; ++ox) {
          float fx;
          int x0, x1;
          interp(ox, ws, iw, &fx, &x0, &x1);
          auto at = [&](int yy, int xx) { return x + ((static_cast<size_t>(b) * ih + yy) * iw + xx) * c; };
          const float* p00 = at(y0, x0);
          const float* p10 = at(y1, x0);
          const float* p01 = at(y0, x1);
          const float* p11 = at(y1, x1);
          float* o = y + ((static_cast<size_t>(b) * oh + oy) * ow + ox) * c;
          const float dy = fy - y0, dx = fx - x0;
          for (int ch = 0; ch < c; ++ch)
            o[ch] = p00[ch] * (1 - dy) * (1 - dx) + p10[ch] * dy * (1 - dx) + p01[ch] * (1 - dy) * dx +
                    p11[ch] * dy * dx;
        }
      }
    return Status::Ok();
  }
  std::string variant() const override { return "resize_bilinear/f32/temp-ref"; }

 private:
  const bool align_, half_;
};

class ConcatenationTmp : public rt::OpKernel {
 public:
  ConcatenationTmp(int axis, float lo, float hi) : axis_(axis), lo_(lo), hi_(hi) {}
  Status Prepare(rt::KernelContext& ctx) override {
    rt::Shape shape = ctx.input(0)->shape;
    const int rank = static_cast<int>(shape.size());
    axis_n_ = axis_ < 0 ? axis_ + rank : axis_;
    if (axis_n_ < 0 || axis_n_ >= rank) return ctx.Error("axis out of range");
    shape[axis_n_] = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* t = ctx.input(i);
      if (t->rank() != rank) return ctx.Error("inputs differ in rank");
      for (int d = 0; d < rank; ++d)
        if (d != axis_n_ && t->dim(d) != ctx.input(0)->dim(d)) return ctx.Error("inputs differ off the axis");
      shape[axis_n_] += t->dim(axis_n_);
    }
    return ctx.SetOutputShape(0, std::move(shape));
  }
  Status Invoke(rt::KernelContext& ctx) override {
    rt::RtTensor* out = ctx.output(0);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_n_; ++d) outer *= out->dim(d);
    for (int d = axis_n_ + 1; d < out->rank(); ++d) inner *= out->dim(d);
    const int64_t out_row = out->dim(axis_n_) * inner;
    float* y = out->data_as<float>();
    int64_t offset = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* t = ctx.input(i);
      const int64_t row = t->dim(axis_n_) * inner;
      const float* x = t->data_as<float>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < row; ++j) y[o * out_row + offset + j] = std::min(std::max(x[o * row + j], lo_), hi_);
      offset += row;
    }
    return Status::Ok();
  }
  std::string variant() const override { return "concatenation/f32/temp-ref"; }

 private:
  const int axis_;
  const float lo_, hi_;
  int axis_n_ = 0;
};

class MeanTmp : public rt::OpKernel {
 public:
  explicit MeanTmp(bool keep_dims) : keep_dims_(keep_dims) {}
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* axes = ctx.input(1);
    if (!axes || axes->type != DType::kInt32 || !axes->data)
      return ctx.UnsupportedError("axes must be a constant int32 tensor (temporary kernel)");
    reduce_.assign(in->rank(), 0);
    for (int64_t i = 0; i < axes->num_elements(); ++i) {
      int a = axes->data_as<int32_t>()[i];
      if (a < 0) a += in->rank();
      if (a < 0 || a >= in->rank()) return ctx.Error("axis out of range");
      reduce_[a] = 1;
    }
    rt::Shape shape;
    for (int d = 0; d < in->rank(); ++d) {
      if (!reduce_[d]) shape.push_back(in->dim(d));
      else if (keep_dims_) shape.push_back(1);
    }
    return ctx.SetOutputShape(0, std::move(shape));
  }
  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    rt::RtTensor* out = ctx.output(0);
    const int rank = in->rank();
    // Reduced axes forming one contiguous block (e.g. H, W of NHWC): [outer, reduce, inner].
    int first = rank, last = -1;
    for (int d = 0; d < rank; ++d)
      if (reduce_[d]) first = std::min(first, d), last = d;
    bool contiguous = last >= 0;
    for (int d = first; d <= last && contiguous; ++d) contiguous = reduce_[d];
    if (contiguous) {
      int64_t outer = 1, red = 1, inner = 1;
      for (int d = 0; d < rank; ++d) (d < first ? outer : d <= last ? red : inner) *= in->dim(d);
      const float* x = in->data_as<float>();
      float* y = out->data_as<float>();
      for (int64_t o = 0; o < outer; ++o) {
        float* yo = y + o * inner;
        std::fill(yo, yo + inner, 0.0f);
        for (int64_t r = 0; r < red; ++r)
          for (int64_t i = 0; i < inner; ++i) yo[i] += x[(o * red + r) * inner + i];
        for (int64_t i = 0; i < inner; ++i) yo[i] /= static_cast<float>(red);
      }
      return Status::Ok();
    }
    std::vector<double> acc(out->num_elements(), 0.0);
    int64_t count = 1;
    for (int d = 0; d < rank; ++d)
      if (reduce_[d]) count *= in->dim(d);
    std::vector<int32_t> idx(rank, 0);
    const float* x = in->data_as<float>();
    for (int64_t e = 0; e < in->num_elements(); ++e) {
      int64_t o = 0;
      for (int d = 0; d < rank; ++d)
        if (!reduce_[d]) o = o * in->dim(d) + idx[d];
      acc[o] += x[e];
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[d] < in->dim(d)) break;
        idx[d] = 0;
      }
    }
    float* y = out->data_as<float>();
    for (size_t i = 0; i < acc.size(); ++i) y[i] = static_cast<float>(acc[i] / count);
    return Status::Ok();
  }
  std::string variant() const override { return "mean/f32/temp-ref"; }

 private:
  const bool keep_dims_;
  std::vector<char> reduce_;
};

std::unique_ptr<rt::OpKernel> MakeStandIn(const rt::KernelCreateContext& cc) {
  switch (cc.op.code) {
    case tflite::BuiltinOperator_RESIZE_BILINEAR: {
      if (!AllFloat(cc, 1)) return nullptr;
      const auto& o = GetOptions<tflite::ResizeBilinearOptionsT>(cc.op);
      return std::make_unique<ResizeBilinearTmp>(o.align_corners, o.half_pixel_centers);
    }
    case tflite::BuiltinOperator_CONCATENATION: {
      if (!AllFloat(cc, cc.num_inputs())) return nullptr;
      const auto& o = GetOptions<tflite::ConcatenationOptionsT>(cc.op);
      float lo, hi;
      if (!FloatActivationRange(o.fused_activation_function, &lo, &hi)) return nullptr;
      return std::make_unique<ConcatenationTmp>(o.axis, lo, hi);
    }
    case tflite::BuiltinOperator_MEAN:
      if (!AllFloat(cc, 1)) return nullptr;
      return std::make_unique<MeanTmp>(GetOptions<tflite::ReducerOptionsT>(cc.op).keep_dims);
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace edgeopt::kernels

namespace edgeopt::testing {

std::shared_ptr<const rt::OpRegistry> FloatStandInsForMissingOps() {
  auto r = std::make_shared<rt::OpRegistry>();
  for (auto code : {tflite::BuiltinOperator_RESIZE_BILINEAR, tflite::BuiltinOperator_CONCATENATION,
                    tflite::BuiltinOperator_MEAN}) {
    Operator op;
    op.code = code;
    if (rt::OpRegistry::Builtin().Find(op)) continue;  // the real kernel exists: use it
    r->Add(code, [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
      if (auto k = kernels::MakeStandIn(cc)) return k;
      return cc.Error("the float32 stand-in kernel (tests/support/float_stand_ins.cc) handles float32 only");
    });
  }
  return r;
}

}  // namespace edgeopt::testing
