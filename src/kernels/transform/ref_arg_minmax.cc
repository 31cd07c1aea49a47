// ARG_MAX / ARG_MIN along one axis; the first position wins ties (strict comparison, as
// TFLite). Output int32 or int64 (the output tensor's type, i.e. the output_type option).
// Outside the reference mode, on AVX-512 CPUs, the last axis (or one followed by size-1 axes) of
// float32 / int8 / uint8 inputs
// (a segmentation model's per-pixel class) runs 16 lanes at a time, rows over the threads
// (arg_minmax_avx512.cc; variant arg_max/<type>/avx512).
#include <algorithm>

#include "kernels/common/planned_kernel.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

// Positions along the axis are visited in order for every (outer, inner) pair, as in a plain
// loop per pair; the pairs of one outer index are swept together, a chunk of up to kChunk inner
// positions at a time, so that each axis step reads contiguous memory (the plain order strides
// by `inner` and runs ~10x slower on MoveNet's [1, 2304, 17] heatmaps).
// inner == 1 (the last axis): the sequential scan keeps the first position whose value equals
// (==) the final extreme, and the extreme never becomes NaN unless the first value is one
// (then position 0 wins: NaN compares false). So: position 0 if the first value is NaN; else
// the extreme over 8 independent lanes (each starting from the first value, so a NaN elsewhere
// never sticks), then the first position equal to it.
template <bool kMax, typename T>
int64_t ArgExtremeOfRow(const T* p, int64_t n) {
  const T first = p[0];
  if (first != first) return 0;  // NaN
  constexpr int kLanes = 8;
  T acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = first;
  int64_t i = 1;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const T v = p[i + k];
      acc[k] = (kMax ? v > acc[k] : v < acc[k]) ? v : acc[k];
    }
  T m = acc[0];
  for (int k = 1; k < kLanes; ++k) m = (kMax ? acc[k] > m : acc[k] < m) ? acc[k] : m;
  for (; i < n; ++i) m = (kMax ? p[i] > m : p[i] < m) ? p[i] : m;
  for (int64_t j = 0; j < n; ++j)
    if (p[j] == m) return j;
  return 0;  // not reached: m is one of the values
}

template <bool kMax, typename T, typename I>
void ArgMinMaxOf(const T* in, int64_t outer, int64_t axis, int64_t inner, I* out) {
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) out[o] = static_cast<I>(ArgExtremeOfRow<kMax>(in + o * axis, axis));
    return;
  }
  constexpr int64_t kChunk = 64;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j0 = 0; j0 < inner; j0 += kChunk) {
      const int64_t w = std::min(kChunk, inner - j0);
      const T* p = in + o * axis * inner + j0;
      T best[kChunk];
      I best_i[kChunk];
      for (int64_t j = 0; j < w; ++j) {
        best[j] = p[j];
        best_i[j] = 0;
      }
      for (int64_t i = 1; i < axis; ++i) {
        const T* row = p + i * inner;
        for (int64_t j = 0; j < w; ++j) {  // branch-free, so that it vectorizes
          const T v = row[j];
          const bool better = kMax ? v > best[j] : v < best[j];
          best[j] = better ? v : best[j];
          best_i[j] = better ? static_cast<I>(i) : best_i[j];
        }
      }
      for (int64_t j = 0; j < w; ++j) out[o * inner + j0 + j] = best_i[j];
    }
}

template <typename T, typename I>
void ArgMinMax(const T* in, int64_t outer, int64_t axis, int64_t inner, bool is_max, I* out) {
  if (is_max) ArgMinMaxOf<true>(in, outer, axis, inner, out);
  else ArgMinMaxOf<false>(in, outer, axis, inner, out);
}

// The last axis on AVX-512 (float32, int8, uint8), rows split over the threads.
template <typename T, typename I>
void LastAxisAvx512(rt::ThreadPool& pool, const T* in, int64_t rows, int64_t n, bool is_max, I* out) {
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<I>(ArgExtremeRowAvx512(in + r * n, n, is_max));
  });
}

