// A standalone RELU / RELU6 / RELU_N1_TO_1 right after the op producing its input (CONV_2D,
// DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, MUL) becomes that op's fused activation: Keras
// models with separate activation layers (MediaPipe's MobileNetV3-style nets) otherwise write
// every such tensor, read it back and write it again. The producer's kernel is made for a copy
// of its operator with the activation set and the RELU's output as its output, so it clamps in
// its own output stage (the same values: max(x, 0) and min(max(x, lo), hi) agree on every
// number; a NaN stays NaN where the standalone reference RELU would give 0).
//
// Matched when the producer has no activation of its own, its output is read by the RELU only
// (and is no subgraph output), and both tensors are float32, or 8-bit / int16 with the same
// scale and zero point (the RELU then only clamps at the zero point, which the fused range does
// exactly).
#include <algorithm>

#include "kernels/common/kernel_util.h"
#include "kernels/fused/fused.h"

namespace edgeopt::kernels::fused {

tflite::ActivationFunctionType* ActivationField(Operator& op) {
  switch (op.code) {
    case tflite::BuiltinOperator_CONV_2D:
      return op.options.AsConv2DOptions() ? &op.options.AsConv2DOptions()->fused_activation_function : nullptr;
    case tflite::BuiltinOperator_DEPTHWISE_CONV_2D:
      return op.options.AsDepthwiseConv2DOptions() ? &op.options.AsDepthwiseConv2DOptions()->fused_activation_function
                                                   : nullptr;
    case tflite::BuiltinOperator_FULLY_CONNECTED:
      return op.options.AsFullyConnectedOptions() ? &op.options.AsFullyConnectedOptions()->fused_activation_function
                                                  : nullptr;
    case tflite::BuiltinOperator_ADD:
      return op.options.AsAddOptions() ? &op.options.AsAddOptions()->fused_activation_function : nullptr;
    case tflite::BuiltinOperator_SUB:
      return op.options.AsSubOptions() ? &op.options.AsSubOptions()->fused_activation_function : nullptr;
    case tflite::BuiltinOperator_MUL:
      return op.options.AsMulOptions() ? &op.options.AsMulOptions()->fused_activation_function : nullptr;
    default: return nullptr;
  }
}

bool SameQuantization(const Tensor& a, const Tensor& b) {
  if (a.type != b.type) return false;
  if (a.type == DType::kFloat32) return true;
  if (a.type != DType::kInt8 && a.type != DType::kUInt8 && a.type != DType::kInt16) return false;
  if (!a.quant || !b.quant || a.quant->scale.size() != 1 || b.quant->scale.size() != 1) return false;
  return a.quant->scale == b.quant->scale && a.quant->zero_point == b.quant->zero_point;
}

bool ClampAfter(const Subgraph& s, int producer, int act_op, tflite::ActivationFunctionType* fused, const char** name) {
  if (act_op >= static_cast<int>(s.ops.size()) || s.ops[producer].outputs.size() != 1) return false;
  const Operator& act = s.ops[act_op];
  switch (act.code) {
    case tflite::BuiltinOperator_RELU: *fused = tflite::ActivationFunctionType_RELU; *name = "relu"; break;
    case tflite::BuiltinOperator_RELU6: *fused = tflite::ActivationFunctionType_RELU6; *name = "relu6"; break;
    case tflite::BuiltinOperator_RELU_N1_TO_1:
      *fused = tflite::ActivationFunctionType_RELU_N1_TO_1;
      *name = "relu_n1_to_1";
      break;
    default: return false;
  }
  if (act.inputs.size() != 1 || act.outputs.size() != 1 || !PrivateLink(s, producer, act_op)) return false;
  return SameQuantization(s.tensors[s.ops[producer].outputs[0]], s.tensors[act.outputs[0]]);
}

rt::FusedRun MatchActivationIntoProducer(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
  rt::FusedRun run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  if (cc.reference_only || i + 1 >= static_cast<int>(s.ops.size()) || cc.op.outputs.size() != 1) return run;
  tflite::ActivationFunctionType fused;
  const char* name;
  if (!ClampAfter(s, i, i + 1, &fused, &name)) return run;
  const Operator& act = s.ops[static_cast<size_t>(i) + 1];
  auto op = std::make_unique<Operator>(cc.op);
  tflite::ActivationFunctionType* field = ActivationField(*op);
  if (!field || *field != tflite::ActivationFunctionType_NONE) return run;
  *field = fused;
  op->outputs = {act.outputs[0]};
  const rt::KernelFactory* factory = rt::OpRegistry::Builtin().Find(*op);
  if (!factory) return run;
  const rt::KernelCreateContext fused_cc{cc.graph, s, cc.subgraph_index, *op, i, cc.cpu, cc.reference_only};
  auto kernel = (*factory)(fused_cc);
  if (!kernel.ok() || !*kernel) return run;
  run.num_ops = 2;
  run.kernel = std::make_unique<RenamedKernel>(std::move(*kernel), "fused/", std::string("+") + name);
  run.op = std::move(op);
  return run;
}

}  // namespace edgeopt::kernels::fused
