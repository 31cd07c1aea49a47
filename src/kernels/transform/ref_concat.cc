// CONCATENATION and PACK: inputs laid side by side along an axis. Both are dtype-generic copies
// except CONCATENATION of quantized inputs whose (scale, zero point) differ from the output's:
// those inputs are requantized with TFLite 2.9's float formula (ConcatenationWithScaling):
//   q_out = clamp(int(round(q_in * s + b)) + zp_out),  s = in_scale * (1 / out_scale), b = -zp_in * s
// 2.9 applies it to uint8 only: it rejects int8 inputs with other params, and copies int16
// inputs unchanged whatever their scale (a 2.9 bug). edgeopt requantizes int8 and int16 with
// the same formula, so it differs from 2.9 only for int16 inputs whose scale differs from the
// output's. 2.9 also rejects fused activations on CONCATENATION; edgeopt accepts
// RELU/RELU6/RELU_N1_TO_1 (clamping after the copy) for float and quantized outputs.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/parallel.h"
#include "kernels/transform/concat_requant.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

bool IsQuantType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

template <typename T>
void ClampInPlace(T* p, int64_t n, T lo, T hi) {
  for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], lo), hi);
}

template <typename T>
void Requantize(const T* in, T* out, int64_t n, float in_scale, int32_t in_zp, float inverse_out_scale,
                int32_t out_zp) {
  const float scale = in_scale * inverse_out_scale;
  const float bias = -in_zp * scale;
  for (int64_t j = 0; j < n; ++j) {
    const int32_t v = static_cast<int32_t>(std::round(in[j] * scale + bias)) + out_zp;
    out[j] = static_cast<T>(std::max<int32_t>(std::min<int32_t>(QMax<T>(), v), QMin<T>()));
  }
}

