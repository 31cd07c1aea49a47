// Fused int8 / uint8 depthwise chains, run band by band as dw_chain_f32.cc runs float ones (see fused.h
// for when they apply):
//
//   [1×1 expand CONV_2D] -> DEPTHWISE_CONV_2D -> 1×1 project CONV_2D [-> ADD of the chain's input]
//
// (the depthwise layer one of the row loops takes: the 3×3 loop, or the K×K quad loop for 5×5 /
// 7×7 filters, dilated 3×3 ones and layers of 4 or 8 channels, dwq::RowsApply)
//
// For a band of output rows the kernel computes the input rows the depthwise filter needs (its
// halo included) of the expansion into a buffer E, the depthwise rows into D, projects D into
// the output and adds the band's residual, so the expanded tensor (112×112×96 bytes in
// MobileNetV2) stays in the core's L2, and with more than one thread each thread runs its own
// share of rows through the whole block: one fork/join per block instead of one per op, and no
// activations handed from one core's cache to the other's between the ops. Bands of one thread
// are consecutive, so the halo rows the next band needs are kept (moved to the front of E).
//
// Every step runs the code of the unfused fast kernels on the band with the same plans: the
// VNNI GEMM tiles and output stage of CONV_2D (conv_int8.cc, weights packed under the same key,
// so fused and unfused interpreters of one model share them), the depthwise row loops
// (dwq::RunRows: the 3×3 loop or the K×K quad loop), the ADD's 16-lane runs (quant_binary.h).
// Integer results do not depend on how rows are grouped, so the output equals the unfused ops'
// bit for bit.
#include <algorithm>
#include <optional>
#include <type_traits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/depthwise/depthwise_int8.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/parallel.h"
#include "kernels/gemm_int8/qgemm_ops_util.h"
#include "kernels/gemm_int8/qgemm_vnni.h"
#include "kernels/quant_fast/quant_binary.h"

