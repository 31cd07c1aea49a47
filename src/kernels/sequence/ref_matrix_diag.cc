// MATRIX_DIAG(diagonal [..., N]) -> [..., N, N]: the values on the main diagonal, zero bytes
// elsewhere (as TFLite: raw 0 also for quantized types, not the zero point).
// MATRIX_SET_DIAG(input [..., M, N], diagonal [..., min(M, N)]) -> input with its main diagonal
// replaced. TFLite's builtin forms: main diagonal only, no k / padding / alignment. Raw element
// copies for every fixed-size type (TFLite 2.9 handles float32, int8, uint8, int16, int32,
// int64 and mis-sizes other types as float32; here they are copied by their own size).
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/common/planned_kernel.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels::sequence {
namespace {

class MatrixDiagKernel : public PlannedKernel {
 public:
  MatrixDiagKernel() : PlannedKernel("matrix_diag/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (ctx.input(0)->rank() < 1) return ctx.Error("input " + Describe(*ctx.input(0)) + " must have rank >= 1");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    rt::Shape s = ctx.input(0)->shape;
    const int64_t n = s.back();
    if (n > 0 && ctx.input(0)->num_elements() * n > std::numeric_limits<int32_t>::max())
      return ctx.Error("output of input " + Describe(*ctx.input(0)) + " would have over 2^31 elements");
    s.push_back(s.back());
    return ctx.SetOutputShape(0, std::move(s));
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    const size_t es = ElementBytes(in.type);
    const int64_t n = in.shape.back();
    const int64_t count = out.num_elements();
    if (count == 0) return Status::Ok();
    std::memset(out.data, 0, static_cast<size_t>(count) * es);
    const int64_t batches = in.num_elements() / n;
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(out.data + static_cast<size_t>((b * n + i) * n + i) * es,
                    in.data + static_cast<size_t>(b * n + i) * es, es);
    return Status::Ok();
  }
};

class MatrixSetDiagKernel : public PlannedKernel {
 public:
  MatrixSetDiagKernel() : PlannedKernel("matrix_set_diag/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& diag = *ctx.input(1);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (diag.type != in.type)
      return ctx.Error("diagonal " + Describe(diag) + " must have the input's type " + TypeName(in.type));
    const int rank = in.rank();
    if (rank < 2) return ctx.Error("input " + Describe(in) + " must have rank >= 2");
    // TFLite reads batch * min(M, N) diagonal values without checking its shape; require it.
    rt::Shape want(in.shape.begin(), in.shape.end() - 2);
    want.push_back(std::min(in.shape[rank - 2], in.shape[rank - 1]));
    if (diag.shape != want)
      return ctx.Error("diagonal " + Describe(diag) + " must have shape " + rt::ShapeToString(want) + " for input " +
                       Describe(in));
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& diag = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    const size_t es = ElementBytes(in.type);
    const int64_t count = in.num_elements();
    if (count == 0) return Status::Ok();
    if (out.data != in.data) std::memmove(out.data, in.data, static_cast<size_t>(count) * es);
    const int rank = in.rank();
    const int64_t rows = in.shape[rank - 2], cols = in.shape[rank - 1];
    const int64_t k = std::min(rows, cols);
    const int64_t batches = count / (rows * cols);
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < k; ++i)
        std::memcpy(out.data + static_cast<size_t>(b * rows * cols + i * cols + i) * es,
                    diag.data + static_cast<size_t>(b * k + i) * es, es);
    return Status::Ok();
  }
};

}  // namespace

void RegisterMatrixDiag(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_MATRIX_DIAG, MakeKernelFactory<MatrixDiagKernel>());
  r.Add(tflite::BuiltinOperator_MATRIX_SET_DIAG, MakeKernelFactory<MatrixSetDiagKernel>());
}

}  // namespace edgeopt::kernels::sequence
