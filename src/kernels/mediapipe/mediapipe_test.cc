// MediaPipe custom ops (Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks).
// No reference runtime has them (TFLite 2.9 and LiteRT.js ship without MediaPipe's op
// resolver), so the oracle is not used: each op is checked against values worked out by hand and
// against straightforward double-precision loops written here from MediaPipe's definition. An
// end-to-end test runs face_landmark_with_attention.tflite next to the plain face_landmark.tflite
// (same npm package, no custom ops) on the same face crop: their 468 mesh landmarks must agree.
// The models come from scripts/setup_models.sh (.cache/mediapipe_extra/, or the folder in
// EDGEOPT_FACE_MESH_DIR); the test skips with a printed reason when they are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include <flatbuffers/flexbuffers.h>

#include "eval/image.h"
#include "graph/builder.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"

namespace edgeopt {
namespace {

using testing::TensorValue;

TensorValue Floats(const std::string& name, std::vector<int32_t> shape, const std::vector<float>& v) {
  TensorValue t;
  t.name = name;
  t.type = DType::kFloat32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * sizeof(float));
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> AsFloats(const TensorValue& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(float));
  return v;
}

struct InputSpec {
  std::string name;
  std::vector<int32_t> shape;
  DType type = DType::kFloat32;
};

// A one-op model running the custom op `op` (version `version`) on the given inputs.
Graph OneOp(const std::string& op, const std::vector<InputSpec>& inputs, std::vector<uint8_t> options,
            int version = 2) {
  GraphBuilder b;
  std::vector<int32_t> ins;
  for (const auto& in : inputs) ins.push_back(b.Input(in.name, in.type, in.shape));
  const int32_t out = b.Tensor("out", DType::kFloat32, {});
  const int i = b.CustomOp(op, ins, {out}, std::move(options));
  b.current().ops[i].version = version;
  b.Output(out);
  return b.Finish();
}

Expected<std::vector<TensorValue>> RunGraph(Graph g, const std::vector<TensorValue>& inputs) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
  return testing::RunEdgeopt(model, inputs);
}

// The error of running a model expected to fail ("" if it ran).
std::string RunError(Graph g, const std::vector<TensorValue>& inputs) {
  auto r = RunGraph(std::move(g), inputs);
  return r.ok() ? std::string() : r.status().ToString();
}

std::vector<uint8_t> BilinearOptions(int h, int w) {
  flexbuffers::Builder fbb;
  fbb.Map([&]() {
    fbb.Int("output_height", h);
    fbb.Int("output_width", w);
  });
  fbb.Finish();
  return fbb.GetBuffer();
}

struct L2TOpts {
  std::vector<int> subset;
  int left = 0, right = 1;
  float target = 0;
  int out_h = 16, out_w = 16;
  float scale_x = 1.5f, scale_y = 1.5f;
  bool typed_subset = true;  // MediaPipe's models store an int16 typed vector
};

std::vector<uint8_t> L2TOptions(const L2TOpts& o) {
  flexbuffers::Builder fbb;
  fbb.Map([&]() {
    if (o.typed_subset) {
      fbb.TypedVector("subset_idxs", [&]() {
        for (int v : o.subset) fbb.Int(v);
      });
    } else {
      fbb.Vector("subset_idxs", [&]() {
        for (int v : o.subset) fbb.Int(v);
      });
    }
    fbb.Int("left_rotation_idx", o.left);
    fbb.Int("right_rotation_idx", o.right);
    fbb.Float("target_rotation_radians", o.target);
    fbb.Int("output_height", o.out_h);
    fbb.Int("output_width", o.out_w);
    fbb.Float("scale_x", o.scale_x);
    fbb.Float("scale_y", o.scale_y);
  });
  fbb.Finish();
  return fbb.GetBuffer();
}

// ---------------------------------------------------------------------------------------------
// TransformLandmarks.

std::vector<float> TransformLandmarksRun(const std::vector<float>& lm, int n, int d, const std::vector<float>& m) {
  auto out = RunGraph(OneOp("TransformLandmarks", {{"lm", {1, n, d}}, {"m", {1, 4, 4}}}, {}),
                 {Floats("lm", {1, n, d}, lm), Floats("m", {1, 4, 4}, m)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{1, n, d}));
  return AsFloats((*out)[0]);
}

const std::vector<float> kIdentity = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

TEST(MediaPipeTransformLandmarks, IdentityKeepsEveryValue) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-50, 250);
  for (int d : {2, 3}) {
    std::vector<float> lm(7 * d);
    for (auto& v : lm) v = u(rng);
    EXPECT_EQ(TransformLandmarksRun(lm, 7, d, kIdentity), lm) << "dims " << d;
  }
}

