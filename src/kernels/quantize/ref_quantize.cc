// QUANTIZE and DEQUANTIZE, as TFLite 2.9:
// - QUANTIZE float32 -> uint8/int8/int16: round(x / scale) + zero_point (the division in double,
//   rounding half away from zero), clamped; per-channel output quantization along its axis.
// - QUANTIZE requantizing int8/uint8 -> int8/uint8, int16 -> int8/int16/int32,
//   int32 -> int8/int16: (x - zp_in) times one multiplier in_scale/out_scale, plus zp_out.
// - DEQUANTIZE uint8/int8/int16 -> float32 (per-tensor, or per-channel for int8/int16
//   weights), float16 -> float32. A DEQUANTIZE of a constant (float16 weights) runs once at
//   allocation time through the interpreter's constant folding.
#include <cmath>
#include <memory>

#include "core/half.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/quantize/ops.h"

namespace edgeopt::kernels::quantize {
namespace {

// Element i's channel for per-axis parameters: (i / inner) % channels.
struct AxisWalk {
  int64_t inner = 1;
  int64_t channels = 1;
};

Status MakeAxisWalk(const rt::KernelContext& ctx, const rt::RtTensor& t, const QuantParams& q, AxisWalk* w) {
  const int axis = q.quantized_dimension;
  if (axis < 0 || axis >= t.rank())
    return ctx.Error("quantized dimension " + std::to_string(axis) + " is out of range for " + Describe(t));
  if (static_cast<int64_t>(q.scale.size()) != t.shape[axis])
    return ctx.Error(std::to_string(q.scale.size()) + " scales for dimension " + std::to_string(axis) + " of " + Describe(t));
  if (!q.zero_point.empty() && q.zero_point.size() != q.scale.size() && q.zero_point.size() != 1)
    return ctx.Error("zero point count does not match the scale count for " + Describe(t));
  w->channels = t.shape[axis];
  w->inner = 1;
  for (int d = axis + 1; d < t.rank(); ++d) w->inner *= t.shape[d];
  return Status::Ok();
}

// NaN and out-of-range values convert to INT32_MIN; adding a negative zero point then wraps in
// TFLite 2.9's x86 build (to a large positive value that clamps to the type's maximum). A plain
// signed add would be undefined behaviour and did not reproduce it.
inline int32_t WrappingAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

class QuantizeKernel : public rt::OpKernel {
 public:
  QuantizeKernel(DType in, DType out) : in_(in), out_(out) {}

  std::string variant() const override {
    return "quantize/" + TypeName(in_) + "_" + TypeName(out_) + (per_channel_ ? "_per_channel" : "") + "/ref";
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    const rt::RtTensor& out = *ctx.output(0);
    if (!out.quant || out.quant->scale.empty()) return ctx.Error("output " + Describe(out) + " has no quantization parameters");
    per_channel_ = out.quant->scale.size() > 1;
    if (per_channel_) {
      if (in_ != DType::kFloat32) return ctx.Error("per-channel output quantization needs a float32 input");
      RETURN_IF_ERROR(MakeAxisWalk(ctx, out, *out.quant, &walk_));
      for (float s : out.quant->scale)
        if (!(s > 0)) return ctx.Error("output has a non-positive scale");
    } else {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, out, "output"));
      RETURN_IF_ERROR(RequireZeroPointInRange(ctx, out, "output"));
    }
    if (in_ != DType::kFloat32) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *in, "input"));
      if (in_ == DType::kInt16 && out_ == DType::kInt16 && (in->zero_point() != 0 || out.zero_point() != 0))
        return ctx.Error("int16 to int16 requantization needs zero points 0");
      const double effective = static_cast<double>(in->scale()) / static_cast<double>(out.scale());
      QuantizeMultiplier(effective, &multiplier_, &shift_);
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    switch (out_) {
      case DType::kInt8: return Run<int8_t>(in, out);
      case DType::kUInt8: return Run<uint8_t>(in, out);
      case DType::kInt16: return Run<int16_t>(in, out);
      case DType::kInt32: return Run<int32_t>(in, out);
      default: return ctx.UnsupportedError("output " + TypeName(out_) + " is not supported");
    }
  }

 private:
  template <typename Out>
  Status Run(const rt::RtTensor& in, rt::RtTensor& out) const {
    switch (in_) {
      case DType::kFloat32: return FromFloat<Out>(in, out);
      case DType::kInt8: return Requantize<int8_t, Out>(in, out);
      case DType::kUInt8: return Requantize<uint8_t, Out>(in, out);
      case DType::kInt16: return Requantize<int16_t, Out>(in, out);
      case DType::kInt32: return Requantize<int32_t, Out>(in, out);
      default: return Status::Ok();
    }
  }

  template <typename Out>
  Status FromFloat(const rt::RtTensor& in, rt::RtTensor& out) const {
    const float* x = in.data_as<float>();
    Out* y = out.data_as<Out>();
    const int64_t n = in.num_elements();
    const int32_t lo = std::numeric_limits<Out>::min(), hi = std::numeric_limits<Out>::max();
    if (per_channel_) {
      const QuantParams& q = *out.quant;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = (i / walk_.inner) % walk_.channels;
        const int32_t v = WrappingAdd(TruncateToInt32(std::round(x[i] / q.scale[c])), static_cast<int32_t>(q.zp(c)));
        y[i] = static_cast<Out>(std::min(std::max(v, lo), hi));
      }
      return Status::Ok();
    }
    const double scale = out.scale();
    const int32_t zp = out.zero_point();
    for (int64_t i = 0; i < n; ++i) {
      const int32_t v = WrappingAdd(TruncateToInt32(std::round(static_cast<double>(x[i]) / scale)), zp);
      y[i] = static_cast<Out>(std::min(std::max(v, lo), hi));
    }
    return Status::Ok();
  }

  template <typename In, typename Out>
  Status Requantize(const rt::RtTensor& in, rt::RtTensor& out) const {
    const In* x = in.data_as<In>();
    Out* y = out.data_as<Out>();
    const int64_t n = in.num_elements();
    const int32_t in_zp = in.zero_point(), out_zp = out.zero_point();
    const int32_t lo = std::numeric_limits<Out>::min(), hi = std::numeric_limits<Out>::max();
    for (int64_t i = 0; i < n; ++i) {
      const int32_t v = MultiplyByQuantizedMultiplier(static_cast<int32_t>(x[i]) - in_zp, multiplier_, shift_) + out_zp;
      y[i] = static_cast<Out>(std::max(std::min(v, hi), lo));
    }
    return Status::Ok();
  }

  DType in_, out_;
  bool per_channel_ = false;
  AxisWalk walk_;
  int32_t multiplier_ = 0;
  int shift_ = 0;
};

