#include "optimize/quantize/full_integer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "graph/passes.h"
#include "optimize/quantize/calibrate.h"
#include "optimize/quantize/equalize.h"
#include "optimize/quantize/weights.h"

namespace edgeopt::optimize {
namespace {

using Op = tflite::BuiltinOperator;

enum class OutRule { kOwn, kTie, kFixed };

struct Rule {
  bool int8 = false;
  bool int16 = false;
  OutRule out = OutRule::kOwn;
  std::vector<int> tied;  // inputs sharing parameters with the outputs (kTie); empty = all float inputs
  int weight = -1;        // int8 symmetric weight input
  int weight_axis = 0;
  bool per_channel = false;
  int bias = -1;          // bias input (int32; int64 in 16x8)
  int data = 0;           // the activation input whose scale the bias uses
  float fixed8 = 0;
  int zp8 = 0;
  float fixed16 = 0;
  int version8 = 1;
  int version16 = 1;
};

const std::map<Op, Rule>& Rules() {
  static const std::map<Op, Rule> rules = [] {
    std::map<Op, Rule> m;
    auto own = [](bool i16, int v8, int v16) {
      Rule r;
      r.int8 = true;
      r.int16 = i16;
      r.version8 = v8;
      r.version16 = v16;
      return r;
    };
    auto tie = [](std::vector<int> tied, bool i16, int v8 = 2, int v16 = 3) {
      Rule r;
      r.int8 = true;
      r.int16 = i16;
      r.out = OutRule::kTie;
      r.tied = std::move(tied);
      r.version8 = v8;
      r.version16 = v16;
      return r;
    };
    auto fixed = [](float s8, int zp8, float s16, int v8 = 2, int v16 = 3) {
      Rule r;
      r.int8 = true;
      r.int16 = s16 > 0;
      r.out = OutRule::kFixed;
      r.fixed8 = s8;
      r.zp8 = zp8;
      r.fixed16 = s16;
      r.version8 = v8;
      r.version16 = v16;
      return r;
    };
    Rule conv = own(true, 3, 4);
    conv.weight = 1;
    conv.weight_axis = 0;
    conv.per_channel = true;
    conv.bias = 2;
    m[Op::BuiltinOperator_CONV_2D] = conv;
    Rule dw = own(true, 3, 5);
    dw.weight = 1;
    dw.weight_axis = 3;
    dw.per_channel = true;
    dw.bias = 2;
    m[Op::BuiltinOperator_DEPTHWISE_CONV_2D] = dw;
    Rule fc = own(true, 4, 7);
    fc.weight = 1;
    fc.per_channel = false;  // TFLite 2.9 has no per-channel FULLY_CONNECTED
    fc.bias = 2;
    m[Op::BuiltinOperator_FULLY_CONNECTED] = fc;
    Rule tc = own(true, 3, 3);
    tc.weight = 1;
    tc.weight_axis = 0;
    tc.per_channel = true;
    tc.bias = 3;
    tc.data = 2;
    m[Op::BuiltinOperator_TRANSPOSE_CONV] = tc;
    m[Op::BuiltinOperator_ADD] = own(true, 2, 3);
    m[Op::BuiltinOperator_SUB] = own(true, 2, 3);
    m[Op::BuiltinOperator_MUL] = own(true, 2, 4);
    m[Op::BuiltinOperator_MEAN] = own(true, 2, 3);
    m[Op::BuiltinOperator_SUM] = own(true, 2, 3);
    m[Op::BuiltinOperator_RELU] = own(true, 2, 3);
    m[Op::BuiltinOperator_RELU6] = own(true, 2, 3);
    m[Op::BuiltinOperator_RELU_N1_TO_1] = own(false, 2, 2);
    m[Op::BuiltinOperator_LEAKY_RELU] = own(true, 2, 2);
    m[Op::BuiltinOperator_HARD_SWISH] = own(false, 1, 1);
    m[Op::BuiltinOperator_PRELU] = own(false, 1, 1);
    m[Op::BuiltinOperator_ARG_MAX] = own(false, 2, 2);
    m[Op::BuiltinOperator_ARG_MIN] = own(false, 2, 2);
    m[Op::BuiltinOperator_AVERAGE_POOL_2D] = tie({0}, true);
    m[Op::BuiltinOperator_MAX_POOL_2D] = tie({0}, true);
    m[Op::BuiltinOperator_RESHAPE] = tie({0}, true, 1, 1);
    m[Op::BuiltinOperator_SQUEEZE] = tie({0}, true, 1, 1);
    m[Op::BuiltinOperator_EXPAND_DIMS] = tie({0}, true, 1, 1);
    m[Op::BuiltinOperator_TRANSPOSE] = tie({0}, true);
    m[Op::BuiltinOperator_SLICE] = tie({0}, true);
    m[Op::BuiltinOperator_STRIDED_SLICE] = tie({0}, true);
    m[Op::BuiltinOperator_PAD] = tie({0}, true);
    m[Op::BuiltinOperator_PADV2] = tie({0, 2}, true);
    m[Op::BuiltinOperator_GATHER] = tie({0}, true);
    m[Op::BuiltinOperator_RESIZE_BILINEAR] = tie({0}, true);
    m[Op::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR] = tie({0}, true);
    m[Op::BuiltinOperator_DEPTH_TO_SPACE] = tie({0}, false);
    m[Op::BuiltinOperator_SPACE_TO_DEPTH] = tie({0}, false);
    m[Op::BuiltinOperator_CONCATENATION] = tie({}, true);
    m[Op::BuiltinOperator_PACK] = tie({}, true);
    m[Op::BuiltinOperator_UNPACK] = tie({0}, true);
    m[Op::BuiltinOperator_SPLIT] = tie({1}, true);
    m[Op::BuiltinOperator_SPLIT_V] = tie({0}, true);
    m[Op::BuiltinOperator_MAXIMUM] = tie({}, true);
    m[Op::BuiltinOperator_MINIMUM] = tie({}, true);
    m[Op::BuiltinOperator_SOFTMAX] = fixed(1.0f / 256, -128, 1.0f / 32768);
    m[Op::BuiltinOperator_LOGISTIC] = fixed(1.0f / 256, -128, 1.0f / 32768);
    m[Op::BuiltinOperator_TANH] = fixed(1.0f / 128, 0, 1.0f / 32768);
    m[Op::BuiltinOperator_LOG_SOFTMAX] = fixed(16.0f / 256, 127, 0);
    m[Op::BuiltinOperator_L2_NORMALIZATION] = fixed(1.0f / 128, 0, 0);
    // Transformer blocks: attention matmuls, GELU and LayerNorm spelled out. BATCH_MATMUL stays
    // float in 16x8: int16 x int16 products summed in int64 have no fast exact kernel (the
    // reference loops run ~50x slower than the float GEMM).
    m[Op::BuiltinOperator_BATCH_MATMUL] = own(false, 2, 3);
    m[Op::BuiltinOperator_GELU] = own(false, 2, 2);
    m[Op::BuiltinOperator_SQUARED_DIFFERENCE] = own(false, 2, 2);
    m[Op::BuiltinOperator_RSQRT] = own(false, 2, 2);
    return m;
  }();
  return rules;
}

// Union-find over tensor indices for parameter sharing.
struct Groups {
  std::vector<int32_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t Find(int32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Unite(int32_t a, int32_t b) { parent[Find(a)] = Find(b); }
};

struct Params {
  float scale = 0;
  int64_t zero_point = 0;
};

Params ParamsForRange(float lo, float hi, bool int16) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  Params p;
  if (int16) {
    const float amax = std::max(std::fabs(lo), std::fabs(hi));
    p.scale = amax > 0 ? amax / 32767.0f : 1.0f / 32768;
    p.zero_point = 0;
    return p;
  }
  if (hi - lo < 1e-8f) hi = lo + 1e-8f;
  p.scale = (hi - lo) / 255.0f;
  const double zp = -128.0 - lo / p.scale;
  p.zero_point = std::clamp<int64_t>(std::llround(zp), -128, 127);
  return p;
}

QuantParams ToQuant(const Params& p) {
  QuantParams q;
  q.scale = {p.scale};
  q.zero_point = {p.zero_point};
  return q;
}

std::vector<uint8_t> QuantizeValues(const std::vector<float>& v, const Params& p, bool int16) {
  std::vector<uint8_t> out(v.size() * (int16 ? 2 : 1));
  for (size_t i = 0; i < v.size(); ++i) {
    const double q = std::round(v[i] / p.scale) + static_cast<double>(p.zero_point);
    if (int16) {
      const int16_t x = static_cast<int16_t>(std::clamp(q, -32768.0, 32767.0));
      std::memcpy(out.data() + 2 * i, &x, 2);
    } else {
      out[i] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q, -128.0, 127.0)));
    }
  }
  return out;
}

