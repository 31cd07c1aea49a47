// The float32 fast path of RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LEAKY_RELU, HARD_SWISH,
// LOGISTIC, TANH, SQRT, RSQRT, ABS, NEG, FLOOR, CEIL, SQUARE, EXP, LOG, SOFTMAX, LOG_SOFTMAX and
// PRELU (float_act.h): the reference kernel's Prepare validates the op, then the
// elements are cut into tasks over the interpreter's threads and run by the widest loop the
// CPU has (avx512, avx2, else a portable loop of the reference formulas).
#include "kernels/activations/float_act.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/activations/ops.h"
#include "kernels/common/broadcast.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels::activations {

void FloatActPortable(const FloatActParams& p, const float* x, float* y, int64_t n) {
  switch (p.act) {
    case FloatAct::kClamp:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], p.lo), p.hi);
      break;
    case FloatAct::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : x[i] * p.alpha;
      break;
    case FloatAct::kHardSwish:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * std::min(6.f, std::max(0.f, x[i] + 3.f)) / 6.f;
      break;
    case FloatAct::kLogistic:
      for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    case FloatAct::kSilu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * (1.0f / (1.0f + std::exp(-x[i])));
      break;
    case FloatAct::kTanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      break;
    case FloatAct::kSqrt:
      for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
      break;
    case FloatAct::kRsqrt:
      for (int64_t i = 0; i < n; ++i) y[i] = 1.f / std::sqrt(x[i]);
      break;
    case FloatAct::kAbs:
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]);
      break;
    case FloatAct::kNeg:
      for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      break;
    case FloatAct::kFloor:
      for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]);
      break;
    case FloatAct::kCeil:
      for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]);
      break;
    case FloatAct::kSquare:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
      break;
    case FloatAct::kExp:
      for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
      break;
    case FloatAct::kGelu:
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * static_cast<float>(M_SQRT1_2)));
      break;
    case FloatAct::kElu:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? std::expm1(x[i]) : x[i];
      break;
    case FloatAct::kGeluApprox:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.f + std::tanh(static_cast<float>(M_2_SQRTPI * M_SQRT1_2) * (v + 0.044715f * v * v * v)));
      }
      break;
    case FloatAct::kLog:
      for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
      break;
  }
}

void PreluPortable(const float* x, const float* alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : x[i] * alpha[i];
}

void RunFloatAct(rt::ThreadPool& pool, FloatActFn fn, const FloatActParams& p, const float* x, float* y, int64_t n) {
  // Below this many elements per task the hand-off costs more than it saves.
  const bool transcendental = p.act == FloatAct::kLogistic || p.act == FloatAct::kTanh || p.act == FloatAct::kExp ||
                              p.act == FloatAct::kLog || p.act == FloatAct::kSilu;
  const int64_t min_task = transcendental ? 4096 : 32768;
  const int64_t tasks = TaskCount(pool.num_threads(), n, min_task, 2);
  RunTasks(&pool, tasks, [&](int64_t t) {
    const int64_t i0 = t == 0 ? 0 : n * t / tasks / 16 * 16;
    const int64_t i1 = t + 1 == tasks ? n : n * (t + 1) / tasks / 16 * 16;
    fn(p, x + i0, y + i0, i1 - i0);
  });
}

namespace {

class FloatActKernel : public FastKernel {
 public:
  FloatActKernel(std::unique_ptr<rt::OpKernel> ref, FloatActParams p, FloatActFn fn, std::string variant)
      : FastKernel(std::move(ref)), p_(p), fn_(fn), variant_(std::move(variant)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext&) override { return true; }

  Status InvokeFast(rt::KernelContext& ctx) override {
    RunFloatAct(ctx.threads(), fn_, p_, ctx.input(0)->data_as<float>(), ctx.output(0)->data_as<float>(),
                ctx.input(0)->num_elements());
    return Status::Ok();
  }

  std::string FastVariant() const override { return variant_; }

