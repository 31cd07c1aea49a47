// SOFTMAX and LOG_SOFTMAX over the last dimension, as TFLite 2.9's built-in kernels:
// - float32: exp(beta * (x - max)) / sum; log-softmax x - max - log(sum).
// - int8/uint8 input (output int8/uint8/int16): a float table of exp(-in_scale*beta*d) for every
//   quantized distance d to the row maximum (built in Prepare); the row sum is accumulated in
//   float in order, and each probability is rounded to the output (uint8 by +0.5 truncation,
//   ignoring the zero point, exactly as 2.9's x86 build does).
// - int16 -> int16: 513-entry int16 tables for exp on [-10, 0] and 1/(1+x) on [0, 1] with
//   interpolation (LiteRT SoftmaxInt16), ranks 1-4 as in 2.9.
// - LOG_SOFTMAX int8/uint8: the same exp table, log of the float sum, rint to the output
//   (output scale 16/256, zero point 127 / 255).
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>

#include "kernels/activations/softmax_q.h"
#include "kernels/common/elementwise_util.h"
#include "kernels/common/fixed_point.h"
#include "kernels/common/lut.h"
#include "kernels/common/quant_utils.h"
#include "kernels/activations/ops.h"

namespace edgeopt::kernels::activations {
namespace {

double ExpD(double x) { return std::exp(x); }
double OneOverOnePlusX(double x) { return 1.0 / (1.0 + x); }

class SoftmaxKernel : public rt::OpKernel {
 public:
  // fast: 8-bit and int16 SOFTMAX rows on AVX-512 (softmax_q.h), outside the reference mode.
  SoftmaxKernel(bool log, DType in_type, DType out_type, bool fast = false)
      : log_(log), in_type_(in_type), out_type_(out_type),
        fast_(fast && !log && (in_type == DType::kInt8 || in_type == DType::kUInt8)),
        fast16_allowed_(fast && !log && in_type == DType::kInt16) {}

  std::string variant() const override {
    std::string v = std::string(log_ ? "log_softmax/" : "softmax/") + TypeName(in_type_);
    if (out_type_ != in_type_) {
      v += '_';
      v += TypeName(out_type_);
    }
    v += fast_ || fast16_ ? "/avx512" : "/ref";
    return v;
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    const rt::RtTensor* out = ctx.output(0);
    if (in->rank() < 1) return ctx.Error("input must have at least one dimension, got " + Describe(*in));
    beta_ = log_ ? 1.0f : GetOptions<tflite::SoftmaxOptionsT>(ctx.op()).beta;
    if (in_type_ != DType::kFloat32) {
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *in, "input"));
      RETURN_IF_ERROR(RequirePerTensorQuant(ctx, *out, "output"));
    }
    if (log_ && in_type_ != DType::kFloat32) {
      if (static_cast<double>(out->scale()) != 16.0 / 256)
        return ctx.Error("output scale must be 16/256, got " + std::to_string(out->scale()));
      const int want_zp = in_type_ == DType::kUInt8 ? 255 : 127;
      if (out->zero_point() != want_zp)
        return ctx.Error("output zero point must be " + std::to_string(want_zp) + ", got " + std::to_string(out->zero_point()));
    }
    if (!log_ && in_type_ == DType::kInt8 && out_type_ == DType::kInt8) {
      if (out->zero_point() != -128) return ctx.Error("int8 output zero point must be -128");
      if (std::fabs(out->scale() - 1.f / 256) > 0.001f * 1.f / 256) return ctx.Error("int8 output scale must be 1/256");
    }
    if (in_type_ == DType::kInt16) {
      if (in->zero_point() != 0 || out->zero_point() != 0) return ctx.Error("int16 input and output must have zero point 0");
      if (std::fabs(out->scale() - 1.f / 32768) > 0.001f * 1.f / 32768) return ctx.Error("int16 output scale must be 1/32768");
      if (in->rank() > 4) return ctx.Error("int16 input must have 1 to 4 dimensions, got " + Describe(*in));
      BuildInt16Lut(ExpD, -10.0, 0.0, -1.0, 1.0, exp_lut_.data());
      BuildInt16Lut(OneOverOnePlusX, 0.0, 1.0, -1.0, 1.0, one_over_lut_.data());
      // Scales input differences so that [-65535, 0] covers [-10, 0].
      const double rescale = static_cast<double>(in->scale()) * beta_ / (10.0 / 65535.0);
      QuantizeMultiplier(rescale, &int16_multiplier_, &int16_shift_);
      // The AVX-512 rows: rows whose int32 sum of exps cannot wrap (at most 65536 values of
      // 32767) and a rescale whose left shift keeps a difference of -65535 within int32.
      fast16_ = fast16_allowed_ && in->shape.back() <= 65536 && int16_multiplier_ >= 0 &&
                int16_shift_ <= kSoftmax16MaxShift;
    } else if (in_type_ != DType::kFloat32) {
      const float scale = -in->scale() * beta_;
      for (int32_t v = 0; v <= 255; ++v) table_[255 - v] = std::exp(scale * static_cast<float>(v));
      in_scale_ = in->scale();
      out_scale_ = out->scale();
      out_zp_ = out->zero_point();
    }
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const int64_t depth = in.shape.back();
    const int64_t outer = depth ? in.num_elements() / depth : 0;
    if (in_type_ == DType::kFloat32) {
      Float(in.data_as<float>(), out.data_as<float>(), outer, depth);
    } else if (in_type_ == DType::kInt16) {
      const int16_t* x = in.data_as<int16_t>();
      int16_t* y = out.data_as<int16_t>();
      if (fast16_) {
        SplitRows(ctx, outer, depth, [&](int64_t r0, int64_t r1) {
          SoftmaxInt16RowsAvx512(x + r0 * depth, y + r0 * depth, r1 - r0, depth, exp_lut_.data(), one_over_lut_.data(),
                                 int16_multiplier_, int16_shift_);
        });
      } else {
        Int16(x, y, outer, depth);
      }
    } else if (in_type_ == DType::kUInt8) {
      Dispatch<uint8_t>(ctx, in, out, outer, depth);
    } else {
      Dispatch<int8_t>(ctx, in, out, outer, depth);
    }
    return Status::Ok();
  }