std::string OpLabel(const Subgraph& sg, int i) {
  return "op " + std::to_string(i) + " (" + sg.ops[i].type_name() + ")";
}

bool IsActivation(const Graph& g, const Tensor& t) { return t.type == DType::kFloat32 && !g.IsConstant(t); }

// ---------------------------------------------------------------------------------------------
// Full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's 8x8->16 scheme, as its converter emits it):
// int8 asymmetric input/output/output state, int8 symmetric per-tensor weights, int16 symmetric
// peephole weights, int16 cell state with a power-of-two scale, int32 biases at
// input_scale x weight_scale, and five intermediates: gate pre-activations (float placeholders
// without layer norm: the kernel uses 2^-12) and the hidden value o * act(c) (int8).

constexpr int kLstmOutputState = 18, kLstmCellState = 19;

bool LstmIsIntegerQuantizable(const Graph& g, const Subgraph& sg, const Operator& op, std::string* why) {
  if (!CanReplayLstm(g, sg, op, why)) return false;
  if (op.inputs.size() >= 24)
    for (int k = 20; k < 24; ++k)
      if (op.inputs[k] >= 0) {
        *why = "layer-norm LSTM is not quantized to integer yet (kept float)";
        return false;
      }
  if (sg.tensors[op.inputs[0]].type != DType::kFloat32) {
    *why = "input is not float32";
    return false;
  }
  return true;
}

