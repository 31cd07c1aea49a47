// SPARSE_TO_DENSE(indices, output_shape, values, default_value) -> dense tensor of shape
// output_shape, default_value everywhere except at the listed indices, which get values[i] (or
// the scalar value for all of them). Semantics of TFLite's kernel:
// - indices int32/int64 of rank 0 (one index), 1 ([n] indices into a rank-1 output) or 2 ([n, d]
//   coordinates into a rank-d output; d must equal output_shape's length);
// - output_shape an int32/int64 vector, constant (planned at Prepare) or computed at run time;
// - values float32/int32/int64/int8/uint8 (copied, so quantized values pass through), a scalar
//   or a vector of n; default_value of the same type with one element; output of that type;
// - a repeated index keeps the last value written (TFLite writes in order);
// - validate_indices is read but, like TFLite (which leaves it unimplemented), not enforced:
//   unsorted or repeated indices are accepted.
// Differences where TFLite is undefined or stricter: an index outside the output is an error
// here (TFLite writes out of bounds); a vector of values must hold exactly n values (TFLite
// reads past a shorter one); a scalar value serves any number of indices (TensorFlow's
// broadcast; TFLite 2.9 refuses a scalar value unless there is exactly one index); rank-0
// indices are one index (TFLite reads an undefined dimension there); any output rank d is
// accepted (TFLite stops at 4).
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/misc/misc.h"

namespace edgeopt::kernels::misc_ops {
namespace {

class SparseToDenseKernel : public PlannedKernel {
 public:
  SparseToDenseKernel() : PlannedKernel("sparse_to_dense/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 4, 4, 1));
    const rt::RtTensor& idx = *ctx.input(0);
    const rt::RtTensor& shape = *ctx.input(1);
    const rt::RtTensor& values = *ctx.input(2);
    const rt::RtTensor& def = *ctx.input(3);
    if (idx.type != DType::kInt32 && idx.type != DType::kInt64)
      return ctx.UnsupportedError("indices " + Describe(idx) + ": type " + TypeName(idx.type) +
                                  " is not supported (int32, int64)");
    if (idx.rank() > 2) return ctx.Error("indices " + Describe(idx) + " must have rank 0, 1 or 2");
    if (shape.type != DType::kInt32 && shape.type != DType::kInt64)
      return ctx.UnsupportedError("output_shape " + Describe(shape) + ": type " + TypeName(shape.type) +
                                  " is not supported (int32, int64)");
    if (shape.rank() != 1) return ctx.Error("output_shape " + Describe(shape) + " must be a vector");
    switch (values.type) {
      case DType::kFloat32: case DType::kInt32: case DType::kInt64: case DType::kInt8: case DType::kUInt8:
        break;
      default:
        return ctx.UnsupportedError("values " + Describe(values) + ": type " + TypeName(values.type) +
                                    " is not supported (float32, int32, int64, int8, uint8)");
    }
    if (values.rank() > 1) return ctx.Error("values " + Describe(values) + " must be a scalar or a vector");
    if (def.type != values.type)
      return ctx.Error("default_value " + Describe(def) + " must have the type of values (" + TypeName(values.type) + ")");
    if (def.num_elements() != 1) return ctx.Error("default_value " + Describe(def) + " must hold exactly one value");
    RETURN_IF_ERROR(CheckSameType(ctx, 2, 0));

    num_indices_ = idx.rank() == 0 ? 1 : idx.shape[0];
    index_rank_ = idx.rank() == 2 ? idx.shape[1] : 1;
    if (shape.shape[0] != index_rank_)
      return ctx.Error(idx.rank() == 2 ? "indices " + Describe(idx) + " have " + std::to_string(index_rank_) +
                                             " coordinates but output_shape " + Describe(shape) + " has " +
                                             std::to_string(shape.shape[0]) + " dimensions"
                                       : "output_shape " + Describe(shape) + " must have one element for indices " +
                                             Describe(idx) + " of rank " + std::to_string(idx.rank()));
    if (values.rank() == 1 && values.shape[0] != num_indices_)
      return ctx.Error("values " + Describe(values) + " must hold one value per index (" + std::to_string(num_indices_) +
                       ") or be a scalar");
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "output_shape", &dims_));
    rt::Shape out;
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims_, "output_shape", &out));
    strides_ = RowMajorStrides(out);
    return ctx.SetOutputShape(0, out);
  }

  Status Run(rt::KernelContext& ctx) override {
    switch (ctx.input(2)->type) {
      case DType::kFloat32: return Fill<float>(ctx);
      case DType::kInt32: return Fill<int32_t>(ctx);
      case DType::kInt64: return Fill<int64_t>(ctx);
      case DType::kInt8: return Fill<int8_t>(ctx);
      default: return Fill<uint8_t>(ctx);
    }
  }

 private:
  template <typename T>
  Status Fill(rt::KernelContext& ctx) {
    const rt::RtTensor& idx = *ctx.input(0);
    const rt::RtTensor& values = *ctx.input(2);
    rt::RtTensor& out = *ctx.output(0);
    T* o = out.data_as<T>();
    const int64_t n_out = out.num_elements();
    const T def = ctx.input(3)->data_as<T>()[0];
    for (int64_t i = 0; i < n_out; ++i) o[i] = def;
    const T* v = values.data_as<T>();
    const bool scalar = values.rank() == 0;
    for (int64_t i = 0; i < num_indices_; ++i) {
      int64_t offset = 0;
      for (int64_t j = 0; j < index_rank_; ++j) {
        const int64_t c = IndexAt(idx, i * index_rank_ + j);
        if (c < 0 || c >= dims_[static_cast<size_t>(j)]) return OutOfRange(ctx, i);
        offset += c * strides_[static_cast<size_t>(j)];
      }
      o[offset] = scalar ? v[0] : v[i];
    }
    return Status::Ok();
  }

  Status OutOfRange(const rt::KernelContext& ctx, int64_t i) const {
    std::vector<int64_t> c(static_cast<size_t>(index_rank_));
    for (int64_t j = 0; j < index_rank_; ++j) c[static_cast<size_t>(j)] = IndexAt(*ctx.input(0), i * index_rank_ + j);
    return ctx.Error("index " + std::to_string(i) + " " + ValuesToString(c) + " is outside the output shape " +
                     ValuesToString(dims_));
  }

  int64_t num_indices_ = 0;
  int64_t index_rank_ = 1;
  std::vector<int64_t> dims_, strides_;
};

}  // namespace

void RegisterSparseToDense(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SPARSE_TO_DENSE, MakeKernelFactory<SparseToDenseKernel>());
}

}  // namespace edgeopt::kernels::misc_ops
