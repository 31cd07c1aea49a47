// CONV_2D and FULLY_CONNECTED, float32, on the packed GEMM.
//
// CONV_2D paths (chosen at prepare from the shapes):
//   gemm     1×1, stride 1, no padding: the NHWC input is A[N·H·W, C] as is.
//            Also a filter covering the whole (VALID) input: A[N, H·W·C].
//   igemm    anything else: an indirection buffer holds, per output pixel and filter tap, a
//            pointer to the input pixel's C channels or to a zero row (padding). It is sized at
//            prepare and filled at the first invoke (the input's address is known only then),
//            again only if that address changes.
//            Without horizontal dilation a filter row's KW pixels are contiguous in the input,
//            so a tap is a whole filter row (KW·C floats, the packed weights' K order): KH taps
//            instead of KH·KW, which matters most for few input channels (an RGB stem has
//            3-float taps otherwise). A filter row that is partly in the left/right padding
//            points into a scratch copy of its in-image pixels with zeros around them, which
//            each invoke refreshes (only border pixels: a few KB).
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/ops_f32.h"

namespace edgeopt::kernels {
namespace {

using gemm::MinMax;
using gemm::PackedB;

// Packs weights [N][K] (and bias) once their data exists, in the layout of `uk`: in Prepare for
// constants, at the first Invoke for weights that constant folding produces.
// taps: the indirect GEMM's (1 for the direct one).
// w: the weights tensor (CONV_2D's filter is input 1; a depthwise op run as a convolution passes
// its reordered filter).
std::shared_ptr<const PackedB> PackNK(rt::KernelContext& ctx, const rt::RtTensor* w, const gemm::Ukernels& uk, int n,
                                      int k, int taps = 1) {
  const rt::RtTensor* bias = ctx.input(2);
  if (!w->data || (bias && !bias->data)) return nullptr;
  return GetOrPack<PackedB>(ctx, gemm::PackKeyFor(uk, taps), [&] {
    return gemm::PackNKFor(uk, w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, n, k, taps);
  });
}

class Conv2DF32 : public rt::OpKernel {
 public:
  // from_depthwise: the op is a DEPTHWISE_CONV_2D over one input channel whose kernel validated it
  // (MakeDepthwiseAsConvF32).
  Conv2DF32(const gemm::Ukernels& uk, MinMax mm, bool single_ok, bool from_depthwise = false)
      : uk_(uk), mm_(mm), single_ok_(single_ok), from_depthwise_(from_depthwise) {}