// Power-of-two int16 scale covering [-range, range] (TFLite's GetPowerOfTwoScale), limited to
// the 2^-15..2^-9 the integer kernel supports.
float PowerOfTwoCellScale(const ValueRange& r) {
  const double range = std::max(std::fabs(r.min), std::fabs(r.max));
  int pot = 0;
  while (pot < 6 && std::ldexp(1.0, pot) < range) ++pot;
  return static_cast<float>(std::ldexp(1.0, pot - 15));
}

void QuantizeLstmOp(Graph& g, Subgraph& sg, Operator& op, const LstmStats& stats, const Params& input,
                    const Params& output) {
  auto quantize_weight = [&](int k) -> float {
    if (k >= static_cast<int>(op.inputs.size()) || op.inputs[k] < 0) return 0.0f;
    Tensor c = sg.tensors[op.inputs[k]];
    auto qw = QuantizeSymmetricInt8(ConstantAsFloat(g, c), c.shape, false, 0);
    c.name += "_int8";
    const int32_t idx = sg.AddTensor(std::move(c));
    SetInt8Weights(g, sg.tensors[idx], qw);
    op.inputs[k] = idx;
    return qw.scales[0];
  };
  auto quantize_int16_symmetric = [&](int k) {
    if (k >= static_cast<int>(op.inputs.size()) || op.inputs[k] < 0) return;
    Tensor c = sg.tensors[op.inputs[k]];
    const std::vector<float> v = ConstantAsFloat(g, c);
    float amax = 0;
    for (float x : v) amax = std::max(amax, std::fabs(x));
    const Params p{amax > 0 ? amax / 32767.0f : 1.0f, 0};
    c.name += "_int16";
    c.type = DType::kInt16;
    c.quant = ToQuant(p);
    c.buffer = g.AddBuffer(Buffer::Owned(QuantizeValues(v, p, true)));
    op.inputs[k] = sg.AddTensor(std::move(c));
  };
  auto quantize_bias = [&](int k, float scale) {
    if (k >= static_cast<int>(op.inputs.size()) || op.inputs[k] < 0) return;
    Tensor c = sg.tensors[op.inputs[k]];
    c.name += "_int32";
    const int32_t idx = sg.AddTensor(std::move(c));
    SetQuantizedBias(g, sg.tensors[idx], scale, {1.0f}, false);
    op.inputs[k] = idx;
  };
  float w_scale[4];
  for (int gate = 0; gate < 4; ++gate) {
    w_scale[gate] = quantize_weight(1 + gate);  // input-to-gate weights
    quantize_weight(5 + gate);                  // recurrent weights
  }
  for (int k : {9, 10, 11}) quantize_int16_symmetric(k);
  for (int gate = 0; gate < 4; ++gate) quantize_bias(12 + gate, input.scale * w_scale[gate]);
  const bool projection = op.inputs[16] >= 0;
  Params hidden = output;
  if (projection) {
    hidden = ParamsForRange(stats.hidden.min, stats.hidden.max, false);
    const float proj_scale = quantize_weight(16);
    quantize_bias(17, hidden.scale * proj_scale);
  }
  // States: variables, converted in place (the output state shares the output's parameters).
  Tensor& h = sg.tensors[op.inputs[kLstmOutputState]];
  h.type = DType::kInt8;
  h.quant = ToQuant(output);
  Tensor& c = sg.tensors[op.inputs[kLstmCellState]];
  c.type = DType::kInt16;
  c.quant = ToQuant({PowerOfTwoCellScale(stats.cell), 0});
  // Intermediates: gate pre-activations (unused without layer norm), then the hidden value.
  const std::string base = sg.tensors[op.outputs[0]].name;
  op.intermediates.clear();
  for (const char* gate : {"input", "forget", "cell", "output"}) {
    Tensor t;
    t.name = base + "/input_to_" + std::string(gate) + "_intermediate";
    t.type = DType::kFloat32;
    t.shape = {0};
    op.intermediates.push_back(sg.AddTensor(std::move(t)));
  }
  Tensor eh;
  eh.name = base + "/effective_hidden_scale_intermediate";
  eh.type = DType::kInt8;
  eh.shape = {0};
  eh.quant = ToQuant(hidden);
  op.intermediates.push_back(sg.AddTensor(std::move(eh)));
}

}  // namespace

