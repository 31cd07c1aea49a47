// MediaPipe's TFLite custom ops (version 2, as registered by MediaPipe's op resolver and used by
// face_landmark_with_attention.tflite), with the semantics of google/mediapipe's
// mediapipe/util/tflite/operations/{landmarks_to_transform_matrix,transform_tensor_bilinear,
// transform_landmarks}.cc. float32 only, as MediaPipe. Options are flexbuffer maps.
//
// Landmarks2TransformMatrix: landmarks [1, N, 3] -> matrix [1, 4, 4] (row-major). The rotation
//   is target_rotation_radians - atan2(right.y - left.y, right.x - left.x) for the landmarks
//   left_rotation_idx / right_rotation_idx; the landmarks listed in subset_idxs, rotated by it,
//   give an axis-aligned box (centre and size). The matrix maps an output pixel (x, y) of an
//   output_width x output_height crop to input coordinates:
//   Shift(centre) * Rotate(-rotation) * Scale(scale_x * box_w / output_width,
//   scale_y * box_h / output_height) * Shift(-output_width / 2, -output_height / 2).
// TransformTensorBilinear: image [1, H, W, C], matrix [1, 4, 4] -> [1, output_height,
//   output_width, C]. Output pixel (x, y) samples the input at (row 0, row 1 of the matrix,
//   corrected for pixel centres: M * (p + 0.5) - 0.5) . (x, y, 0, 1) bilinearly; samples outside
//   [0, W-1] x [0, H-1] are 0, and the neighbours past the last row/column read as 0.
// TransformLandmarks: landmarks [1, N, D] (D = 2 or 3), matrix [1, 4, 4] -> [1, N, D]: (x, y)
//   -> (row 0, row 1) . (x, y, 0, 1); z is copied.
//
// Arithmetic is float32 in MediaPipe's order (the pixel-centre correction and the bilinear
// blend use the double constants MediaPipe uses). Where MediaPipe leaves behaviour undefined
// (batch > 1 reads only batch 0 and leaves the rest unwritten; an empty subset or an index past
// the landmarks reads out of bounds; NaN sample coordinates are cast to int) this gives an error
// or, for NaN coordinates, 0 (out of the image).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <flatbuffers/flexbuffers.h>

#include "kernels/common/kernel_util.h"
#include "kernels/mediapipe/mediapipe.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

// ---------------------------------------------------------------------------------------------
// Flexbuffer options.

class OptionsReader {
 public:
  explicit OptionsReader(const rt::KernelCreateContext& cc) : cc_(cc) {}

  // Parses the custom options as a map; `required` false accepts absent options (empty map).
  Status Open(bool required) {
    const auto& bytes = cc_.op.custom_options;
    if (bytes.empty()) {
      if (required) return cc_.Error("needs flexbuffer custom options");
      return Status::Ok();
    }
    if (!flexbuffers::VerifyBuffer(bytes.data(), bytes.size()))
      return cc_.Error("custom options are not a valid flexbuffer");
    const flexbuffers::Reference root = flexbuffers::GetRoot(bytes.data(), bytes.size());
    if (!root.IsMap()) return cc_.Error("custom options must be a flexbuffer map");
    map_ = root.AsMap();
    open_ = true;
    return Status::Ok();
  }

  bool Has(const char* key) const { return open_ && !map_[key].IsNull(); }

  Status Int(const char* key, int* out) const {
    if (!Has(key)) return cc_.Error(std::string("custom options lack '") + key + "'");
    const flexbuffers::Reference r = map_[key];
    if (!r.IsInt() && !r.IsUInt()) return cc_.Error(std::string("option '") + key + "' must be an integer");
    const int64_t v = r.AsInt64();
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return cc_.Error(std::string("option '") + key + "' is out of the int32 range: " + std::to_string(v));
    *out = static_cast<int>(v);
    return Status::Ok();
  }

  Status Float(const char* key, float* out) const {
    if (!Has(key)) return cc_.Error(std::string("custom options lack '") + key + "'");
    const flexbuffers::Reference r = map_[key];
    if (!r.IsNumeric()) return cc_.Error(std::string("option '") + key + "' must be a number");
    *out = r.AsFloat();
    return Status::Ok();
  }

