// A float32 PAD of the last axis (channels added after the input's, filled with zeros) whose only
// reader is the ADD right after it (BlazeFace-style residual blocks: MediaPipe's face and hand
// detectors widen the shortcut to the block's channels this way): one pass
//   out[p][c] = clamp(full[p][c] + (c < cin ? x[p][c] : +0.0))
// in the ADD's operand order, the same IEEE sums as the two ops (the padded channels too: f + 0.0
// is not f for f = -0.0), without writing the padded tensor and reading it back. A standalone
// RELU / RELU6 / RELU_N1_TO_1 after an ADD without an activation joins as its clamp. AVX-512 only
// (pad_add_avx512.cc); shown as "fused/pad+add/f32/avx512[+relu]".
#include <algorithm>
#include <string>

#include "kernels/common/kernel_util.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/f32_op_util.h"

namespace edgeopt::kernels::fused {
namespace {

class ChannelPadAddF32 final : public rt::OpKernel {
 public:
  // pad: the channels the PAD adds.
  ChannelPadAddF32(int pad, bool padded_first, gemm::MinMax mm, std::string suffix)
      : pad_(pad), padded_first_(padded_first), mm_(mm), variant_("fused/pad+add/f32/avx512" + suffix) {}

  // Inputs: the PAD's input x, the ADD's other operand.
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* x = ctx.input(0);
    const rt::RtTensor* full = ctx.input(1);
    if (x->rank() != full->rank() || x->rank() < 1)
      return ctx.Error("input " + Describe(*x) + " and " + Describe(*full) + " differ in rank");
    for (int d = 0; d + 1 < x->rank(); ++d)
      if (x->dim(d) != full->dim(d))
        return ctx.Error("input " + Describe(*x) + " does not match the ADD's other operand " + Describe(*full));
    // As the two ops would: the padded tensor must have the other operand's shape.
    if (x->dim(x->rank() - 1) + pad_ != full->dim(full->rank() - 1))
      return ctx.Error("the PAD of " + std::to_string(pad_) + " channels after input " + Describe(*x) +
                       " does not give the ADD's other operand's shape " + Describe(*full));
    return ctx.SetOutputShape(0, full->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* x = ctx.input(0);
    const rt::RtTensor* full = ctx.input(1);
    const int cin = x->dim(x->rank() - 1), c = full->dim(full->rank() - 1);
    if (c == 0) return Status::Ok();
    const int64_t pixels = full->num_elements() / c;
    const float* xd = x->data_as<float>();
    const float* fd = full->data_as<float>();
    float* od = ctx.output(0)->data_as<float>();
    ctx.threads().ParallelFor(pixels, std::max<int64_t>(1, 16384 / c), [&](int64_t b, int64_t e) {
      ChannelPadAddAvx512(xd + b * cin, cin, fd + b * c, c, padded_first_, od + b * c, e - b, mm_);
    });
    return Status::Ok();
  }

  std::string variant() const override { return variant_; }

 private:
  int pad_;
  bool padded_first_;
  gemm::MinMax mm_;
  std::string variant_;
};

}  // namespace

rt::FusedRun MatchChannelPadAddF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
  rt::FusedRun run;
  if (cc.reference_only || !cc.cpu.has_avx512() || cc.op.code != tflite::BuiltinOperator_PAD || cc.num_inputs() != 2 ||
      cc.num_outputs() != 1)
    return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const Tensor* x = cc.input(0);
  const Tensor* y = cc.output(0);
  if (!IsFloat32(x) || !IsFloat32(y) || x->shape.empty() || x->shape.size() != y->shape.size()) return run;
  const size_t rank = x->shape.size();
  std::vector<int32_t> pads;
  if (!ConstantPaddings(cc, rank, &pads)) return run;
  for (size_t k = 0; k + 1 < 2 * rank; ++k)
    if (pads[k] != 0) return run;  // only channels after the input's
  if (pads[2 * rank - 1] <= 0) return run;
  // The ADD right after it, the PAD's output its only reader, read once.
  const int add = NextOp(cc, i);
  if (add >= static_cast<int>(s.ops.size())) return run;
  const Operator& a = s.ops[add];
  const int32_t t = cc.op.outputs[0];
  if (a.code != tflite::BuiltinOperator_ADD || a.inputs.size() != 2 || a.outputs.size() != 1) return run;
  if (!OnlyReader(s, i, add)) return run;
  const bool padded_first = a.inputs[0] == t;
  const int32_t other = padded_first ? a.inputs[1] : a.inputs[0];
  const Tensor& f = s.tensors[other];
  const Tensor& z = s.tensors[a.outputs[0]];
  if (!IsFloat32(&f) || !IsFloat32(&z) || f.shape != y->shape || z.shape != y->shape) return run;
  const auto* o = a.options.AsAddOptions();
  const int act = o ? o->fused_activation_function : tflite::ActivationFunctionType_NONE;
  gemm::MinMax mm;
  if (!FusedMinMax(act, &mm)) return run;
  // A standalone clamp after an ADD without one.
  int last = add;
  std::string suffix;
  tflite::ActivationFunctionType trailing;
  const char* name = "";
  if (act == tflite::ActivationFunctionType_NONE && ClampAfter(s, add, NextOp(cc, add), &trailing, &name) &&
      FusedMinMax(trailing, &mm)) {
    last = NextOp(cc, add);
    suffix = std::string("+") + name;
  }
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = "FUSED_PAD_ADD";
  op->inputs = {cc.op.inputs[0], other};
  op->outputs = {s.ops[last].outputs[0]};
  run.op = std::move(op);
  run.num_ops = last + 1 - i;
  run.ops = {i, add};
  if (last != add) run.ops.push_back(last);
  run.kernel = std::make_unique<ChannelPadAddF32>(pads[2 * rank - 1], padded_first, mm, suffix);
  return run;
}

}  // namespace edgeopt::kernels::fused
