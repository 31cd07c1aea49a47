// DEPTH_TO_SPACE, SPACE_TO_DEPTH (NHWC, TFLite's DCR channel order) and BATCH_TO_SPACE_ND,
// SPACE_TO_BATCH_ND (any number of spatial block dimensions after the batch). Pure data
// movement, dtype-generic; SPACE_TO_BATCH_ND pads with zero (the output zero point for
// quantized tensors, as TFLite 2.9). Outside the reference mode DEPTH_TO_SPACE / SPACE_TO_DEPTH
// copy whole runs (block_size pixels' channels are contiguous on one side) row by row over the
// threads (variant .../any/runs).
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/common/index_copy.h"
#include "kernels/common/planned_kernel.h"
#include "kernels/resize/resize.h"

namespace edgeopt::kernels::resize {
namespace {

bool IsQuantType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

class DepthSpaceKernel : public PlannedKernel {
 public:
  // fast: copy the runs that stay contiguous (block_size pixels' channels) row by row over the
  // threads instead of the reference's per-pixel element tables.
  DepthSpaceKernel(bool to_space, bool fast)
      : PlannedKernel(to_space ? "depth_to_space/any/ref" : "space_to_depth/any/ref", {}), to_space_(to_space),
        fast_(fast) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    if (in.rank() != 4) return ctx.Error("input must be 4-D (NHWC), is " + rt::ShapeToString(in.shape));
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const int32_t b = to_space_ ? GetOptions<tflite::DepthToSpaceOptionsT>(ctx.op()).block_size
                                : GetOptions<tflite::SpaceToDepthOptionsT>(ctx.op()).block_size;
    if (b < 1 || b > 4096) return ctx.Error("block_size " + std::to_string(b) + " is invalid");
    const int32_t n = in.shape[0], h = in.shape[1], w = in.shape[2], c = in.shape[3];
    block_ = b;
    set_variant(std::string(to_space_ ? "depth_to_space" : "space_to_depth") + (fast_ ? "/any/runs" : "/any/ref"));
    const auto s = RowMajorStrides(in.shape);
    tables_.assign(4, {});
    if (to_space_) {
      if (c % (b * b) != 0)
        return ctx.Error("depth " + std::to_string(c) + " is not a multiple of block_size^2 = " + std::to_string(b * b));
      const int32_t oc = c / (b * b);
      RETURN_IF_ERROR(CheckShapeFits(ctx, {n, int64_t{h} * b, int64_t{w} * b, oc}, "output shape", &out_shape_));
      // out[n, y, x, k] = in[n, y / b, x / b, ((y % b) * b + x % b) * oc + k]
      tables_[0] = AffineTable(n, 0, s[0]);
      for (int32_t y = 0; y < out_shape_[1]; ++y) tables_[1].push_back((y / b) * s[1] + (y % b) * b * oc);
      for (int32_t x = 0; x < out_shape_[2]; ++x) tables_[2].push_back((x / b) * s[2] + (x % b) * oc);
      tables_[3] = AffineTable(oc, 0, 1);
    } else {
      if (h % b != 0 || w % b != 0)
        return ctx.Error("height " + std::to_string(h) + " and width " + std::to_string(w) +
                         " must be multiples of block_size " + std::to_string(b));
      RETURN_IF_ERROR(CheckShapeFits(ctx, {n, h / b, w / b, int64_t{c} * b * b}, "output shape", &out_shape_));
      // out[n, y, x, (by * b + bx) * c + k] = in[n, y * b + by, x * b + bx, k]
      tables_[0] = AffineTable(n, 0, s[0]);
      tables_[1] = AffineTable(out_shape_[1], 0, b * s[1]);
      tables_[2] = AffineTable(out_shape_[2], 0, b * s[2]);
      for (int32_t k = 0; k < out_shape_[3]; ++k) {
        const int32_t by = k / (b * c), bx = (k / c) % b, ch = k % c;
        tables_[3].push_back(by * s[1] + bx * s[2] + ch);
      }
    }
    return ctx.SetOutputShape(0, out_shape_);
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    if (in.num_elements() == 0) return Status::Ok();
    if (fast_) {
      CopyRuns(ctx, in);
      return Status::Ok();
    }
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  // n bytes from s to d, in 16-, 8-, 4-byte and single moves (runs are short: block_size
  // pixels' channels).
  static void CopyBytes(uint8_t* d, const uint8_t* s, int64_t n) {
    for (; n >= 16; n -= 16, d += 16, s += 16) std::memcpy(d, s, 16);
    if (n >= 8) std::memcpy(d, s, 8), n -= 8, d += 8, s += 8;
    if (n >= 4) std::memcpy(d, s, 4), n -= 4, d += 4, s += 4;
    for (; n > 0; --n) *d++ = *s++;
  }

