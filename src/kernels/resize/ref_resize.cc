// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on NHWC tensors, output size from an int32 [2]
// tensor (h, w). Arithmetic is TFLite 2.9's, per type, as its x86 build runs it:
//  bilinear float32: optimized_ops path: a 2x upsample without align_corners/half_pixel_centers
//    uses the 2x2 kernel (averages), everything else accumulates the four corner products
//    (top-left, top-right, bottom-left, bottom-right) in float.
//  bilinear uint8: optimized generic small-channel path: float corner products summed in that
//    order, + 0.5, truncated. (2.9's special 8x upsample kernel for depth % 8 == 0 computes the
//    same exact values in 8.8 fixed point, so one formula covers both.)
//  bilinear int8/int16: reference ResizeBilinearInteger: 10-bit fixed-point positions, 20-bit
//    weights products, rounded half away from zero.
//    With AVX2 or AVX-512 (and not reference-only), float32 other than that 2x case and int8
//    (and int16 with AVX-512) run the same arithmetic on vectors of channels, output rows split
//    between threads
//    (bilinear_row.h; `resize_bilinear/float32/avx512`): identical bits, tested so.
//  nearest: float coordinates as reference GetNearestNeighbor (floor, or round with
//    align_corners; half_pixel_centers adds 0.5); a pure copy, so dtype-generic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/index_copy.h"
#include "kernels/common/planned_kernel.h"
#include "kernels/resize/resize.h"
#include "runtime/cpu.h"

namespace edgeopt::kernels::resize {
namespace {

class ResizeBase : public PlannedKernel {
 public:
  explicit ResizeBase(std::string variant) : PlannedKernel(std::move(variant), {1}) {}

