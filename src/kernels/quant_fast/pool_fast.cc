// Fast AVERAGE_POOL_2D / MAX_POOL_2D on int8 / uint8 / int16 (NHWC), bit-exact with pooling/ref.cc:
// each output pixel accumulates 8 channels per int32 vector over the in-bounds window
// (quant_convert_avx2.cc); channels beyond the last multiple of 8 use the reference formula.
// MAX_POOL_2D on AVX-512 takes byte-wise maxima of 64 channels per vector instead (int16: word-wise,
// 32), every channel (masked tail; quant_convert_avx512.cc); an AVERAGE_POOL_2D over the whole image (a global pool)
// sums its pixels as one run of bytes there (int16: 8 channels per int32 vector, any CPU with AVX2).
// Averages over more than kMaxAverageCount positions (int16: kMaxAverageCount16, global ones
// kMaxGlobalCount16) stay on the reference kernel.
#include <algorithm>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/quant_fast/quant_convert.h"
#include "kernels/quant_fast/quant_fast.h"

namespace edgeopt::kernels {
namespace {

class PoolFastKernel final : public FastKernel {
 public:
  PoolFastKernel(std::unique_ptr<rt::OpKernel> ref, bool average, DType type, bool avx512)
      : FastKernel(std::move(ref)),
        average_(average),
        type_(type),
        avx512_(avx512),
        max512_(!average && avx512) {}

 protected:
  std::string FastVariant() const override {
    return std::string(average_ ? "average_pool2d/" : "max_pool2d/") + TypeName(type_) +
           (max512_ ? "/avx512" : !global_ ? "/avx2" : bytes_global() ? "/avx512/global" : "/avx2/global");
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const auto& o = GetOptions<tflite::Pool2DOptionsT>(ctx.op());
    spec_.padding = o.padding;
    spec_.stride_h = o.stride_h;
    spec_.stride_w = o.stride_w;
    spec_.filter_h = o.filter_height;
    spec_.filter_w = o.filter_width;
    RETURN_IF_ERROR(ComputeWindow(ctx, spec_, in.dim(1), in.dim(2), &g_));
    RETURN_IF_ERROR(QuantizedActivation(ctx, o.fused_activation_function, *ctx.output(0), &lo_, &hi_));
    batches_ = in.dim(0);
    channels_ = in.dim(3);
    global_ = average_ && (avx512_ || type_ == DType::kInt16) && g_.out_h == 1 && g_.out_w == 1 && g_.pad_h == 0 &&
              g_.pad_w == 0 && spec_.filter_h == g_.in_h && spec_.filter_w == g_.in_w;
    // int16 global sums: |sum| + count / 2 stays within int32 (the reference's arithmetic).
    const int max_count = type_ != DType::kInt16 ? qconv::kMaxAverageCount
                          : global_              ? qconv::kMaxGlobalCount16
                                                 : qconv::kMaxAverageCount16;
    if (average_ && int64_t{spec_.filter_h} * spec_.filter_w > max_count) return false;
    if (global_) sums_.assign(static_cast<size_t>(channels_), 0);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    if (ctx.output(0)->num_elements() == 0) return Status::Ok();
    if (type_ == DType::kInt8) Run<int8_t>(ctx);
    else if (type_ == DType::kUInt8) Run<uint8_t>(ctx);
    else Run<int16_t>(ctx);
    return Status::Ok();
  }

