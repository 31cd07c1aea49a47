// RFFT2D / COMPLEX_ABS / REAL / IMAG against TFLite 2.9, error paths, and RFFT2D's fast path
// against the reference kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "format/reader.h"
#include "graph/builder.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/fast_vs_reference.h"
#include "runtime/cpu.h"

namespace edgeopt {
namespace {

using testing::CompareGraph;

// input -> RFFT2D -> {complex output, COMPLEX_ABS, REAL, IMAG}.
Graph Rfft2dGraph(const std::vector<int32_t>& in_shape, int32_t fft_h, int32_t fft_w) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, in_shape);
  auto len = b.Const<int32_t>("fft_length", DType::kInt32, {2}, {fft_h, fft_w});
  std::vector<int32_t> out_shape = in_shape;
  out_shape[out_shape.size() - 2] = fft_h;
  out_shape[out_shape.size() - 1] = fft_w / 2 + 1;
  auto spec = b.Tensor("spectrum", DType::kComplex64, out_shape);
  b.Op(tflite::BuiltinOperator_RFFT2D, {x, len}, {spec}, tflite::Rfft2dOptionsT{});
  auto mag = b.Tensor("magnitude", DType::kFloat32, out_shape);
  b.Op(tflite::BuiltinOperator_COMPLEX_ABS, {spec}, {mag});
  auto re = b.Tensor("real", DType::kFloat32, out_shape);
  b.Op(tflite::BuiltinOperator_REAL, {spec}, {re});
  auto im = b.Tensor("imag", DType::kFloat32, out_shape);
  b.Op(tflite::BuiltinOperator_IMAG, {spec}, {im});
  b.Output(spec);
  b.Output(mag);
  b.Output(re);
  b.Output(im);
  return b.Finish();
}

TEST(SignalConformance, Rfft2dAndComplexParts) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  struct Case {
    std::vector<int32_t> shape;
    int32_t fft_h, fft_w;
  };
  const Case cases[] = {
      {{4, 8}, 4, 8},          // exact size
      {{3, 5, 6}, 8, 4},       // batch, zero-pad H, crop W
      {{2, 1, 16, 16}, 16, 16},
      {{1, 7, 3}, 2, 16},      // crop H, pad W
      {{1, 96, 64}, 128, 64},  // spectrogram-sized
      {{1, 1}, 2, 2},          // 1x1 input zero-padded
      {{2, 2, 3}, 1, 2},       // single row
  };
  // Not covered: fft_w == 1. TFLite 2.9's Ooura-based kernel returns imag == real for a width-1
  // transform (its reordering assumes width >= 2); edgeopt returns the exact DFT (imag 0).
  for (const auto& c : cases) {
    testing::CompareOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-5;
    auto report = CompareGraph(Rfft2dGraph(c.shape, c.fft_h, c.fft_w), o);
    EXPECT_TRUE(report.ok) << "shape " << rt::ShapeToString(c.shape) << " fft {" << c.fft_h << "," << c.fft_w
                           << "}: " << report.Summary();
  }
}

// The RFFT2D op of yamnet_dynamic_range.tflite ([96, 1, 512] frames, its own fft_length) and
// its COMPLEX_ABS, each kept alone with its real constants.
TEST(SignalConformance, RealYamnetOps) {
  if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  EDGEOPT_REQUIRE_SHARED_MODELS();
  const std::string path = testing::SharedModel("yamnet_dynamic_range.tflite");
  if (path.empty()) GTEST_SKIP() << "yamnet_dynamic_range.tflite absent";
  for (auto code : {tflite::BuiltinOperator_RFFT2D, tflite::BuiltinOperator_COMPLEX_ABS}) {
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    Subgraph& sg = g->main();
    int found = -1;
    for (size_t i = 0; i < sg.ops.size() && found < 0; ++i)
      if (sg.ops[i].code == code) found = static_cast<int>(i);
    ASSERT_GE(found, 0);
    Operator op = sg.ops[found];
    sg.ops = {op};
    sg.inputs = {op.inputs[0]};
    sg.outputs = {op.outputs[0]};
    g->signatures.clear();
    g->DropUnused();
    testing::CompareOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-5;
    std::vector<testing::TensorValue> inputs;
    if (code == tflite::BuiltinOperator_COMPLEX_ABS) {
      // Random complex values (the harness would give zeros for complex inputs).
      const Tensor& t = sg.tensors[sg.inputs[0]];
      testing::TensorValue v;
      v.name = t.name;
      v.type = t.type;
      v.shape = t.shape;
      std::mt19937_64 rng(3);
      auto f = RandomFloats(rng, static_cast<size_t>(t.num_elements()) * 2, -50.0f, 50.0f);
      v.data.resize(f.size() * 4);
      std::memcpy(v.data.data(), f.data(), v.data.size());
      inputs.push_back(std::move(v));
    }
    auto report = CompareGraph(*g, o, inputs);
    EXPECT_TRUE(report.ok) << BuiltinName(code) << ": " << report.Summary();
  }
}

Status PrepareGraph(Graph g) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(std::move(g)));
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model));
  return interp->AllocateTensors();
}

