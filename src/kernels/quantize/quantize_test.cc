// QUANTIZE, DEQUANTIZE and CAST against TFLite 2.9. All integer outputs bit-exact; float
// outputs of DEQUANTIZE / CAST exact as well (rtol 0: single multiplications and conversions).
#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "format/reader.h"
#include "runtime/cpu.h"
#include "support/core/model_files.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using namespace testing;

const std::vector<std::vector<int32_t>> kShapes = {{}, {1}, {7}, {3, 5}, {2, 3, 4, 5}, {1, 2, 3, 4, 5}};

class QuantizeConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
  }
};

CompareOptions Exact() {
  CompareOptions o;
  o.max_lsb = 0;
  o.rtol = 0;
  o.atol = 0;
  return o;
}

TEST_F(QuantizeConformance, QuantizeFloat) {
  struct P {
    DType t;
    float scale;
    int zp;
  };
  const P params[] = {{DType::kInt8, 0.05f, 0},     {DType::kInt8, 0.1f, -128},      {DType::kInt8, 0.0123f, 17},
                      {DType::kUInt8, 0.05f, 128},  {DType::kUInt8, 0.3f, 0},        {DType::kUInt8, 0.007f, 255},
                      {DType::kInt16, 1.0f / 4096, 0}, {DType::kInt16, 0.00037f, 0}, {DType::kInt16, 0.001f, 100}};
  uint64_t seed = 4000;
  for (const P& p : params) {
    for (const auto& shape : kShapes) {
      const TensorSpec in = Spec(DType::kFloat32, shape), out = QSpec(p.t, shape, p.scale, p.zp);
      std::mt19937_64 rng(++seed);
      // Wide enough to saturate.
      const double range = p.scale * (p.t == DType::kInt16 ? 40000.0 : 160.0);
      EXPECT_EQ(CheckCase29("QUANTIZE float32->" + std::string(DTypeName(p.t)) + " " + ShapeText(shape) + " scale " +
                                std::to_string(p.scale) + " zp " + std::to_string(p.zp),
                            OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {in}, {out}), Exact(), {RandomValue(in, rng, -range, range)}),
                "");
    }
    // Values exactly halfway between two quantized levels: ties round away from zero.
    std::vector<float> ties;
    for (int k = -20; k <= 20; ++k) ties.push_back((static_cast<float>(k) + 0.5f) * p.scale);
    const TensorSpec in = Spec(DType::kFloat32, {static_cast<int32_t>(ties.size())});
    const TensorSpec out = QSpec(p.t, in.shape, p.scale, p.zp);
    EXPECT_EQ(CheckCase29("QUANTIZE ties float32->" + std::string(DTypeName(p.t)) + " scale " + std::to_string(p.scale),
                          OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {in}, {out}), Exact(), {Value(in, ties)}),
              "");
  }
}

TEST_F(QuantizeConformance, Requantize) {
  struct P {
    DType in;
    float in_scale;
    int in_zp;
    DType out;
    float out_scale;
    int out_zp;
  };
  const P params[] = {
      {DType::kInt8, 0.05f, 3, DType::kInt8, 0.07f, -10},     {DType::kInt8, 0.05f, 3, DType::kInt8, 0.01f, 0},
      {DType::kInt8, 0.05f, 0, DType::kUInt8, 0.05f, 128},    {DType::kInt8, 0.02f, -128, DType::kUInt8, 0.1f, 7},
      {DType::kUInt8, 0.05f, 128, DType::kInt8, 0.05f, 0},    {DType::kUInt8, 0.3f, 200, DType::kInt8, 0.2f, -3},
      {DType::kUInt8, 0.05f, 100, DType::kUInt8, 0.025f, 90}, {DType::kInt16, 0.001f, 0, DType::kInt16, 0.0007f, 0},
      {DType::kInt16, 0.001f, 0, DType::kInt8, 0.1f, -5},     {DType::kInt16, 1.0f / 4096, 0, DType::kInt16, 1.0f / 32768, 0},
  };
  uint64_t seed = 4100;
  for (const P& p : params) {
    for (const auto& shape : kShapes) {
      const TensorSpec in = QSpec(p.in, shape, p.in_scale, p.in_zp), out = QSpec(p.out, shape, p.out_scale, p.out_zp);
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29("QUANTIZE " + std::string(DTypeName(p.in)) + "->" + std::string(DTypeName(p.out)) + " " + ShapeText(shape) +
                                " scales " + std::to_string(p.in_scale) + "/" + std::to_string(p.out_scale),
                            OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {in}, {out}), o),
                "");
    }
  }
}

