// SVDF reference kernel (TFLite 2.9 semantics): a fully connected layer factored into a
// feature projection and a per-filter time filter over the last memory_size activations.
//   state[b, f, :] shifts left by one; state[b, f, M-1] = weights_feature[f] . x[b]
//   out[b, u] = act(bias[u] + sum_{r<rank} sum_m state[b, u*rank + r, m] * weights_time[u*rank + r, m])
// Inputs: input [B, I], weights_feature [F, I], weights_time [F, M], bias [F/rank] (optional),
// state (variable, [B, M*F]). Variants: float32; hybrid (int8 weights, float activations, the
// input quantized per row at run time); full integer (int8 input/output/feature weights, int16
// time weights and state, int32 bias; TFLite 2.9 requires RELU and applies only the int8 clamp).
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/lstm/lstm_math.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum : int { kInput = 0, kWeightsFeature = 1, kWeightsTime = 2, kBias = 3, kState = 4 };
enum class SvdfMode { kFloat, kHybrid, kInt8 };

class SvdfKernel : public rt::OpKernel {
 public:
  SvdfKernel(SvdfMode mode, int rank, int activation, bool asymmetric)
      : mode_(mode), rank_(rank), activation_(activation), asymmetric_(asymmetric) {}
  std::string variant() const override {
    return mode_ == SvdfMode::kFloat ? "svdf/f32/ref" : mode_ == SvdfMode::kHybrid ? "svdf/hybrid/ref" : "svdf/int8/ref";
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return static_cast<int64_t>(batch_) * filters_ * (input_size_ + memory_);
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 5, 5));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    for (int i : {kInput, kWeightsFeature, kWeightsTime, kState})
      if (!ctx.input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* t = ctx.input(i);
      if (t && t->def && t->def->sparsity)
        return ctx.UnsupportedError("sparse tensor " + Describe(*t) + " is not supported; densify the model");
    }
    const rt::RtTensor* input = ctx.input(kInput);
    const rt::RtTensor* wf = ctx.input(kWeightsFeature);
    const rt::RtTensor* wt = ctx.input(kWeightsTime);
    const rt::RtTensor* bias = ctx.input(kBias);
    const rt::RtTensor* state = ctx.input(kState);
    if (input->rank() != 2) return ctx.Error("input must be [batch, input_size], is " + Describe(*input));
    if (wf->rank() != 2 || wt->rank() != 2)
      return ctx.Error("weights must be 2-D, are " + Describe(*wf) + " and " + Describe(*wt));
    batch_ = input->dim(0);
    input_size_ = input->dim(1);
    filters_ = wf->dim(0);
    memory_ = wt->dim(1);
    if (rank_ <= 0 || filters_ % rank_ != 0)
      return ctx.Error("rank " + std::to_string(rank_) + " must be > 0 and divide the " + std::to_string(filters_) +
                       " filters");
    units_ = filters_ / rank_;
    if (wf->dim(1) != input_size_)
      return ctx.Error("weights_feature " + Describe(*wf) + " must have " + std::to_string(input_size_) + " columns");
    if (wt->dim(0) != filters_ || memory_ <= 0)
      return ctx.Error("weights_time " + Describe(*wt) + " must be [" + std::to_string(filters_) + ", memory_size > 0]");
    if (bias && bias->shape != rt::Shape{units_})
      return ctx.Error("bias must be [" + std::to_string(units_) + "], is " + Describe(*bias));
    if (!state->def || !state->def->is_variable) return ctx.Error("state " + Describe(*state) + " must be a variable tensor");
    if (state->shape != rt::Shape{batch_, memory_ * filters_})
      return ctx.Error("state must be [" + std::to_string(batch_) + ", " + std::to_string(memory_ * filters_) + "], is " +
                       Describe(*state));
    const rt::RtTensor* out = ctx.output(0);
    struct Want {
      DType in, wf, wt, bias, state, out;
    };
    const Want w = mode_ == SvdfMode::kFloat
                       ? Want{DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat32}
                   : mode_ == SvdfMode::kHybrid
                       ? Want{DType::kFloat32, DType::kInt8, DType::kInt8, DType::kFloat32, DType::kFloat32, DType::kFloat32}
                       : Want{DType::kInt8, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt16, DType::kInt8};
    if (input->type != w.in || wf->type != w.wf || wt->type != w.wt || (bias && bias->type != w.bias) ||
        state->type != w.state || out->type != w.out)
      return ctx.Error("types do not match the " + variant() + " variant: input " + Describe(*input) + ", weights " +
                       Describe(*wf) + " / " + Describe(*wt) + ", state " + Describe(*state) + ", output " + Describe(*out));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch_, units_}));
    if (mode_ == SvdfMode::kInt8) {
      if (activation_ != tflite::ActivationFunctionType_RELU)
        return ctx.UnsupportedError("integer SVDF supports only the RELU activation (as TFLite 2.9)");
      for (const rt::RtTensor* t : {input, wf, wt, state, out})
        if (t->scale() <= 0) return ctx.Error("integer SVDF tensor " + Describe(*t) + " has no quantization scale");
      // Products in float, as TFLite computes them, then decomposed.
      const float s1 = input->scale() * wf->scale() / state->scale();
      const float s2 = state->scale() * wt->scale() / out->scale();
      QuantizeMultiplier(s1, &scale1_a_, &scale1_b_);
      QuantizeMultiplier(s2, &scale2_a_, &scale2_b_);
      if (!std::isfinite(s1) || !std::isfinite(s2) || scale1_b_ > 30 || scale2_b_ > 30)
        return ctx.Error("quantization scales give an out-of-range multiplier");
      scratch_id_ = ctx.RequestScratch(static_cast<size_t>(batch_) * filters_ * sizeof(int32_t));
    } else {
      const size_t bytes = static_cast<size_t>(batch_) * filters_ * sizeof(float) +
                           (mode_ == SvdfMode::kHybrid ? static_cast<size_t>(batch_) * (input_size_ + 8) + 64 : 0);
      scratch_id_ = ctx.RequestScratch(bytes);
      if (mode_ == SvdfMode::kHybrid) PrepareHybridWeights(ctx);
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (mode_ == SvdfMode::kInt8) return InvokeInt8(ctx);
    const rt::RtTensor* input = ctx.input(kInput);
    float* state = ctx.input(kState)->data_as<float>();
    const int64_t state_size = static_cast<int64_t>(batch_) * memory_ * filters_;
    std::copy(state + 1, state + state_size, state);  // shift the memory left by one
    auto* base = ctx.Scratch<uint8_t>(scratch_id_);
    float* scratch = reinterpret_cast<float*>(base);
    std::fill_n(scratch, batch_ * filters_, 0.0f);
    const float* x = input->data_as<float>();
    const float* weights_time;
    if (mode_ == SvdfMode::kFloat) {
      lstm::MatVecAccumulate(ctx.input(kWeightsFeature)->data_as<float>(), filters_, input_size_, x, batch_, scratch);
      weights_time = ctx.input(kWeightsTime)->data_as<float>();
    } else {
      if (!hybrid_weights_ready_) PrepareHybridWeights(ctx);  // weights computed at run time
      float* sf = scratch + batch_ * filters_;
      int32_t* zp = reinterpret_cast<int32_t*>(sf + batch_);
      int8_t* q = reinterpret_cast<int8_t*>(zp + batch_);
      if (!lstm::IsZeroVector(x, batch_ * input_size_)) {
        for (int b = 0; b < batch_; ++b) {
          if (asymmetric_) lstm::AsymmetricQuantize(x + b * input_size_, input_size_, q + b * input_size_, &sf[b], &zp[b]);
          else lstm::SymmetricQuantize(x + b * input_size_, input_size_, q + b * input_size_, &sf[b]);
        }
        const rt::RtTensor* wf = ctx.input(kWeightsFeature);
        lstm::HybridMatVecAccumulate(wf->data_as<int8_t>(), filters_, input_size_, q, sf, asymmetric_ ? zp : nullptr,
                                     row_sums_.data(), wf->scale(), batch_, scratch);
      }
      weights_time = float_weights_time_.data();
    }
    for (int i = 0; i < batch_ * filters_; ++i) state[static_cast<int64_t>(i) * memory_ + memory_ - 1] = scratch[i];
    // Time filter per (batch, filter), then the sum over rank, bias and activation.
    float* out = ctx.output(0)->data_as<float>();
    const float* bias = ctx.input(kBias) ? ctx.input(kBias)->data_as<float>() : nullptr;
    for (int b = 0; b < batch_; ++b)
      for (int f = 0; f < filters_; ++f) {
        const float* s = state + (static_cast<int64_t>(b) * filters_ + f) * memory_;
        const float* wtf = weights_time + static_cast<int64_t>(f) * memory_;
        float dot = 0.0f;
        for (int m = 0; m < memory_; ++m) dot += wtf[m] * s[m];
        scratch[b * filters_ + f] = dot;
      }
    for (int i = 0; i < batch_ * units_; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < rank_; ++r) sum += scratch[i * rank_ + r];
      out[i] = sum + (bias ? bias[i % units_] : 0.0f);
    }
    lstm::ApplyActivation(out, batch_ * units_, activation_);
    return Status::Ok();
  }

 private:
  // Dequantized time weights and the feature weights' row sums, computed once.
  void PrepareHybridWeights(rt::KernelContext& ctx) {
    const rt::RtTensor* wf = ctx.input(kWeightsFeature);
    const rt::RtTensor* wt = ctx.input(kWeightsTime);
    hybrid_weights_ready_ = wf->data && wt->data;
    float_weights_time_.assign(static_cast<size_t>(filters_) * memory_, 0.0f);
    row_sums_.assign(filters_, 0);
    if (!hybrid_weights_ready_) return;
    const int8_t* t = wt->data_as<int8_t>();
    for (size_t i = 0; i < float_weights_time_.size(); ++i) float_weights_time_[i] = t[i] * wt->scale();
    const int8_t* f = wf->data_as<int8_t>();
    for (int r = 0; r < filters_; ++r)
      for (int i = 0; i < input_size_; ++i) row_sums_[r] += f[r * input_size_ + i];
  }

  Status InvokeInt8(rt::KernelContext& ctx) {
    const rt::RtTensor* input = ctx.input(kInput);
    const int8_t* x = input->data_as<int8_t>();
    const int32_t input_zp = input->zero_point();
    int16_t* state = ctx.input(kState)->data_as<int16_t>();
    const int64_t state_size = static_cast<int64_t>(batch_) * memory_ * filters_;
    std::copy(state + 1, state + state_size, state);
    const int8_t* wf = ctx.input(kWeightsFeature)->data_as<int8_t>();
    int16_t* latest = state + (memory_ - 1);
    for (int b = 0; b < batch_; ++b)
      for (int f = 0; f < filters_; ++f) {
        int32_t dot = 0;
        for (int i = 0; i < input_size_; ++i) dot += wf[f * input_size_ + i] * (x[b * input_size_ + i] - input_zp);
        dot = MultiplyByQuantizedMultiplier(dot, scale1_a_, scale1_b_);
        *latest = static_cast<int16_t>(std::min(std::max(-32768, dot), 32767));
        latest += memory_;
      }
    int32_t* scratch = ctx.Scratch<int32_t>(scratch_id_);
    const int16_t* wt = ctx.input(kWeightsTime)->data_as<int16_t>();
    for (int b = 0; b < batch_; ++b)
      for (int f = 0; f < filters_; ++f) {
        const int16_t* s = state + (static_cast<int64_t>(b) * filters_ + f) * memory_;
        int32_t dot = 0;
        for (int m = 0; m < memory_; ++m) dot += wt[f * memory_ + m] * s[m];
        scratch[b * filters_ + f] = dot;
      }
    const int32_t* bias = ctx.input(kBias) ? ctx.input(kBias)->data_as<int32_t>() : nullptr;
    const int32_t out_zp = ctx.output(0)->zero_point();
    int8_t* out = ctx.output(0)->data_as<int8_t>();
    for (int i = 0; i < batch_ * units_; ++i) {
      int32_t sum = 0;
      for (int r = 0; r < rank_; ++r) sum += scratch[i * rank_ + r];
      if (bias) sum += bias[i % units_];
      const int32_t v = MultiplyByQuantizedMultiplier(sum, scale2_a_, scale2_b_) + out_zp;
      out[i] = static_cast<int8_t>(std::min(std::max(-128, v), 127));
    }
    return Status::Ok();
  }

  SvdfMode mode_;
  int rank_, activation_;
  bool asymmetric_;
  int batch_ = 0, input_size_ = 0, filters_ = 0, memory_ = 0, units_ = 0;
  int scratch_id_ = -1;
  int32_t scale1_a_ = 0, scale2_a_ = 0;
  int scale1_b_ = 0, scale2_b_ = 0;
  std::vector<float> float_weights_time_;
  std::vector<int32_t> row_sums_;
  bool hybrid_weights_ready_ = false;
};

Expected<std::unique_ptr<rt::OpKernel>> CreateSvdf(const rt::KernelCreateContext& cc) {
  const Tensor* input = cc.input(kInput);
  const Tensor* wf = cc.input(kWeightsFeature);
  if (!input || !wf) return cc.Error("input (0) and weights_feature (1) are required");
  SvdfMode mode;
  if (input->type == DType::kFloat32 && wf->type == DType::kFloat32) mode = SvdfMode::kFloat;
  else if (input->type == DType::kFloat32 && wf->type == DType::kInt8) mode = SvdfMode::kHybrid;
  else if (input->type == DType::kInt8 && wf->type == DType::kInt8) mode = SvdfMode::kInt8;
  else
    return cc.Error("input " + TypeName(input->type) + " with weights " + TypeName(wf->type) + " is not supported");
  const auto& o = GetOptions<tflite::SVDFOptionsT>(cc.op);
  return std::unique_ptr<rt::OpKernel>(
      new SvdfKernel(mode, o.rank, o.fused_activation_function, o.asymmetric_quantize_inputs));
}

}  // namespace

void RegisterSvdfKernels(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_SVDF, CreateSvdf); }

}  // namespace edgeopt::kernels
