// Fused float32 depthwise chains, run band by band (see fused.h for when they apply).
//
//   [expand CONV_2D] -> DEPTHWISE_CONV_2D -> 1×1 project CONV_2D [-> ADD of the chain's input]
//
// The expansion is a 1×1 convolution (MobileNetV2's inverted residual blocks) or any other
// convolution without dilation (the network's stem: a 3×3 stride-2 convolution of the image,
// whose output, 112×112×32 floats = 1.6 MB in MobileNetV2, is the model's largest tensor).
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
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/binary_f32/binary_f32.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/parallel.h"
#include "runtime/constant_fold.h"

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

// A residual ADD right after the project: added band by band while the band's output rows are
// still in cache, with the ADD's clamp, one IEEE addition per element as the unfused ADD
// (binary_f32.h). Of the chain's input (MobileNetV2's inverted residual blocks), or of another
// tensor of the output's shape computed before the chain (other: the fused op's last input;
// MediaPipe's face detectors add a block's input to the second of its two depthwise chains).
struct Residual {
  gemm::MinMax mm{};
  void (*run)(binary::Op, const float*, bool, const float*, bool, float*, size_t, gemm::MinMax) = nullptr;
  bool other = false;
};

// folded_ok: or the output of constant ops (ConstantOrFolded).
bool ConstantFloat(const rt::KernelCreateContext& cc, int i, const std::vector<int32_t>& shape, bool folded_ok = true) {
  const Tensor* t = cc.input(i);
  if (!IsFloat32(t) || t->sparsity || t->shape != shape) return false;
  if (folded_ok) return ConstantOrFolded(cc, i);
  return cc.is_constant(i) && static_cast<int64_t>(cc.constant_data(i).size()) == t->num_elements() * 4;
}

// Input 0 of cc.op is a float NHWC tensor with `channels` channels (known statically).
bool FloatNhwc(const rt::KernelCreateContext& cc, int* channels) {
  const Tensor* in = cc.input(0);
  if (!IsFloat32(in) || in->shape.size() != 4 || !IsFloat32(cc.output(0))) return false;
  *channels = in->shape[3];
  return *channels > 0;
}

}  // namespace

