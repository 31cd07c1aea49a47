#include "kernels/common/tensor_args.h"

#include <limits>

#include "kernels/common/kernel_util.h"

namespace edgeopt::kernels {

size_t ElementBytes(DType t) {
  switch (t) {
    case DType::kString:
    case DType::kInt4:
    case DType::kResource:
    case DType::kVariant:
      return 0;
    default:
      return DTypeSize(t);
  }
}

Status ReadIndexValues(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what,
                       std::vector<int64_t>* out) {
  if (t.type != DType::kInt32 && t.type != DType::kInt64)
    return ctx.Error(what + " must be int32 or int64, is " + TypeName(t.type));
  const int64_t n = t.num_elements();
  const size_t need = DTypeBytes(t.type, static_cast<size_t>(n));
  if (n > 0 && (!t.data || t.bytes < need)) return ctx.Error(what + " has no data");
  out->resize(static_cast<size_t>(n));
  if (t.type == DType::kInt32) {
    const int32_t* p = t.data_as<int32_t>();
    for (int64_t i = 0; i < n; ++i) (*out)[i] = p[i];
  } else {
    const int64_t* p = t.data_as<int64_t>();
    for (int64_t i = 0; i < n; ++i) (*out)[i] = p[i];
  }
  return Status::Ok();
}

Status ReadScalarIndex(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what, int64_t* out) {
  if (t.num_elements() != 1)
    return ctx.Error(what + " must hold one value, has shape " + rt::ShapeToString(t.shape));
  std::vector<int64_t> v;
  RETURN_IF_ERROR(ReadIndexValues(ctx, t, what, &v));
  *out = v[0];
  return Status::Ok();
}

Status ResolveAxis(const rt::KernelContext& ctx, int64_t axis, int rank, const std::string& what, int* out) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return ctx.Error(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  *out = static_cast<int>(a);
  return Status::Ok();
}

Status CheckShapeFits(const rt::KernelContext& ctx, const std::vector<int64_t>& dims, const std::string& what,
                      rt::Shape* out) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  out->clear();
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMax) return ctx.Error(what + " " + ValuesToString(dims) + " has an invalid dimension");
    if (d != 0 && total > kMax / d)
      return ctx.Error(what + " " + ValuesToString(dims) + " has more than 2^31 elements");
    total *= d;
    out->push_back(static_cast<int32_t>(d));
  }
  return Status::Ok();
}

std::string ValuesToString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::vector<int64_t> RowMajorStrides(const rt::Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

}  // namespace edgeopt::kernels