namespace edgeopt::kernels::fused {
namespace {

// A quantized tensor of the chain's type (int8 or uint8), dense.
bool QuantTensor(const Tensor* t, DType type) { return t && t->type == type && t->is_quantized() && !t->sparsity; }

// Constant weights of `shape` and type `type`: int8 with zero points 0 and one scale, or one per
// channel along `axis`; uint8 with one scale and zero point (as LiteRT quantizes them). An int32
// bias of shape[axis] values or none (input wi + 1).
bool ConstantWeights(const rt::KernelCreateContext& cc, int wi, DType type, const std::vector<int32_t>& shape,
                     int axis) {
  const Tensor* w = cc.input(wi);
  if (!QuantTensor(w, type) || w->shape != shape || !cc.is_constant(wi)) return false;
  if (static_cast<int64_t>(cc.constant_data(wi).size()) != w->num_elements()) return false;
  const QuantParams& q = *w->quant;
  const size_t channels = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
  if (type == DType::kUInt8) {
    if (q.scale.size() != 1 || q.zero_point.size() > 1 || q.zp() < 0 || q.zp() > 255) return false;
  } else {
    if (q.scale.size() != 1 && (q.scale.size() != channels || q.quantized_dimension != axis)) return false;
    for (int64_t z : q.zero_point)
      if (z != 0) return false;
  }
  const Tensor* b = cc.input(wi + 1);
  if (!b) return true;
  return b->type == DType::kInt32 && cc.is_constant(wi + 1) && b->num_elements() == static_cast<int64_t>(channels) &&
         cc.constant_data(wi + 1).size() == channels * sizeof(int32_t);
}

// in_scale * w_scale / out_scale per channel within what the vector output stages take (right
// shifts up to 30 bits; such scales are far from any real model's).
bool MultipliersFit(const Tensor& in, const Tensor& w, const Tensor& out) {
  for (float ws : w.quant->scale) {
    const double m = static_cast<double>(in.quant->scale[0]) * ws / out.quant->scale[0];
    if (!(m >= 1e-9 && m <= 1e9)) return false;
  }
  return true;
}

bool ClampActivation(int act) {
  return act == tflite::ActivationFunctionType_NONE || act == tflite::ActivationFunctionType_RELU ||
         act == tflite::ActivationFunctionType_RELU6 || act == tflite::ActivationFunctionType_RELU_N1_TO_1;
}

// Input 0 and output 0 of cc.op are NHWC tensors of type `type`; `channels`: input 0's.
bool QuantNhwc(const rt::KernelCreateContext& cc, DType type, int* channels) {
  const Tensor* in = cc.input(0);
  if (!QuantTensor(in, type) || in->shape.size() != 4 || !QuantTensor(cc.output(0), type) ||
      cc.output(0)->shape.size() != 4)
    return false;
  *channels = in->shape[3];
  return *channels > 0;
}

// A 1×1 stride-1 CONV_2D of `type` (the expansion or the projection).
bool MatchPointwiseQuant(const rt::KernelCreateContext& cc, DType type) {
  if (cc.op.code != tflite::BuiltinOperator_CONV_2D || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  int k = 0;
  if (!QuantNhwc(cc, type, &k)) return false;
  const Tensor* w = cc.input(1);
  if (!w || w->shape.size() != 4 || !ConstantWeights(cc, 1, type, {w->shape[0], 1, 1, k}, 0)) return false;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  if (o.stride_h != 1 || o.stride_w != 1) return false;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return false;
  return ClampActivation(o.fused_activation_function) && MultipliersFit(*cc.input(0), *w, *cc.output(0));
}

// A DEPTHWISE_CONV_2D of `type` with depth multiplier 1, stride 1 or 2, whose plan one of the
// row loops runs (dwq::RowsApply): the 3×3 loop, or the K×K quad loop (5×5 and 7×7 filters,
// dilated 3×3 ones, 4- and 8-channel layers). Which loop takes a layer depends on its filter,
// strides, channels, bias and zero points, not on the image size or the multipliers: the plan
// is built here once with the graph's constants, placeholder multipliers and the full range.
bool MatchDepthwiseQuant(const rt::KernelCreateContext& cc, DType type) {
  if (cc.op.code != tflite::BuiltinOperator_DEPTHWISE_CONV_2D || cc.num_inputs() < 2 || cc.num_outputs() != 1)
    return false;
  int c = 0;
  const Tensor* w = cc.input(1);
  if (!QuantNhwc(cc, type, &c) || !w || w->shape.size() != 4) return false;
  const int k_h = w->shape[1], k_w = w->shape[2];
  if (k_h < 1 || k_h > 7 || k_w < 1 || k_w > 8 || !ConstantWeights(cc, 1, type, {1, k_h, k_w, c}, 3)) return false;
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(cc.op);
  if (o.dilation_h_factor < 1 || o.dilation_w_factor < 1 || (k_h - 1) * o.dilation_h_factor + 1 > 64) return false;
  if (o.stride_h < 1 || o.stride_h > 2 || o.stride_w < 1 || o.stride_w > 2) return false;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return false;
  if (!ClampActivation(o.fused_activation_function) || !MultipliersFit(*cc.input(0), *w, *cc.output(0))) return false;
  dwq::Geom g;
  g.batches = 1;
  g.in_h = std::max(cc.input(0)->shape[1], (k_h - 1) * o.dilation_h_factor + 1);
  g.in_w = std::max(cc.input(0)->shape[2], (k_w - 1) * o.dilation_w_factor + 1);
  g.channels = c;
  g.k_h = k_h;
  g.k_w = k_w;
  g.stride_h = o.stride_h;
  g.stride_w = o.stride_w;
  g.dil_h = o.dilation_h_factor;
  g.dil_w = o.dilation_w_factor;
  g.out_h = ComputeOutSize(tflite::Padding_VALID, g.in_h, k_h, g.stride_h, g.dil_h);
  g.out_w = ComputeOutSize(tflite::Padding_VALID, g.in_w, k_w, g.stride_w, g.dil_w);
  dwq::Quant8Layer l;
  if (type == DType::kUInt8) {
    l.weights_u8 = cc.constant_data(1).data();
    l.weight_zero_point = static_cast<int32_t>(w->quant->zp());
  } else {
    l.weights_i8 = reinterpret_cast<const int8_t*>(cc.constant_data(1).data());
  }
  l.bias = cc.input(2) ? reinterpret_cast<const int32_t*>(cc.constant_data(2).data()) : nullptr;
  l.multiplier.assign(1, 1 << 30);
  l.shift.assign(1, 0);
  l.input_zero_point = static_cast<int32_t>(cc.input(0)->quant->zp());
  l.output_zero_point = static_cast<int32_t>(cc.output(0)->quant->zp());
  l.act_min = type == DType::kUInt8 ? 0 : -128;
  l.act_max = type == DType::kUInt8 ? 255 : 127;
  dwq::Plan plan;
  dwq::PlanQuant8(g, l, true, &plan);
  return dwq::RowsApply(plan);
}

// ADD parameters as the fast ADD builds them (quant_binary_fast.cc); false where it leaves the
// op to the reference kernel.
bool AddParams(const rt::RtTensor& a, const rt::RtTensor& b, const rt::RtTensor& out, int act, QuantBinaryParams* p) {
  *p = QuantBinaryParams();
  p->in1_offset = -a.zero_point();
  p->in2_offset = -b.zero_point();
  p->out_offset = out.zero_point();
  if (!QuantizedActivationRange(act, out, &p->act_min, &p->act_max)) return false;
  ComputeAddSubMultipliers(a.scale(), b.scale(), out.scale(), 20, p);
  return p->out_shift <= 31;
}

// The residual ADD (ResidualAdd) of tensors of `type` with one scale each and a clamp activation:
// of the chain's input x, or (*other set) of another tensor computed before the chain's first op
// i (as MatchDwChainF32's residual).
bool MatchResidualQuant(const rt::KernelCreateContext& cc, int i, int producer, int add, int32_t x, DType type,
                        int32_t* other) {
  const Subgraph& s = cc.subgraph;
  const int32_t z = ResidualOperand(s, i, producer, add, x);
  if (z < 0) return false;
  const Operator& op = s.ops[add];
  for (int32_t t : {op.inputs[0], op.inputs[1], op.outputs[0]})
    if (!QuantTensor(&s.tensors[t], type) || s.tensors[t].quant->per_axis()) return false;
  const auto* o = op.options.AsAddOptions();
  if (!ClampActivation(o ? o->fused_activation_function : tflite::ActivationFunctionType_NONE)) return false;
  if (z != x) *other = z;
  return true;
}

// One of the chain's 1×1 convolutions: the original op (its tensors give the quantization) and
// what the VNNI GEMM needs.
struct Pointwise8 {
  const Operator* op = nullptr;
  int index = -1;  // graph op index (the packed-weight cache key of the unfused CONV_2D)
  std::shared_ptr<const qgemm::PackedB8> packed;
  GemmOpOutput out;
  qgemm::VnniOutput vout;
  int64_t lda = 0;  // bytes of a packed A row
};

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

// Output rows per band: E (input rows of the band, halo included), D (its depthwise output) and
// the packed A rows of the two GEMMs together within kBandBytes per thread.
constexpr int64_t kBandBytes = 192 * 1024;

// With more than one thread, small images (shares of fewer than kSharedMaxRows output rows per
// thread, the whole expansion within kSharedBytes) run in two phases, as dw_chain_f32.cc's
// SharedRows: the expansion once, in chunks of pixels claimed by whichever thread comes first,
// into a buffer of the whole image; then each thread's share of the output pixels. At 2 threads
// (pair-alternated invokes in one process): MobileNetV2 int8 0.985-0.992x the time (its 7×7
// blocks 0.93-0.95x; its 14×14 ones were 1.02-1.05x slower so, the int8 blocks being short:
// hence 4 rows), MoveNet 0.994x, MobileNetV2 uint8 1.0x.
constexpr int64_t kSharedBytes = 1 << 20;
constexpr int kSharedMaxRows = 4;

class DwChainInt8 : public rt::OpKernel {
 public:
  // Inputs of the synthetic op: x, [expand weights, expand bias,] depthwise filter, depthwise
  // bias, project weights, project bias. Output: the project's, or the residual ADD's.
  // uint8: the chain's tensors are uint8 (else int8).
  // last_with_act: a copy of the project (or of the ADD) with the activation of a standalone
  // clamp op after the chain (act_suffix, e.g. "+relu"), which project.op (add_op) then points at.
  // pad: a PAD of the depthwise layer's input rows and columns (MatchSpatialPad), its padding.
  // residual_other: the ADD's other operand is the op's last input, not the chain's input.
  DwChainInt8(std::optional<Pointwise8> expand, const Operator* dw_op, int dw_index, Pointwise8 project,
              const Operator* add_op, bool residual_other, bool uint8, bool vbmi, std::unique_ptr<Operator> last_with_act,
              std::string act_suffix, std::optional<SpatialPad> pad)
      : expand_(std::move(expand)), dw_op_(dw_op), dw_index_(dw_index), project_(std::move(project)), add_op_(add_op),
        residual_other_(residual_other), uint8_(uint8), vbmi_(vbmi), last_with_act_(std::move(last_with_act)),
        act_suffix_(std::move(act_suffix)), pad_(pad) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    const int batch = in->dim(0), h = in->dim(1), w = in->dim(2), cin = in->dim(3);
    const int d = expand_ ? 3 : 1;  // position of the depthwise filter among the inputs
    const rt::RtTensor* dwf = ctx.input(d);
    const rt::RtTensor* pww = ctx.input(d + 2);
    const int c = dwf->dim(3);
    if (expand_ ? ctx.input(1)->dim(3) != cin || ctx.input(1)->dim(0) != c : cin != c)
      return ctx.Error("input " + Describe(*in) + " does not match the " + (expand_ ? "expansion weights " : "depthwise filter ") +
                       Describe(expand_ ? *ctx.input(1) : *dwf));
    rt::KernelContext dctx = Sub(ctx, dw_op_, dw_index_);
    dwq::Geom g;
    g.batches = batch;
    g.in_h = h;
    g.in_w = w;
    g.channels = c;
    g.k_h = dwf->dim(1);
    g.k_w = dwf->dim(2);
    const auto& dwo = GetOptions<tflite::DepthwiseConv2DOptionsT>(*dw_op_);
    if (pad_) {
      const WindowGeometry wg =
          PaddedValidWindow(*pad_, h, w, g.k_h, g.k_w, dwo.stride_h, dwo.stride_w, dwo.dilation_h_factor,
                            dwo.dilation_w_factor);
      if (wg.out_h <= 0 || wg.out_w <= 0) return ctx.Error("the padded input is smaller than the depthwise filter");
      g.out_h = wg.out_h;
      g.out_w = wg.out_w;
      g.pad_h = wg.pad_h;
      g.pad_w = wg.pad_w;
      g.stride_h = dwo.stride_h;
      g.stride_w = dwo.stride_w;
      g.dil_h = dwo.dilation_h_factor;
      g.dil_w = dwo.dilation_w_factor;
    } else {
      RETURN_IF_ERROR(ComputeConvWindow(dctx, dwo, &g));
    }
    cout_ = pww->dim(0);
    if (pww->dim(3) != c)
      return ctx.Error("the depthwise output's " + std::to_string(c) + " channels do not match the projection weights " +
                       Describe(*pww));
    const int res_index = residual_other_ ? ctx.num_inputs() - 1 : 0;
    const rt::RtTensor* res = ctx.input(res_index);
    if (add_op_ && (res->rank() != 4 || res->dim(0) != batch || g.out_h != res->dim(1) || g.out_w != res->dim(2) ||
                    cout_ != res->dim(3)))
      return ctx.Error("the residual ADD of " + Describe(*res) + " needs an output of the same shape, not [" +
                       std::to_string(batch) + "," + std::to_string(g.out_h) + "," + std::to_string(g.out_w) + "," +
                       std::to_string(cout_) + "]");
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, g.out_h, g.out_w, cout_}));

