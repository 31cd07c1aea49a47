// CONCATENATION -> 1×1 CONV_2D with spatially uniform inputs (concat_conv_f32.cc): generated
// graphs, where some concatenated inputs are resizes of 1×1 maps, run fused (the default) and
// unfused (InterpreterOptions::fuse_ops = false), and against TFLite 2.9 where it is present.
// The fused op adds the uniform inputs' share to the bias before the GEMM, so its float sums are
// ordered differently: outputs must agree within rtol 1e-5 of the output's range (atol 1e-5).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "format/writer.h"
#include "graph/builder.h"
#include "runtime/cpu.h"
#include "runtime/interpreter.h"
#include "support/conformance.h"

namespace edgeopt {
namespace {

// One concatenated input: `uniform` ones are a resize of a [batch, 1, 1, channels] input,
// the others a [batch, h, w, channels] input.
struct Part {
  int channels;
  bool uniform;
};

struct ConcatCase {
  int batch, h, w;
  std::vector<Part> parts;
  int cout;
  bool bias;
  tflite::ActivationFunctionType act;
  tflite::BuiltinOperator resize;
  int axis;
  int threads;
  std::string Name() const {
    std::ostringstream s;
    s << "b" << batch << " " << h << "x" << w << " [";
    for (const Part& p : parts) s << (p.uniform ? "u" : "x") << p.channels << " ";
    s << "] -> " << cout << (bias ? " bias" : " no-bias") << " act" << static_cast<int>(act)
      << (resize == tflite::BuiltinOperator_RESIZE_BILINEAR ? " bilinear" : " nearest") << " axis" << axis
      << " threads " << threads;
    return s.str();
  }
};

// Returns the graph; *concat_op is the CONCATENATION's op index. resize_from: the uniform
// inputs' spatial size (1 for uniform maps; 2 builds the same graph with a 2×2 map, which the
// fusion must leave alone).
Graph MakeConcatConv(const ConcatCase& c, uint64_t seed, int* concat_op, int resize_from = 1) {
  GraphBuilder b(seed);
  std::vector<int32_t> cat_in;
  int k = 0;
  for (size_t j = 0; j < c.parts.size(); ++j) {
    const Part& p = c.parts[j];
    const std::string n = std::to_string(j);
    k += p.channels;
    if (!p.uniform) {
      cat_in.push_back(b.Input("x" + n, DType::kFloat32, {c.batch, c.h, c.w, p.channels}));
      continue;
    }
    auto m = b.Input("m" + n, DType::kFloat32, {c.batch, resize_from, resize_from, p.channels});
    auto size = b.Const<int32_t>("size" + n, DType::kInt32, {2}, {c.h, c.w});
    auto r = b.Tensor("r" + n, DType::kFloat32, {c.batch, c.h, c.w, p.channels});
    if (c.resize == tflite::BuiltinOperator_RESIZE_BILINEAR) {
      tflite::ResizeBilinearOptionsT o;
      o.half_pixel_centers = j % 2 == 0;
      b.Op(c.resize, {m, size}, {r}, o);
    } else {
      tflite::ResizeNearestNeighborOptionsT o;
      o.align_corners = j % 2 == 1;
      b.Op(c.resize, {m, size}, {r}, o);
    }
    cat_in.push_back(r);
  }
  auto cat = b.Tensor("cat", DType::kFloat32, {c.batch, c.h, c.w, k});
  tflite::ConcatenationOptionsT co;
  co.axis = c.axis;
  *concat_op = b.Op(tflite::BuiltinOperator_CONCATENATION, cat_in, {cat}, co);
  auto w = b.ConstRandom("w", DType::kFloat32, {c.cout, 1, 1, k});
  std::vector<int32_t> conv_in = {cat, w};
  if (c.bias) conv_in.push_back(b.ConstRandom("bias", DType::kFloat32, {c.cout}));
  auto y = b.Tensor("y", DType::kFloat32, {c.batch, c.h, c.w, c.cout});
  tflite::Conv2DOptionsT o;
  o.padding = tflite::Padding_SAME;
  o.stride_h = o.stride_w = 1;
  o.fused_activation_function = c.act;
  b.Op(tflite::BuiltinOperator_CONV_2D, conv_in, {y}, o);
  b.Output(y);
  return b.Finish();
}

std::string VariantOf(const std::shared_ptr<const rt::Model>& model, int op, int threads) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  auto interp = rt::Interpreter::Create(model, io);
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return "";
  for (const auto& info : (*interp)->ops())
    if (info.index == op) return info.variant;
  return "";
}

testing::CompareOptions Tolerance() {
  testing::CompareOptions o;
  o.rtol = 1e-5;
  o.atol = 1e-5;
  return o;
}

// Runs the model fused (the default) and unfused, expects equal outputs within Tolerance();
// returns the fused outputs (empty if a run failed).
std::vector<testing::TensorValue> FusedMatchingUnfused(const std::shared_ptr<const rt::Model>& model,
                                                       const std::vector<testing::TensorValue>& inputs, int threads) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  auto fused = testing::RunEdgeopt(model, inputs, io);
  EXPECT_TRUE(fused.ok()) << fused.status().ToString();
  io.fuse_ops = false;
  auto plain = testing::RunEdgeopt(model, inputs, io);
  EXPECT_TRUE(plain.ok()) << plain.status().ToString();
  if (!fused.ok() || !plain.ok()) return {};
  auto vs_plain = testing::CompareOutputs(*fused, *plain, Tolerance());
  EXPECT_TRUE(vs_plain.ok) << "vs unfused: " << vs_plain.Summary();
  return *fused;
}

