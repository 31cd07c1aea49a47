// Shared pieces of the neural-network kernel conformance tests (conv, depthwise, transpose
// conv, fully connected, batch matmul, pooling): realistic random quantization parameters, biases
// quantized at input_scale x weight_scale, and checks that run one generated case against the
// reference runtime or expect a clean error.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "support/conformance.h"

namespace edgeopt::testing {

// Random quantization of activations for `type`: int8 scale ~0.01-0.03 with a small zero point,
// uint8 around zero point 128, int16 symmetric (zero point 0) with scale ~1e-4.
QuantParams RandomActivationQuant(std::mt19937_64& rng, DType type);

// Random weight scales ~0.003-0.008: one per channel (per_channel) or one in total.
std::vector<float> RandomWeightScales(std::mt19937_64& rng, int channels, bool per_channel);

// Weight quantization for `type`: int8 symmetric (zero points 0) along `axis`; uint8 per tensor
// with a zero point near 128.
QuantParams WeightQuant(std::mt19937_64& rng, DType type, const std::vector<float>& scales, int axis);

// Output scale such that a sum of `terms` products of a uniformly spread quantized input
// (scale in_scale) and weights (scale w_scale, |q| <= 127) fills the output type's range
// without clipping much.
float OutputScaleFor(DType out_type, int64_t terms, float in_scale, float w_scale);

// int32 or int64 bias tensor of `n` values whose real value is ~U(-range, range), quantized with
// scale in_scale * w_scale[c] (the LiteRT convention).
int32_t QuantizedBias(GraphBuilder& b, const std::string& name, DType type, int n, float in_scale,
                      const std::vector<float>& w_scales, float real_range, std::mt19937_64& rng);

// Runs `g` on edgeopt and TFLite 2.9 and checks the outputs (integers bit-exact unless
// opts.max_lsb says otherwise). On failure prints `what` (the case parameters) and the report.
// Returns whether the case passed.
bool ExpectMatches(const Graph& g, const std::string& what, CompareOptions opts = {});

// Runs `ours` on edgeopt and `reference` (an equivalent graph TFLite 2.9 can run: a grouped
// convolution as a block-diagonal one, a missing bias as a zero bias, ...) on TFLite 2.9 with the
// same seeded inputs, and checks the outputs like ExpectMatches.
bool ExpectMatchesTwin(const Graph& ours, const Graph& reference, const std::string& what, CompareOptions opts = {});

// Expects edgeopt to refuse `g` with a non-OK status (at interpreter creation or allocation)
// whose message contains `needle`; never a crash. Returns whether it did.
bool ExpectRejected(const Graph& g, const std::string& needle, const std::string& what);

// Options for integer outputs compared bit-exactly and float outputs within rtol 1e-5.
CompareOptions ExactOptions();

}  // namespace edgeopt::testing