  // A vector of integers (typed, fixed-size typed or untyped flexbuffer vector).
  Status IntList(const char* key, std::vector<int>* out) const {
    if (!Has(key)) return cc_.Error(std::string("custom options lack '") + key + "'");
    const flexbuffers::Reference r = map_[key];
    out->clear();
    auto add = [&](const flexbuffers::Reference& e) -> Status {
      if (!e.IsInt() && !e.IsUInt()) return cc_.Error(std::string("option '") + key + "' must hold integers");
      const int64_t v = e.AsInt64();
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        return cc_.Error(std::string("option '") + key + "' holds a value out of the int32 range");
      out->push_back(static_cast<int>(v));
      return Status::Ok();
    };
    if (r.IsTypedVector()) {
      const flexbuffers::TypedVector v = r.AsTypedVector();
      for (size_t i = 0; i < v.size(); ++i) RETURN_IF_ERROR(add(v[i]));
    } else if (r.IsFixedTypedVector()) {
      const flexbuffers::FixedTypedVector v = r.AsFixedTypedVector();
      for (size_t i = 0; i < v.size(); ++i) RETURN_IF_ERROR(add(v[i]));
    } else if (r.IsUntypedVector()) {
      const flexbuffers::Vector v = r.AsVector();
      for (size_t i = 0; i < v.size(); ++i) RETURN_IF_ERROR(add(v[i]));
    } else {
      return cc_.Error(std::string("option '") + key + "' must be a vector of integers");
    }
    return Status::Ok();
  }

 private:
  const rt::KernelCreateContext& cc_;
  flexbuffers::Map map_ = flexbuffers::Map::EmptyMap();
  bool open_ = false;
};

Status CheckVersion2(const rt::KernelCreateContext& cc) {
  if (cc.op.version != 2)
    return cc.Error("version " + std::to_string(cc.op.version) +
                    " is not supported (only MediaPipe's version 2 of this op is implemented)");
  return Status::Ok();
}

Status CheckFloat(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what) {
  if (t.type != DType::kFloat32) return ctx.UnsupportedError(what + " " + Describe(t) + " must be float32");
  return Status::Ok();
}

// The transform matrix input: float32 with 16 elements (MediaPipe's [1, 4, 4], row-major).
Status CheckMatrix(const rt::KernelContext& ctx, const rt::RtTensor& m) {
  RETURN_IF_ERROR(CheckFloat(ctx, m, "transform matrix"));
  if (m.num_elements() != 16)
    return ctx.Error("transform matrix " + Describe(m) + " must hold a 4x4 matrix ([1, 4, 4])");
  return Status::Ok();
}

// Row-major 4x4 float product a * b, summed in order k = 0..3 (as MediaPipe's Mat4).
void MatMul4(const float* a, const float* b, float* out) {
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      float sum = 0;
      for (int k = 0; k < 4; ++k) sum += a[4 * r + k] * b[4 * k + c];
      out[4 * r + c] = sum;
    }
}

// ---------------------------------------------------------------------------------------------
// Landmarks2TransformMatrix (v2).

struct L2TOptions {
  std::vector<int> subset;  // landmark indices whose rotated box is the crop
  int left = 0, right = 0;
  float target_rotation = 0;
  int output_height = 0, output_width = 0;
  float scale_x = 0, scale_y = 0;
};

Expected<L2TOptions> ParseL2TOptions(const rt::KernelCreateContext& cc) {
  RETURN_IF_ERROR(CheckVersion2(cc));
  OptionsReader r(cc);
  RETURN_IF_ERROR(r.Open(true));
  L2TOptions o;
  RETURN_IF_ERROR(r.IntList("subset_idxs", &o.subset));
  RETURN_IF_ERROR(r.Int("left_rotation_idx", &o.left));
  RETURN_IF_ERROR(r.Int("right_rotation_idx", &o.right));
  // Absent reads as 0 in MediaPipe's parser; every other option is needed.
  if (r.Has("target_rotation_radians")) RETURN_IF_ERROR(r.Float("target_rotation_radians", &o.target_rotation));
  RETURN_IF_ERROR(r.Int("output_height", &o.output_height));
  RETURN_IF_ERROR(r.Int("output_width", &o.output_width));
  RETURN_IF_ERROR(r.Float("scale_x", &o.scale_x));
  RETURN_IF_ERROR(r.Float("scale_y", &o.scale_y));
  if (o.subset.empty()) return cc.Error("option 'subset_idxs' is empty");
  for (size_t i = 0; i < o.subset.size(); ++i)
    if (o.subset[i] < 0)
      return cc.Error("option 'subset_idxs' element " + std::to_string(i) + " is negative: " +
                      std::to_string(o.subset[i]));
  if (o.left < 0) return cc.Error("left_rotation_idx must be >= 0, is " + std::to_string(o.left));
  if (o.right < 0) return cc.Error("right_rotation_idx must be >= 0, is " + std::to_string(o.right));
  if (o.output_height <= 0) return cc.Error("output_height must be > 0, is " + std::to_string(o.output_height));
  if (o.output_width <= 0) return cc.Error("output_width must be > 0, is " + std::to_string(o.output_width));
  if (!(o.scale_x > 0) || !std::isfinite(o.scale_x))
    return cc.Error("scale_x must be finite and > 0, is " + std::to_string(o.scale_x));
  if (!(o.scale_y > 0) || !std::isfinite(o.scale_y))
    return cc.Error("scale_y must be finite and > 0, is " + std::to_string(o.scale_y));
  if (!std::isfinite(o.target_rotation))
    return cc.Error("target_rotation_radians must be finite, is " + std::to_string(o.target_rotation));
  return o;
}

