// UNIQUE(x [n]) -> (y [m], idx [n]): the distinct values of x in order of first occurrence and,
// for each element of x, the position of its value in y (int32 or int64, the idx_out_type
// option; the idx tensor must have that type). y's length is known only from the values, so y
// is planned at Prepare for a constant x and at Invoke otherwise (a dynamic output). Values are
// copied: quantized inputs pass through with their quantization. Types: float32, int8, uint8,
// int16, int32, int64 (TFLite's list).
//
// Equality is TFLite's (its std::map compares with <): -0.0 and 0.0 are one value, kept as the
// first one met. NaN (outside that ordering, so undefined in TFLite): here every NaN is a value
// of its own, as in TensorFlow's Unique (which compares with ==).
//
// No allocation while running: the input's positions are sorted by (value, position) in
// scratch sized at Prepare; each run of equal values is one group whose first position is its
// first occurrence; a pass over x in order then numbers the groups as they first appear.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/misc/misc.h"

namespace edgeopt::kernels::misc_ops {
namespace {

class UniqueKernel : public PlannedKernel {
 public:
  UniqueKernel() : PlannedKernel("unique/any/ref", {0}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 2));
    const rt::RtTensor& in = *ctx.input(0);
    switch (in.type) {
      case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kInt32:
      case DType::kInt64:
        break;
      default:
        return ctx.UnsupportedError("input " + Describe(in) + ": type " + TypeName(in.type) +
                                    " is not supported (float32, int8, uint8, int16, int32, int64)");
    }
    if (in.rank() != 1) return ctx.Error("input " + Describe(in) + " must be a vector (rank 1)");
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const auto idx_type = static_cast<DType>(GetOptions<tflite::UniqueOptionsT>(ctx.op()).idx_out_type);
    if (idx_type != DType::kInt32 && idx_type != DType::kInt64)
      return ctx.UnsupportedError("idx_out_type " + TypeName(idx_type) + " is not supported (int32, int64)");
    if (ctx.output(1)->type != idx_type)
      return ctx.Error("idx output " + Describe(*ctx.output(1)) + " must have the type of idx_out_type (" +
                       TypeName(idx_type) + ")");
    const size_t n = static_cast<size_t>(in.shape[0]);
    order_.resize(n);
    group_.resize(n);
    first_.resize(n);
    id_.resize(n);
    return Status::Ok();
  }

  // Groups the values (needs them: x constant, or at Invoke), sets both output shapes.
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    switch (in.type) {
      case DType::kFloat32: Group(in.data_as<float>()); break;
      case DType::kInt8: Group(in.data_as<int8_t>()); break;
      case DType::kUInt8: Group(in.data_as<uint8_t>()); break;
      case DType::kInt16: Group(in.data_as<int16_t>()); break;
      case DType::kInt32: Group(in.data_as<int32_t>()); break;
      default: Group(in.data_as<int64_t>()); break;
    }
    RETURN_IF_ERROR(ctx.SetOutputShape(0, rt::Shape{static_cast<int32_t>(num_unique_)}));
    return ctx.SetOutputShape(1, in.shape);
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& idx = *ctx.output(1);
    const int64_t n = in.shape[0];
    // Group ids -> positions in y, in order of first occurrence; y copies each first element.
    const size_t elem = ElementBytes(in.type);
    const uint8_t* src = in.data;
    uint8_t* dst = ctx.output(0)->data;
    for (int64_t i = 0; i < n; ++i) {
      const int32_t g = group_[static_cast<size_t>(i)];
      const int32_t u = id_[static_cast<size_t>(g)];
      if (first_[static_cast<size_t>(g)] == i) std::copy_n(src + i * elem, elem, dst + u * elem);
      if (idx.type == DType::kInt64)
        idx.data_as<int64_t>()[i] = u;
      else
        idx.data_as<int32_t>()[i] = u;
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void Group(const T* v) {
    const int32_t n = static_cast<int32_t>(order_.size());
    for (int32_t i = 0; i < n; ++i) order_[static_cast<size_t>(i)] = i;
    // (value, position) with NaN after every number: a total order, as std::sort needs.
    std::sort(order_.begin(), order_.end(), [v](int32_t a, int32_t b) {
      if constexpr (std::is_floating_point_v<T>) {
        const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
        if (na || nb) return na != nb ? nb : a < b;
      }
      if (v[a] < v[b]) return true;
      if (v[b] < v[a]) return false;
      return a < b;
    });
    int32_t groups = 0;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t p = order_[static_cast<size_t>(k)];
      // A new group unless equal to the previous value (NaN is never equal: a group each).
      if (k == 0 || !(v[order_[static_cast<size_t>(k - 1)]] == v[p])) first_[static_cast<size_t>(groups++)] = p;
      group_[static_cast<size_t>(p)] = groups - 1;
    }
    // Number the groups in order of first occurrence.
    int32_t next = 0;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t g = group_[static_cast<size_t>(i)];
      if (first_[static_cast<size_t>(g)] == i) id_[static_cast<size_t>(g)] = next++;
    }
    num_unique_ = groups;
  }

  int32_t num_unique_ = 0;
  std::vector<int32_t> order_;  // positions sorted by value
  std::vector<int32_t> group_;  // position -> group
  std::vector<int32_t> first_;  // group -> its first position
  std::vector<int32_t> id_;     // group -> position in y
};

}  // namespace

void RegisterUnique(rt::OpRegistry& r) { r.Add(tflite::BuiltinOperator_UNIQUE, MakeKernelFactory<UniqueKernel>()); }

}  // namespace edgeopt::kernels::misc_ops
