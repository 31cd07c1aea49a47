// DYNAMIC_UPDATE_SLICE(operand, update, start_indices): the operand with the block `update`
// written at `start_indices` (XLA semantics, as TFLite). Each start index is clamped to
// [0, operand_dim - update_dim], so the block always lies inside the operand; indices of any
// int32 / int64 value are valid. Raw element copies: any fixed-size type, quantized types keep
// their bytes.
#include <algorithm>
#include <cstring>

#include "kernels/common/planned_kernel.h"
#include "kernels/sequence/sequence.h"

namespace edgeopt::kernels::sequence {
namespace {

class DynamicUpdateSliceKernel : public PlannedKernel {
 public:
  DynamicUpdateSliceKernel() : PlannedKernel("dynamic_update_slice/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, 1));
    const rt::RtTensor& operand = *ctx.input(0);
    const rt::RtTensor& update = *ctx.input(1);
    const rt::RtTensor& starts = *ctx.input(2);
    RETURN_IF_ERROR(CheckCopyableType(ctx, operand, "operand"));
    if (update.type != operand.type)
      return ctx.Error("update " + Describe(update) + " must have the operand's type " + TypeName(operand.type));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (starts.type != DType::kInt32 && starts.type != DType::kInt64)
      return ctx.Error("start_indices " + Describe(starts) + " must be int32 or int64");
    if (starts.rank() != 1 || starts.shape[0] != operand.rank())
      return ctx.Error("start_indices " + Describe(starts) + " must be a vector of " + std::to_string(operand.rank()) +
                       " values (the operand's rank)");
    if (update.rank() != operand.rank())
      return ctx.Error("update " + Describe(update) + " must have the rank of operand " + Describe(operand));
    for (int d = 0; d < operand.rank(); ++d)
      if (update.shape[d] > operand.shape[d])
        return ctx.Error("update " + Describe(update) + " is larger than operand " + Describe(operand) +
                         " in dimension " + std::to_string(d));
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& operand = *ctx.input(0);
    const rt::RtTensor& update = *ctx.input(1);
    const rt::RtTensor& starts = *ctx.input(2);
    rt::RtTensor& out = *ctx.output(0);
    const size_t es = ElementBytes(operand.type);
    const int rank = operand.rank();
    const int64_t total = operand.num_elements();
    if (out.data != operand.data && total > 0) std::memmove(out.data, operand.data, static_cast<size_t>(total) * es);
    const int64_t n_update = update.num_elements();
    if (n_update == 0) return Status::Ok();
    if (rank == 0) {
      std::memcpy(out.data, update.data, es);
      return Status::Ok();
    }
    DimBuffer<int64_t> start(rank), stride(rank), idx(rank, 0);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      stride[d] = s;
      s *= operand.shape[d];
      const int64_t hi = operand.shape[d] - update.shape[d];  // >= 0 (Check)
      start[d] = std::clamp<int64_t>(IndexAt(starts, d), 0, hi);
    }
    const int64_t row = update.shape[rank - 1];
    const size_t row_bytes = static_cast<size_t>(row) * es;
    const uint8_t* src = update.data;
    for (int64_t r = 0; r < n_update / row; ++r) {
      int64_t at = start[rank - 1];
      for (int d = 0; d < rank - 1; ++d) at += (start[d] + idx[d]) * stride[d];
      std::memcpy(out.data + static_cast<size_t>(at) * es, src, row_bytes);
      src += row_bytes;
      for (int d = rank - 2; d >= 0; --d) {  // next row of the update (odometer)
        if (++idx[d] < update.shape[d]) break;
        idx[d] = 0;
      }
    }
    return Status::Ok();
  }
};

}  // namespace

void RegisterDynamicUpdateSlice(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_DYNAMIC_UPDATE_SLICE, MakeKernelFactory<DynamicUpdateSliceKernel>());
}

}  // namespace edgeopt::kernels::sequence
