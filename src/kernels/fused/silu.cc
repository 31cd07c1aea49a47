// SiLU / swish as TFLite converters write it: LOGISTIC(x) followed by MUL(x, LOGISTIC(x)) (YOLOv5 /
// v8, EfficientNet), run as one op:
// - float32: one pass y = x * LOGISTIC(x) (activations::FloatAct::kSilu): the same LOGISTIC and the
//   same IEEE product as the two fast ops, so the same bits, without writing the logistic tensor
//   and reading it and x back. Shown as "fused/logistic+mul/float32/<isa>".
// - int8 / uint8: the output is a function of the input byte alone, so one 256-entry table, built
//   in Prepare from the reference formulas of both ops (LOGISTIC's table from the float function
//   on every dequantized input, as ref_sigmoid.cc; MUL's clamp(out_zp + MultiplyByQuantized-
//   Multiplier((x - zp_x) * (s - zp_s))), as ref_binary.cc), applied by the byte-table loop
//   (two vpermi2b per 64 bytes with VBMI). Shown as "fused/logistic+mul/int8/<loop>".
//
// Matched when the MUL follows the LOGISTIC, multiplies its input by its output (either order),
// gives x's shape, and nothing else reads the logistic tensor (nor is it a subgraph output); float:
// no MUL activation; 8-bit: all three tensors of one type with one scale each and the logistic's
// scale 1/256 (LOGISTIC's requirement), any MUL activation (the table clamps).
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/activations/float_act.h"
#include "kernels/common/byte_table.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/parallel.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::fused {
namespace {

class FusedSiluF32 final : public rt::OpKernel {
 public:
  FusedSiluF32(activations::FloatActFn fn, std::string isa) : fn_(fn), variant_("fused/logistic+mul/float32/" + isa) {}

  Status Prepare(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }

  Status Invoke(rt::KernelContext& ctx) override {
    activations::FloatActParams p;
    p.act = activations::FloatAct::kSilu;
    activations::RunFloatAct(ctx.threads(), fn_, p, ctx.input(0)->data_as<float>(), ctx.output(0)->data_as<float>(),
                             ctx.input(0)->num_elements());
    return Status::Ok();
  }

  std::string variant() const override { return variant_; }

 private:
  activations::FloatActFn fn_;
  std::string variant_;
};

// The 8-bit pair as one byte table (see the file comment).
class FusedSilu8 final : public rt::OpKernel {
 public:
  FusedSilu8(DType type, float sig_scale, int32_t sig_zp, bool sig_first, int activation, ApplyByteTableFn apply)
      : type_(type), sig_scale_(sig_scale), sig_zp_(sig_zp), sig_first_(sig_first), activation_(activation),
        apply_(apply) {}

  // The checks LOGISTIC's and MUL's reference kernels make on these tensors, with their messages.
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor& x = *ctx.input(0);
    const rt::RtTensor& y = *ctx.output(0);
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, x, "input"));
    RETURN_IF_ERROR(RequirePerTensorQuant(ctx, y, "output"));
    RETURN_IF_ERROR(RequireZeroPointInRange(ctx, x, "input"));
    RETURN_IF_ERROR(RequireZeroPointInRange(ctx, y, "output"));
    if (type_ == DType::kInt8) BuildTable<int8_t>(x, y);
    else BuildTable<uint8_t>(x, y);
    return ctx.SetOutputShape(0, x.shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const auto* x = static_cast<const uint8_t*>(ctx.input(0)->data);
    auto* y = static_cast<uint8_t*>(ctx.output(0)->data);
    const int64_t n = ctx.input(0)->num_elements();
    const int64_t tasks = TaskCount(ctx.threads().num_threads(), n, 65536, 2);
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      const int64_t i0 = n * t / tasks / 64 * 64, i1 = t + 1 == tasks ? n : n * (t + 1) / tasks / 64 * 64;
      apply_(table_, x + i0, y + i0, i1 - i0);
    });
    return Status::Ok();
  }

  std::string variant() const override {
    return std::string("fused/logistic+mul/") + (type_ == DType::kInt8 ? "int8/" : "uint8/") + ByteTableIsa(apply_);
  }

 private:
  template <typename T>
  void BuildTable(const rt::RtTensor& x, const rt::RtTensor& y) {
    // LOGISTIC: the reference's table (ref_sigmoid.cc).
    const ByteTable sig = BuildLut8<T>(x.scale(), x.zero_point(), sig_scale_, sig_zp_,
                                       [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    // MUL: the reference's formula (ref_binary.cc) with the operands in the op's order.
    QuantBinaryParams p;
    const float first_scale = sig_first_ ? sig_scale_ : x.scale(), second_scale = sig_first_ ? x.scale() : sig_scale_;
    ComputeMulMultiplier(first_scale, second_scale, y.scale(), &p);
    QuantizedActivationRange(activation_, y, &p.act_min, &p.act_max);
    for (int b = 0; b < 256; ++b) {
      const int32_t xv = static_cast<T>(static_cast<uint8_t>(b)), sv = static_cast<T>(sig[b]);
      const int32_t prod = (xv - x.zero_point()) * (sv - sig_zp_);
      const int32_t out = y.zero_point() + MultiplyByQuantizedMultiplier(prod, p.out_mult, p.out_shift);
      table_[b] = static_cast<uint8_t>(static_cast<T>(std::clamp(out, p.act_min, p.act_max)));
    }
  }

  DType type_;
  float sig_scale_;
  int32_t sig_zp_;
  bool sig_first_;
  int activation_;
  ApplyByteTableFn apply_;
  ByteTable table_{};
};

// Tensor t is read by op `reader` only and is no subgraph output.
bool ReadOnlyBy(const Subgraph& s, int32_t t, size_t reader) {
  for (int32_t out : s.outputs)
    if (out == t) return false;
  for (size_t k = 0; k < s.ops.size(); ++k) {
    if (k == reader) continue;
    for (int32_t in : s.ops[k].inputs)
      if (in == t) return false;
  }
  return true;
}

}  // namespace