bool MatchPointwise(const rt::KernelCreateContext& cc, Pointwise* pw, bool folded_ok) {
  if (cc.op.code != tflite::BuiltinOperator_CONV_2D || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  int k = 0;
  if (!FloatNhwc(cc, &k)) return false;
  const Tensor* w = cc.input(1);
  if (!w || w->shape.size() != 4) return false;
  const int n = w->shape[0];
  if (!ConstantFloat(cc, 1, {n, 1, 1, k}, folded_ok)) return false;
  if (cc.input(2) && !ConstantFloat(cc, 2, {n}, folded_ok)) return false;
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

// Filter rows of a convolution expansion (its taps) at most.
constexpr int kMaxConvTaps = 16;

// A CONV_2D with a larger filter or a stride as the chain's expansion (the network's stem, e.g.
// MobileNet's 3×3 stride-2 convolution of the image, whose output is the largest tensor of the
// model): its output rows are computed band by band through the indirect GEMM, with the family,
// packing and taps (filter rows) the unfused CONV_2D uses (DwChainF32::BuildConvIndirection).
struct ConvExpand {
  const tflite::Conv2DOptionsT* options = nullptr;
  int kh = 0, kw = 0;
  // Prepare: the convolution's input and padding, output columns whose filter row crosses the
  // left or right edge (copied with zeros around them, as the unfused kernel's border rows).
  int in_h = 0, in_w = 0, cin = 0, pad_top = 0, pad_left = 0, border_cols = 0;
};

bool MatchConvExpand(const rt::KernelCreateContext& cc, Pointwise* pw, ConvExpand* cv) {
  if (cc.op.code != tflite::BuiltinOperator_CONV_2D || cc.num_inputs() < 2 || cc.num_outputs() != 1) return false;
  int c = 0;
  if (!FloatNhwc(cc, &c)) return false;
  const Tensor* w = cc.input(1);
  const Tensor* out = cc.output(0);
  if (!w || w->shape.size() != 4 || out->shape.size() != 4) return false;
  const int n = w->shape[0], kh = w->shape[1], kw = w->shape[2];
  if (kh > kMaxConvTaps || !ConstantFloat(cc, 1, {n, kh, kw, c})) return false;
  if (cc.input(2) && !ConstantFloat(cc, 2, {n})) return false;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  if (o.dilation_h_factor != 1 || o.dilation_w_factor != 1 || o.stride_h < 1 || o.stride_w < 1) return false;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return false;
  if (!FusedMinMax(o.fused_activation_function, &pw->mm)) return false;
  // As MakeConv2DF32 chooses (rows: the unfused layer's output pixels).
  const gemm::Ukernels& uk =
      gemm::SelectConvUkernels(cc.cpu, int64_t{kh} * kw * c, n, int64_t{out->shape[0]} * out->shape[1] * out->shape[2]);
  if (!uk.igemm) return false;
  pw->op = cc.op_index;
  pw->uk = &uk;
  cv->options = &o;
  cv->kh = kh;
  cv->kw = kw;
  return true;
}

// dilation_ok: the chain has no expansion (the depthwise layer reads its input tensor in place).
bool MatchDepthwise(const rt::KernelCreateContext& cc, Depthwise* dw, bool dilation_ok) {
  if (cc.op.code != tflite::BuiltinOperator_DEPTHWISE_CONV_2D || cc.num_inputs() < 3 || cc.num_outputs() != 1)
    return false;
  int c = 0;
  if (!FloatNhwc(cc, &c)) return false;
  const Tensor* f = cc.input(1);
  if (!f || f->shape.size() != 4 || f->shape[1] > 64) return false;
  if (!ConstantFloat(cc, 1, {1, f->shape[1], f->shape[2], c}) || !ConstantFloat(cc, 2, {c})) return false;
  const auto& o = GetOptions<tflite::DepthwiseConv2DOptionsT>(cc.op);
  if (o.depth_multiplier != 0 && o.depth_multiplier != 1) return false;
  // Dilated filters (DeepLab's atrous blocks) after an expansion need (kh-1)·dh halo rows of it
  // per band: with wide channels a band shrinks to one row and every band streams all the 1×1
  // weights again (DeepLabV3's 33×33×480 dilation-4 blocks ran ~10× slower fused). Without an
  // expansion the depthwise rows read the input tensor in place and only D is banded: the
  // depthwise output (33×33×480 floats = 2.1 MB there) is never written to memory and read back
  // (DeepLabV3, in-process A/B: 2 threads 0.929x and 0.926x, 1 thread 1.013x, 1.032x, 1.007x).
  if ((o.dilation_h_factor != 1 || o.dilation_w_factor != 1) && !dilation_ok) return false;
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

// With more than one thread, images whose whole expansion takes at most this many floats run
// in two phases instead of in bands of rows per thread (SharedRows): the threads first compute
// the expansion once, in chunks of pixels claimed from a shared list, into one buffer of the
// whole image; then each computes the depthwise rows and the projection of its share of the
// output pixels. Cut into rows per thread, a 14×14 image computes 16 expanded rows for 14 (each
// share its halo row), a 7×7 one 9 for 7 and splits 3 / 4 rows. Measured at 2 threads (two
// interpreters in one process, invokes alternated one by one, median of the pairs' ratios):
// MobileNetV2 float 0.969-0.976x the time (its 7×7 blocks 0.87-0.91x, 14×14 ~0.97x; its 28×28
// blocks were 1.03-1.1x slower so, hence kSharedMaxRows), hand_landmark_full 0.92x, DeepLabV3,
// selfie segmentation, pose_landmark_full unchanged (0.995-1.0x).
constexpr int64_t kSharedFloats = 256 * 1024;  // 1 MB
constexpr int kSharedMaxRows = 8;  // ... and shares of fewer output rows than this per thread

class DwChainF32 : public rt::OpKernel {
 public:
  // Inputs of the synthetic op: x, [expand weights, expand bias,] depthwise filter, depthwise
  // bias, project weights, project bias. Output: the project's.
  // conv: the expansion is that convolution rather than a 1×1 one.
  // residual: the output is the ADD's (project + input).
  // pad: a PAD of zeros on the depthwise layer's input rows and columns (after the expansion, or
  // the op the chain starts with), taken as the depthwise filter's explicit padding.
  // prelu: a per-channel PRELU after the last step (its alpha the op's last input; AVX-512).
  DwChainF32(std::optional<Pointwise> expand, std::optional<ConvExpand> conv, Depthwise dw, Pointwise project,
             std::optional<Residual> residual, std::string act_suffix, std::optional<SpatialPad> pad, bool prelu)
      : expand_(std::move(expand)), conv_(std::move(conv)), dw_(std::move(dw)), project_(std::move(project)),
        residual_(residual), act_suffix_(std::move(act_suffix)), pad_(pad), prelu_(prelu) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    const int batch = in->dim(0), cin = in->dim(3);
    int h = in->dim(1), w = in->dim(2);  // the depthwise layer's input: after the expansion
    const int d = expand_ ? 3 : 1;  // position of the depthwise filter among the inputs
    const rt::RtTensor* dwf = ctx.input(d);
    const rt::RtTensor* pww = ctx.input(d + 2);
    const int c = dwf->dim(3);
    if (expand_ && ctx.input(1)->dim(3) != cin)
      return ctx.Error("input " + Describe(*in) + " does not match the expansion weights " + Describe(*ctx.input(1)));
    if (conv_) {
      ConvExpand& cv = *conv_;
      WindowGeometry cg;
      RETURN_IF_ERROR(ComputeConvWindow(ctx, *cv.options, cv.kh, cv.kw, h, w, &cg));
      cv.in_h = h;
      cv.in_w = w;
      cv.cin = cin;
      cv.pad_top = cg.pad_h;
      cv.pad_left = cg.pad_w;
      cv.border_cols = 0;
      for (int ox = 0; ox < cg.out_w; ++ox) {
        const int ix0 = ox * cv.options->stride_w - cv.pad_left;
        cv.border_cols += ix0 < 0 || ix0 + cv.kw > w;
      }
      h = cg.out_h;
      w = cg.out_w;
      if (zero_.size() < static_cast<size_t>(cv.kw) * cin) zero_.Reset(static_cast<size_t>(cv.kw) * cin);
    }
    if (!expand_ && cin != c)
      return ctx.Error("input " + Describe(*in) + " does not match the depthwise filter " + Describe(*dwf));
    const auto& o = *dw_.options;
    WindowGeometry wg;
    if (pad_) {
      wg = PaddedValidWindow(*pad_, h, w, dwf->dim(1), dwf->dim(2), o.stride_h, o.stride_w, o.dilation_h_factor,
                             o.dilation_w_factor);
      if (wg.out_h <= 0 || wg.out_w <= 0) return ctx.Error("the padded input is smaller than the depthwise filter");
    } else {
      RETURN_IF_ERROR(ComputeConvWindow(ctx, o, dwf->dim(1), dwf->dim(2), h, w, &wg));
    }
    g_ = dwconv::GeometryOf(o, wg, batch, h, w, c, dwf->dim(1), dwf->dim(2), 1);
    const dwconv::Geometry& g = g_;
    cout_ = pww->dim(0);
    const rt::RtTensor* res = residual_ ? ResidualTensor(ctx) : nullptr;
    if (res && (res->rank() != 4 || res->dim(0) != batch || g.oh != res->dim(1) || g.ow != res->dim(2) ||
                cout_ != res->dim(3)))
      return ctx.Error("the residual ADD of " + Describe(*res) + " needs an output of the same shape, not [" +
                       std::to_string(batch) + "," + std::to_string(g.oh) + "," + std::to_string(g.ow) + "," +
                       std::to_string(cout_) + "]");
    if (prelu_) {
      prelu_input_ = ctx.num_inputs() - 1;
      const rt::RtTensor* alpha = ctx.input(prelu_input_);
      if (alpha->num_elements() != cout_)
        return ctx.Error("the PRELU's alpha " + Describe(*alpha) + " is not one value per output channel (" +
                         std::to_string(cout_) + ")");
    }
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, g.oh, g.ow, cout_}));

    PackAll(ctx);  // weights that constant folding has not produced yet: at the first Invoke

    // Band height: as many rows as fit the per-thread budget, at least one.
    band_rows_ = 1;
    while (band_rows_ < g.oh && BufferFloats(band_rows_ + 1).first + BufferFloats(band_rows_ + 1).second <= kBandFloats)
      ++band_rows_;
    const auto [e, dfl] = BufferFloats(band_rows_);
    slot_floats_ = EMargin() + RoundUp(e) + RoundUp(dfl);
    ind_base_ = nullptr;  // the geometry may have changed
    shared_id_ = -1;
    const int64_t image_floats = int64_t{g.h} * g.w * g.c;
    const int threads = ctx.threads().num_threads();
    if (threads > 1 && expand_ && !conv_ && g.batch == 1 && g.oh < kSharedMaxRows * threads &&
        image_floats <= kSharedFloats) {
      // About 8 chunks per thread of whole micro-kernel tiles.
      const int64_t px = int64_t{g.h} * g.w;
      chunks_.Plan(px, (px + 8 * threads - 1) / (8 * threads), expand_->uk->mr);
      shared_id_ = ctx.RequestScratch(static_cast<size_t>(image_floats) * sizeof(float));
    }
    return ctx.ReserveSlotScratch(slot_floats_ * sizeof(float));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!Packed() && !PackAll(ctx)) return ctx.Error("weights have no data");
    const int rows = g_.batch * g_.oh;
    const float* x = ctx.input(0)->data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    if (conv_ && x != ind_base_) BuildConvIndirection(x);
    if (conv_) RefreshBorder(x);
    // One contiguous share of rows per thread, in row order, with the buffers of its slot.
    // (The threads of now: one while the interpreter runs the op alone, ThreadPool::SetSerial.)
    rt::ThreadPool& pool = ctx.threads();
    const int tasks = std::min(pool.num_threads(), rows);
    const float* r = residual_ ? ResidualTensor(ctx)->data_as<float>() : nullptr;
    const float* alpha = prelu_ ? ctx.input(prelu_input_)->data_as<float>() : nullptr;
    if (shared_id_ >= 0 && tasks > 1) {
      float* e = ctx.Scratch<float>(shared_id_);
      chunks_.Reset();
      RunTasks(&pool, tasks, [&](int64_t t) {
        float* slot = reinterpret_cast<float*>(pool.SlotScratch(static_cast<int>(t)));
        SharedRows(x, r, alpha, y, e, slot, static_cast<int>(t), tasks);
      });
      return Status::Ok();
    }
    RunTasks(&pool, tasks, [&](int64_t t) {
      float* slot = reinterpret_cast<float*>(pool.SlotScratch(static_cast<int>(t)));
      RunRows(x, r, alpha, y, slot, static_cast<int>(rows * t / tasks), static_cast<int>(rows * (t + 1) / tasks));
    });
    return Status::Ok();
  }

  // The 1×1 steps' GEMM families are named (once each) when they are not the usual tiles
  // (".../kpair").
  std::string variant() const override {
    std::string v = std::string("fused/") + (conv_ ? "conv+" : expand_ ? "pw+" : "") + (pad_ ? "pad+" : "") + "dw+pw" +
                    (residual_ ? "+add" : "") + act_suffix_ + (prelu_ ? "+prelu" : "") + "/f32/" + dw_.vec->isa +
                    (shared_id_ >= 0 ? "/shared" : "");
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
  // Once packed, only the input and the residual (the input, or the last input) are read.
  bool ReadsInputAtInvoke(int input) const override {
    return input == 0 || (residual_ && residual_->other && input == residual_input_) ||
           (prelu_ && input == prelu_input_) || !Packed();
  }
  size_t PackedBytes() const override {
    size_t n = dw_.packed ? dw_.packed->bytes() : 0;
    if (expand_ && expand_->packed) n += expand_->packed->bytes();
    n += ind_.size() * sizeof(const float*) + zero_.bytes() + border_buf_.bytes();
    return n + (project_.packed ? project_.packed->bytes() : 0);
  }

 private:
  static size_t RoundUp(int64_t floats) { return static_cast<size_t>((floats + 15) / 16 * 16); }

  bool Packed() const { return (!expand_ || expand_->packed) && dw_.packed && project_.packed; }
  // Packs what is not packed yet whose weights exist (file constants, or outputs of constant ops
  // once folded or run); whether everything is packed.
  bool PackAll(rt::KernelContext& ctx) {
    const int d = expand_ ? 3 : 1;  // position of the depthwise filter among the inputs
    const auto have = [&](int i) { return ctx.input(i)->data && (!ctx.input(i + 1) || ctx.input(i + 1)->data); };
    if (expand_ && !expand_->packed && have(1)) expand_->packed = PackPointwise(ctx, *expand_, 1, conv_ ? conv_->kh : 1);
    if (!dw_.packed && have(d)) {
      const rt::RtTensor* dwf = ctx.input(d);
      const float* bias = ctx.input(d + 1)->data_as<float>();
      const dwconv::Geometry& g = g_;
      dw_.packed = GetOrPackFor<AlignedFloats>(ctx, dw_.op, dw_.vec->pack_key, [&] {
        return dwconv::PackWeights(dwf->data_as<float>(), bias, g.kh, g.kw, g.c, dw_.vec->block);
      });
    }
    if (!project_.packed && have(d + 2)) project_.packed = PackPointwise(ctx, project_, d + 2);
    return Packed();
  }

  // Packs the weights at input i for pw's micro-kernels (as CONV_2D packs them, under that op's
  // key, so fused and unfused interpreters of one model share them). taps: the indirect GEMM's.
  static std::shared_ptr<const PackedB> PackPointwise(rt::KernelContext& ctx, const Pointwise& pw, int i, int taps = 1) {
    const rt::RtTensor* w = ctx.input(i);
    const rt::RtTensor* bias = ctx.input(i + 1);
    return GetOrPackFor<PackedB>(ctx, pw.op, gemm::PackKeyFor(*pw.uk, taps), [&] {
      return gemm::PackNKFor(*pw.uk, w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, w->dim(0),
                             w->dim(1) * w->dim(2) * w->dim(3), taps);
    });
  }

  // Floats before E in a slot: a band of the convolution expansion starts its indirect GEMM at
  // the tile holding its first pixel, up to mr - 1 pixels before it (the rows above, equal values
  // where E keeps them, or this margin).
  size_t EMargin() const { return conv_ ? RoundUp(int64_t{expand_->uk->mr} * g_.c) : 0; }

  // conv_: the indirection of every output pixel of the expansion (tile-major, filter rows as
  // taps, a partial last tile repeating its last pixel), built when the input's address changes,
  // as the unfused CONV_2D builds it; filter rows that cross the left or right edge point at
  // copies of their in-image pixels with zeros around them, refreshed at every invoke.
  void BuildConvIndirection(const float* x) {
    const ConvExpand& cv = *conv_;
    const int mr = expand_->uk->mr, taps = cv.kh, ow = g_.w, sh = cv.options->stride_h, sw = cv.options->stride_w;
    const int kw = cv.kw, in_w = cv.in_w;
    const size_t cin = static_cast<size_t>(cv.cin), tap_floats = kw * cin;
    const size_t m = static_cast<size_t>(g_.batch) * g_.h * ow;
    ind_.assign(gemm::IndirectionSize(m, taps, mr), nullptr);
    border_.clear();
    const size_t most = static_cast<size_t>(g_.batch) * g_.h * cv.border_cols * taps;
    if (border_buf_.size() < most * tap_floats) border_buf_.Reset(most * tap_floats);
    std::fill(border_buf_.data(), border_buf_.data() + most * tap_floats, 0.0f);
    const float* zero = zero_.data();
    const float* rows[kMaxConvTaps];
    const float** tile = ind_.data();
    int r = 0;
    for (int b = 0; b < g_.batch; ++b)
      for (int oy = 0; oy < g_.h; ++oy) {
        for (int ky = 0; ky < taps; ++ky) {
          const int iy = oy * sh - cv.pad_top + ky;
          rows[ky] = iy >= 0 && iy < cv.in_h ? x + (static_cast<size_t>(b) * cv.in_h + iy) * in_w * cin : nullptr;
        }
        for (int ox = 0, ix0 = -cv.pad_left; ox < ow; ++ox, ix0 += sw) {
          const int x0 = std::max(ix0, 0), x1 = std::min(ix0 + kw, in_w);
          for (int ky = 0; ky < taps; ++ky) {
            const float* ptr = zero;
            if (rows[ky] && x0 == ix0 && x1 == ix0 + kw) {
              ptr = rows[ky] + ix0 * cin;
            } else if (rows[ky] && x1 > x0) {
              ptr = border_buf_.data() + border_.size() * tap_floats;
              border_.push_back({static_cast<size_t>(rows[ky] - x) + x0 * cin, (x0 - ix0) * cin, (x1 - x0) * cin});
            }
            tile[ky * mr + r] = ptr;
          }
          if (++r == mr) {
            r = 0;
            tile += static_cast<size_t>(taps) * mr;
          }
        }
      }
    for (int t = r; r > 0 && t < mr; ++t)
      for (int ky = 0; ky < taps; ++ky) tile[ky * mr + t] = tile[ky * mr + r - 1];
    ind_base_ = x;
  }
  void RefreshBorder(const float* x) {
    const size_t tap_floats = static_cast<size_t>(conv_->kw) * conv_->cin;
    for (size_t i = 0; i < border_.size(); ++i)
      std::memcpy(border_buf_.data() + i * tap_floats + border_[i].lead, x + border_[i].src,
                  border_[i].floats * sizeof(float));
  }

  // Input rows a band of `rows` output rows reads at most.
  int HaloRows(int rows) const { return std::min(g_.h, (rows - 1) * g_.sh + (g_.kh - 1) * g_.dh + 1); }
  // Floats of E (0 without expansion: the depthwise reads the input) and D for `rows` rows.
  std::pair<int64_t, int64_t> BufferFloats(int rows) const {
    const int64_t e = expand_ ? int64_t{HaloRows(rows)} * g_.w * g_.c : 0;
    return {e, int64_t{rows} * g_.ow * g_.c};
  }

  // The tensor the residual ADD adds: the chain's input, or the op's last input.
  const rt::RtTensor* ResidualTensor(rt::KernelContext& ctx) {
    if (!residual_->other) return ctx.input(0);
    residual_input_ = ctx.num_inputs() - 1 - (prelu_ ? 1 : 0);  // before the PRELU's alpha
    return ctx.input(residual_input_);
  }

  // Output rows [r0, r1) of the batch·oh rows, with the buffers at `slot`; r: the residual, alpha:
  // the trailing PRELU's (null without them).
  void RunRows(const float* x, const float* r, const float* alpha, float* y, float* slot, int r0, int r1) const {
    const dwconv::Geometry& g = g_;
    float* e_buf = slot + EMargin();
    float* d_buf = e_buf + RoundUp(BufferFloats(band_rows_).first);
    const size_t row_floats = static_cast<size_t>(g.w) * g.c;
    const int cin = expand_ && !conv_ ? expand_->packed->k() : g.c;
    BandRows e_rows;
    for (int o0 = r0; o0 < r1;) {
      const int b = o0 / g.oh;
      const int o1 = std::min({r1, (b + 1) * g.oh, o0 + band_rows_});
      const int oy0 = o0 - b * g.oh, oy1 = o1 - b * g.oh;
      const auto [lo, hi] = FilterInputRows(oy0, oy1, g.sh, g.pad_top, g.kh, g.dh, g.h);
      dwconv::Geometry band = g;
      const float* dw_in = x;
      if (expand_) {
        // First row to compute; rows [lo, from) are kept from the previous band.
        const int from = e_rows.Next(b, lo, hi, e_buf, row_floats * sizeof(float));
        if (hi > from && conv_) {
          // Pixels [p0, p1) of the expansion, from the start t0 of p0's tile.
          const size_t mr = static_cast<size_t>(expand_->uk->mr);
          const size_t p0 = (static_cast<size_t>(b) * g.h + from) * g.w, p1 = (static_cast<size_t>(b) * g.h + hi) * g.w;
          const size_t t0 = p0 / mr * mr;
          gemm::IGemm(*expand_->uk, nullptr, p1 - t0, conv_->kh, ind_.data() + t0 * conv_->kh,
                      *expand_->packed, e_buf + (from - lo) * row_floats - (p0 - t0) * g.c, g.c, expand_->mm);
        } else if (hi > from)
          gemm::Gemm(*expand_->uk, nullptr, static_cast<size_t>(hi - from) * g.w,
                     x + (static_cast<size_t>(b) * g.h + from) * g.w * cin, cin, *expand_->packed,
                     e_buf + (from - lo) * row_floats, g.c, expand_->mm);
        dw_in = e_buf;
        band.in_row0 = b * g.h + lo;
      }
      band.out_row0 = o0;
      dw_.vec->rows(band, dw_in, dw_.packed->data(), d_buf, o0, o1, 0, dwconv::ChannelBlocks(g.c, dw_.vec->block),
                    dw_.mm);
      Project(d_buf, r, alpha, y, int64_t{o0} * g.ow, int64_t{o1 - o0} * g.ow);
      o0 = o1;
    }
  }

  // The projection of `px` output pixels from the first, pixel p0 of the batch·oh·ow, from their
  // depthwise output d, with the residual ADD and the PRELU.
  void Project(const float* d, const float* r, const float* alpha, float* y, int64_t p0, int64_t px) const {
    if (px <= 0) return;
    float* yb = y + static_cast<size_t>(p0) * cout_;
    gemm::Gemm(*project_.uk, nullptr, static_cast<size_t>(px), d, g_.c, *project_.packed, yb, cout_, project_.mm);
    // Residual and output have one shape: the band's pixels are the same in both.
    if (residual_ && alpha)
      AddPreluAvx512(yb, r + static_cast<size_t>(p0) * cout_, alpha, cout_, yb, px, residual_->mm);
    else if (residual_)
      residual_->run(binary::Op::kAdd, yb, false, r + static_cast<size_t>(p0) * cout_, false, yb,
                     static_cast<size_t>(px) * cout_, residual_->mm);
    else if (alpha)
      PreluChannelsAvx512(yb, alpha, cout_, px);
  }

  // Task t of `tasks` in the two-phase form (kSharedFloats; one image, a 1×1 expansion): the
  // expansion chunks not yet claimed (SharedChunks) into e (the whole expanded image); then the
  // task's share of the output pixels (ForShareBands): their depthwise rows, once the chunks of
  // the expanded rows they read are done (claimed here if still free, else waited for), and
  // their projection.
  void SharedRows(const float* x, const float* r, const float* alpha, float* y, float* e, float* slot, int t,
                  int tasks) const {
    const dwconv::Geometry& g = g_;
    const int cin = expand_->packed->k();
    const auto compute = [&](int64_t p0, int64_t n) {
      gemm::Gemm(*expand_->uk, nullptr, static_cast<size_t>(n), x + static_cast<size_t>(p0) * cin, cin,
                 *expand_->packed, e + static_cast<size_t>(p0) * g.c, g.c, expand_->mm);
    };
    chunks_.ClaimAll(t, tasks, compute);
    float* d_buf = slot + EMargin() + RoundUp(BufferFloats(band_rows_).first);
    ForShareBands(t, tasks, g.oh, g.ow, band_rows_, [&](int o0, int o1, int64_t p0, int64_t p1) {
      const auto [lo, hi] = FilterInputRows(o0, o1, g.sh, g.pad_top, g.kh, g.dh, g.h);
      chunks_.Ready(int64_t{lo} * g.w, int64_t{hi} * g.w, compute);
      dwconv::Geometry band = g;
      band.in_row0 = 0;
      band.out_row0 = o0;
      dw_.vec->rows(band, e, dw_.packed->data(), d_buf, o0, o1, 0, dwconv::ChannelBlocks(g.c, dw_.vec->block), dw_.mm);
      Project(d_buf + static_cast<size_t>(p0 - int64_t{o0} * g.ow) * g.c, r, alpha, y, p0, p1 - p0);
    });
  }

  std::optional<Pointwise> expand_;
  std::optional<ConvExpand> conv_;
  AlignedFloats zero_;  // conv_: the taps in the top/bottom padding
  struct BorderCopy {
    size_t src;  // offset in the input
    size_t lead, floats;  // zeros before the in-image pixels, their floats
  };
  std::vector<const float*> ind_;
  const float* ind_base_ = nullptr;
  std::vector<BorderCopy> border_;
  AlignedFloats border_buf_;
  Depthwise dw_;
  Pointwise project_;
  std::optional<Residual> residual_;
  int residual_input_ = -1;  // residual_->other: the op's input it is
  std::string act_suffix_;  // "+relu" etc.: a trailing activation op taken into the last step's clamp
  std::optional<SpatialPad> pad_;
  bool prelu_ = false;
  int prelu_input_ = -1;  // prelu_: the op's input its alpha is
  dwconv::Geometry g_;
  int cout_ = 0;
  int band_rows_ = 1;
  size_t slot_floats_ = 0;
  // The two-phase form (SharedRows): the shared expansion buffer's scratch (-1: bands of rows),
  // and its chunks.
  int shared_id_ = -1;
  mutable SharedChunks chunks_;
};

}  // namespace

