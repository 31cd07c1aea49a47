// A QUANTIZE from uint8 to int8 that only moves the zero point by 128 (the same scale: x_int8 =
// x_uint8 - 128, the bytes flipped by 0x80; models quantized with a uint8 interface start this
// way), read only by an int8 CONV_2D: the convolution reads the uint8 tensor itself. Its VNNI
// paths flip int8 inputs into the uint8 domain anyway (gemm_int8/ops_int8.h, Uint8InputConv), so
// the QUANTIZE's pass over the image disappears and the flip with it. Where the convolution does
// not take such a path (reference kernels, no AVX-512 VNNI) the kernel flips the bytes into a
// buffer of its own and runs the convolution on it. The same bytes either way.
#include <cstring>
#include <string>

#include "kernels/common/kernel_util.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm_int8/ops_int8.h"

namespace edgeopt::kernels::fused {
namespace {

// Quantization of one scale and zero point (per tensor).
bool PerTensor(const Tensor& t, DType type) {
  return t.type == type && t.is_quantized() && t.quant->scale.size() == 1 && t.quant->zero_point.size() <= 1;
}

class QuantizeIntoConv final : public rt::OpKernel {
 public:
  // The synthetic op: the QUANTIZE's uint8 input, then the convolution's other inputs; its output.
  QuantizeIntoConv(const Operator* quantize, int quantize_index, const Operator* conv, int conv_index,
                   std::unique_ptr<rt::OpKernel> conv_kernel)
      : quantize_(quantize), quantize_index_(quantize_index), conv_(conv), conv_index_(conv_index),
        kernel_(std::move(conv_kernel)) {}

  Status Prepare(rt::KernelContext& ctx) override {
    // The int8 tensor between the ops takes the uint8 input's shape (as the QUANTIZE would set
    // it), then the convolution prepares on it with its own tensors.
    rt::KernelContext q = Sub(ctx, quantize_, quantize_index_);
    RETURN_IF_ERROR(q.SetOutputShape(0, ctx.input(0)->shape));
    rt::KernelContext c = Sub(ctx, conv_, conv_index_);
    RETURN_IF_ERROR(kernel_->Prepare(c));
    direct_ = dynamic_cast<Uint8InputConv*>(kernel_.get());
    if (direct_ && !direct_->TakesUint8Input()) direct_ = nullptr;
    if (!direct_) flipped_ = ctx.RequestScratch(static_cast<size_t>(ctx.input(0)->num_elements()) + 64);
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    rt::KernelContext c = Sub(ctx, conv_, conv_index_);
    const rt::RtTensor* x = ctx.input(0);
    if (direct_) return direct_->InvokeWithUint8Input(c, x->data_as<uint8_t>());
    // The QUANTIZE's bytes in a buffer of this kernel, read by the convolution as its input.
    auto* flipped = static_cast<uint8_t*>(ctx.Scratch(flipped_));
    const uint8_t* src = x->data_as<uint8_t>();
    for (int64_t i = 0; i < x->num_elements(); ++i) flipped[i] = static_cast<uint8_t>(src[i] ^ 0x80);
    rt::RtTensor* between = c.input(0);
    uint8_t* const own = between->data;  // whatever the interpreter gave it (normally nothing)
    between->data = flipped;
    const Status st = kernel_->Invoke(c);
    between->data = own;
    return st;
  }

  std::string variant() const override { return std::string("fused/quantize+") + kernel_->variant(); }
  // The synthetic op is the convolution's with the uint8 input: the same shapes.
  int64_t Macs(const rt::KernelContext& ctx) const override { return kernel_->Macs(ctx); }
  size_t PackedBytes() const override { return kernel_->PackedBytes(); }

 private:
  static rt::KernelContext Sub(rt::KernelContext& ctx, const Operator* op, int index) {
    return rt::KernelContext(ctx.host(), &ctx.graph(), op, ctx.op_index(), index);
  }

  const Operator* quantize_;
  int quantize_index_;
  const Operator* conv_;
  int conv_index_;
  std::unique_ptr<rt::OpKernel> kernel_;
  Uint8InputConv* direct_ = nullptr;  // kernel_, when it reads the uint8 tensor itself (Prepare)
  int flipped_ = -1;
};

}  // namespace

rt::FusedRun MatchQuantizeIntoConv(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits) {
  rt::FusedRun run;
  if (cc.reference_only || cc.op.code != tflite::BuiltinOperator_QUANTIZE || cc.num_inputs() != 1 ||
      cc.num_outputs() != 1)
    return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const int j = NextOp(cc, i);
  if (j >= static_cast<int>(s.ops.size()) || j != i + 1 || !PrivateLink(s, i, j)) return run;
  const Operator& conv = s.ops[static_cast<size_t>(j)];
  if (conv.code != tflite::BuiltinOperator_CONV_2D || conv.inputs.size() < 2 || conv.outputs.size() != 1) return run;
  const Tensor* u = cc.input(0);
  const Tensor* x = cc.output(0);
  if (!u || !x || !PerTensor(*u, DType::kUInt8) || !PerTensor(*x, DType::kInt8) || u->shape.size() != 4) return run;
  // x = u - 128 exactly: the same scale, zero points 128 apart.
  if (u->quant->scale[0] != x->quant->scale[0] || x->quant->zp() != u->quant->zp() - 128) return run;
  const rt::KernelCreateContext conv_cc = ContextOf(cc, j);
  const Tensor* w = conv_cc.input(1);
  const Tensor* y = conv_cc.output(0);
  if (!w || !y || w->type != DType::kInt8 || y->type != DType::kInt8) return run;
  // A depthwise chain starting at the convolution is worth more.
  if (MatchDwChainInt8(conv_cc, limits).num_ops > 0) return run;
  const rt::KernelFactory* factory = rt::OpRegistry::Builtin().Find(conv);
  if (!factory) return run;
  auto kernel = (*factory)(conv_cc);
  if (!kernel.ok() || !*kernel) return run;
  auto op = std::make_unique<Operator>(conv);
  op->inputs[0] = cc.op.inputs[0];
  run.op = std::move(op);
  run.kernel = std::make_unique<QuantizeIntoConv>(&cc.op, i, &conv, j, std::move(*kernel));
  run.num_ops = 2;
  return run;
}

}  // namespace edgeopt::kernels::fused
