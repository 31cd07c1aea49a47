// AVERAGE_POOL_2D, MAX_POOL_2D (float32, uint8, int8, int16) and L2_POOL_2D (float32) reference
// kernels, TFLite 2.9 semantics. Windows count only the positions inside the input (padding is
// excluded, not zero); quantized pools work on the stored integers, so input and output must
// share scale and zero point (int16: zero point 0):
//   average   float: sum / count; integer: sum / count rounded half away from zero
//   max       the largest value
//   l2        sqrt(sum of squares / count)
// then the fused activation clamp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum class PoolKind { kAverage, kMax, kL2 };

const char* PoolName(PoolKind k) {
  switch (k) {
    case PoolKind::kAverage: return "average_pool2d";
    case PoolKind::kMax: return "max_pool2d";
    case PoolKind::kL2: return "l2_pool2d";
  }
  return "pool2d";
}

class PoolKernel : public rt::OpKernel {
 public:
  PoolKernel(PoolKind kind, DType type) : kind_(kind), type_(type) {}
  Status Prepare(rt::KernelContext& ctx) override;
  Status Invoke(rt::KernelContext& ctx) override;
  std::string variant() const override {
    return std::string(PoolName(kind_)) + "/" + (type_ == DType::kFloat32 ? "f32" : TypeName(type_)) + "/ref";
  }

 private:
  // Calls fn(out_index, window) for every output element, where window visits the in-bounds
  // input offsets of that element's window: window(visit) calls visit(input_index).
  template <typename Fn>
  void ForEachWindow(rt::KernelContext& ctx, Fn&& fn) const;

  template <typename T>
  void InvokeQuantized(rt::KernelContext& ctx);

  PoolKind kind_;
  DType type_;
  int batches_ = 0, channels_ = 0;
  WindowSpec spec_;
  WindowGeometry g_;
  float fact_min_ = 0, fact_max_ = 0;
  int32_t act_min_ = 0, act_max_ = 0;
};

template <typename Fn>
void PoolKernel::ForEachWindow(rt::KernelContext& ctx, Fn&& fn) const {
  const WindowGeometry g = g_;
  const int channels = channels_;
  ForEachClippedWindow(ctx.threads(), batches_, g, spec_, [&](const ClippedWindow& w) {
    for (int c = 0; c < channels; ++c) {
      const int64_t out_index = ((w.row * g.out_w) + w.ox) * channels + c;
      fn(out_index, [&](auto&& visit) {
        for (int fy = w.fy_begin; fy < w.fy_end; ++fy)
          for (int fx = w.fx_begin; fx < w.fx_end; ++fx)
            visit(((int64_t{w.b} * g.in_h + w.y0 + fy) * g.in_w + w.x0 + fx) * channels + c);
      });
    }
  });
}

Status PoolKernel::Prepare(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(rt::RtTensor * input, RequiredInput(ctx, 0));
  const rt::RtTensor* output = ctx.output(0);
  if (input->rank() != 4) return ctx.Error("input " + Describe(*input) + " must have rank 4 (NHWC)");
  const auto& o = GetOptions<tflite::Pool2DOptionsT>(ctx.op());
  spec_.padding = o.padding;
  spec_.stride_h = o.stride_h;
  spec_.stride_w = o.stride_w;
  spec_.filter_h = o.filter_height;
  spec_.filter_w = o.filter_width;
  RETURN_IF_ERROR(ComputeWindow(ctx, spec_, input->dim(1), input->dim(2), &g_));
  batches_ = input->dim(0);
  channels_ = input->dim(3);
  if (type_ == DType::kFloat32) {
    RETURN_IF_ERROR(FloatActivation(ctx, o.fused_activation_function, &fact_min_, &fact_max_));
  } else {
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *input, "input"));
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *output, "output"));
    const float si = input->scale(), so = output->scale();
    if (std::fabs(si - so) > 1e-6f * std::max(si, so) || input->zero_point() != output->zero_point())
      return ctx.Error("input " + Describe(*input) + " and output " + Describe(*output) +
                       " must have the same scale and zero point (pooling does not requantize)");
    if (type_ == DType::kInt16 && input->zero_point() != 0)
      return ctx.Error("int16 input and output must have zero point 0, got " + std::to_string(input->zero_point()));
    RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *output, &act_min_, &act_max_));
  }
  return ctx.SetOutputShape(0, {batches_, g_.out_h, g_.out_w, channels_});
}