TEST(MediaPipeTransformLandmarks, AffineMatchesDoubleLoop) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-50, 250), a(-2, 2);
  for (int d : {2, 3}) {
    // Rows 0 and 1 are used (x' = m0 x + m1 y + m3, y' = m4 x + m5 y + m7; the z column m2/m6
    // multiplies 0); rows 2 and 3 are ignored, so they get junk here.
    std::vector<float> m(16);
    for (auto& v : m) v = a(rng);
    m[3] = 17.5f;
    m[7] = -4.25f;
    std::vector<float> lm(40 * d);
    for (auto& v : lm) v = u(rng);
    const auto out = TransformLandmarksRun(lm, 40, d, m);
    ASSERT_EQ(out.size(), lm.size());
    for (int i = 0; i < 40; ++i) {
      const double x = lm[i * d], y = lm[i * d + 1];
      EXPECT_NEAR(out[i * d], double{m[0]} * x + double{m[1]} * y + m[3], 1e-3) << i;
      EXPECT_NEAR(out[i * d + 1], double{m[4]} * x + double{m[5]} * y + m[7], 1e-3) << i;
      if (d == 3) {
        EXPECT_EQ(out[i * d + 2], lm[i * d + 2]) << "z is copied";
      }
    }
  }
  // By hand: rotate 90 degrees and shift by (10, 20): (x, y) -> (-y + 10, x + 20).
  const std::vector<float> rot = {0, -1, 0, 10, 1, 0, 0, 20, 0, 0, 1, 0, 0, 0, 0, 1};
  EXPECT_EQ(TransformLandmarksRun({1, 2, 3, 4, -5, 6}, 2, 3, rot), (std::vector<float>{8, 21, 3, 15, 24, 6}));
}