class LandmarksToTransformMatrixKernel : public rt::OpKernel {
 public:
  explicit LandmarksToTransformMatrixKernel(L2TOptions o) : o_(std::move(o)) {}
  std::string variant() const override { return "landmarks2transformmatrix/f32/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    RETURN_IF_ERROR(CheckFloat(ctx, *in, "landmarks"));
    RETURN_IF_ERROR(CheckFloat(ctx, *ctx.output(0), "output"));
    if (in->rank() != 3 || in->dim(0) != 1 || in->dim(2) != 3)
      return ctx.Error("landmarks " + Describe(*in) + " must be [1, num_landmarks, 3]");
    const int n = in->dim(1);
    auto check_index = [&](int idx, const std::string& what) -> Status {
      if (idx >= n)
        return ctx.Error(what + " " + std::to_string(idx) + " is out of range for " + std::to_string(n) +
                         " landmarks");
      return Status::Ok();
    };
    RETURN_IF_ERROR(check_index(o_.left, "left_rotation_idx"));
    RETURN_IF_ERROR(check_index(o_.right, "right_rotation_idx"));
    for (int idx : o_.subset) RETURN_IF_ERROR(check_index(idx, "subset_idxs element"));
    return ctx.SetOutputShape(0, {1, 4, 4});
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const float* lm = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    // Rotation that makes the left -> right landmark direction target_rotation_radians.
    const float rotation =
        o_.target_rotation - std::atan2(lm[3 * o_.right + 1] - lm[3 * o_.left + 1], lm[3 * o_.right] - lm[3 * o_.left]);
    // Box of the subset landmarks rotated by `rotation`; its centre rotated back.
    const float c = std::cos(rotation), s = std::sin(rotation);
    float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
    for (size_t i = 0; i < o_.subset.size(); ++i) {
      const float x = lm[3 * o_.subset[i]], y = lm[3 * o_.subset[i] + 1];
      const float rx = c * x - s * y, ry = s * x + c * y;
      if (i == 0) {
        min_x = max_x = rx;
        min_y = max_y = ry;
        continue;
      }
      if (max_x < rx) max_x = rx;
      if (max_y < ry) max_y = ry;
      if (min_x > rx) min_x = rx;
      if (min_y > ry) min_y = ry;
    }
    const float box_w = max_x - min_x, box_h = max_y - min_y;
    const float mid_x = (min_x + max_x) / 2, mid_y = (min_y + max_y) / 2;
    const float ci = std::cos(-rotation), si = std::sin(-rotation);
    const float centre_x = ci * mid_x - si * mid_y, centre_y = si * mid_x + ci * mid_y;

    const float a = -rotation;
    const float ca = std::cos(a), sa = std::sin(a);
    const float sx = o_.scale_x * box_w / static_cast<float>(o_.output_width);
    const float sy = o_.scale_y * box_h / static_cast<float>(o_.output_height);
    const float shift_x = static_cast<float>(-1.0 * (o_.output_width / 2.0));
    const float shift_y = static_cast<float>(-1.0 * (o_.output_height / 2.0));
    // clang-format off
    const float shift[16] = {1, 0, 0, centre_x,  0, 1, 0, centre_y,  0, 0, 1, 0,  0, 0, 0, 1};
    const float rotate[16] = {ca, -sa, 0, 0,  sa, ca, 0, 0,  0, 0, 1, 0,  0, 0, 0, 1};
    const float scale[16] = {sx, 0, 0, 0,  0, sy, 0, 0,  0, 0, 1, 0,  0, 0, 0, 1};
    const float shift2[16] = {1, 0, 0, shift_x,  0, 1, 0, shift_y,  0, 0, 1, 0,  0, 0, 0, 1};
    // clang-format on
    float t1[16], t2[16];
    MatMul4(shift, rotate, t1);
    MatMul4(t1, scale, t2);
    MatMul4(t2, shift2, out);
    return Status::Ok();
  }