rt::KernelCreateContext ContextOf(const rt::KernelCreateContext& cc, int op) {
  return {cc.graph, cc.subgraph, cc.subgraph_index, cc.subgraph.ops[op], op, cc.cpu, cc.reference_only};
}

int NextOp(const rt::KernelCreateContext& cc, int k) {
  const int n = static_cast<int>(cc.subgraph.ops.size());
  int j = k + 1;
  while (j < n && rt::IsConstantOp(cc.graph, cc.subgraph, j)) ++j;
  return j;
}

bool OnlyReader(const Subgraph& s, int producer, int consumer) {
  const int32_t t = s.ops[producer].outputs[0];
  const Operator& next = s.ops[consumer];
  if (std::count(next.inputs.begin(), next.inputs.end(), t) != 1) return false;
  if (std::find(s.outputs.begin(), s.outputs.end(), t) != s.outputs.end() || s.tensors[t].is_variable) return false;
  const std::vector<int> consumers = s.FindConsumers(t);
  return consumers.size() == 1 && consumers[0] == consumer;
}

bool PrivateLink(const Subgraph& s, int producer, int consumer) {
  const Operator& next = s.ops[consumer];
  return !next.inputs.empty() && next.inputs[0] == s.ops[producer].outputs[0] && OnlyReader(s, producer, consumer);
}