std::vector<ConcatCase> Cases() {
  const auto R6 = tflite::ActivationFunctionType_RELU6, RELU = tflite::ActivationFunctionType_RELU,
             NONE = tflite::ActivationFunctionType_NONE;
  const auto BL = tflite::BuiltinOperator_RESIZE_BILINEAR, NN = tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR;
  return {
      // DeepLabV3's head: pooled branch first, then the 1×1 branch.
      {1, 33, 33, {{256, true}, {256, false}}, 256, true, RELU, BL, 3, 1},
      {1, 33, 33, {{256, true}, {256, false}}, 256, true, RELU, BL, 3, 2},
      // Odd sizes, the uniform input last or in the middle, several gathered inputs.
      {1, 7, 5, {{13, false}, {5, true}}, 37, true, R6, BL, -1, 1},
      {2, 9, 11, {{3, false}, {17, true}, {6, false}}, 21, false, NONE, NN, 3, 1},
      {2, 9, 11, {{3, false}, {17, true}, {6, false}}, 21, false, NONE, NN, 3, 2},
      {1, 6, 13, {{8, true}, {24, false}, {1, true}, {40, false}, {7, false}}, 50, true, R6, BL, 3, 2},
      // Every input uniform: every pixel is act(bias + u · W).
      {2, 5, 4, {{9, true}, {4, true}}, 19, true, RELU, NN, 3, 1},
      {1, 1, 1, {{9, true}, {4, false}}, 3, true, NONE, BL, 3, 1},
  };
}

TEST(FusedConcatPointwiseF32, MatchesUnfusedAndTflite) {
  const bool tflite = testing::Tflite29Available();
  if (!tflite) std::printf("TFLite 2.9 library absent (run scripts/setup.sh): fused vs unfused only\n");
  uint64_t seed = 11;
  for (const ConcatCase& c : Cases()) {
    SCOPED_TRACE(c.Name());
    int concat_op = -1;
    Graph g = MakeConcatConv(c, ++seed, &concat_op);
    auto bytes = SerializeModel(g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto model = rt::Model::FromGraph(std::move(g));
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    if (rt::CpuHardware().has_avx2_fma()) {
      const std::string v = VariantOf(*model, concat_op, c.threads);
      EXPECT_EQ(v.rfind("fused/concat+pw/f32/", 0), 0u) << v;
      EXPECT_NE(v.find("/uniform"), std::string::npos) << v;
    }
    const testing::CompareOptions o = Tolerance();
    const auto inputs = testing::RandomInputs((*model)->graph(), o);
    const auto fused = FusedMatchingUnfused(*model, inputs, c.threads);
    ASSERT_FALSE(fused.empty());
    // TFLite 2.9's float CONV_2D requires a bias: without one, fused vs unfused only.
    if (tflite && c.bias) {
      auto ref = testing::RunTflite29(*bytes, inputs);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      auto vs_tflite = testing::CompareOutputs(fused, *ref, o);
      EXPECT_TRUE(vs_tflite.ok) << "vs TFLite 2.9: " << vs_tflite.Summary();
    }
  }
}

// c's model (seed 5) with every input's height and width resizable (ResizeInput).
Expected<std::shared_ptr<const rt::Model>> ResizableModel(const ConcatCase& c) {
  int concat_op = -1;
  Graph g = MakeConcatConv(c, 5, &concat_op);
  Subgraph& s = g.subgraphs[0];
  for (int32_t in : s.inputs) s.tensors[in].shape_signature = {1, -1, -1, s.tensors[in].shape[3]};
  return rt::Model::FromGraph(std::move(g));
}

// A model whose pooled map becomes larger than 1×1 after ResizeInput: the resize is no longer
// uniform, and the fused op must gather it like any other input (checked at every Prepare).
TEST(FusedConcatPointwiseF32, MapResizedBeyondOnePixel) {
  const ConcatCase c{1, 8, 6, {{12, true}, {20, false}}, 24, true, tflite::ActivationFunctionType_NONE,
                     tflite::BuiltinOperator_RESIZE_BILINEAR, 3, 1};
  auto model = ResizableModel(c);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const testing::CompareOptions o = Tolerance();
  for (int side : {1, 3}) {
    SCOPED_TRACE("pooled map " + std::to_string(side) + "x" + std::to_string(side));
    auto inputs = testing::RandomInputs((*model)->graph(), o);
    for (auto& v : inputs) {
      if (v.shape[1] != 1) continue;
      v.shape = {1, side, side, v.shape[3]};
      v.data.resize(static_cast<size_t>(side) * side * v.shape[3] * sizeof(float));
      for (size_t i = 0; i < v.data.size() / sizeof(float); ++i)
        reinterpret_cast<float*>(v.data.data())[i] = static_cast<float>((i * 37 % 101) / 50.0 - 1.0);
    }
    EXPECT_FALSE(FusedMatchingUnfused(*model, inputs, 1).empty());
  }
}

// The resizes of the uniform inputs do not run (the fused op reads the 1x1 maps), unless fusion
// is off, every tensor is kept (preserve_all_tensors) or a map stops being 1x1.
TEST(FusedConcatPointwiseF32, ResizesOfUniformMapsDoNotRun) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA: no fast kernels to fuse";
  const ConcatCase c{1, 8, 6, {{12, true}, {20, false}, {5, true}}, 24, true, tflite::ActivationFunctionType_NONE,
                     tflite::BuiltinOperator_RESIZE_BILINEAR, 3, 1};
  auto model = ResizableModel(c);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto resizes_not_run = [&](const rt::InterpreterOptions& io, int side) {
    auto interp = rt::Interpreter::Create(*model, io);
    EXPECT_TRUE(interp.ok()) << interp.status().ToString();
    if (!interp.ok()) return -1;
    for (int k = 0; k < (*interp)->num_inputs(); ++k) {
      const int channels = (*interp)->input(k)->dim(3);
      if ((*interp)->input(k)->dim(1) == 1) {
        EXPECT_TRUE((*interp)->ResizeInput(k, {1, side, side, channels}).ok());
      }
    }
    EXPECT_TRUE((*interp)->AllocateTensors().ok());
    int n = 0;
    for (const auto& info : (*interp)->ops()) {
      if (info.type != "RESIZE_BILINEAR") continue;
      n += info.unread ? 1 : 0;
      EXPECT_EQ(info.unread, info.variant.find("not run") != std::string::npos) << info.variant;
    }
    return n;
  };
  rt::InterpreterOptions io;
  EXPECT_EQ(resizes_not_run(io, 1), 2);
  EXPECT_EQ(resizes_not_run(io, 3), 0);  // the maps are no longer uniform
  io.preserve_all_tensors = true;
  EXPECT_EQ(resizes_not_run(io, 1), 0);
  io.preserve_all_tensors = false;
  io.fuse_ops = false;
  EXPECT_EQ(resizes_not_run(io, 1), 0);
}

