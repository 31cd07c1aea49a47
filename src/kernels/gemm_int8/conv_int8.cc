// CONV_2D int8 / uint8 / hybrid / 16x8 as an int16 GEMM over output pixels (qgemm.h):
// M = batch x output pixels, N = output channels, K = filter taps x input channels in the
// filter's (ky, kx, c) order. A rows are gathered per tile from the input (im2col into a small
// per-thread buffer, padding taps as zeros); 1x1 stride-1 convolutions read input pixels directly.
// Bit-exact with kernels/conv/ref_conv2d.cc (ruy rounding for int8/uint8, the reference
// requantizations for 16x8, the same float operations for hybrid).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/function_ref.h"
#include "kernels/common/hybrid_quant.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm_int8/ops_int8.h"
#include "kernels/gemm_int8/qgemm.h"
#include "kernels/gemm_int8/qgemm_ops_util.h"
#include "kernels/gemm_int8/qgemm_vnni.h"

namespace edgeopt::kernels {
namespace {

using qgemm::APacker;
using qgemm::PackedB;

struct ConvGeom {
  int batches = 0, in_h = 0, in_w = 0, in_c = 0;
  int out_h = 0, out_w = 0, out_c = 0;
  int k_h = 0, k_w = 0;
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_h = 0, pad_w = 0;
  bool pointwise = false;  // 1x1, stride 1, no padding: A row m is input pixel m
  // The output pixel after (b, oy, ox) in row-major order (the rows of the GEMM's A).
  void NextPixel(int* b, int* oy, int* ox) const {
    if (++*ox == out_w) {
      *ox = 0;
      if (++*oy == out_h) {
        *oy = 0;
        ++*b;
      }
    }
  }
};

// im2col of rows [row0, row0 + rows): row m = (batch, oy, ox) holds, for each (ky, kx), the
// input channels minus the zero point of its batch (zeros for taps in the padding).
template <typename T>
class ConvPacker final : public APacker {
 public:
  ConvPacker(const ConvGeom& g, const T* in, int64_t in_elements, int32_t zero_point, const int32_t* batch_zero_points)
      : g_(g), in_(in), in_end_(in + in_elements), zp_(zero_point), batch_zp_(batch_zero_points) {}

  void Pack(int64_t row0, int rows, int16_t* dst, int64_t lda) const override {
    const int C = g_.in_c;
    const int64_t hw = int64_t{g_.out_h} * g_.out_w;
    const int K = g_.k_h * g_.k_w * C;
    // (batch, oy, ox) of row0, then stepped row by row (no divisions per row).
    int b = static_cast<int>(row0 / hw);
    const int pixel = static_cast<int>(row0 % hw);
    int oy = pixel / g_.out_w, ox = pixel % g_.out_w;
    for (int i = 0; i < rows; ++i) {
      const int64_t m = row0 + i;
      const int32_t zp = batch_zp_ ? batch_zp_[b] : zp_;
      int16_t* row = dst + i * lda;
      if (g_.pointwise) {
        qgemm::WidenSub(in_ + m * C, in_end_, C, zp, row);
      } else {
        PackRow(b, oy, ox, zp, row);
      }
      if (K < lda) row[K] = 0;  // the odd k's partner (its weights are zero; keep it defined)
      g_.NextPixel(&b, &oy, &ox);
    }
  }
  // 1x1 stride-1 rows of int16 (16x8: zero point 0) with an even depth already are packed A.
  const int16_t* InPlace(int64_t row0, int64_t lda) const override {
    if constexpr (std::is_same_v<T, int16_t>) {
      if (g_.pointwise && zp_ == 0 && batch_zp_ == nullptr && lda == g_.in_c) return in_ + row0 * lda;
    }
    return nullptr;
  }

 private:
  void PackRow(int b, int oy, int ox, int32_t zp, int16_t* row) const {
    const int C = g_.in_c;
    const int iy0 = oy * g_.stride_h - g_.pad_h, ix0 = ox * g_.stride_w - g_.pad_w;
    const int seg = g_.k_w * C;
    const bool contiguous = g_.dil_w == 1 && ix0 >= 0 && ix0 + g_.k_w <= g_.in_w;
    if (contiguous && iy0 >= 0 && iy0 + (g_.k_h - 1) * g_.dil_h < g_.in_h) {
      // The whole window inside the input: one call for its k_h rows.
      const int64_t row_elems = int64_t{g_.in_w} * C;
      const T* src = in_ + (int64_t{b} * g_.in_h + iy0) * row_elems + int64_t{ix0} * C;
      qgemm::WidenSubSegments(src, row_elems * g_.dil_h, g_.k_h, seg, in_end_, zp, row);
      return;
    }
    for (int ky = 0; ky < g_.k_h; ++ky) {
      int16_t* s = row + ky * seg;
      const int iy = iy0 + ky * g_.dil_h;
      if (iy < 0 || iy >= g_.in_h) {
        std::memset(s, 0, sizeof(int16_t) * seg);
        continue;
      }
      const T* src = in_ + (int64_t{b} * g_.in_h + iy) * g_.in_w * C;
      if (contiguous) {
        qgemm::WidenSub(src + int64_t{ix0} * C, in_end_, seg, zp, s);
        continue;
      }
      for (int kx = 0; kx < g_.k_w; ++kx) {
        const int ix = ix0 + kx * g_.dil_w;
        if (ix < 0 || ix >= g_.in_w) {
          std::memset(s + kx * C, 0, sizeof(int16_t) * C);
        } else {
          qgemm::WidenSub(src + int64_t{ix} * C, in_end_, C, zp, s + kx * C);
        }
      }
    }
  }

