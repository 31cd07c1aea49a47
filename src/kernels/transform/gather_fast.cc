// GATHER without the reference kernel's per-element overhead: the indices are read in their own
// type (no type switch per index), checked in one pass before anything is written, and rows of
// 4 to 64 bytes (embedding rows of 1-16 floats, the common case in text models) are copied with
// a fixed-size copy the compiler inlines instead of a memcpy call per row. The same bytes as the
// reference kernel (ref_gather.cc), whose Prepare has validated the op and set the output shape;
// an out-of-range index is the same error.
#include <cstring>
#include <string>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/common/tensor_args.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels {
namespace {

class GatherFast : public FastKernel {
 public:
  explicit GatherFast(std::unique_ptr<rt::OpKernel> ref) : FastKernel(std::move(ref)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& idx = *ctx.input(1);
    if (idx.type != DType::kInt32 && idx.type != DType::kInt64) return false;
    const auto& o = GetOptions<tflite::GatherOptionsT>(ctx.op());
    // The reference Prepare accepted axis and batch_dims: normalize them as it does.
    const int axis = o.axis < 0 ? o.axis + in.rank() : o.axis;
    const int batch_dims = o.batch_dims < 0 ? o.batch_dims + idx.rank() : o.batch_dims;
    d_ = transform::GatherDimsOf(in, idx, axis, batch_dims);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor& idx = *ctx.input(1);
    if (idx.num_elements() > 0 && !idx.data) return ctx.Error("indices have no data");
    if (idx.type == DType::kInt64) return Run(ctx, idx.data_as<int64_t>(), idx.num_elements());
    return Run(ctx, idx.data_as<int32_t>(), idx.num_elements());
  }

  std::string FastVariant() const override { return "gather/any/rows"; }

 private:
  template <typename I>
  Status Run(rt::KernelContext& ctx, const I* idx, int64_t n) {
    bool bad = false;
    for (int64_t i = 0; i < n; ++i) bad |= idx[i] < 0 || idx[i] >= d_.axis_dim;
    if (bad) {
      for (int64_t i = 0; i < n; ++i)
        if (idx[i] < 0 || idx[i] >= d_.axis_dim)
          return ctx.Error("index " + std::to_string(static_cast<int64_t>(idx[i])) + " is out of range [0, " +
                           std::to_string(d_.axis_dim) + ")");
    }
    const uint8_t* src = ctx.input(0)->data;
    uint8_t* dst = ctx.output(0)->data;
    switch (d_.row) {
      case 4: return Copy<4>(src, idx, dst);
      case 8: return Copy<8>(src, idx, dst);
      case 16: return Copy<16>(src, idx, dst);
      case 32: return Copy<32>(src, idx, dst);
      case 64: return Copy<64>(src, idx, dst);
      default: return Copy<0>(src, idx, dst);
    }
  }

  // kRow: the row's bytes known at compile time (0: d_.row at run time).
  template <size_t kRow, typename I>
  Status Copy(const uint8_t* src, const I* idx, uint8_t* dst) const {
    const size_t row = kRow ? kRow : d_.row;
    if (row == 0) return Status::Ok();
    for (int64_t b = 0; b < d_.batch; ++b)
      for (int64_t o = 0; o < d_.outer; ++o) {
        const uint8_t* base = src + static_cast<size_t>((b * d_.outer + o) * d_.axis_dim) * row;
        const I* ix = idx + b * d_.coords;
        for (int64_t c = 0; c < d_.coords; ++c, dst += row)
          std::memcpy(dst, base + static_cast<size_t>(ix[c]) * row, row);
      }
    return Status::Ok();
  }

  transform::GatherDims d_;  // PrepareFast
};

std::unique_ptr<rt::OpKernel> MakeGatherFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  return ref ? std::make_unique<GatherFast>(std::move(ref)) : nullptr;
}

}  // namespace

namespace transform {
void RegisterGatherFast(rt::OpRegistry& r) { AddFastWithFallback(r, tflite::BuiltinOperator_GATHER, MakeGatherFast); }
}  // namespace transform

}  // namespace edgeopt::kernels