 private:
  L2TOptions o_;
};

Expected<std::unique_ptr<rt::OpKernel>> CreateLandmarksToTransformMatrix(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(L2TOptions o, ParseL2TOptions(cc));
  return std::unique_ptr<rt::OpKernel>(new LandmarksToTransformMatrixKernel(std::move(o)));
}

// ---------------------------------------------------------------------------------------------
// TransformTensorBilinear (v2).

class TransformTensorBilinearKernel : public rt::OpKernel {
 public:
  // avx512: each pixel's channels in mediapipe::BilinearChannelsAvx512 (the same bits).
  TransformTensorBilinearKernel(int height, int width, bool avx512) : out_h_(height), out_w_(width), avx512_(avx512) {}
  std::string variant() const override {
    return avx512_ ? "transformtensorbilinear/f32/avx512" : "transformtensorbilinear/f32/ref";
  }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* m, RequiredInput(ctx, 1));
    RETURN_IF_ERROR(CheckFloat(ctx, *in, "input"));
    RETURN_IF_ERROR(CheckFloat(ctx, *ctx.output(0), "output"));
    RETURN_IF_ERROR(CheckMatrix(ctx, *m));
    if (in->rank() != 4 || in->dim(0) != 1) return ctx.Error("input " + Describe(*in) + " must be [1, height, width, channels]");
    // MediaPipe's CPU kernel takes the output size from the model's output tensor; the options
    // say the same, and a declared output that disagrees is an error.
    const rt::RtTensor* out = ctx.output(0);
    if (out->def && out->def->shape.size() == 4 && out->def->shape[1] > 0 && out->def->shape[2] > 0 &&
        (out->def->shape[1] != out_h_ || out->def->shape[2] != out_w_))
      return ctx.Error("output " + Describe(*out) + " disagrees with the options' output_height " +
                       std::to_string(out_h_) + " x output_width " + std::to_string(out_w_));
    const int64_t elements = int64_t{out_h_} * out_w_ * in->dim(3);
    if (elements > (int64_t{1} << 31))
      return ctx.Error("output of " + std::to_string(elements) + " elements is too large");
    return ctx.SetOutputShape(0, {1, out_h_, out_w_, in->dim(3)});
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const float* src = in.data_as<float>();
    const float* m = ctx.input(1)->data_as<float>();
    float* dst = ctx.output(0)->data_as<float>();
    const int in_h = in.dim(1), in_w = in.dim(2), channels = in.dim(3);
    const float x0 = m[0], x1 = m[1], x2 = m[2];
    const float y0 = m[4], y1 = m[5], y2 = m[6];
    // Pixel-centre (align corners) correction: M -> S(-0.5) * M * S(0.5).
    const float x3 = static_cast<float>(m[3] + (x0 * 0.5 + x1 * 0.5 - 0.5));
    const float y3 = static_cast<float>(m[7] + (y0 * 0.5 + y1 * 0.5 - 0.5));
    const float max_x = static_cast<float>(in_w - 1), max_y = static_cast<float>(in_h - 1);
    const int64_t row_stride = int64_t{in_w} * channels;
    for (int oy = 0; oy < out_h_; ++oy) {
      for (int ox = 0; ox < out_w_; ++ox) {
        float* o = dst + (int64_t{oy} * out_w_ + ox) * channels;
        const float fx = static_cast<float>(ox), fy = static_cast<float>(oy);
        const float tx = x0 * fx + x1 * fy + x2 * 0.0f + x3 * 1.0f;
        const float ty = y0 * fx + y1 * fy + y2 * 0.0f + y3 * 1.0f;
        // Written so that NaN coordinates count as outside.
        const bool inside = tx >= 0.0f && tx <= max_x && ty >= 0.0f && ty <= max_y;
        if (!inside) {
          for (int z = 0; z < channels; ++z) o[z] = 0.0f;
          continue;
        }
        const float floor_x = std::floor(tx), floor_y = std::floor(ty);
        const int ix = static_cast<int>(floor_x), iy = static_cast<int>(floor_y);  // in [0, W-1] x [0, H-1]
        const bool has_right = ix + 1 < in_w, has_below = iy + 1 < in_h;
        const float* p11 = src + iy * row_stride + int64_t{ix} * channels;
        const float* p21 = has_right ? p11 + channels : nullptr;
        const float* p12 = has_below ? p11 + row_stride : nullptr;
        const float* p22 = has_right && has_below ? p11 + row_stride + channels : nullptr;
        const float right = tx - floor_x, lower_w = ty - floor_y;
        if (avx512_) {
          mediapipe::BilinearChannelsAvx512(p11, p21, p12, p22, right, lower_w, channels, o);
          continue;
        }
        for (int z = 0; z < channels; ++z) {
          const float q11 = p11[z];
          const float q21 = p21 ? p21[z] : 0.0f;
          const float q12 = p12 ? p12[z] : 0.0f;
          const float q22 = p22 ? p22[z] : 0.0f;
          const float upper = static_cast<float>((1.0 - right) * q11 + right * q21);
          const float lower = static_cast<float>((1.0 - right) * q12 + right * q22);
          o[z] = static_cast<float>(lower_w * lower + (1.0 - lower_w) * upper);
        }
      }
    }
    return Status::Ok();
  }

 private:
  int out_h_, out_w_;
  bool avx512_;
};