  ConvGeom g_;
  const T* in_;
  const T* in_end_;
  int32_t zp_;
  const int32_t* batch_zp_;
};

// The input widened to int16 (minus the zero point) once per Invoke into a zero-padded image
// that holds every tap any window reads, so that im2col is plain copies of contiguous int16 runs:
// no bounds checks, no per-tap calls at the borders and no widening per window (a C = 1 or 3
// stem otherwise spends most of its time in im2col, see README.md).
struct PaddedImage {
  int ph = 0, pw = 0;  // padded height / width (top/left padding = the conv's pad_h / pad_w)
  int64_t elements = 0;  // batches * ph * pw * C
  static constexpr int kSlack = 16;  // int16 read past the last run by CopyRun

  void Init(const ConvGeom& g) {
    const int need_h = (g.out_h - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1;
    const int need_w = (g.out_w - 1) * g.stride_w + (g.k_w - 1) * g.dil_w + 1;
    ph = std::max(need_h, g.pad_h + g.in_h);
    pw = std::max(need_w, g.pad_w + g.in_w);
    elements = int64_t{g.batches} * ph * pw * g.in_c;
  }
  // Scratch bytes for elements of `elem` bytes (int16 for the int16 GEMM, uint8 for VNNI).
  size_t bytes(size_t elem = sizeof(int16_t)) const { return static_cast<size_t>(elements + kSlack) * elem + 64; }
};

// Fills rows [r0, r1) of the batches * ph padded rows: `border` outside the input, `run(src, n,
// dst)` converts the n input values of a row.
template <typename T, typename D, typename Run>
void FillPaddedRows(const ConvGeom& g, const PaddedImage& pi, const T* in, D border, int64_t r0, int64_t r1, D* img,
                    Run run) {
  const int C = g.in_c;
  const int64_t row_len = int64_t{pi.pw} * C;
  for (int64_t r = r0; r < r1; ++r) {
    const int b = static_cast<int>(r / pi.ph);
    const int iy = static_cast<int>(r % pi.ph) - g.pad_h;
    D* dst = img + r * row_len;
    if (iy < 0 || iy >= g.in_h) {
      std::fill(dst, dst + row_len, border);
      continue;
    }
    const int64_t left = int64_t{g.pad_w} * C, inner = int64_t{g.in_w} * C;
    run(in + (int64_t{b} * g.in_h + iy) * inner, inner, dst + left);
    std::fill(dst, dst + left, border);
    std::fill(dst + left + inner, dst + row_len, border);
  }
}

// int16 image: values minus the zero point, zero borders.
template <typename T>
void FillPadded(const ConvGeom& g, const PaddedImage& pi, const T* in, int64_t in_elements, int32_t zp, int64_t r0,
                int64_t r1, int16_t* img) {
  FillPaddedRows(g, pi, in, int16_t{0}, r0, r1, img, [&](const T* src, int64_t inner, int16_t* dst) {
    // WidenSub writes up to 15 values past a run whose length is not a multiple of 16, which could
    // land in the next row filled by another thread: whole vectors, then a scalar tail.
    const int64_t main = inner / 16 * 16;
    if (main > 0) qgemm::WidenSub(src, in + in_elements, static_cast<int>(main), zp, dst);
    for (int64_t i = main; i < inner; ++i) dst[i] = static_cast<int16_t>(static_cast<int32_t>(src[i]) - zp);
  });
}

// uint8 image for the VNNI GEMM: inputs in the uint8 domain (int8 with the sign bit flipped),
// borders hold the zero point z_u so padding taps add nothing (qgemm_vnni.h).
void FillPadded8(const ConvGeom& g, const PaddedImage& pi, const uint8_t* in, uint8_t flip, uint8_t z_u, int64_t r0,
                 int64_t r1, uint8_t* img) {
  const qgemm::PaddedImage8 f{.in = in, .in_h = g.in_h, .in_w = g.in_w, .C = g.in_c, .pad_h = g.pad_h,
                              .pad_w = g.pad_w, .ph = pi.ph, .pw = pi.pw, .flip = flip, .border = z_u};
  qgemm::FillPaddedImage8(f, r0, r1, img);
}

// Copies n values; may read and write up to 16 bytes past n (callers write runs in increasing
// address order, so an overrun is overwritten by the next run or lands in slack).
template <typename D>
inline void CopyRun(const D* src, int n, D* dst) {
  constexpr int kStep = 16 / static_cast<int>(sizeof(D));
  if (n * static_cast<int>(sizeof(D)) <= 8) {
    std::memcpy(dst, src, 8);
    return;
  }
  for (int i = 0; i < n; i += kStep) std::memcpy(dst + i, src + i, 16);
}

// im2col from a padded image of D (int16 for qgemm::APacker, uint8 for qgemm::APacker8).
template <typename D, typename Base>
class PaddedPacker final : public Base {
 public:
  PaddedPacker(const ConvGeom& g, const PaddedImage& pi, const D* img) : g_(g), pi_(pi), img_(img) {}

