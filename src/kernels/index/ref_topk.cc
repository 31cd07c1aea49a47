// TOPK_V2: the k largest values of each row (last axis) and their int32 positions, largest
// first; equal values keep the lower position first (TFLite's comparator). Values are copied, so
// quantized inputs pass through with the output's (= the input's) quantization. k is an int32
// tensor with one element, constant (planned at Prepare) or computed at run time.
//
// NaN (not ordered by TFLite's comparator, so its result there depends on the heap's visiting
// order): here a NaN ranks below every number, NaNs among themselves by position, which keeps the
// order total (std::partial_sort needs one) and the result deterministic.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/index/index.h"

namespace edgeopt::kernels::index_ops {
namespace {

template <typename T>
void TopKRows(const T* in, int64_t rows, int64_t row_size, int64_t k, std::vector<int32_t>& order, T* values,
              int32_t* indices) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* v = in + r * row_size;
    for (int64_t i = 0; i < row_size; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    auto before = [v](int32_t a, int32_t b) {
      if (v[a] > v[b]) return true;
      if (v[b] > v[a]) return false;
      if constexpr (std::is_floating_point_v<T>) {
        const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
        if (na != nb) return nb;
      }
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.begin() + row_size, before);
    for (int64_t j = 0; j < k; ++j) {
      const int32_t p = order[static_cast<size_t>(j)];
      values[r * k + j] = v[p];
      indices[r * k + j] = p;
    }
  }
}

class TopKKernel : public PlannedKernel {
 public:
  TopKKernel() : PlannedKernel("topk_v2/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 2));
    const rt::RtTensor& in = *ctx.input(0);
    switch (in.type) {
      case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt32: case DType::kInt64:
        break;
      default:
        return ctx.UnsupportedError("input " + Describe(in) + ": type " + TypeName(in.type) +
                                    " is not supported (float32, int8, uint8, int32, int64)");
    }
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (ctx.output(1)->type != DType::kInt32)
      return ctx.Error("indices output " + Describe(*ctx.output(1)) + " must be int32");
    const rt::RtTensor& k = *ctx.input(1);
    if (k.type != DType::kInt32) return ctx.Error("k " + Describe(k) + " must be int32");
    if (k.num_elements() != 1) return ctx.Error("k " + Describe(k) + " must hold exactly one value");
    if (in.rank() < 1) return ctx.Error("input " + Describe(in) + " must have rank >= 1");
    order_.resize(static_cast<size_t>(in.shape.back()));
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const int64_t k = ctx.input(1)->data_as<int32_t>()[0];
    const int64_t row = in.shape.back();
    if (k < 0 || k > row)
      return ctx.Error("k = " + std::to_string(k) + " is outside [0, " + std::to_string(row) + "] (the last dimension of " +
                       Describe(in) + ")");
    k_ = k;
    rt::Shape out = in.shape;
    out.back() = static_cast<int32_t>(k);
    RETURN_IF_ERROR(ctx.SetOutputShape(0, out));
    return ctx.SetOutputShape(1, out);
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const int64_t row = in.shape.back();
    const int64_t rows = row == 0 ? 0 : in.num_elements() / row;
    if (k_ == 0 || rows == 0) return Status::Ok();
    int32_t* idx = ctx.output(1)->data_as<int32_t>();
    rt::RtTensor& out = *ctx.output(0);
    switch (in.type) {
      case DType::kFloat32: TopKRows(in.data_as<float>(), rows, row, k_, order_, out.data_as<float>(), idx); break;
      case DType::kInt8: TopKRows(in.data_as<int8_t>(), rows, row, k_, order_, out.data_as<int8_t>(), idx); break;
      case DType::kUInt8: TopKRows(in.data_as<uint8_t>(), rows, row, k_, order_, out.data_as<uint8_t>(), idx); break;
      case DType::kInt32: TopKRows(in.data_as<int32_t>(), rows, row, k_, order_, out.data_as<int32_t>(), idx); break;
      default: TopKRows(in.data_as<int64_t>(), rows, row, k_, order_, out.data_as<int64_t>(), idx); break;
    }
    return Status::Ok();
  }

 private:
  int64_t k_ = 0;
  std::vector<int32_t> order_;  // one row's positions, sized at Prepare (no allocation in Invoke)
};

}  // namespace

void RegisterTopK(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_TOPK_V2, MakeKernelFactory<TopKKernel>()); }

}  // namespace edgeopt::kernels::index_ops
