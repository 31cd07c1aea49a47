#include "optimize/quantize/dequantize.h"

#include <cmath>
#include <cstring>

#include "core/half.h"
#include "graph/passes.h"

namespace edgeopt::optimize {
namespace {

bool IsQuantizedType(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kInt4 || t == DType::kInt32 ||
         t == DType::kInt64;
}

double RawAt(DType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case DType::kInt8: return static_cast<int8_t>(p[i]);
    case DType::kUInt8: return p[i];
    case DType::kInt16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::kInt4: {
      const int nib = (p[i / 2] >> ((i % 2) * 4)) & 0xf;
      return nib >= 8 ? nib - 16 : nib;
    }
    default: return 0;
  }
}

// Real values of a quantized constant, honouring per-axis scales.
std::vector<float> DequantizeConstant(const Tensor& t, std::span<const uint8_t> bytes) {
  const QuantParams& q = *t.quant;
  const int64_t n = t.num_elements();
  std::vector<float> out(static_cast<size_t>(n));
  int64_t inner = 1, axis_size = 1;
  if (q.per_axis()) {
    axis_size = t.shape[q.quantized_dimension];
    for (size_t d = q.quantized_dimension + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    const size_t c = q.per_axis() ? static_cast<size_t>((i / inner) % axis_size) : 0;
    out[i] = static_cast<float>((RawAt(t.type, bytes.data(), i) - static_cast<double>(q.zp(c))) * q.sc(c));
  }
  return out;
}

// Integer kernels saturate to the output's representable range; old QAT models rely on that to
// implement RELU/RELU6 (activation NONE, output range [0, 6]). Make such clamps explicit so the
// float model computes the same function: on the ops whose float kernels take a fused
// activation in TFLite (CONCATENATION's, L2_NORMALIZATION's and others' refuse one other than
// NONE, so a model with it would not load there; their inputs come clamped from such ops).
void MakeRangeClampExplicit(Operator& op, const Subgraph& sg) {
  switch (op.code) {
    case tflite::BuiltinOperator_CONV_2D:
    case tflite::BuiltinOperator_DEPTHWISE_CONV_2D:
    case tflite::BuiltinOperator_FULLY_CONNECTED:
    case tflite::BuiltinOperator_ADD:
    case tflite::BuiltinOperator_SUB:
    case tflite::BuiltinOperator_MUL:
    case tflite::BuiltinOperator_DIV:
    case tflite::BuiltinOperator_AVERAGE_POOL_2D:
    case tflite::BuiltinOperator_MAX_POOL_2D: break;
    default: return;
  }
  tflite::ActivationFunctionType* act = FusedActivation(op);
  if (!act || *act != tflite::ActivationFunctionType_NONE || op.outputs.empty()) return;
  const Tensor& out = sg.tensors[op.outputs[0]];
  if (!out.is_quantized() || out.quant->per_axis()) return;
  double qmin, qmax;
  switch (out.type) {
    case DType::kUInt8: qmin = 0; qmax = 255; break;
    case DType::kInt8: qmin = -128; qmax = 127; break;
    case DType::kInt16: qmin = -32768; qmax = 32767; break;
    default: return;
  }
  const double s = out.quant->sc(), zp = static_cast<double>(out.quant->zp());
  const double lo = (qmin - zp) * s, hi = (qmax - zp) * s;
  const double eps = 2 * s;
  if (std::fabs(lo) <= eps && std::fabs(hi - 6.0) <= eps) {
    *act = tflite::ActivationFunctionType_RELU6;
  } else if (std::fabs(lo + 1.0) <= eps && std::fabs(hi - 1.0) <= eps) {
    *act = tflite::ActivationFunctionType_RELU_N1_TO_1;
  } else if (std::fabs(lo) <= eps) {
    *act = tflite::ActivationFunctionType_RELU;
  }
}

}  // namespace

Expected<DequantizeReport> DequantizeModel(Graph& g) {
  DequantizeReport report;
  report.bytes_before = ConstantBytes(g);
  for (size_t si = 0; si < g.subgraphs.size(); ++si) {
    Subgraph& sg = g.subgraphs[si];
    // 1. QUANTIZE/DEQUANTIZE become identities once everything is float: bypass them. A
    //    DEQUANTIZE of a float16 constant is folded into a float32 constant first.
    for (int i = static_cast<int>(sg.ops.size()) - 1; i >= 0; --i) {
      const Operator& op = sg.ops[i];
      if (op.code != tflite::BuiltinOperator_QUANTIZE && op.code != tflite::BuiltinOperator_DEQUANTIZE) continue;
      if (op.inputs.empty() || op.outputs.empty() || op.inputs[0] < 0) continue;
      BypassOp(g, static_cast<int>(si), i);
      ++report.ops_removed;
    }
    for (Operator& op : sg.ops) MakeRangeClampExplicit(op, sg);
    // 2. Tensors.
    for (size_t ti = 0; ti < sg.tensors.size(); ++ti) {
      Tensor& t = sg.tensors[ti];
      const bool constant = g.IsConstant(t);
      if (t.type == DType::kFloat16 && constant) {
        // A sparse constant holds only its stored values (its sparsity stays as it is).
        auto bytes = g.TensorData(t);
        std::vector<float> f(t.sparsity ? bytes.size() / 2 : static_cast<size_t>(t.num_elements()));
        if (!t.sparsity && bytes.size() < f.size() * 2)
          return InvalidArgument("float16 constant '" + t.name + "' holds " + std::to_string(bytes.size()) +
                                 " bytes, its shape needs " + std::to_string(f.size() * 2));
        for (size_t i = 0; i < f.size(); ++i) {
          uint16_t h;
          std::memcpy(&h, bytes.data() + 2 * i, 2);
          f[i] = HalfToFloat(h);
        }
        t.buffer = g.AddBuffer(Buffer::FromValues<float>(f));
        t.type = DType::kFloat32;
        ++report.constants_dequantized;
        continue;
      }
      if (t.type == DType::kFloat16) {
        t.type = DType::kFloat32;
        ++report.activations_converted;
        continue;
      }
      if (!IsQuantizedType(t.type) || !t.is_quantized()) continue;
      if (t.sparsity) return Unsupported("tensor '" + t.name + "': dequantizing sparse quantized constants is not supported");
      if (constant) {
        auto f = DequantizeConstant(t, g.TensorData(t));
        t.buffer = g.AddBuffer(Buffer::FromValues<float>(f));
        ++report.constants_dequantized;
      } else {
        ++report.activations_converted;
      }
      t.type = DType::kFloat32;
      t.quant.reset();
    }
    // 3. Op details that only integer kernels use.
    for (Operator& op : sg.ops) {
      if (op.code == tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM || op.code == tflite::BuiltinOperator_LSTM)
        op.intermediates.clear();
    }
  }
  g.DropUnused();
  report.bytes_after = ConstantBytes(g);
  return report;
}

}  // namespace edgeopt::optimize