  void Pack(int64_t row0, int rows, D* dst, int64_t lda) const override {
    const int C = g_.in_c;
    const int64_t hw = int64_t{g_.out_h} * g_.out_w;
    const int K = g_.k_h * g_.k_w * C;
    const int64_t row_len = int64_t{pi_.pw} * C;
    const int64_t ky_step = row_len * g_.dil_h;
    const int seg = g_.k_w * C;
    int b = static_cast<int>(row0 / hw);
    const int pixel = static_cast<int>(row0 % hw);
    int oy = pixel / g_.out_w, ox = pixel % g_.out_w;
    // Short window rows (stems: C = 1..5): one 16-byte copy per filter row (32 bytes for int16
    // rows of 9..16 values, e.g. the 16x8 3x3 C = 3 stem; the padded int16 image's slack covers
    // the over-read), the pixels of an output row in one loop (the generic loop below spent ~15
    // cycles of bookkeeping per pixel on MobileNetV2's stem, as much as its multiply-adds).
    const int seg_bytes = seg * static_cast<int>(sizeof(D));
    if (g_.dil_w == 1 && (lda - K) * static_cast<int64_t>(sizeof(D)) <= 4) {
      if (seg_bytes <= 16) return PackShortRows<16>(b, oy, ox, rows, dst, lda);
      if (sizeof(D) == 2 && seg_bytes <= 32) return PackShortRows<32>(b, oy, ox, rows, dst, lda);
    }
    for (int i = 0; i < rows; ++i) {
      D* row = dst + i * lda;
      const D* src = img_ + (int64_t{b} * pi_.ph + int64_t{oy} * g_.stride_h) * row_len + int64_t{ox} * g_.stride_w * C;
      if (g_.dil_w == 1) {
        for (int ky = 0; ky < g_.k_h; ++ky) CopyRun(src + ky * ky_step, seg, row + ky * seg);
      } else {
        for (int ky = 0; ky < g_.k_h; ++ky)
          for (int kx = 0; kx < g_.k_w; ++kx)
            CopyRun(src + ky * ky_step + int64_t{kx} * g_.dil_w * C, C, row + ky * seg + kx * C);
      }
      // Past K: multiplied by zero weights; zeros keep the VNNI row sums exact.
      for (int64_t k = K; k < lda; ++k) row[k] = 0;
      g_.NextPixel(&b, &oy, &ox);
    }
  }

 private:
  // Rows [row0, row0 + rows) (row0 at batch b, pixel (oy, ox)) with one kCopy-byte copy per
  // filter row: what lands past a row is overwritten by the next row or falls in the A buffer's
  // slack (kCopy - seg bytes at most), as CopyRun's overrun.
  template <int kCopy>
  void PackShortRows(int b, int oy, int ox, int rows, D* dst, int64_t lda) const {
    const int C = g_.in_c;
    const int K = g_.k_h * g_.k_w * C;
    const int64_t row_len = int64_t{pi_.pw} * C;
    const int64_t ky_step = row_len * g_.dil_h;
    const int seg = g_.k_w * C;
    const int64_t px_step = int64_t{g_.stride_w} * C;
    for (int i = 0; i < rows;) {
      const int n = std::min(rows - i, g_.out_w - ox);
      const D* src = img_ + (int64_t{b} * pi_.ph + int64_t{oy} * g_.stride_h) * row_len + int64_t{ox} * px_step;
      D* row = dst + i * lda;
      for (int p = 0; p < n; ++p, src += px_step, row += lda) {
        for (int ky = 0; ky < g_.k_h; ++ky) std::memcpy(row + ky * seg, src + ky * ky_step, kCopy);
        // Zeros from K up to lda (at most 4 bytes).
        std::memset(reinterpret_cast<uint8_t*>(row + K), 0, 4);
      }
      i += n;
      ox += n;
      if (ox == g_.out_w) {
        ox = 0;
        if (++oy == g_.out_h) {
          oy = 0;
          ++b;
        }
      }
    }
  }

  ConvGeom g_;
  PaddedImage pi_;
  const D* img_;
};

class ConvQuantKernel final : public FastKernel, public Uint8InputConv {
 public:
  // from_depthwise: the op is a DEPTHWISE_CONV_2D of one input channel (see MakeDepthwiseAsConvQuant).
  ConvQuantKernel(std::unique_ptr<rt::OpKernel> ref, QuantKind kind, bool vnni, bool vbmi, bool from_depthwise = false)
      : FastKernel(std::move(ref)), kind_(kind), from_depthwise_(from_depthwise), vnni_(vnni), vbmi_(vbmi) {}

  size_t PackedBytes() const override { return packed8_ ? packed8_->bytes() : packed_ ? packed_->bytes() : 0; }

  bool TakesUint8Input() const override {
    return !uses_reference() && use_vnni_ && kind_ == QuantKind::kInt8 && !from_depthwise_;
  }
  Status InvokeWithUint8Input(rt::KernelContext& ctx, const uint8_t* x_u8) override {
    if (!TakesUint8Input()) return Internal("conv2d: uint8 input without the int8 VNNI path");
    if (ctx.output(0)->num_elements() == 0) return Status::Ok();
    return InvokeVnni(ctx, int64_t{g_.batches} * g_.out_h * g_.out_w, x_u8, 0);
  }

