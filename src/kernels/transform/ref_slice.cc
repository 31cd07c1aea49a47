// SLICE and STRIDED_SLICE. Both reduce to an index-table copy; all the work is resolving the
// index arguments exactly as TFLite 2.9 does (including its handling of ellipsis and new-axis
// masks through an "effective" input shape), then validating every range.
// Beyond 2.9: any rank (2.9: 5-D including new axes); int64 index tensors; the `offset` option
// of newer LiteRT (end = resolved begin + end; 2.9 ignores the field); a shrunk axis with a
// negative stride yields its element (2.9 leaves that output unwritten); a shrink index outside
// the dimension is an error.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/common/planned_kernel.h"
#include "kernels/common/index_copy.h"
#include "kernels/transform/transform.h"

namespace edgeopt::kernels::transform {
namespace {

// SLICE(input, begin, size): size -1 means "to the end".
class SliceKernel : public PlannedKernel {
 public:
  SliceKernel() : PlannedKernel("slice/any/ref", {1, 2}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    for (int i : {1, 2}) {
      const rt::RtTensor& t = *ctx.input(i);
      const char* name = i == 1 ? "begin" : "size";
      if (t.rank() != 1 || t.dim(0) != in.rank())
        return ctx.Error(std::string(name) + " " + rt::ShapeToString(t.shape) + " must be 1-D with " +
                         std::to_string(in.rank()) + " entries");
    }
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> begin, size;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "begin", &begin));
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(2), "size", &size));
    const auto strides = RowMajorStrides(in.shape);
    out_shape_.assign(in.rank(), 0);
    tables_.assign(in.rank(), {});
    for (int d = 0; d < in.rank(); ++d) {
      const int64_t dim = in.shape[d];
      const int64_t b = begin[d];
      int64_t s = size[d];
      if (s == -1 && b >= 0 && b <= dim) s = dim - b;
      if (b < 0 || b > dim || s < 0 || s > dim - b)
        return ctx.Error("begin " + ValuesToString(begin) + " and size " + ValuesToString(size) +
                         " do not fit input " + rt::ShapeToString(in.shape));
      out_shape_[d] = static_cast<int32_t>(s);
      tables_[d] = AffineTable(out_shape_[d], b * strides[d], strides[d]);
    }
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    // The innermost table steps by one element (the input's last axis, stride 1).
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data, nullptr, true);
    return Status::Ok();
  }

 private:
  rt::Shape out_shape_;
  AxisTables tables_;
};

// One axis of the effective (new-axis expanded) input.
struct EffectiveAxis {
  int64_t size = 1;     // dimension in the effective input
  int input_axis = -1;  // axis of the real input, -1 for an added (new) axis
  int64_t begin = 0, end = 0, stride = 1;
  bool begin_mask = false, end_mask = false, shrink = false;
};