    if (expand_) {
      rt::KernelContext ectx = Sub(ctx, expand_->op, expand_->index);
      RETURN_IF_ERROR(PreparePointwise(ectx, c, cin, uint8_, &*expand_));
    }
    rt::KernelContext pctx = Sub(ctx, project_.op, project_.index);
    RETURN_IF_ERROR(PreparePointwise(pctx, cout_, c, uint8_, &project_));
    RETURN_IF_ERROR(PrepareDepthwise(dctx, g));
    if (add_op_) {
      rt::KernelContext actx = Sub(ctx, add_op_, project_.index + 1);
      const auto* o = add_op_->options.AsAddOptions();
      if (!AddParams(*actx.input(0), *actx.input(1), *actx.output(0),
                     o ? o->fused_activation_function : tflite::ActivationFunctionType_NONE, &add_))
        return actx.Error("the residual ADD's scales are outside what the fused int8 chain computes");
      residual_first_ = add_op_->inputs[0] == ctx.input_index(res_index);
      add_avx512_ = qbin::AddSubAvx512Applies(add_);
      add_linear_ = !add_avx512_ ? qbin::AddSubLinear512()
                    : uint8_      ? qbin::PlanAddSubLinear512<uint8_t>(add_, vbmi_)
                                  : qbin::PlanAddSubLinear512<int8_t>(add_, vbmi_);
      add_float_ = !add_avx512_ ? qbin::AddSubFloat512()
                   : uint8_      ? qbin::PlanAddSubFloat512<uint8_t>(add_, add_linear_)
                                 : qbin::PlanAddSubFloat512<int8_t>(add_, add_linear_);
    }