template <typename T>
void PoolKernel::InvokeQuantized(rt::KernelContext& ctx) {
  const T* in = ctx.input(0)->data_as<T>();
  T* out = ctx.output(0)->data_as<T>();
  const int32_t lo = act_min_, hi = act_max_;
  if (kind_ == PoolKind::kAverage) {
    ForEachWindow(ctx, [&](int64_t i, auto&& window) {
      int32_t sum = 0, count = 0;
      window([&](int64_t j) {
        sum += in[j];
        ++count;
      });
      // count >= 1: a window always overlaps the input (ComputeWindow's geometry).
      const int32_t avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
      out[i] = static_cast<T>(std::clamp(avg, lo, hi));
    });
  } else {
    ForEachWindow(ctx, [&](int64_t i, auto&& window) {
      int32_t best = std::numeric_limits<int32_t>::min();
      window([&](int64_t j) { best = std::max<int32_t>(best, in[j]); });
      out[i] = static_cast<T>(std::clamp(best, lo, hi));
    });
  }
}

Status PoolKernel::Invoke(rt::KernelContext& ctx) {
  if (ctx.output(0)->num_elements() == 0) return Status::Ok();
  switch (type_) {
    case DType::kUInt8: InvokeQuantized<uint8_t>(ctx); return Status::Ok();
    case DType::kInt8: InvokeQuantized<int8_t>(ctx); return Status::Ok();
    case DType::kInt16: InvokeQuantized<int16_t>(ctx); return Status::Ok();
    default: break;
  }
  const float* in = ctx.input(0)->data_as<float>();
  float* out = ctx.output(0)->data_as<float>();
  const float lo = fact_min_, hi = fact_max_;
  switch (kind_) {
    case PoolKind::kAverage:
      ForEachWindow(ctx, [&](int64_t i, auto&& window) {
        float sum = 0;
        int count = 0;
        window([&](int64_t j) {
          sum += in[j];
          ++count;
        });
        out[i] = std::min(std::max(sum / static_cast<float>(count), lo), hi);
      });
      break;
    case PoolKind::kMax:
      ForEachWindow(ctx, [&](int64_t i, auto&& window) {
        float best = std::numeric_limits<float>::lowest();
        window([&](int64_t j) { best = std::max(best, in[j]); });
        out[i] = std::min(std::max(best, lo), hi);
      });
      break;
    case PoolKind::kL2:
      ForEachWindow(ctx, [&](int64_t i, auto&& window) {
        float sum_squares = 0;
        int count = 0;
        window([&](int64_t j) {
          sum_squares += in[j] * in[j];
          ++count;
        });
        out[i] = std::min(std::max(std::sqrt(sum_squares / static_cast<float>(count)), lo), hi);
      });
      break;
  }
  return Status::Ok();
}

rt::KernelFactory PoolFactory(PoolKind kind) {
  return [kind](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* in = cc.input(0);
    const Tensor* out = cc.output(0);
    if (!in || !out) return cc.Error("needs an input and an output tensor");
    const bool supported = kind == PoolKind::kL2 ? in->type == DType::kFloat32
                                                 : in->type == DType::kFloat32 || in->type == DType::kUInt8 ||
                                                       in->type == DType::kInt8 || in->type == DType::kInt16;
    if (!supported || out->type != in->type)
      return cc.Error(DescribeTypes(cc, {{"input", 0}, {"output", -1}}) + " is not supported");
    return std::unique_ptr<rt::OpKernel>(new PoolKernel(kind, in->type));
  };
}

}  // namespace

void RegisterPoolingKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_AVERAGE_POOL_2D, PoolFactory(PoolKind::kAverage));
  r.Add(tflite::BuiltinOperator_MAX_POOL_2D, PoolFactory(PoolKind::kMax));
  r.Add(tflite::BuiltinOperator_L2_POOL_2D, PoolFactory(PoolKind::kL2));
}

}  // namespace edgeopt::kernels