 protected:
  std::string FastVariant() const override {
    // Suffixes name the paths taken: "/padded" im2col from the padded image, "/rqhalf" the
    // half-range output stage (qgemm::Requant8::half_range, VnniStage::kHalf), "/rqhigh" the VNNI
    // high-dword stage (VnniStage::kHigh), "/rqfloat" its exact fp32 form (VnniStage::kFloat),
    // "/rqfloat2" the two-multiply-add fp32 form (VnniStage::kFloat2),
    // then the weights' form (qgemm::WeightFormSuffix),
    // "/pairs" the one-panel pair tiles (qgemm::PairTilesApply).
    std::string suffix = single_ || single16_ ? "/single"
                         : lanes_             ? "/lanes"
                         : direct_            ? "/direct"
                         : use_padded_        ? "/padded"
                                              : "";
    if (use_vnni_) {
      if (vout_.stage == qgemm::VnniStage::kHigh) suffix += "/rqhigh";
      if (vout_.stage == qgemm::VnniStage::kFloat) suffix += "/rqfloat";
      if (vout_.stage == qgemm::VnniStage::kFloat2) suffix += "/rqfloat2";
      if (vout_.stage == qgemm::VnniStage::kHalf) suffix += "/rqhalf";
      if (vout_.stage == qgemm::VnniStage::kTwoRound) suffix += "/rq2round";
      // The lanes path packs its own weights: window sums ("/rowsum") or none.
      suffix += lanes_ ? (lanes_w_.f != 0 ? "/rowsum" : "") : qgemm::WeightFormSuffix(*packed8_);
      if (!single_ && !lanes_ && qgemm::PairTilesApply(*packed8_, direct_ ? direct_koff_.data() : packed8_->packed_koff.data()))
        suffix += "/pairs";
    } else if (out_.q8.half_range) {
      suffix += "/rqhalf";
    }
    const std::string isa = use_vnni_ || out_.use_i16v ? "/avx512vnni" : "/avx2";
    // A one-channel depthwise op names itself and the convolution it runs as.
    const std::string op = from_depthwise_ ? "depthwise_conv2d/as-conv2d/" : "conv2d/";
    switch (kind_) {
      case QuantKind::kInt8: return op + "int8" + isa + suffix;
      case QuantKind::kUInt8: return op + "uint8" + isa + suffix;
      case QuantKind::kHybrid: return hybrid_per_channel_ ? op + "hybrid_per_channel/avx2" : op + "hybrid/avx2";
      case QuantKind::kInt16: return op + "int16x8" + isa + suffix;
    }
    return op + "avx2";
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    const rt::RtTensor* filter = ctx.input(1);
    const rt::RtTensor* bias = ctx.input(2);
    ConvOptions o;
    if (from_depthwise_) {
      o = ConvOptionsOf(GetOptions<tflite::DepthwiseConv2DOptionsT>(ctx.op()));
      if (!TransposeDepthwiseFilter(*input, *filter, *ctx.output(0))) return false;
      filter = &dw_filter_;
    } else {
      o = ConvOptionsOf(GetOptions<tflite::Conv2DOptionsT>(ctx.op()));
    }
    ConvGeom g;
    g.batches = input->dim(0);
    g.in_h = input->dim(1);
    g.in_w = input->dim(2);
    g.in_c = input->dim(3);
    g.out_c = filter->dim(0);
    g.k_h = filter->dim(1);
    g.k_w = filter->dim(2);
    if (filter->dim(3) != g.in_c) return false;  // grouped convolution
    if (!filter->data || (bias && !bias->data)) return false;
    RETURN_IF_ERROR(ComputeConvWindow(ctx, o, &g));
    g.pointwise = g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
                  g.out_h == g.in_h && g.out_w == g.in_w;
    g_ = g;
    const int K = g.k_h * g.k_w * g.in_c;
    const int N = g.out_c;
    if (K <= 0 || N <= 0) return false;

    std::vector<int32_t> weight_zp = {kind_ == QuantKind::kUInt8 ? filter->zero_point() : 0};
    if (!g.pointwise) padded_.Init(g);
    // VNNI for int8 / uint8 when the A rows can be packed without the int16 paths' fallbacks
    // (pointwise, or a padded uint8 image within the scratch limit).
    use_vnni_ = vnni_ && (kind_ == QuantKind::kInt8 || kind_ == QuantKind::kUInt8) &&
                (g.pointwise || padded_.bytes(sizeof(uint8_t)) <= kMaxPaddedBytes);
    spread_ = use_vnni_ && SpreadRunsPay();
    if (spread_) {
      const int seg = g.k_w * g.in_c;
      packed8_ = GetPackedWeightsVnni(ctx, "conv", *filter, N, K, weight_zp, seg, (seg + 3) / 4 * 4);
      // The direct path reads weights minus their zero point in int8, or in the split form (uint8
      // weights with a few values at the ends of the range: f = 0, extra groups); with row sums
      // (f != 0) the windows are packed, and so are the weights, unspread.
      if (packed8_->f != 0) spread_ = false;
    }
    if (use_vnni_ && !spread_) {
      packed8_ = GetPackedWeightsVnni(ctx, "conv", *filter, N, K, weight_zp);
    } else if (!use_vnni_) {
      packed_ = GetPackedWeights(ctx, "conv", *filter, N, K, weight_zp);
    }

    const int64_t M = int64_t{g.batches} * g.out_h * g.out_w;
    GemmOpSpec spec;
    spec.kind = kind_;
    spec.N = N;
    spec.K = K;
    spec.abs_sum = use_vnni_ ? &packed8_->abs_sum : &packed_->abs_sum;
    spec.activation = o.fused_activation_function;
    spec.per_channel_multipliers = kind_ != QuantKind::kUInt8;
    spec.int16_int32_bias = qgemm::Int16Rounding::kGemmlowp32;
    spec.int16_int64_bias = spec.int16_no_bias = qgemm::Int16Rounding::kInt64Bias;
    spec.int16_vnni = vnni_;
    ASSIGN_OR_RETURN(const bool supported, PrepareGemmOutput(ctx, spec, &out_));
    if (!supported) return false;
    // The int16 GEMM's output stage rounds as convolutions do, not as depthwise ops.
    if (from_depthwise_ && !use_vnni_) return false;
    if (use_vnni_) {
      const int32_t z_u = input->zero_point() + (kind_ == QuantKind::kInt8 ? 128 : 0);
      qgemm::BuildVnniOutput(*packed8_, out_.q8, z_u, &vout_, /*two_round=*/from_depthwise_);
      RETURN_IF_ERROR(ctx.ReserveSlotScratch(qgemm::GemmVnniSlotBytes(*packed8_, M, ctx.threads().num_threads())));
      use_padded_ = !g.pointwise;
      RETURN_IF_ERROR(PrepareDirect());
      PrepareSingle(*filter, weight_zp[0]);
      PrepareLanes(*filter, weight_zp[0]);
      if (use_padded_) img_scratch_ = ctx.RequestScratch(padded_.bytes(sizeof(uint8_t)) + (lanes_ ? qgemm::kLanesSlack : 0));
      return true;
    }
    if (kind_ == QuantKind::kHybrid) {
      const auto& scales = filter->quant->scale;
      hybrid_per_channel_ =
          scales.size() > 1 && std::any_of(scales.begin(), scales.end(), [&](float s) { return s != scales[0]; });
      qin_scratch_ = ctx.RequestScratch(static_cast<size_t>(input->num_elements()));
      batch_scale_.assign(g.batches, 0.0f);
      batch_zp_.assign(g.batches, 0);
    }
    RETURN_IF_ERROR(ctx.ReserveSlotScratch(qgemm::GemmSlotBytes(*packed_, M, ctx.threads().num_threads())));
    use_padded_ = false;
    direct_ = false;
    if (!g.pointwise && kind_ != QuantKind::kHybrid) {
      if (padded_.bytes() <= kMaxPaddedBytes) {
        use_padded_ = true;
        img_scratch_ = ctx.RequestScratch(padded_.bytes());
      }
    }
    // 16x8, one output channel: windows read in place from the padded image (Int16SingleRow).
    single16_ = kind_ == QuantKind::kInt16 && use_padded_ && out_.use_i16v && !out_.i16v.single.empty() &&
                g.out_c == 1 && g.dil_w == 1;
    if (single16_) {
      qgemm::BuildInt16SingleWeights(*packed_, g.k_h, g.k_w * g.in_c, int64_t{padded_.pw} * g.in_c * g.dil_h,
                                     &single16_w_);
    }
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* input = ctx.input(0);
    if (ctx.output(0)->num_elements() == 0) return Status::Ok();
    const int64_t M = int64_t{g_.batches} * g_.out_h * g_.out_w;
    if (use_vnni_) return InvokeVnni(ctx, M, input->data_as<uint8_t>(), kind_ == QuantKind::kInt8 ? 0x80 : 0);
    if (use_padded_) {
      int16_t* img = static_cast<int16_t*>(AlignScratch(ctx.Scratch(img_scratch_)));
      switch (kind_) {
        case QuantKind::kInt8: FillImage(ctx, input->data_as<int8_t>(), input->zero_point(), img); break;
        case QuantKind::kUInt8: FillImage(ctx, input->data_as<uint8_t>(), input->zero_point(), img); break;
        case QuantKind::kInt16: FillImage(ctx, input->data_as<int16_t>(), 0, img); break;
        case QuantKind::kHybrid: return Internal("conv2d: padded im2col chosen for a hybrid op");
      }
      if (single16_) {
        RunSingle16(ctx, img, ctx.output(0)->data_as<int16_t>());
        return Status::Ok();
      }
      PaddedPacker<int16_t, APacker> pack(g_, padded_, img);
      qgemm::RunGemm(ctx.threads(), M, *packed_, pack, MakeGemmOutput(out_, ctx, g_.out_c));
      return Status::Ok();
    }
    switch (kind_) {
      case QuantKind::kInt8: {
        ConvPacker<int8_t> pack(g_, input->data_as<int8_t>(), input->num_elements(), input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), M, *packed_, pack, MakeGemmOutput(out_, ctx, g_.out_c));
        break;
      }
      case QuantKind::kUInt8: {
        ConvPacker<uint8_t> pack(g_, input->data_as<uint8_t>(), input->num_elements(), input->zero_point(), nullptr);
        qgemm::RunGemm(ctx.threads(), M, *packed_, pack, MakeGemmOutput(out_, ctx, g_.out_c));
        break;
      }
      case QuantKind::kHybrid: {
        int8_t* q = ctx.Scratch<int8_t>(qin_scratch_);
        const int64_t per_batch = int64_t{g_.in_h} * g_.in_w * g_.in_c;
        QuantizeRows(input->data_as<float>(), g_.batches, per_batch, /*asymmetric=*/hybrid_per_channel_, q,
                     batch_scale_.data(), batch_zp_.data());
        // Symmetric per-tensor hybrid ignores the zero points (they are 0).
        ConvPacker<int8_t> pack(g_, q, input->num_elements(), 0, batch_zp_.data());
        const auto out = MakeGemmOutput(out_, ctx, g_.out_c, batch_scale_.data(), int64_t{g_.out_h} * g_.out_w);
        qgemm::RunGemm(ctx.threads(), M, *packed_, pack, out);
        break;
      }
      case QuantKind::kInt16: {
        ConvPacker<int16_t> pack(g_, input->data_as<int16_t>(), input->num_elements(), 0, nullptr);
        qgemm::RunGemm(ctx.threads(), M, *packed_, pack, MakeGemmOutput(out_, ctx, g_.out_c));
        break;
      }
    }
    return Status::Ok();
  }