// Requantized inputs go through `fast` (ConcatRequantizeAvx512 / Avx2, bit-exact with
// Requantize) when it is set; `isa` names it in the variant.
class ConcatKernel : public rt::OpKernel {
 public:
  ConcatKernel(ConcatRequantizeFn fast, std::string isa) : fast_(fast), isa_(std::move(isa)) {}

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1 << 20, 1));
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (!ctx.input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
    RETURN_IF_ERROR(CheckConstantInputsComplete(ctx));
    const auto& opts = GetOptions<tflite::ConcatenationOptionsT>(ctx.op());
    const rt::RtTensor& t0 = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, t0, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const int rank = t0.rank();
    RETURN_IF_ERROR(ResolveAxis(ctx, opts.axis, rank, "axis", &axis_));
    rt::Shape shape = t0.shape;
    int64_t axis_sum = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor& t = *ctx.input(i);
      if (t.type != t0.type)
        return ctx.Error("input " + std::to_string(i) + " is " + TypeName(t.type) + ", input 0 is " + TypeName(t0.type));
      if (t.rank() != rank)
        return ctx.Error("input " + std::to_string(i) + " " + rt::ShapeToString(t.shape) + " has another rank than input 0 " +
                         rt::ShapeToString(t0.shape));
      for (int d = 0; d < rank; ++d)
        if (d != axis_ && t.shape[d] != t0.shape[d])
          return ctx.Error("input " + std::to_string(i) + " " + rt::ShapeToString(t.shape) +
                           " does not match input 0 " + rt::ShapeToString(t0.shape) + " outside axis " +
                           std::to_string(axis_));
      axis_sum += t.shape[axis_];
    }
    if (axis_sum > std::numeric_limits<int32_t>::max()) return ctx.Error("concatenated axis is too large");
    shape[axis_] = static_cast<int32_t>(axis_sum);

    activation_ = opts.fused_activation_function;
    quantized_ = IsQuantType(t0.type) && out.quant && out.quant->has_scale();
    requantize_.assign(ctx.num_inputs(), 0);
    if (quantized_) {
      if (out.per_channel()) return ctx.UnsupportedError("per-axis quantized output is not supported");
      RETURN_IF_ERROR(CheckScale(ctx, out, "output"));
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const rt::RtTensor& t = *ctx.input(i);
        if (t.per_channel()) return ctx.UnsupportedError("per-axis quantized input " + std::to_string(i) + " is not supported");
        if (!(t.quant && t.quant->has_scale()))
          return ctx.Error("input " + std::to_string(i) + " has no quantization parameters but the output has");
        requantize_[i] = t.zero_point() != out.zero_point() || t.scale() != out.scale();
        if (requantize_[i]) RETURN_IF_ERROR(CheckScale(ctx, t, "input " + std::to_string(i)));
      }
      if (!QuantizedActivationRange(activation_, out, &act_min_, &act_max_))
        return ctx.UnsupportedError("fused activation " + std::to_string(activation_) + " is not supported");
    } else if (activation_ != tflite::ActivationFunctionType_NONE) {
      if (t0.type != DType::kFloat32 || !FloatActivationRange(activation_, &fact_min_, &fact_max_))
        return ctx.UnsupportedError("fused activation " + std::to_string(activation_) + " on " + TypeName(t0.type) +
                                    " is not supported");
    }
    const bool any_requantized = std::find(requantize_.begin(), requantize_.end(), 1) != requantize_.end();
    // Every input copied as it is in rows of 64 bytes or fewer: ConcatShortRowsAvx512.
    int64_t outer = 1, base_inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= shape[d];
    for (int d = axis_ + 1; d < rank; ++d) base_inner *= shape[d];
    short_rows_ = isa_ == "avx512" && !any_requantized && outer > 1;
    row_bytes_.clear();
    for (int i = 0; i < ctx.num_inputs() && short_rows_; ++i) {
      const int64_t bytes = ctx.input(i)->shape[axis_] * base_inner * static_cast<int64_t>(ElementBytes(t0.type));
      short_rows_ = bytes > 0 && bytes <= 64;
      row_bytes_.push_back(static_cast<int>(bytes));
    }
    srcs_.assign(static_cast<size_t>(ctx.num_inputs()), nullptr);
    variant_ = std::string("concatenation/") + (quantized_ ? TypeName(t0.type) : "any") +
               ((fast_ && any_requantized) || short_rows_ ? "/" + isa_ : std::string("/ref"));
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    rt::RtTensor& out = *ctx.output(0);
    const size_t elem = ElementBytes(out.type);
    int64_t outer = 1, base_inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= out.shape[d];
    for (int d = axis_ + 1; d < out.rank(); ++d) base_inner *= out.shape[d];
    const float inverse_out_scale = quantized_ ? 1.f / out.scale() : 0.f;
    int64_t row_out = 0;  // output elements per outer index
    for (int i = 0; i < ctx.num_inputs(); ++i) row_out += ctx.input(i)->shape[axis_] * base_inner;
    // Elements [begin, begin + n) of the output clamped to the fused activation's range.
    const auto clamp = [&](int64_t begin, int64_t n) {
      if (activation_ == tflite::ActivationFunctionType_NONE) return;
      switch (out.type) {
        case DType::kFloat32: ClampInPlace(out.data_as<float>() + begin, n, fact_min_, fact_max_); break;
        case DType::kUInt8:
          ClampInPlace(out.data_as<uint8_t>() + begin, n, static_cast<uint8_t>(act_min_), static_cast<uint8_t>(act_max_));
          break;
        case DType::kInt8:
          ClampInPlace(out.data_as<int8_t>() + begin, n, static_cast<int8_t>(act_min_), static_cast<int8_t>(act_max_));
          break;
        case DType::kInt16:
          ClampInPlace(out.data_as<int16_t>() + begin, n, static_cast<int16_t>(act_min_), static_cast<int16_t>(act_max_));
          break;
        default: break;
      }
    };
    if (short_rows_) {
      for (int i = 0; i < ctx.num_inputs(); ++i) srcs_[static_cast<size_t>(i)] = ctx.input(i)->data;
      ConcatShortRowsAvx512(srcs_.data(), row_bytes_.data(), ctx.num_inputs(), outer, out.data,
                            out.num_elements() * static_cast<int64_t>(elem));
      clamp(0, out.num_elements());
      return Status::Ok();
    }
    // Outer indices [k0, k1): each input's slices copied (or requantized) into place, clamped.
    const auto rows = [&](int64_t k0, int64_t k1) {
      uint8_t* dst = out.data + k0 * row_out * static_cast<int64_t>(elem);
      for (int64_t k = k0; k < k1; ++k) {
        for (int i = 0; i < ctx.num_inputs(); ++i) {
          const rt::RtTensor& t = *ctx.input(i);
          const int64_t n = t.shape[axis_] * base_inner;
          const uint8_t* src = t.data + k * n * static_cast<int64_t>(elem);
          if (requantize_[i] && fast_) {
            fast_(out.type, src, dst, n, t.scale(), t.zero_point(), inverse_out_scale, out.zero_point());
          } else if (requantize_[i]) {
            switch (out.type) {
              case DType::kUInt8:
                Requantize(src, dst, n, t.scale(), t.zero_point(), inverse_out_scale, out.zero_point());
                break;
              case DType::kInt8:
                Requantize(reinterpret_cast<const int8_t*>(src), reinterpret_cast<int8_t*>(dst), n, t.scale(),
                           t.zero_point(), inverse_out_scale, out.zero_point());
                break;
              default:
                Requantize(reinterpret_cast<const int16_t*>(src), reinterpret_cast<int16_t*>(dst), n, t.scale(),
                           t.zero_point(), inverse_out_scale, out.zero_point());
                break;
            }
          } else if (n > 0) {
            std::memcpy(dst, src, static_cast<size_t>(n) * elem);
          }
          dst += n * static_cast<int64_t>(elem);
        }
      }
      clamp(k0 * row_out, (k1 - k0) * row_out);
    };
    // Split over the outer indices (at least 64 KB of output per task): kernels cut their tasks
    // in output order and the pool hands each thread the same end of every op, so each thread
    // copies mostly rows its own core produced. DeepLabV3 at 2 threads: its 33×33×512
    // concatenation 0.34 -> 0.17 ms (0.05 ms at 1 thread), the model 0.971 of the time
    // (in-process A/B, alternated invokes, medians of 200 pairs).
    const int64_t row_bytes = std::max<int64_t>(1, row_out * static_cast<int64_t>(elem));
    const int64_t tasks = TaskCount(ctx.threads().num_threads(), outer, std::max<int64_t>(1, (int64_t{64} << 10) / row_bytes), 2);
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) { rows(outer * t / tasks, outer * (t + 1) / tasks); });
    return Status::Ok();
  }

  std::string variant() const override { return variant_; }

 private:
  ConcatRequantizeFn fast_;
  std::string isa_;
  int axis_ = 0;
  int activation_ = 0;
  bool quantized_ = false;
  std::vector<char> requantize_;
  bool short_rows_ = false;           // ConcatShortRowsAvx512 (Prepare)
  std::vector<int> row_bytes_;        // its row lengths per input
  std::vector<const uint8_t*> srcs_;  // its input pointers, set at each invoke
  int32_t act_min_ = 0, act_max_ = 0;
  float fact_min_ = 0, fact_max_ = 0;
  std::string variant_ = "concatenation/any/ref";
};

