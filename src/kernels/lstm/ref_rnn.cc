// UNIDIRECTIONAL_SEQUENCE_RNN and RNN reference kernels (TFLite 2.9 semantics):
//   h = activation(W x + R h + b), output = h, per time step.
// Inputs: input ([T, B, I] / [B, T, I] for the sequence op, [B, I] for RNN), input weights
// [U, I], recurrent weights [U, U], bias [U], hidden state (variable, B*U values).
// float32, or hybrid: int8 weights with float activations quantized per row at run time
// (symmetric, or asymmetric with asymmetric_quantize_inputs) as TFLite's RnnBatchStep.
#include <cstring>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/lstm/lstm_math.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum : int { kInput = 0, kInputWeights = 1, kRecurrentWeights = 2, kBias = 3, kHiddenState = 4 };

class RnnKernel : public rt::OpKernel {
 public:
  RnnKernel(bool sequence, bool hybrid, bool time_major, int activation, bool asymmetric)
      : sequence_(sequence), hybrid_(hybrid), time_major_(time_major), activation_(activation),
        asymmetric_(asymmetric) {}

  std::string variant() const override {
    return std::string(sequence_ ? "unidirectional_sequence_rnn" : "rnn") + (hybrid_ ? "/hybrid/ref" : "/f32/ref");
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return static_cast<int64_t>(max_time_) * batch_ * units_ * (input_size_ + units_);
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 5, 5));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    for (int i = 0; i < 5; ++i)
      if (!ctx.input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* t = ctx.input(i);
      if (t && t->def && t->def->sparsity)
        return ctx.UnsupportedError("sparse tensor " + Describe(*t) + " is not supported; densify the model");
    }
    const rt::RtTensor* input = ctx.input(kInput);
    const rt::RtTensor* w = ctx.input(kInputWeights);
    const rt::RtTensor* r = ctx.input(kRecurrentWeights);
    const rt::RtTensor* bias = ctx.input(kBias);
    const rt::RtTensor* h = ctx.input(kHiddenState);
    const int want_rank = sequence_ ? 3 : 2;
    if (input->rank() != want_rank)
      return ctx.Error("input must have rank " + std::to_string(want_rank) + ", is " + Describe(*input));
    if (sequence_) {
      max_time_ = time_major_ ? input->dim(0) : input->dim(1);
      batch_ = time_major_ ? input->dim(1) : input->dim(0);
    } else {
      max_time_ = 1;
      batch_ = input->dim(0);
    }
    input_size_ = input->dim(-1);
    if (w->rank() != 2 || w->dim(1) != input_size_)
      return ctx.Error("input weights must be [units, " + std::to_string(input_size_) + "], are " + Describe(*w));
    units_ = w->dim(0);
    if (r->shape != rt::Shape{units_, units_})
      return ctx.Error("recurrent weights must be [" + std::to_string(units_) + ", " + std::to_string(units_) +
                       "], are " + Describe(*r));
    if (bias->shape != rt::Shape{units_}) return ctx.Error("bias must be [" + std::to_string(units_) + "], is " + Describe(*bias));
    if (!h->def || !h->def->is_variable) return ctx.Error("hidden state " + Describe(*h) + " must be a variable tensor");
    if (h->num_elements() != static_cast<int64_t>(batch_) * units_)
      return ctx.Error("hidden state " + Describe(*h) + " must hold batch*units = " +
                       std::to_string(static_cast<int64_t>(batch_) * units_) + " values");
    const DType wt = hybrid_ ? DType::kInt8 : DType::kFloat32;
    if (input->type != DType::kFloat32 || w->type != wt || r->type != wt || bias->type != DType::kFloat32 ||
        h->type != DType::kFloat32 || ctx.output(0)->type != DType::kFloat32)
      return ctx.Error("needs float32 input/bias/state/output with " + TypeName(wt) + " weights, has input " +
                       Describe(*input) + ", weights " + Describe(*w) + "/" + Describe(*r) + ", bias " + Describe(*bias));
    rt::Shape out = input->shape;
    out.back() = units_;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(out)));
    if (hybrid_) {
      const size_t widest = static_cast<size_t>(std::max(input_size_, units_));
      scratch_id_ = ctx.RequestScratch(batch_ * widest + batch_ * (sizeof(float) + sizeof(int32_t)) + 64);
      if (asymmetric_) ComputeRowSums(ctx);
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (hybrid_ && asymmetric_ && !row_sums_ready_) ComputeRowSums(ctx);  // weights computed at run time
    const float* x = ctx.input(kInput)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    float* h = ctx.input(kHiddenState)->data_as<float>();
    if (time_major_ || !sequence_) {
      for (int t = 0; t < max_time_; ++t)
        Step(ctx, x + static_cast<int64_t>(t) * batch_ * input_size_, batch_, h,
             out + static_cast<int64_t>(t) * batch_ * units_);
    } else {
      for (int b = 0; b < batch_; ++b)
        for (int t = 0; t < max_time_; ++t) {
          const int64_t row = static_cast<int64_t>(b) * max_time_ + t;
          Step(ctx, x + row * input_size_, 1, h + static_cast<int64_t>(b) * units_, out + row * units_);
        }
    }
    return Status::Ok();
  }

 private:
  // Row sums of the int8 weights (the zero-point correction of asymmetric quantization).
  void ComputeRowSums(rt::KernelContext& ctx) {
    auto sums = [](const rt::RtTensor* m, std::vector<int32_t>& out) {
      out.assign(m->dim(0), 0);
      if (!m->data) return false;
      const int8_t* p = m->data_as<int8_t>();
      for (int i = 0; i < m->dim(0); ++i)
        for (int j = 0; j < m->dim(1); ++j) out[i] += p[i * m->dim(1) + j];
      return true;
    };
    row_sums_ready_ = sums(ctx.input(kInputWeights), w_row_sums_) && sums(ctx.input(kRecurrentWeights), r_row_sums_);
  }

  void Step(rt::KernelContext& ctx, const float* x, int nb, float* h, float* out) {
    const float* bias = ctx.input(kBias)->data_as<float>();
    for (int b = 0; b < nb; ++b) std::copy(bias, bias + units_, out + b * units_);
    const rt::RtTensor* w = ctx.input(kInputWeights);
    const rt::RtTensor* r = ctx.input(kRecurrentWeights);
    if (!hybrid_) {
      lstm::MatVecAccumulate(w->data_as<float>(), units_, input_size_, x, nb, out);
      lstm::MatVecAccumulate(r->data_as<float>(), units_, units_, h, nb, out);
    } else {
      auto* base = ctx.Scratch<uint8_t>(scratch_id_);
      float* sf = reinterpret_cast<float*>(base);
      int32_t* zp = reinterpret_cast<int32_t*>(sf + batch_);
      int8_t* q = reinterpret_cast<int8_t*>(zp + batch_);
      auto accumulate = [&](const float* v, int n, const rt::RtTensor* m, const std::vector<int32_t>& sums) {
        if (lstm::IsZeroVector(v, nb * n)) return;  // as TFLite: skip an all-zero operand
        for (int b = 0; b < nb; ++b) {
          if (asymmetric_) lstm::AsymmetricQuantize(v + b * n, n, q + b * n, &sf[b], &zp[b]);
          else lstm::SymmetricQuantize(v + b * n, n, q + b * n, &sf[b]);
        }
        lstm::HybridMatVecAccumulate(m->data_as<int8_t>(), units_, n, q, sf, asymmetric_ ? zp : nullptr, sums.data(),
                                     m->scale(), nb, out);
      };
      accumulate(x, input_size_, w, w_row_sums_);
      accumulate(h, units_, r, r_row_sums_);
    }
    lstm::ApplyActivation(out, nb * units_, activation_);
    std::copy(out, out + nb * units_, h);
  }

  bool sequence_, hybrid_, time_major_;
  int activation_;
  bool asymmetric_;
  int max_time_ = 0, batch_ = 0, input_size_ = 0, units_ = 0;
  int scratch_id_ = -1;
  std::vector<int32_t> w_row_sums_, r_row_sums_;
  bool row_sums_ready_ = false;
};