TEST(MediaPipeTransformLandmarks, BadInputsAreErrors) {
  const auto m = Floats("m", {1, 4, 4}, kIdentity);
  std::string e = RunError(OneOp("TransformLandmarks", {{"lm", {1, 5, 4}}, {"m", {1, 4, 4}}}, {}),
                           {Floats("lm", {1, 5, 4}, std::vector<float>(20)), m});
  EXPECT_NE(e.find("must be [1, num_landmarks, 2 or 3]"), std::string::npos) << e;
  e = RunError(OneOp("TransformLandmarks", {{"lm", {2, 5, 2}}, {"m", {1, 4, 4}}}, {}),
               {Floats("lm", {2, 5, 2}, std::vector<float>(20)), m});
  EXPECT_NE(e.find("must be [1, num_landmarks, 2 or 3]"), std::string::npos) << e;
  e = RunError(OneOp("TransformLandmarks", {{"lm", {1, 5, 2}}, {"m", {1, 3, 3}}}, {}),
               {Floats("lm", {1, 5, 2}, std::vector<float>(10)), Floats("m", {1, 3, 3}, std::vector<float>(9))});
  EXPECT_NE(e.find("4x4 matrix"), std::string::npos) << e;
  e = RunError(OneOp("TransformLandmarks", {{"lm", {1, 5, 2}}}, {}), {Floats("lm", {1, 5, 2}, std::vector<float>(10))});
  EXPECT_NE(e.find("inputs"), std::string::npos) << e;
  e = RunError(OneOp("TransformLandmarks", {{"lm", {1, 5, 2}, DType::kInt32}, {"m", {1, 4, 4}}}, {}),
               {TensorValue{"lm", DType::kInt32, {1, 5, 2}, std::vector<uint8_t>(40), 0, 0}, m});
  EXPECT_NE(e.find("must be float32"), std::string::npos) << e;
  e = RunError(OneOp("TransformLandmarks", {{"lm", {1, 5, 2}}, {"m", {1, 4, 4}}}, {}, /*version=*/1),
               {Floats("lm", {1, 5, 2}, std::vector<float>(10)), m});
  EXPECT_NE(e.find("version 1 is not supported"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// TransformTensorBilinear.

std::vector<float> BilinearRun(const std::vector<float>& img, int h, int w, int c, const std::vector<float>& m,
                               int out_h, int out_w) {
  auto out = RunGraph(OneOp("TransformTensorBilinear", {{"img", {1, h, w, c}}, {"m", {1, 4, 4}}}, BilinearOptions(out_h, out_w)),
                 {Floats("img", {1, h, w, c}, img), Floats("m", {1, 4, 4}, m)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{1, out_h, out_w, c}));
  return AsFloats((*out)[0]);
}

// MediaPipe's definition in double: output pixel (x, y) samples the input at
// M' . (x, y, 0, 1) with M' = Shift(-0.5) * M * Shift(0.5) (pixel centres), bilinearly; 0 outside
// [0, W-1] x [0, H-1], neighbours past the last row/column read as 0. *near_edge is set when the
// sample lies within 1e-3 of the image bounds (float rounding may then decide inside/outside).
double BilinearReference(const std::vector<float>& img, int h, int w, int c, const std::vector<float>& m, int x, int y,
                         int z, bool* near_edge) {
  const double px = x + 0.5, py = y + 0.5;
  const double sx = m[0] * px + m[1] * py + m[3] - 0.5;
  const double sy = m[4] * px + m[5] * py + m[7] - 0.5;
  const double eps = 1e-3;
  *near_edge = std::abs(sx) < eps || std::abs(sx - (w - 1)) < eps || std::abs(sy) < eps || std::abs(sy - (h - 1)) < eps;
  if (sx < 0 || sx > w - 1 || sy < 0 || sy > h - 1) return 0;
  const int x0 = static_cast<int>(std::floor(sx)), y0 = static_cast<int>(std::floor(sy));
  auto at = [&](int yy, int xx) -> double {
    return (yy < h && xx < w) ? img[(static_cast<size_t>(yy) * w + xx) * c + z] : 0.0;
  };
  const double fx = sx - x0, fy = sy - y0;
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
}

TEST(MediaPipeTransformTensorBilinear, IdentitySamplesPixelCentresExactly) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3, 3);
  const int h = 5, w = 6, c = 3;
  std::vector<float> img(h * w * c);
  for (auto& v : img) v = u(rng);
  EXPECT_EQ(BilinearRun(img, h, w, c, kIdentity, h, w), img);
  // A smaller output with the identity: the top-left block.
  const auto out = BilinearRun(img, h, w, c, kIdentity, 2, 3);
  ASSERT_EQ(out.size(), 2u * 3 * c);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      for (int z = 0; z < c; ++z) EXPECT_EQ(out[(y * 3 + x) * c + z], img[(y * w + x) * c + z]);
}

TEST(MediaPipeTransformTensorBilinear, HandComputedSamples) {
  // 2x2 image [[1, 2], [3, 4]] (one channel); a 1x1 output samples at the matrix translation
  // minus 0.5 (zero linear part), so translation t samples (t_x - 0.5, t_y - 0.5).
  const std::vector<float> img = {1, 2, 3, 4};
  auto sample = [&](float tx, float ty) {
    const std::vector<float> m = {0, 0, 0, tx, 0, 0, 0, ty, 0, 0, 1, 0, 0, 0, 0, 1};
    const auto out = BilinearRun(img, 2, 2, 1, m, 1, 1);
    return out.empty() ? -1.0f : out[0];
  };
  EXPECT_EQ(sample(0.5f, 0.5f), 1.0f);    // pixel (0, 0)
  EXPECT_EQ(sample(1.5f, 0.5f), 2.0f);    // pixel (1, 0): last column, right neighbour reads 0 with weight 0
  EXPECT_EQ(sample(1.5f, 1.5f), 4.0f);    // last pixel
  EXPECT_EQ(sample(1.0f, 1.0f), 2.5f);    // centre of the four
  EXPECT_EQ(sample(0.75f, 1.25f), 2.75f); // (0.25, 0.75): 0.25*(0.75*1+0.25*2) + 0.75*(0.75*3+0.25*4)
  EXPECT_EQ(sample(1.25f, 0.5f), 1.75f);  // (0.75, 0): between 1 and 2 on the top row
  EXPECT_EQ(sample(0.25f, 0.5f), 0.0f);   // x = -0.25: outside
  EXPECT_EQ(sample(1.75f, 0.5f), 0.0f);   // x = 1.25 > W-1: outside
  EXPECT_EQ(sample(0.5f, 1.625f), 0.0f);  // y = 1.125 > H-1: outside
  EXPECT_EQ(sample(std::nanf(""), 0.5f), 0.0f);  // NaN coordinates: outside (MediaPipe: undefined)
}

TEST(MediaPipeTransformTensorBilinear, AffineMatchesDoubleLoop) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  const int h = 13, w = 17, c = 4;
  std::vector<float> img(h * w * c);
  for (auto& v : img) v = u(rng);
  struct Case {
    float angle, scale_x, scale_y, tx, ty;
    int out_h, out_w;
  };
  const Case cases[] = {
      {0.0f, 0.5f, 0.5f, 0.0f, 0.0f, 20, 30},     // upsampling 2x
      {0.0f, 2.0f, 2.0f, 1.0f, 0.5f, 6, 8},       // downsampling
      {0.3f, 0.8f, 0.7f, 3.0f, -1.0f, 16, 16},    // rotated crop, partly outside
      {-1.2f, 1.3f, 0.9f, 9.0f, 4.0f, 11, 9},     // rotated the other way
      {0.0f, 1.0f, 1.0f, 0.5f, 0.25f, 13, 17},    // sub-pixel shift: between pixel centres
      {0.0f, 1.0f, 1.0f, -40.0f, 0.0f, 4, 4},     // entirely outside: zeros
  };
  for (const Case& k : cases) {
    const float ca = std::cos(k.angle), sa = std::sin(k.angle);
    const std::vector<float> m = {ca * k.scale_x, -sa * k.scale_y, 0, k.tx, sa * k.scale_x, ca * k.scale_y, 0, k.ty,
                                  0, 0, 1, 0, 0, 0, 0, 1};
    const auto out = BilinearRun(img, h, w, c, m, k.out_h, k.out_w);
    ASSERT_EQ(out.size(), static_cast<size_t>(k.out_h) * k.out_w * c);
    int compared = 0, inside = 0;
    for (int y = 0; y < k.out_h; ++y)
      for (int x = 0; x < k.out_w; ++x)
        for (int z = 0; z < c; ++z) {
          bool near_edge = false;
          const double ref = BilinearReference(img, h, w, c, m, x, y, z, &near_edge);
          if (near_edge) continue;
          ++compared;
          if (ref != 0) ++inside;
          EXPECT_NEAR(out[(static_cast<size_t>(y) * k.out_w + x) * c + z], ref, 2e-5)
              << "angle " << k.angle << " at " << x << "," << y << "," << z;
        }
    EXPECT_GT(compared, k.out_h * k.out_w * c / 2);
    if (k.tx > -10) {
      EXPECT_GT(inside, 0) << "angle " << k.angle;
    }
  }
}