    // Band height: as many rows as fit the per-thread budget, at least one.
    band_rows_ = 1;
    while (band_rows_ < g.out_h && BandBytes(band_rows_ + 1) <= kBandBytes) ++band_rows_;
    slot_bytes_ = Align64(dwq::SlotBytes(plan_)) + BandBytes(band_rows_) + 4 * 64;
    shared_id_ = -1;
    const int threads = ctx.threads().num_threads();
    const int64_t image_bytes = int64_t{g.in_h} * g.in_w * c;
    if (threads > 1 && expand_ && batch == 1 && g.out_h < kSharedMaxRows * threads &&
        image_bytes <= kSharedBytes) {
      // About 4 chunks per thread of whole 12-row runs of the GEMM's tiles, at most the rows a
      // band's buffers hold.
      const int64_t px = int64_t{g.in_h} * g.in_w;
      const int64_t runs = ((px + 4 * threads - 1) / (4 * threads) + 11) / 12 * 12;
      chunks_.Plan(px, std::min<int64_t>(runs, int64_t{HaloRows(band_rows_)} * g.in_w), 1);
      shared_id_ = ctx.RequestScratch(static_cast<size_t>(image_bytes));
    }
    return ctx.ReserveSlotScratch(slot_bytes_);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (uint8_) return InvokeTyped<uint8_t>(ctx);
    return InvokeTyped<int8_t>(ctx);
  }

  std::string variant() const override {
    return std::string("fused/") + (expand_ ? "pw+" : "") + (pad_ ? "pad+" : "") + "dw+pw" + (add_op_ ? "+add" : "") +
           act_suffix_ +
           (uint8_ ? "/uint8" : "/int8") + "/avx512vnni/" + dwq::LoopName(plan_) + (shared_id_ >= 0 ? "/shared" : "");
  }
  int64_t Macs(const rt::KernelContext&) const override {
    const dwq::Geom& g = plan_.g;
    const int64_t in_px = int64_t{g.batches} * g.in_h * g.in_w, out_px = int64_t{g.batches} * g.out_h * g.out_w;
    int64_t macs = out_px * dwq::LayerChannels(plan_) * (int64_t{g.k_h} * g.k_w + cout_);
    if (expand_ && expand_->packed) macs += in_px * dwq::LayerChannels(plan_) * expand_->packed->K;
    return macs;
  }
  size_t PackedBytes() const override {
    size_t n = project_.packed ? project_.packed->bytes() : 0;
    if (expand_ && expand_->packed) n += expand_->packed->bytes();
    return n + plan_.weights.size() * sizeof(int16_t) + plan_.quad_weights.size() + plan_.quad_weights_b.size();
  }

 private:
  // A context for one of the run's original ops inside this step: its own tensors (the
  // quantization of the tensors inside the run), this step's scratch and threads.
  static rt::KernelContext Sub(rt::KernelContext& ctx, const Operator* op, int index) {
    return rt::KernelContext(ctx.host(), &ctx.graph(), op, ctx.op_index(), index);
  }

  // The weights and output stage of a 1×1 convolution of K -> N channels, as CONV_2D's VNNI path
  // builds them (conv_int8.cc): int8 per-channel, uint8 with the legacy per-tensor multiplier.
  static Status PreparePointwise(rt::KernelContext& sub, int N, int K, bool uint8, Pointwise8* pw) {
    const rt::RtTensor& wt = *sub.input(1);
    pw->packed = GetPackedWeightsVnni(sub, "conv", wt, N, K, {uint8 ? wt.zero_point() : 0});
    GemmOpSpec spec;
    spec.kind = uint8 ? QuantKind::kUInt8 : QuantKind::kInt8;
    spec.N = N;
    spec.K = K;
    spec.abs_sum = &pw->packed->abs_sum;
    spec.activation = GetOptions<tflite::Conv2DOptionsT>(sub.op()).fused_activation_function;
    spec.per_channel_multipliers = !uint8;
    ASSIGN_OR_RETURN(const bool supported, PrepareGemmOutput(sub, spec, &pw->out));
    if (!supported) return sub.Error("requantization outside what the fused int8 chain computes");
    qgemm::BuildVnniOutput(*pw->packed, pw->out.q8, sub.input(0)->zero_point() + (uint8 ? 0 : 128), &pw->vout);
    pw->lda = int64_t{pw->packed->K4} * 4;
    return Status::Ok();
  }

  // The depthwise loop's plan, as DEPTHWISE_CONV_2D's int8 path builds it (dwq::Quant8LayerOf,
  // dwq::PlanQuant8).
  Status PrepareDepthwise(rt::KernelContext& dctx, const dwq::Geom& g) {
    const rt::RtTensor& din = *dctx.input(0);
    dwq::Quant8Layer l;
    ASSIGN_OR_RETURN(const bool takes,
                     dwq::Quant8LayerOf(dctx, din, *dctx.input(1), dctx.input(2), *dctx.output(0),
                                        GetOptions<tflite::DepthwiseConv2DOptionsT>(dctx.op()).fused_activation_function,
                                        g.channels, &l));
    if (!takes) return dctx.Error("requantization outside what the fused int8 chain computes");
    dwq::PlanQuant8(g, l, true, &plan_);
    if (!dwq::RowsApply(plan_))
      return Internal(dctx.op().type_name() + ": the depthwise row loops do not take the layer");
    // int8 depthwise rows on AVX-512 store D already flipped into the uint8 domain (the byte XOR
    // 0x80), so that the projection reads D in place instead of flipping a copy of it.
    plan_.flip_output = !uint8_ && (plan_.avx512 || plan_.quads_kn);
    dw_zero_point_ = din.zero_point();
    return Status::Ok();
  }

  // Input rows a band of `rows` output rows reads at most.
  int HaloRows(int rows) const {
    const dwq::Geom& g = plan_.g;
    return std::min(g.in_h, (rows - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1);
  }
  // Bytes of E, D and the A buffer of the GEMMs (the larger of the two) for `rows` rows.
  int64_t EBytes(int rows) const {
    return expand_ ? int64_t{HaloRows(rows)} * plan_.g.in_w * dwq::LayerChannels(plan_) : 0;
  }
  int64_t DBytes(int rows) const { return int64_t{rows} * plan_.g.out_w * dwq::LayerChannels(plan_); }
  int64_t ABytes(int rows) const {
    const int64_t a_project = int64_t{rows} * plan_.g.out_w * project_.lda;
    const int64_t a_expand = expand_ ? int64_t{HaloRows(rows)} * plan_.g.in_w * expand_->lda : 0;
    return std::max(a_project, a_expand);
  }
  // GEMM rows of a band at most (for the row terms of weights packed with row sums).
  int64_t GemmRows(int rows) const {
    return std::max<int64_t>(int64_t{rows} * plan_.g.out_w, expand_ ? int64_t{HaloRows(rows)} * plan_.g.in_w : 0);
  }
  int64_t BandBytes(int rows) const {
    return static_cast<int64_t>(Align64(EBytes(rows)) + Align64(DBytes(rows)) + Align64(ABytes(rows)) +
                                Align64(GemmRows(rows) * sizeof(int32_t))) + 64;
  }

  // Rows [0, rows) of A times pw's weights into c (ldc bytes between rows). a_rows: `rows` rows
  // of `depth` values (int8 rows are flipped into the uint8 domain the VNNI tiles take, unless
  // a_flipped: they are stored so already); with row sums in the packing (uint8 weights,
  // PackedB8::f) their terms go to row_term.
  static void Gemm(const Pointwise8& pw, const void* a_rows, int depth, bool uint8, int64_t rows, uint8_t* a_buf,
                   int32_t* row_term, void* c, int64_t ldc, bool a_flipped = false) {
    if (rows <= 0) return;
    const qgemm::ContiguousRowsPacker8 pack(a_rows, depth, uint8 || a_flipped ? 0 : 0x80);
    const uint8_t* a = pack.InPlace(0, pw.lda);
    if (!a) {
      pack.Pack(0, static_cast<int>(rows), a_buf, pw.lda);
      a = a_buf;
    }
    const qgemm::PackedB8& b = *pw.packed;
    if (b.f != 0)
      for (int64_t r = 0; r < rows; ++r)
        row_term[r] = static_cast<int32_t>(static_cast<uint32_t>(b.f) * static_cast<uint32_t>(qgemm::RowSumU8(a + r * pw.lda, pw.lda)));
    qgemm::VnniChunk(a, pw.lda, b.packed_koff.data(), static_cast<int>(rows), b, 0, b.panels, pw.vout,
                     b.f != 0 ? row_term : nullptr, static_cast<uint8_t*>(c), ldc);
  }

  template <typename T>
  Status InvokeTyped(rt::KernelContext& ctx) {
    const dwq::Geom& g = plan_.g;
    const int rows = g.batches * g.out_h;
    const T* x = ctx.input(0)->data_as<T>();
    const int64_t x_elements = ctx.input(0)->num_elements();
    const T* r = residual_other_ ? ctx.input(ctx.num_inputs() - 1)->data_as<T>() : x;
    T* y = ctx.output(0)->data_as<T>();
    rt::ThreadPool& pool = ctx.threads();
    // One contiguous share of rows per thread, in row order, with the buffers of its slot (the
    // threads of now: one while the interpreter runs the op alone, ThreadPool::SetSerial).
    const int tasks = std::min(pool.num_threads(), rows);
    if (shared_id_ >= 0 && tasks > 1) {
      T* e = ctx.Scratch<T>(shared_id_);
      chunks_.Reset();
      RunTasks(&pool, tasks, [&](int64_t t) {
        SharedRows<T>(x, r, y, e, pool.SlotScratch(static_cast<int>(t)), static_cast<int>(t), tasks);
      });
      return Status::Ok();
    }
    RunTasks(&pool, tasks, [&](int64_t t) {
      RunRows<T>(x, x_elements, r, y, pool.SlotScratch(static_cast<int>(t)), static_cast<int>(rows * t / tasks),
                 static_cast<int>(rows * (t + 1) / tasks));
    });
    return Status::Ok();
  }

  // A slot's buffers: the depthwise loop's (from the slot's start), E, D, the GEMMs' A rows and
  // their row terms.
  struct SlotBuffers {
    uint8_t *e, *d, *a;
    int32_t* row_term;
  };
  SlotBuffers Buffers(uint8_t* slot) const {
    SlotBuffers b;
    b.e = slot + Align64(dwq::SlotBytes(plan_));
    b.d = b.e + Align64(EBytes(band_rows_));
    b.a = b.d + Align64(DBytes(band_rows_));
    b.row_term = reinterpret_cast<int32_t*>(b.a + Align64(ABytes(band_rows_)));
    return b;
  }

  // Output rows [r0, r1) of the batch·out_h rows, with the buffers at `slot`; r: the residual.
  template <typename T>
  void RunRows(const T* x, int64_t x_elements, const T* r, T* y, uint8_t* slot, int r0, int r1) const {
    const dwq::Geom& g = plan_.g;
    const bool uint8 = std::is_same_v<T, uint8_t>;
    const SlotBuffers sb = Buffers(slot);
    uint8_t* ring = slot;
    T* e_buf = reinterpret_cast<T*>(sb.e);
    T* d_buf = reinterpret_cast<T*>(sb.d);
    uint8_t* a_buf = sb.a;
    int32_t* row_term = sb.row_term;
    const int c = dwq::LayerChannels(plan_);
    const size_t row_bytes = static_cast<size_t>(g.in_w) * c;
    const int cin = expand_ ? expand_->packed->K : c;
    BandRows e_rows;
    for (int o0 = r0; o0 < r1;) {
      const int b = o0 / g.out_h;
      const int o1 = std::min({r1, (b + 1) * g.out_h, o0 + band_rows_});
      const int oy0 = o0 - b * g.out_h, oy1 = o1 - b * g.out_h;
      const auto [lo, hi] = FilterInputRows(oy0, oy1, g.stride_h, g.pad_h, g.k_h, g.dil_h, g.in_h);
      dwq::Args args;
      args.input = x;
      args.input_elements = x_elements;
      args.input_zero_point = dw_zero_point_;
      if (expand_) {
        // First row to compute; rows [lo, from) are kept from the previous band.
        const int from = e_rows.Next(b, lo, hi, e_buf, row_bytes);
        Gemm(*expand_, x + (static_cast<int64_t>(b) * g.in_h + from) * g.in_w * cin, cin, uint8,
             int64_t{hi - from} * g.in_w, a_buf, row_term, e_buf + (from - lo) * row_bytes, c);
        args.input = e_buf;
        args.input_elements = static_cast<int64_t>(hi - lo) * g.in_w * c;
        args.in_row0 = int64_t{b} * g.in_h + lo;
      }
      args.output = d_buf;
      args.out_row0 = o0;
      dwq::RunRows(plan_, args, uint8, o0, o1, ring);
      Project<T>(d_buf, r, y, int64_t{o0} * g.out_w, int64_t{o1 - o0} * g.out_w, a_buf, row_term);
      o0 = o1;
    }
  }

  // The projection of `pixels` output pixels from the first, p0 of the batch·out_h·out_w, from
  // their depthwise output d, and the residual ADD.
  template <typename T>
  void Project(const T* d, const T* r, T* y, int64_t p0, int64_t pixels, uint8_t* a_buf, int32_t* row_term) const {
    if (pixels <= 0) return;
    const bool uint8 = std::is_same_v<T, uint8_t>;
    T* yb = y + p0 * cout_;
    Gemm(project_, d, dwq::LayerChannels(plan_), uint8, pixels, a_buf, row_term, yb, cout_, plan_.flip_output);
    if (add_op_) {  // residual and output have one shape: the band's pixels are the same in both
      const T* xb = r + p0 * cout_;
      const T* first = residual_first_ ? xb : yb;
      const T* second = residual_first_ ? yb : xb;
      const int64_t n = pixels * cout_;
      if (add_float_.ok) qbin::AddSubFloatRun512<T>(first, second, yb, n, add_float_);
      else if (add_linear_.ok) qbin::AddSubLinearRun512<T>(first, second, yb, n, add_linear_);
      else if (add_avx512_) qbin::AddSubRun512<T>(first, 1, second, 1, yb, n, add_);
      else qbin::AddSubRun<T>(first, 1, second, 1, yb, n, add_);
    }
  }

  // Task t of `tasks` in the two-phase form (one image, kSharedBytes), as DwChainF32::SharedRows:
  // the expansion chunks no thread has claimed yet into e, the whole expanded image; then the
  // task's share of the output pixels (ForShareBands): their depthwise rows, once the chunks of
  // the expanded rows they read are done (claimed here if still free, else waited for), and
  // their projection.
  template <typename T>
  void SharedRows(const T* x, const T* r, T* y, T* e, uint8_t* slot, int t, int tasks) const {
    const dwq::Geom& g = plan_.g;
    const bool uint8 = std::is_same_v<T, uint8_t>;
    const SlotBuffers sb = Buffers(slot);
    T* d_buf = reinterpret_cast<T*>(sb.d);
    uint8_t* a_buf = sb.a;
    int32_t* row_term = sb.row_term;
    const int c = dwq::LayerChannels(plan_);
    const int cin = expand_->packed->K;
    const int64_t in_px = int64_t{g.in_h} * g.in_w;
    const auto compute = [&](int64_t p0, int64_t n) {
      Gemm(*expand_, x + p0 * cin, cin, uint8, n, a_buf, row_term, e + p0 * c, c);
    };
    chunks_.ClaimAll(t, tasks, compute);
    dwq::Args args;
    args.input = e;
    args.input_elements = in_px * c;
    args.input_zero_point = dw_zero_point_;
    args.in_row0 = 0;
    args.output = d_buf;
    ForShareBands(t, tasks, g.out_h, g.out_w, band_rows_, [&](int o0, int o1, int64_t p0, int64_t p1) {
      const auto [lo, hi] = FilterInputRows(o0, o1, g.stride_h, g.pad_h, g.k_h, g.dil_h, g.in_h);
      chunks_.Ready(int64_t{lo} * g.in_w, int64_t{hi} * g.in_w, compute);
      args.out_row0 = o0;
      dwq::RunRows(plan_, args, uint8, o0, o1, slot);
      Project<T>(d_buf + (p0 - int64_t{o0} * g.out_w) * c, r, y, p0, p1 - p0, a_buf, row_term);
    });
  }

  std::optional<Pointwise8> expand_;
  const Operator* dw_op_;
  int dw_index_;
  Pointwise8 project_;
  const Operator* add_op_;  // null: no residual
  bool residual_other_;     // the residual is the op's last input (else the chain's input)
  bool uint8_;
  bool vbmi_;
  std::unique_ptr<Operator> last_with_act_;
  std::string act_suffix_;
  std::optional<SpatialPad> pad_;
  dwq::Plan plan_;
  int32_t dw_zero_point_ = 0;
  QuantBinaryParams add_;
  bool add_avx512_ = false;
  qbin::AddSubLinear512 add_linear_;
  qbin::AddSubFloat512 add_float_;
  bool residual_first_ = false;  // the ADD's input 0 is the residual
  int cout_ = 0;
  int band_rows_ = 1;
  size_t slot_bytes_ = 0;
  // The two-phase form (SharedRows): the shared expansion buffer's scratch (-1: bands of rows),
  // and its chunks.
  int shared_id_ = -1;
  mutable SharedChunks chunks_;
};

}  // namespace

