#include "optimize/quantize/quantize.h"

#include <algorithm>
#include <map>
#include <set>

#include "optimize/quantize/full_integer.h"
#include "optimize/quantize/weights.h"
#include "optimize/sparse_encoding.h"

namespace edgeopt::optimize {

const char* QuantModeName(QuantMode m) {
  switch (m) {
    case QuantMode::kFloat16: return "float16";
    case QuantMode::kDynamic: return "dynamic";
    case QuantMode::kInt8: return "int8";
    case QuantMode::kInt16x8: return "int16x8";
  }
  return "?";
}

bool ParseQuantMode(const std::string& s, QuantMode* out) {
  if (s == "float16" || s == "fp16") *out = QuantMode::kFloat16;
  else if (s == "dynamic" || s == "dynamic-range" || s == "dynamic_range") *out = QuantMode::kDynamic;
  else if (s == "int8") *out = QuantMode::kInt8;
  else if (s == "int16x8" || s == "16x8") *out = QuantMode::kInt16x8;
  else return false;
  return true;
}

const char* CalibratorName(Calibrator c) {
  switch (c) {
    case Calibrator::kMinMax: return "minmax";
    case Calibrator::kPercentile: return "percentile";
    case Calibrator::kEntropy: return "entropy";
    case Calibrator::kMse: return "mse";
  }
  return "?";
}

bool ParseCalibrator(const std::string& s, Calibrator* out) {
  if (s == "minmax") *out = Calibrator::kMinMax;
  else if (s == "percentile") *out = Calibrator::kPercentile;
  else if (s == "entropy" || s == "kl") *out = Calibrator::kEntropy;
  else if (s == "mse") *out = Calibrator::kMse;
  else return false;
  return true;
}

bool ParseIoType(const std::string& s, IoType* out) {
  if (s == "float" || s == "float32") *out = IoType::kFloat;
  else if (s == "int8") *out = IoType::kInt8;
  else if (s == "uint8") *out = IoType::kUInt8;
  else return false;
  return true;
}

bool IsAlreadyQuantized(const Graph& g, std::string* why) {
  for (const auto& sg : g.subgraphs) {
    for (const auto& t : sg.tensors) {
      if (t.is_quantized() && (t.type == DType::kInt8 || t.type == DType::kUInt8 || t.type == DType::kInt16 ||
                               t.type == DType::kInt4)) {
        if (why) *why = "tensor '" + t.name + "' is already " + std::string(DTypeName(t.type)) + " quantized";
        return true;
      }
      if (t.type == DType::kFloat16 && g.IsConstant(t)) {
        if (why) *why = "tensor '" + t.name + "' already holds float16 weights";
        return true;
      }
    }
  }
  return false;
}

namespace {

// A float16 constant costs a tensor table, a buffer entry and a DEQUANTIZE op beyond its data
// (about 110 bytes in our files); it saves 2 bytes per element. Smaller constants stay float32.
constexpr int64_t kFloat16MinElements = 64;

// float16: every float32 constant becomes float16 + a DEQUANTIZE at the start of the graph.
Status QuantizeFloat16(Graph& g, QuantizeReport* r) {
  for (auto& sg : g.subgraphs) {
    std::vector<Operator> dequants;
    const size_t n = sg.tensors.size();
    for (size_t i = 0; i < n; ++i) {
      if (sg.tensors[i].type != DType::kFloat32 || !g.IsConstant(sg.tensors[i]) || sg.tensors[i].sparsity) continue;
      if (sg.FindConsumers(static_cast<int32_t>(i)).empty()) continue;
      if (sg.tensors[i].num_elements() < kFloat16MinElements) {
        ++r->weights_kept_float;
        continue;
      }
      std::vector<float> v = ConstantAsFloat(g, sg.tensors[i]);
      Tensor half = sg.tensors[i];
      // A short name: the float32 tensor it feeds keeps the (often long) original one.
      half.name = "fp16_" + std::to_string(i);
      half.type = DType::kFloat16;
      half.buffer = g.AddBuffer(Buffer::Owned(ToFloat16Bytes(v)));
      half.quant.reset();
      const int32_t hi = sg.AddTensor(std::move(half));
      Tensor& f = sg.tensors[i];  // re-take: AddTensor may reallocate
      f.buffer = 0;
      Operator dq;
      dq.code = tflite::BuiltinOperator_DEQUANTIZE;
      dq.version = 3;  // float16 input needs version 3
      dq.inputs = {hi};
      dq.outputs = {static_cast<int32_t>(i)};
      dequants.push_back(std::move(dq));
      ++r->weights_quantized;
    }
    sg.ops.insert(sg.ops.begin(), std::make_move_iterator(dequants.begin()), std::make_move_iterator(dequants.end()));
  }
  return Status::Ok();
}

struct HybridWeight {
  int input;
  bool per_channel;
  int axis;
};

// Which inputs of an op hold weights that hybrid (dynamic range) kernels take as int8.
std::vector<HybridWeight> HybridWeights(const Operator& op, bool per_channel) {
  switch (op.code) {
    case tflite::BuiltinOperator_CONV_2D: return {{1, per_channel, 0}};
    case tflite::BuiltinOperator_DEPTHWISE_CONV_2D: return {{1, per_channel, 3}};
    case tflite::BuiltinOperator_FULLY_CONNECTED: return {{1, false, 0}};
    case tflite::BuiltinOperator_BATCH_MATMUL: return {{1, false, 0}};
    case tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM: {
      std::vector<HybridWeight> w;
      for (int i : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16}) w.push_back({i, false, 0});
      return w;
    }
    default: return {};
  }
}

// CONV_2D and DEPTHWISE_CONV_2D have no such option: LiteRT's hybrid convolutions always
// quantize their input asymmetrically per batch row.
void SetAsymmetricInputs(Operator& op, bool on) {
  if (op.code == tflite::BuiltinOperator_FULLY_CONNECTED && !op.options.AsFullyConnectedOptions())
    op.options.Set(tflite::FullyConnectedOptionsT());
  if (auto* o = op.options.AsFullyConnectedOptions()) o->asymmetric_quantize_inputs = on;
  if (auto* o = op.options.AsBatchMatMulOptions()) o->asymmetric_quantize_inputs = on;
  if (auto* o = op.options.AsUnidirectionalSequenceLSTMOptions()) o->asymmetric_quantize_inputs = on;
}

Status QuantizeDynamic(Graph& g, const QuantizeOptions& opts, QuantizeReport* r) {
  for (auto& sg : g.subgraphs) {
    // A weight is quantized only if every consumer can take it as a hybrid int8 weight.
    std::map<int32_t, HybridWeight> candidates;
    std::set<int32_t> rejected;
    for (const auto& op : sg.ops) {
      const auto weights = HybridWeights(op, opts.per_channel);
      for (size_t k = 0; k < op.inputs.size(); ++k) {
        const int32_t t = op.inputs[k];
        if (t < 0 || !g.IsConstant(sg.tensors[t]) || sg.tensors[t].type != DType::kFloat32) continue;
        auto it = std::find_if(weights.begin(), weights.end(), [&](const HybridWeight& w) { return w.input == static_cast<int>(k); });
        if (it == weights.end()) {
          rejected.insert(t);
          continue;
        }
        auto prev = candidates.find(t);
        if (prev != candidates.end() && (prev->second.per_channel != it->per_channel || prev->second.axis != it->axis))
          rejected.insert(t);
        candidates[t] = *it;
      }
    }
    std::set<int32_t> quantized;
    for (const auto& [t, w] : candidates) {
      Tensor& tensor = sg.tensors[t];
      if (rejected.count(t) || tensor.num_elements() < opts.dynamic_min_elements || tensor.sparsity) {
        ++r->weights_kept_float;
        continue;
      }
      std::vector<float> v = ConstantAsFloat(g, tensor);
      const bool per_axis = w.per_channel && w.axis < static_cast<int>(tensor.shape.size()) && tensor.shape[w.axis] > 1;
      QuantizedWeights qw = QuantizeSymmetricInt8(v, tensor.shape, per_axis, w.axis);
      // TFLite 2.9's hybrid CONV_2D treats per-channel scales that are all equal as per-tensor
      // and then reads the legacy scale, which its loader sets to 0 for per-axis tensors: store
      // such weights per-tensor. (Hybrid DEPTHWISE_CONV_2D requires one scale per channel.)
      if (w.axis == 0 && qw.scales.size() > 1 &&
          std::all_of(qw.scales.begin(), qw.scales.end(), [&](float s) { return s == qw.scales[0]; }))
        qw.scales.erase(qw.scales.begin() + 1, qw.scales.end());  // (not resize: a GCC 12 false -Warray-bounds)
      SetInt8Weights(g, tensor, qw);
      quantized.insert(t);
      ++r->weights_quantized;
    }
    for (auto& op : sg.ops) {
      bool hybrid = false;
      for (int32_t t : op.inputs)
        if (t >= 0 && quantized.count(t)) hybrid = true;
      if (!hybrid) continue;
      SetAsymmetricInputs(op, opts.asymmetric_inputs);
      ++r->ops_quantized;
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<QuantizeReport> QuantizeModel(Graph& g, const QuantizeOptions& options) {
  std::string why;
  if (IsAlreadyQuantized(g, &why))
    return InvalidArgument("the model is already quantized (" + why +
                           "); run `edgeopt dequantize` first to get a float model, then quantize that");
  QuantizeReport r;
  r.mode = options.mode;
  r.constant_bytes_before = ConstantBytes(g);
  if (options.mode != QuantMode::kFloat16) {
    // Sparse weights (a pruned model) behind DENSIFY: the integer and hybrid kernels take dense
    // weights, and weights that are not constants would leave their ops in float, with a
    // QUANTIZE / DEQUANTIZE pair around each.
    ASSIGN_OR_RETURN(r.densified, FoldConstantDensify(g));
  }
  switch (options.mode) {
    case QuantMode::kFloat16:
      RETURN_IF_ERROR(QuantizeFloat16(g, &r));
      break;
    case QuantMode::kDynamic:
      RETURN_IF_ERROR(QuantizeDynamic(g, options, &r));
      break;
    case QuantMode::kInt8:
    case QuantMode::kInt16x8:
      RETURN_IF_ERROR(QuantizeFullInteger(g, options, &r));
      break;
  }
  g.DropUnused();
  r.constant_bytes_after = ConstantBytes(g);
  return r;
}

}  // namespace edgeopt::optimize