template <typename T>
void Dispatch(const rt::RtTensor& in, rt::RtTensor& out, int64_t outer, int64_t axis, int64_t inner, bool is_max) {
  if (out.type == DType::kInt32) {
    ArgMinMax(in.data_as<T>(), outer, axis, inner, is_max, out.data_as<int32_t>());
  } else {
    ArgMinMax(in.data_as<T>(), outer, axis, inner, is_max, out.data_as<int64_t>());
  }
}

class ArgMinMaxKernel : public PlannedKernel {
 public:
  // fast: the AVX-512 rows for the last axis of float32 / int8 / uint8 inputs.
  ArgMinMaxKernel(bool is_max, bool fast)
      : PlannedKernel(is_max ? "arg_max/any/ref" : "arg_min/any/ref", {1}), is_max_(is_max), fast_(fast) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    switch (ctx.input(0)->type) {
      case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kInt32:
      case DType::kInt64: case DType::kBool:
        break;
      default:
        return ctx.UnsupportedError("input of type " + TypeName(ctx.input(0)->type) + " is not supported");
    }
    const DType ot = ctx.output(0)->type;
    if (ot != DType::kInt32 && ot != DType::kInt64)
      return ctx.UnsupportedError("output type " + TypeName(ot) + " is not supported (int32 or int64)");
    if (ctx.input(0)->rank() < 1) return ctx.Error("input must have rank >= 1");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    int64_t axis = 0;
    RETURN_IF_ERROR(ReadScalarIndex(ctx, *ctx.input(1), "axis", &axis));
    RETURN_IF_ERROR(ResolveAxis(ctx, axis, in.rank(), "axis", &axis_));
    if (in.shape[axis_] == 0) return ctx.Error("cannot reduce the empty dimension " + std::to_string(axis_));
    rt::Shape out = in.shape;
    out.erase(out.begin() + axis_);
    int64_t inner = 1;
    for (int d = axis_ + 1; d < in.rank(); ++d) inner *= in.shape[d];
    rows_ = fast_ && inner == 1 &&
            (in.type == DType::kFloat32 || in.type == DType::kInt8 || in.type == DType::kUInt8);
    const std::string name = is_max_ ? "arg_max/" : "arg_min/";
    set_variant(rows_ ? name + TypeName(in.type) + "/avx512" : name + "any/ref");
    return ctx.SetOutputShape(0, std::move(out));
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis_; ++d) outer *= in.shape[d];
    for (int d = axis_ + 1; d < in.rank(); ++d) inner *= in.shape[d];
    const int64_t n = in.shape[axis_];
    if (rows_) {
      auto run = [&](const auto* x) {
        if (out.type == DType::kInt32) LastAxisAvx512(ctx.threads(), x, outer, n, is_max_, out.data_as<int32_t>());
        else LastAxisAvx512(ctx.threads(), x, outer, n, is_max_, out.data_as<int64_t>());
      };
      if (in.type == DType::kFloat32) run(in.data_as<float>());
      else if (in.type == DType::kInt8) run(in.data_as<int8_t>());
      else run(in.data_as<uint8_t>());
      return Status::Ok();
    }
    switch (in.type) {
      case DType::kFloat32: Dispatch<float>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt8: Dispatch<int8_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kUInt8: Dispatch<uint8_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt16: Dispatch<int16_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt32: Dispatch<int32_t>(in, out, outer, n, inner, is_max_); break;
      case DType::kInt64: Dispatch<int64_t>(in, out, outer, n, inner, is_max_); break;
      default: Dispatch<uint8_t>(in, out, outer, n, inner, is_max_); break;  // bool: 0/1 bytes
    }
    return Status::Ok();
  }

 private:
  bool is_max_;
  bool fast_;
  bool rows_ = false;  // the AVX-512 rows run this op
  int axis_ = 0;
};

}  // namespace

void RegisterArgMinMax(rt::OpRegistry& r) {
  for (const bool is_max : {true, false})
    r.Add(is_max ? tflite::BuiltinOperator_ARG_MAX : tflite::BuiltinOperator_ARG_MIN,
          [is_max](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
            return std::unique_ptr<rt::OpKernel>(new ArgMinMaxKernel(is_max, !cc.reference_only && cc.cpu.has_avx512()));
          });
}

}  // namespace edgeopt::kernels::transform