int64_t Clamp64(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

class StridedSliceKernel : public PlannedKernel {
 public:
  StridedSliceKernel() : PlannedKernel("strided_slice/any/ref", {1, 2, 3}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 4, 4, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const int n = ctx.input(1)->rank() == 1 ? ctx.input(1)->dim(0) : -1;
    for (int i : {1, 2, 3}) {
      const rt::RtTensor& t = *ctx.input(i);
      static const char* kNames[] = {"", "begin", "end", "strides"};
      if (t.rank() != 1 || t.dim(0) != n)
        return ctx.Error(std::string(kNames[i]) + " " + rt::ShapeToString(t.shape) +
                         " must be 1-D, with as many entries as begin");
    }
    if (n > 30) return ctx.Error("too many slice entries (" + std::to_string(n) + ")");
    return Status::Ok();
  }

  // Mirrors TFLite 2.9's BuildStridedSliceParams: expands the ellipsis, inserts new axes as
  // dimensions of size 1, and maps every remaining spec entry to its effective axis.
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const auto& o = GetOptions<tflite::StridedSliceOptionsT>(ctx.op());
    std::vector<int64_t> begin, end, strides;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "begin", &begin));
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(2), "end", &end));
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(3), "strides", &strides));
    const int count = static_cast<int>(begin.size());
    const int input_dims = in.rank();
    auto bit = [](int32_t mask, int i) { return i >= 0 && i < 31 && ((mask >> i) & 1) != 0; };

    int num_add_axis = 0;
    for (int i = 0; i < count; ++i)
      if (!bit(o.ellipsis_mask, i) && bit(o.new_axis_mask, i)) ++num_add_axis;
    const int effective_dims = input_dims + num_add_axis;
    if (effective_dims > 30) return ctx.Error("too many dimensions after adding new axes");

    std::vector<char> is_ellipsis(effective_dims, 0), is_new(effective_dims, 0);
    int ellipsis_start = effective_dims, expanded_ellipsis = 0;
    for (int i = 0; i < effective_dims;) {
      if (bit(o.ellipsis_mask, i)) {
        ellipsis_start = i;
        const int ellipsis_end =
            std::max(i + 1, std::min(i + 1 + num_add_axis + input_dims - count, effective_dims));
        expanded_ellipsis = ellipsis_end - ellipsis_start - 1;
        for (; i < ellipsis_end; ++i) is_ellipsis[i] = 1;
        continue;
      }
      if (bit(o.new_axis_mask, i - expanded_ellipsis)) is_new[i] = 1;
      ++i;
    }

    std::vector<EffectiveAxis> axes(effective_dims);
    int added_ellipsis = 0, added_axes = 0;
    for (int i = 0; i < effective_dims; ++i) {
      EffectiveAxis& a = axes[i];
      if (is_ellipsis[i]) {
        added_ellipsis = std::max(0, i - ellipsis_start);
        a.begin_mask = a.end_mask = true;
        a.stride = 1;
        a.input_axis = i - added_axes;
      } else if (is_new[i]) {
        a.begin = 0;
        a.end = 1;
        a.stride = 1;
        a.input_axis = -1;
        ++added_axes;
      } else if (i >= count + expanded_ellipsis) {
        a.begin_mask = a.end_mask = true;
        a.stride = 1;
        a.input_axis = i - added_axes;
      } else {
        const int orig = i - added_ellipsis;
        if (orig < 0 || orig >= count) return ctx.Error("inconsistent ellipsis/new_axis masks");
        a.begin = ClampIndex(begin[orig]);
        a.end = ClampIndex(end[orig]);
        a.stride = ClampIndex(strides[orig]);
        a.begin_mask = bit(o.begin_mask, orig);
        a.end_mask = bit(o.end_mask, orig);
        a.shrink = bit(o.shrink_axis_mask, orig);
        a.input_axis = i - added_axes;
      }
      if (a.input_axis >= input_dims) return ctx.Error("slice spec has more entries than the input has dimensions");
      a.size = a.input_axis >= 0 ? in.shape[a.input_axis] : 1;
    }

    const auto in_strides = RowMajorStrides(in.shape);
    rt::Shape out_shape;  // shrunk axes removed
    AxisTables tables;
    int64_t base = 0;
    for (int i = 0; i < effective_dims; ++i) {
      const EffectiveAxis& a = axes[i];
      if (a.stride == 0) return ctx.Error("strides " + ValuesToString(strides) + " contain 0");
      const int64_t n = a.size;
      int64_t start = 0, count_i = 0;
      if (n > 0) {
        // Start (TFLite StartForAxis).
        start = a.begin;
        if (a.begin_mask) {
          start = a.stride > 0 ? std::numeric_limits<int32_t>::lowest() : std::numeric_limits<int32_t>::max();
        }
        if (start < 0) start += n;
        start = a.stride > 0 ? Clamp64(start, 0, n) : Clamp64(start, -1, n - 1);
        int64_t stop;
        if (a.shrink) {
          stop = start + 1;
        } else {
          stop = a.end;
          if (a.end_mask) {
            stop = a.stride > 0 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::lowest();
          } else if (o.offset) {
            stop = start + a.end;  // `end` holds sizes relative to the resolved begin
          }
          if (stop < 0) stop += n;
          stop = a.stride > 0 ? Clamp64(stop, 0, n) : Clamp64(stop, -1, n - 1);
        }
        if (a.shrink) {
          if (start < 0 || start >= n)
            return ctx.Error("shrink index " + std::to_string(a.begin) + " is out of range for dimension of size " +
                             std::to_string(n));
          count_i = 1;
        } else {
          const int64_t span = stop - start;
          const bool forward = span > 0;
          count_i = span == 0 || forward != (a.stride > 0) ? 0 : (std::abs(span) + std::abs(a.stride) - 1) / std::abs(a.stride);
        }
      } else if (a.shrink) {
        return ctx.Error("cannot shrink an empty dimension");
      }
      const int64_t step = a.input_axis >= 0 ? in_strides[a.input_axis] : 0;
      if (count_i > 0) base += start * step;
      if (a.shrink) continue;
      out_shape.push_back(static_cast<int32_t>(count_i));
      tables.push_back(AffineTable(static_cast<int32_t>(count_i), 0, a.stride * step));
    }
    base_ = base;
    // Affine tables: the innermost steps by one element when its first two entries do.
    inner_contiguous_ = !tables.empty() && (tables.back().size() < 2 || tables.back()[1] - tables.back()[0] == 1);
    tables_ = std::move(tables);
    out_shape_ = out_shape;
    return ctx.SetOutputShape(0, std::move(out_shape));
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const size_t elem = ElementBytes(in.type);
    if (rt::NumElements(out_shape_) == 0) return Status::Ok();
    CopyByAxisTables(elem, out_shape_, tables_, in.data + base_ * static_cast<int64_t>(elem), ctx.output(0)->data,
                     nullptr, inner_contiguous_);
    return Status::Ok();
  }

 private:
  rt::Shape out_shape_;
  AxisTables tables_;
  int64_t base_ = 0;
  bool inner_contiguous_ = false;
};

}  // namespace

void RegisterSlice(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_SLICE, MakeKernelFactory<SliceKernel>());
  r.Add(tflite::BuiltinOperator_STRIDED_SLICE, MakeKernelFactory<StridedSliceKernel>());
}

}  // namespace edgeopt::kernels::transform
