// Shapes known only at run time, chained through several ops (the runtime's dynamic-output
// protocol: MarkOutputDynamic in Prepare, SetOutputShape in Invoke, consumers re-prepared),
// run-time index arguments, empty tensors, and behaviour beyond TFLite 2.9 (checked against
// hand-computed values).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "graph/builder.h"
#include "support/conformance.h"
#include "support/op_cases.h"

namespace edgeopt {
namespace {

using testing::CaseRng;
using testing::ExpectConforms;
using testing::MakeValue;
using testing::TypeLabel;

// WHERE -> GATHER_ND: the indices' count is only known after WHERE ran.
TEST(DynamicConformance, WhereThenGatherNd) {
  SKIP_WITHOUT_ORACLE();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GraphBuilder b;
    auto cond = b.Input("cond", DType::kBool, {3, 5});
    auto params = b.Input("params", DType::kFloat32, {3, 5});
    auto idx = b.Tensor("idx", DType::kInt64, {1, 2});
    auto y = b.Tensor("y", DType::kFloat32, {1});
    b.Op(tflite::BuiltinOperator_WHERE, {cond}, {idx}, tflite::WhereOptionsT{});
    b.Op(tflite::BuiltinOperator_GATHER_ND, {params, idx}, {y}, tflite::GatherNdOptionsT{});
    b.Output(y);
    b.Output(idx);
    auto o = testing::ExactOptions();
    o.seed = seed;
    ExpectConforms(b.Finish(), "WHERE -> GATHER_ND seed " + std::to_string(seed), o);
  }
}

// SHAPE -> STRIDED_SLICE -> RESHAPE: a shape computed from another tensor's shape.
TEST(DynamicConformance, ShapeSliceReshape) {
  SKIP_WITHOUT_ORACLE();
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 3, 4});
  auto v = b.Input("v", DType::kFloat32, {12});
  auto shape = b.Tensor("shape", DType::kInt32, {3});
  auto tail = b.Tensor("tail", DType::kInt32, {2});
  auto y = b.Tensor("y", DType::kFloat32, {3, 4});
  tflite::ShapeOptionsT so;
  so.out_type = tflite::TensorType_INT32;
  b.Op(tflite::BuiltinOperator_SHAPE, {x}, {shape}, so);
  auto begin = b.Const<int32_t>("begin", DType::kInt32, {1}, {1});
  auto end = b.Const<int32_t>("end", DType::kInt32, {1}, {0});
  auto strides = b.Const<int32_t>("strides", DType::kInt32, {1}, {1});
  tflite::StridedSliceOptionsT ss;
  ss.end_mask = 1;
  b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {shape, begin, end, strides}, {tail}, ss);
  b.Op(tflite::BuiltinOperator_RESHAPE, {v, tail}, {y}, tflite::ReshapeOptionsT{});
  b.Output(y);
  ExpectConforms(b.Finish(), "SHAPE -> STRIDED_SLICE -> RESHAPE");
}

// RANGE (run-time limit) -> TILE multiples and GATHER indices computed at run time.
TEST(DynamicConformance, RangeFeedsGatherAndTile) {
  SKIP_WITHOUT_ORACLE();
  for (int32_t limit : {1, 3, 4}) {
    GraphBuilder b;
    auto params = b.Input("params", DType::kInt8, {4, 3}, Quant(0.5f, -3));
    auto lim = b.Input("limit", DType::kInt32, {});
    auto start = b.Const<int32_t>("start", DType::kInt32, {}, {0});
    auto delta = b.Const<int32_t>("delta", DType::kInt32, {}, {1});
    auto r = b.Tensor("r", DType::kInt32, {1});
    b.Op(tflite::BuiltinOperator_RANGE, {start, lim, delta}, {r}, tflite::RangeOptionsT{});
    auto g = b.Tensor("g", DType::kInt8, {1, 3}, Quant(0.5f, -3));
    tflite::GatherOptionsT go;
    b.Op(tflite::BuiltinOperator_GATHER, {params, r}, {g}, go);
    auto mult = b.Const<int32_t>("mult", DType::kInt32, {2}, {2, 1});
    auto y = b.Tensor("y", DType::kInt8, {2, 3}, Quant(0.5f, -3));
    b.Op(tflite::BuiltinOperator_TILE, {g, mult}, {y}, tflite::TileOptionsT{});
    b.Output(y);
    Graph graph = b.Finish();
    auto inputs = testing::RandomInputs(graph, testing::ExactOptions());
    inputs[1] = MakeValue<int32_t>("limit", DType::kInt32, {}, {limit});
    ExpectConforms(graph, "RANGE -> GATHER -> TILE limit " + std::to_string(limit), testing::ExactOptions(), inputs);
  }
}

