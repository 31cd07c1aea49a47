#include "optimize/quantize/lstm_replay.h"

#include <algorithm>
#include <cmath>

#include "optimize/quantize/weights.h"

namespace edgeopt::optimize {
namespace {

// Input positions of UNIDIRECTIONAL_SEQUENCE_LSTM (as in TFLite's lstm_shared.h).
constexpr int kInput = 0;
constexpr int kInputWeights[4] = {1, 2, 3, 4};
constexpr int kRecurrentWeights[4] = {5, 6, 7, 8};
constexpr int kPeephole[4] = {9, 10, -1, 11};
constexpr int kBias[4] = {12, 13, 14, 15};
constexpr int kProjWeights = 16, kProjBias = 17;
constexpr int kLayerNorm[4] = {20, 21, 22, 23};

int32_t InputAt(const Operator& op, int k) { return k >= 0 && k < static_cast<int>(op.inputs.size()) ? op.inputs[k] : -1; }

float Activate(float x, int act) {
  switch (act) {
    case tflite::ActivationFunctionType_RELU: return std::max(0.0f, x);
    case tflite::ActivationFunctionType_RELU6: return std::clamp(x, 0.0f, 6.0f);
    case tflite::ActivationFunctionType_RELU_N1_TO_1: return std::clamp(x, -1.0f, 1.0f);
    case tflite::ActivationFunctionType_SIGN_BIT: return std::signbit(x) ? 1.0f : 0.0f;
    case tflite::ActivationFunctionType_TANH: return std::tanh(x);
    default: return x;
  }
}

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

bool CanReplayLstm(const Graph& g, const Subgraph& sg, const Operator& op, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (op.code != tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM) return fail("not a UNIDIRECTIONAL_SEQUENCE_LSTM");
  if (op.inputs.size() < 20) return fail("has " + std::to_string(op.inputs.size()) + " inputs (needs 20 or 24)");
  if (!op.options.AsUnidirectionalSequenceLSTMOptions()) return fail("has no LSTM options");
  auto is_float_const = [&](int32_t t) {
    return t >= 0 && sg.tensors[t].type == DType::kFloat32 && g.IsConstant(sg.tensors[t]);
  };
  for (int k = 1; k < static_cast<int>(op.inputs.size()); ++k) {
    const int32_t t = op.inputs[k];
    if (t < 0 || k == 18 || k == 19) continue;
    if (!is_float_const(t)) return fail("input " + std::to_string(k) + " ('" + sg.tensors[t].name + "') is not a float constant");
  }
  for (int k : {18, 19}) {
    const int32_t t = InputAt(op, k);
    if (t < 0 || !sg.tensors[t].is_variable || sg.tensors[t].type != DType::kFloat32)
      return fail("state input " + std::to_string(k) + " is not a float variable tensor");
  }
  for (int k : {2, 3, 4, 6, 7, 8, 13, 14, 15})
    if (InputAt(op, k) < 0) return fail("required input " + std::to_string(k) + " is missing");
  const Tensor& in = sg.tensors[op.inputs[kInput]];
  if (in.shape.size() != 3) return fail("input is not rank 3");
  return true;
}

Status ReplayLstm(const Graph& g, const Subgraph& sg, const Operator& op, const float* input,
                  const std::vector<int32_t>& shape, LstmStats* stats) {
  const auto* o = op.options.AsUnidirectionalSequenceLSTMOptions();
  const bool time_major = o->time_major;
  const int n_time = time_major ? shape[0] : shape[1];
  const int n_batch = time_major ? shape[1] : shape[0];
  const int n_input = shape[2];
  const Tensor& w_f = sg.tensors[op.inputs[kInputWeights[1]]];
  const int n_cell = w_f.shape[0];
  const Tensor& r_f = sg.tensors[op.inputs[kRecurrentWeights[1]]];
  const int n_output = r_f.shape.size() == 2 ? r_f.shape[1] : n_cell;
  const int act = o->fused_activation_function;
  const float cell_clip = o->cell_clip, proj_clip = o->proj_clip;

  auto load = [&](int k) -> std::vector<float> {
    const int32_t t = InputAt(op, k);
    return t >= 0 ? ConstantAsFloat(g, sg.tensors[t]) : std::vector<float>();
  };
  std::vector<float> wx[4], wh[4], peep[4], bias[4], ln[4];
  for (int gate = 0; gate < 4; ++gate) {
    wx[gate] = load(kInputWeights[gate]);
    wh[gate] = load(kRecurrentWeights[gate]);
    peep[gate] = load(kPeephole[gate]);
    bias[gate] = load(kBias[gate]);
    if (op.inputs.size() >= 24) ln[gate] = load(kLayerNorm[gate]);
  }
  const bool cifg = wx[0].empty();
  const bool layer_norm = !ln[1].empty();
  const std::vector<float> pw = load(kProjWeights), pb = load(kProjBias);
  const bool projection = !pw.empty();
  if (static_cast<int>(wx[1].size()) != n_cell * n_input || static_cast<int>(wh[1].size()) != n_cell * n_output ||
      (projection && static_cast<int>(pw.size()) != n_output * n_cell))
    return InvalidArgument("LSTM weights do not match input size " + std::to_string(n_input) + ", " +
                           std::to_string(n_cell) + " cells, output size " + std::to_string(n_output));

  std::vector<float> h(static_cast<size_t>(n_batch) * n_output, 0.0f), c(static_cast<size_t>(n_batch) * n_cell, 0.0f);
  std::vector<float> pre[4], gate_val[4];
  for (int k = 0; k < 4; ++k) {
    pre[k].assign(n_cell, 0.0f);
    gate_val[k].assign(n_cell, 0.0f);
  }
  std::vector<float> hidden(n_cell);
  for (int t = 0; t < n_time; ++t) {
    for (int b = 0; b < n_batch; ++b) {
      const float* x = input + (time_major ? (static_cast<int64_t>(t) * n_batch + b) : (static_cast<int64_t>(b) * n_time + t)) *
                                   n_input;
      float* hb = h.data() + static_cast<size_t>(b) * n_output;
      float* cb = c.data() + static_cast<size_t>(b) * n_cell;
      auto compute_pre = [&](int gate, const float* cell_for_peephole) {
        for (int r = 0; r < n_cell; ++r) {
          double s = 0;
          for (int i = 0; i < n_input; ++i) s += wx[gate][static_cast<size_t>(r) * n_input + i] * x[i];
          for (int i = 0; i < n_output; ++i) s += wh[gate][static_cast<size_t>(r) * n_output + i] * hb[i];
          if (!peep[gate].empty()) s += peep[gate][r] * cell_for_peephole[r];
          pre[gate][r] = static_cast<float>(s);
          stats->gate[gate].Add(pre[gate][r]);
        }
        if (layer_norm) {
          double mean = 0, var = 0;
          for (int r = 0; r < n_cell; ++r) mean += pre[gate][r];
          mean /= n_cell;
          for (int r = 0; r < n_cell; ++r) var += (pre[gate][r] - mean) * (pre[gate][r] - mean);
          var /= n_cell;
          const double inv = 1.0 / std::sqrt(var + 1e-8);
          for (int r = 0; r < n_cell; ++r) pre[gate][r] = static_cast<float>((pre[gate][r] - mean) * inv) * ln[gate][r];
        }
        for (int r = 0; r < n_cell; ++r) pre[gate][r] += bias[gate].empty() ? 0.0f : bias[gate][r];
      };
      if (!cifg) {
        compute_pre(0, cb);
        for (int r = 0; r < n_cell; ++r) gate_val[0][r] = Sigmoid(pre[0][r]);
      }
      compute_pre(1, cb);
      for (int r = 0; r < n_cell; ++r) gate_val[1][r] = Sigmoid(pre[1][r]);
      compute_pre(2, cb);
      for (int r = 0; r < n_cell; ++r) gate_val[2][r] = Activate(pre[2][r], act);
      for (int r = 0; r < n_cell; ++r) {
        const float i = cifg ? 1.0f - gate_val[1][r] : gate_val[0][r];
        float nc = gate_val[1][r] * cb[r] + i * gate_val[2][r];
        if (cell_clip > 0) nc = std::clamp(nc, -cell_clip, cell_clip);
        cb[r] = nc;
        stats->cell.Add(nc);
      }
      compute_pre(3, cb);
      for (int r = 0; r < n_cell; ++r) {
        gate_val[3][r] = Sigmoid(pre[3][r]);
        hidden[r] = gate_val[3][r] * Activate(cb[r], act);
        stats->hidden.Add(hidden[r]);
      }
      if (projection) {
        for (int r = 0; r < n_output; ++r) {
          double s = pb.empty() ? 0.0 : pb[r];
          for (int i = 0; i < n_cell; ++i) s += pw[static_cast<size_t>(r) * n_cell + i] * hidden[i];
          float v = static_cast<float>(s);
          if (proj_clip > 0) v = std::clamp(v, -proj_clip, proj_clip);
          hb[r] = v;
        }
      } else {
        std::copy(hidden.begin(), hidden.end(), hb);
      }
      for (int r = 0; r < n_output; ++r) stats->output.Add(hb[r]);
    }
  }
  return Status::Ok();
}

}  // namespace edgeopt::optimize
