// MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL with TFLite 2.9
// semantics. Axes: int32/int64 tensor, negative values count from the end, duplicates are
// ignored, a scalar input ignores them; keep_dims keeps reduced dims as 1. Inputs are visited in
// row-major order and accumulated per output, as TFLite's reference Reduce does, so float sums
// match bit for bit where TFLite uses that loop.
//
// Quantized arithmetic (2.9 on x86 runs the reference MEAN/SUM/PROD kernels):
//  MEAN int8/int16/uint8
//   - keep_dims, rank 4, axis tensor exactly {1,2} or {2,1}: the dedicated 4-D kernels.
//     uint8: acc = sum(q); MBQM(acc, QuantizeMultiplier(float(in_s / (n * out_s)))) + bias,
//            bias = out_zp - int(round-away(in_zp * in_s / out_s)) computed in float.
//     int8/int16: acc = sum(q - in_zp); MBQM(acc, QuantizeMultiplier(double(in_s)/out_s));
//            divide by n rounding half away from zero; + out_zp.
//   - same scale and zero point: trunc(sum(q) / n) in int32.
//   - otherwise float: round(float(sum(q)) / n * s + (-in_zp * s)) + out_zp, s = in_s / out_s.
//  SUM int8/uint8 with other output params: round(sum(q) * s + (-in_zp * s * n)) + out_zp, cast
//   to the type WITHOUT saturation (2.9 wraps); same params: modular sum in the type.
//  REDUCE_PROD int8/int16 quantized: running product rescaled by
//   QuantizeMultiplier(in_s / out_s^(1/n)) after every multiplication and once at the end.
//  MEAN of an empty input: quiet NaN cast to the type (0 for integers), as 2.9.
// Extensions beyond 2.9 (which rejects or mishandles these): int64 axis tensors; more than 4
// axis entries (2.9's MEAN overflows a 4-entry array); SUM int16 with other output params uses
// the SUM formula above; REDUCE_MAX/MIN with other output params pick the extreme in the input
// encoding, then round((q - in_zp) * in_s / out_s) + out_zp; quantized uint8 REDUCE_PROD uses
// the int8 algorithm.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/quant_utils.h"
#include "kernels/reduce/quant_mean.h"
#include "kernels/reduce/reduce_fast.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

enum class ReduceOp { kMean, kSum, kProd, kMax, kMin, kAny, kAll };

const char* OpLabel(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "reduce_prod";
    case ReduceOp::kMax: return "reduce_max";
    case ReduceOp::kMin: return "reduce_min";
    case ReduceOp::kAny: return "reduce_any";
    default: return "reduce_all";
  }
}

bool IsQuantType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

// Fixed-point multipliers beyond 2^max_shift mean absurd scale ratios (and undefined shifts).
Status CheckShift(const rt::KernelContext& ctx, int shift, int max_shift) {
  if (shift > max_shift) return ctx.Error("input/output scale ratio is out of range");
  return Status::Ok();
}

// Two's-complement add/multiply (TFLite's integer reductions wrap; signed overflow must not be
// undefined behaviour here).
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// Visits the input's innermost rows in row-major order: row(i, o) for the inner-dimension
// elements [i, i + inner) of each row, o the output index of its first element (the next ones
// are out_stride.back() apart). The input has rank >= 1 and no zero dimension.
template <typename Row>
void ForEachInnerRow(const rt::Shape& in_shape, const std::vector<int64_t>& out_stride, Row&& row) {
  const int rank = static_cast<int>(in_shape.size());
  const int64_t total = rt::NumElements(in_shape);
  DimBuffer<int32_t> idx(rank, 0);
  int64_t out = 0;
  const int32_t inner = in_shape[rank - 1];
  for (int64_t i = 0; i < total; i += inner) {
    row(i, out);
    for (int d = rank - 2; d >= 0; --d) {
      out += out_stride[d];
      if (++idx[d] < in_shape[d]) break;
      out -= out_stride[d] * in_shape[d];
      idx[d] = 0;
    }
  }
}

// Visits the input in row-major order: fn(input_index, output_index).
template <typename F>
void ForEachInput(const rt::Shape& in_shape, const std::vector<int64_t>& out_stride, F&& fn) {
  if (rt::NumElements(in_shape) == 0) return;
  if (in_shape.empty()) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  const int32_t inner = in_shape.back();
  const int64_t inner_stride = out_stride.back();
  ForEachInnerRow(in_shape, out_stride, [&](int64_t i, int64_t o) {
    for (int32_t k = 0; k < inner; ++k) fn(i + k, o + k * inner_stride);
  });
}

