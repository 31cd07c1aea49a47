// EMBEDDING_LOOKUP and ONE_HOT.
//
// EMBEDDING_LOOKUP(ids int32 [n], value [rows, ...]) -> [n, value.shape[1:]]: row ids[i] of
// value for each i; an id outside [0, rows) is an error. Same output type as value: the row is
// copied (quantized tables pass through with their quantization). float32 output from an int8 or
// uint8 table is TFLite's hybrid form: each element read as int8 (TFLite reads uint8 tables
// through an int8 pointer too; this follows it) times the table's scale as a double, with no
// zero point; a table quantized per axis (one scale per row, LiteRT's newer form) uses the scale
// of the row looked up.
//
// ONE_HOT(indices int32/int64, depth int32, on, off) -> indices' shape with a dimension of size
// depth inserted at `axis` (-1: last); element (.., j, ..) is on where the index equals j
// (compared after conversion to int32, as TFLite), off elsewhere. Output types float32, int32,
// int64, int8, uint8, bool (on/off of the output's type; quantized values pass through).
#include <cstring>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/index/index.h"

namespace edgeopt::kernels::index_ops {
namespace {

class EmbeddingLookupKernel : public PlannedKernel {
 public:
  EmbeddingLookupKernel() : PlannedKernel("embedding_lookup/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& ids = *ctx.input(0);
    const rt::RtTensor& value = *ctx.input(1);
    const rt::RtTensor& out = *ctx.output(0);
    if (ids.type != DType::kInt32) return ctx.UnsupportedError("ids " + Describe(ids) + " must be int32");
    if (ids.rank() != 1) return ctx.Error("ids " + Describe(ids) + " must have rank 1");
    if (value.rank() < 2) return ctx.Error("value " + Describe(value) + " must have rank >= 2");
    hybrid_ = (value.type == DType::kInt8 || value.type == DType::kUInt8) && out.type == DType::kFloat32;
    if (hybrid_) {
      if (!value.quant || value.quant->scale.empty())
        return ctx.Error("value " + Describe(value) + " has no quantization scale (needed for a float32 output)");
      const size_t scales = value.quant->scale.size();
      if (scales > 1 && (value.quant->quantized_dimension != 0 || static_cast<int64_t>(scales) != value.shape[0]))
        return ctx.UnsupportedError("value " + Describe(value) + " is quantized per axis with " + std::to_string(scales) +
                                    " scales on dimension " + std::to_string(value.quant->quantized_dimension) +
                                    "; only one scale per row (dimension 0) is supported");
    } else {
      if (out.type != value.type)
        return ctx.UnsupportedError("output " + Describe(out) + " must have the type of value " + Describe(value) +
                                    " (or be float32 for an int8/uint8 table)");
      RETURN_IF_ERROR(CheckCopyableType(ctx, value, "value"));
    }
    rt::Shape shape = value.shape;
    shape[0] = ids.shape[0];
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Plan(rt::KernelContext&) override { return Status::Ok(); }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& ids = *ctx.input(0);
    const rt::RtTensor& value = *ctx.input(1);
    rt::RtTensor& out = *ctx.output(0);
    const int64_t rows = value.shape[0];
    const int64_t n = ids.shape[0];
    const int64_t cols = rows == 0 ? 0 : value.num_elements() / rows;
    const int32_t* id = ids.data_as<int32_t>();
    for (int64_t i = 0; i < n; ++i)
      if (id[i] < 0 || id[i] >= rows)
        return ctx.Error("ids[" + std::to_string(i) + "] = " + std::to_string(id[i]) + " is outside [0, " +
                         std::to_string(rows) + ") (the rows of value " + Describe(value) + ")");
    if (hybrid_) {
      const int8_t* v = value.data_as<int8_t>();
      float* o = out.data_as<float>();
      const std::vector<float>& scales = value.quant->scale;
      for (int64_t i = 0; i < n; ++i) {
        const double s = scales.size() > 1 ? scales[static_cast<size_t>(id[i])] : scales[0];
        const int8_t* row = v + id[i] * cols;
        for (int64_t j = 0; j < cols; ++j) o[i * cols + j] = static_cast<float>(row[j] * s);
      }
      return Status::Ok();
    }
    const size_t row_bytes = static_cast<size_t>(cols) * ElementBytes(value.type);
    const uint8_t* v = value.data_as<uint8_t>();
    uint8_t* o = out.data_as<uint8_t>();
    for (int64_t i = 0; i < n; ++i)
      if (row_bytes) std::memcpy(o + i * row_bytes, v + id[i] * row_bytes, row_bytes);
    return Status::Ok();
  }