TEST_F(QuantizeConformance, Dequantize) {
  struct P {
    DType t;
    float scale;
    int zp;
  };
  const P params[] = {{DType::kInt8, 0.05f, 0},   {DType::kInt8, 0.013f, -128}, {DType::kUInt8, 0.05f, 128},
                      {DType::kUInt8, 0.3f, 17},  {DType::kInt16, 0.001f, 0},   {DType::kInt16, 1.0f / 32768, 0}};
  uint64_t seed = 4200;
  for (const P& p : params) {
    for (const auto& shape : kShapes) {
      const TensorSpec in = QSpec(p.t, shape, p.scale, p.zp);
      CompareOptions o = Exact();
      o.seed = ++seed;
      EXPECT_EQ(CheckCase29("DEQUANTIZE " + std::string(DTypeName(p.t)) + " " + ShapeText(shape),
                            OneOpGraph(tflite::BuiltinOperator_DEQUANTIZE, {in}, {Spec(DType::kFloat32, shape)}), o),
                "");
    }
  }
  // float16 input (graph input).
  for (const auto& shape : kShapes) {
    const TensorSpec in = Spec(DType::kFloat16, shape);
    std::mt19937_64 rng(++seed);
    EXPECT_EQ(CheckCase29("DEQUANTIZE float16 " + ShapeText(shape),
                          OneOpGraph(tflite::BuiltinOperator_DEQUANTIZE, {in}, {Spec(DType::kFloat32, shape)}), Exact(),
                          {RandomValue(in, rng, -65000, 65000)}),
              "");
  }
}

// The float16-weights path: a float16 constant dequantized by the interpreter's constant
// folding (once, at allocation), feeding an op on a graph input.
TEST_F(QuantizeConformance, DequantizeFloat16ConstantFolded) {
  std::mt19937_64 rng(4300);
  const std::vector<int32_t> shape = {2, 3, 5};
  std::vector<uint16_t> halfs;
  for (float f : RandomFloats(rng, 30, -4, 4)) halfs.push_back(FloatToHalf(f));
  // Specials: zero, -zero, subnormals, the largest halfs. (No infinities: the harness's
  // relative tolerance is undefined for an infinite reference range.)
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x83ff, 0x7bff, 0xfbff};
  for (size_t i = 0; i < std::size(specials); ++i) halfs[i] = specials[i];
  GraphBuilder b;
  auto w = b.Const<uint16_t>("w16", DType::kFloat16, shape, halfs);
  auto wf = b.Tensor("w", DType::kFloat32, shape);
  b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w}, {wf});
  auto x = b.Input("x", DType::kFloat32, shape);
  auto y = b.Tensor("y", DType::kFloat32, shape);
  tflite::MulOptionsT mo;
  b.Op(tflite::BuiltinOperator_MUL, {x, wf}, {y}, mo);
  b.Output(y);
  b.Output(wf);
  const Graph g = b.Finish();
  EXPECT_EQ(CheckCase29("DEQUANTIZE float16 constant -> MUL", g, Exact()), "");
  // The DEQUANTIZE was folded: it ran at allocation time, not per invoke.
  auto model = rt::Model::FromGraph(g);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto interp = rt::Interpreter::Create(*model);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ASSERT_TRUE((*interp)->AllocateTensors().ok());
  const auto ops = (*interp)->ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_TRUE(ops[0].folded) << ops[0].variant;
  // The F16C conversion on CPUs with AVX2 (+F16C), the portable one elsewhere.
  EXPECT_EQ(ops[0].variant, rt::Cpu().has_avx2_fma() ? "dequantize/float16/avx2" : "dequantize/float16/ref");
}

