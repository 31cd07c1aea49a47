// GATHER, GATHER_ND, SCATTER_ND. Indices are data, so every one is bounds-checked before use:
// an out-of-range or negative index is an error naming the op, never an out-of-bounds read or
// write.
#include <cstring>
#include <type_traits>

#include "kernels/common/planned_kernel.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

Status CheckIndexType(rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what) {
  if (t.type != DType::kInt32 && t.type != DType::kInt64)
    return ctx.UnsupportedError(what + " of type " + TypeName(t.type) + " is not supported (int32 or int64)");
  return Status::Ok();
}

// GATHER(params, indices) with options axis and batch_dims.
class GatherKernel : public PlannedKernel {
 public:
  GatherKernel() : PlannedKernel("gather/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "params"));
    RETURN_IF_ERROR(CheckIndexType(ctx, *ctx.input(1), "indices"));
    return CheckSameType(ctx, 0, 0);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& idx = *ctx.input(1);
    const auto& o = GetOptions<tflite::GatherOptionsT>(ctx.op());
    RETURN_IF_ERROR(ResolveAxis(ctx, o.axis, in.rank(), "axis", &axis_));
    batch_dims_ = o.batch_dims < 0 ? o.batch_dims + idx.rank() : o.batch_dims;
    if (batch_dims_ < 0 || batch_dims_ > axis_ || batch_dims_ > idx.rank())
      return ctx.Error("batch_dims " + std::to_string(o.batch_dims) + " is invalid for axis " + std::to_string(axis_) +
                       " and indices of rank " + std::to_string(idx.rank()));
    for (int i = 0; i < batch_dims_; ++i)
      if (in.shape[i] != idx.shape[i])
        return ctx.Error("batch dimension " + std::to_string(i) + " differs: params " + rt::ShapeToString(in.shape) +
                         ", indices " + rt::ShapeToString(idx.shape));
    rt::Shape out;
    for (int i = 0; i < axis_; ++i) out.push_back(in.shape[i]);
    for (int i = batch_dims_; i < idx.rank(); ++i) out.push_back(idx.shape[i]);
    for (int i = axis_ + 1; i < in.rank(); ++i) out.push_back(in.shape[i]);
    return ctx.SetOutputShape(0, std::move(out));
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& idx_t = *ctx.input(1);
    const int64_t n_idx = idx_t.num_elements();
    if (n_idx > 0 && !idx_t.data) return ctx.Error("indices have no data");
    const GatherDims d = GatherDimsOf(in, idx_t, axis_, batch_dims_);
    const int64_t axis_dim = d.axis_dim;
    for (int64_t i = 0; i < n_idx; ++i) {
      const int64_t v = IndexAt(idx_t, i);
      if (v < 0 || v >= axis_dim)
        return ctx.Error("index " + std::to_string(v) + " is out of range [0, " + std::to_string(axis_dim) + ")");
    }
    uint8_t* dst = ctx.output(0)->data;
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t o = 0; o < d.outer; ++o)
        for (int64_t c = 0; c < d.coords; ++c) {
          const int64_t src_row = (b * d.outer + o) * axis_dim + IndexAt(idx_t, b * d.coords + c);
          if (d.row) std::memcpy(dst, in.data + src_row * d.row, d.row);
          dst += d.row;
        }
    return Status::Ok();
  }

 private:
  int axis_ = 0;
  int batch_dims_ = 0;
};

// N-D index tuples (the last dimension of `indices`) into a tensor of `shape`: validation
// first, then per-tuple element offsets, without copying the indices.
struct IndexTuples {
  const rt::RtTensor* indices = nullptr;
  int depth = 0;
  int64_t count = 0;       // tuples
  int64_t slice = 1;       // elements addressed by one tuple
  int64_t stride[16] = {};  // element stride of each indexed dimension
  int64_t Offset(int64_t t) const {
    int64_t off = 0;
    for (int d = 0; d < depth; ++d) off += IndexAt(*indices, t * depth + d) * stride[d];
    return off;
  }
};

