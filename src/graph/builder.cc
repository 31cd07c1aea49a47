#include "graph/builder.h"

#include "core/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace edgeopt {

QuantParams Quant(float scale, int64_t zero_point) {
  QuantParams q;
  q.scale = {scale};
  q.zero_point = {zero_point};
  return q;
}

QuantParams QuantPerAxis(std::vector<float> scales, int32_t axis, std::vector<int64_t> zero_points) {
  QuantParams q;
  if (zero_points.empty()) zero_points.assign(scales.size(), 0);
  q.scale = std::move(scales);
  q.zero_point = std::move(zero_points);
  q.quantized_dimension = axis;
  return q;
}

std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

namespace {
template <typename T>
void FillInts(std::mt19937_64& rng, std::vector<uint8_t>& out, size_t n, double lo, double hi) {
  const double tlo = std::max<double>(lo, static_cast<double>(std::numeric_limits<T>::lowest()));
  const double thi = std::min<double>(hi, static_cast<double>(std::numeric_limits<T>::max()));
  std::uniform_real_distribution<double> d(tlo, thi);
  out.resize(n * sizeof(T));
  T* p = reinterpret_cast<T*>(out.data());
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(std::clamp(std::round(d(rng)), tlo, thi));
}

}  // namespace

std::vector<uint8_t> RandomBytesOfType(std::mt19937_64& rng, DType type, size_t n, double lo, double hi) {
  std::vector<uint8_t> out;
  switch (type) {
    case DType::kFloat32: {
      auto v = RandomFloats(rng, n, static_cast<float>(lo), static_cast<float>(hi));
      out.resize(n * 4);
      if (!out.empty()) std::memcpy(out.data(), v.data(), out.size());
      break;
    }
    case DType::kFloat16: {
      auto v = RandomFloats(rng, n, static_cast<float>(lo), static_cast<float>(hi));
      out.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = FloatToHalf(v[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    }
    case DType::kFloat64: {
      std::uniform_real_distribution<double> d(lo, hi);
      out.resize(n * 8);
      for (size_t i = 0; i < n; ++i) {
        double x = d(rng);
        std::memcpy(out.data() + 8 * i, &x, 8);
      }
      break;
    }
    case DType::kInt8: FillInts<int8_t>(rng, out, n, lo, hi); break;
    case DType::kUInt8: FillInts<uint8_t>(rng, out, n, lo, hi); break;
    case DType::kInt16: FillInts<int16_t>(rng, out, n, lo, hi); break;
    case DType::kUInt16: FillInts<uint16_t>(rng, out, n, lo, hi); break;
    case DType::kInt32: FillInts<int32_t>(rng, out, n, lo, hi); break;
    case DType::kUInt32: FillInts<uint32_t>(rng, out, n, lo, hi); break;
    case DType::kInt64: FillInts<int64_t>(rng, out, n, lo, hi); break;
    case DType::kUInt64: FillInts<uint64_t>(rng, out, n, lo, hi); break;
    case DType::kBool: FillInts<uint8_t>(rng, out, n, 0, 1); break;
    default: out.assign(DTypeBytes(type, n), 0); break;
  }
  return out;
}

GraphBuilder::GraphBuilder(uint64_t seed) : rng_(seed) {
  graph_.subgraphs.emplace_back();
  graph_.description = "edgeopt GraphBuilder";
}

int32_t GraphBuilder::Input(const std::string& name, DType type, std::vector<int32_t> shape,
                            std::optional<QuantParams> quant) {
  int32_t t = Tensor(name, type, std::move(shape), std::move(quant));
  current().inputs.push_back(t);
  return t;
}

int32_t GraphBuilder::Tensor(const std::string& name, DType type, std::vector<int32_t> shape,
                             std::optional<QuantParams> quant) {
  edgeopt::Tensor t;
  t.name = name;
  t.type = type;
  t.shape = std::move(shape);
  t.quant = std::move(quant);
  return current().AddTensor(std::move(t));
}

int32_t GraphBuilder::ConstBytes(const std::string& name, DType type, std::vector<int32_t> shape,
                                 std::vector<uint8_t> bytes, std::optional<QuantParams> quant) {
  int32_t t = Tensor(name, type, std::move(shape), std::move(quant));
  current().tensors[t].buffer = graph_.AddBuffer(Buffer::Owned(std::move(bytes)));
  return t;
}

int32_t GraphBuilder::ConstRandom(const std::string& name, DType type, std::vector<int32_t> shape, double lo,
                                  double hi, std::optional<QuantParams> quant) {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  return ConstBytes(name, type, std::move(shape), RandomBytesOfType(rng_, type, static_cast<size_t>(n), lo, hi),
                    std::move(quant));
}

int32_t GraphBuilder::Variable(const std::string& name, DType type, std::vector<int32_t> shape,
                               std::optional<QuantParams> quant) {
  int32_t t = Tensor(name, type, std::move(shape), std::move(quant));
  current().tensors[t].is_variable = true;
  return t;
}

int GraphBuilder::AddOp(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                        tflite::BuiltinOptionsUnion options, int32_t version) {
  Operator op;
  op.code = code;
  op.version = version;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.options = std::move(options);
  current().ops.push_back(std::move(op));
  return static_cast<int>(current().ops.size() - 1);
}

int GraphBuilder::AddOp2(tflite::BuiltinOperator code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                         tflite::BuiltinOptions2Union options2, int32_t version) {
  int i = AddOp(code, std::move(inputs), std::move(outputs), tflite::BuiltinOptionsUnion(), version);
  current().ops[i].options2 = std::move(options2);
  return i;
}

int GraphBuilder::CustomOp(const std::string& custom_code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                           std::vector<uint8_t> custom_options) {
  int i = AddOp(tflite::BuiltinOperator_CUSTOM, std::move(inputs), std::move(outputs), tflite::BuiltinOptionsUnion());
  Operator& op = current().ops[i];
  op.custom_code = custom_code;
  op.has_custom_options = !custom_options.empty();
  op.custom_options = std::move(custom_options);
  return i;
}

void GraphBuilder::Output(int32_t tensor) { current().outputs.push_back(tensor); }

int GraphBuilder::NewSubgraph(const std::string& name) {
  graph_.subgraphs.emplace_back();
  graph_.subgraphs.back().name = name;
  current_ = static_cast<int>(graph_.subgraphs.size() - 1);
  return current_;
}

void GraphBuilder::SetSubgraph(int index) { current_ = index; }

void GraphBuilder::AddSignature(const std::string& key, int subgraph) {
  SignatureDef s;
  s.signature_key = key;
  s.subgraph_index = static_cast<uint32_t>(subgraph);
  const Subgraph& sg = graph_.subgraphs[subgraph];
  for (int32_t t : sg.inputs) s.inputs.push_back({sg.tensors[t].name, static_cast<uint32_t>(t)});
  for (int32_t t : sg.outputs) s.outputs.push_back({sg.tensors[t].name, static_cast<uint32_t>(t)});
  graph_.signatures.push_back(std::move(s));
}

void GraphBuilder::AddMetadata(const std::string& name, std::vector<uint8_t> bytes) {
  graph_.metadata.push_back({name, graph_.AddBuffer(Buffer::Owned(std::move(bytes)))});
}

Graph GraphBuilder::Finish() { return std::move(graph_); }

}  // namespace edgeopt