bool CanQuantizeOp(tflite::BuiltinOperator code, QuantMode mode) {
  auto it = Rules().find(code);
  if (it == Rules().end()) return false;
  return mode == QuantMode::kInt16x8 ? it->second.int16 : it->second.int8;
}

Status QuantizeFullInteger(Graph& g, const QuantizeOptions& options, QuantizeReport* report) {
  const bool int16 = options.mode == QuantMode::kInt16x8;
  // Outlier samples are left out for int8 only. With 65536 levels a range even 35x too wide still
  // leaves typical inputs fine steps, while ranges from fewer samples clip more held-out values
  // (BlazeFace 16x8 classificators: 24.5 dB keeping its two flat calibration images, 15.2 without).
  QuantizeOptions o = options;
  if (int16) o.outlier_factor = 0;
  const DType act_type = int16 ? DType::kInt16 : DType::kInt8;
  // Equalization and bias correction measure the float model on the calibration samples too: the
  // outlier samples that the ranges leave out (see Calibrate) are left out there as well, found by
  // a min/max pass first.
  QuantizeOptions typical = o;
  if ((o.equalize || o.bias_correction) && o.outlier_factor > 0 && o.calibration.size() >= kMinSamplesForOutliers) {
    QuantizeOptions first = o;
    first.calibrator = Calibrator::kMinMax;
    ASSIGN_OR_RETURN(CalibrationResult pre, Calibrate(g, first));
    std::vector<char> drop(o.calibration.size(), 0);
    for (size_t s : pre.outlier_samples) drop[s] = 1;
    typical.calibration.clear();
    for (size_t s = 0; s < o.calibration.size(); ++s)
      if (!drop[s]) typical.calibration.push_back(o.calibration[s]);
  }
  if (o.equalize && !typical.calibration.empty()) {
    ASSIGN_OR_RETURN(report->equalized_pairs, EqualizeCrossLayer(g, typical));
  }
  Subgraph& sg = g.main();
  ASSIGN_OR_RETURN(CalibrationResult cal, Calibrate(g, o));
  std::map<int32_t, Range>& ranges = cal.ranges;
  report->calibration_samples = static_cast<int>(o.calibration.size());
  for (size_t s : cal.outlier_samples) report->outlier_samples.emplace_back(s, cal.sample_inflation[s]);

  std::regex skip_re;
  const bool has_skip_re = !o.skip_tensor_regex.empty();
  if (has_skip_re) {
    try {
      skip_re = std::regex(o.skip_tensor_regex);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--skip-tensor: invalid regular expression '" + o.skip_tensor_regex + "': " + e.what());
    }
  }

  // 1. Which ops become integer.
  const size_t num_ops = sg.ops.size();
  std::vector<char> q(num_ops, 0);
  std::vector<std::string> why_float(num_ops);
  for (size_t i = 0; i < num_ops; ++i) {
    const Operator& op = sg.ops[i];
    auto it = Rules().find(op.code);
    const std::string name = op.type_name();
    if (op.code == Op::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM) {
      std::string why;
      if (std::find(o.skip_ops.begin(), o.skip_ops.end(), name) != o.skip_ops.end()) {
        why_float[i] = "skipped (--skip-op)";
      } else if (has_skip_re && std::regex_search(sg.tensors[op.outputs[0]].name, skip_re)) {
        why_float[i] = "skipped (--skip-tensor)";
      } else if (int16) {
        why_float[i] = "no 16x8 kernel in LiteRT";
      } else if (!LstmIsIntegerQuantizable(g, sg, op, &why)) {
        why_float[i] = why;
      } else if (!cal.lstm.count(static_cast<int>(i)) || !cal.lstm[static_cast<int>(i)].cell.valid ||
                 !ranges[op.inputs[0]].valid || !ranges[op.outputs[0]].valid) {
        why_float[i] = "no calibration range (tensor never computed)";
      } else {
        q[i] = 1;
      }
      continue;
    }
    if (op.is_custom() || it == Rules().end() || !(int16 ? it->second.int16 : it->second.int8)) {
      why_float[i] = "no " + std::string(int16 ? "16x8" : "int8") + " kernel in LiteRT";
      continue;
    }
    if (std::find(o.skip_ops.begin(), o.skip_ops.end(), name) != o.skip_ops.end()) {
      why_float[i] = "skipped (--skip-op)";
      continue;
    }
    bool skip = false, has_float = false, unknown = false;
    for (int32_t t : op.outputs) {
      if (has_skip_re && std::regex_search(sg.tensors[t].name, skip_re)) skip = true;
      if (sg.tensors[t].type == DType::kFloat32) has_float = true;
    }
    for (int32_t t : op.inputs) {
      if (t < 0) continue;
      const Tensor& tt = sg.tensors[t];
      if (tt.type == DType::kFloat32) has_float = true;
      if (IsActivation(g, tt) && (!ranges.count(t) || !ranges[t].valid)) unknown = true;
    }
    for (int32_t t : op.outputs)
      if (IsActivation(g, sg.tensors[t]) && (!ranges.count(t) || !ranges[t].valid)) unknown = true;
    const Rule& rule = it->second;
    const bool weight_ok = rule.weight < 0 || (rule.weight < static_cast<int>(op.inputs.size()) && op.inputs[rule.weight] >= 0 &&
                                               g.IsConstant(sg.tensors[op.inputs[rule.weight]]) &&
                                               sg.tensors[op.inputs[rule.weight]].type == DType::kFloat32);
    if (skip) {
      why_float[i] = "skipped (--skip-tensor)";
    } else if (!weight_ok) {
      why_float[i] = "weights are not a float constant";
    } else if (!has_float) {
      why_float[i] = "";  // no float tensors: nothing to quantize, nothing to report
    } else if (unknown) {
      why_float[i] = "no calibration range (tensor never computed)";
    } else {
      q[i] = 1;
    }
  }
  std::vector<std::string> float_ops;
  for (size_t i = 0; i < num_ops; ++i)
    if (!q[i] && !why_float[i].empty()) float_ops.push_back(OpLabel(sg, static_cast<int>(i)) + ": " + why_float[i]);
  if (o.integer_only && !float_ops.empty()) {
    std::string list;
    for (const auto& f : float_ops) list += "\n  " + f;
    return Unsupported("--integer-only: " + std::to_string(float_ops.size()) + " op(s) cannot be quantized:" + list);
  }
  report->float_ops = float_ops;
  if (o.bias_correction) {
    std::vector<int> integer_ops;
    for (size_t i = 0; i < num_ops; ++i)
      if (q[i]) integer_ops.push_back(static_cast<int>(i));
    ASSIGN_OR_RETURN(report->bias_corrected_ops, CorrectBiasesForWeightQuantization(g, typical, integer_ops));
  }

  // 2. Parameter sharing groups and fixed parameters.
  Groups groups(sg.tensors.size());
  std::map<int32_t, Params> fixed;  // tensor -> fixed params
  for (size_t i = 0; i < num_ops; ++i) {
    if (!q[i]) continue;
    const Operator& op = sg.ops[i];
    if (op.code == Op::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM) {
      // The output state is the previous step's output: the same parameters (TFLite's
      // restrict_scale {18, 0}).
      groups.Unite(op.inputs[kLstmOutputState], op.outputs[0]);
      continue;
    }
    const Rule& rule = Rules().at(op.code);
    if (rule.out == OutRule::kTie) {
      std::vector<int32_t> members;
      if (rule.tied.empty()) {
        for (int32_t t : op.inputs)
          if (t >= 0 && sg.tensors[t].type == DType::kFloat32) members.push_back(t);
      } else {
        for (int k : rule.tied)
          if (k < static_cast<int>(op.inputs.size()) && op.inputs[k] >= 0) members.push_back(op.inputs[k]);
      }
      for (int32_t t : op.outputs)
        if (sg.tensors[t].type == DType::kFloat32) members.push_back(t);
      for (size_t k = 1; k < members.size(); ++k) groups.Unite(members[k], members[0]);
    } else if (rule.out == OutRule::kFixed) {
      const Params p = int16 ? Params{rule.fixed16, 0} : Params{rule.fixed8, rule.zp8};
      for (int32_t t : op.outputs) fixed[t] = p;
    }
  }
  // A RELU / RELU6 / RELU_N1_TO_1 that alone reads the output of an op with its own output
  // parameters (a conv, FC, ADD, ...): that output takes the activation's parameters, as
  // TFLite's converter gives them once it has folded the activation into the op. Its values
  // outside the activation's range are clamped by the op's own requantization, exactly as the
  // activation would, and no resolution is spent on them; the activation then only copies
  // (edgeopt runs it inside the op: kernels/fused).
  std::set<int32_t> range_from_activation;
  for (size_t i = 0; i < num_ops; ++i) {
    const Operator& op = sg.ops[i];
    if (!q[i] || op.inputs.empty() || op.outputs.size() != 1 ||
        (op.code != Op::BuiltinOperator_RELU && op.code != Op::BuiltinOperator_RELU6 &&
         op.code != Op::BuiltinOperator_RELU_N1_TO_1))
      continue;
    const int32_t t = op.inputs[0];
    if (t < 0 || std::find(sg.outputs.begin(), sg.outputs.end(), t) != sg.outputs.end()) continue;
    const std::vector<int> readers = sg.FindConsumers(t);
    if (readers.size() != 1) continue;
    for (size_t p = 0; p < num_ops; ++p) {
      const Operator& prod = sg.ops[p];
      if (!q[p] || std::find(prod.outputs.begin(), prod.outputs.end(), t) == prod.outputs.end()) continue;
      const auto rule = Rules().find(prod.code);
      if (rule != Rules().end() && rule->second.out == OutRule::kOwn && prod.outputs.size() == 1) {
        groups.Unite(t, op.outputs[0]);
        range_from_activation.insert(t);
      }
      break;
    }
  }
  // Group ranges: union of members' calibrated (or constant data) ranges.
  std::map<int32_t, Range> group_range;
  auto extend = [&](int32_t t, float lo, float hi) {
    Range& r = group_range[groups.Find(t)];
    if (!r.valid) {
      r = {lo, hi, true};
    } else {
      r.min = std::min(r.min, lo);
      r.max = std::max(r.max, hi);
    }
  };
  for (size_t t = 0; t < sg.tensors.size(); ++t) {
    const Tensor& tt = sg.tensors[t];
    if (tt.type != DType::kFloat32 || range_from_activation.count(static_cast<int32_t>(t))) continue;
    if (g.IsConstant(tt)) {
      auto v = ConstantAsFloat(g, tt);
      if (v.empty()) continue;
      auto [mn, mx] = std::minmax_element(v.begin(), v.end());
      extend(static_cast<int32_t>(t), *mn, *mx);
    } else if (ranges.count(static_cast<int32_t>(t)) && ranges[static_cast<int32_t>(t)].valid) {
      extend(static_cast<int32_t>(t), ranges[static_cast<int32_t>(t)].min, ranges[static_cast<int32_t>(t)].max);
    }
  }
  std::map<int32_t, Params> group_params;
  for (const auto& [t, p] : fixed) group_params[groups.Find(t)] = p;
  auto params_of = [&](int32_t t) -> Params {
    const int32_t root = groups.Find(t);
    auto it = group_params.find(root);
    if (it != group_params.end()) return it->second;
    const Range& r = group_range[root];
    Params p = ParamsForRange(r.valid ? r.min : 0.0f, r.valid ? r.max : 1.0f, int16);
    group_params[root] = p;
    return p;
  };

  // 3. Rewrite. Quantized twins of float tensors are created on demand and shared.
  std::map<int32_t, int32_t> int_twin;    // float tensor -> its integer version
  std::map<int32_t, int32_t> float_twin;  // integer-domain tensor -> float version for float readers
  std::vector<char> produced_by_q(sg.tensors.size(), 0);
  for (size_t i = 0; i < num_ops; ++i)
    if (q[i])
      for (int32_t t : sg.ops[i].outputs) produced_by_q[t] = 1;
  const std::vector<int32_t> model_inputs = sg.inputs;
  std::vector<Operator> new_ops;
  auto make_conversion = [&](tflite::BuiltinOperator code, int32_t in, int32_t out) {
    Operator c;
    c.code = code;
    c.version = code == tflite::BuiltinOperator_QUANTIZE ? (int16 ? 3 : 2) : (int16 ? 4 : 2);
    c.inputs = {in};
    c.outputs = {out};
    report->conversion_ops.push_back(std::string(code == tflite::BuiltinOperator_QUANTIZE ? "QUANTIZE" : "DEQUANTIZE") +
                                     " " + sg.tensors[in].name + " -> " + sg.tensors[out].name);
    return c;
  };
  auto add_conversion = [&](tflite::BuiltinOperator code, int32_t in, int32_t out) {
    new_ops.push_back(make_conversion(code, in, out));
  };
  std::set<int32_t> int_inputs;  // model inputs that became integer (int8/uint8 I/O)
  auto make_int_twin = [&](int32_t t) -> int32_t {
    auto it = int_twin.find(t);
    if (it != int_twin.end()) return it->second;
    Tensor tw = sg.tensors[t];
    tw.name = sg.tensors[t].name + (int16 ? "_int16" : "_int8");
    tw.type = act_type;
    tw.quant = ToQuant(params_of(t));
    tw.buffer = 0;
    const int32_t idx = sg.AddTensor(std::move(tw));
    int_twin[t] = idx;
    return idx;
  };

  // Model inputs.
  const bool int_io = o.io != IoType::kFloat;
  for (int32_t t : model_inputs) {
    if (!IsActivation(g, sg.tensors[t])) continue;
    bool any_q_reader = false;
    for (int c : sg.FindConsumers(t)) any_q_reader |= q[c] != 0;
    if (!any_q_reader && !int_io) continue;
    const Params p = params_of(t);
    if (!int_io) {
      add_conversion(tflite::BuiltinOperator_QUANTIZE, t, make_int_twin(t));
      continue;
    }
    // Integer I/O: the input itself becomes integer; float readers get a DEQUANTIZE.
    if (o.io == IoType::kUInt8 && !int16) {
      // uint8 input (zero point + 128) converted to int8 inside the model, as LiteRT does.
      Tensor& in = sg.tensors[t];
      in.type = DType::kUInt8;
      in.quant = ToQuant({p.scale, p.zero_point + 128});
      const int32_t tw = make_int_twin(t);
      add_conversion(tflite::BuiltinOperator_QUANTIZE, t, tw);
    } else {
      Tensor& in = sg.tensors[t];
      in.type = act_type;
      in.quant = ToQuant(p);
      int_twin[t] = t;
    }
    int_inputs.insert(t);
  }

  for (size_t i = 0; i < num_ops; ++i) {
    Operator op = sg.ops[i];
    if (!q[i]) {
      // Float op: integer-domain inputs are read through a DEQUANTIZE'd float twin.
      for (auto& t : op.inputs) {
        if (t < 0) continue;
        const bool int_domain = produced_by_q[t] || int_inputs.count(t);
        if (!int_domain) continue;
        auto it = float_twin.find(t);
        if (it == float_twin.end()) {
          Tensor f = sg.tensors[t];
          f.name = sg.tensors[t].name + "_float";
          f.type = DType::kFloat32;
          f.quant.reset();
          f.buffer = 0;
          const int32_t fi = sg.AddTensor(std::move(f));
          // The integer tensor already exists in the graph (its type is fixed up below).
          add_conversion(tflite::BuiltinOperator_DEQUANTIZE, t, fi);
          it = float_twin.emplace(t, fi).first;
        }
        t = it->second;
      }
      new_ops.push_back(std::move(op));
      continue;
    }
    if (op.code == Op::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM) {
      int32_t& x = op.inputs[0];
      if (!produced_by_q[x]) {
        if (int_twin.count(x)) {
          x = int_twin[x];
        } else {
          const int32_t tw = make_int_twin(x);
          add_conversion(tflite::BuiltinOperator_QUANTIZE, x, tw);
          x = tw;
        }
      }
      QuantizeLstmOp(g, sg, op, cal.lstm[static_cast<int>(i)], params_of(sg.ops[i].inputs[0]), params_of(op.outputs[0]));
      for (int32_t t : op.outputs) {
        Tensor& tt = sg.tensors[t];
        tt.quant = ToQuant(params_of(t));
        tt.type = act_type;
      }
      new_ops.push_back(std::move(op));
      ++report->ops_quantized;
      continue;
    }
    const Rule& rule = Rules().at(op.code);
    // Activation inputs: integer twins (or the tensor itself when produced by an integer op).
    std::vector<int32_t> original_inputs = op.inputs;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      int32_t& t = op.inputs[k];
      if (t < 0) continue;
      if (int_inputs.count(t) && int_twin.count(t)) {
        t = int_twin[t];  // an integer model input (a uint8 one is read through its int8 QUANTIZE)
        continue;
      }
      if (sg.tensors[t].type != DType::kFloat32) continue;
      if (g.IsConstant(sg.tensors[t])) continue;  // constants below
      if (produced_by_q[t]) continue;             // converted in place below
      if (int_twin.count(t)) {
        t = int_twin[t];
        continue;
      }
      // Produced by a float op (or a float model input): QUANTIZE it once, right here.
      const int32_t tw = make_int_twin(t);
      add_conversion(tflite::BuiltinOperator_QUANTIZE, t, tw);
      t = tw;
    }
    // Constants: weights, bias, others.
    const int data_in = rule.data < static_cast<int>(op.inputs.size()) ? op.inputs[rule.data] : -1;
    std::vector<float> weight_scales;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const int32_t t = original_inputs[k];
      if (t < 0 || !g.IsConstant(sg.tensors[t]) || sg.tensors[t].type != DType::kFloat32) continue;
      if (static_cast<int>(k) == rule.bias) continue;
      Tensor c = sg.tensors[t];
      auto values = ConstantAsFloat(g, c);
      if (static_cast<int>(k) == rule.weight) {
        const bool per_axis = rule.per_channel && o.per_channel && rule.weight_axis < static_cast<int>(c.shape.size());
        // Weight scales large enough that the int32 (int64 in 16x8: no limit needed) bias fits.
        std::vector<float> min_scales;
        if (!int16 && rule.bias >= 0 && rule.bias < static_cast<int>(original_inputs.size()) &&
            original_inputs[rule.bias] >= 0 && data_in >= 0) {
          const Tensor& b = sg.tensors[original_inputs[rule.bias]];
          if (g.IsConstant(b) && b.type == DType::kFloat32) {
            const std::vector<float> bv = ConstantAsFloat(g, b);
            const int64_t channels = per_axis ? c.shape[rule.weight_axis] : 1;
            if (!per_axis || static_cast<int64_t>(bv.size()) == channels)
              min_scales = MinWeightScalesForBias(bv, params_of(original_inputs[rule.data]).scale, per_axis);
          }
        }
        auto qw = QuantizeSymmetricInt8(values, c.shape, per_axis, rule.weight_axis, min_scales);
        weight_scales = qw.scales;
        c.name += "_int8";
        const int32_t idx = sg.AddTensor(std::move(c));
        SetInt8Weights(g, sg.tensors[idx], qw);
        op.inputs[k] = idx;
      } else {
        const Params p = params_of(t);
        c.name += int16 ? "_int16" : "_int8";
        c.type = act_type;
        c.quant = ToQuant(p);
        c.buffer = g.AddBuffer(Buffer::Owned(QuantizeValues(values, p, int16)));
        op.inputs[k] = sg.AddTensor(std::move(c));
      }
    }
    if (rule.bias >= 0 && rule.bias < static_cast<int>(op.inputs.size()) && original_inputs[rule.bias] >= 0) {
      const int32_t t = original_inputs[rule.bias];
      if (g.IsConstant(sg.tensors[t]) && sg.tensors[t].type == DType::kFloat32 && !weight_scales.empty() && data_in >= 0) {
        Tensor c = sg.tensors[t];
        c.name += "_quantized";
        const int32_t idx = sg.AddTensor(std::move(c));
        const int32_t data_orig = original_inputs[rule.data];
        SetQuantizedBias(g, sg.tensors[idx], params_of(data_orig).scale, weight_scales, int16);
        op.inputs[rule.bias] = idx;
      }
    }
    // Outputs become integer in place.
    for (int32_t t : op.outputs) {
      Tensor& tt = sg.tensors[t];
      if (tt.type != DType::kFloat32) continue;
      tt.quant = ToQuant(params_of(t));
      tt.type = act_type;
    }
    if (int16) {
      // Calibrated int16 scales are not powers of two: the general 16-bit ADD/SUB path.
      if (auto* a = op.options.AsAddOptions()) a->pot_scale_int16 = false;
      if (auto* a = op.options.AsSubOptions()) a->pot_scale_int16 = false;
    }
    op.version = std::max(op.version, int16 ? rule.version16 : rule.version8);
    new_ops.push_back(std::move(op));
    ++report->ops_quantized;
  }
  sg.ops = std::move(new_ops);

  // Model outputs produced in the integer domain: a conversion op makes the model output
  // (which keeps the original name) from the integer tensor.
  for (size_t k = 0; k < sg.outputs.size(); ++k) {
    const int32_t t = sg.outputs[k];
    if (sg.tensors[t].type != act_type || !produced_by_q[t]) continue;
    if (o.io == IoType::kInt8 || (o.io == IoType::kUInt8 && int16)) continue;
    Tensor out = sg.tensors[t];
    out.buffer = 0;
    tflite::BuiltinOperator code;
    if (o.io == IoType::kFloat) {
      out.type = DType::kFloat32;
      out.quant.reset();
      code = tflite::BuiltinOperator_DEQUANTIZE;
    } else {
      const Params p = params_of(t);
      out.type = DType::kUInt8;
      out.quant = ToQuant({p.scale, p.zero_point + 128});
      code = tflite::BuiltinOperator_QUANTIZE;
    }
    const std::string name = sg.tensors[t].name;
    sg.tensors[t].name = name + (int16 ? "_int16" : "_int8");
    out.name = name;
    const int32_t oi = sg.AddTensor(std::move(out));
    sg.ops.push_back(make_conversion(code, t, oi));
    sg.outputs[k] = oi;
    for (auto& sig : g.signatures)
      if (sig.subgraph_index == 0)
        for (auto& m : sig.outputs)
          if (static_cast<int32_t>(m.tensor_index) == t) m.tensor_index = static_cast<uint32_t>(oi);
  }
  for (const auto& [t, r] : ranges) {
    if (!r.valid) continue;
    const Params p = params_of(t);
    report->ranges.push_back({sg.tensors[t].name, r.min, r.max, p.scale, p.zero_point});
  }
  return Status::Ok();
}

}  // namespace edgeopt::optimize