// The AVX-512 channel loop (transform_bilinear_avx512.cc) against the scalar one (reference
// kernels): the same bytes, over channel counts around its 8-channel steps, upsampling and
// rotations reaching past the last row and column, values of both signs, zeros and -0.
TEST(MediaPipeTransformTensorBilinear, VectorLoopMatchesScalarBitForBit) {
  if (!rt::Cpu().has_avx512()) GTEST_SKIP() << "no AVX-512: the scalar loop runs";
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-5, 5);
  int vector_runs = 0;
  for (int c : {1, 3, 7, 8, 9, 16, 17, 32, 33}) {
    const int h = 9 + c % 5, w = 11 + c % 3;
    std::vector<float> img(static_cast<size_t>(h) * w * c);
    for (auto& v : img) v = u(rng);
    img[0] = -0.0f;
    img[1 % img.size()] = 0.0f;
    for (const float angle : {0.0f, 0.4f, -2.1f}) {
      const float ca = std::cos(angle), sa = std::sin(angle);
      const std::vector<float> m = {0.45f * ca, -0.6f * sa, 0, 1.3f, 0.45f * sa, 0.6f * ca, 0, -0.7f, 0, 0, 1, 0, 0, 0, 0, 1};
      const int oh = 2 * h + 1, ow = 2 * w - 1;
      auto model = rt::Model::FromGraph(
          OneOp("TransformTensorBilinear", {{"img", {1, h, w, c}}, {"m", {1, 4, 4}}}, BilinearOptions(oh, ow)));
      ASSERT_TRUE(model.ok()) << model.status().ToString();
      const std::vector<TensorValue> in = {Floats("img", {1, h, w, c}, img), Floats("m", {1, 4, 4}, m)};
      rt::InterpreterOptions ref_only;
      ref_only.reference_kernels_only = true;
      auto fast = testing::RunEdgeopt(*model, in);
      auto ref = testing::RunEdgeopt(*model, in, ref_only);
      ASSERT_TRUE(fast.ok() && ref.ok());
      EXPECT_EQ((*fast)[0].data, (*ref)[0].data) << "channels " << c << " angle " << angle;
      auto interp = rt::Interpreter::Create(*model, {});
      ASSERT_TRUE(interp.ok());
      ASSERT_TRUE((*interp)->AllocateTensors().ok());
      vector_runs += (*interp)->ops()[0].variant == "transformtensorbilinear/f32/avx512";
    }
  }
  EXPECT_EQ(vector_runs, 27);
}