// Index arguments that are graph inputs: output shapes are set during invoke.
TEST(DynamicConformance, RuntimeIndexArguments) {
  SKIP_WITHOUT_ORACLE();
  {  // SPLIT with a run-time axis.
    GraphBuilder b;
    auto axis = b.Input("axis", DType::kInt32, {});
    auto x = b.Input("x", DType::kFloat32, {4, 6});
    auto y0 = b.Tensor("y0", DType::kFloat32, {1});
    auto y1 = b.Tensor("y1", DType::kFloat32, {1});
    tflite::SplitOptionsT o;
    o.num_splits = 2;
    b.Op(tflite::BuiltinOperator_SPLIT, {axis, x}, {y0, y1}, o);
    b.Output(y0);
    b.Output(y1);
    Graph g = b.Finish();
    for (int32_t a : {0, 1, -1}) {
      auto in = testing::RandomInputs(g, testing::ExactOptions());
      in[0] = MakeValue<int32_t>("axis", DType::kInt32, {}, {a});
      ExpectConforms(g, "SPLIT runtime axis " + std::to_string(a), testing::ExactOptions(), in);
    }
  }
  {  // SPLIT_V with run-time sizes.
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt32, {3, 7});
    auto sizes = b.Input("sizes", DType::kInt32, {3});
    auto axis = b.Const<int32_t>("axis", DType::kInt32, {}, {1});
    std::vector<int32_t> outs;
    for (const char* n : {"y0", "y1", "y2"}) outs.push_back(b.Tensor(n, DType::kInt32, {1}));
    tflite::SplitVOptionsT o;
    o.num_splits = 3;
    b.Op(tflite::BuiltinOperator_SPLIT_V, {x, sizes, axis}, outs, o);
    for (auto t : outs) b.Output(t);
    Graph g = b.Finish();
    for (auto sz : {std::vector<int32_t>{2, -1, 1}, std::vector<int32_t>{0, 7, 0}}) {
      auto in = testing::RandomInputs(g, testing::ExactOptions());
      in[1] = MakeValue<int32_t>("sizes", DType::kInt32, {3}, sz);
      ExpectConforms(g, "SPLIT_V runtime sizes", testing::ExactOptions(), in);
    }
  }
  {  // PAD, GATHER, ARG_MAX, RESIZE_NEAREST_NEIGHBOR with run-time arguments.
    GraphBuilder b;
    auto x = b.Input("x", DType::kUInt8, {2, 3}, Quant(0.1f, 120));
    auto pads = b.Input("pads", DType::kInt32, {2, 2});
    auto y = b.Tensor("y", DType::kUInt8, {1}, Quant(0.1f, 120));
    b.Op(tflite::BuiltinOperator_PAD, {x, pads}, {y}, tflite::PadOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, testing::ExactOptions());
    in[1] = MakeValue<int32_t>("pads", DType::kInt32, {2, 2}, {1, 0, 2, 3});
    ExpectConforms(g, "PAD runtime paddings", testing::ExactOptions(), in);
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {5, 4});
    auto idx = b.Input("idx", DType::kInt64, {2, 3});
    auto y = b.Tensor("y", DType::kFloat32, {5, 2, 3});
    tflite::GatherOptionsT o;
    o.axis = 1;
    b.Op(tflite::BuiltinOperator_GATHER, {x, idx}, {y}, o);
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, testing::ExactOptions());
    in[1] = MakeValue<int64_t>("idx", DType::kInt64, {2, 3}, {3, 0, 0, 2, 1, 3});
    ExpectConforms(g, "GATHER runtime int64 indices", testing::ExactOptions(), in);
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {3, 4, 5});
    auto axis = b.Input("axis", DType::kInt32, {1});
    auto y = b.Tensor("y", DType::kInt32, {1});
    tflite::ArgMaxOptionsT o;
    o.output_type = tflite::TensorType_INT32;
    b.Op(tflite::BuiltinOperator_ARG_MAX, {x, axis}, {y}, o);
    b.Output(y);
    Graph g = b.Finish();
    for (int32_t a : {0, 2, -2}) {
      auto in = testing::RandomInputs(g, testing::ExactOptions());
      in[1] = MakeValue<int32_t>("axis", DType::kInt32, {1}, {a});
      ExpectConforms(g, "ARG_MAX runtime axis " + std::to_string(a), testing::ExactOptions(), in);
    }
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {1, 3, 4, 2}, Quant(0.2f, 5));
    auto size = b.Input("size", DType::kInt32, {2});
    auto y = b.Tensor("y", DType::kInt8, {1}, Quant(0.2f, 5));
    b.Op(tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, {x, size}, {y}, tflite::ResizeNearestNeighborOptionsT{});
    b.Output(y);
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, testing::ExactOptions());
    in[1] = MakeValue<int32_t>("size", DType::kInt32, {2}, {7, 5});
    ExpectConforms(g, "RESIZE_NEAREST_NEIGHBOR runtime size", testing::ExactOptions(), in);
  }
}

