// Fast int16 (16x8) RELU / RELU6, LEAKY_RELU and LOGISTIC / TANH (what TFLite 2.9 takes in int16), bit-exact
// with the reference kernels (activations/ref_relu.cc, ref_sigmoid.cc), whose parameters they
// take from the same functions (activations/quant_act_params.h); AVX2 loops in act16_avx2.cc.
// Before them every int16 activation ran the reference's scalar formula: a MediaPipe selfie
// segmentation quantized to 16x8 spent a third of its time in LOGISTIC, and a face detector's
// six standalone RELUs (rescaling, so not fused into their producers) 0.8 ms. The gemmlowp
// fixed-point path of LOGISTIC / TANH (power-of-two input scales) stays on the reference.
#include <algorithm>

#include "kernels/activations/quant_act_params.h"
#include "kernels/common/kernel_util.h"
#include "kernels/quant_fast/act16.h"
#include "kernels/quant_fast/quant_fast.h"

namespace edgeopt::kernels {
namespace {

class Act16Kernel final : public FastKernel {
 public:
  Act16Kernel(std::unique_ptr<rt::OpKernel> ref, tflite::BuiltinOperator op) : FastKernel(std::move(ref)), op_(op) {}

 protected:
  std::string FastVariant() const override {
    switch (op_) {
      case tflite::BuiltinOperator_LOGISTIC: return "logistic/int16/avx2";
      case tflite::BuiltinOperator_TANH: return "tanh/int16/avx2";
      case tflite::BuiltinOperator_RELU6: return "relu6/int16/avx2";
      case tflite::BuiltinOperator_LEAKY_RELU: return "leaky_relu/int16/avx2";
      default: return "relu/int16/avx2";
    }
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    if (sigmoid()) {
      const activations::Int16SigmoidScale s =
          activations::ComputeInt16SigmoidScale(in.scale(), op_ == tflite::BuiltinOperator_TANH);
      mult_ = s.multiplier;
      shift_ = s.left_shift;
      return !s.pot && act16::SigmoidApplies(mult_, shift_);
    }
    if (op_ == tflite::BuiltinOperator_LEAKY_RELU) {
      // Zero points 0 (the reference checked): each sign's rescale as RELU's, merged by the sign.
      const activations::LeakyReluMultipliers m = activations::ComputeLeakyReluMultipliers(
          in.scale(), GetOptions<tflite::LeakyReluOptionsT>(ctx.op()).alpha, out.scale());
      mult_ = m.identity;
      shift_ = m.identity_shift;
      alpha_mult_ = m.alpha;
      alpha_shift_ = m.alpha_shift;
      lo_ = -32768;
      hi_ = 32767;
      return mult_ >= 0 && shift_ <= 15 && alpha_mult_ >= 0 && alpha_shift_ <= 15;
    }
    const activations::QuantReluParams q = activations::ComputeQuantRelu(op_, DType::kInt16, in, out);
    mult_ = q.multiplier;
    shift_ = q.shift;
    lo_ = q.act_min;
    hi_ = q.act_max;
    // x << shift must fit int32 (|x| <= 2^15), as the reference's arithmetic does.
    return mult_ >= 0 && shift_ <= 15;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const int16_t* x = ctx.input(0)->data_as<int16_t>();
    int16_t* y = ctx.output(0)->data_as<int16_t>();
    const int64_t n = ctx.input(0)->num_elements();
    ctx.threads().ParallelFor(n, 16384, [&](int64_t begin, int64_t end) {
      if (sigmoid()) {
        act16::SigmoidRun(x + begin, y + begin, end - begin, op_ == tflite::BuiltinOperator_TANH, mult_, shift_);
      } else if (op_ == tflite::BuiltinOperator_LEAKY_RELU) {
        // Both slopes over blocks that stay in L1, then each value takes its sign's.
        constexpr int64_t kBlock = 2048;
        alignas(64) int16_t neg[kBlock];
        for (int64_t i = begin; i < end; i += kBlock) {
          const int64_t n_i = std::min(kBlock, end - i);
          act16::ReluRun(x + i, y + i, n_i, mult_, shift_, lo_, hi_);
          act16::ReluRun(x + i, neg, n_i, alpha_mult_, alpha_shift_, lo_, hi_);
          for (int64_t j = 0; j < n_i; ++j) y[i + j] = x[i + j] >= 0 ? y[i + j] : neg[j];
        }
      } else {
        act16::ReluRun(x + begin, y + begin, end - begin, mult_, shift_, lo_, hi_);
      }
    });
    return Status::Ok();
  }

 private:
  bool sigmoid() const { return op_ == tflite::BuiltinOperator_LOGISTIC || op_ == tflite::BuiltinOperator_TANH; }

  tflite::BuiltinOperator op_;
  int32_t mult_ = 0, lo_ = 0, hi_ = 0;
  int shift_ = 0;
  int32_t alpha_mult_ = 0;  // LEAKY_RELU's slope below 0
  int alpha_shift_ = 0;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeAct16Fast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out || in->type != DType::kInt16 || out->type != DType::kInt16) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<Act16Kernel>(std::move(ref), cc.op.code);
}

}  // namespace edgeopt::kernels
