// PAD, PADV2, MIRROR_PAD. paddings is an int32/int64 [rank, 2] tensor of (before, after).
// PAD pads with zero (the output zero point for quantized tensors, as TFLite 2.9), PADV2 with
// its scalar constant, MIRROR_PAD with reflected (REFLECT: edge excluded) or mirrored
// (SYMMETRIC: edge included) input values.
#include <cstring>
#include <limits>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/index_copy.h"
#include "kernels/transform/pad_rows.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

bool IsQuantType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

Status CheckPaddingsShape(rt::KernelContext& ctx, const rt::RtTensor& in, const rt::RtTensor& paddings) {
  if (paddings.rank() != 2 || paddings.dim(0) != in.rank() || paddings.dim(1) != 2)
    return ctx.Error("paddings " + rt::ShapeToString(paddings.shape) + " must be [" + std::to_string(in.rank()) + ",2]");
  return Status::Ok();
}

Status ReadPaddings(rt::KernelContext& ctx, const rt::RtTensor& in, std::vector<int64_t>* pads) {
  RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "paddings", pads));
  for (int64_t p : *pads)
    if (p < 0 || p > std::numeric_limits<int32_t>::max())
      return ctx.Error("paddings " + ValuesToString(*pads) + " contain a negative or too large value");
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) dims.push_back(in.shape[d] + (*pads)[2 * d] + (*pads)[2 * d + 1]);
  rt::Shape unused;
  return CheckShapeFits(ctx, dims, "padded shape", &unused);
}

// PAD and PADV2. The reference copies element by element through axis tables; the fast
// variants (not reference_only) copy whole rows (pad_rows.h) with AVX-512 moves or memcpy.
class PadKernel : public PlannedKernel {
 public:
  enum class Rows { kNo, kMemcpy, kAvx512 };
  PadKernel(bool v2, Rows rows)
      : PlannedKernel(std::string(v2 ? "padv2" : "pad") +
                          (rows == Rows::kNo ? "/any/ref" : rows == Rows::kMemcpy ? "/any/memcpy" : "/any/avx512"),
                      {1}),
        v2_(v2),
        rows_(rows != Rows::kNo),
        avx512_(rows == Rows::kAvx512) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, v2_ ? 3 : 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& out = *ctx.output(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    RETURN_IF_ERROR(CheckPaddingsShape(ctx, in, *ctx.input(1)));
    const size_t elem = ElementBytes(in.type);
    pad_value_.assign(elem, 0);
    const rt::RtTensor* value = ctx.input(2);
    if (value) {
      if (value->type != in.type)
        return ctx.Error("constant_values is " + TypeName(value->type) + ", the input " + TypeName(in.type));
      if (value->num_elements() != 1)
        return ctx.Error("constant_values must hold one value, has shape " + rt::ShapeToString(value->shape));
      if (IsQuantType(in.type) && value->quant && value->quant->has_scale() && out.quant && out.quant->has_scale() &&
          (value->scale() != out.scale() || value->zero_point() != out.zero_point()))
        return ctx.Error("constant_values must have the output's quantization parameters");
      value_input_ = true;
    } else {
      value_input_ = false;
      if (IsQuantType(in.type)) {
        const int32_t zp = out.zero_point();
        if (in.type == DType::kInt16) {
          const int16_t v = static_cast<int16_t>(zp);
          std::memcpy(pad_value_.data(), &v, 2);
        } else {
          pad_value_[0] = static_cast<uint8_t>(zp);
        }
      }
    }
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> pads;
    RETURN_IF_ERROR(ReadPaddings(ctx, in, &pads));
    const auto strides = RowMajorStrides(in.shape);
    out_shape_.assign(in.rank(), 0);
    tables_.assign(in.rank(), {});
    if (rows_) row_plan_ = MakePadRowPlan(in.shape, pads, ElementBytes(in.type));
    for (int d = 0; d < in.rank(); ++d) {
      const int64_t before = pads[2 * d], dim = in.shape[d];
      out_shape_[d] = static_cast<int32_t>(before + dim + pads[2 * d + 1]);
      if (rows_) continue;
      auto& t = tables_[d];
      t.assign(out_shape_[d], kPadEntry);
      for (int64_t i = 0; i < dim; ++i) t[before + i] = i * strides[d];
    }
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const size_t elem = ElementBytes(in.type);
    if (value_input_) {
      const rt::RtTensor& value = *ctx.input(2);
      if (!value.data) return ctx.Error("constant_values has no data");
      std::memcpy(pad_value_.data(), value.data, elem);
    }
    if (rows_)
      RunPadRows(row_plan_, in.data, ctx.output(0)->data, pad_value_.data(), avx512_, &ctx.threads());
    else
      CopyByAxisTables(elem, out_shape_, tables_, in.data, ctx.output(0)->data, pad_value_.data());
    return Status::Ok();
  }

 private:
  bool v2_;
  bool rows_, avx512_;
  PadRowPlan row_plan_;
  bool value_input_ = false;
  std::vector<uint8_t> pad_value_;
  rt::Shape out_shape_;
  AxisTables tables_;
};

class MirrorPadKernel : public PlannedKernel {
 public:
  MirrorPadKernel() : PlannedKernel("mirror_pad/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    return CheckPaddingsShape(ctx, in, *ctx.input(1));
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const bool symmetric = GetOptions<tflite::MirrorPadOptionsT>(ctx.op()).mode == tflite::MirrorPadMode_SYMMETRIC;
    std::vector<int64_t> pads;
    RETURN_IF_ERROR(ReadPaddings(ctx, in, &pads));
    const auto strides = RowMajorStrides(in.shape);
    out_shape_.assign(in.rank(), 0);
    tables_.assign(in.rank(), {});
    for (int d = 0; d < in.rank(); ++d) {
      const int64_t before = pads[2 * d], after = pads[2 * d + 1], dim = in.shape[d];
      const int64_t limit = symmetric ? dim : dim - 1;
      if (before > limit || after > limit)
        return ctx.Error("paddings " + ValuesToString(pads) + " exceed what " + (symmetric ? "SYMMETRIC" : "REFLECT") +
                         " mode allows for input " + rt::ShapeToString(in.shape));
      out_shape_[d] = static_cast<int32_t>(before + dim + after);
      auto& t = tables_[d];
      t.resize(out_shape_[d]);
      for (int64_t o = 0; o < out_shape_[d]; ++o) {
        int64_t i = o - before;
        if (i < 0) i = symmetric ? -i - 1 : -i;
        if (i >= dim) i = symmetric ? 2 * dim - 1 - i : 2 * dim - 2 - i;
        t[o] = i * strides[d];
      }
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

}  // namespace

void RegisterPad(rt::OpRegistry& r) {
  for (bool v2 : {false, true})
    r.Add(v2 ? tflite::BuiltinOperator_PADV2 : tflite::BuiltinOperator_PAD,
          [v2](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
            using Rows = PadKernel::Rows;
            const Rows rows = cc.reference_only ? Rows::kNo : cc.cpu.has_avx512() ? Rows::kAvx512 : Rows::kMemcpy;
            return std::unique_ptr<rt::OpKernel>(new PadKernel(v2, rows));
          });
  r.Add(tflite::BuiltinOperator_MIRROR_PAD, MakeKernelFactory<MirrorPadKernel>());
}

}  // namespace edgeopt::kernels::transform