  // Shapes are checked as the reference kernel checks them (kernels/conv), with its messages.
  Status Prepare(rt::KernelContext& ctx) override {
    ConvOptions o;
    WindowGeometry wg;
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = Filter(ctx);
    if (from_depthwise_) {
      o = ConvOptionsOf(GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op()));
      RETURN_IF_ERROR(ComputeConvWindow(ctx, o, w->dim(1), w->dim(2), in->dim(1), in->dim(2), &wg));
    } else {
      o = ConvOptionsOf(GetOptions<tflite::Conv2DOptionsT>(ctx.op()));
      RETURN_IF_ERROR(CheckConvShapes(ctx, &wg));
    }
    const int batch = in->dim(0), h = in->dim(1), wd = in->dim(2), c = in->dim(3);
    const int oc = w->dim(0), kh = w->dim(1), kw = w->dim(2), ic = w->dim(3);
    const int oh = wg.out_h, ow = wg.out_w;
    pad_top_ = wg.pad_h;
    pad_left_ = wg.pad_w;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch, oh, ow, oc}));
    geom_ = {batch, h, wd, c, oh, ow, kh, kw, o.stride_h, o.stride_w, o.dilation_h_factor, o.dilation_w_factor};

    const bool pointwise = kh == 1 && kw == 1 && o.stride_h == 1 && o.stride_w == 1;
    const bool whole_input = o.padding == tflite::Padding_VALID && kh == h && kw == wd;
    if (pointwise) {
      gemm_m_ = static_cast<size_t>(batch) * h * wd;
      gemm_k_stride_ = c;
    } else if (whole_input) {
      gemm_m_ = batch;
      gemm_k_stride_ = static_cast<size_t>(h) * wd * c;
    } else {
      gemm_m_ = 0;
    }
    row_taps_ = o.dilation_w_factor == 1;
    const size_t taps = gemm_m_ ? 1 : row_taps_ ? kh : static_cast<size_t>(kh) * kw;
    if (pack_taps_ != static_cast<int>(taps) && uk_.pairs) packed_.reset();  // the k-pair layout has the taps
    pack_taps_ = static_cast<int>(taps);
    if (!packed_) packed_ = PackNK(ctx, w, uk_, oc, kh * kw * ic, pack_taps_);
    if (gemm_m_ == 0) {
      const size_t m = static_cast<size_t>(batch) * oh * ow;
      if (!uk_.igemm) return ctx.Error(std::string("internal: the ") + uk_.isa + " kernels have no indirect GEMM");
      indirection_.assign(gemm::IndirectionSize(m, taps, uk_.mr), nullptr);
      const size_t tap_floats = static_cast<size_t>(row_taps_ ? kw : 1) * c;
      if (zero_.size() < tap_floats) zero_.Reset(tap_floats);
      indirection_base_ = nullptr;
      // One output channel over filter-row taps: dot products, 16 pixels reduced at once
      // (gemm::SingleChannelConvAvx512) instead of a GEMM tile with one used column.
      single_ = single_ok_ && oc == 1 && row_taps_;
    } else {
      indirection_.clear();
      single_ = false;
    }
    border_.clear();
    scratch_.Reset(0);
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* filter = Filter(ctx);
    if (!packed_ && !(packed_ = PackNK(ctx, filter, uk_, filter->dim(0), geom_.kh * geom_.kw * geom_.c, pack_taps_)))
      return ctx.Error("filter has no data");
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const Geometry& g = geom_;
    if (gemm_m_) {
      gemm::Gemm(uk_, &ctx.threads(), gemm_m_, in, gemm_k_stride_, *packed_, out, packed_->n(), mm_);
      return Status::Ok();
    }
    if (in != indirection_base_) BuildIndirection(in);
    if (!border_.empty()) RefreshBorder(in);
    const size_t m = static_cast<size_t>(g.batch) * g.oh * g.ow;
    if (single_) {
      const rt::RtTensor* bias = ctx.input(2);
      const float b0 = bias ? bias->data_as<float>()[0] : 0.0f;
      const float* w = filter->data_as<float>();
      const int kc = g.kw * g.c;
      ctx.threads().ParallelFor(static_cast<int64_t>((m + 15) / 16), 16, [&](int64_t begin, int64_t end) {
        gemm::SingleChannelConvAvx512(indirection_.data(), uk_.mr, static_cast<size_t>(begin) * 16,
                                      std::min(m, static_cast<size_t>(end) * 16), g.kh, kc, w, b0, mm_, out);
      });
      return Status::Ok();
    }
    gemm::IGemm(uk_, &ctx.threads(), m, row_taps_ ? g.kh : static_cast<size_t>(g.kh) * g.kw, indirection_.data(),
                *packed_, out, packed_->n(), mm_);
    return Status::Ok();
  }

  std::string variant() const override {
    return std::string(from_depthwise_ ? "depthwise_conv2d/as-conv2d/f32/" : "conv2d/f32/") +
           (single_ ? "avx512/single" : uk_.isa);
  }
  // Weights and bias live in packed_ (the one-channel path reads the filter and bias tensors).
  bool ReadsInputAtInvoke(int input) const override { return input == 0 || single_ || !packed_; }
  int64_t Macs(const rt::KernelContext&) const override {
    return packed_ ? int64_t{geom_.batch} * geom_.oh * geom_.ow * packed_->n() * packed_->k() : 0;
  }
  size_t PackedBytes() const override {
    return (packed_ ? packed_->bytes() : 0) + indirection_.size() * sizeof(void*) + zero_.bytes() + scratch_.bytes() +
           border_.size() * sizeof(BorderRow) + dw_floats_.size() * sizeof(float);
  }

 private:
  // The filter: input 1, or for a depthwise op its [1][kh][kw][M] filter over one input channel
  // as the [M][kh][kw][1] filter of a convolution with M output channels (the same sums).
  // Reordered once its data exists (constant folding may produce it at the first invoke).
  const rt::RtTensor* Filter(rt::KernelContext& ctx) {
    const rt::RtTensor* f = ctx.input(1);
    if (!from_depthwise_) return f;
    const int M = f->dim(3), taps = f->dim(1) * f->dim(2);
    dw_filter_.type = DType::kFloat32;
    dw_filter_.shape = {M, f->dim(1), f->dim(2), 1};
    if (f->data && dw_src_ != f->data) {
      dw_floats_.resize(static_cast<size_t>(M) * taps);
      DepthwiseFilterAsConv(f->data_as<float>(), taps, M, dw_floats_.data());
      dw_src_ = f->data;
    }
    dw_filter_.data = dw_src_ ? reinterpret_cast<uint8_t*>(dw_floats_.data()) : nullptr;
    dw_filter_.bytes = dw_floats_.size() * sizeof(float);
    return &dw_filter_;
  }

  struct Geometry {
    int batch, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw;
  };

  // A filter row partly in the left/right padding: scratch_[index · KW·C ...) holds the input
  // row `iy` of image `b` from column ix0 on, zeros where it leaves the image.
  struct BorderRow {
    int b, iy, ix0;
  };

  // fn(tile, row in the tile, image, output row, output column) for every row of every tile of
  // the indirection buffer; the last tile's rows past the end repeat the last output pixel.
  template <typename Fn>
  void ForEachTileRow(const Fn& fn) const {
    const Geometry& g = geom_;
    const size_t m = static_cast<size_t>(g.batch) * g.oh * g.ow, pixels = static_cast<size_t>(g.oh) * g.ow;
    for (size_t tile = 0; tile * uk_.mr < m; ++tile)
      for (int r = 0; r < uk_.mr; ++r) {
        const size_t p = std::min(m - 1, tile * uk_.mr + r);
        const int rem = static_cast<int>(p % pixels);
        fn(tile, r, static_cast<int>(p / pixels), rem / g.ow, rem % g.ow);
      }
  }

  void BuildIndirection(const float* in) {
    const Geometry& g = geom_;
    const int mr = uk_.mr;
    if (row_taps_) {
      // Taps are filter rows; border rows of one (image, row, column) share a scratch copy
      // (tail rows repeat the last pixel, and neighbouring output rows may read one input row).
      border_.clear();
      std::map<std::tuple<int, int, int>, size_t> border_index;
      const size_t row_floats = static_cast<size_t>(g.kw) * g.c;
      std::vector<std::pair<size_t, size_t>> border_slots;  // (indirection slot, border row)
      ForEachTileRow([&](size_t tile, int r, int b, int oy, int ox) {
        const int ix0 = ox * g.sw - pad_left_;
        for (int ky = 0; ky < g.kh; ++ky) {
          const int iy = oy * g.sh - pad_top_ + ky * g.dh;
          const size_t slot = (tile * g.kh + ky) * mr + r;
          const float* ptr = zero_.data();
          if (iy >= 0 && iy < g.h && ix0 + g.kw > 0 && ix0 < g.w) {
            if (ix0 >= 0 && ix0 + g.kw <= g.w) {
              ptr = in + ((static_cast<size_t>(b) * g.h + iy) * g.w + ix0) * g.c;
            } else {
              auto [it, added] = border_index.try_emplace({b, iy, ix0}, border_.size());
              if (added) border_.push_back({b, iy, ix0});
              border_slots.emplace_back(slot, it->second);
            }
          }
          indirection_[slot] = ptr;
        }
      });
      if (scratch_.size() < border_.size() * row_floats) scratch_.Reset(border_.size() * row_floats);
      for (const auto& [slot, index] : border_slots) indirection_[slot] = scratch_.data() + index * row_floats;
      indirection_base_ = in;
      return;
    }
    const size_t taps = static_cast<size_t>(g.kh) * g.kw;
    ForEachTileRow([&](size_t tile, int r, int b, int oy, int ox) {
      for (int ky = 0; ky < g.kh; ++ky)
        for (int kx = 0; kx < g.kw; ++kx) {
          const int iy = oy * g.sh - pad_top_ + ky * g.dh;
          const int ix = ox * g.sw - pad_left_ + kx * g.dw;
          const float* ptr = zero_.data();
          if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
            ptr = in + ((static_cast<size_t>(b) * g.h + iy) * g.w + ix) * g.c;
          indirection_[(tile * taps + static_cast<size_t>(ky) * g.kw + kx) * mr + r] = ptr;
        }
    });
    indirection_base_ = in;
  }

  // Copies the current input into the border rows' scratch (the data changes every invoke).
  void RefreshBorder(const float* in) {
    const Geometry& g = geom_;
    const size_t row_floats = static_cast<size_t>(g.kw) * g.c;
    for (size_t i = 0; i < border_.size(); ++i) {
      const BorderRow& br = border_[i];
      float* dst = scratch_.data() + i * row_floats;
      const float* src_row = in + (static_cast<size_t>(br.b) * g.h + br.iy) * g.w * g.c;
      for (int kx = 0; kx < g.kw; ++kx) {
        const int ix = br.ix0 + kx;
        float* d = dst + static_cast<size_t>(kx) * g.c;
        if (ix >= 0 && ix < g.w)
          std::memcpy(d, src_row + static_cast<size_t>(ix) * g.c, sizeof(float) * g.c);
        else
          std::memset(d, 0, sizeof(float) * g.c);
      }
    }
  }

  const gemm::Ukernels& uk_;
  const MinMax mm_;
  bool single_ok_ = false;  // the CPU runs gemm::SingleChannelConvAvx512
  bool from_depthwise_ = false;
  std::vector<float> dw_floats_;   // from_depthwise_: the reordered filter (Filter)
  const uint8_t* dw_src_ = nullptr;
  rt::RtTensor dw_filter_;
  bool single_ = false;     // this op does (Prepare)
  std::shared_ptr<const PackedB> packed_;
  Geometry geom_{};
  int pad_top_ = 0, pad_left_ = 0;
  size_t gemm_m_ = 0, gemm_k_stride_ = 0;
  bool row_taps_ = false;  // taps are whole filter rows (no horizontal dilation)
  int pack_taps_ = 1;      // the taps packed_ was packed for
  std::vector<const float*> indirection_;
  const float* indirection_base_ = nullptr;
  AlignedFloats zero_;
  std::vector<BorderRow> border_;
  AlignedFloats scratch_;
};

