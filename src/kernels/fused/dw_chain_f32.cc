// Fused float32 depthwise chains, run band by band (see fused.h for when they apply).
//
//   [1×1 expand CONV_2D] -> DEPTHWISE_CONV_2D -> 1×1 project CONV_2D
//
// For a band of output rows the kernel computes the input rows the depthwise filter needs (with
// its halo) of the expansion into a buffer E, the depthwise rows into a buffer D, and projects D
// straight into the output. E and D are sized to stay in the core's L2, so the expanded tensor
// (112×112×96 floats = 4.8 MB in MobileNetV2) never goes to memory. Bands of one thread are
// consecutive, so the halo rows the next band needs are kept (moved to the front of E) instead
// of being computed again; only the first band of each thread's share computes its halo.
//
// Every step runs the same micro-kernels, packing and accumulation order as the unfused ops
// (gemm::Gemm with the ukernel family the unfused CONV_2D picks, dwconv row kernels), so the
// results equal the unfused path's.
#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels::fused {
namespace {

using gemm::MinMax;
using gemm::PackedB;

struct Depthwise {
  int op = -1;
  MinMax mm{};
  const dwconv::VectorRows* vec = nullptr;
  const tflite::DepthwiseConv2DOptionsT* options = nullptr;
  std::shared_ptr<const AlignedFloats> packed;
};

bool ConstantFloat(const rt::KernelCreateContext& cc, int i, const std::vector<int32_t>& shape) {
  const Tensor* t = cc.input(i);
  return IsFloat32(t) && !t->sparsity && t->shape == shape && cc.is_constant(i) &&
         static_cast<int64_t>(cc.constant_data(i).size()) == t->num_elements() * 4;
}

// Input 0 of cc.op is a float NHWC tensor with `channels` channels (known statically).
bool FloatNhwc(const rt::KernelCreateContext& cc, int* channels) {
  const Tensor* in = cc.input(0);
  if (!IsFloat32(in) || in->shape.size() != 4 || !IsFloat32(cc.output(0))) return false;
  *channels = in->shape[3];
  return *channels > 0;
}

}  // namespace