class PackKernel : public rt::OpKernel {
 public:
  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1 << 20, 1));
    RETURN_IF_ERROR(CheckConstantInputsComplete(ctx));
    const auto& opts = GetOptions<tflite::PackOptionsT>(ctx.op());
    if (opts.values_count != ctx.num_inputs())
      return ctx.Error("values_count is " + std::to_string(opts.values_count) + " but the op has " +
                       std::to_string(ctx.num_inputs()) + " inputs");
    const rt::RtTensor& t0 = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, t0, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor* t = ctx.input(i);
      if (!t) return ctx.Error("input " + std::to_string(i) + " is missing");
      if (t->type != t0.type || t->shape != t0.shape)
        return ctx.Error("input " + std::to_string(i) + " " + Describe(*t) + " differs from input 0 " + Describe(t0));
      if (IsQuantType(t->type) && out.quant && out.quant->has_scale() &&
          (t->scale() != out.scale() || t->zero_point() != out.zero_point()))
        return ctx.Error("input " + std::to_string(i) + " has other quantization parameters than the output");
    }
    RETURN_IF_ERROR(ResolveAxis(ctx, opts.axis, t0.rank() + 1, "axis", &axis_));
    rt::Shape shape = t0.shape;
    shape.insert(shape.begin() + axis_, ctx.num_inputs());
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& t0 = *ctx.input(0);
    const size_t elem = ElementBytes(t0.type);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= t0.shape[d];
    for (int d = axis_; d < t0.rank(); ++d) inner *= t0.shape[d];
    const size_t row = static_cast<size_t>(inner) * elem;
    uint8_t* dst = ctx.output(0)->data;
    for (int64_t k = 0; k < outer; ++k)
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        if (row) std::memcpy(dst, ctx.input(i)->data + k * row, row);
        dst += row;
      }
    return Status::Ok();
  }

  std::string variant() const override { return "pack/any/ref"; }

 private:
  int axis_ = 0;
};

}  // namespace

void RegisterConcatPack(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_CONCATENATION,
        [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
          ConcatRequantizeFn fast = nullptr;
          std::string isa;
          if (!cc.reference_only && cc.cpu.has_avx512()) {
            fast = ConcatRequantizeAvx512;
            isa = "avx512";
          } else if (!cc.reference_only && cc.cpu.has_avx2_fma()) {
            fast = ConcatRequantizeAvx2;
            isa = "avx2";
          }
          return std::unique_ptr<rt::OpKernel>(new ConcatKernel(fast, isa));
        });
  r.Add(tflite::BuiltinOperator_PACK, MakeKernelFactory<PackKernel>());
}

}  // namespace edgeopt::kernels::transform
