// A float32 ADD of two same-shape tensors whose only reader is the PRELU right after it, with one
// alpha per channel (alpha [C], [1, C], [1, 1, C], ...: MediaPipe's face landmark models end most
// residual blocks this way): one pass
//   out = s >= 0 ? s : s * alpha[c],   s = clamp(a + b)
// the same IEEE sum (in the ADD's operand order) and product as the two ops, without writing the
// sum and reading it back. AVX-512 only (add_prelu_avx512.cc); shown as "fused/add+prelu/f32/avx512".
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/common/kernel_util.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/f32_op_util.h"

namespace edgeopt::kernels::fused {
namespace {

class AddPreluF32 final : public rt::OpKernel {
 public:
  explicit AddPreluF32(gemm::MinMax mm) : mm_(mm) {}

  // Inputs: the ADD's two operands, the PRELU's alpha.
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* a = ctx.input(0);
    const rt::RtTensor* b = ctx.input(1);
    const rt::RtTensor* alpha = ctx.input(2);
    if (a->shape != b->shape)
      return ctx.Error("the ADD's operands " + Describe(*a) + " and " + Describe(*b) + " differ in shape");
    if (a->rank() < 1) return ctx.Error("input " + Describe(*a) + " has no channel axis");
    const int c = a->dim(a->rank() - 1);
    if (alpha->num_elements() != c || (alpha->rank() > 0 && alpha->dim(alpha->rank() - 1) != c))
      return ctx.Error("the PRELU's alpha " + Describe(*alpha) + " is not one value per channel of " + Describe(*a));
    return ctx.SetOutputShape(0, a->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* a = ctx.input(0);
    const int c = a->dim(a->rank() - 1);
    if (c == 0 || a->num_elements() == 0) return Status::Ok();
    const int64_t pixels = a->num_elements() / c;
    const float* ad = a->data_as<float>();
    const float* bd = ctx.input(1)->data_as<float>();
    const float* alpha = ctx.input(2)->data_as<float>();
    float* od = ctx.output(0)->data_as<float>();
    ctx.threads().ParallelFor(pixels, std::max<int64_t>(1, 16384 / c), [&](int64_t p0, int64_t p1) {
      AddPreluAvx512(ad + p0 * c, bd + p0 * c, alpha, c, od + p0 * c, p1 - p0, mm_);
    });
    return Status::Ok();
  }

  std::string variant() const override { return "fused/add+prelu/f32/avx512"; }

 private:
  gemm::MinMax mm_;
};

}  // namespace

bool ChannelPreluAfter(const rt::KernelCreateContext& cc, int producer, int prelu) {
  const Subgraph& s = cc.subgraph;
  if (prelu >= static_cast<int>(s.ops.size()) || s.ops[producer].outputs.size() != 1) return false;
  const Operator& p = s.ops[prelu];
  const int32_t x = s.ops[producer].outputs[0];
  if (p.code != tflite::BuiltinOperator_PRELU || p.inputs.size() != 2 || p.outputs.size() != 1 || p.inputs[0] != x ||
      !PrivateLink(s, producer, prelu))
    return false;
  const Tensor& in = s.tensors[x];
  const Tensor& alpha = s.tensors[p.inputs[1]];
  const Tensor& y = s.tensors[p.outputs[0]];
  if (!IsFloat32(&in) || in.shape.empty() || !IsFloat32(&alpha) || !IsFloat32(&y) || y.shape != in.shape) return false;
  const int32_t c = in.shape.back();
  // alpha: a constant, or folded from constants (a float16 DEQUANTIZE, often right between the two ops).
  return alpha.num_elements() == c && (alpha.shape.empty() || alpha.shape.back() == c) &&
         ConstantOrFolded(ContextOf(cc, prelu), 1);
}

rt::FusedRun MatchAddPreluF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
  rt::FusedRun run;
  if (cc.reference_only || !cc.cpu.has_avx512() || cc.op.code != tflite::BuiltinOperator_ADD || cc.num_inputs() != 2 ||
      cc.num_outputs() != 1)
    return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const Tensor* a = cc.input(0);
  const Tensor* b = cc.input(1);
  const Tensor* sum = cc.output(0);
  if (!IsFloat32(a) || !IsFloat32(b) || !IsFloat32(sum) || a->shape.empty() || a->shape != b->shape ||
      a->shape != sum->shape)
    return run;
  const auto* o = cc.op.options.AsAddOptions();
  gemm::MinMax mm;
  if (!FusedMinMax(o ? o->fused_activation_function : tflite::ActivationFunctionType_NONE, &mm)) return run;
  // The PRELU right after it, the sum its only reader.
  const int prelu = NextOp(cc, i);
  if (!ChannelPreluAfter(cc, i, prelu)) return run;
  const Operator& p = s.ops[prelu];
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = "FUSED_ADD_PRELU";
  op->inputs = {cc.op.inputs[0], cc.op.inputs[1], p.inputs[1]};
  op->outputs = {p.outputs[0]};
  run.op = std::move(op);
  run.num_ops = prelu + 1 - i;
  run.ops = {i, prelu};
  run.kernel = std::make_unique<AddPreluF32>(mm);
  return run;
}

}  // namespace edgeopt::kernels::fused