bool MatchPointwise(const rt::KernelCreateContext& cc, Pointwise* pw) {
  if (cc.op.code != tflite::BuiltinOperator_CONV_2D || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  int k = 0;
  if (!FloatNhwc(cc, &k)) return false;
  const Tensor* w = cc.input(1);
  if (!w || w->shape.size() != 4) return false;
  const int n = w->shape[0];
  if (!ConstantFloat(cc, 1, {n, 1, 1, k})) return false;
  if (cc.input(2) && !ConstantFloat(cc, 2, {n})) return false;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  if (o.stride_h != 1 || o.stride_w != 1) return false;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return false;
  if (!FusedMinMax(o.fused_activation_function, &pw->mm)) return false;
  pw->op = cc.op_index;
  const auto& in = cc.input(0)->shape;  // NHWC (FloatNhwc)
  // As MakeConv2DF32 chooses for a 1×1 stride-1 filter (rows: the unfused layer's pixels).
  pw->uk = &gemm::SelectPointwiseUkernels(cc.cpu, k, n, int64_t{in[0]} * in[1] * in[2]);
  return true;
}

namespace {

bool MatchDepthwise(const rt::KernelCreateContext& cc, Depthwise* dw) {
  if (cc.op.code != tflite::BuiltinOperator_DEPTHWISE_CONV_2D || cc.num_inputs() < 3 || cc.num_outputs() != 1)
    return false;
  int c = 0;
  if (!FloatNhwc(cc, &c)) return false;
  const Tensor* f = cc.input(1);
  if (!f || f->shape.size() != 4 || f->shape[1] > 64) return false;
  if (!ConstantFloat(cc, 1, {1, f->shape[1], f->shape[2], c}) || !ConstantFloat(cc, 2, {c})) return false;
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(cc.op);
  if (o.depth_multiplier != 0 && o.depth_multiplier != 1) return false;
  // Dilated filters (DeepLab's atrous blocks) need (kh-1)·dh halo rows per band: with wide
  // channels a band shrinks to one row and every band streams all the 1×1 weights again
  // (DeepLabV3's 33×33×480 dilation-4 blocks ran ~10× slower fused).
  if (o.dilation_h_factor != 1 || o.dilation_w_factor != 1) return false;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return false;
  if (!FusedMinMax(o.fused_activation_function, &dw->mm)) return false;
  dw->vec = dwconv::SelectVectorRows(cc.cpu, c);
  if (!dw->vec) return false;
  dw->op = cc.op_index;
  dw->options = &o;
  return true;
}


// Output rows per band: E (input rows of the band, halo included) and D (the band's depthwise
// output) together within kBandFloats per thread.
constexpr int64_t kBandFloats = 96 * 1024;  // 384 KB

class DwChainF32 : public rt::OpKernel {
 public:
  // Inputs of the synthetic op: x, [expand weights, expand bias,] depthwise filter, depthwise
  // bias, project weights, project bias. Output: the project's.
  DwChainF32(std::optional<Pointwise> expand, Depthwise dw, Pointwise project)
      : expand_(std::move(expand)), dw_(std::move(dw)), project_(std::move(project)) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    const int batch = in->dim(0), h = in->dim(1), w = in->dim(2), cin = in->dim(3);
    const int d = expand_ ? 3 : 1;  // position of the depthwise filter among the inputs
    const rt::RtTensor* dwf = ctx.input(d);
    const rt::RtTensor* pww = ctx.input(d + 2);
    const int c = dwf->dim(3);
    if (expand_ && ctx.input(1)->dim(3) != cin)
      return ctx.Error("input " + Describe(*in) + " does not match the expansion weights " + Describe(*ctx.input(1)));
    if (!expand_ && cin != c)
      return ctx.Error("input " + Describe(*in) + " does not match the depthwise filter " + Describe(*dwf));
    const auto& o = *dw_.options;
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, dwf->dim(1), dwf->dim(2), h, w, &wg));
    g_ = dwconv::GeometryOf(o, wg, batch, h, w, c, dwf->dim(1), dwf->dim(2), 1);
    const dwconv::Geometry& g = g_;
    cout_ = pww->dim(0);
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, g.oh, g.ow, cout_}));

    if (expand_ && !expand_->packed) expand_->packed = PackPointwise(ctx, *expand_, 1);
    if (!dw_.packed) {
      const float* bias = ctx.input(d + 1)->data_as<float>();
      dw_.packed = GetOrPackFor<AlignedFloats>(ctx, dw_.op, dw_.vec->pack_key, [&] {
        return dwconv::PackWeights(dwf->data_as<float>(), bias, g.kh, g.kw, g.c, dw_.vec->block);
      });
    }
    if (!project_.packed) project_.packed = PackPointwise(ctx, project_, d + 2);

    // Band height: as many rows as fit the per-thread budget, at least one.
    band_rows_ = 1;
    while (band_rows_ < g.oh && BufferFloats(band_rows_ + 1).first + BufferFloats(band_rows_ + 1).second <= kBandFloats)
      ++band_rows_;
    const auto [e, dfl] = BufferFloats(band_rows_);
    slot_floats_ = RoundUp(e) + RoundUp(dfl);
    tasks_ = static_cast<int>(std::min<int64_t>(ctx.threads().num_threads(), int64_t{batch} * g.oh));
    return ctx.ReserveSlotScratch(slot_floats_ * sizeof(float));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const int rows = g_.batch * g_.oh;
    const float* x = ctx.input(0)->data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    // One contiguous share of rows per thread, in row order, with the buffers of its slot.
    rt::ThreadPool& pool = ctx.threads();
    RunTasks(&pool, tasks_, [&](int64_t t) {
      float* slot = reinterpret_cast<float*>(pool.SlotScratch(static_cast<int>(t)));
      RunRows(x, y, slot, static_cast<int>(rows * t / tasks_), static_cast<int>(rows * (t + 1) / tasks_));
    });
    return Status::Ok();
  }

  // The 1×1 steps' GEMM families are named (once each) when they are not the usual tiles
  // (".../kpair").
  std::string variant() const override {
    std::string v = std::string(expand_ ? "fused/pw+dw+pw/f32/" : "fused/dw+pw/f32/") + dw_.vec->isa;
    for (const Pointwise* pw : {expand_ ? &*expand_ : nullptr, &project_}) {
      const std::string isa = pw ? pw->uk->isa : "";
      const size_t slash = isa.find('/');
      if (slash != std::string::npos && v.find(isa.substr(slash)) == std::string::npos) v += isa.substr(slash);
    }
    return v;
  }
  int64_t Macs(const rt::KernelContext&) const override {
    const int64_t in_px = int64_t{g_.batch} * g_.h * g_.w, out_px = int64_t{g_.batch} * g_.oh * g_.ow;
    int64_t macs = out_px * g_.c * (g_.kh * g_.kw + cout_);
    if (expand_ && expand_->packed) macs += in_px * g_.c * expand_->packed->k();
    return macs;
  }
  size_t PackedBytes() const override {
    size_t n = dw_.packed ? dw_.packed->bytes() : 0;
    if (expand_ && expand_->packed) n += expand_->packed->bytes();
    return n + (project_.packed ? project_.packed->bytes() : 0);
  }

 private:
  static size_t RoundUp(int64_t floats) { return static_cast<size_t>((floats + 15) / 16 * 16); }

  // Packs the 1×1 weights at input i for pw's micro-kernels (as CONV_2D packs them, under that
  // op's key, so fused and unfused interpreters of one model share them).
  static std::shared_ptr<const PackedB> PackPointwise(rt::KernelContext& ctx, const Pointwise& pw, int i) {
    const rt::RtTensor* w = ctx.input(i);
    const rt::RtTensor* bias = ctx.input(i + 1);
    return GetOrPackFor<PackedB>(ctx, pw.op, gemm::PackKeyFor(*pw.uk), [&] {
      return gemm::PackNKFor(*pw.uk, w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, w->dim(0), w->dim(3));
    });
  }

  // Input rows a band of `rows` output rows reads at most.
  int HaloRows(int rows) const { return std::min(g_.h, (rows - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1); }
  // Floats of E (0 without expansion: the depthwise reads the input) and D for `rows` rows.
  std::pair<int64_t, int64_t> BufferFloats(int rows) const {
    const int64_t e = expand_ ? int64_t{HaloRows(rows)} * g_.w * g_.c : 0;
    return {e, int64_t{rows} * g_.ow * g_.c};
  }

  // Output rows [r0, r1) of the batch·oh rows, with the buffers at `slot`.
  void RunRows(const float* x, float* y, float* slot, int r0, int r1) const {
    const dwconv::Geometry& g = g_;
    float* e_buf = slot;
    float* d_buf = slot + RoundUp(BufferFloats(band_rows_).first);
    const size_t row_floats = static_cast<size_t>(g.w) * g.c;
    const int cin = expand_ ? expand_->packed->k() : g.c;
    int e_image = -1, e_lo = 0, e_hi = 0;  // E holds input rows [e_lo, e_hi) of image e_image
    for (int o0 = r0; o0 < r1;) {
      const int b = o0 / g.oh;
      const int o1 = std::min({r1, (b + 1) * g.oh, o0 + band_rows_});
      const int oy0 = o0 - b * g.oh, oy1 = o1 - b * g.oh;
      const int lo = std::clamp(oy0 * g.sh - g.pad_top, 0, g.h);
      const int hi = std::clamp((oy1 - 1) * g.sh - g.pad_top + (g.kh - 1) * g.dh + 1, lo, g.h);
      dwconv::Geometry band = g;
      const float* dw_in = x;
      if (expand_) {
        int from = lo;  // first row to compute; rows [lo, from) are kept from the previous band
        if (e_image == b && lo >= e_lo && lo <= e_hi && hi >= e_hi) {
          if (lo > e_lo) std::memmove(e_buf, e_buf + (lo - e_lo) * row_floats, (e_hi - lo) * row_floats * sizeof(float));
          from = e_hi;
        }
        if (hi > from)
          gemm::Gemm(*expand_->uk, nullptr, static_cast<size_t>(hi - from) * g.w,
                     x + (static_cast<size_t>(b) * g.h + from) * g.w * cin, cin, *expand_->packed,
                     e_buf + (from - lo) * row_floats, g.c, expand_->mm);
        e_image = b;
        e_lo = lo;
        e_hi = hi;
        dw_in = e_buf;
        band.in_row0 = b * g.h + lo;
      }
      band.out_row0 = o0;
      dw_.vec->rows(band, dw_in, dw_.packed->data(), d_buf, o0, o1, 0, dwconv::ChannelBlocks(g.c, dw_.vec->block),
                    dw_.mm);
      gemm::Gemm(*project_.uk, nullptr, static_cast<size_t>(o1 - o0) * g.ow, d_buf, g.c, *project_.packed,
                 y + static_cast<size_t>(o0) * g.ow * cout_, cout_, project_.mm);
      o0 = o1;
    }
  }

  std::optional<Pointwise> expand_;
  Depthwise dw_;
  Pointwise project_;
  dwconv::Geometry g_;
  int cout_ = 0;
  int band_rows_ = 1;
  size_t slot_floats_ = 0;
  int tasks_ = 1;
};

}  // namespace