Status PrepareTuples(rt::KernelContext& ctx, const rt::RtTensor& indices, const rt::Shape& shape, IndexTuples* t) {
  t->indices = &indices;
  t->depth = indices.dim(-1);
  if (t->depth > 16) return ctx.UnsupportedError("index depth " + std::to_string(t->depth) + " is not supported");
  t->count = 1;
  for (int i = 0; i + 1 < indices.rank(); ++i) t->count *= indices.shape[i];
  if (t->count * t->depth > 0 && !indices.data) return ctx.Error("indices have no data");
  t->slice = 1;
  for (int d = t->depth; d < static_cast<int>(shape.size()); ++d) t->slice *= shape[d];
  int64_t s = t->slice;
  for (int d = t->depth - 1; d >= 0; --d) {
    t->stride[d] = s;
    s *= shape[d];
  }
  for (int64_t k = 0; k < t->count; ++k)
    for (int d = 0; d < t->depth; ++d) {
      const int64_t v = IndexAt(indices, k * t->depth + d);
      if (v < 0 || v >= shape[d]) {
        std::vector<int64_t> tuple;
        for (int e = 0; e < t->depth; ++e) tuple.push_back(IndexAt(indices, k * t->depth + e));
        return ctx.Error("index " + ValuesToString(tuple) + " is out of range for shape " + rt::ShapeToString(shape));
      }
    }
  return Status::Ok();
}

class GatherNdKernel : public PlannedKernel {
 public:
  GatherNdKernel() : PlannedKernel("gather_nd/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    RETURN_IF_ERROR(CheckCopyableType(ctx, *ctx.input(0), "params"));
    RETURN_IF_ERROR(CheckIndexType(ctx, *ctx.input(1), "indices"));
    return CheckSameType(ctx, 0, 0);
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& idx = *ctx.input(1);
    if (idx.rank() < 1) return ctx.Error("indices must have rank >= 1");
    if (in.rank() < 1) return ctx.Error("params must have rank >= 1");
    const int depth = idx.dim(-1);
    if (depth > in.rank())
      return ctx.Error("index depth " + std::to_string(depth) + " exceeds the rank of params " +
                       rt::ShapeToString(in.shape));
    rt::Shape out(idx.shape.begin(), idx.shape.end() - 1);
    for (int d = depth; d < in.rank(); ++d) out.push_back(in.shape[d]);
    return ctx.SetOutputShape(0, std::move(out));
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    IndexTuples tuples;
    RETURN_IF_ERROR(PrepareTuples(ctx, *ctx.input(1), in.shape, &tuples));
    const size_t elem = ElementBytes(in.type);
    const size_t row = static_cast<size_t>(tuples.slice) * elem;
    uint8_t* dst = ctx.output(0)->data;
    for (int64_t t = 0; t < tuples.count; ++t) {
      if (row) std::memcpy(dst, in.data + tuples.Offset(t) * static_cast<int64_t>(elem), row);
      dst += row;
    }
    return Status::Ok();
  }
};

template <typename T>
void ScatterAdd(const T* updates, const IndexTuples& tuples, T* out) {
  const int64_t slice = tuples.slice;
  for (int64_t t = 0; t < tuples.count; ++t)
    for (int64_t j = 0; j < slice; ++j) {
      T& o = out[tuples.Offset(t) + j];
      if constexpr (std::is_same_v<T, bool>) {
        o = o || updates[t * slice + j];
      } else {
        o = static_cast<T>(o + updates[t * slice + j]);
      }
    }
}