 protected:
  Status CheckCommon(rt::KernelContext& ctx, bool align_corners, bool half_pixel) {
    RETURN_IF_ERROR(CheckIo(ctx, 2, 2, 1));
    const rt::RtTensor& in = *ctx.input(0);
    const rt::RtTensor& size = *ctx.input(1);
    if (in.rank() != 4) return ctx.Error("input must be 4-D (NHWC), is " + rt::ShapeToString(in.shape));
    if (size.type != DType::kInt32 || size.rank() != 1 || size.dim(0) != 2)
      return ctx.Error("size must be an int32 tensor of shape [2], is " + Describe(size));
    if (align_corners && half_pixel) return ctx.Error("align_corners and half_pixel_centers cannot both be set");
    return CheckSameType(ctx, 0, 0);
  }
  Status PlanSize(rt::KernelContext& ctx) {
    const rt::RtTensor& in = *ctx.input(0);
    std::vector<int64_t> size;
    RETURN_IF_ERROR(ReadIndexValues(ctx, *ctx.input(1), "size", &size));
    if (size[0] <= 0 || size[1] <= 0) return ctx.Error("size " + ValuesToString(size) + " must be positive");
    // The fixed-point kernels compute position * (2^10 * in / out) in int32.
    for (int d = 0; d < 2; ++d)
      if (size[d] * ((int64_t{1} << 10) * in.shape[d + 1] / size[d] + 1) > std::numeric_limits<int32_t>::max() - 4096)
        return ctx.Error("resizing dimension " + std::to_string(d + 1) + " of " + rt::ShapeToString(in.shape) + " to " +
                         std::to_string(size[d]) + " is too large");
    RETURN_IF_ERROR(CheckShapeFits(ctx, {in.shape[0], size[0], size[1], in.shape[3]}, "output shape", &out_shape_));
    return ctx.SetOutputShape(0, out_shape_);
  }
  rt::Shape out_shape_;
};

// ---------------------------------------------------------------------------------------------
// Bilinear

void InterpolationFloat(int32_t value, float scale, bool half_pixel, int32_t in_size, float* scaled, int32_t* lo,
                        int32_t* hi) {
  *scaled = half_pixel ? (static_cast<float>(value) + 0.5f) * scale - 0.5f : static_cast<float>(value) * scale;
  *lo = std::max(static_cast<int32_t>(std::floor(*scaled)), 0);
  *hi = std::min(static_cast<int32_t>(std::ceil(*scaled)), in_size - 1);
}

void InterpolationInteger(int32_t value, int32_t scale_10, bool half_pixel, int32_t in_size, int32_t* scaled,
                          int32_t* lo, int32_t* hi) {
  *scaled = half_pixel ? value * scale_10 + scale_10 / 2 - (1 << 9) : value * scale_10;
  *lo = std::max(*scaled / (1 << 10), 0);
  *hi = std::min((*scaled + (1 << 10) - 1) / (1 << 10), in_size - 1);
}

float FloatScale(int32_t in, int32_t out, bool align) {
  return align && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                          : static_cast<float>(in) / static_cast<float>(out);
}

template <typename T>
void BilinearFloatMath(const rt::RtTensor& in, const rt::Shape& out_shape, bool align, bool half_pixel, T* out) {
  const int32_t batches = in.shape[0], in_h = in.shape[1], in_w = in.shape[2], depth = in.shape[3];
  const int32_t out_h = out_shape[1], out_w = out_shape[2];
  const T* x = in.data_as<T>();
  const float h_scale = FloatScale(in_h, out_h, align), w_scale = FloatScale(in_w, out_w, align);
  const float rounding = std::is_integral_v<T> ? 0.5f : 0.0f;
  auto at = [&](int32_t b, int32_t y, int32_t xx) { return x + ((static_cast<int64_t>(b) * in_h + y) * in_w + xx) * depth; };
  T* o = out;
  for (int32_t b = 0; b < batches; ++b)
    for (int32_t y = 0; y < out_h; ++y) {
      float iy;
      int32_t y0, y1;
      InterpolationFloat(y, h_scale, half_pixel, in_h, &iy, &y0, &y1);
      for (int32_t xo = 0; xo < out_w; ++xo) {
        float ix;
        int32_t x0, x1;
        InterpolationFloat(xo, w_scale, half_pixel, in_w, &ix, &x0, &x1);
        const float s00 = (1 - (iy - y0)) * (1 - (ix - x0));
        const float s01 = (1 - (iy - y0)) * (ix - x0);
        const float s10 = (iy - y0) * (1 - (ix - x0));
        const float s11 = (iy - y0) * (ix - x0);
        const T *p00 = at(b, y0, x0), *p01 = at(b, y0, x1), *p10 = at(b, y1, x0), *p11 = at(b, y1, x1);
        for (int32_t c = 0; c < depth; ++c) {
          if constexpr (std::is_integral_v<T>) {
            // One expression, summed left to right (optimized_ops small-channel kernel).
            const float v = p00[c] * s00 + p01[c] * s01 + p10[c] * s10 + p11[c] * s11 + rounding;
            *o++ = static_cast<T>(v);
          } else {
            // Accumulated corner by corner into a zeroed output (optimized_ops generic kernel).
            float acc = 0.0f;
            acc += p00[c] * s00;
            acc += p01[c] * s01;
            acc += p10[c] * s10;
            acc += p11[c] * s11;
            *o++ = acc;
          }
        }
      }
    }
}

void Bilinear2x2Float(const rt::RtTensor& in, const rt::Shape& out_shape, float* out) {
  const int32_t batches = in.shape[0], in_h = in.shape[1], in_w = in.shape[2], depth = in.shape[3];
  const int32_t out_h = out_shape[1], out_w = out_shape[2];
  const float* x = in.data_as<float>();
  auto in_at = [&](int32_t b, int32_t y, int32_t xx) { return x + ((static_cast<int64_t>(b) * in_h + y) * in_w + xx) * depth; };
  auto out_at = [&](int32_t b, int32_t y, int32_t xx) {
    return out + ((static_cast<int64_t>(b) * out_h + y) * out_w + xx) * depth;
  };
  for (int32_t b = 0; b < batches; ++b)
    for (int32_t y0 = 0, y = 0; y <= out_h - 2; y += 2, ++y0)
      for (int32_t x0 = 0, xo = 0; xo <= out_w - 2; xo += 2, ++x0) {
        const int32_t x1 = std::min(x0 + 1, in_w - 1), y1 = std::min(y0 + 1, in_h - 1);
        const float *p00 = in_at(b, y0, x0), *p10 = in_at(b, y0, x1), *p01 = in_at(b, y1, x0), *p11 = in_at(b, y1, x1);
        float *tl = out_at(b, y, xo), *tr = out_at(b, y, xo + 1), *bl = out_at(b, y + 1, xo), *br = out_at(b, y + 1, xo + 1);
        for (int32_t c = 0; c < depth; ++c) {
          const float a = p00[c], bx = p10[c], cy = p01[c], d = p11[c];
          tl[c] = a;
          tr[c] = (a + bx) / 2;
          const float left = (a + cy) / 2;
          bl[c] = left;
          br[c] = (left + ((bx + d) / 2)) / 2;
        }
      }
}

// Input pixels per output pixel in 1/1024 units, rounded to nearest.
int32_t IntegerScale(int32_t in, int32_t out, bool align) {
  if (align && out > 1) return ((1 << 10) * (in - 1) + (out - 1) / 2) / (out - 1);
  return ((1 << 10) * in + out / 2) / out;
}

template <typename T>
void BilinearInteger(const rt::RtTensor& in, const rt::Shape& out_shape, bool align, bool half_pixel, T* out) {
  const int32_t batches = in.shape[0], in_h = in.shape[1], in_w = in.shape[2], depth = in.shape[3];
  const int32_t out_h = out_shape[1], out_w = out_shape[2];
  const T* x = in.data_as<T>();
  const int32_t h_scale = IntegerScale(in_h, out_h, align), w_scale = IntegerScale(in_w, out_w, align);
  auto at = [&](int32_t b, int32_t y, int32_t xx) { return x + ((static_cast<int64_t>(b) * in_h + y) * in_w + xx) * depth; };
  T* o = out;
  for (int32_t b = 0; b < batches; ++b)
    for (int32_t y = 0; y < out_h; ++y) {
      int32_t iy, y0, y1;
      InterpolationInteger(y, h_scale, half_pixel, in_h, &iy, &y0, &y1);
      for (int32_t xo = 0; xo < out_w; ++xo) {
        int32_t ix, x0, x1;
        InterpolationInteger(xo, w_scale, half_pixel, in_w, &ix, &x0, &x1);
        const int32_t dy = iy - (1 << 10) * y0, dx = ix - (1 << 10) * x0;
        const T *p00 = at(b, y0, x0), *p10 = at(b, y1, x0), *p01 = at(b, y0, x1), *p11 = at(b, y1, x1);
        for (int32_t c = 0; c < depth; ++c) {
          const int64_t v = static_cast<int64_t>(p00[c]) * ((1 << 10) - dy) * ((1 << 10) - dx) +
                            static_cast<int64_t>(p10[c]) * dy * ((1 << 10) - dx) +
                            static_cast<int64_t>(p01[c]) * ((1 << 10) - dy) * dx +
                            static_cast<int64_t>(p11[c]) * dy * dx;
          const int64_t round = v > 0 ? (1 << 19) : -(1 << 19);
          *o++ = static_cast<T>((v + round) / (1 << 20));
        }
      }
    }
}

// The reference arithmetic for every type; float32 and int8 run the row functions of
// bilinear_row.h on the thread pool when they are given (same results bit for bit), except for
// the float 2x upsample that TFLite 2.9 computes with its own averaging kernel (kept as the
// reference does it).
struct BilinearFast {
  BilinearRowFn f32 = nullptr;
  BilinearRowInt8Fn i8 = nullptr;
  const char* isa = "";
  BilinearRowInt16Fn i16 = nullptr;  // AVX-512 only
};

class ResizeBilinearKernel : public ResizeBase {
 public:
  explicit ResizeBilinearKernel(BilinearFast fast) : ResizeBase("resize_bilinear/any/ref"), fast_(fast) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::ResizeBilinearOptionsT>(ctx.op());
    align_ = o.align_corners;
    half_pixel_ = o.half_pixel_centers;
    RETURN_IF_ERROR(CheckCommon(ctx, align_, half_pixel_));
    const DType t = ctx.input(0)->type;
    if (t != DType::kFloat32 && t != DType::kUInt8 && t != DType::kInt8 && t != DType::kInt16)
      return ctx.UnsupportedError("input of type " + TypeName(t) + " is not supported");
    set_variant("resize_bilinear/" + TypeName(t) + "/ref");
    return Status::Ok();
  }
  Status Plan(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(PlanSize(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    use_fast_ = (fast_.f32 && in.type == DType::kFloat32 && !TwoByTwo(in)) || (fast_.i8 && in.type == DType::kInt8) ||
                (fast_.i16 && in.type == DType::kInt16);
    set_variant("resize_bilinear/" + TypeName(in.type) + "/" + (use_fast_ ? fast_.isa : "ref"));
    if (!use_fast_) return Status::Ok();
    // Per output column and row: the reference's positions and fractions.
    const int32_t in_h = in.shape[1], in_w = in.shape[2], depth = in.shape[3];
    const int32_t out_h = out_shape_[1], out_w = out_shape_[2];
    rows_.resize(out_h);
    if (in.type == DType::kFloat32) {
      cols_.resize(out_w);
      const float h_scale = FloatScale(in_h, out_h, align_), w_scale = FloatScale(in_w, out_w, align_);
      for (int32_t x = 0; x < out_w; ++x) {
        float ix;
        int32_t x0, x1;
        InterpolationFloat(x, w_scale, half_pixel_, in_w, &ix, &x0, &x1);
        cols_[x] = {int64_t{x0} * depth, int64_t{x1} * depth, ix - x0};
      }
      for (int32_t y = 0; y < out_h; ++y) {
        float iy;
        InterpolationFloat(y, h_scale, half_pixel_, in_h, &iy, &rows_[y].y0, &rows_[y].y1);
        rows_[y].fy = iy - rows_[y].y0;
      }
    } else {
      colsq_.resize(out_w);
      const int32_t h_scale = IntegerScale(in_h, out_h, align_), w_scale = IntegerScale(in_w, out_w, align_);
      for (int32_t x = 0; x < out_w; ++x) {
        int32_t ix, x0, x1;
        InterpolationInteger(x, w_scale, half_pixel_, in_w, &ix, &x0, &x1);
        colsq_[x] = {int64_t{x0} * depth, int64_t{x1} * depth, ix - (1 << 10) * x0};
      }
      for (int32_t y = 0; y < out_h; ++y) {
        int32_t iy;
        InterpolationInteger(y, h_scale, half_pixel_, in_h, &iy, &rows_[y].y0, &rows_[y].y1);
        rows_[y].dy = iy - (1 << 10) * rows_[y].y0;
      }
    }
    return Status::Ok();
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    rt::RtTensor& out = *ctx.output(0);
    if (out.num_elements() == 0) return Status::Ok();
    if (use_fast_) {
      if (in.type == DType::kFloat32) {
        RunRows<float>(ctx, [&](const float* r0, const float* r1, const Row& row, float* o) {
          fast_.f32(r0, r1, cols_.data(), out_shape_[2], in.shape[3], row.fy, o);
        });
      } else if (in.type == DType::kInt16) {
        RunRows<int16_t>(ctx, [&](const int16_t* r0, const int16_t* r1, const Row& row, int16_t* o) {
          fast_.i16(r0, r1, colsq_.data(), out_shape_[2], in.shape[3], row.dy, o);
        });
      } else {
        RunRows<int8_t>(ctx, [&](const int8_t* r0, const int8_t* r1, const Row& row, int8_t* o) {
          fast_.i8(r0, r1, colsq_.data(), out_shape_[2], in.shape[3], row.dy, o);
        });
      }
      return Status::Ok();
    }
    switch (in.type) {
      case DType::kFloat32:
        if (TwoByTwo(in)) {
          Bilinear2x2Float(in, out_shape_, out.data_as<float>());
        } else {
          BilinearFloatMath<float>(in, out_shape_, align_, half_pixel_, out.data_as<float>());
        }
        break;
      case DType::kUInt8: BilinearFloatMath<uint8_t>(in, out_shape_, align_, half_pixel_, out.data_as<uint8_t>()); break;
      case DType::kInt8: BilinearInteger<int8_t>(in, out_shape_, align_, half_pixel_, out.data_as<int8_t>()); break;
      default: BilinearInteger<int16_t>(in, out_shape_, align_, half_pixel_, out.data_as<int16_t>()); break;
    }
    return Status::Ok();
  }

 private:
  struct Row {
    int32_t y0, y1;
    float fy;    // float32: fraction
    int32_t dy;  // int8: fraction in 1/1024 units
  };

  bool TwoByTwo(const rt::RtTensor& in) const {
    return !align_ && !half_pixel_ && out_shape_[1] == 2 * in.shape[1] && out_shape_[2] == 2 * in.shape[2];
  }

  // Output rows (over all images) split between threads, at least ~16K outputs per part:
  // row_fn(top input row, bottom input row, row plan, output row).
  template <typename T, typename RowFn>
  void RunRows(rt::KernelContext& ctx, const RowFn& row_fn) {
    const rt::RtTensor& in = *ctx.input(0);
    const int32_t in_h = in.shape[1], depth = in.shape[3], out_h = out_shape_[1], out_w = out_shape_[2];
    const int64_t in_row = int64_t{in.shape[2]} * depth, out_row = int64_t{out_w} * depth;
    const T* x = in.data_as<T>();
    T* o = ctx.output(0)->data_as<T>();
    const int64_t rows = int64_t{out_shape_[0]} * out_h;
    ctx.threads().ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_row)),
                              [&](int64_t begin, int64_t end) {
                                for (int64_t r = begin; r < end; ++r) {
                                  const Row& row = rows_[r % out_h];
                                  const T* image = x + r / out_h * in_h * in_row;
                                  row_fn(image + row.y0 * in_row, image + row.y1 * in_row, row, o + r * out_row);
                                }
                              });
  }