  // DEPTH_TO_SPACE: output row y of image i takes, for every input pixel x of row y / b, its
  // channels [(y % b) * b * oc, + b * oc) as b output pixels in a row. SPACE_TO_DEPTH: output
  // pixel (y, x) takes, for every by, input pixels x * b .. x * b + b - 1 of row y * b + by (b * c
  // contiguous values) as channels [by * b * c, + b * c).
  void CopyRuns(rt::KernelContext& ctx, const rt::RtTensor& in) const {
    const int64_t eb = ElementBytes(in.type), b = block_;
    const int64_t h = in.shape[1], w = in.shape[2], c = in.shape[3];
    const int64_t oh = out_shape_[1], ow = out_shape_[2], oc = out_shape_[3];
    const auto* src = static_cast<const uint8_t*>(in.data);
    auto* dst = static_cast<uint8_t*>(ctx.output(0)->data);
    const int64_t rows = out_shape_[0] * oh;
    ctx.threads().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ow * oc * eb)), [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        const int64_t img = row / oh, y = row % oh;
        uint8_t* out_row = dst + row * ow * oc * eb;
        if (to_space_) {
          const int64_t run = b * oc * eb;
          const uint8_t* in_row = src + ((img * h + y / b) * w * c + (y % b) * b * oc) * eb;
          for (int64_t x = 0; x < w; ++x) CopyBytes(out_row + x * run, in_row + x * c * eb, run);
        } else {
          const int64_t run = b * c * eb;
          for (int64_t by = 0; by < b; ++by) {
            const uint8_t* in_row = src + (img * h + y * b + by) * w * c * eb;
            for (int64_t x = 0; x < ow; ++x) CopyBytes(out_row + (x * oc + by * b * c) * eb, in_row + x * run, run);
          }
        }
      }
    });
  }

  bool to_space_;
  bool fast_;
  int64_t block_ = 1;
  rt::Shape out_shape_;
  AxisTables tables_;
};