bool ConstantPaddings(const rt::KernelCreateContext& cc, size_t rank, std::vector<int32_t>* pads) {
  const Tensor* p = cc.input(1);
  const size_t n = 2 * rank;
  if (!p || p->type != DType::kInt32 || p->num_elements() != static_cast<int64_t>(n) || !cc.is_constant(1) ||
      cc.constant_data(1).size() != n * sizeof(int32_t))
    return false;
  pads->resize(n);
  std::memcpy(pads->data(), cc.constant_data(1).data(), n * sizeof(int32_t));
  return true;
}

bool MatchSpatialPad(const rt::KernelCreateContext& cc, int pad, int dw, SpatialPad* sp) {
  const Subgraph& s = cc.subgraph;
  if (pad >= static_cast<int>(s.ops.size()) || dw >= static_cast<int>(s.ops.size())) return false;
  const rt::KernelCreateContext pc = ContextOf(cc, pad);
  if (pc.op.code != tflite::BuiltinOperator_PAD || pc.num_inputs() != 2 || pc.num_outputs() != 1) return false;
  if (s.ops[dw].code != tflite::BuiltinOperator_DEPTHWISE_CONV_2D || !PrivateLink(s, pad, dw)) return false;
  if (GetOptions<tflite::DepthwiseConv2DOptionsT>(s.ops[dw]).padding != tflite::Padding_VALID) return false;
  const Tensor* x = pc.input(0);
  if (!x || !pc.output(0) || x->shape.size() != 4 || !SameQuantization(*x, *pc.output(0)) || x->type == DType::kInt16)
    return false;
  std::vector<int32_t> v;
  if (!ConstantPaddings(pc, 4, &v)) return false;
  if (v[0] != 0 || v[1] != 0 || v[6] != 0 || v[7] != 0) return false;
  for (int k = 2; k < 6; ++k)
    if (v[k] < 0 || v[k] > 64) return false;
  *sp = {v[2], v[3], v[4], v[5]};
  return true;
}