TEST(MediaPipeTransformTensorBilinear, BadInputsAndOptionsAreErrors) {
  const auto m = Floats("m", {1, 4, 4}, kIdentity);
  const auto img = Floats("img", {1, 4, 4, 2}, std::vector<float>(32));
  std::string e = RunError(OneOp("TransformTensorBilinear", {{"img", {4, 4, 2}}, {"m", {1, 4, 4}}}, BilinearOptions(2, 2)),
                           {Floats("img", {4, 4, 2}, std::vector<float>(32)), m});
  EXPECT_NE(e.find("must be [1, height, width, channels]"), std::string::npos) << e;
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {2, 4, 4, 2}}, {"m", {1, 4, 4}}}, BilinearOptions(2, 2)),
               {Floats("img", {2, 4, 4, 2}, std::vector<float>(64)), m});
  EXPECT_NE(e.find("must be [1, height, width, channels]"), std::string::npos) << e;
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 8}}}, BilinearOptions(2, 2)),
               {img, Floats("m", {1, 8}, std::vector<float>(8))});
  EXPECT_NE(e.find("4x4 matrix"), std::string::npos) << e;
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 4, 4}}}, BilinearOptions(0, 2)), {img, m});
  EXPECT_NE(e.find("output_height must be > 0"), std::string::npos) << e;
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 4, 4}}}, {}), {img, m});
  EXPECT_NE(e.find("needs flexbuffer custom options"), std::string::npos) << e;
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 4, 4}}}, {1, 2, 3}), {img, m});
  EXPECT_NE(e.find("flexbuffer"), std::string::npos) << e;
  flexbuffers::Builder fbb;
  fbb.Map([&]() {
    fbb.String("output_height", "16");
    fbb.Int("output_width", 16);
  });
  fbb.Finish();
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 4, 4}}}, fbb.GetBuffer()), {img, m});
  EXPECT_NE(e.find("'output_height' must be an integer"), std::string::npos) << e;
  // A declared output shape that disagrees with the options.
  {
    GraphBuilder b;
    const int32_t in = b.Input("img", DType::kFloat32, {1, 4, 4, 2});
    const int32_t mat = b.Input("m", DType::kFloat32, {1, 4, 4});
    const int32_t out = b.Tensor("out", DType::kFloat32, {1, 3, 3, 2});
    const int i = b.CustomOp("TransformTensorBilinear", {in, mat}, {out}, BilinearOptions(2, 2));
    b.current().ops[i].version = 2;
    b.Output(out);
    e = RunError(b.Finish(), {img, m});
    EXPECT_NE(e.find("disagrees with the options"), std::string::npos) << e;
  }
  e = RunError(OneOp("TransformTensorBilinear", {{"img", {1, 4, 4, 2}}, {"m", {1, 4, 4}}}, BilinearOptions(2, 2), 1), {img, m});
  EXPECT_NE(e.find("version 1 is not supported"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------
// Landmarks2TransformMatrix.

std::vector<float> L2TRun(const std::vector<float>& lm, const L2TOpts& o) {
  const int n = static_cast<int>(lm.size() / 3);
  auto out = RunGraph(OneOp("Landmarks2TransformMatrix", {{"lm", {1, n, 3}}}, L2TOptions(o)), {Floats("lm", {1, n, 3}, lm)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{1, 4, 4}));
  return AsFloats((*out)[0]);
}

// The matrix from MediaPipe's definition, in double: rotation r = target - atan2(right - left);
// the subset landmarks rotated by r give a box (w, h) whose centre, rotated back by -r, is c;
// M = Shift(c) * Rot(-r) * Scale(scale_x * w / out_w, scale_y * h / out_h) * Shift(-out/2).
std::vector<double> L2TReference(const std::vector<float>& lm, const L2TOpts& o) {
  const double r = o.target - std::atan2(double{lm[3 * o.right + 1]} - lm[3 * o.left + 1],
                                         double{lm[3 * o.right]} - lm[3 * o.left]);
  double lo_x = 1e300, lo_y = 1e300, hi_x = -1e300, hi_y = -1e300;
  for (int i : o.subset) {
    const double x = lm[3 * i], y = lm[3 * i + 1];
    const double rx = std::cos(r) * x - std::sin(r) * y, ry = std::sin(r) * x + std::cos(r) * y;
    lo_x = std::min(lo_x, rx);
    hi_x = std::max(hi_x, rx);
    lo_y = std::min(lo_y, ry);
    hi_y = std::max(hi_y, ry);
  }
  const double mx = (lo_x + hi_x) / 2, my = (lo_y + hi_y) / 2;
  const double cx = std::cos(-r) * mx - std::sin(-r) * my, cy = std::sin(-r) * mx + std::cos(-r) * my;
  const double sx = o.scale_x * (hi_x - lo_x) / o.out_w, sy = o.scale_y * (hi_y - lo_y) / o.out_h;
  const double a = -r;
  const double m00 = std::cos(a) * sx, m01 = -std::sin(a) * sy, m10 = std::sin(a) * sx, m11 = std::cos(a) * sy;
  const double hx = -o.out_w / 2.0, hy = -o.out_h / 2.0;
  return {m00, m01, 0, m00 * hx + m01 * hy + cx, m10, m11, 0, m10 * hx + m11 * hy + cy, 0, 0, 1, 0, 0, 0, 0, 1};
}

void ExpectMatrixNear(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), 16u) << what;
  // Relative to the element's size (translations reach ~100 while rotations are ~1).
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " element " << i;
}