bool QuantizeSupported(DType in, DType out) {
  switch (in) {
    case DType::kFloat32: return TypeIn(out, {DType::kUInt8, DType::kInt8, DType::kInt16});
    case DType::kInt8:
    case DType::kUInt8: return TypeIn(out, {DType::kUInt8, DType::kInt8});
    case DType::kInt16: return TypeIn(out, {DType::kInt8, DType::kInt16, DType::kInt32});
    case DType::kInt32: return TypeIn(out, {DType::kInt8, DType::kInt16});
    default: return false;
  }
}

class DequantizeKernel : public rt::OpKernel {
 public:
  explicit DequantizeKernel(DType in) : in_(in) {}
  std::string variant() const override {
    return "dequantize/" + TypeName(in_) + (per_channel_ ? "_per_channel" : "") + "/ref";
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    if (ctx.output(0)->type != DType::kFloat32) return ctx.Error("output must be float32, got " + Describe(*ctx.output(0)));
    per_channel_ = false;
    if (in_ != DType::kFloat16) {
      if (!in->quant || in->quant->scale.empty()) return ctx.Error("input " + Describe(*in) + " has no quantization parameters");
      per_channel_ = in->quant->scale.size() > 1;
      if (in_ == DType::kInt16 && !per_channel_ && in->zero_point() != 0)
        return ctx.Error("int16 input must have zero point 0, got " + std::to_string(in->zero_point()));
      if (per_channel_) {
        if (in_ == DType::kUInt8) return ctx.Error("per-channel dequantization needs int8 or int16 input");
        RETURN_IF_ERROR(MakeAxisWalk(ctx, *in, *in->quant, &walk_));
      }
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    float* y = ctx.output(0)->data_as<float>();
    switch (in_) {
      case DType::kUInt8: Run<uint8_t>(in, y); break;
      case DType::kInt8: Run<int8_t>(in, y); break;
      case DType::kInt16: Run<int16_t>(in, y); break;
      case DType::kFloat16: {
        const uint16_t* x = in.data_as<uint16_t>();
        const int64_t n = in.num_elements();
        for (int64_t i = 0; i < n; ++i) y[i] = HalfToFloat(x[i]);
        break;
      }
      default: return ctx.UnsupportedError(TypeName(in_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Run(const rt::RtTensor& in, float* y) const {
    const T* x = in.data_as<T>();
    const int64_t n = in.num_elements();
    if (per_channel_) {
      const QuantParams& q = *in.quant;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = (i / walk_.inner) % walk_.channels;
        y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - static_cast<int32_t>(q.zp(c))) * q.scale[c];
      }
      return;
    }
    const double scale = in.scale();
    const int32_t zp = in.zero_point();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(scale * (static_cast<int32_t>(x[i]) - zp));
  }

  DType in_;
  bool per_channel_ = false;
  AxisWalk walk_;
};

Expected<std::unique_ptr<rt::OpKernel>> MakeQuantize(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out) return cc.Error("expects one input and one output");
  if (!QuantizeSupported(in->type, out->type))
    return cc.Error("input " + TypeName(in->type) + " with output " + TypeName(out->type) +
                    " is not supported (supported: float32 -> uint8/int8/int16, int8/uint8 -> int8/uint8, "
                    "int16 -> int8/int16/int32, int32 -> int8/int16)");
  return std::unique_ptr<rt::OpKernel>(new QuantizeKernel(in->type, out->type));
}

Expected<std::unique_ptr<rt::OpKernel>> MakeDequantize(const rt::KernelCreateContext& cc) {
  const Tensor* in = cc.input(0);
  if (!in) return cc.Error("input 0 is missing");
  const std::vector<DType> types = {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kFloat16};
  if (!TypeIn(in->type, types))
    return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: " + TypeListText(types) + ")");
  return std::unique_ptr<rt::OpKernel>(new DequantizeKernel(in->type));
}

}  // namespace

void RegisterQuantizeDequantize(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_QUANTIZE, MakeQuantize);
  r.Add(tflite::BuiltinOperator_DEQUANTIZE, MakeDequantize);
}

}  // namespace edgeopt::kernels::quantize