int DepthwiseAfterPad(const rt::KernelCreateContext& cc, int k, std::optional<SpatialPad>* pad, int* pad_op) {
  SpatialPad sp;
  if (!MatchSpatialPad(cc, k, NextOp(cc, k), &sp)) return k;
  *pad = sp;
  *pad_op = k;
  return NextOp(cc, k);
}

WindowGeometry PaddedValidWindow(const SpatialPad& pad, int h, int w, int kh, int kw, int sh, int sw, int dh, int dw) {
  WindowGeometry wg;
  wg.in_h = h;
  wg.in_w = w;
  const int eff_h = (kh - 1) * dh + 1, eff_w = (kw - 1) * dw + 1;
  const int ph = h + pad.top + pad.bottom, pw = w + pad.left + pad.right;
  wg.out_h = ph < eff_h ? 0 : (ph - eff_h) / sh + 1;
  wg.out_w = pw < eff_w ? 0 : (pw - eff_w) / sw + 1;
  wg.pad_h = pad.top;
  wg.pad_w = pad.left;
  return wg;
}

int BandRows::Next(int b, int new_lo, int new_hi, void* buf, size_t row_bytes) {
  int from = new_lo;
  if (image == b && new_lo >= lo && new_lo <= hi && new_hi >= hi) {
    auto* bytes = static_cast<uint8_t*>(buf);
    if (new_lo > lo) std::memmove(bytes, bytes + (new_lo - lo) * row_bytes, (hi - new_lo) * row_bytes);
    from = hi;
  }
  image = b;
  lo = new_lo;
  hi = new_hi;
  return from;
}

