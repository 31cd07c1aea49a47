// FAKE_QUANT(x float32) -> float32: x quantized to num_bits over [min, max] and dequantized,
// with TFLite's (= TensorFlow's FakeQuantWithMinMaxArgs) nudging, in float arithmetic step by
// step as its reference does:
//   scale = (max - min) / (qmax - qmin); zp = clamp(round(qmin - min / scale), qmin, qmax);
//   nudged_min = (qmin - zp) * scale; nudged_max = (qmax - zp) * scale;
//   y = round((clamp(x, nudged_min, nudged_max) - nudged_min) * (1 / scale)) * scale + nudged_min
// with qmin = 0, qmax = 2^num_bits - 1 and round = half away from zero. A NaN input gives
// nudged_min (the clamp's std::max(nudged_min, NaN) keeps nudged_min, as in TFLite).
//
// narrow_range: TFLite refuses it at Prepare ("only meant for weights"); here it runs with
// TensorFlow's meaning, qmin = 1 (hand-checked, no oracle). Checked options (TFLite only has
// debug checks): min < max, both finite, with a positive finite scale; num_bits in [1, 16]
// ([2, 16] with narrow_range) so the zero point fits TFLite's uint16. min > 0 or max < 0 run
// as in TFLite's release build (the zero point clamps to qmin or qmax).
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/common/planned_kernel.h"
#include "kernels/misc/misc.h"

namespace edgeopt::kernels::misc_ops {
namespace {

class FakeQuantKernel : public PlannedKernel {
 public:
  FakeQuantKernel() : PlannedKernel("fake_quant/float32/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const rt::RtTensor& in = *ctx.input(0);
    if (in.type != DType::kFloat32)
      return ctx.UnsupportedError("input " + Describe(in) + ": type " + TypeName(in.type) + " is not supported (float32)");
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const auto& o = GetOptions<tflite::FakeQuantOptionsT>(ctx.op());
    const int min_bits = o.narrow_range ? 2 : 1;
    if (o.num_bits < min_bits || o.num_bits > 16)
      return ctx.Error("num_bits " + std::to_string(o.num_bits) + " is outside [" + std::to_string(min_bits) + ", 16]");
    if (!std::isfinite(o.min) || !std::isfinite(o.max) || !(o.min < o.max))
      return ctx.Error("min " + std::to_string(o.min) + " and max " + std::to_string(o.max) +
                       " must be finite with min < max");
    const float qmin = o.narrow_range ? 1.0f : 0.0f;
    const float qmax = static_cast<float>((1 << o.num_bits) - 1);
    scale_ = (o.max - o.min) / (qmax - qmin);
    if (!(scale_ > 0.0f) || !std::isfinite(scale_))
      return ctx.Error("min " + std::to_string(o.min) + " and max " + std::to_string(o.max) +
                       " give an unusable scale " + std::to_string(scale_));
    const float zp_from_min = qmin - o.min / scale_;
    uint16_t zp;
    if (zp_from_min < qmin)
      zp = static_cast<uint16_t>(qmin);
    else if (zp_from_min > qmax)
      zp = static_cast<uint16_t>(qmax);
    else
      zp = static_cast<uint16_t>(std::round(zp_from_min));
    nudged_min_ = (qmin - zp) * scale_;
    nudged_max_ = (qmax - zp) * scale_;
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }

  Status Run(rt::KernelContext& ctx) override {
    const float* x = ctx.input(0)->data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    const int64_t n = ctx.input(0)->num_elements();
    const float inv_scale = 1.0f / scale_;
    for (int64_t i = 0; i < n; ++i) {
      const float clamped = std::min(nudged_max_, std::max(nudged_min_, x[i]));
      y[i] = std::round((clamped - nudged_min_) * inv_scale) * scale_ + nudged_min_;
    }
    return Status::Ok();
  }

 private:
  float scale_ = 1.0f, nudged_min_ = 0.0f, nudged_max_ = 0.0f;
};

}  // namespace

void RegisterFakeQuant(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_FAKE_QUANT, MakeKernelFactory<FakeQuantKernel>());
}

}  // namespace edgeopt::kernels::misc_ops
