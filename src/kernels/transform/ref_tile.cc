// TILE, BROADCAST_TO, REVERSE_V2: index-table copies of one input.
#include <limits>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/index_copy.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

Status CheckVectorArg(rt::KernelContext& ctx, int i, const std::string& what, int expected_len) {
  const rt::RtTensor& t = *ctx.input(i);
  if (t.rank() != 1 || (expected_len >= 0 && t.dim(0) != expected_len))
    return ctx.Error(what + " " + rt::ShapeToString(t.shape) + " must be 1-D" +
                     (expected_len >= 0 ? " with " + std::to_string(expected_len) + " entries" : ""));
  return Status::Ok();
}

class TileKernel : public PlannedKernel {
 public:
  TileKernel() : PlannedKernel("tile/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    return CheckVectorArg(ctx, 1, "multiples", ctx.input(0)->rank());
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> mult;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "multiples", &mult));
    std::vector<int64_t> dims;
    for (int d = 0; d < in.rank(); ++d) {
      if (mult[d] < 0 || mult[d] > std::numeric_limits<int32_t>::max())
        return ctx.Error("multiples " + ValuesToString(mult) + " contain an invalid value");
      dims.push_back(in.shape[d] * mult[d]);
    }
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims, "tiled shape", &out_shape_));
    const auto strides = RowMajorStrides(in.shape);
    tables_.assign(in.rank(), {});
    for (int d = 0; d < in.rank(); ++d) {
      auto& t = tables_[d];
      t.resize(out_shape_[d]);
      for (int32_t o = 0; o < out_shape_[d]; ++o) t[o] = (o % in.shape[d]) * strides[d];
    }
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  rt::Shape out_shape_;
  AxisTables tables_;
};

class BroadcastToKernel : public PlannedKernel {
 public:
  BroadcastToKernel() : PlannedKernel("broadcast_to/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    return CheckVectorArg(ctx, 1, "shape", -1);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> dims;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "shape", &dims));
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims, "shape", &out_shape_));
    const int out_rank = static_cast<int>(dims.size()), in_rank = in.rank();
    if (out_rank < in_rank)
      return ctx.Error("cannot broadcast " + rt::ShapeToString(in.shape) + " to lower rank shape " + ValuesToString(dims));
    const auto strides = RowMajorStrides(in.shape);
    tables_.assign(out_rank, {});
    for (int d = 0; d < out_rank; ++d) {
      const int k = d - (out_rank - in_rank);
      const int32_t in_dim = k >= 0 ? in.shape[k] : 1;
      if (in_dim != 1 && in_dim != out_shape_[d])
        return ctx.Error("cannot broadcast " + rt::ShapeToString(in.shape) + " to " + ValuesToString(dims));
      tables_[d] = AffineTable(out_shape_[d], 0, in_dim == 1 ? 0 : strides[k]);
    }
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    if (rt::NumElements(out_shape_) == 0) return Status::Ok();
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  rt::Shape out_shape_;
  AxisTables tables_;
};

// REVERSE_V2(input, axis): the output shape does not depend on the axes, so only the tables
// wait for their values.
class ReverseKernel : public PlannedKernel {
 public:
  ReverseKernel() : PlannedKernel("reverse_v2/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    return CheckVectorArg(ctx, 1, "axis", -1);
  }
  Status Plan(rt::KernelContext& ctx) override {
    tables_ready_ = false;
    if (ValuesKnown(ctx, *ctx.input(1))) {
      RETURN_IF_ERROR(BuildTables(ctx));
      tables_ready_ = ctx.input(1)->is_constant();
    }
    return ctx.SetOutputShape(0, ctx.input(0)->shape);
  }
  Status Run(rt::KernelContext& ctx) override {
    if (!tables_ready_) RETURN_IF_ERROR(BuildTables(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    CopyByAxisTables(ElementBytes(in.type), in.shape, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  Status BuildTables(rt::KernelContext& ctx) {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> axes;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "axis", &axes));
    std::vector<char> flip(in.rank(), 0);
    for (int64_t a : axes) {
      int axis = 0;
      RETURN_IF_ERROR(ResolveAxis(ctx, a, in.rank(), "axis", &axis));
      if (flip[axis]) return ctx.Error("axis " + ValuesToString(axes) + " names a dimension twice");
      flip[axis] = 1;
    }
    const auto strides = RowMajorStrides(in.shape);
    tables_.assign(in.rank(), {});
    for (int d = 0; d < in.rank(); ++d) {
      const int32_t n = in.shape[d];
      tables_[d] = flip[d] ? AffineTable(n, (n - 1) * strides[d], -strides[d]) : AffineTable(n, 0, strides[d]);
    }
    return Status::Ok();
  }

  bool tables_ready_ = false;
  AxisTables tables_;
};

}  // namespace

void RegisterTileBroadcast(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_TILE, MakeKernelFactory<TileKernel>());
  r.Add(tflite::BuiltinOperator_BROADCAST_TO, MakeKernelFactory<BroadcastToKernel>());
  r.Add(tflite::BuiltinOperator_REVERSE_V2, MakeKernelFactory<ReverseKernel>());
}

}  // namespace edgeopt::kernels::transform
