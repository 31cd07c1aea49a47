// Piecewise activations: RELU RELU6 RELU_N1_TO_1 RELU_0_TO_1 LEAKY_RELU PRELU HARD_SWISH, and
// the table-driven ELU / GELU. TFLite 2.9 semantics:
// - Quantized RELU-family: rescale by in_scale/out_scale, then clamp to the quantized bounds.
// - LEAKY_RELU: two multipliers (identity and alpha) chosen by the sign of x - zero_point.
// - PRELU: alpha broadcasts to the input; negative inputs use in_scale*alpha_scale/out_scale.
// - HARD_SWISH int8/uint8: LiteRT's 16-bit fixed-point formulation (hires input, "reluish"
//   multiplier, SaturatingDoublingHighMul to cancel rounding bias).
// - ELU int8, GELU int8/uint8: a 256-entry table built from the float function, like 2.9.
#include <cmath>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/byte_table.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/activations/ops.h"
#include "kernels/activations/quant_act_params.h"

namespace edgeopt::kernels::activations {

void ReluBounds(tflite::BuiltinOperator op, float* lo, float* hi) {
  switch (op) {
    case tflite::BuiltinOperator_RELU: *lo = 0.0f; *hi = INFINITY; break;
    case tflite::BuiltinOperator_RELU6: *lo = 0.0f; *hi = 6.0f; break;
    case tflite::BuiltinOperator_RELU_N1_TO_1: *lo = -1.0f; *hi = 1.0f; break;
    default: *lo = 0.0f; *hi = 1.0f; break;
  }
}

QuantReluParams ComputeQuantRelu(tflite::BuiltinOperator op, DType type, const rt::RtTensor& in,
                                 const rt::RtTensor& out) {
  QuantReluParams q;
  float lo = 0, hi = 0;
  ReluBounds(op, &lo, &hi);
  QuantizeMultiplier(static_cast<double>(in.scale() / out.scale()), &q.multiplier, &q.shift);
  const int32_t qmin = QMinOf(type), qmax = QMaxOf(type);
  const float scale = out.scale();
  const int32_t zp = out.zero_point();
  q.act_min = std::max(qmin, zp + static_cast<int32_t>(std::round(lo / scale)));
  q.act_max = std::isinf(hi) ? qmax : std::min(qmax, zp + static_cast<int32_t>(std::round(hi / scale)));
  return q;
}

namespace {

using Op = tflite::BuiltinOperator;

Status CheckUnary(rt::KernelContext& ctx) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
  const rt::RtTensor* out = ctx.output(0);
  if (out->type != in->type) return ctx.Error("output " + Describe(*out) + " must have the input type " + TypeName(in->type));
  return Status::Ok();
}

Status CheckQuant(rt::KernelContext& ctx, const rt::RtTensor& in, const rt::RtTensor& out) {
  RETURN_IF_ERROR(RequirePerTensorQuant(ctx, in, "input"));
  RETURN_IF_ERROR(RequirePerTensorQuant(ctx, out, "output"));
  RETURN_IF_ERROR(RequireZeroPointInRange(ctx, in, "input"));
  return RequireZeroPointInRange(ctx, out, "output");
}

template <typename T>
void ForEach(const rt::RtTensor& in, rt::RtTensor& out, auto&& f) {
  const T* x = in.data_as<T>();
  T* y = out.data_as<T>();
  const int64_t n = in.num_elements();
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// 8-bit inputs outside the reference mode: each output is a function of the input byte alone,
// so the kernel's own per-element formula evaluated on all 256 values, once at Prepare, is a
// table giving the same bytes; it is applied 64 elements at a time with AVX-512 VBMI (two
// vpermi2b), else by a plain lookup loop. The reference kernels, and other types, keep the
// formula (fn null: active() is false).
class TabulatedBytes {
 public:
  TabulatedBytes(DType type, ApplyByteTableFn fn)
      : fn_(type == DType::kInt8 || type == DType::kUInt8 ? fn : nullptr), type_(type) {}

  bool active() const { return fn_ != nullptr; }
  // Fills the table from one(x), x of the 8-bit type (Prepare); nothing when not active.
  template <typename One>
  void Build(One&& one) {
    if (!active()) return;
    if (type_ == DType::kInt8) Fill<int8_t>(one);
    else Fill<uint8_t>(one);
  }
  // The variant's last part.
  std::string Isa() const { return ByteTableOrRefIsa(fn_); }
  // Large tensors are split over the threads (chunks of at least 64 KB).
  void Run(rt::KernelContext& ctx, const rt::RtTensor& in, rt::RtTensor& out) const {
    const auto* x = static_cast<const uint8_t*>(in.data);
    auto* y = static_cast<uint8_t*>(out.data);
    const int64_t n = in.num_elements();
    constexpr int64_t kChunk = int64_t{1} << 16;
    if (n < 2 * kChunk || ctx.threads().num_threads() == 1) return fn_(table_, x, y, n);
    ctx.threads().ParallelFor(n, kChunk, [&](int64_t b, int64_t e) { fn_(table_, x + b, y + b, e - b); });
  }

 private:
  template <typename T, typename One>
  void Fill(One& one) {
    for (int v = std::numeric_limits<T>::min(); v <= std::numeric_limits<T>::max(); ++v)
      table_[static_cast<uint8_t>(static_cast<T>(v))] = static_cast<uint8_t>(one(static_cast<T>(v)));
  }

  ApplyByteTableFn fn_;
  DType type_;
  ByteTable table_{};
};

// ---------------------------------------------------------------------------------------------
// RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1

class ReluKernel : public rt::OpKernel {
 public:
  ReluKernel(Op op, DType type, ApplyByteTableFn table_fn) : op_(op), type_(type), bytes_(type, table_fn) {
    ReluBounds(op, &lo_, &hi_);
    switch (op) {
      case tflite::BuiltinOperator_RELU: name_ = "relu"; break;
      case tflite::BuiltinOperator_RELU6: name_ = "relu6"; break;
      case tflite::BuiltinOperator_RELU_N1_TO_1: name_ = "relu_n1_to_1"; break;
      default: name_ = "relu_0_to_1"; break;
    }
  }
  std::string variant() const override { return name_ + "/" + TypeName(type_) + "/" + bytes_.Isa(); }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckUnary(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(CheckQuant(ctx, in, out));
      if (type_ == DType::kInt16 && (in.zero_point() != 0 || out.zero_point() != 0))
        return ctx.Error("int16 input and output must have zero point 0");
      const QuantReluParams q = ComputeQuantRelu(op_, type_, in, out);
      multiplier_ = q.multiplier;
      shift_ = q.shift;
      act_min_ = q.act_min;
      act_max_ = q.act_max;
      in_zp_ = in.zero_point();
      out_zp_ = out.zero_point();
      bytes_.Build([this](auto x) { return One(x); });
    }
    return ctx.SetOutputShape(0, in.shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (bytes_.active()) {
      bytes_.Run(ctx, in, out);
      return Status::Ok();
    }
    switch (type_) {
      case DType::kFloat32: {
        const float lo = lo_, hi = hi_;
        ForEach<float>(in, out, [lo, hi](float x) { return std::min(std::max(x, lo), hi); });
        break;
      }
      case DType::kUInt8: ForEach<uint8_t>(in, out, [this](uint8_t x) { return One<uint8_t>(x); }); break;
      case DType::kInt8: ForEach<int8_t>(in, out, [this](int8_t x) { return One<int8_t>(x); }); break;
      case DType::kInt16: ForEach<int16_t>(in, out, [this](int16_t x) { return One<int16_t>(x); }); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  T One(T x) const {
    const int32_t v = out_zp_ + MultiplyByQuantizedMultiplier(static_cast<int32_t>(x) - in_zp_, multiplier_, shift_);
    return static_cast<T>(std::min(act_max_, std::max(act_min_, v)));
  }

  Op op_;
  DType type_;
  TabulatedBytes bytes_;
  float lo_, hi_;
  std::string name_;
  int32_t multiplier_ = 0, in_zp_ = 0, out_zp_ = 0, act_min_ = 0, act_max_ = 0;
  int shift_ = 0;
};

// ---------------------------------------------------------------------------------------------
// LEAKY_RELU

class LeakyReluKernel : public rt::OpKernel {
 public:
  LeakyReluKernel(DType type, ApplyByteTableFn table_fn) : type_(type), bytes_(type, table_fn) {}
  std::string variant() const override { return "leaky_relu/" + TypeName(type_) + "/" + bytes_.Isa(); }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckUnary(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    alpha_ = GetOptions<tflite::LeakyReluOptionsT>(ctx.op()).alpha;
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(CheckQuant(ctx, in, out));
      if (type_ == DType::kInt16 && (in.zero_point() != 0 || out.zero_point() != 0))
        return ctx.Error("int16 input and output must have zero point 0");
      const LeakyReluMultipliers m = ComputeLeakyReluMultipliers(in.scale(), alpha_, out.scale());
      mult_alpha_ = m.alpha;
      shift_alpha_ = m.alpha_shift;
      mult_identity_ = m.identity;
      shift_identity_ = m.identity_shift;
      in_zp_ = in.zero_point();
      out_zp_ = out.zero_point();
      bytes_.Build([this](auto x) { return One(x); });
    }
    return ctx.SetOutputShape(0, in.shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (bytes_.active()) {
      bytes_.Run(ctx, in, out);
      return Status::Ok();
    }
    switch (type_) {
      case DType::kFloat32: {
        const float alpha = alpha_;
        ForEach<float>(in, out, [alpha](float x) { return x > 0 ? x : x * alpha; });
        break;
      }
      case DType::kUInt8: ForEach<uint8_t>(in, out, [this](uint8_t x) { return One<uint8_t>(x); }); break;
      case DType::kInt8: ForEach<int8_t>(in, out, [this](int8_t x) { return One<int8_t>(x); }); break;
      case DType::kInt16: ForEach<int16_t>(in, out, [this](int16_t x) { return One<int16_t>(x); }); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  T One(T x) const {
    const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    const int32_t v = static_cast<int32_t>(x) - in_zp_;
    const int32_t o = v >= 0 ? out_zp_ + MultiplyByQuantizedMultiplier(v, mult_identity_, shift_identity_)
                             : out_zp_ + MultiplyByQuantizedMultiplier(v, mult_alpha_, shift_alpha_);
    return static_cast<T>(std::min(hi, std::max(lo, o)));
  }

  DType type_;
  TabulatedBytes bytes_;
  float alpha_ = 0;
  int32_t mult_alpha_ = 0, mult_identity_ = 0, in_zp_ = 0, out_zp_ = 0;
  int shift_alpha_ = 0, shift_identity_ = 0;
};

// ---------------------------------------------------------------------------------------------
// PRELU

class PreluKernel : public rt::OpKernel {
 public:
  explicit PreluKernel(DType type) : type_(type) {}
  std::string variant() const override { return "prelu/" + TypeName(type_) + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* alpha, RequiredInput(ctx, 1));
    const rt::RtTensor* out = ctx.output(0);
    if (alpha->type != in->type) return ctx.Error("alpha " + Describe(*alpha) + " must have the input type " + TypeName(in->type));
    if (out->type != in->type) return ctx.Error("output " + Describe(*out) + " must have the input type " + TypeName(in->type));
    if (!MakeBroadcastPlan(in->shape, alpha->shape, &plan_))
      return ctx.Error("alpha " + rt::ShapeToString(alpha->shape) + " does not broadcast to the input " +
                       rt::ShapeToString(in->shape));
    if (plan_.out != in->shape)
      return ctx.Error("alpha " + rt::ShapeToString(alpha->shape) + " would broadcast the input " +
                       rt::ShapeToString(in->shape) + " to " + rt::ShapeToString(plan_.out));
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(CheckQuant(ctx, *in, *out));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *alpha, "alpha"));
      QuantizeMultiplier(static_cast<double>(in->scale() / out->scale()), &mult1_, &shift1_);
      QuantizeMultiplier(static_cast<double>(in->scale() * alpha->scale() / out->scale()), &mult2_, &shift2_);
      in_offset_ = -in->zero_point();
      alpha_offset_ = -alpha->zero_point();
      out_offset_ = out->zero_point();
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& alpha = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    switch (type_) {
      case DType::kFloat32:
        BroadcastBinary(plan_, in.data_as<float>(), alpha.data_as<float>(), out.data_as<float>(),
                        [](float x, float a) { return x >= 0.0f ? x : x * a; });
        break;
      case DType::kUInt8: Quantized<uint8_t>(in, alpha, out); break;
      case DType::kInt8: Quantized<int8_t>(in, alpha, out); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Quantized(const rt::RtTensor& in, const rt::RtTensor& alpha, rt::RtTensor& out) const {
    const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    BroadcastBinary(plan_, in.data_as<T>(), alpha.data_as<T>(), out.data_as<T>(), [&](T x, T a) {
      const int32_t v = in_offset_ + x;
      int32_t o;
      if (v >= 0) {
        o = MultiplyByQuantizedMultiplier(v, mult1_, shift1_);
      } else {
        o = MultiplyByQuantizedMultiplier(v * (alpha_offset_ + a), mult2_, shift2_);
      }
      o += out_offset_;
      return static_cast<T>(std::min(hi, std::max(lo, o)));
    });
  }

  DType type_;
  BroadcastPlan plan_;
  int32_t mult1_ = 0, mult2_ = 0, in_offset_ = 0, alpha_offset_ = 0, out_offset_ = 0;
  int shift1_ = 0, shift2_ = 0;
};

// ---------------------------------------------------------------------------------------------
// HARD_SWISH

inline int16_t SaturatingLeftShift16(int16_t value, int amount) {
  int64_t r = static_cast<int64_t>(value) * (int64_t{1} << amount);
  r = std::min<int64_t>(std::max<int64_t>(r, -32768), 32767);
  return static_cast<int16_t>(r);
}

// Like SaturatingRoundingDoublingHighMul but truncating (ARM SQDMULH).
inline int16_t SaturatingDoublingHighMul16(int16_t a, int16_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int16_t>::min();
  const int32_t ab = static_cast<int32_t>(a) * static_cast<int32_t>(b);
  const auto high = static_cast<int16_t>(ab / (1 << 15));
  return overflow ? std::numeric_limits<int16_t>::max() : high;
}

int16_t DownScaleMultiplierTo16(int32_t m) {
  constexpr int32_t kRoundingOffset = 1 << 15;
  if (m >= std::numeric_limits<int32_t>::max() - kRoundingOffset) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((m + kRoundingOffset) >> 16);
}

class HardSwishKernel : public rt::OpKernel {
 public:
  HardSwishKernel(DType type, ApplyByteTableFn table_fn) : type_(type), bytes_(type, table_fn) {}
  std::string variant() const override { return "hard_swish/" + TypeName(type_) + "/" + bytes_.Isa(); }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckUnary(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(CheckQuant(ctx, in, out));
      in_zp_ = in.zero_point();
      out_zp_ = out.zero_point();
      const float hires_input_scale = (1.0f / 128.0f) * in.scale();
      const float reluish_scale = 3.0f / 32768.0f;
      const float output_multiplier = hires_input_scale / out.scale();
      int32_t m32;
      QuantizeMultiplier(output_multiplier, &m32, &out_exponent_);
      out_mult16_ = DownScaleMultiplierTo16(m32);
      if (out_exponent_ > 0)
        return ctx.Error("output scale is too small for the input scale (input/output scale ratio >= 128)");
      const float reluish_multiplier = hires_input_scale / reluish_scale;
      QuantizeMultiplier(reluish_multiplier, &m32, &reluish_exponent_);
      reluish_mult16_ = DownScaleMultiplierTo16(m32);
      bytes_.Build([this](auto x) { return One(x); });
    }
    return ctx.SetOutputShape(0, in.shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (bytes_.active()) {
      bytes_.Run(ctx, in, out);
      return Status::Ok();
    }
    switch (type_) {
      case DType::kFloat32:
        ForEach<float>(in, out, [](float x) { return x * std::min(6.f, std::max(0.f, x + 3.f)) / 6.f; });
        break;
      case DType::kUInt8: ForEach<uint8_t>(in, out, [this](uint8_t x) { return One<uint8_t>(x); }); break;
      case DType::kInt8: ForEach<int8_t>(in, out, [this](int8_t x) { return One<int8_t>(x); }); break;
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  T One(T x) const {
    const auto input_value = static_cast<int16_t>(x - in_zp_);
    const auto hires = static_cast<int16_t>(input_value * (1 << 7));
    const int16_t preshift_output = fp::SRDHM<int16_t>(hires, out_mult16_);
    int16_t reluish = hires;
    if (reluish_exponent_ > 0) reluish = SaturatingLeftShift16(reluish, reluish_exponent_ - 1);
    reluish = fp::SRDHM<int16_t>(reluish, reluish_mult16_);
    if (reluish_exponent_ > 0) reluish = SaturatingLeftShift16(reluish, 1);
    if (reluish_exponent_ < 0) reluish = fp::RoundingDivByPOT<int16_t>(reluish, -reluish_exponent_);
    // [-1, 1] -> [0, 1] in Q0.15.
    reluish = static_cast<int16_t>((static_cast<int32_t>(reluish) + (1 << 15)) >> 1);
    const int16_t preshift = SaturatingDoublingHighMul16(reluish, preshift_output);
    int32_t o = fp::RoundingDivByPOT<int16_t>(preshift, -out_exponent_);
    o += out_zp_;
    o = std::min<int32_t>(o, std::numeric_limits<T>::max());
    o = std::max<int32_t>(o, std::numeric_limits<T>::min());
    return static_cast<T>(o);
  }

  DType type_;
  TabulatedBytes bytes_;
  int32_t in_zp_ = 0, out_zp_ = 0;
  int16_t out_mult16_ = 0, reluish_mult16_ = 0;
  int out_exponent_ = 0, reluish_exponent_ = 0;
};

// ---------------------------------------------------------------------------------------------
// ELU and GELU: float formula, or a 256-entry table for 8-bit types.

float EluFloat(float x) { return x < 0.0f ? std::expm1(x) : x; }

float GeluApproxFloat(float x) {
  constexpr float kSqrt2dPi = static_cast<float>(M_2_SQRTPI * M_SQRT1_2);  // sqrt(2 / pi)
  return 0.5f * x * (1.f + std::tanh(kSqrt2dPi * (x + 0.044715f * x * x * x)));
}
float GeluExactFloat(float x) { return 0.5f * x * (1.f + std::erf(x * static_cast<float>(M_SQRT1_2))); }
// The table for the exact form evaluates erf in double, as 2.9's GeluTransform does.
float GeluExactTable(float x) {
  return static_cast<float>(static_cast<double>(0.5f * x) * (1.f + std::erf(static_cast<double>(x) * M_SQRT1_2)));
}

class TableKernel : public rt::OpKernel {
 public:
  TableKernel(Op op, DType type, ApplyByteTableFn apply) : op_(op), type_(type), apply_(apply) {}
  std::string variant() const override {
    return std::string(op_ == tflite::BuiltinOperator_ELU ? "elu/" : "gelu/") + TypeName(type_) + "/" +
           (type_ == DType::kFloat32 ? "ref" : ByteTableIsa(apply_));
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckUnary(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    approximate_ = op_ == tflite::BuiltinOperator_GELU && GetOptions<tflite::GeluOptionsT>(ctx.op()).approximate;
    if (type_ != DType::kFloat32) {
      RETURN_IF_ERROR(CheckQuant(ctx, in, out));
      float (*f)(float) = op_ == tflite::BuiltinOperator_ELU ? EluFloat : (approximate_ ? GeluApproxFloat : GeluExactTable);
      if (type_ == DType::kInt8)
        table_ = BuildLut8<int8_t>(in.scale(), in.zero_point(), out.scale(), out.zero_point(), f);
      else
        table_ = BuildLut8<uint8_t>(in.scale(), in.zero_point(), out.scale(), out.zero_point(), f);
    }
    return ctx.SetOutputShape(0, in.shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (type_ == DType::kFloat32) {
      float (*f)(float) = op_ == tflite::BuiltinOperator_ELU ? EluFloat : (approximate_ ? GeluApproxFloat : GeluExactFloat);
      ForEach<float>(in, out, f);
      return Status::Ok();
    }
    apply_(table_, in.data, out.data, in.num_elements());
    return Status::Ok();
  }

 private:
  Op op_;
  DType type_;
  ApplyByteTableFn apply_;
  bool approximate_ = false;
  ByteTable table_{};
};

// ---------------------------------------------------------------------------------------------

std::vector<DType> SupportedTypes(Op op) {
  switch (op) {
    case tflite::BuiltinOperator_RELU:
    case tflite::BuiltinOperator_RELU6:
      return {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16};
    case tflite::BuiltinOperator_RELU_N1_TO_1:
    case tflite::BuiltinOperator_RELU_0_TO_1:
    case tflite::BuiltinOperator_PRELU:
    case tflite::BuiltinOperator_HARD_SWISH:
    case tflite::BuiltinOperator_GELU:
      return {DType::kFloat32, DType::kUInt8, DType::kInt8};
    case tflite::BuiltinOperator_LEAKY_RELU: return {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kInt16};
    case tflite::BuiltinOperator_ELU: return {DType::kFloat32, DType::kInt8};
    default: return {};
  }
}

rt::KernelFactory MakeFactory(Op op) {
  return [op](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* in = cc.input(0);
    if (!in) return cc.Error("input 0 is missing");
    const auto types = SupportedTypes(op);
    if (!TypeIn(in->type, types))
      return cc.Error("input type " + TypeName(in->type) + " is not supported (supported: " + TypeListText(types) + ")");
    // The 8-bit piecewise kernels tabulate their formula unless they serve as the reference.
    const ApplyByteTableFn table_fn = cc.reference_only ? nullptr : ByteTableFn(cc.cpu, false);
    rt::OpKernel* k = nullptr;
    switch (op) {
      case tflite::BuiltinOperator_LEAKY_RELU: k = new LeakyReluKernel(in->type, table_fn); break;
      case tflite::BuiltinOperator_PRELU: k = new PreluKernel(in->type); break;
      case tflite::BuiltinOperator_HARD_SWISH: k = new HardSwishKernel(in->type, table_fn); break;
      case tflite::BuiltinOperator_ELU:
      case tflite::BuiltinOperator_GELU: k = new TableKernel(op, in->type, ByteTableFn(cc.cpu, cc.reference_only)); break;
      default: k = new ReluKernel(op, in->type, table_fn); break;
    }
    return std::unique_ptr<rt::OpKernel>(k);
  };
}

}  // namespace

void RegisterRelu(rt::OpRegistry& r) {
  for (Op op : {tflite::BuiltinOperator_RELU, tflite::BuiltinOperator_RELU6, tflite::BuiltinOperator_RELU_N1_TO_1,
                tflite::BuiltinOperator_RELU_0_TO_1, tflite::BuiltinOperator_LEAKY_RELU, tflite::BuiltinOperator_PRELU,
                tflite::BuiltinOperator_HARD_SWISH, tflite::BuiltinOperator_ELU, tflite::BuiltinOperator_GELU})
    r.Add(op, MakeFactory(op));
}

}  // namespace edgeopt::kernels::activations
