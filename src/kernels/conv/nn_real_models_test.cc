// The neural-network kernels on the real models in ../shared/models, against TFLite 2.9:
//  - every CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, BATCH_MATMUL and pooling
//    op of every model, run alone with its real weights, quantization and options on random
//    inputs (Convolution2DTransposeBias against 2.9's TRANSPOSE_CONV with a bias);
//  - the longest leading part of each model that edgeopt can run today (all of it for the
//    FULLY_CONNECTED-only models; mobilenets up to their SOFTMAX), layer after layer.
// float16 weights behind DEQUANTIZE are folded to float32 constants first (what the
// interpreter's constant folding does), so the fp16 MediaPipe models take part.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "core/half.h"
#include "format/reader.h"
#include "graph/builder.h"
#include "runtime/registry.h"
#include "support/conformance.h"
#include "support/core/model_files.h"
#include "support/nn_test_util.h"

namespace edgeopt {
namespace {

// Replaces DEQUANTIZE ops of constant float16 tensors by float32 constants.
void FoldFloat16Dequantize(Graph& g) {
  Subgraph& sg = g.main();
  for (int i = static_cast<int>(sg.ops.size()) - 1; i >= 0; --i) {
    const Operator& op = sg.ops[i];
    if (op.code != tflite::BuiltinOperator_DEQUANTIZE || op.inputs.size() != 1 || op.outputs.size() != 1) continue;
    const Tensor& in = sg.tensors[op.inputs[0]];
    if (in.type != DType::kFloat16 || !g.IsConstant(in)) continue;
    auto half = g.buffers[in.buffer].as<uint16_t>();
    std::vector<float> f(half.size());
    for (size_t k = 0; k < half.size(); ++k) f[k] = HalfToFloat(half[k]);
    Tensor& out = sg.tensors[op.outputs[0]];
    out.buffer = g.AddBuffer(Buffer::FromValues<float>(f));
    sg.RemoveOp(i);
  }
}

bool IsNnOp(const Operator& op) {
  switch (op.code) {
    case tflite::BuiltinOperator_CONV_2D:
    case tflite::BuiltinOperator_DEPTHWISE_CONV_2D:
    case tflite::BuiltinOperator_TRANSPOSE_CONV:
    case tflite::BuiltinOperator_FULLY_CONNECTED:
    case tflite::BuiltinOperator_BATCH_MATMUL:
    case tflite::BuiltinOperator_AVERAGE_POOL_2D:
    case tflite::BuiltinOperator_MAX_POOL_2D:
    case tflite::BuiltinOperator_L2_POOL_2D: return true;
    case tflite::BuiltinOperator_CUSTOM: return op.custom_code == "Convolution2DTransposeBias";
    default: return false;
  }
}

// A graph running only op `index` of `g`: its non-constant inputs become graph inputs.
Graph SingleOp(const Graph& g, int index) {
  Graph s = g;
  Subgraph& sg = s.main();
  const Operator op = sg.ops[index];
  sg.ops = {op};
  sg.inputs.clear();
  for (int32_t t : op.inputs)
    if (t >= 0 && !s.IsConstant(sg.tensors[t])) sg.inputs.push_back(t);
  sg.outputs = op.outputs;
  s.signatures.clear();
  s.DropUnused();
  return s;
}

// Convolution2DTransposeBias as 2.9's TRANSPOSE_CONV with a bias (same geometry).
Graph AsBuiltinTransposeConv(const Graph& single) {
  Graph g = single;
  Subgraph& sg = g.main();
  Operator& op = sg.ops[0];
  int32_t params[3];
  std::memcpy(params, op.custom_options.data(), sizeof(params));
  const Tensor& out = sg.tensors[op.outputs[0]];
  Tensor shape;
  shape.name = "output_shape";
  shape.type = DType::kInt32;
  shape.shape = {4};
  shape.buffer = g.AddBuffer(Buffer::FromValues<int32_t>(out.shape));
  const int32_t shape_index = sg.AddTensor(shape);
  Operator tc;
  tc.code = tflite::BuiltinOperator_TRANSPOSE_CONV;
  tc.inputs = {shape_index, op.inputs[1], op.inputs[0], op.inputs[2]};
  tc.outputs = op.outputs;
  tflite::TransposeConvOptionsT o;
  o.padding = params[0] == 1 ? tflite::Padding_SAME : tflite::Padding_VALID;
  o.stride_w = params[1];
  o.stride_h = params[2];
  tc.options.Set(std::move(o));
  sg.ops[0] = std::move(tc);
  return g;
}

class NnRealModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::Tflite29Available()) GTEST_SKIP() << "TFLite 2.9 library absent (run scripts/setup.sh)";
    EDGEOPT_REQUIRE_SHARED_MODELS();
  }
};

TEST_F(NnRealModels, EveryLayerAlone) {
  int checked = 0;
  for (const std::string& path : testing::AllRealModels()) {
    auto g = ReadModelFile(path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    FoldFloat16Dequantize(*g);
    const int n = static_cast<int>(g->main().ops.size());
    for (int i = 0; i < n; ++i) {
      const Operator& op = g->main().ops[i];
      if (!IsNnOp(op)) continue;
      Graph single = SingleOp(*g, i);
      const std::string what = testing::Basename(path) + " op " + std::to_string(i) + " (" + op.type_name() + ")";
      testing::CompareOptions opts = testing::ExactOptions();
      opts.threads = 2;
      // Float layers: the reference's own kernels change with the host CPU (SSE/AVX2/AVX-512 paths
      // sum in different orders). With real folded-BN weights the pre-activation sums are far
      // larger than the (often RELU6-clamped) outputs, so order alone moves results by more than
      // 1e-5 of the output range; 1e-4 of it still catches any wrong tap, channel or padding.
      opts.rtol = 1e-4;
      if (op.is_custom())
        testing::ExpectMatchesTwin(single, AsBuiltinTransposeConv(single), what, opts);
      else
        testing::ExpectMatches(single, what, opts);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace edgeopt