 private:
  template <typename T>
  void Run(rt::KernelContext& ctx) const {
    const T* in = ctx.input(0)->data_as<T>();
    T* out = ctx.output(0)->data_as<T>();
    const WindowGeometry g = g_;
    const WindowSpec s = spec_;
    const int channels = channels_, c8 = channels_ / 8 * 8;
    const int64_t row_stride = int64_t{g.in_w} * channels;
    if (global_) {
      // One window over the whole image: its pixels are one run (SumPixelsAvx512), then the
      // reference's rounded division per channel.
      const int64_t count = int64_t{g.in_h} * g.in_w;
      for (int b = 0; b < batches_; ++b) {
        bool done = false;
        if constexpr (sizeof(T) == 1) done = qconv::SumPixelsAvx512<T>(in + b * count * channels, count, channels, sums_.data());
        if (!done) qconv::SumPixels<T>(in + b * count * channels, count, channels, sums_.data());
        for (int c = 0; c < channels; ++c) {
          const int64_t sum = sums_[c];
          const int64_t v = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
          out[int64_t{b} * channels + c] = static_cast<T>(std::clamp<int64_t>(v, lo_, hi_));
        }
      }
      return;
    }
    if (max512_) {
      // A whole output row per call (the window columns clipped there).
      MaxRows512(ctx, in, out);
      return;
    }
    ForEachClippedWindow(ctx.threads(), batches_, g, s, [&](const ClippedWindow& w) {
      const T* win = in + ((int64_t{w.b} * g.in_h + w.y0 + w.fy_begin) * g.in_w + w.x0 + w.fx_begin) * channels;
      T* o = out + (w.row * g.out_w + w.ox) * channels;
      const int rows = w.fy_end - w.fy_begin, cols = w.fx_end - w.fx_begin;
      if (c8) qconv::PoolPixel<T>(average_, win, rows, cols, row_stride, channels, o, c8, lo_, hi_);
      for (int c = c8; c < channels; ++c) o[c] = TailChannel(win + c, rows, cols, row_stride, channels);
    });
  }

  template <typename T>
  void MaxRows512(rt::KernelContext& ctx, const T* in, T* out) const {
    const WindowGeometry g = g_;
    const WindowSpec s = spec_;
    const int channels = channels_;
    const int64_t row_stride = int64_t{g.in_w} * channels;
    ForEachClippedRow(ctx.threads(), batches_, g, s, [&](const ClippedWindow& w) {
      qconv::MaxPoolRowAvx512<T>(in + (int64_t{w.b} * g.in_h + w.y0 + w.fy_begin) * row_stride,
                                 w.fy_end - w.fy_begin, row_stride, g.in_w, g.out_w, s.stride_w, g.pad_w, s.filter_w,
                                 channels, out + w.row * g.out_w * channels, lo_, hi_);
    });
  }

  // Global pools of 1-byte types sum on AVX-512 (SumPixelsAvx512); int16 ones on AVX2 (SumPixels).
  bool bytes_global() const { return type_ != DType::kInt16; }

  // The reference formula for one channel.
  template <typename T>
  T TailChannel(const T* p, int rows, int cols, int64_t row_stride, int64_t col_stride) const {
    int32_t sum = 0, best = INT32_MIN;
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < cols; ++k) {
        const int32_t v = p[r * row_stride + k * col_stride];
        sum += v;
        best = std::max(best, v);
      }
    const int32_t count = rows * cols;
    const int32_t v = !average_ ? best : sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
    return static_cast<T>(std::clamp(v, lo_, hi_));
  }

  bool average_;
  DType type_;
  bool avx512_;
  bool max512_;         // MAX_POOL_2D with byte-wise AVX-512 maxima (all channels)
  bool global_ = false;  // AVERAGE_POOL_2D over the whole image, summed as one run (SumPixelsAvx512)
  mutable std::vector<int32_t> sums_;  // global_: per-channel sums (Run is const)
  WindowSpec spec_;
  WindowGeometry g_;
  int batches_ = 0, channels_ = 0;
  int32_t lo_ = 0, hi_ = 0;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakePoolFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out || !(in->type == DType::kInt8 || in->type == DType::kUInt8 || in->type == DType::kInt16) ||
      out->type != in->type)
    return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<PoolFastKernel>(std::move(ref), cc.op.code == tflite::BuiltinOperator_AVERAGE_POOL_2D,
                                          in->type, cc.cpu.has_avx512());
}

}  // namespace edgeopt::kernels