Expected<bool> IsHybrid(const rt::KernelCreateContext& cc) {
  const Tensor* input = cc.input(kInput);
  const Tensor* w = cc.input(kInputWeights);
  if (!input || !w) return cc.Error("input (0) and input weights (1) are required");
  if (input->type == DType::kFloat32 && w->type == DType::kFloat32) return false;
  if (input->type == DType::kFloat32 && w->type == DType::kInt8) return true;
  return cc.Error("input " + TypeName(input->type) + " with weights " + TypeName(w->type) +
                  " is not supported (float32/float32 or float32/int8 hybrid)");
}

Expected<std::unique_ptr<rt::OpKernel>> CreateSequenceRnn(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(bool hybrid, IsHybrid(cc));
  const auto& o = GetOptions<tflite::SequenceRNNOptionsT>(cc.op);
  return std::unique_ptr<rt::OpKernel>(
      new RnnKernel(true, hybrid, o.time_major, o.fused_activation_function, o.asymmetric_quantize_inputs));
}

Expected<std::unique_ptr<rt::OpKernel>> CreateRnn(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(bool hybrid, IsHybrid(cc));
  const auto& o = GetOptions<tflite::RNNOptionsT>(cc.op);
  return std::unique_ptr<rt::OpKernel>(
      new RnnKernel(false, hybrid, true, o.fused_activation_function, o.asymmetric_quantize_inputs));
}

}  // namespace

void RegisterRnnKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_RNN, CreateSequenceRnn);
  r.Add(tflite::BuiltinOperator_RNN, CreateRnn);
}

}  // namespace edgeopt::kernels