rt::FusedRun MatchDwChainInt8(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits) {
  rt::FusedRun run;
  if (cc.reference_only || !cc.cpu.has_avx512_vnni()) return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const int n = static_cast<int>(s.ops.size());
  int first_dw = i;
  const Tensor* x = cc.input(0);
  if (!x || (x->type != DType::kInt8 && x->type != DType::kUInt8)) return run;
  const DType type = x->type;
  const bool expand = MatchPointwiseQuant(cc, type);
  // A PAD before the depthwise op (as in MatchDwChainF32): after the expansion, or at the start.
  std::optional<SpatialPad> pad;
  int pad_op = -1;
  if (expand) {
    first_dw = NextOp(cc, i);
    if (first_dw >= n || !PrivateLink(s, i, first_dw)) return run;
    first_dw = DepthwiseAfterPad(cc, first_dw, &pad, &pad_op);
  } else {
    first_dw = DepthwiseAfterPad(cc, i, &pad, &pad_op);
  }
  const int proj = NextOp(cc, first_dw);
  if (proj >= n || !MatchDepthwiseQuant(ContextOf(cc, first_dw), type) || !PrivateLink(s, first_dw, proj)) return run;
  if (!MatchPointwiseQuant(ContextOf(cc, proj), type)) return run;
  const size_t min_inner = type == DType::kInt8 ? limits.min_inner_bytes_int8 : limits.min_inner_bytes;
  if (ChainInnerElements(s, i, first_dw) < static_cast<int64_t>(min_inner)) return run;  // 1 byte each
  const int add = NextOp(cc, proj);
  int32_t residual_other = -1;
  const bool residual = MatchResidualQuant(cc, i, proj, add, s.ops[i].inputs[0], type, &residual_other);
  const int last = residual ? add : proj;
  // A standalone RELU / RELU6 / RELU_N1_TO_1 after the chain with its input's quantization: the
  // clamp of the chain's last step when that has none (as in MatchDwChainF32), computed by a copy
  // of that op with the activation set (its output tensor is quantized as the clamp's).
  const int act_op = NextOp(cc, last);
  tflite::ActivationFunctionType act;
  const char* act_name = "";
  std::unique_ptr<Operator> last_with_act;
  if (ClampAfter(s, last, act_op, &act, &act_name)) {
    last_with_act = std::make_unique<Operator>(s.ops[last]);
    tflite::ActivationFunctionType* field = ActivationField(*last_with_act);
    if (field && *field == tflite::ActivationFunctionType_NONE) *field = act;
    else last_with_act.reset();
  }
  const int out_op = last_with_act ? act_op : last;
  run.op = ChainOp(s, i, first_dw, proj, out_op,
                   std::string(expand ? "FUSED_PW_DW_PW_" : "FUSED_DW_PW_") + (type == DType::kUInt8 ? "UINT8" : "INT8"),
                   expand);
  if (residual_other >= 0) run.op->inputs.push_back(residual_other);
  run.num_ops = out_op + 1 - i;
  run.ops = ChainOps(i, first_dw, proj, last, last_with_act ? act_op : -1, pad_op);
  std::optional<Pointwise8> e;
  if (expand) {
    e.emplace();
    e->op = &s.ops[i];
    e->index = i;
  }
  Pointwise8 project;
  project.op = last_with_act && !residual ? last_with_act.get() : &s.ops[proj];
  project.index = proj;
  const Operator* add_op = !residual ? nullptr : last_with_act ? last_with_act.get() : &s.ops[add];
  const std::string suffix = last_with_act ? std::string("+") + act_name : "";
  run.kernel = std::make_unique<DwChainInt8>(std::move(e), &s.ops[first_dw], first_dw, std::move(project), add_op,
                                             residual_other >= 0, type == DType::kUInt8, cc.cpu.avx512vbmi, std::move(last_with_act), suffix,
                                             pad);
  return run;
}

}  // namespace edgeopt::kernels::fused