 private:
  FloatActParams p_;
  FloatActFn fn_;
  std::string variant_;
};

std::unique_ptr<rt::OpKernel> MakeFloatAct(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || cc.num_inputs() < 1 || !cc.input(0) || cc.input(0)->type != DType::kFloat32) return nullptr;
  FloatActParams p;
  std::string name;
  switch (cc.op.code) {
    case tflite::BuiltinOperator_RELU: p.lo = 0; p.hi = INFINITY; name = "relu"; break;
    case tflite::BuiltinOperator_RELU6: p.lo = 0; p.hi = 6; name = "relu6"; break;
    case tflite::BuiltinOperator_RELU_N1_TO_1: p.lo = -1; p.hi = 1; name = "relu_n1_to_1"; break;
    case tflite::BuiltinOperator_RELU_0_TO_1: p.lo = 0; p.hi = 1; name = "relu_0_to_1"; break;
    case tflite::BuiltinOperator_LEAKY_RELU:
      p.act = FloatAct::kLeakyRelu;
      p.alpha = GetOptions<tflite::LeakyReluOptionsT>(cc.op).alpha;
      name = "leaky_relu";
      break;
    case tflite::BuiltinOperator_HARD_SWISH: p.act = FloatAct::kHardSwish; name = "hard_swish"; break;
    case tflite::BuiltinOperator_LOGISTIC: p.act = FloatAct::kLogistic; name = "logistic"; break;
    case tflite::BuiltinOperator_TANH: p.act = FloatAct::kTanh; name = "tanh"; break;
    case tflite::BuiltinOperator_SQRT: p.act = FloatAct::kSqrt; name = "sqrt"; break;
    case tflite::BuiltinOperator_RSQRT: p.act = FloatAct::kRsqrt; name = "rsqrt"; break;
    case tflite::BuiltinOperator_ABS: p.act = FloatAct::kAbs; name = "abs"; break;
    case tflite::BuiltinOperator_NEG: p.act = FloatAct::kNeg; name = "neg"; break;
    case tflite::BuiltinOperator_FLOOR: p.act = FloatAct::kFloor; name = "floor"; break;
    case tflite::BuiltinOperator_CEIL: p.act = FloatAct::kCeil; name = "ceil"; break;
    case tflite::BuiltinOperator_SQUARE: p.act = FloatAct::kSquare; name = "square"; break;
    case tflite::BuiltinOperator_EXP: p.act = FloatAct::kExp; name = "exp"; break;
    case tflite::BuiltinOperator_LOG: p.act = FloatAct::kLog; name = "log"; break;
    case tflite::BuiltinOperator_ELU: p.act = FloatAct::kElu; name = "elu"; break;
    case tflite::BuiltinOperator_GELU:
      p.act = GetOptions<tflite::GeluOptionsT>(cc.op).approximate ? FloatAct::kGeluApprox : FloatAct::kGelu;
      name = "gelu";
      break;
    default: return nullptr;
  }
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  std::string isa;
  const FloatActFn fn = WidestLoop<FloatActFn>(cc.cpu, FloatActPortable, FloatActAvx2, FloatActAvx512, &isa);
  return std::make_unique<FloatActKernel>(std::move(ref), p, fn, name + "/float32/" + isa);
}

// PRELU float32 (float_act.h). The reference's Prepare validates the op; this path takes alpha
// broadcast over leading dimensions only (per channel [C] or [1, 1, C], per position [H, W, C],
// one value, the same shape), so that along the flat input alpha repeats with a period of P
// values; any other broadcast (e.g. [1, H, 1, 1]) stays with the reference kernel. Short periods
// (P < kMinRun) are repeated into a run of at least kMinRun values at each invoke (alpha may be
// a runtime tensor), so the loop is never cut into runs of a few elements.
class FloatPreluKernel : public FastKernel {
 public:
  FloatPreluKernel(std::unique_ptr<rt::OpKernel> ref, PreluFn fn, std::string variant)
      : FastKernel(std::move(ref)), fn_(fn), variant_(std::move(variant)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    // Empty tensors (alpha with no values to repeat) stay with the reference kernel.
    if (ctx.input(1)->num_elements() == 0 || !BroadcastsOverLeadingDims(ctx.input(0)->shape, ctx.input(1)->shape))
      return false;
    period_ = ctx.input(1)->num_elements();
    rep_.assign(period_ < kMinRun ? static_cast<size_t>((kMinRun + period_ - 1) / period_ * period_) : 0, 0.0f);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const float* x = ctx.input(0)->data_as<float>();
    const float* alpha = ctx.input(1)->data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    const int64_t n = ctx.input(0)->num_elements();
    int64_t period = period_;
    if (!rep_.empty()) {
      for (size_t i = 0; i < rep_.size(); ++i) rep_[i] = alpha[i % static_cast<size_t>(period_)];
      alpha = rep_.data();
      period = static_cast<int64_t>(rep_.size());
    }
    const int64_t tasks = TaskCount(ctx.threads().num_threads(), n, 32768, 2);
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      const int64_t i0 = t == 0 ? 0 : n * t / tasks / 16 * 16;
      const int64_t i1 = t + 1 == tasks ? n : n * (t + 1) / tasks / 16 * 16;
      for (int64_t i = i0, a = i0 % period; i < i1; a = 0) {
        const int64_t m = std::min(i1 - i, period - a);
        fn_(x + i, alpha + a, y + i, m);
        i += m;
      }
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return variant_; }

