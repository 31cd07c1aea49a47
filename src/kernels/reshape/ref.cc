// RESHAPE, SQUEEZE, EXPAND_DIMS: change the shape, copy the bytes (nothing when the output
// aliases the input). LiteRT semantics: the new shape comes from the second input when it is a
// 1-D int32 tensor, else from the options; one dimension may be -1; legacy [0] means scalar.
#include <cstring>

#include "kernels/common/kernel_util.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

// deferred: the output shape depends on a run-time input and is set in Invoke.
struct ShapeState {
  bool deferred = false;
};

Status CopyInputToOutput(rt::KernelContext& ctx, const ShapeState&) {
  const rt::RtTensor* in = ctx.input(0);
  rt::RtTensor* out = ctx.output(0);
  const size_t n = DTypeBytes(in->type, static_cast<size_t>(in->num_elements()));
  if (out->data != in->data && n) std::memmove(out->data, in->data, n);
  return Status::Ok();
}

Status ResolveStretch(rt::KernelContext& ctx, rt::Shape* shape, int64_t elements) {
  int stretch = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] == -1) {
      if (stretch >= 0) return ctx.Error("new shape " + rt::ShapeToString(*shape) + " has more than one -1");
      stretch = static_cast<int>(i);
    } else if ((*shape)[i] < 0) {
      return ctx.Error("new shape " + rt::ShapeToString(*shape) + " has a negative dimension");
    } else {
      known *= (*shape)[i];
    }
  }
  if (stretch >= 0) {
    if (known == 0 || elements % known != 0)
      return ctx.Error("cannot infer the -1 dimension of " + rt::ShapeToString(*shape) + " for " +
                       std::to_string(elements) + " elements");
    (*shape)[stretch] = static_cast<int32_t>(elements / known);
    known = elements;
  }
  if (known != elements)
    return ctx.Error("new shape " + rt::ShapeToString(*shape) + " has " + std::to_string(known) +
                     " elements, the input " + std::to_string(elements));
  return Status::Ok();
}

// The new shape from the shape tensor (values must be readable) or the options.
Status ReshapeOutputShape(rt::KernelContext& ctx, rt::Shape* shape) {
  const rt::RtTensor* in = ctx.input(0);
  const rt::RtTensor* shape_t = ctx.input(1);
  if (shape_t && shape_t->rank() == 1 && shape_t->type == DType::kInt32) {
    if (!shape_t->data) return ctx.Error("shape input has no data");
    const int32_t* p = shape_t->data_as<int32_t>();
    shape->assign(p, p + shape_t->num_elements());
  } else {
    const auto& opts = GetOptions<tflite::ReshapeOptionsT>(ctx.op());
    *shape = opts.new_shape;
    if (shape->size() == 1 && (*shape)[0] == 0) shape->clear();  // legacy scalar
    if (opts.new_shape.empty() && !shape_t) *shape = ctx.output(0)->def ? ctx.output(0)->def->shape : rt::Shape{};
  }
  return ResolveStretch(ctx, shape, in->num_elements());
}

Status ReshapePrepare(rt::KernelContext& ctx, ShapeState& state) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 2));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  const rt::RtTensor* shape_t = ctx.input(1);
  // A shape computed at run time is known only during invoke (Invoke then sets it).
  state.deferred = shape_t && shape_t->rank() == 1 && shape_t->type == DType::kInt32 && !shape_t->is_constant() &&
                   !ctx.in_invoke();
  if (state.deferred) {
    ctx.MarkOutputDynamic(0);
    return Status::Ok();
  }
  rt::Shape shape;
  RETURN_IF_ERROR(ReshapeOutputShape(ctx, &shape));
  return ctx.SetOutputShape(0, std::move(shape));
}

Status ReshapeInvoke(rt::KernelContext& ctx, const ShapeState& state) {
  if (state.deferred) {
    rt::Shape shape;
    RETURN_IF_ERROR(ReshapeOutputShape(ctx, &shape));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(shape)));
  }
  return CopyInputToOutput(ctx, state);
}

Status SqueezePrepare(rt::KernelContext& ctx, ShapeState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  const rt::RtTensor* in = ctx.input(0);
  const auto& dims = GetOptions<tflite::SqueezeOptionsT>(ctx.op()).squeeze_dims;
  std::vector<char> drop(in->rank(), 0);
  if (dims.empty()) {
    for (int i = 0; i < in->rank(); ++i) drop[i] = in->shape[i] == 1;
  } else {
    for (int32_t d : dims) {
      const int a = d < 0 ? d + in->rank() : d;
      if (a < 0 || a >= in->rank()) return ctx.Error("squeeze dimension " + std::to_string(d) + " out of range");
      if (in->shape[a] != 1) return ctx.Error("cannot squeeze dimension " + std::to_string(d) + " of size " + std::to_string(in->shape[a]));
      drop[a] = 1;
    }
  }
  rt::Shape shape;
  for (int i = 0; i < in->rank(); ++i)
    if (!drop[i]) shape.push_back(in->shape[i]);
  return ctx.SetOutputShape(0, std::move(shape));
}

Status ExpandDimsOutputShape(rt::KernelContext& ctx, rt::Shape* shape) {
  const rt::RtTensor* in = ctx.input(0);
  const rt::RtTensor* axis_t = ctx.input(1);
  if (!axis_t->data) return ctx.Error("axis input has no data");
  if (axis_t->num_elements() != 1) return ctx.Error("axis must be a single value");
  int64_t axis = axis_t->type == DType::kInt64 ? axis_t->data_as<int64_t>()[0] : axis_t->data_as<int32_t>()[0];
  const int rank = in->rank();
  if (axis < 0) axis += rank + 1;
  if (axis < 0 || axis > rank) return ctx.Error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  *shape = in->shape;
  shape->insert(shape->begin() + axis, 1);
  return Status::Ok();
}

Status ExpandDimsPrepare(rt::KernelContext& ctx, ShapeState& state) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
  state.deferred = !ctx.input(1)->is_constant() && !ctx.in_invoke();
  if (state.deferred) {
    ctx.MarkOutputDynamic(0);
    return Status::Ok();
  }
  rt::Shape shape;
  RETURN_IF_ERROR(ExpandDimsOutputShape(ctx, &shape));
  return ctx.SetOutputShape(0, std::move(shape));
}

Status ExpandDimsInvoke(rt::KernelContext& ctx, const ShapeState& state) {
  if (state.deferred) {
    rt::Shape shape;
    RETURN_IF_ERROR(ExpandDimsOutputShape(ctx, &shape));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, std::move(shape)));
  }
  return CopyInputToOutput(ctx, state);
}

}  // namespace

void RegisterBasicKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_RESHAPE, MakeFnFactory<ShapeState>(ReshapePrepare, ReshapeInvoke, "reshape/ref", true));
  r.Add(tflite::BuiltinOperator_SQUEEZE, MakeFnFactory<ShapeState>(SqueezePrepare, CopyInputToOutput, "squeeze/ref", true));
  r.Add(tflite::BuiltinOperator_EXPAND_DIMS, MakeFnFactory<ShapeState>(ExpandDimsPrepare, ExpandDimsInvoke, "expand_dims/ref", true));
}

}  // namespace edgeopt::kernels
