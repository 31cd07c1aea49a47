// RFFT2D's fast path (rfft2d_fast.cc) against the reference kernel (ref.cc) over many shapes:
// batches, crop and zero-pad in both axes, fft_h 1..128, fft_w 2..1024, 1 and 2 threads. Both
// compute in double and round once to float, so they agree to about one float ulp:
// |fast - ref| <= 2.5e-7 |ref| + 1e-6 (the absolute part covers values that cancel to near
// zero, whose double error is ~1e-13 of the input sum).
#include <gtest/gtest.h>

#include <random>

#include "graph/builder.h"
#include "support/fast_vs_reference.h"

namespace edgeopt {
namespace {

Graph Rfft2d(const std::vector<int32_t>& in_shape, int32_t fft_h, int32_t fft_w) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, in_shape);
  auto len = b.Const<int32_t>("fft_length", DType::kInt32, {2}, {fft_h, fft_w});
  std::vector<int32_t> out_shape = in_shape;
  out_shape[out_shape.size() - 2] = fft_h;
  out_shape[out_shape.size() - 1] = fft_w / 2 + 1;
  auto spec = b.Tensor("spectrum", DType::kComplex64, out_shape);
  b.Op(tflite::BuiltinOperator_RFFT2D, {x, len}, {spec}, tflite::Rfft2dOptionsT{});
  b.Output(spec);
  return b.Finish();
}

TEST(Rfft2dFast, MatchesReference) {
  struct Case {
    std::vector<int32_t> shape;
    int32_t fft_h, fft_w;
  };
  std::vector<Case> cases = {
      {{1, 2}, 1, 2},        {{1, 1}, 1, 4},          {{3, 5, 6}, 8, 4},       {{2, 1, 16, 16}, 16, 16},
      {{1, 7, 3}, 2, 16},    {{1, 96, 64}, 128, 64},  {{96, 1, 512}, 1, 512},  {{5, 1, 400}, 1, 512},
      {{2, 3, 9, 33}, 4, 32}, {{1, 64, 100}, 32, 128}, {{17, 1000}, 16, 1024}, {{3, 4}, 8, 2},
  };
  std::mt19937 rng(7);
  for (int i = 0; i < 12; ++i) {
    const int32_t h = 1 << std::uniform_int_distribution<int>(0, 6)(rng);
    const int32_t w = 2 << std::uniform_int_distribution<int>(0, 8)(rng);
    const int32_t ih = std::uniform_int_distribution<int>(1, 2 * h)(rng);
    const int32_t iw = std::uniform_int_distribution<int>(1, 2 * w)(rng);
    cases.push_back({{std::uniform_int_distribution<int>(1, 3)(rng), ih, iw}, h, w});
  }
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      testing::FastCheck check;
      check.threads = threads;
      check.op_type = "RFFT2D";
      check.variant = "rfft2d/f32/fft_split";
      check.atol = 1e-6;
      check.rtol = 2.5e-7;
      check.seed = static_cast<uint64_t>(c.fft_w + c.fft_h);
      testing::ExpectFastMatchesReference(Rfft2d(c.shape, c.fft_h, c.fft_w),
                                          "RFFT2D " + rt::ShapeToString(c.shape) + " fft " + std::to_string(c.fft_h) +
                                              "x" + std::to_string(c.fft_w),
                                          check);
    }
}

}  // namespace
}  // namespace edgeopt