rt::KernelCreateContext ContextOf(const rt::KernelCreateContext& cc, int op) {
  return {cc.graph, cc.subgraph, cc.subgraph_index, cc.subgraph.ops[op], op, cc.cpu, cc.reference_only};
}

bool PrivateLink(const Subgraph& s, int producer) {
  const int32_t t = s.ops[producer].outputs[0];
  const Operator& next = s.ops[producer + 1];
  if (next.inputs.empty() || next.inputs[0] != t) return false;
  if (std::count(next.inputs.begin(), next.inputs.end(), t) != 1) return false;
  if (std::find(s.outputs.begin(), s.outputs.end(), t) != s.outputs.end() || s.tensors[t].is_variable) return false;
  const std::vector<int> consumers = s.FindConsumers(t);
  return consumers.size() == 1 && consumers[0] == producer + 1;
}

rt::FusedRun MatchDwChainF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& limits) {
  rt::FusedRun run;
  if (cc.reference_only) return run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  const int n = static_cast<int>(s.ops.size());
  std::optional<Pointwise> expand;
  Depthwise dw;
  Pointwise project;
  int first_dw = i;
  Pointwise e;
  if (MatchPointwise(cc, &e)) {
    if (i + 2 >= n || !PrivateLink(s, i)) return run;
    expand = e;
    first_dw = i + 1;
  }
  if (first_dw + 1 >= n || !MatchDepthwise(ContextOf(cc, first_dw), &dw) || !PrivateLink(s, first_dw)) return run;
  if (!MatchPointwise(ContextOf(cc, first_dw + 1), &project)) return run;
  int64_t inner = s.tensors[s.ops[first_dw].outputs[0]].num_elements();
  if (expand) inner = std::max(inner, s.tensors[s.ops[i].outputs[0]].num_elements());
  if (inner * static_cast<int64_t>(sizeof(float)) < static_cast<int64_t>(limits.min_inner_bytes)) return run;
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = expand ? "FUSED_PW_DW_PW" : "FUSED_DW_PW";
  const auto weights = [&](int k) {
    const Operator& o = s.ops[k];
    op->inputs.push_back(o.inputs[1]);
    op->inputs.push_back(o.inputs.size() > 2 ? o.inputs[2] : -1);
  };
  op->inputs.push_back(s.ops[i].inputs[0]);
  if (expand) weights(i);
  weights(first_dw);
  weights(first_dw + 1);
  op->outputs.push_back(s.ops[first_dw + 1].outputs[0]);
  run.num_ops = first_dw + 2 - i;
  run.op = std::move(op);
  run.kernel = std::make_unique<DwChainF32>(std::move(expand), std::move(dw), std::move(project));
  return run;
}

}  // namespace edgeopt::kernels::fused
