// SPLIT, SPLIT_V, UNPACK: one input cut along an axis into consecutive pieces. Dtype-generic.
#include <cstring>

#include "kernels/common/planned_kernel.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

// Copies consecutive pieces of `sizes[i]` rows along `axis` into output i.
void SplitAlongAxis(rt::KernelContext& ctx, const rt::RtTensor& in, int axis, const std::vector<int64_t>& sizes) {
  const size_t elem = ElementBytes(in.type);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= in.shape[d];
  for (int d = axis + 1; d < in.rank(); ++d) inner *= in.shape[d];
  const uint8_t* src = in.data;
  for (int64_t k = 0; k < outer; ++k)
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t bytes = static_cast<size_t>(sizes[i] * inner) * elem;
      if (bytes) std::memcpy(ctx.output(static_cast<int>(i))->data + k * bytes, src, bytes);
      src += bytes;
    }
}

Status CheckOutputsLikeInput(rt::KernelContext& ctx, int input) {
  for (int o = 0; o < ctx.num_outputs(); ++o) RETURN_IF_ERROR(CheckSameType(ctx, input, o));
  return Status::Ok();
}

Status SetPieceShapes(rt::KernelContext& ctx, const rt::RtTensor& in, int axis, const std::vector<int64_t>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    rt::Shape s = in.shape;
    s[axis] = static_cast<int32_t>(sizes[i]);
    RETURN_IF_ERROR(ctx.SetOutputShape(static_cast<int>(i), std::move(s)));
  }
  return Status::Ok();
}

// SPLIT(axis, input), num_splits equal pieces.
class SplitKernel : public PlannedKernel {
 public:
  SplitKernel() : PlannedKernel("split/any/ref", {0}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, -1));
    const int num = GetOptions<tflite::SplitOptionsT>(ctx.op()).num_splits;
    if (num <= 0 || num != ctx.num_outputs())
      return ctx.Error("num_splits is " + std::to_string(num) + " but the op has " + std::to_string(ctx.num_outputs()) +
                       " outputs");
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(1), "input"));
    return CheckOutputsLikeInput(ctx, 1);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(1);
    int64_t axis_value = 0;
    RETURN_IF_ERROR(ReadScalarIndex(ctx, *ctx.input(0), "axis", &axis_value));
    RETURN_IF_ERROR(ResolveAxis(ctx, axis_value, in.rank(), "axis", &axis_));
    const int num = ctx.num_outputs();
    if (in.shape[axis_] % num != 0)
      return ctx.Error("dimension " + std::to_string(axis_) + " of " + rt::ShapeToString(in.shape) +
                       " does not divide into " + std::to_string(num) + " splits");
    sizes_.assign(num, in.shape[axis_] / num);
    return SetPieceShapes(ctx, in, axis_, sizes_);
  }
  Status Run(rt::KernelContext& ctx) override {
    SplitAlongAxis(ctx, *ctx.input(1), axis_, sizes_);
    return Status::Ok();
  }

 private:
  int axis_ = 0;
  std::vector<int64_t> sizes_;
};

// SPLIT_V(input, size_splits, axis); one size may be -1 (the rest).
class SplitVKernel : public PlannedKernel {
 public:
  SplitVKernel() : PlannedKernel("split_v/any/ref", {1, 2}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, -1));
    const int num = GetOptions<tflite::SplitVOptionsT>(ctx.op()).num_splits;
    if (num != ctx.num_outputs())
      return ctx.Error("num_splits is " + std::to_string(num) + " but the op has " + std::to_string(ctx.num_outputs()) +
                       " outputs");
    const rt::RtTensor& sizes = *ctx.input(1);
    if (sizes.rank() != 1 || sizes.dim(0) != ctx.num_outputs())
      return ctx.Error("size_splits " + rt::ShapeToString(sizes.shape) + " must be 1-D with one entry per output (" +
                       std::to_string(ctx.num_outputs()) + ")");
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    return CheckOutputsLikeInput(ctx, 0);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    int64_t axis_value = 0;
    RETURN_IF_ERROR(ReadScalarIndex(ctx, *ctx.input(2), "axis", &axis_value));
    RETURN_IF_ERROR(ResolveAxis(ctx, axis_value, in.rank(), "axis", &axis_));
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "size_splits", &sizes_));
    int stretch = -1;
    int64_t known = 0;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      if (sizes_[i] == -1 && stretch < 0) {
        stretch = static_cast<int>(i);
      } else if (sizes_[i] < 0) {
        return ctx.Error("size_splits " + ValuesToString(sizes_) + " has a negative size or more than one -1");
      } else if (sizes_[i] > in.shape[axis_]) {
        return ctx.Error("size_splits " + ValuesToString(sizes_) + " exceed dimension " + std::to_string(axis_));
      } else {
        known += sizes_[i];
      }
    }
    const int64_t dim = in.shape[axis_];
    if (stretch >= 0) {
      if (known > dim) return ctx.Error("size_splits " + ValuesToString(sizes_) + " exceed dimension " + std::to_string(dim));
      sizes_[stretch] = dim - known;
    } else if (known != dim) {
      return ctx.Error("size_splits " + ValuesToString(sizes_) + " sum to " + std::to_string(known) + ", dimension " +
                       std::to_string(axis_) + " is " + std::to_string(dim));
    }
    return SetPieceShapes(ctx, in, axis_, sizes_);
  }
  Status Run(rt::KernelContext& ctx) override {
    SplitAlongAxis(ctx, *ctx.input(0), axis_, sizes_);
    return Status::Ok();
  }

 private:
  int axis_ = 0;
  std::vector<int64_t> sizes_;
};

// UNPACK: `num` outputs, each a slice of size 1 along axis with that axis removed.
class UnpackKernel : public PlannedKernel {
 public:
  UnpackKernel() : PlannedKernel("unpack/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, -1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    return CheckOutputsLikeInput(ctx, 0);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const auto& opts = GetOptions<tflite::UnpackOptionsT>(ctx.op());
    RETURN_IF_ERROR(ResolveAxis(ctx, opts.axis, in.rank(), "axis", &axis_));
    const int dim = in.shape[axis_];
    if (opts.num != dim || ctx.num_outputs() != dim)
      return ctx.Error("num is " + std::to_string(opts.num) + " with " + std::to_string(ctx.num_outputs()) +
                       " outputs, but dimension " + std::to_string(axis_) + " of " + rt::ShapeToString(in.shape) +
                       " is " + std::to_string(dim));
    rt::Shape s = in.shape;
    s.erase(s.begin() + axis_);
    for (int o = 0; o < dim; ++o) RETURN_IF_ERROR(ctx.SetOutputShape(o, s));
    sizes_.assign(dim, 1);
    return Status::Ok();
  }
  Status Run(rt::KernelContext& ctx) override {
    SplitAlongAxis(ctx, *ctx.input(0), axis_, sizes_);
    return Status::Ok();
  }

 private:
  int axis_ = 0;
  std::vector<int64_t> sizes_;
};

}  // namespace

void RegisterSplitUnpack(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SPLIT, MakeKernelFactory<SplitKernel>());
  r.Add(tflite::BuiltinOperator_SPLIT_V, MakeKernelFactory<SplitVKernel>());
  r.Add(tflite::BuiltinOperator_UNPACK, MakeKernelFactory<UnpackKernel>());
}

}  // namespace edgeopt::kernels::transform