 private:
  static constexpr size_t kMaxPaddedBytes = size_t{32} << 20;
  // Weights every output row of the direct path streams (L2-resident, as ForEachGemmTask's blocks).
  static constexpr int64_t kDirectMaxWeightBytes = 160 << 10;

  // x: the input's bytes, flipped by `flip` into the uint8 domain the VNNI tiles take (0x80 for
  // int8 values, 0 for uint8 ones; ctx.input(0)'s zero point is that of the int8 or uint8 values).
  Status InvokeVnni(rt::KernelContext& ctx, int64_t M, const uint8_t* x, uint8_t flip) const {
    const rt::RtTensor* input = ctx.input(0);
    void* c = ctx.output(0)->data;
    if (!use_padded_) {
      qgemm::ContiguousRowsPacker8 pack(x, g_.in_c, flip);
      qgemm::RunGemmVnni(ctx.threads(), M, *packed8_, pack, vout_, c, g_.out_c);
      return Status::Ok();
    }
    uint8_t* img = static_cast<uint8_t*>(AlignScratch(ctx.Scratch(img_scratch_)));
    const auto z_u = static_cast<uint8_t>(input->zero_point() + (kind_ == QuantKind::kInt8 ? 128 : 0));
    ForImageRows(ctx, sizeof(uint8_t), [&](int64_t r0, int64_t r1) { FillPadded8(g_, padded_, x, flip, z_u, r0, r1, img); });
    std::memset(img + padded_.elements, 0, ImageSlack());
    if (lanes_) {
      RunLanes(ctx, img, static_cast<uint8_t*>(c));
      return Status::Ok();
    }
    if (single_) {
      RunSingle(ctx, img, static_cast<uint8_t*>(c));
      return Status::Ok();
    }
    if (direct_) {
      RunDirect(ctx, img, static_cast<uint8_t*>(c));
      return Status::Ok();
    }
    PaddedPacker<uint8_t, qgemm::APacker8> pack(g_, padded_, img);
    qgemm::RunGemmVnni(ctx.threads(), M, *packed8_, pack, vout_, c, g_.out_c);
    return Status::Ok();
  }