TEST(SignalErrors, BadFftLengthAndTypes) {
  {
    Status st = PrepareGraph(Rfft2dGraph({4, 8}, 3, 8));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("RFFT2D"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("powers of two"), std::string::npos) << st.ToString();
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt32, {4, 8});
    auto len = b.Const<int32_t>("fft_length", DType::kInt32, {2}, {4, 8});
    auto y = b.Tensor("y", DType::kComplex64, {4, 5});
    b.Op(tflite::BuiltinOperator_RFFT2D, {x, len}, {y}, tflite::Rfft2dOptionsT{});
    b.Output(y);
    Status st = PrepareGraph(b.Finish());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("RFFT2D: input must be float32"), std::string::npos) << st.ToString();
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {4, 8});
    auto y = b.Tensor("y", DType::kFloat32, {4, 8});
    b.Op(tflite::BuiltinOperator_COMPLEX_ABS, {x}, {y});
    b.Output(y);
    Status st = PrepareGraph(b.Finish());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("COMPLEX_ABS"), std::string::npos) << st.ToString();
  }
}

// RFFT2D's fast path (rfft2d_fast.cc) against the reference kernel (ref.cc) over many shapes:
// batches, crop and zero-pad in both axes, fft_h 1..128, fft_w 2..1024, 1 and 2 threads. Both
// compute in double and round once to float, so they agree to about one float ulp:
// |fast - ref| <= 2.5e-7 |ref| + 1e-6 (the absolute part covers values that cancel to near
// zero, whose double error is ~1e-13 of the input sum).
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
  // This CPU's features, and the same without AVX-512 (the portable butterflies).
  std::vector<rt::CpuFeatures> levels{rt::Cpu()};
  if (rt::Cpu().has_avx512()) levels.push_back(rt::CapFeatures(rt::Cpu(), "avx2"));
  for (const rt::CpuFeatures& cpu : levels)
    for (const Case& c : cases)
      for (int threads : {1, 2}) {
        testing::FastCheck check;
        check.threads = threads;
        check.cpu = &cpu;
        check.op_type = "RFFT2D";
        check.variant = cpu.has_avx512() ? "rfft2d/f32/avx512" : "rfft2d/f32/fft_split";
        check.atol = 1e-6;
        check.rtol = 2.5e-7;
        check.seed = static_cast<uint64_t>(c.fft_w + c.fft_h);
        testing::ExpectFastMatchesReference(Rfft2dGraph(c.shape, c.fft_h, c.fft_w),
                                            "RFFT2D " + rt::ShapeToString(c.shape) + " fft " + std::to_string(c.fft_h) +
                                                "x" + std::to_string(c.fft_w) + " " + check.variant,
                                            check);
      }
}

// COMPLEX_ABS on AVX-512 against the reference kernel (std::abs), bit for bit: lengths around
// the 8-value vector, magnitudes from denormal to FLT_MAX, zeros of both signs, infinities next
// to NaNs, 1 and 2 threads.
TEST(ComplexAbsFast, MatchesReferenceBitForBit) {
  if (!rt::CpuHardware().has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: COMPLEX_ABS runs the reference kernel";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-140, 127);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), 1.0f, -3.0f};
  for (int n : {1, 7, 8, 9, 16, 31, 1000}) {
    GraphBuilder b;
    auto x = b.Input("x", DType::kComplex64, {n});
    auto y = b.Tensor("y", DType::kFloat32, {n});
    b.Op(tflite::BuiltinOperator_COMPLEX_ABS, {x}, {y});
    b.Output(y);
    auto model = rt::Model::FromGraph(b.Finish());
    ASSERT_TRUE(model.ok());
    std::vector<float> in(2 * static_cast<size_t>(n));
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = i % 5 == 4 ? specials[(i / 5) % 9] : std::ldexp(mant(rng), expo(rng));
    if (n >= 4) {  // an infinite part wins over a NaN one (hypotf), and NaN with a finite part
      in[0] = std::numeric_limits<float>::infinity();
      in[1] = std::numeric_limits<float>::quiet_NaN();
      in[2] = std::numeric_limits<float>::quiet_NaN();
      in[3] = -std::numeric_limits<float>::infinity();
      in[4] = std::numeric_limits<float>::quiet_NaN();
      in[5] = 2.0f;
    }
    std::vector<std::vector<float>> outs;
    for (bool reference : {true, false}) {
      rt::InterpreterOptions io;
      io.reference_kernels_only = reference;
      io.num_threads = 1 + n % 2;
      auto interp = rt::Interpreter::Create(*model, io);
      ASSERT_TRUE(interp.ok());
      ASSERT_TRUE((*interp)->AllocateTensors().ok());
      if (!reference) {
        EXPECT_EQ((*interp)->ops()[0].variant, "complex_abs/complex64/avx512");
      }
      std::memcpy((*interp)->input(0)->data, in.data(), in.size() * sizeof(float));
      ASSERT_TRUE((*interp)->Invoke().ok());
      const float* o = (*interp)->output(0)->data_as<float>();
      outs.emplace_back(o, o + n);
    }
    int bad = 0;
    for (int i = 0; i < n; ++i)
      if (std::memcmp(&outs[0][i], &outs[1][i], sizeof(float)) != 0 && bad++ < 5)
        ADD_FAILURE() << "n " << n << " element " << i << " (" << in[2 * i] << ", " << in[2 * i + 1] << "): got "
                      << outs[1][i] << " want " << outs[0][i];
  }
}

}  // namespace
}  // namespace edgeopt
