// Float-domain preparations that make post-training quantization lose less (Nagel et al. 2019,
// "Data-Free Quantization through Weight Equalization and Bias Correction"; Krishnamoorthi 2018):
//
// - Cross-layer range equalization: for a producer -> consumer pair (CONV_2D or
//   DEPTHWISE_CONV_2D -> CONV_2D or FULLY_CONNECTED, the producer's output read by that op alone),
//   output channel i of the producer (weights and bias) is multiplied by s_i > 0 and input
//   channel i of the consumer's weights divided by s_i. Only producers with a fused RELU6 are
//   equalized (measured: it helps MobileNets and hurt RELU models, see equalize.cc); only channels
//   whose calibrated maximum stays well below 6 are scaled, and never beyond that headroom, so
//   the float function is unchanged on data like the calibration samples. s_i balances the channel's
//   calibrated activation range against the consumer's weight range for it (sqrt(r_w / r_a)), so
//   that a per-tensor activation scale no longer drowns the small channels in rounding noise.
// - Empirical bias correction: the mean output error that weight quantization introduces,
//   E[(W_q - W) x] per output channel over the calibration samples, is subtracted from the bias.
#pragma once

#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "optimize/quantize/quantize.h"

namespace edgeopt::optimize {

// Equalizes every eligible pair of the main subgraph of float graph `g` in place, with activation
// ranges measured on options.calibration. Returns the number of pairs changed.
Expected<int> EqualizeCrossLayer(Graph& g, const QuantizeOptions& options);

// Corrects the float biases of ops `ops` (indices into the main subgraph; CONV_2D,
// DEPTHWISE_CONV_2D, FULLY_CONNECTED with a float constant bias of their own) for the mean output
// error their weights' int8 rounding causes on the calibration samples, E[(W_q - W) x] per
// output channel (x the float inputs; W_q rounded as QuantizeFullInteger does: per-channel unless
// options.per_channel is false, FULLY_CONNECTED per-tensor). Returns the number of ops corrected.
// (Measuring E[W_q x_q] on quantized trials instead, one op at a time so that upstream shifts are
// not counted twice, gained 0.5 dB on MobileNet v1 0.25 for 5x the time: not done.)
Expected<int> CorrectBiasesForWeightQuantization(Graph& g, const QuantizeOptions& options, const std::vector<int>& ops);

}  // namespace edgeopt::optimize