  // A depthwise filter [1][k_h][k_w][M] over one input channel is the filter [M][k_h][k_w][1] of a
  // convolution with M output channels: out[.., m] = sum over the window of x * w[ky][kx][m] in
  // both, with the same per-channel (or per-tensor) scales and the same output stage (TFLite
  // quantizes depthwise and convolution multipliers with one function). dw_filter_ holds the
  // reordered weights (the packing reads them from it; PackedBytes counts the packed copy).
  bool TransposeDepthwiseFilter(const rt::RtTensor& input, const rt::RtTensor& filter, const rt::RtTensor& output) {
    if (input.rank() != 4 || filter.rank() != 4 || output.rank() != 4 || !filter.data) return false;
    const int M = filter.dim(3), taps = filter.dim(1) * filter.dim(2);
    if (input.dim(3) != 1 || filter.dim(0) != 1 || output.dim(3) != M || M <= 0 || taps <= 0) return false;
    if (filter.type != DType::kInt8 && filter.type != DType::kUInt8) return false;
    dw_filter_bytes_.resize(static_cast<size_t>(M) * taps);
    DepthwiseFilterAsConv(filter.data, taps, M, dw_filter_bytes_.data());
    dw_filter_ = rt::RtTensor();
    dw_filter_.type = filter.type;
    dw_filter_.shape = {M, filter.dim(1), filter.dim(2), 1};
    dw_filter_.data = dw_filter_bytes_.data();
    dw_filter_.bytes = dw_filter_bytes_.size();
    dw_filter_.alloc = rt::Allocation::kConstant;
    dw_filter_.quant = filter.quant;
    dw_filter_.def = filter.def;
    return true;
  }

  // Implicit im2col for the VNNI GEMM: with C a multiple of 4 every k group of a window is 4
  // consecutive bytes of the padded uint8 image, at an offset from the window's first byte that
  // is the same for all windows (direct_koff_), and the windows of one output row are
  // stride_w * C bytes apart; so the micro-kernel reads them in place and nothing is packed.
  // Needs no row sums (PackedB8::f == 0: weights minus their zero point fit int8, always for
  // int8 models).
  Status PrepareDirect() {
    const int C = g_.in_c;
    const int64_t weight_bytes = int64_t{packed8_->panels} * packed8_->K4 * 64;
    direct_ = use_padded_ && (C % 4 == 0 || spread_) && packed8_->f == 0 && weight_bytes <= kDirectMaxWeightBytes;
    // Spread weights hold gaps only the direct path reads as such (SpreadRunsPay checked all this).
    if (spread_ && !direct_) return Internal("conv2d: spread weights without the direct path");
    if (!direct_) return Status::Ok();
    const int64_t row_len = int64_t{padded_.pw} * C;
    // k runs of one filter row: kw * C values, spread to whole groups of 4 (spread_: dilation 1
    // in x, so the run is contiguous in the image and the gap reads the next bytes, times zero).
    const int seg = spread_ ? (g_.k_w * C + 3) / 4 * 4 : g_.k_w * C;
    direct_koff_.resize(static_cast<size_t>(packed8_->K4));
    for (int grp = 0; grp < packed8_->K4; ++grp) {
      const int k = 4 * grp, ky = k / seg, in_run = k % seg, kx = in_run / C, c = in_run % C;
      direct_koff_[static_cast<size_t>(grp)] =
          static_cast<int32_t>(ky * g_.dil_h * row_len + int64_t{kx} * g_.dil_w * C + c);
    }
    return Status::Ok();
  }