TEST(MediaPipeLandmarksToTransformMatrix, AxisAlignedSquareByHand) {
  // Landmarks: left (6, 20), right (14, 20) (horizontal: no rotation), top (10, 16), bottom
  // (10, 24), plus an unused far point. Box 8 x 8 centred at (10, 20); 16x16 output with
  // scale 1.5: s = 1.5 * 8 / 16 = 0.75, translation = centre - s * 8 = (4, 14).
  const std::vector<float> lm = {6, 20, 0, 14, 20, 0, 10, 16, 0, 10, 24, 0, 500, -300, 0};
  L2TOpts o;
  o.subset = {0, 1, 2, 3};
  const std::vector<double> want = {0.75, 0, 0, 4, 0, 0.75, 0, 14, 0, 0, 1, 0, 0, 0, 0, 1};
  ExpectMatrixNear(L2TRun(lm, o), want, 1e-6, "typed subset");
  o.typed_subset = false;
  ExpectMatrixNear(L2TRun(lm, o), want, 1e-6, "untyped subset");
  // An odd count: MediaPipe pairs the last index with itself, the same landmarks.
  o.subset = {0, 1, 2, 3, 3};
  ExpectMatrixNear(L2TRun(lm, o), want, 1e-6, "odd subset");
  // Non-square output and scales: s = (2 * 8 / 32, 1 * 8 / 8) = (0.5, 1); translation
  // (10 - 0.5 * 16, 20 - 1 * 4) = (2, 16).
  o.out_w = 32;
  o.out_h = 8;
  o.scale_x = 2;
  o.scale_y = 1;
  ExpectMatrixNear(L2TRun(lm, o), {0.5, 0, 0, 2, 0, 1, 0, 16, 0, 0, 1, 0, 0, 0, 0, 1}, 1e-6, "non-square");
}

TEST(MediaPipeLandmarksToTransformMatrix, RotatedSquareMapsBackOntoItself) {
  // The square above rotated by 30 degrees about its centre: left -> right points along 30
  // degrees, so with target 0 the matrix rotates output axes by +30 degrees, the box is again
  // 8 x 8 and the centre (10, 20); output pixel (8, 8) (the crop centre) maps onto the centre.
  const double t = 30 * M_PI / 180;
  std::vector<float> lm;
  const double pts[4][2] = {{-4, 0}, {4, 0}, {0, -4}, {0, 4}};
  for (const auto& p : pts) {
    lm.push_back(static_cast<float>(10 + std::cos(t) * p[0] - std::sin(t) * p[1]));
    lm.push_back(static_cast<float>(20 + std::sin(t) * p[0] + std::cos(t) * p[1]));
    lm.push_back(1.0f);
  }
  L2TOpts o;
  o.subset = {0, 1, 2, 3};
  const auto m = L2TRun(lm, o);
  ASSERT_EQ(m.size(), 16u);
  EXPECT_NEAR(m[0], 0.75 * std::cos(t), 1e-5);
  EXPECT_NEAR(m[4], 0.75 * std::sin(t), 1e-5);
  EXPECT_NEAR(m[1], -0.75 * std::sin(t), 1e-5);
  EXPECT_NEAR(m[5], 0.75 * std::cos(t), 1e-5);
  EXPECT_NEAR(m[0] * 8 + m[1] * 8 + m[3], 10, 1e-4);
  EXPECT_NEAR(m[4] * 8 + m[5] * 8 + m[7], 20, 1e-4);
  ExpectMatrixNear(m, L2TReference(lm, o), 2e-5, "reference");
}

TEST(MediaPipeLandmarksToTransformMatrix, RandomLandmarksMatchDoubleLoop) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(0, 48), ang(-3, 3);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> lm(30 * 3);
    for (auto& v : lm) v = u(rng);
    L2TOpts o;
    for (int i = 0; i < 30; i += 1 + trial % 3) o.subset.push_back(i);
    o.left = trial % 30;
    o.right = (trial * 7 + 3) % 30;
    if (o.left == o.right) o.right = (o.right + 1) % 30;
    o.target = trial % 4 == 0 ? 0.0f : ang(rng);
    o.out_w = 8 + trial;
    o.out_h = 24 - trial / 2;
    o.scale_x = 1.0f + 0.1f * trial;
    o.scale_y = 2.0f - 0.05f * trial;
    ExpectMatrixNear(L2TRun(lm, o), L2TReference(lm, o), 2e-5, "trial " + std::to_string(trial));
  }
}