Expected<std::unique_ptr<rt::OpKernel>> CreateTransformTensorBilinear(const rt::KernelCreateContext& cc) {
  RETURN_IF_ERROR(CheckVersion2(cc));
  OptionsReader r(cc);
  RETURN_IF_ERROR(r.Open(true));
  int h = 0, w = 0;
  RETURN_IF_ERROR(r.Int("output_height", &h));
  RETURN_IF_ERROR(r.Int("output_width", &w));
  if (h <= 0) return cc.Error("output_height must be > 0, is " + std::to_string(h));
  if (w <= 0) return cc.Error("output_width must be > 0, is " + std::to_string(w));
  return std::unique_ptr<rt::OpKernel>(new TransformTensorBilinearKernel(h, w, !cc.reference_only && cc.cpu.has_avx512()));
}

// ---------------------------------------------------------------------------------------------
// TransformLandmarks (v2; no options: the landmark size is the last dimension).

class TransformLandmarksKernel : public rt::OpKernel {
 public:
  std::string variant() const override { return "transformlandmarks/f32/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 2, 2));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    ASSIGN_OR_RETURN(const rt::RtTensor* in, RequiredInput(ctx, 0));
    ASSIGN_OR_RETURN(const rt::RtTensor* m, RequiredInput(ctx, 1));
    RETURN_IF_ERROR(CheckFloat(ctx, *in, "landmarks"));
    RETURN_IF_ERROR(CheckFloat(ctx, *ctx.output(0), "output"));
    RETURN_IF_ERROR(CheckMatrix(ctx, *m));
    if (in->rank() != 3 || in->dim(0) != 1 || (in->dim(2) != 2 && in->dim(2) != 3))
      return ctx.Error("landmarks " + Describe(*in) + " must be [1, num_landmarks, 2 or 3]");
    return ctx.SetOutputShape(0, in->shape);
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    const float* src = in.data_as<float>();
    const float* m = ctx.input(1)->data_as<float>();
    float* dst = ctx.output(0)->data_as<float>();
    const int n = in.dim(1), d = in.dim(2);
    for (int i = 0; i < n; ++i) {
      const float x = src[int64_t{i} * d], y = src[int64_t{i} * d + 1];
      dst[int64_t{i} * d] = m[0] * x + m[1] * y + m[2] * 0.0f + m[3] * 1.0f;
      dst[int64_t{i} * d + 1] = m[4] * x + m[5] * y + m[6] * 0.0f + m[7] * 1.0f;
      if (d == 3) dst[int64_t{i} * d + 2] = src[int64_t{i} * d + 2];
    }
    return Status::Ok();
  }
};

Expected<std::unique_ptr<rt::OpKernel>> CreateTransformLandmarks(const rt::KernelCreateContext& cc) {
  RETURN_IF_ERROR(CheckVersion2(cc));
  return std::unique_ptr<rt::OpKernel>(new TransformLandmarksKernel());
}

}  // namespace

void RegisterMediaPipeKernels(rt::OpRegistry& r) {
  r.AddCustom("Landmarks2TransformMatrix", CreateLandmarksToTransformMatrix);
  r.AddCustom("TransformTensorBilinear", CreateTransformTensorBilinear);
  r.AddCustom("TransformLandmarks", CreateTransformLandmarks);
}

}  // namespace edgeopt::kernels