  const BilinearFast fast_;  // null functions: the reference arithmetic only
  bool align_ = false, half_pixel_ = false;
  bool use_fast_ = false;
  std::vector<BilinearColumn> cols_;
  std::vector<BilinearColumnQ> colsq_;
  std::vector<Row> rows_;
};

rt::KernelFactory BilinearFactory() {
  return [](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    BilinearFast fast;
    if (!cc.reference_only && cc.cpu.has_avx512()) {
      fast = {BilinearRowAvx512(), BilinearRowInt8Avx512(), "avx512", BilinearRowInt16Avx512()};
    } else if (!cc.reference_only && cc.cpu.has_avx2_fma()) {
      fast = {BilinearRowAvx2(), BilinearRowInt8Avx2(), "avx2"};
    }
    return std::unique_ptr<rt::OpKernel>(new ResizeBilinearKernel(fast));
  };
}

// ---------------------------------------------------------------------------------------------
// Nearest neighbor

int32_t NearestIndex(int32_t value, int32_t in_size, int32_t out_size, bool align, bool half_pixel) {
  const float scale = align && out_size > 1 ? (in_size - 1) / static_cast<float>(out_size - 1)
                                            : in_size / static_cast<float>(out_size);
  const float offset = half_pixel ? 0.5f : 0.0f;
  const float pos = (value + offset) * scale;
  int32_t v = std::min(align ? static_cast<int32_t>(std::round(pos)) : static_cast<int32_t>(std::floor(pos)), in_size - 1);
  if (half_pixel) v = std::max(v, 0);
  return v;
}