// Tensors with a zero dimension.
TEST(DynamicConformance, EmptyTensors) {
  SKIP_WITHOUT_ORACLE();
  {
    GraphBuilder b;
    auto x0 = b.Input("x0", DType::kFloat32, {2, 0, 3});
    auto x1 = b.Input("x1", DType::kFloat32, {2, 2, 3});
    auto y = b.Tensor("y", DType::kFloat32, {2, 2, 3});
    tflite::ConcatenationOptionsT o;
    o.axis = 1;
    b.Op(tflite::BuiltinOperator_CONCATENATION, {x0, x1}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "CONCATENATION with an empty input");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt32, {3, 4});
    auto begin = b.Const<int32_t>("begin", DType::kInt32, {2}, {1, 2});
    auto size = b.Const<int32_t>("size", DType::kInt32, {2}, {0, 2});
    auto y = b.Tensor("y", DType::kInt32, {0, 2});
    b.Op(tflite::BuiltinOperator_SLICE, {x, begin, size}, {y}, tflite::SliceOptionsT{});
    b.Output(y);
    ExpectConforms(b.Finish(), "SLICE to an empty output");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {4, 3});
    auto idx = b.Const<int32_t>("idx", DType::kInt32, {0}, std::vector<int32_t>{});
    auto y = b.Tensor("y", DType::kFloat32, {0, 3});
    b.Op(tflite::BuiltinOperator_GATHER, {x, idx}, {y}, tflite::GatherOptionsT{});
    b.Output(y);
    ExpectConforms(b.Finish(), "GATHER with no indices");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 0});
    auto p = b.Const<int32_t>("pads", DType::kInt32, {2, 2}, {1, 1, 2, 0});
    auto y = b.Tensor("y", DType::kFloat32, {4, 2});
    b.Op(tflite::BuiltinOperator_PAD, {x, p}, {y}, tflite::PadOptionsT{});
    b.Output(y);
    ExpectConforms(b.Finish(), "PAD of an empty tensor");
  }
}

