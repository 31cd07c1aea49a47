// SiLU / swish as TFLite converters write it: LOGISTIC(x) followed by MUL(x, LOGISTIC(x)), float32
// (YOLOv5 / v8, EfficientNet). Run as one pass y = x * LOGISTIC(x) (activations::FloatAct::kSilu):
// the same LOGISTIC and the same IEEE product as the two fast ops, so the same bits, without
// writing the logistic tensor and reading it and x back. Shown as "fused/logistic+mul/float32/<isa>".
//
// Matched when the MUL follows the LOGISTIC, multiplies its input by its output (either order),
// has no fused activation and gives x's shape, and nothing else reads the logistic tensor (nor is
// it a subgraph output).
#include <string>

#include "kernels/activations/float_act.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/fused/fused.h"

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

rt::FusedRun MatchSiluF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
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
  if (mo && mo->fused_activation_function != tflite::ActivationFunctionType_NONE) return run;
  const int32_t y = mul.outputs[0];
  for (int32_t t : {x, sig, y})
    if (t < 0 || s.tensors[t].type != DType::kFloat32) return run;
  if (s.tensors[y].shape != s.tensors[x].shape || !ReadOnlyBy(s, sig, i + 1)) return run;
  std::string isa;
  const activations::FloatActFn fn = WidestLoop<activations::FloatActFn>(
      cc.cpu, activations::FloatActPortable, activations::FloatActAvx2, activations::FloatActAvx512, &isa);
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = "FUSED_SILU";
  op->inputs = {x};
  op->outputs = {y};
  run.num_ops = 2;
  run.kernel = std::make_unique<FusedSiluF32>(fn, isa);
  run.op = std::move(op);
  return run;
}

}  // namespace edgeopt::kernels::fused
