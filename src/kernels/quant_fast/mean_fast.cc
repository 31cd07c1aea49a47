// Fast quantized MEAN over the spatial axes of an NHWC tensor (int8 / uint8 / int16; the
// MobileNet-style global average head): per batch, int32 sums of every pixel's channels (AVX-512
// BW: the pixels as one byte run, quant_convert_avx512.cc; else AVX2, quant_convert_avx2.cc), then the reference kernel's own last step (reduce/quant_mean.h;
// for int8 / int16 over H and W the same arithmetic on 8 lanes, FinishCenteredMean), so results
// are bit-exact with reduce/ref.cc. Also MEAN over the last axis alone, any rank (the layer
// norms of quantized transformers): each row's sum in vector lanes, then the reference's own
// last step. SUM over the last axis alone likewise (the reference's FinishQuantizedSum). Other
// axes, non-constant axis tensors, empty inputs and unquantized tensors stay on the reference
// kernel.
#include <algorithm>
#include <type_traits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/tensor_args.h"
#include "kernels/quant_fast/quant_convert.h"
#include "kernels/quant_fast/quant_fast.h"
#include "kernels/reduce/quant_mean.h"

namespace edgeopt::kernels {
namespace {

class MeanFastKernel final : public FastKernel {
 public:
  // sum: SUM (the last axis only) instead of MEAN.
  MeanFastKernel(std::unique_ptr<rt::OpKernel> ref, DType type, bool avx512, bool sum)
      : FastKernel(std::move(ref)), type_(type), avx512_(avx512 && (type == DType::kInt8 || type == DType::kUInt8)),
        sum_(sum) {}

 protected:
  std::string FastVariant() const override {
    return (sum_ ? "sum/" : "mean/") + TypeName(type_) + (avx512_ ? "/avx512" : "/avx2");
  }

  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    const rt::RtTensor& axis = *ctx.input(1);
    if (in.rank() < 1 || in.num_elements() == 0 || !axis.is_constant()) return false;
    if (!(in.quant && in.quant->scale.size() == 1 && out.quant && out.quant->scale.size() == 1)) return false;
    std::vector<int64_t> raw;
    RETURN_IF_ERROR(ReadIndexValues(ctx, axis, "axis", &raw));
    // The last axis alone (named once or more, as -1 or rank - 1): rows of its length.
    const int rank = in.rank();
    last_axis_ = !raw.empty() && std::all_of(raw.begin(), raw.end(), [&](int64_t a) { return a == -1 || a == rank - 1; });
    if (last_axis_) {
      p_ = QuantMeanParamsOf(in, out, in.dim(rank - 1));
      centered_ = false;
      sums_.assign(static_cast<size_t>(in.num_elements() / p_.count), 0);
      return true;
    }
    if (sum_ || in.rank() != 4) return false;
    bool reduced[4] = {false, false, false, false};
    for (int64_t a : raw) {
      if (a < -4 || a > 3) return false;
      reduced[a < 0 ? a + 4 : a] = true;
    }
    if (reduced[0] || !reduced[1] || !reduced[2] || reduced[3]) return false;
    const bool keep_dims = GetOptions<tflite::ReducerOptionsT>(ctx.op()).keep_dims;
    p_ = QuantMeanParamsOf(in, out, int64_t{in.dim(1)} * in.dim(2));
    p_.hw4d = keep_dims && raw.size() == 2 && ((raw[0] == 1 && raw[1] == 2) || (raw[0] == 2 && raw[1] == 1));
    batches_ = in.dim(0);
    channels_ = in.dim(3);
    // Signed types over H and W: the last step vectorized (FinishCenteredMean), with the
    // multiplier FinishQuantizedMean derives; an out-of-range one is left to it (its error).
    centered_ = false;
    if (p_.hw4d && type_ != DType::kUInt8) {
      CenteredMeanMultiplier(p_, &mult_, &shift_);
      centered_ = shift_ <= 30;
    }
    sums_.assign(static_cast<size_t>(batches_) * channels_, 0);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    switch (type_) {
      case DType::kInt8: return Run<int8_t>(ctx);
      case DType::kUInt8: return Run<uint8_t>(ctx);
      case DType::kInt16: return Run<int16_t>(ctx);
      default: return ctx.UnsupportedError(TypeName(type_) + " is not supported");
    }
  }

 private:
  template <typename T>
  Status Run(rt::KernelContext& ctx) {
    const T* x = ctx.input(0)->data_as<T>();
    if (last_axis_) {
      const int64_t rows = static_cast<int64_t>(sums_.size());
      for (int64_t r = 0; r < rows; ++r) sums_[r] = qconv::SumRow<T>(x + r * p_.count, p_.count, avx512_);
      if (sum_) {
        FinishQuantizedSum<T>(p_, sums_.data(), ctx.output(0)->data_as<T>(), rows);
        return Status::Ok();
      }
      return FinishQuantizedMean<T>(ctx, p_, sums_.data(), ctx.output(0)->data_as<T>(), rows);
    }
    for (int b = 0; b < batches_; ++b) {
      const T* xb = x + int64_t{b} * p_.count * channels_;
      int32_t* sb = sums_.data() + int64_t{b} * channels_;
      bool done = false;
      if constexpr (sizeof(T) == 1) done = avx512_ && qconv::SumPixelsAvx512<T>(xb, p_.count, channels_, sb);
      if (!done) qconv::SumPixels<T>(xb, p_.count, channels_, sb);
    }
    if constexpr (std::is_signed_v<T>) {
      if (centered_) {
        // Whole groups of 8 vectorized, the last 1-7 channels by the reference's own loop.
        const int64_t n = static_cast<int64_t>(sums_.size()), done = n / 8 * 8;
        T* y = ctx.output(0)->data_as<T>();
        const uint32_t centered_offset = static_cast<uint32_t>(p_.count) * static_cast<uint32_t>(p_.in_zp);
        qconv::FinishCenteredMean<T>(sums_.data(), done, centered_offset, mult_, shift_, p_.count, p_.out_zp, y);
        if (done == n) return Status::Ok();
        return FinishQuantizedMean<T>(ctx, p_, sums_.data() + done, y + done, n - done);
      }
    }
    return FinishQuantizedMean<T>(ctx, p_, sums_.data(), ctx.output(0)->data_as<T>(),
                                  static_cast<int64_t>(sums_.size()));
  }

  DType type_;
  bool avx512_;  // int8 / uint8 sums on AVX-512 BW (SumPixelsAvx512)
  bool sum_;     // SUM over the last axis
  QuantMeanParams p_;
  bool centered_ = false;  // FinishCenteredMean with mult_, shift_
  bool last_axis_ = false;  // MEAN over the last axis: sums_ holds one sum per row
  int32_t mult_ = 0;
  int shift_ = 0;
  int batches_ = 0, channels_ = 0;
  std::vector<int32_t> sums_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeMeanFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx2_fma()) return nullptr;
  const Tensor* in = cc.input(0);
  const Tensor* out = cc.output(0);
  if (!in || !out || out->type != in->type ||
      !(in->type == DType::kInt8 || in->type == DType::kUInt8 || in->type == DType::kInt16))
    return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  return std::make_unique<MeanFastKernel>(std::move(ref), in->type, cc.cpu.has_avx512(),
                                          cc.op.code == tflite::BuiltinOperator_SUM);
}

}  // namespace edgeopt::kernels