 private:
  static constexpr int64_t kMinRun = 256;
  PreluFn fn_;
  std::string variant_;
  int64_t period_ = 1;
  std::vector<float> rep_;
};

std::unique_ptr<rt::OpKernel> MakeFloatPrelu(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || cc.num_inputs() != 2 || cc.num_outputs() != 1 || !cc.input(0) || !cc.input(1) || !cc.output(0) ||
      cc.input(0)->type != DType::kFloat32 || cc.input(1)->type != DType::kFloat32 || cc.output(0)->type != DType::kFloat32)
    return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  std::string isa;
  const PreluFn fn = WidestLoop<PreluFn>(cc.cpu, PreluPortable, PreluAvx2, PreluAvx512, &isa);
  return std::make_unique<FloatPreluKernel>(std::move(ref), fn, "prelu/float32/" + isa);
}

// SOFTMAX / LOG_SOFTMAX float32 -> float32 (float_act.h); rows cut into tasks.
class FloatSoftmaxKernel : public FastKernel {
 public:
  FloatSoftmaxKernel(std::unique_ptr<rt::OpKernel> ref, bool log, SoftmaxFn fn, std::string variant)
      : FastKernel(std::move(ref)), log_(log), fn_(fn), variant_(std::move(variant)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    p_.log = log_;
    p_.beta = log_ ? 1.0f : GetOptions<tflite::SoftmaxOptionsT>(ctx.op()).beta;
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const float* x = in.data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    const int64_t depth = in.shape.back();
    const int64_t rows = depth ? in.num_elements() / depth : 0;
    if (rows == 0) return Status::Ok();
    // Tasks of at least ~4K elements (whole rows), as for the other transcendental activations.
    const int64_t tasks = TaskCount(ctx.threads().num_threads(), rows, std::max<int64_t>(1, 4096 / depth), 2);
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      const int64_t r0 = rows * t / tasks, r1 = rows * (t + 1) / tasks;
      fn_(p_, x + r0 * depth, y + r0 * depth, r1 - r0, depth);
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return variant_; }

 private:
  bool log_;
  SoftmaxFn fn_;
  std::string variant_;
  SoftmaxParams p_;
};

std::unique_ptr<rt::OpKernel> MakeFloatSoftmax(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || cc.num_inputs() < 1 || cc.num_outputs() < 1 || !cc.input(0) || !cc.output(0) ||
      cc.input(0)->type != DType::kFloat32 || cc.output(0)->type != DType::kFloat32)
    return nullptr;
  const bool log = cc.op.code == tflite::BuiltinOperator_LOG_SOFTMAX;
  SoftmaxFn fn = nullptr;
  std::string isa;
  if (cc.cpu.has_avx512()) {
    fn = SoftmaxAvx512;
    isa = "avx512";
  } else if (cc.cpu.has_avx2_fma()) {
    fn = SoftmaxAvx2;
    isa = "avx2";
  } else {
    return nullptr;  // the reference kernel's loop
  }
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<FloatSoftmaxKernel>(std::move(ref), log, fn, std::string(log ? "log_softmax" : "softmax") + "/float32/" + isa);
}

}  // namespace

void RegisterFastFloatActivations(rt::OpRegistry& r) {
  for (auto op : {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6, tflite::BuiltinOperator_RELU_N1_TO_1,
                  tflite::BuiltinOperator_RELU_0_TO_1, tflite::BuiltinOperator_LEAKY_RELU,
                  tflite::BuiltinOperator_HARD_SWISH, tflite::BuiltinOperator_LOGISTIC, tflite::BuiltinOperator_TANH,
                  tflite::BuiltinOperator_SQRT, tflite::BuiltinOperator_RSQRT, tflite::BuiltinOperator_ABS,
                  tflite::BuiltinOperator_NEG, tflite::BuiltinOperator_FLOOR, tflite::BuiltinOperator_CEIL,
                  tflite::BuiltinOperator_SQUARE, tflite::BuiltinOperator_EXP, tflite::BuiltinOperator_LOG,
                  tflite::BuiltinOperator_GELU, tflite::BuiltinOperator_ELU})
    AddFastWithFallback(r, op, MakeFloatAct);
  for (auto op : {tflite::BuiltinOperator_SOFTMAX, tflite::BuiltinOperator_LOG_SOFTMAX})
    AddFastWithFallback(r, op, MakeFloatSoftmax);
  AddFastWithFallback(r, tflite::BuiltinOperator_PRELU, MakeFloatPrelu);
}

}  // namespace edgeopt::kernels::activations
