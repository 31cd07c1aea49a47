#include "support/multi_invoke.h"

#include <cstring>

#include "format/writer.h"
#include "support/tflite_oracle.h"

namespace edgeopt::testing {
namespace {

DType FromOracle(int t) {
  switch (t) {
    case kOracleFloat32: return DType::kFloat32;
    case kOracleInt32: return DType::kInt32;
    case kOracleUInt8: return DType::kUInt8;
    case kOracleInt64: return DType::kInt64;
    case kOracleBool: return DType::kBool;
    case kOracleInt16: return DType::kInt16;
    case kOracleComplex64: return DType::kComplex64;
    case kOracleInt8: return DType::kInt8;
    case kOracleFloat16: return DType::kFloat16;
    case kOracleFloat64: return DType::kFloat64;
    case kOracleString: return DType::kString;
    default: return DType::kFloat32;
  }
}

}  // namespace

CompareReport CompareGraphInvokes(const Graph& g, int invokes, const CompareOptions& opts,
                                  const std::vector<std::vector<TensorValue>>& given,
                                  std::shared_ptr<const rt::OpRegistry> op_resolver) {
  CompareReport report;
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) {
    report.error = "serialize: " + bytes.status().ToString();
    return report;
  }
  auto model = rt::Model::FromGraph(g);
  if (!model.ok()) {
    report.error = model.status().ToString();
    return report;
  }
  if (!Tflite29Available()) {
    report.error = TfliteOracle::MissingReason();
    return report;
  }
  rt::InterpreterOptions io;
  io.num_threads = opts.threads;
  io.reference_kernels_only = opts.reference_kernels_only;
  io.op_resolver = std::move(op_resolver);
  auto interp = rt::Interpreter::Create(*model, io);
  if (!interp.ok()) {
    report.error = "edgeopt: " + interp.status().ToString();
    return report;
  }
  auto session = OracleSession::CreateFromBuffer(bytes->data(), bytes->size());
  if (!session.ok()) {
    report.error = "reference: " + session.status().ToString();
    return report;
  }
  report.oracle = "tflite-2.9";
  for (int k = 0; k < invokes; ++k) {
    const std::string at = "invoke " + std::to_string(k) + ": ";
    std::vector<TensorValue> inputs;
    if (k < static_cast<int>(given.size())) {
      inputs = given[k];
    } else {
      CompareOptions o = opts;
      o.seed = opts.seed + static_cast<uint64_t>(k);
      inputs = RandomInputs(g, o);
    }
    rt::Interpreter& it = **interp;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (it.input(static_cast<int>(i))->shape != inputs[i].shape) {
        Status st = it.ResizeInput(static_cast<int>(i), inputs[i].shape);
        if (!st.ok()) {
          report.error = at + "edgeopt: " + st.ToString();
          return report;
        }
      }
    }
    Status st = it.AllocateTensors();
    for (size_t i = 0; st.ok() && i < inputs.size(); ++i) {
      rt::RtTensor* t = it.input(static_cast<int>(i));
      if (t->bytes < inputs[i].data.size()) {
        st = InvalidArgument("input size mismatch");
        break;
      }
      if (!inputs[i].data.empty()) std::memcpy(t->data, inputs[i].data.data(), inputs[i].data.size());
    }
    if (st.ok()) st = it.Invoke();
    if (!st.ok()) {
      report.error = at + "edgeopt: " + st.ToString();
      return report;
    }
    std::vector<TensorValue> ours;
    for (int i = 0; i < it.num_outputs(); ++i) {
      const rt::RtTensor* t = it.output(i);
      TensorValue v;
      v.name = t->name();
      v.type = t->type;
      v.shape = t->shape;
      // String outputs: the whole packed buffer (count, offsets, bytes).
      const size_t n = t->type == DType::kString ? t->bytes : DTypeBytes(t->type, static_cast<size_t>(t->num_elements()));
      if (n) v.data.assign(t->data, t->data + n);
      ours.push_back(std::move(v));
    }
    OracleSession& s = **session;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<int> shape(inputs[i].shape.begin(), inputs[i].shape.end());
      if (s.inputs()[i].shape != shape) st = s.ResizeInput(static_cast<int>(i), shape);
      if (st.ok()) st = s.SetInput(static_cast<int>(i), inputs[i].data.data(), inputs[i].data.size());
      if (!st.ok()) break;
    }
    if (st.ok()) st = s.Invoke();
    auto outs = st.ok() ? s.GetOutputs() : Expected<std::vector<OracleTensor>>(st);
    if (!outs.ok()) {
      report.error = at + "reference: " + outs.status().ToString();
      return report;
    }
    std::vector<TensorValue> ref;
    for (auto& o : *outs) {
      TensorValue v;
      v.name = o.name;
      v.type = FromOracle(o.type);
      v.shape.assign(o.shape.begin(), o.shape.end());
      v.data = std::move(o.data);
      ref.push_back(std::move(v));
    }
    report = CompareOutputs(ours, ref, opts);
    report.oracle = "tflite-2.9";
    if (!report.ok) {
      report.error = "outputs differ at invoke " + std::to_string(k);
      return report;
    }
  }
  return report;
}

}  // namespace edgeopt::testing