// The float16 weights of the real MediaPipe models: every DEQUANTIZE of a float16 constant
// in them, gathered into one model whose outputs are all folded constants on our side.
TEST_F(QuantizeConformance, DequantizeFloat16WeightsOfRealModels) {
  EDGEOPT_REQUIRE_SHARED_MODELS();
  for (const char* file : {"blazeface_short_range_fp16.tflite", "selfie_segmentation_fp16.tflite"}) {
    const std::string path = SharedModel(file);
    if (path.empty()) continue;
    auto model = ReadModelFile(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const Subgraph& sg = model->main();
    GraphBuilder b;
    int count = 0;
    for (const Operator& op : sg.ops) {
      if (op.code != tflite::BuiltinOperator_DEQUANTIZE || op.inputs.empty()) continue;
      const Tensor& in = sg.tensors[op.inputs[0]];
      if (in.type != DType::kFloat16 || !model->IsConstant(in)) continue;
      const auto bytes = model->TensorData(in);
      const auto w = b.ConstBytes(in.name, DType::kFloat16, in.shape, std::vector<uint8_t>(bytes.begin(), bytes.end()));
      const auto out = b.Tensor(sg.tensors[op.outputs[0]].name, DType::kFloat32, in.shape);
      b.Op(tflite::BuiltinOperator_DEQUANTIZE, {w}, {out});
      b.Output(out);
      ++count;
    }
    ASSERT_GT(count, 0) << file << " has no float16 DEQUANTIZE";
    EXPECT_EQ(CheckCase29(std::string(file) + ": " + std::to_string(count) + " float16 DEQUANTIZE ops", b.Finish(), Exact()), "");
  }
}

TEST_F(QuantizeConformance, DequantizePerChannelWeights) {
  const std::vector<int32_t> shape = {4, 3, 5};
  std::mt19937_64 rng(4400);
  const auto bytes = RandomBytesOfType(rng, DType::kInt8, 60, -128, 127);
  for (int axis : {0}) {
    std::vector<float> scales;
    std::vector<int64_t> zps;
    for (int c = 0; c < shape[axis]; ++c) {
      scales.push_back(0.01f * static_cast<float>(c + 1));
      zps.push_back(0);
    }
    const TensorSpec in{DType::kInt8, shape, QuantPerAxis(scales, axis, zps)};
    EXPECT_EQ(CheckCase29("DEQUANTIZE int8 per-channel axis " + std::to_string(axis),
                          OneOpGraph(tflite::BuiltinOperator_DEQUANTIZE, {in}, {Spec(DType::kFloat32, shape)}, {}, {bytes}), Exact()),
              "");
  }
}

TEST_F(QuantizeConformance, QuantizePerChannel) {
  const std::vector<int32_t> shape = {3, 4, 5};
  for (DType t : {DType::kInt8, DType::kUInt8, DType::kInt16}) {
    const int z = t == DType::kUInt8 ? 128 : 0;
    const TensorSpec out{t, shape, QuantPerAxis({0.02f, 0.05f, 0.11f}, 0, {z, t == DType::kInt16 ? 0 : 3 + z, z})};
    const TensorSpec in = Spec(DType::kFloat32, shape);
    std::mt19937_64 rng(4500);
    EXPECT_EQ(CheckCase29("QUANTIZE float32->" + std::string(DTypeName(t)) + " per-channel",
                          OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {in}, {out}), Exact(), {RandomValue(in, rng, -20, 20)}),
              "");
  }
}

TEST_F(QuantizeConformance, RequantizeInt32AndInt16ToInt32) {
  uint64_t seed = 4600;
  struct P {
    DType in, out;
    float in_scale, out_scale;
    int in_zp, out_zp;
  };
  const P params[] = {{DType::kInt32, DType::kInt8, 0.001f, 0.05f, 0, -3},
                      {DType::kInt32, DType::kInt16, 0.0001f, 0.001f, 7, 0},
                      {DType::kInt16, DType::kInt32, 0.001f, 0.0001f, 0, 0}};
  for (const P& p : params) {
    for (const auto& shape : kShapes) {
      const TensorSpec in = QSpec(p.in, shape, p.in_scale, p.in_zp), out = QSpec(p.out, shape, p.out_scale, p.out_zp);
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29("QUANTIZE " + std::string(DTypeName(p.in)) + "->" + std::string(DTypeName(p.out)) + " " + ShapeText(shape),
                            OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {in}, {out}), Exact(), {RandomValue(in, rng, -200000, 200000)}),
                "");
    }
  }
}