// out[k] = f(out[k], in[k]) for k < n: non-aliasing parameters, so that the loop vectorizes.
template <typename A, typename T, typename F>
void CombineRow(A* __restrict out, const T* __restrict in, int64_t n, F f) {
  for (int64_t k = 0; k < n; ++k) out[k] = f(out[k], in[k]);
}

// As ForEachInput, for combines that can take a whole innermost row at once: when the last
// dimension is kept (output stride 1), row(i, o, n) gets n consecutive inputs from i that go to
// n consecutive outputs from o, so that its loop vectorizes; each output still receives its
// inputs in row-major order. Otherwise one(i, o) per input as ForEachInput.
template <typename Row, typename One>
void ForEachInputRow(const rt::Shape& in_shape, const std::vector<int64_t>& out_stride, Row&& row, One&& one) {
  if (in_shape.empty() || out_stride.back() != 1) return ForEachInput(in_shape, out_stride, one);
  if (rt::NumElements(in_shape) == 0) return;
  const int32_t inner = in_shape.back();
  ForEachInnerRow(in_shape, out_stride, [&](int64_t i, int64_t o) { row(i, o, inner); });
}

class ReduceKernel : public PlannedKernel {
 public:
  // fast: float32 SUM / MEAN / REDUCE_MAX / REDUCE_MIN over a run of dimensions may take the AVX-512 loops.
  explicit ReduceKernel(ReduceOp op, bool fast = false)
      : PlannedKernel(std::string(OpLabel(op)) + "/any/ref", {1}), op_(op), fast_(fast) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    const DType t = in.type;
    const bool logic = op_ == ReduceOp::kAny || op_ == ReduceOp::kAll;
    bool ok;
    if (logic) {
      ok = t == DType::kBool;
    } else {
      ok = t == DType::kFloat32 || t == DType::kInt32 || t == DType::kInt64 || IsQuantType(t);
    }
    if (!ok) return ctx.UnsupportedError("input of type " + TypeName(t) + " is not supported");
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const rt::RtTensor& axis = *ctx.input(1);
    if (axis.type != DType::kInt32 && axis.type != DType::kInt64)
      return ctx.Error("axis must be int32 or int64, is " + TypeName(axis.type));
    if (axis.rank() > 1) return ctx.Error("axis must be a scalar or 1-D, is " + rt::ShapeToString(axis.shape));
    quantized_ = IsQuantType(t) && in.quant && in.quant->has_scale();
    if (quantized_ && !(out.quant && out.quant->has_scale()))
      return ctx.Error("quantized input needs a quantized output");
    if (quantized_ && (in.per_channel() || out.per_channel()))
      return ctx.UnsupportedError("per-axis quantization is not supported");
    if (quantized_) {
      RETURN_IF_ERROR(CheckScale(ctx, in, "input"));
      RETURN_IF_ERROR(CheckScale(ctx, out, "output"));
    }
    same_params_ = !quantized_ || (in.scale() == out.scale() && in.zero_point() == out.zero_point());
    set_variant(std::string(OpLabel(op_)) + "/" + TypeName(t) + "/ref");
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const auto& opts = GetOptions<tflite::ReducerOptionsT>(ctx.op());
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "axis", &raw_axes_));
    const int rank = in.rank();
    reduced_.assign(rank, 0);
    if (rank > 0)
      for (int64_t a : raw_axes_) {
        int r = 0;
        RETURN_IF_ERROR(ResolveAxis(ctx, a, rank, "axis", &r));
        reduced_[r] = 1;
      }
    rt::Shape out_shape;
    for (int d = 0; d < rank; ++d) {
      if (!reduced_[d]) {
        out_shape.push_back(in.shape[d]);
      } else if (opts.keep_dims) {
        out_shape.push_back(1);
      }
    }
    // Output strides per input dimension (0 on reduced dimensions).
    out_stride_.assign(rank, 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d)
      if (!reduced_[d]) {
        out_stride_[d] = s;
        s *= in.shape[d];
      }
    reduced_count_ = 1;
    for (int d = 0; d < rank; ++d)
      if (reduced_[d]) reduced_count_ *= in.shape[d];
    keep_dims_ = opts.keep_dims;
    in_shape_ = in.shape;
    in_rank_ = rank;
    PlanMiddle(in);
    // Accumulators live in the kernel, sized here (Prepare) so Invoke does not allocate.
    const size_t n_out = static_cast<size_t>(rt::NumElements(out_shape));
    if (in.type == DType::kFloat32) accf_.resize(n_out);
    if (in.type == DType::kInt32 || in.type == DType::kInt64) acc64_.resize(n_out);
    if (IsQuantType(in.type)) {
      acc32_.resize(n_out);
      started_.resize(n_out);
    }
    return ctx.SetOutputShape(0, std::move(out_shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    switch (in.type) {
      case DType::kFloat32: return RunTyped<float>(ctx);
      case DType::kInt32: return RunTyped<int32_t>(ctx);
      case DType::kInt64: return RunTyped<int64_t>(ctx);
      case DType::kInt8: return RunTyped<int8_t>(ctx);
      case DType::kUInt8: return RunTyped<uint8_t>(ctx);
      case DType::kInt16: return RunTyped<int16_t>(ctx);
      case DType::kBool: return RunLogic(ctx);
      default: return ctx.UnsupportedError("unsupported type");
    }
  }

 private:
  template <typename T>
  Status RunTyped(rt::KernelContext& ctx) {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const T* x = in.data_as<T>();
    T* y = out.data_as<T>();
    const int64_t n_out = out.num_elements();
    const int64_t n_in = in.num_elements();
    switch (op_) {
      case ReduceOp::kMean:
        if (n_in == 0) {
          // TFLite fills the output with quiet NaN cast to the type (0 for integers).
          for (int64_t i = 0; i < n_out; ++i) y[i] = std::numeric_limits<T>::quiet_NaN();
          return Status::Ok();
        }
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
          if (quantized_) return QuantizedMean<T>(ctx, x, y, n_out);
        }
        if constexpr (std::is_same_v<T, float>) {
          if (middle_) return FastFloat(ReduceCombine::kAdd, 0.0f, x, y, static_cast<float>(reduced_count_));
        }
        return PlainMean<T>(x, y, n_out);
      case ReduceOp::kSum:
        if constexpr (std::is_same_v<T, float>) {
          if (middle_) return FastFloat(ReduceCombine::kAdd, 0.0f, x, y, 0.0f);
        }
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
          if (quantized_ && !same_params_) return RescaledSum<T>(ctx, x, y, n_out);
        }
        return Accumulate<T>(x, y, n_out, T(0), [](T acc, T v) { return WrapAdd<T>(v, acc); });
      case ReduceOp::kProd:
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
          if (quantized_) return QuantizedProd<T>(ctx, x, y, n_out);
        }
        return Accumulate<T>(x, y, n_out, T(1), [](T acc, T v) { return WrapMul<T>(v, acc); });
      case ReduceOp::kMax:
      case ReduceOp::kMin: {
        const bool is_max = op_ == ReduceOp::kMax;
        if constexpr (std::is_same_v<T, float>) {
          if (middle_)
            return FastFloat(is_max ? ReduceCombine::kMax : ReduceCombine::kMin,
                             is_max ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max(), x, y, 0.0f);
        }
        RETURN_IF_ERROR(Accumulate<T>(x, y, n_out, is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max(),
                                      is_max ? +[](T acc, T v) { return v > acc ? v : acc; }
                                             : +[](T acc, T v) { return v < acc ? v : acc; }));
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
          if (quantized_ && !same_params_) Requantize<T>(ctx, y, n_out);
        }
        return Status::Ok();
      }
      default:
        return ctx.UnsupportedError("unsupported reduction");
    }
  }

  // y = init; y[o] = f(y[o], x[i]) in input order.
  template <typename T, typename F>
  Status Accumulate(const T* x, T* y, int64_t n_out, T init, F f) {
    for (int64_t i = 0; i < n_out; ++i) y[i] = init;
    ForEachInputRow(
        in_shape_, out_stride_,
        [&](int64_t i, int64_t o, int64_t n) { CombineRow(y + o, x + i, n, f); },
        [&](int64_t i, int64_t o) { y[o] = f(y[o], x[i]); });
    return Status::Ok();
  }

  template <typename T>
  Status PlainMean(const T* x, T* y, int64_t n_out) {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, float,
                                   std::conditional_t<(sizeof(T) >= 4), int64_t, int32_t>>;
    Acc* acc = Accumulator<Acc>();
    std::fill(acc, acc + n_out, Acc(0));
    ForEachInputRow(
        in_shape_, out_stride_,
        [&](int64_t i, int64_t o, int64_t n) {
          CombineRow(acc + o, x + i, n, [](Acc a, T v) { return WrapAdd<Acc>(a, static_cast<Acc>(v)); });
        },
        [&](int64_t i, int64_t o) { acc[o] = WrapAdd<Acc>(acc[o], static_cast<Acc>(x[i])); });
    for (int64_t o = 0; o < n_out; ++o) y[o] = static_cast<T>(acc[o] / static_cast<Acc>(reduced_count_));
    return Status::Ok();
  }

  Status FastFloat(ReduceCombine op, float init, const float* x, float* y, float divisor) const {
    if (mid_c_ == 1) ReduceTrailingF32Avx512(op, init, x, y, mid_outer_, mid_rows_, divisor);
    else ReduceMiddleF32Avx512(op, init, x, y, mid_outer_, mid_rows_, mid_c_, divisor);
    return Status::Ok();
  }

  // The fast float loops: SUM / MEAN / REDUCE_MAX / REDUCE_MIN whose reduced dimensions are one contiguous run with at
  // least 16 kept values after it ([outer, rows, c] with c >= 16), or none after it (c = 1:
  // trailing rows, e.g. a layer norm's mean), and no empty dimension.
  void PlanMiddle(const rt::RtTensor& in) {
    middle_ = false;
    if (!fast_ || in.type != DType::kFloat32 ||
        (op_ != ReduceOp::kMean && op_ != ReduceOp::kSum && op_ != ReduceOp::kMax && op_ != ReduceOp::kMin))
      return;
    const int rank = in.rank();
    int first = -1, last = -1;
    for (int d = 0; d < rank; ++d)
      if (reduced_[d]) {
        if (first < 0) first = d;
        last = d;
      }
    if (first < 0 || rt::NumElements(in.shape) == 0) return;
    int64_t outer = 1, rows = 1, c = 1;
    for (int d = 0; d < rank; ++d) {
      if (d >= first && d <= last && !reduced_[d]) return;  // a kept dimension between reduced ones
      (d < first ? outer : d <= last ? rows : c) *= in.shape[d];
    }
    if (c != 1 && c < 16) return;
    middle_ = true;
    mid_outer_ = outer;
    mid_rows_ = rows;
    mid_c_ = c;
    set_variant(std::string(OpLabel(op_)) + "/float32/avx512");
  }

  bool IsMean4dHW() const {
    return keep_dims_ && in_rank_ == 4 && raw_axes_.size() == 2 &&
           ((raw_axes_[0] == 1 && raw_axes_[1] == 2) || (raw_axes_[0] == 2 && raw_axes_[1] == 1));
  }

  template <typename T>
  Status QuantizedMean(rt::KernelContext& ctx, const T* x, T* y, int64_t n_out) {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    int32_t* acc = Accumulator<int32_t>();
    std::fill(acc, acc + n_out, 0);
    ForEachInput(in.shape, out_stride_, [&](int64_t i, int64_t o) { acc[o] = WrapAdd<int32_t>(acc[o], x[i]); });
    QuantMeanParams p = QuantMeanParamsOf(in, out, reduced_count_);
    p.hw4d = IsMean4dHW();
    p.same_params = same_params_;
    return FinishQuantizedMean<T>(ctx, p, acc, y, n_out);
  }

  template <typename T>
  Status RescaledSum(rt::KernelContext& ctx, const T* x, T* y, int64_t n_out) {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    int32_t* acc = Accumulator<int32_t>();
    std::fill(acc, acc + n_out, 0);
    ForEachInput(in.shape, out_stride_, [&](int64_t i, int64_t o) { acc[o] = WrapAdd<int32_t>(acc[o], x[i]); });
    const QuantMeanParams p = QuantMeanParamsOf(in, out, reduced_count_);
    FinishQuantizedSum<T>(p, acc, y, n_out);
    return Status::Ok();
  }

  template <typename T>
  Status QuantizedProd(rt::KernelContext& ctx, const T* x, T* y, int64_t n_out) {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    const int64_t n_in = in.num_elements();
    if (n_in == 0 || n_out == 0) return Status::Ok();  // 2.9 leaves the output untouched
    const int reduced_size = static_cast<int>(n_in / n_out);
    const double scaling =
        static_cast<double>(in.scale()) / std::pow(static_cast<double>(out.scale()), 1.0 / reduced_size);
    int32_t mult;
    int shift;
    QuantizeMultiplier(scaling, &mult, &shift);
    RETURN_IF_ERROR(CheckShift(ctx, shift, 7));  // the 64-bit multiply's range (as TFLite asserts)
    const int32_t in_zp = in.zero_point();
    int32_t* acc = Accumulator<int32_t>();
    char* started = started_.data();
    std::fill(acc, acc + n_out, 0);
    std::fill(started, started + n_out, 0);
    ForEachInput(in.shape, out_stride_, [&](int64_t i, int64_t o) {
      const int32_t v = x[i] - in_zp;
      if (!started[o]) {
        acc[o] = v;
        started[o] = 1;
      } else {
        acc[o] = MultiplyByQuantizedMultiplier(static_cast<int64_t>(acc[o]) * v, mult, shift);
      }
    });
    for (int64_t o = 0; o < n_out; ++o) {
      const int32_t v = MultiplyByQuantizedMultiplier(static_cast<int64_t>(acc[o]), mult, shift) + out.zero_point();
      y[o] = static_cast<T>(std::min(std::max(v, QMin<T>()), QMax<T>()));
    }
    return Status::Ok();
  }

  // Max/min picked in the input's quantization, re-expressed in the output's.
  template <typename T>
  void Requantize(rt::KernelContext& ctx, T* y, int64_t n) {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    const float scale = in.scale() / out.scale();
    for (int64_t o = 0; o < n; ++o) {
      const float v = std::round((y[o] - in.zero_point()) * scale) + out.zero_point();
      y[o] = static_cast<T>(std::min(std::max(v, static_cast<float>(QMin<T>())), static_cast<float>(QMax<T>())));
    }
  }

  Status RunLogic(rt::KernelContext& ctx) {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const bool any = op_ == ReduceOp::kAny;
    const int64_t n_out = out.num_elements();
    for (int64_t o = 0; o < n_out; ++o) out.data[o] = any ? 0 : 1;
    ForEachInput(in.shape, out_stride_, [&](int64_t i, int64_t o) {
      const bool v = in.data[i] != 0;
      out.data[o] = any ? (out.data[o] || v) : (out.data[o] && v);
    });
    return Status::Ok();
  }

  template <typename Acc>
  Acc* Accumulator() {
    if constexpr (std::is_same_v<Acc, float>) {
      return accf_.data();
    } else if constexpr (std::is_same_v<Acc, int64_t>) {
      return acc64_.data();
    } else {
      return acc32_.data();
    }
  }

  ReduceOp op_;
  bool fast_ = false;
  bool middle_ = false;  // PlanMiddle: the AVX-512 loop over [mid_outer_, mid_rows_, mid_c_]
  int64_t mid_outer_ = 0, mid_rows_ = 0, mid_c_ = 0;
  std::vector<float> accf_;
  std::vector<int64_t> acc64_;
  std::vector<int32_t> acc32_;
  std::vector<char> started_;
  bool quantized_ = false;
  bool same_params_ = true;
  bool keep_dims_ = false;
  int in_rank_ = 0;
  std::vector<int64_t> raw_axes_;
  std::vector<char> reduced_;
  std::vector<int64_t> out_stride_;
  int64_t reduced_count_ = 1;
  rt::Shape in_shape_;
};

}  // namespace

void RegisterReduceKernels(rt::OpRegistry& r) {
  for (auto [code, op] : {std::pair{tflite::BuiltinOperator_MEAN, ReduceOp::kMean}, std::pair{tflite::BuiltinOperator_SUM, ReduceOp::kSum},
                          std::pair{tflite::BuiltinOperator_REDUCE_MAX, ReduceOp::kMax},
                          std::pair{tflite::BuiltinOperator_REDUCE_MIN, ReduceOp::kMin}})
    r.Add(code, [op](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
      return std::unique_ptr<rt::OpKernel>(new ReduceKernel(op, !cc.reference_only && cc.cpu.has_avx512()));
    });
  r.Add(tflite::BuiltinOperator_REDUCE_PROD, MakeKernelFactory<ReduceKernel>(ReduceOp::kProd));
  r.Add(tflite::BuiltinOperator_REDUCE_ANY, MakeKernelFactory<ReduceKernel>(ReduceOp::kAny));
  r.Add(tflite::BuiltinOperator_REDUCE_ALL, MakeKernelFactory<ReduceKernel>(ReduceOp::kAll));
}

}  // namespace edgeopt::kernels
