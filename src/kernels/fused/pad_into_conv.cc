// A PAD right before a VALID CONV_2D / DEPTHWISE_CONV_2D whose paddings are exactly the ones
// SAME padding would add (Keras ZeroPadding2D + Conv2D(padding="valid") exports, MediaPipe's
// sparse face detector: the padded copy of every such input costs a pass over memory): the
// convolution's kernel is made for a copy of its operator that reads the PAD's input with SAME
// padding, so the padded tensor is never written. The same values: PAD fills with zeros (8-bit
// and int16 tensors: with the zero point, which SAME padding contributes as nothing, as the
// padded values do).
//
// Matched when the PAD's output is read by the convolution only (and is no subgraph output), the
// paddings are constant and only spatial, input and output have the same quantization (float32,
// or int8 / uint8 / int16 with one scale and zero point), the convolution's weights have the
// input's type category (no hybrid op: its input quantization would see the padding), the static
// shapes give the SAME pads, and the convolution does not start a fused depthwise chain (which
// is worth more than the PAD copy).
#include "kernels/common/kernel_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/fused/fused.h"

namespace edgeopt::kernels::fused {
namespace {

// SAME padding's leading and trailing pads along one axis, as the convolutions compute them.
void SamePads(int in, int k, int stride, int dilation, int* lead, int* trail) {
  int odd = 0;
  *lead = ComputePadding(stride, dilation, in, k, ComputeOutSize(tflite::Padding_SAME, in, k, stride, dilation), &odd);
  *trail = *lead + odd;
}

}  // namespace

rt::FusedRun MatchPadIntoConv(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits) {
  rt::FusedRun run;
  if (cc.reference_only || cc.op.code != tflite::BuiltinOperator_PAD || cc.num_inputs() != 2 || cc.num_outputs() != 1)
    return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const int j = NextOp(cc, i);
  if (j >= static_cast<int>(s.ops.size()) || !PrivateLink(s, i, j)) return run;
  const Operator& conv = s.ops[static_cast<size_t>(j)];
  const bool depthwise = conv.code == tflite::BuiltinOperator_DEPTHWISE_CONV_2D;
  if ((conv.code != tflite::BuiltinOperator_CONV_2D && !depthwise) || conv.inputs.size() < 2) return run;
  const Tensor* x = cc.input(0);
  const Tensor* y = cc.output(0);
  if (!x || !y || !SameQuantization(*x, *y) || x->shape.size() != 4 || y->shape.size() != 4) return run;
  std::vector<int32_t> pads;
  if (!ConstantPaddings(cc, 4, &pads)) return run;
  if (pads[0] != 0 || pads[1] != 0 || pads[6] != 0 || pads[7] != 0) return run;
  const Tensor& w = s.tensors[static_cast<size_t>(conv.inputs[1])];
  if (w.shape.size() != 4 || (x->type == DType::kFloat32) != (w.type == DType::kFloat32)) return run;
  int stride_h, stride_w, dil_h, dil_w;
  if (depthwise) {
    const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(conv);
    if (o.padding != tflite::Padding_VALID) return run;
    stride_h = o.stride_h, stride_w = o.stride_w, dil_h = o.dilation_h_factor, dil_w = o.dilation_w_factor;
  } else {
    const auto& o = GetOptions<tflite::Conv2DOptionsT>(conv);
    if (o.padding != tflite::Padding_VALID) return run;
    stride_h = o.stride_h, stride_w = o.stride_w, dil_h = o.dilation_h_factor, dil_w = o.dilation_w_factor;
  }
  if (stride_h < 1 || stride_w < 1 || dil_h < 1 || dil_w < 1 || x->shape[1] < 1 || x->shape[2] < 1) return run;
  int top, bottom, left, right;
  SamePads(x->shape[1], w.shape[1], stride_h, dil_h, &top, &bottom);
  SamePads(x->shape[2], w.shape[2], stride_w, dil_w, &left, &right);
  if (pads[2] != top || pads[3] != bottom || pads[4] != left || pads[5] != right) return run;
  // A fused depthwise chain starting at the convolution is worth more than the PAD copy.
  const rt::KernelCreateContext conv_cc = ContextOf(cc, j);
  if (MatchDwChainF32(conv_cc, limits).num_ops > 0 || MatchDwChainInt8(conv_cc, limits).num_ops > 0) return run;

  auto op = std::make_unique<Operator>(conv);
  op->inputs[0] = cc.op.inputs[0];
  if (depthwise)
    op->options.AsDepthwiseConv2DOptions()->padding = tflite::Padding_SAME;
  else
    op->options.AsConv2DOptions()->padding = tflite::Padding_SAME;
  const rt::KernelFactory* factory = rt::OpRegistry::Builtin().Find(*op);
  if (!factory) return run;
  const rt::KernelCreateContext fused_cc{cc.graph, s, cc.subgraph_index, *op, j, cc.cpu, cc.reference_only};
  auto kernel = (*factory)(fused_cc);
  if (!kernel.ok() || !*kernel) return run;
  run.num_ops = j + 1 - i;
  run.ops = {i, j};
  run.kernel = std::make_unique<RenamedKernel>(std::move(*kernel), "fused/pad+", "");
  run.op = std::move(op);
  return run;
}

}  // namespace edgeopt::kernels::fused