TEST(MediaPipeLandmarksToTransformMatrix, BadInputsAndOptionsAreErrors) {
  const std::vector<float> lm(5 * 3, 1.0f);
  auto run = [&](const L2TOpts& o, std::vector<int32_t> shape = {1, 5, 3}) {
    int64_t n = 1;
    for (int d : shape) n *= d;
    return RunError(OneOp("Landmarks2TransformMatrix", {{"lm", shape}}, L2TOptions(o)),
                    {Floats("lm", shape, std::vector<float>(static_cast<size_t>(n), 1.0f))});
  };
  L2TOpts good;
  good.subset = {0, 1, 2};
  EXPECT_EQ(run(good), "");
  std::string e = run(good, {1, 5, 2});
  EXPECT_NE(e.find("must be [1, num_landmarks, 3]"), std::string::npos) << e;
  e = run(good, {5, 3});
  EXPECT_NE(e.find("must be [1, num_landmarks, 3]"), std::string::npos) << e;
  L2TOpts o = good;
  o.subset = {0, 5};
  e = run(o);
  EXPECT_NE(e.find("subset_idxs element 5 is out of range for 5 landmarks"), std::string::npos) << e;
  o = good;
  o.right = 9;
  e = run(o);
  EXPECT_NE(e.find("right_rotation_idx 9 is out of range"), std::string::npos) << e;
  o = good;
  o.left = -1;
  e = run(o);
  EXPECT_NE(e.find("left_rotation_idx must be >= 0"), std::string::npos) << e;
  o = good;
  o.subset = {};
  e = run(o);
  EXPECT_NE(e.find("'subset_idxs' is empty"), std::string::npos) << e;
  o = good;
  o.subset = {1, -2};
  e = run(o);
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
  o = good;
  o.out_w = 0;
  e = run(o);
  EXPECT_NE(e.find("output_width must be > 0"), std::string::npos) << e;
  o = good;
  o.scale_y = -1;
  e = run(o);
  EXPECT_NE(e.find("scale_y must be finite and > 0"), std::string::npos) << e;
  // Missing options and keys.
  e = RunError(OneOp("Landmarks2TransformMatrix", {{"lm", {1, 5, 3}}}, {}), {Floats("lm", {1, 5, 3}, lm)});
  EXPECT_NE(e.find("needs flexbuffer custom options"), std::string::npos) << e;
  flexbuffers::Builder fbb;
  fbb.Map([&]() { fbb.Int("left_rotation_idx", 0); });
  fbb.Finish();
  e = RunError(OneOp("Landmarks2TransformMatrix", {{"lm", {1, 5, 3}}}, fbb.GetBuffer()), {Floats("lm", {1, 5, 3}, lm)});
  EXPECT_NE(e.find("lack 'subset_idxs'"), std::string::npos) << e;
  e = RunError(OneOp("Landmarks2TransformMatrix", {{"lm", {1, 5, 3}}}, L2TOptions(good), 1), {Floats("lm", {1, 5, 3}, lm)});
  EXPECT_NE(e.find("version 1 is not supported"), std::string::npos) << e;
}