// The pairs TFLite 2.9's CAST accepts (float16, float64 and uint16 are edgeopt extensions).
const DType kCastTypes29[] = {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kUInt32,   DType::kInt16,
                              DType::kUInt8,   DType::kInt8,  DType::kBool,  DType::kComplex64};

TensorValue CastInput(DType t, int32_t n, std::mt19937_64& rng) {
  const TensorSpec s = Spec(t, {n});
  switch (t) {
    case DType::kFloat32: {
      // Fractions of both signs, values out of the narrower types' ranges, and values beyond
      // int32 (converted as the x86 build does: truncation, then the low bits).
      std::vector<float> v = {-0.5f, 0.5f, -1.5f, 2.75f, -2.75f, 127.9f, 128.f, -129.f, 255.5f, 256.f, 300.f, -300.f,
                              65535.f, 65536.7f, -32769.f, 1e6f, -1e6f, 2147483520.f, -2147483648.f};
      const auto more = RandomFloats(rng, static_cast<size_t>(n) - v.size(), -1000, 1000);
      v.insert(v.end(), more.begin(), more.end());
      return Value(s, v);
    }
    case DType::kComplex64: {
      TensorValue c = RandomValue(Spec(DType::kFloat32, {2 * n}), rng, -300, 300);
      c.type = t;
      c.shape = {n};
      return c;
    }
    case DType::kBool: return RandomValue(s, rng, 0, 1);
    default: return RandomValue(s, rng, -1e12, 1e12);  // the type's whole range
  }
}

TEST_F(QuantizeConformance, Cast) {
  constexpr int32_t kN = 64;
  uint64_t seed = 4700;
  for (DType from : kCastTypes29) {
    for (DType to : kCastTypes29) {
      const TensorSpec in = Spec(from, {kN}), out = Spec(to, {kN});
      std::mt19937_64 rng(++seed);
      EXPECT_EQ(CheckCase29("CAST " + std::string(DTypeName(from)) + "->" + std::string(DTypeName(to)),
                            OneOpGraph(tflite::BuiltinOperator_CAST, {in}, {out}), Exact(), {CastInput(from, kN, rng)}),
                "");
    }
  }
}

TEST_F(QuantizeConformance, Errors) {
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {Spec(DType::kFloat32, {4})}, {Spec(DType::kInt8, {4})});
    EXPECT_EQ(ExpectRejected("QUANTIZE without output quantization", g, "QUANTIZE: output"), "");
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {QSpec(DType::kUInt8, {4}, 0.1f, 0)}, {QSpec(DType::kInt16, {4}, 0.1f, 0)});
    EXPECT_EQ(ExpectRejected("QUANTIZE uint8->int16", g, "QUANTIZE: input uint8 with output int16 is not supported"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_DEQUANTIZE, {Spec(DType::kInt32, {4})}, {Spec(DType::kFloat32, {4})});
    EXPECT_EQ(ExpectRejected("DEQUANTIZE int32", g, "DEQUANTIZE: input type int32 is not supported"), "");
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_DEQUANTIZE, {QSpec(DType::kInt16, {4}, 0.1f, 3)}, {Spec(DType::kFloat32, {4})});
    EXPECT_EQ(ExpectRejected("DEQUANTIZE int16 zp", g, "DEQUANTIZE: int16 input must have zero point 0"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_CAST, {Spec(DType::kString, {4})}, {Spec(DType::kInt32, {4})});
    EXPECT_EQ(ExpectRejected("CAST string", g, "CAST: string to int32 is not supported"), "");
  }
  {
    const Graph g = OneOpGraph(tflite::BuiltinOperator_QUANTIZE, {QSpec(DType::kInt16, {4}, 0.1f, 3)}, {QSpec(DType::kInt16, {4}, 0.1f, 0)});
    EXPECT_EQ(ExpectRejected("QUANTIZE int16 zp", g, "QUANTIZE: int16 to int16 requantization needs zero points 0"), "");
    EXPECT_TRUE(Tflite29Rejects(g));
  }
}

}  // namespace
}  // namespace edgeopt