 private:
  void Float(const float* x, float* y, int64_t outer, int64_t depth) const {
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      float max = std::numeric_limits<float>::lowest();
      for (int64_t j = 0; j < depth; ++j) max = std::max(max, x[j]);
      if (log_) {
        float sum = 0.f;
        for (int64_t j = 0; j < depth; ++j) sum += std::exp(x[j] - max);
        const float log_sum = std::log(sum);
        for (int64_t j = 0; j < depth; ++j) y[j] = x[j] - max - log_sum;
      } else {
        float sum = 0.f;
        for (int64_t j = 0; j < depth; ++j) {
          y[j] = std::exp((x[j] - max) * beta_);
          sum += y[j];
        }
        const float inv = 1.f / sum;
        for (int64_t j = 0; j < depth; ++j) y[j] *= inv;
      }
    }
  }

  // The fast paths' rows split over the threads (rows are independent; each still adds its own
  // values in order): fn(r0, r1) for pieces of at least ~4096 values.
  template <typename Fn>
  static void SplitRows(rt::KernelContext& ctx, int64_t rows, int64_t depth, const Fn& fn) {
    ctx.threads().ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, depth)), fn);
  }

  template <typename In>
  void Dispatch(rt::KernelContext& ctx, const rt::RtTensor& in, rt::RtTensor& out, int64_t outer, int64_t depth) const {
    if (log_) return LogQuantized<In>(in.data_as<In>(), out.data_as<In>(), outer, depth);
    switch (out_type_) {
      case DType::kUInt8: return Quantized<In, uint8_t>(ctx, in.data_as<In>(), out.data_as<uint8_t>(), outer, depth);
      case DType::kInt8: return Quantized<In, int8_t>(ctx, in.data_as<In>(), out.data_as<int8_t>(), outer, depth);
      default: return Quantized<In, int16_t>(ctx, in.data_as<In>(), out.data_as<int16_t>(), outer, depth);
    }
  }

  template <typename In, typename Out>
  void Quantized(rt::KernelContext& ctx, const In* x, Out* y, int64_t outer, int64_t depth) const {
    if (fast_) {
      SplitRows(ctx, outer, depth, [&](int64_t r0, int64_t r1) {
        SoftmaxQuantRowsAvx512<In, Out>(x + r0 * depth, y + r0 * depth, r1 - r0, depth, table_, out_scale_, out_zp_);
      });
      return;
    }
    const int32_t clamp_max = std::numeric_limits<Out>::max(), clamp_min = std::numeric_limits<Out>::min();
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      int32_t max_val = std::numeric_limits<In>::min();
      for (int64_t j = 0; j < depth; ++j) max_val = std::max(max_val, static_cast<int32_t>(x[j]));
      const float* table_offset = &table_[255 - max_val];
      float sum_exp = 0.0f;
      for (int64_t j = 0; j < depth; ++j) sum_exp += table_offset[x[j]];
      const float inv_sum_exp = 1.0f / (sum_exp * out_scale_);
      for (int64_t j = 0; j < depth; ++j) {
        // At most 1 / out_scale (sum_exp >= 1): the cap only keeps a degenerate output scale
        // from overflowing the conversion (the clamp below gives the same result).
        const float prob_rescaled = std::min(table_offset[x[j]] * inv_sum_exp, 1073741824.0f);
        int32_t q;
        if constexpr (std::is_same_v<Out, uint8_t>) {
          q = static_cast<int32_t>(prob_rescaled + 0.5f);
        } else {
          q = RoundNonNegative(prob_rescaled) + out_zp_;  // std::round, without the library call
        }
        y[j] = static_cast<Out>(std::max(std::min(clamp_max, q), clamp_min));
      }
    }
  }

  template <typename T>
  void LogQuantized(const T* x, T* y, int64_t outer, int64_t depth) const {
    const int32_t clamp_max = std::numeric_limits<T>::max(), clamp_min = std::numeric_limits<T>::min();
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      T max_val = std::numeric_limits<T>::min();
      for (int64_t j = 0; j < depth; ++j) max_val = std::max(max_val, x[j]);
      const float* table_offset = &table_[255 - max_val];
      float sum_exp = 0.0f;
      for (int64_t j = 0; j < depth; ++j) sum_exp += table_offset[x[j]];
      const float log_sum_exp = std::log(sum_exp);
      const float scale = in_scale_ / out_scale_;
      const float precomputed = (in_scale_ * static_cast<float>(max_val) + log_sum_exp) / out_scale_;
      for (int64_t j = 0; j < depth; ++j) {
        const float log_prob = scale * static_cast<float>(x[j]) - precomputed;
        const int32_t q = TruncateToInt32(std::rint(log_prob) + static_cast<float>(out_zp_));
        y[j] = static_cast<T>(std::max(std::min(clamp_max, q), clamp_min));
      }
    }
  }

  void Int16(const int16_t* x, int16_t* y, int64_t outer, int64_t depth) const {
    for (int64_t i = 0; i < outer; ++i, x += depth, y += depth) {
      int16_t max_in_row = std::numeric_limits<int16_t>::min();
      for (int64_t j = 0; j < depth; ++j) max_in_row = std::max(max_in_row, x[j]);
      int32_t sum_of_exps = 0;  // Q16.15
      // Exp values are recomputed in the second pass instead of stored (no allocation here).
      auto exp_q015 = [&](int16_t v) {
        const int32_t input_diff = v - max_in_row;
        const int32_t scaled_diff = MultiplyByQuantizedMultiplier(input_diff, int16_multiplier_, int16_shift_);
        const int32_t sym_scaled_diff = scaled_diff + 32767;
        const auto sat = static_cast<int16_t>(std::min(std::max(sym_scaled_diff, -32768), 32767));
        return Int16LutLookup(sat, exp_lut_.data());
      };
      for (int64_t j = 0; j < depth; ++j) sum_of_exps += exp_q015(x[j]);
      const int headroom_plus_one = fp::CountLeadingZeros32(static_cast<uint32_t>(sum_of_exps));
      const auto shifted_sum =
          static_cast<int32_t>(((static_cast<int64_t>(sum_of_exps) << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
      // 1/(1+x) needs x = sum - 1, recentred from [0, 65535] to [-32768, 32767].
      const int32_t sym_shifted_sum = shifted_sum + (-((1 << 15) + (1 << 16)));
      const auto sat_sum = static_cast<int16_t>(std::min(std::max(sym_shifted_sum, -32768), 32767));
      const int16_t reciprocal_q015 = Int16LutLookup(sat_sum, one_over_lut_.data());
      const int right_shift = 31 - headroom_plus_one;
      const int64_t round = int64_t{1} << (right_shift - 1);
      for (int64_t j = 0; j < depth; ++j) {
        const auto result = static_cast<int32_t>(
            (static_cast<int64_t>(exp_q015(x[j])) * static_cast<int64_t>(reciprocal_q015) + round) >> right_shift);
        y[j] = static_cast<int16_t>(std::min(std::max(result, 0), 32767));
      }
    }
  }

  bool log_;
  DType in_type_, out_type_;
  bool fast_ = false;
  bool fast16_allowed_ = false, fast16_ = false;  // int16 rows on AVX-512 (allowed; chosen at Prepare)
  float beta_ = 1.0f;
  float table_[256] = {};
  float in_scale_ = 0, out_scale_ = 0;
  int32_t out_zp_ = 0;
  std::array<int16_t, kInt16LutSize> exp_lut_{}, one_over_lut_{};
  int32_t int16_multiplier_ = 0;
  int int16_shift_ = 0;
};

rt::KernelFactory MakeFactory(bool log) {
  return [log](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    const Tensor* in = cc.input(0);
    const Tensor* out = cc.output(0);
    if (!in || !out) return cc.Error("expects one input and one output");
    const DType it = in->type, ot = out->type;
    bool ok;
    if (log) {
      ok = TypeIn(it, {DType::kFloat32, DType::kUInt8, DType::kInt8}) && ot == it;
    } else if (it == DType::kUInt8 || it == DType::kInt8) {
      ok = ot == it || ot == DType::kInt16;
    } else {
      ok = (it == DType::kFloat32 || it == DType::kInt16) && ot == it;
    }
    if (!ok)
      return cc.Error("input " + TypeName(it) + " with output " + TypeName(ot) + " is not supported (supported: " +
                      (log ? std::string("float32, uint8 and int8, output of the input type")
                           : std::string("float32->float32, uint8->uint8/int16, int8->int8/int16, int16->int16")) +
                      ")");
    return std::unique_ptr<rt::OpKernel>(new SoftmaxKernel(log, it, ot, !cc.reference_only && cc.cpu.has_avx512()));
  };
}

}  // namespace

void RegisterSoftmax(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SOFTMAX, MakeFactory(false));
  r.Add(tflite::BuiltinOperator_LOG_SOFTMAX, MakeFactory(true));
}

}  // namespace edgeopt::kernels::activations