 private:
  bool hybrid_ = false;
};

template <typename V, typename I>
void OneHotFill(const I* idx, int64_t prefix, int64_t depth, int64_t suffix, V on, V off, V* out) {
  for (int64_t p = 0; p < prefix; ++p)
    for (int64_t j = 0; j < depth; ++j)
      for (int64_t s = 0; s < suffix; ++s)
        *out++ = static_cast<int32_t>(idx[p * suffix + s]) == j ? on : off;
}

template <typename V>
void OneHotOf(const rt::RtTensor& indices, int64_t prefix, int64_t depth, int64_t suffix, const void* on,
              const void* off, void* out) {
  V on_v, off_v;
  std::memcpy(&on_v, on, sizeof(V));
  std::memcpy(&off_v, off, sizeof(V));
  if (indices.type == DType::kInt64)
    OneHotFill(indices.data_as<int64_t>(), prefix, depth, suffix, on_v, off_v, static_cast<V*>(out));
  else
    OneHotFill(indices.data_as<int32_t>(), prefix, depth, suffix, on_v, off_v, static_cast<V*>(out));
}

class OneHotKernel : public PlannedKernel {
 public:
  OneHotKernel() : PlannedKernel("one_hot/any/ref", {1}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 4, 4, 1));
    const rt::RtTensor& indices = *ctx.input(0);
    const rt::RtTensor& depth = *ctx.input(1);
    const rt::RtTensor& out = *ctx.output(0);
    if (indices.type != DType::kInt32 && indices.type != DType::kInt64)
      return ctx.UnsupportedError("indices " + Describe(indices) + " must be int32 or int64");
    switch (out.type) {
      case DType::kFloat32: case DType::kInt32: case DType::kInt64: case DType::kInt8: case DType::kUInt8:
      case DType::kBool:
        break;
      default:
        return ctx.UnsupportedError("output " + Describe(out) + ": type " + TypeName(out.type) +
                                    " is not supported (float32, int32, int64, int8, uint8, bool)");
    }
    for (int i : {2, 3}) {
      const rt::RtTensor& v = *ctx.input(i);
      const char* what = i == 2 ? "on_value " : "off_value ";
      if (v.type != out.type) return ctx.Error(what + Describe(v) + " must have the output's type " + TypeName(out.type));
      if (v.num_elements() != 1) return ctx.Error(what + Describe(v) + " must hold exactly one value");
    }
    if (depth.type != DType::kInt32) return ctx.Error("depth " + Describe(depth) + " must be int32");
    if (depth.num_elements() != 1) return ctx.Error("depth " + Describe(depth) + " must hold exactly one value");
    const int rank = indices.rank();
    const int axis = GetOptions<tflite::OneHotOptionsT>(ctx.op()).axis;
    axis_ = axis == -1 ? rank : axis;
    if (axis_ < 0 || axis_ > rank)
      return ctx.Error("axis " + std::to_string(axis) + " is out of range for indices of rank " + std::to_string(rank) +
                       " (-1 or 0.." + std::to_string(rank) + ")");
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& indices = *ctx.input(0);
    depth_ = ctx.input(1)->data_as<int32_t>()[0];
    if (depth_ < 0) return ctx.Error("depth " + std::to_string(depth_) + " is negative");
    std::vector<int64_t> dims(indices.shape.begin(), indices.shape.end());
    dims.insert(dims.begin() + axis_, depth_);
    rt::Shape shape;
    RETURN_IF_ERROR(CheckShapeFits(ctx, dims, "output shape", &shape));
    return ctx.SetOutputShape(0, std::move(shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& indices = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    int64_t prefix = 1;
    for (int d = 0; d < axis_; ++d) prefix *= indices.shape[d];
    if (prefix == 0 || depth_ == 0) return Status::Ok();
    const int64_t suffix = indices.num_elements() / prefix;
    const void* on = ctx.input(2)->data;
    const void* off = ctx.input(3)->data;
    switch (ElementBytes(out.type)) {
      case 1: OneHotOf<uint8_t>(indices, prefix, depth_, suffix, on, off, out.data); break;
      case 4: OneHotOf<uint32_t>(indices, prefix, depth_, suffix, on, off, out.data); break;
      default: OneHotOf<uint64_t>(indices, prefix, depth_, suffix, on, off, out.data); break;
    }
    return Status::Ok();
  }

 private:
  int axis_ = 0;
  int64_t depth_ = 0;
};

}  // namespace

void RegisterLookup(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_EMBEDDING_LOOKUP, MakeKernelFactory<EmbeddingLookupKernel>());
  r.Add(tflite::BuiltinOperator_ONE_HOT, MakeKernelFactory<OneHotKernel>());
}

}  // namespace edgeopt::kernels::index_ops
