// Realistic models built in code with GraphBuilder, for tests, examples, fuzz seeds and
// benchmarks. Weights are seeded (same options, same bytes), so results are reproducible.
//
//   Graph g = MobileNetV2Like({.input_size = 96, .width_multiplier = 0.35f});
//   auto bytes = SerializeModel(g);  // loads and runs in TFLite 2.9 and LiteRT
//
// The weights are random (He-initialized), not trained: outputs are meaningless as predictions
// but the topology, shapes, types, quantization layout and cost are those of the real network.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace edgeopt {

struct ZooOptions {
  uint64_t seed = 1;
  int input_size = 224;            // square input, height = width (MobileNetV2: 224; tiny nets: 16)
  float width_multiplier = 1.0f;   // MobileNetV2 alpha: channel counts scaled, rounded to multiples of 8
  int num_classes = 1001;          // MobileNetV2 (1001: background + ImageNet); tiny nets use 10
  int batch = 1;
  bool pool_with_mean = false;     // MEAN over H,W instead of AVERAGE_POOL_2D + RESHAPE
  // Int8 models only: int8 input and output tensors instead of float ones wrapped in
  // QUANTIZE (at the input) and DEQUANTIZE (at the output).
  bool int8_io = false;
};

// MobileNetV2 (Sandler et al. 2018; TFLite's mobilenet_v2_1.0_224): CONV 3x3/2 32, 17
// inverted-residual blocks (expand 1x1 + depthwise 3x3 + project 1x1, residual ADD when
// stride 1 and channels match; the first block has no expansion), CONV 1x1 1280, global average
// pool, FULLY_CONNECTED to num_classes, SOFTMAX. RELU6 fused into conv/depthwise; float32.
// Input [batch, s, s, 3] in [-1, 1]; output [batch, num_classes] probabilities.
Graph MobileNetV2Like(const ZooOptions& options = {});

// The same network fully int8-quantized as the TFLite converter does it: int8 symmetric
// per-channel weights (scale = max|w| / 127 per output channel), int32 biases with scale =
// input_scale x weight_scale, int8 asymmetric activations (RELU6 outputs [0, 6] with zero point
// -128, linear outputs symmetric), softmax output scale 1/256 zero point -128. QUANTIZE/DEQUANTIZE
// at the ends unless int8_io.
Graph MobileNetV2LikeInt8(const ZooOptions& options = {});

// A small CNN (for examples and tests): input [batch, s, s, 3] float (s = input_size; 16 by
// default, any size >= 2), CONV 3x3 RELU, DEPTHWISE 3x3/2 RELU6, CONV 1x1, residual ADD,
// AVERAGE_POOL_2D (or MEAN), RESHAPE, FULLY_CONNECTED to num_classes, SOFTMAX.
Graph TinyCnn(const ZooOptions& options = {.input_size = 16, .num_classes = 10});

// A small MLP: input [batch, input_size] float, FC 32 RELU, FC 32 + TANH, FC num_classes,
// SOFTMAX.
Graph TinyMlp(const ZooOptions& options = {.input_size = 16, .num_classes = 10});

}  // namespace edgeopt