class FullyConnectedF32 : public rt::OpKernel {
 public:
  FullyConnectedF32(const gemm::Ukernels& uk, MinMax mm, bool keep_num_dims)
      : uk_(uk), mm_(mm), keep_num_dims_(keep_num_dims) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const rt::RtTensor* w = ctx.input(1);
    const int n = w->dim(0), k = w->dim(1);
    rt::Shape out;
    if (keep_num_dims_) {
      if (in->rank() < 1 || in->dim(-1) != k)
        return ctx.Error("with keep_num_dims the input " + Describe(*in) + " must end in the weights' depth " +
                         std::to_string(k));
      out = in->shape;
      out.back() = n;
    } else {
      if (k <= 0 || in->num_elements() % k != 0)
        return ctx.Error("input " + Describe(*in) + " has " + std::to_string(in->num_elements()) +
                         " elements, not a multiple of the weights' depth " + std::to_string(k) + " (" +
                         Describe(*w) + ")");
      out = {static_cast<int32_t>(in->num_elements() / k), n};
    }
    batch_ = k > 0 ? in->num_elements() / k : 0;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(out)));
    if (!packed_) packed_ = PackNK(ctx, w, uk_, n, k);
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    if (!packed_ && !(packed_ = PackNK(ctx, ctx.input(1), uk_, ctx.input(1)->dim(0), ctx.input(1)->dim(1))))
      return ctx.Error("weights have no data");
    gemm::Gemm(uk_, &ctx.threads(), static_cast<size_t>(batch_), ctx.input(0)->data_as<float>(), packed_->k(),
               *packed_, ctx.output(0)->data_as<float>(), packed_->n(), mm_);
    return Status::Ok();
  }

  std::string variant() const override { return std::string("fully_connected/f32/") + uk_.isa; }
  int64_t Macs(const rt::KernelContext&) const override {
    return packed_ ? batch_ * packed_->n() * packed_->k() : 0;
  }
  size_t PackedBytes() const override { return packed_ ? packed_->bytes() : 0; }
  bool ReadsInputAtInvoke(int input) const override { return input == 0 || !packed_; }

 private:
  const gemm::Ukernels& uk_;
  const MinMax mm_;
  const bool keep_num_dims_;
  int64_t batch_ = 0;
  std::shared_ptr<const PackedB> packed_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeConv2DF32(const rt::KernelCreateContext& cc) {
  if (!FloatWeightsAndBias(cc, 4)) return nullptr;
  // Grouped convolution (input channels a multiple of the filter's) is left to the reference.
  const Tensor* in = cc.input(0);
  if (in->shape.size() != 4 || in->shape[3] != cc.input(1)->shape[3]) return nullptr;
  const auto& o = GetOptions<tflite::Conv2DOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return nullptr;
  if (auto winograd = MakeConv2DWinogradF32(cc, mm.min, mm.max)) return winograd;
  const auto& fs = cc.input(1)->shape;
  const int64_t k = int64_t{fs[1]} * fs[2] * fs[3];
  // A 1×1 filter at stride 1 always runs the direct GEMM (Prepare's pointwise path), so it may
  // use a family without an indirect kernel.
  const bool direct = fs[1] == 1 && fs[2] == 1 && o.stride_h == 1 && o.stride_w == 1;
  const auto& os = cc.output(0)->shape;  // the GEMM's rows: the output pixels
  const int64_t pixels = os.size() == 4 ? int64_t{os[0]} * os[1] * os[2] : -1;
  return std::make_unique<Conv2DF32>(direct ? gemm::SelectPointwiseUkernels(cc.cpu, k, fs[0], pixels)
                                            : gemm::SelectConvUkernels(cc.cpu, k, fs[0], pixels),
                                     mm, cc.cpu.has_avx512());
}

std::unique_ptr<rt::OpKernel> MakeDepthwiseAsConvF32(const rt::CpuFeatures& cpu, int kh, int kw, int channels,
                                                     int64_t pixels, bool pointwise, float act_min, float act_max) {
  const int64_t k = int64_t{kh} * kw;
  const MinMax mm{act_min, act_max};
  return std::make_unique<Conv2DF32>(pointwise ? gemm::SelectPointwiseUkernels(cpu, k, channels, pixels)
                                               : gemm::SelectConvUkernels(cpu, k, channels, pixels),
                                     mm, cpu.has_avx512(), /*from_depthwise=*/true);
}

std::unique_ptr<rt::OpKernel> MakeFullyConnectedF32(const rt::KernelCreateContext& cc) {
  if (!FloatWeightsAndBias(cc, 2)) return nullptr;
  const auto& o = GetOptions<tflite::FullyConnectedOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.weights_format != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT) return nullptr;
  return std::make_unique<FullyConnectedF32>(gemm::SelectDirectUkernels(cc.cpu, cc.input(1)->shape[1], cc.input(1)->shape[0]), mm,
                                             o.keep_num_dims);
}

}  // namespace edgeopt::kernels