// Steps a multi-index over `dims` (m of them); false after the last one.
bool NextIndex(DimBuffer<int64_t>& idx, const DimBuffer<int64_t>& dims, int m) {
  for (int d = m - 1; d >= 0; --d) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// Shared by BATCH_TO_SPACE_ND (crops) and SPACE_TO_BATCH_ND (paddings): input, block_shape
// [M], and an [M, 2] tensor.
class BatchSpaceKernel : public PlannedKernel {
 public:
  explicit BatchSpaceKernel(bool to_space)
      : PlannedKernel(to_space ? "batch_to_space_nd/any/ref" : "space_to_batch_nd/any/ref", {1, 2}),
        to_space_(to_space) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 3, 3, 1));
    const rt::RtTensor& in = *ctx.input(0);
    RETURN_IF_ERROR(CheckCopyableType(ctx, in, "input"));
    RETURN_IF_ERROR(CheckSameType(ctx, 0, 0));
    const rt::RtTensor& block = *ctx.input(1);
    const rt::RtTensor& pads = *ctx.input(2);
    const char* what = to_space_ ? "crops" : "paddings";
    if (block.rank() != 1 || block.dim(0) < 1 || block.dim(0) >= in.rank())
      return ctx.Error("block_shape " + rt::ShapeToString(block.shape) + " must be 1-D with 1.." +
                       std::to_string(in.rank() - 1) + " entries for input " + rt::ShapeToString(in.shape));
    if (pads.rank() != 2 || pads.dim(0) != block.dim(0) || pads.dim(1) != 2)
      return ctx.Error(std::string(what) + " " + rt::ShapeToString(pads.shape) + " must be [" +
                       std::to_string(block.dim(0)) + ",2]");
    pad_value_.assign(ElementBytes(in.type), 0);
    if (IsQuantType(in.type)) {
      const int32_t zp = ctx.output(0)->zero_point();
      if (in.type == DType::kInt16) {
        const int16_t v = static_cast<int16_t>(zp);
        std::memcpy(pad_value_.data(), &v, 2);
      } else {
        pad_value_[0] = static_cast<uint8_t>(zp);
      }
    }
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const char* what = to_space_ ? "crops" : "paddings";
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "block_shape", &block_));
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(2), what, &pads_));
    const int m = static_cast<int>(block_.size());
    int64_t block_total = 1;
    for (int64_t v : block_) {
      if (v < 1 || v > (1 << 20)) return ctx.Error("block_shape " + ValuesToString(block_) + " must be positive");
      block_total *= v;
      if (block_total > std::numeric_limits<int32_t>::max())
        return ctx.Error("block_shape " + ValuesToString(block_) + " is too large");
    }
    for (int64_t v : pads_)
      if (v < 0 || v > std::numeric_limits<int32_t>::max())
        return ctx.Error(std::string(what) + " " + ValuesToString(pads_) + " must be in [0, 2^31)");
    std::vector<int64_t> out(in.shape.begin(), in.shape.end());
    if (to_space_) {
      if (in.shape[0] % block_total != 0)
        return ctx.Error("batch " + std::to_string(in.shape[0]) + " is not a multiple of the block size " +
                         std::to_string(block_total));
      out[0] = in.shape[0] / block_total;
      for (int i = 0; i < m; ++i) {
        out[i + 1] = in.shape[i + 1] * block_[i] - pads_[2 * i] - pads_[2 * i + 1];
        if (out[i + 1] < 0)
          return ctx.Error("crops " + ValuesToString(pads_) + " exceed the spatial size of " + rt::ShapeToString(in.shape));
      }
    } else {
      out[0] = in.shape[0] * block_total;
      for (int i = 0; i < m; ++i) {
        const int64_t padded = in.shape[i + 1] + pads_[2 * i] + pads_[2 * i + 1];
        if (padded % block_[i] != 0)
          return ctx.Error("padded dimension " + std::to_string(i + 1) + " (" + std::to_string(padded) +
                           ") is not a multiple of block size " + std::to_string(block_[i]));
        out[i + 1] = padded / block_[i];
      }
    }
    RETURN_IF_ERROR(CheckShapeFits(ctx, out, "output shape", &out_shape_));
    in_stride_ = RowMajorStrides(in.shape);
    out_stride_ = RowMajorStrides(out_shape_);
    return ctx.SetOutputShape(0, out_shape_);
  }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& outt = *ctx.output(0);
    const size_t elem = ElementBytes(in.type);
    const int m = static_cast<int>(block_.size());
    int64_t inner = 1;
    for (int d = m + 1; d < in.rank(); ++d) inner *= in.shape[d];
    const size_t row = static_cast<size_t>(inner) * elem;
    const auto& in_stride = in_stride_;
    const auto& out_stride = out_stride_;
    // "space" is the side with the large spatial dims: the output for BATCH_TO_SPACE, the
    // input for SPACE_TO_BATCH; "batch" the other. Iterate the batch side (as TFLite does).
    const rt::Shape& batch_shape = to_space_ ? in.shape : out_shape_;
    const rt::Shape& space_shape = to_space_ ? out_shape_ : in.shape;
    const auto& batch_stride = to_space_ ? in_stride : out_stride;
    const auto& space_stride = to_space_ ? out_stride : in_stride;
    const uint8_t* src = in.data;
    uint8_t* dst = outt.data;
    if (rt::NumElements(batch_shape) == 0) return Status::Ok();
    const int64_t space_batch = space_shape[0];
    DimBuffer<int64_t> dims(m), idx(m, 0), offset(m);
    for (int i = 0; i < m; ++i) dims[i] = batch_shape[i + 1];
    for (int64_t b = 0; b < batch_shape[0]; ++b) {
      const int64_t sb = b % space_batch;
      int64_t rest = b / space_batch;
      for (int i = m - 1; i >= 0; --i) {
        offset[i] = rest % block_[i];
        rest /= block_[i];
      }
      for (int i = 0; i < m; ++i) idx[i] = 0;
      do {
        bool inside = true;
        int64_t space_off = sb * space_stride[0], batch_off = b * batch_stride[0];
        for (int i = 0; i < m; ++i) {
          const int64_t pos = idx[i] * block_[i] + offset[i] - pads_[2 * i];
          if (pos < 0 || pos >= space_shape[i + 1]) inside = false;
          space_off += pos * space_stride[i + 1];
          batch_off += idx[i] * batch_stride[i + 1];
        }
        if (to_space_) {
          if (inside && row) std::memcpy(dst + space_off * static_cast<int64_t>(elem), src + batch_off * static_cast<int64_t>(elem), row);
        } else if (inside) {
          if (row) std::memcpy(dst + batch_off * static_cast<int64_t>(elem), src + space_off * static_cast<int64_t>(elem), row);
        } else {
          FillElements(elem, pad_value_.data(), dst + batch_off * static_cast<int64_t>(elem), inner);
        }
      } while (NextIndex(idx, dims, m));
    }
    return Status::Ok();
  }

 private:
  bool to_space_;
  std::vector<int64_t> block_, pads_;
  std::vector<int64_t> in_stride_, out_stride_;
  std::vector<uint8_t> pad_value_;
  rt::Shape out_shape_;
};

}  // namespace

void RegisterSpaceDepth(rt::OpRegistry& r) {
  for (const bool to_space : {true, false})
    r.Add(to_space ? tflite::BuiltinOperator_DEPTH_TO_SPACE : tflite::BuiltinOperator_SPACE_TO_DEPTH,
          [to_space](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
            return std::unique_ptr<rt::OpKernel>(new DepthSpaceKernel(to_space, !cc.reference_only));
          });
  r.Add(tflite::BuiltinOperator_BATCH_TO_SPACE_ND, MakeKernelFactory<BatchSpaceKernel>(true));
  r.Add(tflite::BuiltinOperator_SPACE_TO_BATCH_ND, MakeKernelFactory<BatchSpaceKernel>(false));
}

}  // namespace edgeopt::kernels::resize
