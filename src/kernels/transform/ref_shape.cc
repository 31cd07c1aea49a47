// SHAPE, RANK, RANGE, WHERE: small ops about shapes and positions. RANGE and WHERE have output
// shapes that depend on input values (dynamic outputs when those inputs are not constant).
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "kernels/common/planned_kernel.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

class ShapeKernel : public PlannedKernel {
 public:
  ShapeKernel() : PlannedKernel("shape/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const DType t = ctx.output(0)->type;
    if (t != DType::kInt32 && t != DType::kInt64)
      return ctx.UnsupportedError("output type " + TypeName(t) + " is not supported (int32 or int64)");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, {ctx.input(0)->rank()}); }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    for (int d = 0; d < in.rank(); ++d) {
      if (out.type == DType::kInt32) {
        out.data_as<int32_t>()[d] = in.shape[d];
      } else {
        out.data_as<int64_t>()[d] = in.shape[d];
      }
    }
    return Status::Ok();
  }
};

class RankKernel : public PlannedKernel {
 public:
  RankKernel() : PlannedKernel("rank/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const DType t = ctx.output(0)->type;
    if (t != DType::kInt32 && t != DType::kInt64)
      return ctx.UnsupportedError("output type " + TypeName(t) + " is not supported (int32 or int64)");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, {}); }
  Status Run(rt::KernelContext& ctx) override {
    rt::RtTensor& out = *ctx.output(0);
    if (out.type == DType::kInt32) {
      out.data_as<int32_t>()[0] = ctx.input(0)->rank();
    } else {
      out.data_as<int64_t>()[0] = ctx.input(0)->rank();
    }
    return Status::Ok();
  }
};

template <typename T>
Status RangeSize(rt::KernelContext& ctx, T start, T limit, T delta, int64_t* size) {
  if (delta == 0) return ctx.Error("delta must not be 0");
  if ((start > limit && delta > 0) || (start < limit && delta < 0))
    return ctx.Error("delta has the wrong sign for start " + std::to_string(start) + " and limit " +
                     std::to_string(limit));
  double n;
  if constexpr (std::is_integral_v<T>) {
    // In 128-bit: no overflow even for extreme int64 arguments.
    const __int128 d = static_cast<__int128>(limit) - static_cast<__int128>(start);
    const __int128 span = d < 0 ? -d : d;
    const __int128 step = delta < 0 ? -static_cast<__int128>(delta) : static_cast<__int128>(delta);
    const __int128 count = (span + step - 1) / step;
    n = count > std::numeric_limits<int32_t>::max() ? 1e300 : static_cast<double>(count);
  } else {
    n = std::ceil(std::abs((limit - start) / delta));
  }
  if (!(n >= 0) || n > static_cast<double>(std::numeric_limits<int32_t>::max()))
    return ctx.Error("range of " + std::to_string(n) + " elements is too large");
  *size = static_cast<int64_t>(n);
  return Status::Ok();
}

// Floats accumulate (value += delta) as TFLite does; integers are start + i * delta, the same
// values without the overflow of one step past the end.
template <typename T>
void RangeFill(T start, T delta, int64_t n, T* out) {
  if constexpr (std::is_integral_v<T>) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<__int128>(start) + static_cast<__int128>(i) * delta);
  } else {
    T value = start;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = value;
      value += delta;
    }
  }
}