// Left alone: no uniform input (a 2×2 map resized), the concatenation also a subgraph output,
// a concatenation along another axis.
TEST(FusedConcatPointwiseF32, LeavesOtherConcatenationsAlone) {
  if (!rt::CpuHardware().has_avx2_fma()) GTEST_SKIP() << "no AVX2+FMA: no fast kernels to fuse";
  const ConcatCase c{1, 8, 6, {{12, true}, {20, false}}, 24, true, tflite::ActivationFunctionType_NONE,
                     tflite::BuiltinOperator_RESIZE_BILINEAR, 3, 1};
  int concat_op = -1;
  {
    auto model = rt::Model::FromGraph(MakeConcatConv(c, 5, &concat_op, /*resize_from=*/2));
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(VariantOf(*model, concat_op, 1).rfind("fused", 0), std::string::npos);
  }
  {
    Graph g = MakeConcatConv(c, 5, &concat_op);
    g.subgraphs[0].outputs.push_back(g.subgraphs[0].ops[concat_op].outputs[0]);
    auto model = rt::Model::FromGraph(std::move(g));
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(VariantOf(*model, concat_op, 1).rfind("fused", 0), std::string::npos);
  }
  {
    // Along W: [1, 8, 12, 12]; the 1×1 conv then reads 12 channels.
    GraphBuilder b(3);
    auto m = b.Input("m", DType::kFloat32, {1, 1, 1, 12});
    auto x = b.Input("x", DType::kFloat32, {1, 8, 6, 12});
    auto size = b.Const<int32_t>("size", DType::kInt32, {2}, {8, 6});
    auto r = b.Tensor("r", DType::kFloat32, {1, 8, 6, 12});
    b.Op(tflite::BuiltinOperator_RESIZE_BILINEAR, {m, size}, {r}, tflite::ResizeBilinearOptionsT{});
    auto cat = b.Tensor("cat", DType::kFloat32, {1, 8, 12, 12});
    tflite::ConcatenationOptionsT co;
    co.axis = 2;
    const int op = b.Op(tflite::BuiltinOperator_CONCATENATION, {r, x}, {cat}, co);
    auto w = b.ConstRandom("w", DType::kFloat32, {5, 1, 1, 12});
    auto y = b.Tensor("y", DType::kFloat32, {1, 8, 12, 5});
    tflite::Conv2DOptionsT o;
    o.padding = tflite::Padding_SAME;
    o.stride_h = o.stride_w = 1;
    b.Op(tflite::BuiltinOperator_CONV_2D, {cat, w}, {y}, o);
    b.Output(y);
    auto model = rt::Model::FromGraph(b.Finish());
    ASSERT_TRUE(model.ok());
    EXPECT_EQ(VariantOf(*model, op, 1).rfind("fused", 0), std::string::npos);
  }
}

}  // namespace
}  // namespace edgeopt