rt::FusedRun MatchSilu(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
  rt::FusedRun run;
  const Subgraph& s = cc.subgraph;
  const size_t i = static_cast<size_t>(cc.op_index);
  if (cc.reference_only || cc.op.code != tflite::BuiltinOperator_LOGISTIC || i + 1 >= s.ops.size()) return run;
  if (cc.op.inputs.size() != 1 || cc.op.outputs.size() != 1) return run;
  const int32_t x = cc.op.inputs[0], sig = cc.op.outputs[0];
  const Operator& mul = s.ops[i + 1];
  if (mul.code != tflite::BuiltinOperator_MUL || mul.inputs.size() != 2 || mul.outputs.size() != 1) return run;
  if (!((mul.inputs[0] == x && mul.inputs[1] == sig) || (mul.inputs[0] == sig && mul.inputs[1] == x))) return run;
  const auto* mo = mul.options.AsMulOptions();
  const int activation = mo ? mo->fused_activation_function : tflite::ActivationFunctionType_NONE;
  const int32_t y = mul.outputs[0];
  if (x < 0 || y < 0 || s.tensors[y].shape != s.tensors[x].shape || !ReadOnlyBy(s, sig, i + 1)) return run;
  const DType type = s.tensors[x].type;
  for (int32_t t : {sig, y})
    if (s.tensors[t].type != type) return run;
  std::unique_ptr<rt::OpKernel> kernel;
  if (type == DType::kFloat32) {
    if (activation != tflite::ActivationFunctionType_NONE) return run;
    std::string isa;
    const activations::FloatActFn fn = WidestLoop<activations::FloatActFn>(
        cc.cpu, activations::FloatActPortable, activations::FloatActAvx2, activations::FloatActAvx512, &isa);
    kernel = std::make_unique<FusedSiluF32>(fn, isa);
  } else if (type == DType::kInt8 || type == DType::kUInt8) {
    for (int32_t t : {x, sig, y}) {
      const auto& q = s.tensors[t].quant;
      if (!q || q->scale.size() != 1 || q->zero_point.size() != 1) return run;
    }
    const QuantParams& sq = *s.tensors[sig].quant;
    // LOGISTIC's reference rejects other scales and zero points outside the type (its error).
    if (static_cast<double>(sq.scale[0]) != 1. / 256) return run;
    const int64_t lo = type == DType::kInt8 ? -128 : 0;
    if (sq.zero_point[0] < lo || sq.zero_point[0] > lo + 255) return run;
    if (activation != tflite::ActivationFunctionType_NONE && activation != tflite::ActivationFunctionType_RELU &&
        activation != tflite::ActivationFunctionType_RELU6 && activation != tflite::ActivationFunctionType_RELU_N1_TO_1)
      return run;
    kernel = std::make_unique<FusedSilu8>(type, sq.scale[0], static_cast<int32_t>(sq.zero_point[0]),
                                          mul.inputs[0] == sig, activation, ByteTableFn(cc.cpu, false));
  } else {
    return run;
  }
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = "FUSED_SILU";
  op->inputs = {x};
  op->outputs = {y};
  run.num_ops = 2;
  run.kernel = std::move(kernel);
  run.op = std::move(op);
  return run;
}

}  // namespace edgeopt::kernels::fused