// Configurations from real models: an embedding lookup (GATHER of token ids, text models),
// DeepLab's channel concatenation, MoveNet's keypoint GATHER_ND.
TEST(DynamicConformance, RealModelPatterns) {
  SKIP_WITHOUT_ORACLE();
  std::mt19937_64 rng(77);
  {
    GraphBuilder b;
    auto table = b.ConstRandom("embedding", DType::kFloat32, {5000, 16});
    auto ids = b.Input("ids", DType::kInt32, {1, 256});
    auto y = b.Tensor("y", DType::kFloat32, {1, 256, 16});
    b.Op(tflite::BuiltinOperator_GATHER, {table, ids}, {y}, tflite::GatherOptionsT{});
    b.Output(y);
    std::vector<int32_t> tokens(256);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % 5000);
    ExpectConforms(b.Finish(), "GATHER embedding lookup", testing::ExactOptions(),
                   {MakeValue<int32_t>("ids", DType::kInt32, {1, 256}, tokens)});
  }
  {
    GraphBuilder b;
    auto a = b.Input("a", DType::kFloat32, {1, 33, 33, 256});
    auto c = b.Input("c", DType::kFloat32, {1, 33, 33, 48});
    auto y = b.Tensor("y", DType::kFloat32, {1, 33, 33, 304});
    tflite::ConcatenationOptionsT o;
    o.axis = 3;
    b.Op(tflite::BuiltinOperator_CONCATENATION, {a, c}, {y}, o);
    b.Output(y);
    ExpectConforms(b.Finish(), "CONCATENATION DeepLab decoder");
  }
  {
    GraphBuilder b;
    auto heat = b.Input("heat", DType::kFloat32, {1, 48, 48, 17});
    auto idx = b.Input("idx", DType::kInt32, {17, 3});
    auto y = b.Tensor("y", DType::kFloat32, {17, 17});
    b.Op(tflite::BuiltinOperator_GATHER_ND, {heat, idx}, {y}, tflite::GatherNdOptionsT{});
    b.Output(y);
    std::vector<int32_t> coords;
    for (int k = 0; k < 17; ++k) {
      coords.push_back(0);
      coords.push_back(static_cast<int32_t>(rng() % 48));
      coords.push_back(static_cast<int32_t>(rng() % 48));
    }
    Graph g = b.Finish();
    auto in = testing::RandomInputs(g, testing::ExactOptions());
    in[1] = MakeValue<int32_t>("idx", DType::kInt32, {17, 3}, coords);
    ExpectConforms(g, "GATHER_ND keypoint lookup", testing::ExactOptions(), in);
  }
}

// ------------------------------------------------------------------------------------------
// Behaviour beyond 2.9 (documented extensions), checked against values computed here.

TEST(TransformExtensions, ConcatenationRequantizesInt8AndInt16AndFusesActivation) {
  // 2.9 rejects int8 inputs whose parameters differ from the output's, copies int16 without
  // rescaling and rejects fused activations; edgeopt applies 2.9's uint8 formula to all three
  // types and clamps to the activation range afterwards.
  struct C {
    DType type;
    float s0, s1, so;
    int z0, z1, zo;
    int activation;
  };
  const C cases[] = {{DType::kInt8, 0.1f, 0.05f, 0.2f, 3, -7, 1, tflite::ActivationFunctionType_NONE},
                     {DType::kInt8, 0.1f, 0.3f, 0.1f, 0, 2, -4, tflite::ActivationFunctionType_RELU},
                     {DType::kInt16, 1e-3f, 4e-4f, 2e-3f, 0, 0, 0, tflite::ActivationFunctionType_RELU6},
                     {DType::kUInt8, 0.02f, 0.07f, 0.05f, 128, 100, 120, tflite::ActivationFunctionType_RELU_N1_TO_1}};
  for (const C& c : cases) {
    GraphBuilder b;
    auto x0 = b.Input("x0", c.type, {2, 3}, Quant(c.s0, c.z0));
    auto x1 = b.Input("x1", c.type, {2, 2}, Quant(c.s1, c.z1));
    auto y = b.Tensor("y", c.type, {2, 5}, Quant(c.so, c.zo));
    tflite::ConcatenationOptionsT o;
    o.axis = -1;
    o.fused_activation_function = static_cast<tflite::ActivationFunctionType>(c.activation);
    b.Op(tflite::BuiltinOperator_CONCATENATION, {x0, x1}, {y}, o);
    b.Output(y);
    Graph g = b.Finish();
    auto inputs = testing::RandomInputs(g, testing::ExactOptions());
    auto out = testing::RunOursValues(g, inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const int32_t qmin = c.type == DType::kInt8 ? -128 : c.type == DType::kUInt8 ? 0 : -32768;
    const int32_t qmax = c.type == DType::kInt8 ? 127 : c.type == DType::kUInt8 ? 255 : 32767;
    float lo = -1e30f, hi = 1e30f;
    if (c.activation == tflite::ActivationFunctionType_RELU) lo = 0;
    if (c.activation == tflite::ActivationFunctionType_RELU6) lo = 0, hi = 6;
    if (c.activation == tflite::ActivationFunctionType_RELU_N1_TO_1) lo = -1, hi = 1;
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 5; ++k) {
        const bool first = k < 3;
        const auto& in = inputs[first ? 0 : 1];
        const int64_t src = first ? r * 3 + k : r * 2 + (k - 3);
        const float s = first ? c.s0 : c.s1;
        const int z = first ? c.z0 : c.z1;
        const float scale = s * (1.0f / c.so);
        const float bias = -z * scale;
        int32_t expect = static_cast<int32_t>(std::round(static_cast<float>(in.At(src)) * scale + bias)) + c.zo;
        expect = std::min(std::max(expect, qmin), qmax);
        if (lo > -1e29f) expect = std::max(expect, std::max(qmin, c.zo + static_cast<int32_t>(std::round(lo / c.so))));
        if (hi < 1e29f) expect = std::min(expect, std::min(qmax, c.zo + static_cast<int32_t>(std::round(hi / c.so))));
        EXPECT_EQ(static_cast<int32_t>((*out)[0].At(r * 5 + k)), expect) << TypeLabel(c.type) << " row " << r << " col " << k;
      }
  }
}