  // Whether a convolution whose C is not a multiple of 4 (stems: C = 1, 3) takes the direct path
  // with each filter row's kw * C weights spread to whole k groups of 4 (GetPackedWeightsVnni's
  // seg): the windows are then read in place, im2col is gone, at the price of the groups the
  // rounding adds (K = 27 -> 36 for 3x3x3, none for C = 1 rows of 4). It needs what the direct
  // path needs (weights within the streaming limit; their form, f = 0, is checked once packed)
  // and pays when the added multiply-adds per pixel stay below what packing the row costs (about
  // two vpdpbusd per filter row copied, measured on 3x3 C = 3 and 10x4 C = 1 stems).
  bool SpreadRunsPay() const {
    const ConvGeom& g = g_;
    if (g.pointwise || g.in_c % 4 == 0 || g.dil_w != 1) return false;
    if (padded_.bytes(sizeof(uint8_t)) > kMaxPaddedBytes) return false;
    const int64_t K = int64_t{g.k_h} * g.k_w * g.in_c;
    const int64_t seg = int64_t{g.k_w} * g.in_c, k4_spread = g.k_h * ((seg + 3) / 4), k4 = (K + 3) / 4;
    const int64_t panels = (g.out_c + 15) / 16;
    if (panels * k4_spread * 64 > kDirectMaxWeightBytes) return false;
    return (k4_spread - k4) * panels <= 2 * int64_t{g.k_h};
  }

  // Bytes between the first windows of consecutive output rows of one image (stride_h padded rows).
  int64_t WindowRowStride() const { return int64_t{g_.stride_h} * padded_.pw * g_.in_c; }

  // rows(first window of row r0, r0, n) for runs of n output rows of one image (their windows
  // WindowRowStride() apart, a row's out_w windows stride_w * C bytes apart), the rows split over
  // the threads.
  // elem: bytes per image element (2: the int16 image).
  void ForEachOutputRun(rt::KernelContext& ctx, const uint8_t* img,
                        FunctionRef<void(const uint8_t*, int64_t, int)> rows, int64_t elem = 1) const {
    const int64_t row_len = int64_t{padded_.pw} * g_.in_c * elem;
    const int64_t out_rows = int64_t{g_.batches} * g_.out_h;
    auto run = [&](int64_t r0, int64_t r1) {
      while (r0 < r1) {
        const int64_t b = r0 / g_.out_h, oy = r0 % g_.out_h;
        const int64_t n = std::min(r1 - r0, g_.out_h - oy);  // rows of this image
        rows(img + (b * padded_.ph + oy * g_.stride_h) * row_len, r0, static_cast<int>(n));
        r0 += n;
      }
    };
    if (ctx.threads().num_threads() == 1 || out_rows < 2) {
      run(0, out_rows);
    } else {
      ctx.threads().ParallelFor(out_rows, 1, run);
    }
  }

  // One VnniChunk per run of output rows (a chunk of out_w windows each).
  void RunDirect(rt::KernelContext& ctx, const uint8_t* img, uint8_t* out) const {
    const int64_t out_row_bytes = int64_t{g_.out_w} * g_.out_c;
    const int64_t a_row = WindowRowStride();
    ForEachOutputRun(ctx, img, [&](const uint8_t* a, int64_t r0, int n) {
      qgemm::VnniChunk(a, int64_t{g_.stride_w} * g_.in_c, direct_koff_.data(), g_.out_w, *packed8_, 0,
                       packed8_->panels, vout_, nullptr, out + r0 * out_row_bytes, g_.out_c, n, a_row, out_row_bytes);
    });
  }

  // Output pixels in lanes (qgemm::VnniLanes): stems with few input channels and 2 to 8 output
  // channels, dilation 1 in x, any weights (uint8 ones whose w - zp leaves int8 with window sums);
  // one output channel: PrepareSingle. Needs AVX-512 VBMI (vpermi2b).
  void PrepareLanes(const rt::RtTensor& filter, int32_t zp) {
    lanes_ = vbmi_ && use_padded_ && !single_ && g_.in_c % 4 != 0 && g_.out_c <= qgemm::kLanesMaxN &&
             g_.dil_w == 1 && qgemm::VnniLanesFit(g_.k_w, g_.in_c, g_.stride_w);
    if (!lanes_) return;
    direct_ = false;
    const int64_t row_len = int64_t{padded_.pw} * g_.in_c;
    qgemm::BuildVnniLanes(filter.type == DType::kInt8 ? filter.data_as<int8_t>() : nullptr,
                          filter.type == DType::kUInt8 ? filter.data_as<uint8_t>() : nullptr, zp, g_.out_c, g_.k_h,
                          g_.k_w, g_.in_c, g_.stride_w, row_len * g_.dil_h, vout_, &lanes_w_);
  }

  void RunLanes(rt::KernelContext& ctx, const uint8_t* img, uint8_t* out) const {
    const int64_t out_row_bytes = int64_t{g_.out_w} * g_.out_c;
    const int64_t a_row = WindowRowStride();
    ForEachOutputRun(ctx, img, [&](const uint8_t* a, int64_t r0, int n) {
      qgemm::VnniLanesRows(a, a_row, n, g_.out_w, lanes_w_, vout_, out + r0 * out_row_bytes, out_row_bytes);
    });
  }

  // Bytes past the padded image that the chosen path may read (zeroed at each invoke; padded_.bytes
  // holds kSlack of them, the lanes path requests kLanesSlack more).
  size_t ImageSlack() const { return lanes_ ? qgemm::kLanesSlack : PaddedImage::kSlack; }

  // One output channel, windows read in place (qgemm::VnniSingle): any C, dilation 1 in x,
  // weights minus their zero point in int8 (no row sums, no split).
  void PrepareSingle(const rt::RtTensor& filter, int32_t zp) {
    single_ = use_padded_ && g_.out_c == 1 && g_.dil_w == 1 && packed8_->f == 0 && !packed8_->split();
    if (!single_) return;
    const int64_t row_len = int64_t{padded_.pw} * g_.in_c;
    qgemm::BuildVnniSingle(filter.type == DType::kInt8 ? filter.data_as<int8_t>() : nullptr,
                           filter.type == DType::kUInt8 ? filter.data_as<uint8_t>() : nullptr, zp, g_.k_h, g_.k_w,
                           g_.in_c, row_len * g_.dil_h, vout_, &single_w_);
  }