void SharedChunks::Plan(int64_t px, int64_t want, int64_t multiple) {
  px_ = px;
  chunk_px_ = static_cast<int>(std::max<int64_t>(1, (std::max<int64_t>(want, 1) + multiple - 1) / multiple) * multiple);
  chunks_ = static_cast<int>((px + chunk_px_ - 1) / chunk_px_);
  state_ = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(chunks_));
}

void SharedChunks::Reset() {
  for (int k = 0; k < chunks_; ++k) state_[static_cast<size_t>(k)].store(0, std::memory_order_relaxed);
}

bool SharedChunks::TryClaim(int k) {
  uint8_t free = 0;
  return state_[static_cast<size_t>(k)].compare_exchange_strong(free, 1, std::memory_order_acq_rel);
}

void SharedChunks::Done(int k) { state_[static_cast<size_t>(k)].store(2, std::memory_order_release); }

void SharedChunks::Wait(int k) const {
  while (state_[static_cast<size_t>(k)].load(std::memory_order_acquire) != 2) _mm_pause();
}

int64_t ChainInnerElements(const Subgraph& s, int i, int dw) {
  int64_t inner = s.tensors[s.ops[dw].outputs[0]].num_elements();
  if (dw != i) inner = std::max(inner, s.tensors[s.ops[i].outputs[0]].num_elements());
  return inner;
}