TEST(TransformExtensions, ConcatenationFloatActivation) {
  GraphBuilder b;
  auto x0 = b.Input("x0", DType::kFloat32, {3});
  auto x1 = b.Input("x1", DType::kFloat32, {2});
  auto y = b.Tensor("y", DType::kFloat32, {5});
  tflite::ConcatenationOptionsT o;
  o.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_CONCATENATION, {x0, x1}, {y}, o);
  b.Output(y);
  auto out = testing::RunOursValues(b.Finish(), {MakeValue<float>("x0", DType::kFloat32, {3}, {-1.f, 2.5f, 7.f}),
                                                 MakeValue<float>("x1", DType::kFloat32, {2}, {6.f, -0.f})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ValuesOf<float>((*out)[0]), (std::vector<float>{0.f, 2.5f, 6.f, 6.f, 0.f}));
}

TEST(TransformExtensions, ReverseSeveralAxes) {
  // 2.9 reverses one axis; edgeopt accepts several (TensorFlow semantics).
  GraphBuilder b;
  auto x = b.Input("x", DType::kInt32, {2, 3, 4});
  auto a = b.Const<int32_t>("axis", DType::kInt32, {2}, {0, -1});
  auto y = b.Tensor("y", DType::kInt32, {2, 3, 4});
  b.Op(tflite::BuiltinOperator_REVERSE_V2, {x, a}, {y}, tflite::ReverseV2OptionsT{});
  b.Output(y);
  std::vector<int32_t> data(24);
  std::iota(data.begin(), data.end(), 0);
  auto out = testing::RunOursValues(b.Finish(), {MakeValue<int32_t>("x", DType::kInt32, {2, 3, 4}, data)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const auto got = ValuesOf<int32_t>((*out)[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(got[(i * 3 + j) * 4 + k], data[((1 - i) * 3 + j) * 4 + (3 - k)]);
}

TEST(TransformExtensions, WhereOnNumbers) {
  GraphBuilder b;
  auto x = b.Input("x", DType::kFloat32, {2, 3});
  auto y = b.Tensor("y", DType::kInt64, {1, 2});
  b.Op(tflite::BuiltinOperator_WHERE, {x}, {y}, tflite::WhereOptionsT{});
  b.Output(y);
  auto out = testing::RunOursValues(b.Finish(), {MakeValue<float>("x", DType::kFloat32, {2, 3}, {0, 1.5f, 0, -2, 0, 0})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(ValuesOf<int64_t>((*out)[0]), (std::vector<int64_t>{0, 1, 1, 0}));
}

// variant() names the implementation as `bench --profile` shows it (the reference kernels; the
// fast variants' names are checked by their own tests).
TEST(TransformKernels, VariantNames) {
  auto variant_of = [](Graph g) -> std::string {
    auto model = rt::Model::FromGraph(std::move(g));
    if (!model.ok()) return model.status().ToString();
    rt::InterpreterOptions reference;
    reference.reference_kernels_only = true;
    auto interp = rt::Interpreter::Create(*model, reference);
    if (!interp.ok()) return interp.status().ToString();
    Status st = (*interp)->AllocateTensors();
    if (!st.ok()) return st.ToString();
    return (*interp)->ops().at(0).variant;
  };
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt8, {1, 4, 4, 3}, Quant(0.1f, 2));
    auto ax = b.Const<int32_t>("axes", DType::kInt32, {2}, {1, 2});
    auto y = b.Tensor("y", DType::kInt8, {1, 1, 1, 3}, Quant(0.1f, 2));
    tflite::ReducerOptionsT o;
    o.keep_dims = true;
    b.Op(tflite::BuiltinOperator_MEAN, {x, ax}, {y}, o);
    b.Output(y);
    EXPECT_EQ(variant_of(b.Finish()), "mean/int8/ref");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {2, 3});
    auto p = b.Const<int32_t>("perm", DType::kInt32, {2}, {1, 0});
    auto y = b.Tensor("y", DType::kFloat32, {3, 2});
    b.Op(tflite::BuiltinOperator_TRANSPOSE, {x, p}, {y}, tflite::TransposeOptionsT{});
    b.Output(y);
    EXPECT_EQ(variant_of(b.Finish()), "transpose/any/ref");
  }
  {
    GraphBuilder b;
    auto x = b.Input("x", DType::kUInt8, {1, 2, 2, 1}, Quant(0.1f, 2));
    auto s = b.Const<int32_t>("size", DType::kInt32, {2}, {4, 4});
    auto y = b.Tensor("y", DType::kUInt8, {1, 4, 4, 1}, Quant(0.1f, 2));
    b.Op(tflite::BuiltinOperator_RESIZE_BILINEAR, {x, s}, {y}, tflite::ResizeBilinearOptionsT{});
    b.Output(y);
    EXPECT_EQ(variant_of(b.Finish()), "resize_bilinear/uint8/ref");
  }
}

// Hostile argument values give errors naming the op: no overflow, no out-of-bounds access.
TEST(TransformKernels, HostileArgumentsAreErrors) {
  constexpr int64_t kBig = std::numeric_limits<int64_t>::max();
  constexpr int64_t kSmall = std::numeric_limits<int64_t>::min();
  auto expect_error = [](Graph g, const std::string& op) {
    const Status st = testing::RunOurs(g);
    EXPECT_FALSE(st.ok()) << op;
    EXPECT_NE(st.message().find(op), std::string::npos) << st.ToString();
  };
  auto one_op = [](tflite::BuiltinOperator code, auto options, DType t, std::vector<int32_t> shape,
                   auto add_args) {
    GraphBuilder b;
    auto x = b.Input("x", t, shape);
    std::vector<int32_t> ins = {x};
    add_args(b, ins);
    auto y = b.Tensor("y", t, {1});
    b.Op(code, ins, {y}, options);
    b.Output(y);
    return b.Finish();
  };
  expect_error(one_op(tflite::BuiltinOperator_SLICE, tflite::SliceOptionsT{}, DType::kFloat32, {4},
                      [&](GraphBuilder& b, std::vector<int32_t>& in) {
                        in.push_back(b.Const<int64_t>("begin", DType::kInt64, {1}, {2}));
                        in.push_back(b.Const<int64_t>("size", DType::kInt64, {1}, {kBig}));
                      }),
               "SLICE");
  expect_error(one_op(tflite::BuiltinOperator_TILE, tflite::TileOptionsT{}, DType::kInt8, {2, 3},
                      [&](GraphBuilder& b, std::vector<int32_t>& in) {
                        in.push_back(b.Const<int64_t>("m", DType::kInt64, {2}, {kBig, 2}));
                      }),
               "TILE");
  expect_error(one_op(tflite::BuiltinOperator_TILE, tflite::TileOptionsT{}, DType::kInt8, {2, 3},
                      [&](GraphBuilder& b, std::vector<int32_t>& in) {
                        in.push_back(b.Const<int32_t>("m", DType::kInt32, {2}, {1 << 20, 1 << 20}));
                      }),
               "TILE");
  expect_error(one_op(tflite::BuiltinOperator_PAD, tflite::PadOptionsT{}, DType::kFloat32, {2},
                      [&](GraphBuilder& b, std::vector<int32_t>& in) {
                        in.push_back(b.Const<int64_t>("p", DType::kInt64, {1, 2}, {kBig, kBig}));
                      }),
               "PAD");
  expect_error(one_op(tflite::BuiltinOperator_BROADCAST_TO, tflite::BroadcastToOptionsT{}, DType::kFloat32, {1},
                      [&](GraphBuilder& b, std::vector<int32_t>& in) {
                        in.push_back(b.Const<int64_t>("s", DType::kInt64, {3}, {1 << 20, 1 << 20, -1}));
                      }),
               "BROADCAST_TO");
  {
    tflite::SplitVOptionsT o;
    o.num_splits = 2;
    GraphBuilder b;
    auto x = b.Input("x", DType::kFloat32, {4});
    auto s = b.Const<int64_t>("s", DType::kInt64, {2}, {kBig, kSmall + 5});
    auto a = b.Const<int32_t>("a", DType::kInt32, {}, {0});
    auto y0 = b.Tensor("y0", DType::kFloat32, {1});
    auto y1 = b.Tensor("y1", DType::kFloat32, {1});
    b.Op(tflite::BuiltinOperator_SPLIT_V, {x, s, a}, {y0, y1}, o);
    b.Output(y0);
    b.Output(y1);
    expect_error(b.Finish(), "SPLIT_V");
  }
  {
    GraphBuilder b;
    auto s = b.Const<int64_t>("start", DType::kInt64, {}, {kSmall});
    auto l = b.Const<int64_t>("limit", DType::kInt64, {}, {kBig});
    auto d = b.Input("delta", DType::kInt64, {});
    auto y = b.Tensor("y", DType::kInt64, {1});
    b.Op(tflite::BuiltinOperator_RANGE, {s, l, d}, {y}, tflite::RangeOptionsT{});
    b.Output(y);
    const Status st = testing::RunOurs(b.Finish(), {MakeValue<int64_t>("delta", DType::kInt64, {}, {1})});
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("RANGE"), std::string::npos) << st.ToString();
  }
  {  // Extreme STRIDED_SLICE values are clamped like any out-of-range index: a valid result.
    GraphBuilder b;
    auto x = b.Input("x", DType::kInt32, {5});
    auto bt = b.Const<int32_t>("b", DType::kInt32, {1}, {std::numeric_limits<int32_t>::min()});
    auto et = b.Const<int32_t>("e", DType::kInt32, {1}, {std::numeric_limits<int32_t>::max()});
    auto st = b.Const<int32_t>("s", DType::kInt32, {1}, {std::numeric_limits<int32_t>::min()});
    auto y = b.Tensor("y", DType::kInt32, {1});
    b.Op(tflite::BuiltinOperator_STRIDED_SLICE, {x, bt, et, st}, {y}, tflite::StridedSliceOptionsT{});
    b.Output(y);
    auto out = testing::RunOursValues(b.Finish());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].shape, (std::vector<int32_t>{0}));
  }
  {  // A zero scale cannot be requantized.
    GraphBuilder b;
    auto x0 = b.Input("x0", DType::kUInt8, {2}, Quant(0.5f, 3));
    auto x1 = b.Input("x1", DType::kUInt8, {2}, Quant(0.0f, 3));
    auto y = b.Tensor("y", DType::kUInt8, {4}, Quant(0.5f, 3));
    b.Op(tflite::BuiltinOperator_CONCATENATION, {x0, x1}, {y}, tflite::ConcatenationOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), "CONCATENATION");
  }
  {  // A sparse constant must go through DENSIFY.
    GraphBuilder b;
    auto w = b.Const<float>("w", DType::kFloat32, {4, 4}, {1, 2, 3});
    tflite::SparsityParametersT sp;
    b.current().tensors[w].sparsity = std::make_shared<tflite::SparsityParametersT>(sp);
    auto p = b.Const<int32_t>("perm", DType::kInt32, {2}, {1, 0});
    auto y = b.Tensor("y", DType::kFloat32, {4, 4});
    b.Op(tflite::BuiltinOperator_TRANSPOSE, {w, p}, {y}, tflite::TransposeOptionsT{});
    b.Output(y);
    expect_error(b.Finish(), "TRANSPOSE");
  }
}

}  // namespace
}  // namespace edgeopt