// The three ops chained as in face_landmark_with_attention: landmarks -> matrix -> a crop of a
// feature map, and the crop's landmarks mapped back with the same matrix.
TEST(MediaPipeOps, ChainedCropAndMapBack) {
  GraphBuilder b;
  const int32_t lm = b.Input("lm", DType::kFloat32, {1, 4, 3});
  const int32_t img = b.Input("img", DType::kFloat32, {1, 32, 32, 1});
  const int32_t pts = b.Input("pts", DType::kFloat32, {1, 2, 2});
  const int32_t mat = b.Tensor("mat", DType::kFloat32, {});
  const int32_t crop = b.Tensor("crop", DType::kFloat32, {});
  const int32_t back = b.Tensor("back", DType::kFloat32, {});
  L2TOpts o;
  o.subset = {0, 1, 2, 3};
  o.out_w = o.out_h = 8;
  o.scale_x = o.scale_y = 1.0f;
  for (int i : {b.CustomOp("Landmarks2TransformMatrix", {lm}, {mat}, L2TOptions(o)),
                b.CustomOp("TransformTensorBilinear", {img, mat}, {crop}, BilinearOptions(8, 8)),
                b.CustomOp("TransformLandmarks", {pts, mat}, {back})})
    b.current().ops[i].version = 2;
  b.Output(crop);
  b.Output(back);
  // Box x in [8, 16], y in [10, 18]: an 8x8 crop at scale 1 is the image block starting at (8, 10).
  std::vector<float> image(32 * 32);
  for (int i = 0; i < 32 * 32; ++i) image[i] = static_cast<float>(i);
  auto out = RunGraph(b.Finish(), {Floats("lm", {1, 4, 3}, {8, 14, 0, 16, 14, 0, 12, 10, 0, 12, 18, 0}),
                              Floats("img", {1, 32, 32, 1}, image), Floats("pts", {1, 2, 2}, {0, 0, 7, 3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto c = AsFloats((*out)[0]);
  ASSERT_EQ(c.size(), 64u);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) EXPECT_EQ(c[y * 8 + x], image[(10 + y) * 32 + 8 + x]) << x << "," << y;
  EXPECT_EQ(AsFloats((*out)[1]), (std::vector<float>{8, 10, 15, 13}));
}

// ---------------------------------------------------------------------------------------------
// End to end: face_landmark_with_attention vs face_landmark on the same face.

std::string FaceMeshDir() {
  if (const char* env = std::getenv("EDGEOPT_FACE_MESH_DIR")) return env;
  return testing::SourceDir() + "/.cache/mediapipe_extra";
}

TEST(MediaPipeFaceMesh, AttentionModelAgreesWithThePlainModel) {
  const std::string dir = FaceMeshDir();
  const std::string attention = dir + "/face_landmark_with_attention.tflite";
  const std::string plain = dir + "/face_landmark.tflite";
  const std::string image = testing::SharedDataDir() + "/images/face.jpg";
  for (const auto& f : {attention, plain, image})
    if (!testing::FileExists(f))
      GTEST_SKIP() << f << " is absent (run scripts/setup_models.sh, or set EDGEOPT_FACE_MESH_DIR)";
  // The right-hand face of face.jpg (512x355): a 190x190 square around it, resized to 192x192,
  // RGB in [0, 1] as MediaPipe feeds the face landmark models.
  auto img = eval::LoadImage(image, 3);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  const int x0 = 208, y0 = 10, side = 190;
  ASSERT_GE(img->width, x0 + side);
  ASSERT_GE(img->height, y0 + side);
  eval::Image crop;
  crop.width = crop.height = side;
  crop.channels = 3;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      for (int k = 0; k < 3; ++k)
        crop.pixels.push_back(img->pixels[(static_cast<size_t>(y0 + y) * img->width + x0 + x) * 3 + k]);
  const eval::Image sized = eval::ResizeBilinear(crop, 192, 192);
  std::vector<float> input;
  for (uint8_t p : sized.pixels) input.push_back(p / 255.0f);
  const TensorValue in = Floats("input_1", {1, 192, 192, 3}, input);

  auto run = [&](const std::string& path) -> std::vector<TensorValue> {
    auto model = rt::Model::FromFile(path);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    if (!model.ok()) return {};
    auto out = testing::RunEdgeopt(*model, {in});
    EXPECT_TRUE(out.ok()) << testing::Basename(path) << ": " << out.status().ToString();
    return out.ok() ? *out : std::vector<TensorValue>{};
  };
  const auto a = run(attention);
  const auto p = run(plain);
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(p.size(), 2u);
  // Outputs: attention: mesh [1,1,1,1404], lips, eyes, irises, face flag [1,1,1,1] (last);
  // plain: mesh, face flag. The face flag is a logit.
  ASSERT_EQ(a[0].num_elements(), 1404);
  ASSERT_EQ(p[0].num_elements(), 1404);
  ASSERT_EQ(a[6].num_elements(), 1);
  ASSERT_EQ(p[1].num_elements(), 1);
  const double flag_a = a[6].At(0), flag_p = p[1].At(0);
  std::vector<double> dist;
  double min_x = 1e9, max_x = -1e9;
  for (int i = 0; i < 468; ++i) {
    const double dx = a[0].At(3 * i) - p[0].At(3 * i), dy = a[0].At(3 * i + 1) - p[0].At(3 * i + 1);
    dist.push_back(std::hypot(dx, dy));
    min_x = std::min(min_x, a[0].At(3 * i));
    max_x = std::max(max_x, a[0].At(3 * i));
  }
  std::sort(dist.begin(), dist.end());
  const double median = dist[dist.size() / 2], p90 = dist[dist.size() * 9 / 10], worst = dist.back();
  // The refined lips / eyes / irises (TransformLandmarks outputs, 192 grid) lie on the crop.
  const double iris_x = a[4].At(0), iris_y = a[4].At(1);
  std::printf("face mesh: face flag logits %.2f (attention) / %.2f (plain); mesh x-range %.1f..%.1f; landmark "
              "distance on the 192 grid: median %.2f, p90 %.2f, max %.2f px; left iris centre (%.1f, %.1f)\n",
              flag_a, flag_p, min_x, max_x, median, p90, worst, iris_x, iris_y);
  EXPECT_GT(flag_a, 0.0) << "attention model: no face";
  EXPECT_GT(flag_p, 0.0) << "plain model: no face";
  EXPECT_GT(max_x - min_x, 50.0) << "the mesh should span the face";
  EXPECT_LT(median, 4.0);
  EXPECT_LT(p90, 8.0);
  for (int k = 1; k <= 5; ++k)
    for (int64_t i = 0; i < a[k].num_elements(); ++i) {
      EXPECT_GT(a[k].At(i), 0.0) << "output " << k;
      EXPECT_LT(a[k].At(i), 192.0) << "output " << k;
    }
}

}  // namespace
}  // namespace edgeopt