std::vector<int> ChainOps(int i, int dw, int project, int last, int act, int pad) {
  std::vector<int> ops = {i};
  if (pad >= 0 && pad != i) ops.push_back(pad);
  if (dw != i) ops.push_back(dw);
  ops.push_back(project);
  if (last != project) ops.push_back(last);
  if (act >= 0) ops.push_back(act);
  return ops;
}

std::unique_ptr<Operator> ChainOp(const Subgraph& s, int i, int dw, int project, int last, std::string custom_code,
                                  bool expands) {
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = std::move(custom_code);
  const auto weights = [&](int k) {
    const Operator& o = s.ops[k];
    op->inputs.push_back(o.inputs[1]);
    op->inputs.push_back(o.inputs.size() > 2 ? o.inputs[2] : -1);
  };
  op->inputs.push_back(s.ops[i].inputs[0]);
  if (dw != i && expands) weights(i);
  weights(dw);
  weights(project);
  op->outputs.push_back(s.ops[last].outputs[0]);
  return op;
}

int32_t ResidualOperand(const Subgraph& s, int i, int producer, int add, int32_t x) {
  if (add >= static_cast<int>(s.ops.size()) || s.ops[add].inputs.size() != 2) return -1;
  if (ResidualAdd(s, producer, add, x)) return x;
  const int32_t y = s.ops[producer].outputs[0];
  const auto& in = s.ops[add].inputs;
  const int32_t z = in[0] == y ? in[1] : in[0];
  if (z < 0 || !ResidualAdd(s, producer, add, z)) return -1;
  for (size_t k = static_cast<size_t>(i); k < s.ops.size(); ++k)
    for (int32_t o : s.ops[k].outputs)
      if (o == z) return -1;  // computed at or after the chain's start
  return z;
}

