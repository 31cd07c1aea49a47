// edgeopt_make_example: writes a small seeded float32 CNN (an image classifier shape: 32x32 RGB
// in, 10 softmax scores out) for the quickstart and docs, so a fresh checkout has a model to try
// without downloading anything. Same seed, same bytes.
//
//   edgeopt_make_example build/examples/tiny_cnn.tflite [--seed N]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "format/writer.h"
#include "graph/builder.h"

namespace edgeopt {
namespace {

Graph MakeTinyCnn(uint64_t seed) {
  GraphBuilder b(seed);
  b.SetDescription("edgeopt example: tiny_cnn (seeded random weights, float32)");
  b.current().name = "main";
  const auto x = b.Input("image", DType::kFloat32, {1, 32, 32, 3});

  // 3x3 stride-2 convolution, 8 channels, ReLU6.
  const auto w1 = b.ConstRandom("conv1/weights", DType::kFloat32, {8, 3, 3, 3}, -0.5, 0.5);
  const auto b1 = b.ConstRandom("conv1/bias", DType::kFloat32, {8}, -0.1, 0.1);
  const auto y1 = b.Tensor("conv1/relu6", DType::kFloat32, {1, 16, 16, 8});
  tflite::Conv2DOptionsT c1;
  c1.padding = tflite::Padding_SAME;
  c1.stride_w = c1.stride_h = 2;
  c1.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_CONV_2D, {x, w1, b1}, {y1}, c1);

  // 3x3 depthwise convolution, ReLU6.
  const auto w2 = b.ConstRandom("dw2/weights", DType::kFloat32, {1, 3, 3, 8}, -0.5, 0.5);
  const auto b2 = b.ConstRandom("dw2/bias", DType::kFloat32, {8}, -0.1, 0.1);
  const auto y2 = b.Tensor("dw2/relu6", DType::kFloat32, {1, 16, 16, 8});
  tflite::DepthwiseConv2DOptionsT d2;
  d2.padding = tflite::Padding_SAME;
  d2.stride_w = d2.stride_h = 1;
  d2.depth_multiplier = 1;
  d2.fused_activation_function = tflite::ActivationFunctionType_RELU6;
  b.Op(tflite::BuiltinOperator_DEPTHWISE_CONV_2D, {y1, w2, b2}, {y2}, d2);

  // 1x1 convolution to 16 channels, ReLU.
  const auto w3 = b.ConstRandom("pw3/weights", DType::kFloat32, {16, 1, 1, 8}, -0.5, 0.5);
  const auto b3 = b.ConstRandom("pw3/bias", DType::kFloat32, {16}, -0.1, 0.1);
  const auto y3 = b.Tensor("pw3/relu", DType::kFloat32, {1, 16, 16, 16});
  tflite::Conv2DOptionsT c3;
  c3.padding = tflite::Padding_VALID;
  c3.stride_w = c3.stride_h = 1;
  c3.fused_activation_function = tflite::ActivationFunctionType_RELU;
  b.Op(tflite::BuiltinOperator_CONV_2D, {y2, w3, b3}, {y3}, c3);

  // Global average pool, flatten, classifier, softmax.
  const auto y4 = b.Tensor("pool", DType::kFloat32, {1, 1, 1, 16});
  tflite::Pool2DOptionsT p4;
  p4.padding = tflite::Padding_VALID;
  p4.stride_w = p4.stride_h = 1;
  p4.filter_width = p4.filter_height = 16;
  b.Op(tflite::BuiltinOperator_AVERAGE_POOL_2D, {y3}, {y4}, p4);

  const auto shape = b.Const<int32_t>("flatten/shape", DType::kInt32, {2}, {1, 16});
  const auto y5 = b.Tensor("flatten", DType::kFloat32, {1, 16});
  tflite::ReshapeOptionsT r5;
  r5.new_shape = {1, 16};
  b.Op(tflite::BuiltinOperator_RESHAPE, {y4, shape}, {y5}, r5);

  const auto w6 = b.ConstRandom("fc/weights", DType::kFloat32, {10, 16}, -0.5, 0.5);
  const auto b6 = b.ConstRandom("fc/bias", DType::kFloat32, {10}, -0.1, 0.1);
  const auto y6 = b.Tensor("logits", DType::kFloat32, {1, 10});
  tflite::FullyConnectedOptionsT f6;
  b.Op(tflite::BuiltinOperator_FULLY_CONNECTED, {y5, w6, b6}, {y6}, f6);

  const auto y7 = b.Tensor("scores", DType::kFloat32, {1, 10});
  tflite::SoftmaxOptionsT s7;
  s7.beta = 1.0f;
  b.Op(tflite::BuiltinOperator_SOFTMAX, {y6}, {y7}, s7);
  b.Output(y7);

  b.AddSignature("serving_default");
  const std::string version = "1.14.0";
  b.AddMetadata("min_runtime_version", std::vector<uint8_t>(version.begin(), version.end()));
  return b.Finish();
}

}  // namespace
}  // namespace edgeopt

int main(int argc, char** argv) {
  std::string out;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: edgeopt_make_example OUT.tflite [--seed N]\n"
                  "Writes a small seeded float32 CNN (1x32x32x3 image -> 10 softmax scores).\n");
      return 0;
    } else if (out.empty() && !a.empty() && a[0] != '-') {
      out = a;
    } else {
      std::fprintf(stderr, "edgeopt_make_example: error: unexpected argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "usage: edgeopt_make_example OUT.tflite [--seed N]\n");
    return 2;
  }
  std::error_code ec;
  const auto dir = std::filesystem::path(out).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  edgeopt::Status st = edgeopt::WriteModelFile(edgeopt::MakeTinyCnn(seed), out);
  if (!st.ok()) {
    std::fprintf(stderr, "edgeopt_make_example: error: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
