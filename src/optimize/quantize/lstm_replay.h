// Statistics of a float UNIDIRECTIONAL_SEQUENCE_LSTM's internal values, for full-integer
// quantization. The integer LSTM kernel (8x8->16) needs scales for values the float graph never
// exposes as tensors: the cell state at every step (int16, power-of-two scale), the hidden value
// o * act(c) before the projection (intermediate 4), and with layer norm each gate's
// pre-activation before normalization (intermediates 0..3). TFLite's calibrator records them
// with a logging LSTM kernel; here the op is replayed in float on the calibrated input sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"

namespace edgeopt::optimize {

struct ValueRange {
  float min = 0, max = 0;
  bool valid = false;
  void Add(float v) {
    if (!valid) {
      min = max = v;
      valid = true;
    } else {
      min = v < min ? v : min;
      max = v > max ? v : max;
    }
  }
  void Merge(const ValueRange& o) {
    if (!o.valid) return;
    Add(o.min);
    Add(o.max);
  }
};

struct LstmStats {
  ValueRange cell;     // cell state after each step (after clipping)
  ValueRange hidden;   // o * act(c), before projection
  ValueRange gate[4];  // pre-activations (sum of products, before layer norm): i, f, c, o
  ValueRange output;   // op output (equals hidden without projection)
};

// True if op `op` (UNIDIRECTIONAL_SEQUENCE_LSTM) has float constant weights and the inputs the
// replay understands; otherwise *why says what is missing.
bool CanReplayLstm(const Graph& g, const Subgraph& sg, const Operator& op, std::string* why);

// Replays the op on `input` (the op's float input values, shaped like its input tensor) from
// zero states, adding every value to `stats`.
Status ReplayLstm(const Graph& g, const Subgraph& sg, const Operator& op, const float* input,
                  const std::vector<int32_t>& input_shape, LstmStats* stats);

}  // namespace edgeopt::optimize