class RangeKernel : public PlannedKernel {
 public:
  RangeKernel() : PlannedKernel("range/any/ref", {0, 1, 2}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, 1));
    const DType t = ctx.input(0)->type;
    if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kFloat32)
      return ctx.UnsupportedError("type " + TypeName(t) + " is not supported (int32, int64, float32)");
    for (int i = 0; i < 3; ++i) {
      if (ctx.input(i)->type != t) return ctx.Error("start, limit and delta must have one type");
      if (ctx.input(i)->num_elements() != 1) return ctx.Error("start, limit and delta must be scalars");
    }
    return CheckSameType(ctx, 0, 0);
  }
  Status Plan(rt::KernelContext& ctx) override {
    for (int i = 0; i < 3; ++i)
      if (!ctx.input(i)->data) return ctx.Error("input " + std::to_string(i) + " has no data");
    switch (ctx.input(0)->type) {
      case DType::kInt32: RETURN_IF_ERROR(Size<int32_t>(ctx)); break;
      case DType::kInt64: RETURN_IF_ERROR(Size<int64_t>(ctx)); break;
      default: RETURN_IF_ERROR(Size<float>(ctx)); break;
    }
    return ctx.SetOutputShape(0, {static_cast<int32_t>(size_)});
  }
  Status Run(rt::KernelContext& ctx) override {
    switch (ctx.input(0)->type) {
      case DType::kInt32: Fill<int32_t>(ctx); break;
      case DType::kInt64: Fill<int64_t>(ctx); break;
      default: Fill<float>(ctx); break;
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  Status Size(rt::KernelContext& ctx) {
    return RangeSize<T>(ctx, *ctx.input(0)->data_as<T>(), *ctx.input(1)->data_as<T>(), *ctx.input(2)->data_as<T>(),
                        &size_);
  }
  template <typename T>
  void Fill(rt::KernelContext& ctx) {
    RangeFill<T>(*ctx.input(0)->data_as<T>(), *ctx.input(2)->data_as<T>(), size_, ctx.output(0)->data_as<T>());
  }
  int64_t size_ = 0;
};

// WHERE(condition): int64 coordinates [num_true, rank] of the true (non-zero) elements in
// row-major order.
class WhereKernel : public PlannedKernel {
 public:
  WhereKernel() : PlannedKernel("where/any/ref", {0}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const rt::RtTensor& cond = *ctx.input(0);
    switch (cond.type) {
      case DType::kBool: case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt16:
      case DType::kInt32: case DType::kInt64:
        break;
      default:
        return ctx.UnsupportedError("condition of type " + TypeName(cond.type) + " is not supported");
    }
    if (ctx.output(0)->type != DType::kInt64) return ctx.Error("output must be int64, is " + TypeName(ctx.output(0)->type));
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& cond = *ctx.input(0);
    const int64_t n = cond.num_elements();
    if (n > 0 && !cond.data) return ctx.Error("condition has no data");
    true_.clear();
    for (int64_t i = 0; i < n; ++i)
      if (IsTrue(cond, i)) true_.push_back(i);
    strides_ = RowMajorStrides(cond.shape);
    return ctx.SetOutputShape(0, {static_cast<int32_t>(true_.size()), cond.rank()});
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& cond = *ctx.input(0);
    const auto& strides = strides_;
    int64_t* out = ctx.output(0)->data_as<int64_t>();
    for (int64_t flat : true_)
      for (int d = 0; d < cond.rank(); ++d) {
        *out++ = flat / strides[d];
        flat %= strides[d];
      }
    return Status::Ok();
  }

 private:
  static bool IsTrue(const rt::RtTensor& t, int64_t i) {
    switch (t.type) {
      case DType::kBool: return t.data[i] != 0;
      case DType::kFloat32: return t.data_as<float>()[i] != 0.0f;
      case DType::kInt8: return t.data_as<int8_t>()[i] != 0;
      case DType::kUInt8: return t.data[i] != 0;
      case DType::kInt16: return t.data_as<int16_t>()[i] != 0;
      case DType::kInt32: return t.data_as<int32_t>()[i] != 0;
      default: return t.data_as<int64_t>()[i] != 0;
    }
  }
  std::vector<int64_t> true_;
  std::vector<int64_t> strides_;
};

}  // namespace

void RegisterShapeOps(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SHAPE, MakeKernelFactory<ShapeKernel>());
  r.Add(tflite::BuiltinOperator_RANK, MakeKernelFactory<RankKernel>());
  r.Add(tflite::BuiltinOperator_RANGE, MakeKernelFactory<RangeKernel>());
  r.Add(tflite::BuiltinOperator_WHERE, MakeKernelFactory<WhereKernel>());
}

}  // namespace edgeopt::kernels::transform