bool ResidualAdd(const Subgraph& s, int producer, int add, int32_t x) {
  if (add >= static_cast<int>(s.ops.size())) return false;
  const Operator& op = s.ops[add];
  const int32_t y = s.ops[producer].outputs[0];
  if (op.code != tflite::BuiltinOperator_ADD || op.inputs.size() != 2 || op.outputs.size() != 1 || y == x) return false;
  if (!((op.inputs[0] == y && op.inputs[1] == x) || (op.inputs[0] == x && op.inputs[1] == y))) return false;
  if (!OnlyReader(s, producer, add)) return false;
  const Tensor &ty = s.tensors[y], &tx = s.tensors[x], &tz = s.tensors[op.outputs[0]];
  return ty.type == tx.type && ty.type == tz.type && ty.shape == tx.shape && ty.shape == tz.shape;
}

namespace {

// The residual ADD (ResidualAdd) of float32 tensors with a clamp activation, of the chain's
// input x or (r->other; *other set) of another tensor computed before the chain's first op i.
bool MatchResidual(const rt::KernelCreateContext& cc, int i, int producer, int add, int32_t x, Residual* r,
                   int32_t* other) {
  const Subgraph& s = cc.subgraph;
  const int32_t z = ResidualOperand(s, i, producer, add, x);
  if (z < 0 || !IsFloat32(&s.tensors[z])) return false;
  const auto* o = s.ops[add].options.AsAddOptions();
  if (!FusedMinMax(o ? o->fused_activation_function : tflite::ActivationFunctionType_NONE, &r->mm)) return false;
  r->run = cc.cpu.has_avx512() ? binary::RunAvx512 : cc.cpu.has_avx2_fma() ? binary::RunAvx2 : binary::RunScalar;
  r->other = z != x;
  if (r->other) *other = z;
  return true;
}

}  // namespace

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
  std::optional<ConvExpand> conv;
  Pointwise e;
  ConvExpand cv;
  const bool pointwise = MatchPointwise(cc, &e, /*folded_ok=*/true);
  // A PAD of rows and columns before the depthwise layer (MediaPipe's pose models: a 1x1
  // expansion, PAD by 1 on every side, a VALID stride-2 depthwise): its explicit padding.
  std::optional<SpatialPad> pad;
  int pad_op = -1;
  if (pointwise || MatchConvExpand(cc, &e, &cv)) {
    first_dw = NextOp(cc, i);
    if (first_dw >= n || !PrivateLink(s, i, first_dw)) return run;
    first_dw = DepthwiseAfterPad(cc, first_dw, &pad, &pad_op);
    expand = e;
    if (!pointwise) conv = cv;
  } else {
    first_dw = DepthwiseAfterPad(cc, i, &pad, &pad_op);  // the chain may start at a PAD
  }
  const int proj = NextOp(cc, first_dw);
  if (proj >= n || !MatchDepthwise(ContextOf(cc, first_dw), &dw, !expand) || !PrivateLink(s, first_dw, proj)) return run;
  if (!MatchPointwise(ContextOf(cc, proj), &project, /*folded_ok=*/true)) return run;
  if (ChainInnerElements(s, i, first_dw) * static_cast<int64_t>(sizeof(float)) <
      static_cast<int64_t>(limits.min_inner_bytes))
    return run;
  std::optional<Residual> residual;
  Residual res;
  int32_t residual_other = -1;
  const int add = NextOp(cc, proj);
  if (MatchResidual(cc, i, proj, add, s.ops[i].inputs[0], &res, &residual_other)) residual = res;
  const int last = residual ? add : proj;
  // A standalone RELU / RELU6 / RELU_N1_TO_1 after the chain (Keras models with separate
  // activation layers: MediaPipe's face detectors) becomes the activation of its last step, as
  // MatchActivationIntoProducer makes it the producer's when no chain is fused: else that op
  // runs on its own after the chain, writing the chain's output a second time.
  const int act_op = NextOp(cc, last);
  tflite::ActivationFunctionType act;
  const char* act_name = "";
  const auto* add_options = residual ? s.ops[add].options.AsAddOptions() : nullptr;
  const int last_act = residual ? (add_options ? add_options->fused_activation_function : 0)
                                : GetOptions<tflite::Conv2DOptionsT>(s.ops[proj]).fused_activation_function;
  gemm::MinMax act_mm{};
  const bool with_act = last_act == tflite::ActivationFunctionType_NONE && ClampAfter(s, last, act_op, &act, &act_name) &&
                        FusedMinMax(act, &act_mm);
  if (with_act) (residual ? residual->mm : project.mm) = act_mm;
  // A per-channel PRELU after the chain (MediaPipe's face landmark models end blocks with it),
  // applied band by band to the last step's rows (AVX-512).
  const int prelu_op = !with_act && cc.cpu.has_avx512() && ChannelPreluAfter(cc, last, act_op) ? act_op : -1;
  const int out_op = with_act || prelu_op >= 0 ? act_op : last;
  run.op = ChainOp(s, i, first_dw, proj, out_op,
                   conv ? "FUSED_CONV_DW_PW" : expand ? "FUSED_PW_DW_PW" : "FUSED_DW_PW", expand.has_value());
  if (residual_other >= 0) run.op->inputs.push_back(residual_other);
  if (prelu_op >= 0) run.op->inputs.push_back(s.ops[prelu_op].inputs[1]);
  run.num_ops = out_op + 1 - i;
  run.ops = ChainOps(i, first_dw, proj, last, out_op != last ? out_op : -1, pad_op);
  run.kernel = std::make_unique<DwChainF32>(std::move(expand), std::move(conv), std::move(dw), std::move(project),
                                            residual, with_act ? std::string("+") + act_name : "", pad, prelu_op >= 0);
  return run;
}

}  // namespace edgeopt::kernels::fused