// SCATTER_ND(indices, updates, shape): zeros of `shape` with updates added at the indices
// (duplicates accumulate, as in TFLite).
class ScatterNdKernel : public PlannedKernel {
 public:
  ScatterNdKernel() : PlannedKernel("scatter_nd/any/ref", {2}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, 1));
    RETURN_IF_ERROR(CheckIndexType(ctx, *ctx.input(0), "indices"));
    const rt::RtTensor& upd = *ctx.input(1);
    switch (upd.type) {
      case DType::kFloat32: case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kInt32:
      case DType::kInt64: case DType::kBool:
        break;
      default:
        return ctx.UnsupportedError("updates of type " + TypeName(upd.type) + " are not supported");
    }
    RETURN_IF_ERROR(CheckSameType(ctx, 1, 0));
    const rt::RtTensor& shape = *ctx.input(2);
    if (shape.rank() != 1) return ctx.Error("shape must be 1-D, is " + rt::ShapeToString(shape.shape));
    if (ctx.input(0)->rank() < 1) return ctx.Error("indices must have rank >= 1");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& idx = *ctx.input(0);
    const rt::RtTensor& upd = *ctx.input(1);
    std::vector<int64_t> dims;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(2), "shape", &dims));
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims, "shape", &out_shape_));
    const int depth = idx.dim(-1);
    if (depth > static_cast<int>(dims.size()))
      return ctx.Error("index depth " + std::to_string(depth) + " exceeds the rank of shape " + ValuesToString(dims));
    rt::Shape expect(idx.shape.begin(), idx.shape.end() - 1);
    for (size_t d = depth; d < dims.size(); ++d) expect.push_back(out_shape_[d]);
    if (upd.shape != expect)
      return ctx.Error("updates " + rt::ShapeToString(upd.shape) + " must have shape " + rt::ShapeToString(expect));
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    rt::RtTensor& out = *ctx.output(0);
    const rt::RtTensor& upd = *ctx.input(1);
    IndexTuples tuples;
    RETURN_IF_ERROR(PrepareTuples(ctx, *ctx.input(0), out_shape_, &tuples));
    const size_t bytes = rt::TensorBytes(out.type, out.shape);
    if (bytes) std::memset(out.data, 0, bytes);
    switch (out.type) {
      case DType::kFloat32: ScatterAdd(upd.data_as<float>(), tuples, out.data_as<float>()); break;
      case DType::kInt8: ScatterAdd(upd.data_as<int8_t>(), tuples, out.data_as<int8_t>()); break;
      case DType::kUInt8: ScatterAdd(upd.data_as<uint8_t>(), tuples, out.data_as<uint8_t>()); break;
      case DType::kInt16: ScatterAdd(upd.data_as<int16_t>(), tuples, out.data_as<int16_t>()); break;
      case DType::kInt32: ScatterAdd(upd.data_as<int32_t>(), tuples, out.data_as<int32_t>()); break;
      case DType::kInt64: ScatterAdd(upd.data_as<int64_t>(), tuples, out.data_as<int64_t>()); break;
      case DType::kBool: ScatterAdd(upd.data_as<bool>(), tuples, out.data_as<bool>()); break;
      default: return ctx.UnsupportedError("unsupported type");
    }
    return Status::Ok();
  }

 private:
  rt::Shape out_shape_;
};

}  // namespace

GatherDims GatherDimsOf(const rt::RtTensor& in, const rt::RtTensor& idx, int axis, int batch_dims) {
  GatherDims d;
  int64_t inner = 1;
  for (int i = 0; i < batch_dims; ++i) d.batch *= in.shape[i];
  for (int i = batch_dims; i < axis; ++i) d.outer *= in.shape[i];
  for (int i = axis + 1; i < in.rank(); ++i) inner *= in.shape[i];
  for (int i = batch_dims; i < idx.rank(); ++i) d.coords *= idx.shape[i];
  d.axis_dim = in.shape[axis];
  d.row = static_cast<size_t>(inner) * ElementBytes(in.type);
  return d;
}

void RegisterGather(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_GATHER, MakeKernelFactory<GatherKernel>());
  r.Add(tflite::BuiltinOperator_GATHER_ND, MakeKernelFactory<GatherNdKernel>());
  r.Add(tflite::BuiltinOperator_SCATTER_ND, MakeKernelFactory<ScatterNdKernel>());
}

}  // namespace edgeopt::kernels::transform
