// TRANSPOSE: out[i_0..i_{r-1}] = in[...] with out dim k = in dim perm[k]. Any rank, any
// fixed-size type (copied by element size). perm must be a permutation of [0, rank).
#include "kernels/common/planned_kernel.h"
#include "kernels/common/index_copy.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

class TransposeKernel : public PlannedKernel {
 public:
  TransposeKernel() : PlannedKernel("transpose/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const rt::RtTensor& perm = *ctx.input(1);
    if (perm.rank() != 1) return ctx.Error("perm must be 1-D, has shape " + rt::ShapeToString(perm.shape));
    if (perm.dim(0) != ctx.input(0)->rank())
      return ctx.Error("perm has " + std::to_string(perm.dim(0)) + " entries for an input of rank " +
                       std::to_string(ctx.input(0)->rank()));
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> perm;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "perm", &perm));
    const int rank = in.rank();
    std::vector<char> seen(rank, 0);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p])
        return ctx.Error("perm " + ValuesToString(perm) + " is not a permutation of [0, " + std::to_string(rank) + ")");
      seen[p] = 1;
    }
    const auto strides = RowMajorStrides(in.shape);
    rt::Shape out_shape(rank);
    tables_.assign(rank, {});
    for (int k = 0; k < rank; ++k) {
      out_shape[k] = in.shape[perm[k]];
      tables_[k] = AffineTable(out_shape[k], 0, strides[perm[k]]);
    }
    out_shape_ = out_shape;
    return ctx.SetOutputShape(0, std::move(out_shape));
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

}  // namespace

void RegisterTranspose(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_TRANSPOSE, MakeKernelFactory<TransposeKernel>());
}

}  // namespace edgeopt::kernels::transform