class ResizeNearestKernel : public ResizeBase {
 public:
  ResizeNearestKernel() : ResizeBase("resize_nearest_neighbor/any/ref") {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::ResizeNearestNeighborOptionsT>(ctx.op());
    align_ = o.align_corners;
    half_pixel_ = o.half_pixel_centers;
    RETURN_IF_ERROR(CheckCommon(ctx, align_, half_pixel_));
    return CheckCopyableType(ctx, *ctx.input(0), "input");
  }
  Status Plan(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(PlanSize(ctx));
    const rt::RtTensor& in = *ctx.input(0);
    const auto s = RowMajorStrides(in.shape);
    tables_.assign(4, {});
    tables_[0] = AffineTable(out_shape_[0], 0, s[0]);
    for (int d = 1; d <= 2; ++d) {
      tables_[d].resize(out_shape_[d]);
      for (int32_t o = 0; o < out_shape_[d]; ++o)
        tables_[d][o] = NearestIndex(o, in.shape[d], out_shape_[d], align_, half_pixel_) * s[d];
    }
    tables_[3] = AffineTable(out_shape_[3], 0, 1);
    return Status::Ok();
  }
  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    if (in.num_elements() == 0) return Status::Ok();
    CopyByAxisTables(ElementBytes(in.type), out_shape_, tables_, in.data, ctx.output(0)->data);
    return Status::Ok();
  }

 private:
  bool align_ = false, half_pixel_ = false;
  AxisTables tables_;
};

}  // namespace

void RegisterResize(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_RESIZE_BILINEAR, BilinearFactory());
  r.Add(tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, MakeKernelFactory<ResizeNearestKernel>());
}

}  // namespace edgeopt::kernels::resize