  void RunSingle(rt::KernelContext& ctx, const uint8_t* img, uint8_t* out) const {
    const int64_t a_row = WindowRowStride();
    ForEachOutputRun(ctx, img, [&](const uint8_t* a, int64_t r0, int n) {
      for (int i = 0; i < n; ++i)
        qgemm::VnniSingleRow(a + i * a_row, int64_t{g_.stride_w} * g_.in_c, g_.out_w, single_w_, vout_,
                             out + (r0 + i) * g_.out_w);
    });
  }

  // 16x8 with one output channel (single16_): per output row, its out_w windows in place.
  void RunSingle16(rt::KernelContext& ctx, const int16_t* img, int16_t* out) const {
    const int64_t a_row = WindowRowStride();
    ForEachOutputRun(
        ctx, reinterpret_cast<const uint8_t*>(img),
        [&](const uint8_t* a, int64_t r0, int n) {
          const auto* first = reinterpret_cast<const int16_t*>(a);
          for (int i = 0; i < n; ++i)
            qgemm::Int16SingleRow(first + i * a_row, int64_t{g_.stride_w} * g_.in_c, g_.out_w, single16_w_, out_.i16v,
                                  out + (r0 + i) * g_.out_w);
        },
        sizeof(int16_t));
  }

  // Calls fill(r0, r1) over the padded image's rows, split over the threads when large.
  template <typename Fill>
  void ForImageRows(rt::KernelContext& ctx, size_t elem, Fill fill) const {
    const int64_t rows = int64_t{g_.batches} * padded_.ph;
    const int64_t row_bytes = int64_t{padded_.pw} * g_.in_c * static_cast<int64_t>(elem);
    // Rows of at least ~16 KB per thread (smaller images are not worth waking a thread for).
    const int64_t min_rows = std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(row_bytes, 1));
    if (ctx.threads().num_threads() == 1 || rows < 2 * min_rows) {
      fill(int64_t{0}, rows);
    } else {
      ctx.threads().ParallelFor(rows, min_rows, fill);
    }
  }

  template <typename T>
  void FillImage(rt::KernelContext& ctx, const T* in, int32_t zp, int16_t* img) const {
    const int64_t in_elements = int64_t{g_.batches} * g_.in_h * g_.in_w * g_.in_c;
    ForImageRows(ctx, sizeof(int16_t), [&](int64_t r0, int64_t r1) {
      FillPadded(g_, padded_, in, in_elements, zp, r0, r1, img);
    });
    // The slack CopyRun may read past the last run: defined values.
    std::memset(img + padded_.elements, 0, sizeof(int16_t) * PaddedImage::kSlack);
  }

  QuantKind kind_;
  bool from_depthwise_ = false;
  std::vector<uint8_t> dw_filter_bytes_;  // from_depthwise_: the filter as a convolution's
  rt::RtTensor dw_filter_;
  bool vnni_ = false;      // the CPU runs the VNNI GEMM
  bool vbmi_ = false;      // and has AVX-512 VBMI (PrepareLanes)
  bool use_vnni_ = false;  // this op does (int8 / uint8)
  std::shared_ptr<const qgemm::PackedB8> packed8_;
  qgemm::VnniOutput vout_;
  ConvGeom g_;
  bool use_padded_ = false;
  bool direct_ = false;  // VNNI: windows read in place from the padded image (PrepareDirect)
  bool spread_ = false;  // VNNI: filter rows' weights spread to whole k groups (SpreadRunsPay)
  bool single_ = false;  // VNNI: one output channel, window rows as dot products (PrepareSingle)
  qgemm::VnniSingle single_w_;
  bool single16_ = false;  // 16x8: one output channel, windows in place (RunSingle16)
  qgemm::Int16SingleWeights single16_w_;
  bool lanes_ = false;  // VNNI: output pixels in lanes (PrepareLanes)
  qgemm::VnniLanes lanes_w_;
  std::vector<int32_t> direct_koff_;
  PaddedImage padded_;
  int img_scratch_ = -1;
  std::shared_ptr<const PackedB> packed_;
  GemmOpOutput out_;
  // Hybrid: the input quantized per batch.
  bool hybrid_per_channel_ = false;
  int qin_scratch_ = -1;
  std::vector<float> batch_scale_;
  std::vector<int32_t> batch_zp_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeConv2DQuant(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (!GemmOpEligible(cc)) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  const auto kind = ClassifyQuant(in->type, w->type, cc.output(0)->type);
  if (!kind) return nullptr;
  // Hybrid results differ from the reference in a few accumulators (not bit-exact yet): reference.
  if (*kind == QuantKind::kHybrid) return nullptr;
  if (in->shape.size() == 4 && w->shape.size() == 4 && in->shape[3] != w->shape[3]) return nullptr;  // groups
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<ConvQuantKernel>(std::move(ref), *kind, cc.cpu.has_avx512_vnni(), cc.cpu.avx512vbmi);
}

std::unique_ptr<rt::OpKernel> MakeDepthwiseAsConvQuant(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (!GemmOpEligible(cc) || !cc.cpu.has_avx512_vnni()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* w = cc.input(1);
  if (in->shape.size() != 4 || in->shape[3] != 1 || w->shape.size() != 4 || w->shape[0] != 1) return nullptr;
  const auto kind = ClassifyQuant(in->type, w->type, cc.output(0)->type);
  if (!kind || (*kind != QuantKind::kInt8 && *kind != QuantKind::kUInt8)) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<ConvQuantKernel>(std::move(ref), *kind, /*vnni=*/true, cc.cpu.avx512vbmi,
                                           /*from_depthwise=*/true);
}

}  // namespace edgeopt::kernels
