// ADD_N (sum of equally shaped tensors), ZEROS_LIKE, FILL (a shape from a tensor, one value).
#include <cstring>
#include <limits>
#include <memory>

#include "kernels/common/elementwise_util.h"
#include "kernels/elementwise/ops.h"

namespace edgeopt::kernels::elementwise {
namespace {

struct NoState {};

Status AddNPrepare(rt::KernelContext& ctx, NoState&) {
  if (ctx.num_inputs() < 2) return ctx.Error("expects at least 2 inputs, has " + std::to_string(ctx.num_inputs()));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* first, RequiredInput(ctx, 0));
  if (first->type != DType::kFloat32 && first->type != DType::kInt32)
    return ctx.Error("type " + TypeName(first->type) + " is not supported (supported: float32 and int32)");
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(const rt::RtTensor* t, RequiredInput(ctx, i));
    if (t->type != first->type || t->shape != first->shape)
      return ctx.Error("input " + std::to_string(i) + " " + Describe(*t) + " differs from input 0 " + Describe(*first) +
                       " (all inputs must have the same shape and type)");
  }
  if (ctx.output(0)->type != first->type) return ctx.Error("output must be " + TypeName(first->type));
  return ctx.SetOutputShape(0, first->shape);
}

template <typename T>
void AddNLoop(rt::KernelContext& ctx) {
  T* o = ctx.output(0)->data_as<T>();
  const int64_t n = ctx.output(0)->num_elements();
  const int k = ctx.num_inputs();
  for (int64_t i = 0; i < n; ++i) {
    T s = ctx.input(0)->data_as<T>()[i];
    for (int j = 1; j < k; ++j) s = static_cast<T>(s + ctx.input(j)->data_as<T>()[i]);
    o[i] = s;
  }
}

Status AddNInvoke(rt::KernelContext& ctx, const NoState&) {
  if (ctx.input(0)->type == DType::kFloat32)
    AddNLoop<float>(ctx);
  else
    AddNLoop<int32_t>(ctx);
  return Status::Ok();
}

Status ZerosLikePrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
  if (!TypeIn(in->type, {DType::kFloat32, DType::kInt32, DType::kInt64}))
    return ctx.Error("type " + TypeName(in->type) + " is not supported (supported: float32, int32 and int64)");
  if (ctx.output(0)->type != in->type) return ctx.Error("output must be " + TypeName(in->type));
  return ctx.SetOutputShape(0, in->shape);
}

Status ZerosLikeInvoke(rt::KernelContext& ctx, const NoState&) {
  rt::RtTensor& out = *ctx.output(0);
  const size_t bytes = DTypeBytes(out.type, static_cast<size_t>(out.num_elements()));
  if (bytes) std::memset(out.data, 0, bytes);  // all-zero bits is 0 / 0.0f for these types
  return Status::Ok();
}

constexpr int64_t kMaxFillElements = int64_t{1} << 31;

const std::vector<DType> kFillTypes = {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kBool, DType::kInt8,
                                       DType::kInt16};

Status FillShape(rt::KernelContext& ctx, rt::Shape* shape) {
  const rt::RtTensor& dims = *ctx.input(0);
  shape->clear();
  int64_t elements = 1;
  for (int64_t i = 0; i < dims.num_elements(); ++i) {
    const int64_t d = dims.type == DType::kInt64 ? dims.data_as<int64_t>()[i] : dims.data_as<int32_t>()[i];
    if (d < 0 || d > std::numeric_limits<int32_t>::max())
      return ctx.Error("dimension " + std::to_string(i) + " of the requested shape is " + std::to_string(d));
    shape->push_back(static_cast<int32_t>(d));
    // Refuse absurd sizes instead of failing to allocate them.
    if (d && elements > kMaxFillElements / d)
      return ctx.Error("the requested shape " + rt::ShapeToString(*shape) + "... has more than " +
                       std::to_string(kMaxFillElements) + " elements");
    elements *= d;
  }
  return Status::Ok();
}

Status FillPrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* dims, RequiredInput(ctx, 0));
  ASSIGN_OR_RETURN(const rt::RtTensor* value, RequiredInput(ctx, 1));
  if (dims->type != DType::kInt32 && dims->type != DType::kInt64)
    return ctx.Error("dims must be int32 or int64, got " + Describe(*dims));
  if (dims->rank() != 1) return ctx.Error("dims must be 1-D, got " + Describe(*dims));
  if (value->rank() != 0) return ctx.Error("value must be a scalar, got " + Describe(*value));
  if (!TypeIn(value->type, kFillTypes))
    return ctx.Error("value type " + TypeName(value->type) + " is not supported (supported: " + TypeListText(kFillTypes) + ")");
  const rt::RtTensor* out = ctx.output(0);
  if (out->type != value->type) return ctx.Error("output " + Describe(*out) + " must have the value's type");
  if (value->type == DType::kInt8 || value->type == DType::kInt16) {
    if (value->scale() != out->scale() || value->zero_point() != out->zero_point())
      return ctx.Error("value and output must have the same quantization");
  }
  if (!dims->is_constant()) {
    // The shape is known only when the dims tensor has its values: at invoke time.
    if (!ctx.in_invoke()) {
      ctx.MarkOutputDynamic(0);
      return Status::Ok();
    }
    if (!dims->data) return ctx.Error("dims input has no data");
  }
  rt::Shape shape;
  RETURN_IF_ERROR(FillShape(ctx, &shape));
  return ctx.SetOutputShape(0, std::move(shape));
}

Status FillInvoke(rt::KernelContext& ctx, const NoState&) {
  rt::RtTensor& out = *ctx.output(0);
  if (!ctx.input(0)->is_constant()) {
    rt::Shape shape;
    RETURN_IF_ERROR(FillShape(ctx, &shape));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(shape)));
  }
  const rt::RtTensor& value = *ctx.input(1);
  const size_t es = DTypeSize(value.type);
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) std::memcpy(out.data + i * es, value.data, es);
  return Status::Ok();
}

}  // namespace

void RegisterMisc(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_ADD_N, MakeFnFactory<NoState>(AddNPrepare, AddNInvoke, "add_n/ref"));
  r.Add(tflite::BuiltinOperator_ZEROS_LIKE, MakeFnFactory<NoState>(ZerosLikePrepare, ZerosLikeInvoke, "zeros_like/ref"));
  r.Add(tflite::BuiltinOperator_FILL, MakeFnFactory<NoState>(FillPrepare, FillInvoke, "fill/ref"));
}

}  // namespace edgeopt::kernels::elementwise
