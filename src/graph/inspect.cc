#include "graph/inspect.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/text_format.h"
#include "format/mapped_file.h"

namespace edgeopt {
namespace {

using Json = nlohmann::ordered_json;

// Appends `item` to a `sep`-separated list.
void AppendItem(std::string& list, std::string_view sep, std::string_view item) {
  if (!list.empty()) list += sep;
  list += item;
}

bool IsFloat(DType t) { return IsFloatType(t); }
bool IsQuantizedActivationType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }
// Types that carry model values (as opposed to shapes, indices, flags or strings).
bool IsActivationType(DType t) { return IsFloat(t) || IsQuantizedActivationType(t); }

const Tensor* TensorAt(const Subgraph& sg, int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= sg.tensors.size()) return nullptr;
  return &sg.tensors[index];
}

TensorSummary SummarizeTensor(const Graph& g, const Subgraph& sg, int32_t index) {
  TensorSummary s;
  s.index = index;
  const Tensor* t = TensorAt(sg, index);
  if (!t) {
    if (index != kNoTensor) s.name = "<invalid>";
    return s;
  }
  s.name = t->name;
  s.shape = !t->shape_signature.empty() && t->shape_signature.size() == t->shape.size() ? t->shape_signature : t->shape;
  s.dtype = t->type;
  s.constant = g.IsConstant(*t);
  if (t->is_quantized()) {
    s.num_scales = t->quant->scale.size();
    s.scale = t->quant->scale[0];
    s.zero_point = t->quant->zp(0);
    s.quant_axis = t->quant->quantized_dimension;
  }
  return s;
}

// Constant integer weights: quantized int8/uint8/int16, or int4 (always a packed weight).
bool IsIntegerWeight(const Graph& g, const Tensor& t) {
  if (!g.IsConstant(t)) return false;
  if (t.type == DType::kInt4) return true;
  return (t.type == DType::kInt8 || t.type == DType::kUInt8 || t.type == DType::kInt16) && t.is_quantized();
}

std::string ClassifyOp(const Graph& g, const Subgraph& sg, const Operator& op) {
  if (op.code == tflite::BuiltinOperator_DEQUANTIZE || op.code == tflite::BuiltinOperator_QUANTIZE) {
    const Tensor* in = op.inputs.empty() ? nullptr : TensorAt(sg, op.inputs[0]);
    if (!in) return "other";
    if (op.code == tflite::BuiltinOperator_QUANTIZE) return IsFloat(in->type) ? "quantize" : "requantize";
    if (g.IsConstant(*in)) {
      if (IsFloat(in->type)) return "dequantize_weights_fp16";
      return "dequantize_weights_int8";
    }
    return "dequantize";
  }
  // The op's activation type: the first non-constant input carrying values, else the first
  // output carrying values. Constant inputs are weights.
  bool has_float = false, has_int = false, int_weights = false;
  const Tensor* primary = nullptr;
  for (int32_t i : op.inputs) {
    const Tensor* t = TensorAt(sg, i);
    if (!t) continue;
    if (g.IsConstant(*t)) {
      int_weights = int_weights || IsIntegerWeight(g, *t);
      continue;
    }
    if (!IsActivationType(t->type)) continue;
    if (!primary) primary = t;
    (IsFloat(t->type) ? has_float : has_int) = true;
  }
  for (int32_t o : op.outputs) {
    const Tensor* t = TensorAt(sg, o);
    if (!t || !IsActivationType(t->type)) continue;
    if (!primary) primary = t;
    (IsFloat(t->type) ? has_float : has_int) = true;
  }
  if (!primary) return "other";
  if (has_float && has_int) return "other";  // a conversion such as CAST
  if (IsFloat(primary->type) && int_weights) return "hybrid";
  return std::string(DTypeName(primary->type));
}

CountList SortedCounts(const std::map<std::string, uint64_t>& m) {
  CountList out(m.begin(), m.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

uint64_t CountOf(const CountList& l, const std::string& key) {
  for (const auto& [k, v] : l)
    if (k == key) return v;
  return 0;
}

std::string Plural(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "int8 I/O", "float I/O with QUANTIZE/DEQUANTIZE at the edges", "uint8 I/O with QUANTIZE at
// the edges", or "uint8 input, float32 output".
std::string DescribeIo(const ModelSummary& s, DType compute) {
  if (s.subgraphs.empty()) return "no inputs or outputs";
  std::set<DType> in, out;
  for (const auto& t : s.subgraphs[0].inputs) in.insert(t.dtype);
  for (const auto& t : s.subgraphs[0].outputs) out.insert(t.dtype);
  std::set<DType> all = in;
  all.insert(out.begin(), out.end());
  if (all.size() == 1) {
    DType t = *all.begin();
    if (t == compute) return std::string(DTypeName(t)) + " I/O";
    if (IsFloat(t)) return "float I/O with QUANTIZE/DEQUANTIZE at the edges";
    if (IsQuantizedActivationType(t)) return std::string(DTypeName(t)) + " I/O with QUANTIZE at the edges";
  }
  auto names = [](const std::set<DType>& types) {
    std::string r;
    for (DType t : types) AppendItem(r, "/", DTypeName(t));
    return r.empty() ? std::string("no") : r;
  };
  const size_t n_in = s.subgraphs[0].inputs.size(), n_out = s.subgraphs[0].outputs.size();
  return names(in) + (n_in > 1 ? " inputs, " : " input, ") + names(out) + (n_out > 1 ? " outputs" : " output");
}

bool IsIntegerPrecision(const std::string& p) { return p == "int8" || p == "uint8" || p == "int16"; }
bool IsFloatPrecision(const std::string& p) { return p == "hybrid" || p.rfind("float", 0) == 0; }

// Where float (and hybrid) ops sit relative to the integer ops of their subgraph, by data flow:
// before (they feed integer ops only), after (fed by integer ops only), inside (both), apart.
struct FloatPlacement {
  uint64_t before = 0, after = 0, inside = 0, apart = 0;
};

FloatPlacement PlaceFloatOps(const ModelSummary& s) {
  FloatPlacement p;
  for (const auto& sg : s.subgraphs) {
    const size_t n = sg.ops.size();
    std::map<int32_t, size_t> producer;
    std::map<int32_t, std::vector<size_t>> consumers;
    for (size_t i = 0; i < n; ++i) {
      for (const auto& t : sg.ops[i].outputs)
        if (t.index >= 0) producer[t.index] = i;
      for (const auto& t : sg.ops[i].inputs)
        if (t.index >= 0) consumers[t.index].push_back(i);
    }
    // Ops are stored in execution (topological) order, so one pass each way suffices.
    std::vector<char> from_int(n, 0), to_int(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (const auto& t : sg.ops[i].inputs) {
        auto it = t.index >= 0 ? producer.find(t.index) : producer.end();
        if (it == producer.end() || it->second >= i) continue;
        const size_t q = it->second;
        if (IsIntegerPrecision(sg.ops[q].precision) || from_int[q]) from_int[i] = 1;
      }
    }
    for (size_t i = n; i-- > 0;) {
      for (const auto& t : sg.ops[i].outputs) {
        if (t.index < 0) continue;
        for (size_t c : consumers[t.index]) {
          if (c <= i) continue;
          if (IsIntegerPrecision(sg.ops[c].precision) || to_int[c]) to_int[i] = 1;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!IsFloatPrecision(sg.ops[i].precision)) continue;
      if (from_int[i] && to_int[i]) {
        ++p.inside;
      } else if (to_int[i]) {
        ++p.before;
      } else if (from_int[i]) {
        ++p.after;
      } else {
        ++p.apart;
      }
    }
  }
  return p;
}

QuantizationScheme DeriveScheme(const ModelSummary& s, const std::map<std::string, uint64_t>& by_precision) {
  QuantizationScheme q;
  q.ops_by_precision = SortedCounts(by_precision);
  auto c = [&](const char* k) { return CountOf(q.ops_by_precision, k); };
  const uint64_t int8 = c("int8"), uint8 = c("uint8"), int16 = c("int16");
  const uint64_t int_compute = int8 + uint8 + int16;
  const uint64_t f32 = c("float32");
  const uint64_t float_compute = f32 + c("float16") + c("bfloat16") + c("float64");
  const uint64_t hybrid = c("hybrid"), dq16 = c("dequantize_weights_fp16"), dq8 = c("dequantize_weights_int8");
  const uint64_t edges = c("quantize") + c("dequantize") + c("requantize");

  if (s.num_ops == 0) {
    q.id = "none";
    q.description = "no operators";
    return q;
  }
  // Weight-storage schemes on float compute.
  const int weight_schemes = (hybrid > 0) + (dq16 > 0) + (dq8 > 0);
  if (int_compute == 0 && edges == 0 && weight_schemes <= 1) {
    if (hybrid > 0) {
      q.id = "dynamic_range";
      q.description = "dynamic range (int8 weights, float activations; " + Plural(hybrid, "hybrid op", "hybrid ops");
      if (float_compute) q.description += ", " + Plural(float_compute, "float op", "float ops");
      q.description += ")";
      return q;
    }
    if (dq16 > 0) {
      q.id = "float16_weights";
      q.description = "float16 weights (" + std::to_string(dq16) + " DEQUANTIZE), float32 compute";
      return q;
    }
    if (dq8 > 0) {
      q.id = "weight_only_int8";
      q.description = "int8 weights dequantized to float (" + std::to_string(dq8) + " DEQUANTIZE), float compute";
      return q;
    }
    if (float_compute == f32) {
      q.id = "float32";
      q.description = "float32";
      return q;
    }
    if (float_compute == c("float16")) {
      q.id = "float16";
      q.description = "float16 activations and weights";
      return q;
    }
  }
  if (int_compute > 0 && float_compute == 0 && weight_schemes == 0) {
    if (int8 == int_compute) {
      q.id = "full_integer_int8";
      q.description = "full integer int8 (" + DescribeIo(s, DType::kInt8) + ")";
      return q;
    }
    if (uint8 == int_compute) {
      q.id = "full_integer_uint8";
      q.description = "full integer uint8 (" + DescribeIo(s, DType::kUInt8) + ")";
      return q;
    }
    if (int16 == int_compute) {
      q.id = "int16x8";
      q.description = "16x8 (int16 activations, int8 weights; " + DescribeIo(s, DType::kInt16) + ")";
      return q;
    }
  }
  q.id = "mixed";
  std::string parts;
  auto add = [&](uint64_t n, const std::string& what) {
    if (n == 0) return;
    AppendItem(parts, ", ", std::to_string(n) + " " + what);
  };
  if (int_compute > 0) {
    // An integer core with float ops around or inside it: say where the float ops are.
    std::string core;
    if (int8) AppendItem(core, "/", "int8");
    if (uint8) AppendItem(core, "/", "uint8");
    if (int16) AppendItem(core, "/", "int16");
    const FloatPlacement p = PlaceFloatOps(s);
    std::string where;
    auto place = [&](uint64_t n, const std::string& text) {
      if (n) AppendItem(where, ", ", text + " (" + Plural(n, "op", "ops") + ")");
    };
    place(p.before, "float pre-processing");
    place(p.after, "float post-processing");
    if (p.inside) AppendItem(where, ", ", Plural(p.inside, "float op", "float ops") + " inside it");
    if (p.apart) AppendItem(where, ", ", Plural(p.apart, "float op", "float ops") + " beside it");
    q.description = "mixed: " + core + " core (" + Plural(int_compute, "op", "ops") + ")";
    if (!where.empty()) q.description += " with " + where;
    add(dq16, "float16-weight DEQUANTIZE");
    add(dq8, "int8-weight DEQUANTIZE");
    add(edges, "QUANTIZE/DEQUANTIZE");
    if (!parts.empty()) q.description += "; " + parts;
    return q;
  }
  // No integer compute: list what is there.
  add(hybrid, "hybrid");
  for (const auto& [k, n] : q.ops_by_precision)
    if (k.rfind("float", 0) == 0) add(n, k);
  add(dq16, "float16-weight DEQUANTIZE");
  add(dq8, "int8-weight DEQUANTIZE");
  add(edges, "QUANTIZE/DEQUANTIZE");
  q.description = "mixed: " + parts + " ops";
  return q;
}

// Parameter rule, see inspect.h.
bool IsParameterTensor(const Tensor& t) {
  if (IsFloat(t.type)) return true;
  switch (t.type) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kInt4:
      return true;
    case DType::kInt32:
    case DType::kInt64:
      return t.is_quantized();
    default:
      return false;
  }
}

}  // namespace

ModelSummary SummarizeModel(const Graph& g) {
  ModelSummary s;
  if (g.source) {
    s.path = g.source->path();
    s.file_size = g.source->size();
  }
  s.schema_version = g.version;
  s.description = g.description;
  s.num_buffers = g.buffers.size();

  std::map<std::string, uint64_t> histogram, by_precision, by_dtype, by_op;
  std::vector<char> buffer_counted(g.buffers.size(), 0), param_counted(g.buffers.size(), 0),
      dtype_counted(g.buffers.size(), 0);

  for (size_t si = 0; si < g.subgraphs.size(); ++si) {
    const Subgraph& sg = g.subgraphs[si];
    SubgraphSummary ss;
    ss.index = static_cast<int>(si);
    ss.name = sg.name;
    ss.num_tensors = sg.tensors.size();
    for (int32_t t : sg.inputs) ss.inputs.push_back(SummarizeTensor(g, sg, t));
    for (int32_t t : sg.outputs) ss.outputs.push_back(SummarizeTensor(g, sg, t));

    std::vector<char> used(sg.tensors.size(), 0);
    auto mark = [&](int32_t t) {
      if (t >= 0 && static_cast<size_t>(t) < used.size()) used[t] = 1;
    };
    for (int32_t t : sg.inputs) mark(t);
    for (int32_t t : sg.outputs) mark(t);
    for (const auto& sig : g.signatures) {
      if (sig.subgraph_index != si) continue;
      for (const auto& m : sig.inputs) mark(static_cast<int32_t>(m.tensor_index));
      for (const auto& m : sig.outputs) mark(static_cast<int32_t>(m.tensor_index));
    }

    for (size_t oi = 0; oi < sg.ops.size(); ++oi) {
      const Operator& op = sg.ops[oi];
      OpSummary os;
      os.index = static_cast<int>(oi);
      os.type = op.type_name();
      os.version = op.version;
      for (int32_t t : op.inputs) os.inputs.push_back(SummarizeTensor(g, sg, t));
      for (int32_t t : op.outputs) os.outputs.push_back(SummarizeTensor(g, sg, t));
      os.precision = ClassifyOp(g, sg, op);
      ++histogram[os.type];
      ++by_precision[os.precision];
      ++s.num_ops;
      for (int32_t t : op.outputs) mark(t);
      for (int32_t t : op.intermediates) mark(t);
      for (int32_t i : op.inputs) {
        mark(i);
        const Tensor* t = TensorAt(sg, i);
        if (!t || !g.IsConstant(*t)) continue;
        if (!buffer_counted[t->buffer]) {
          buffer_counted[t->buffer] = 1;
          by_op[os.type] += g.buffers[t->buffer].size();
        }
        if (!param_counted[t->buffer] && IsParameterTensor(*t)) {
          param_counted[t->buffer] = 1;
          s.parameters += static_cast<uint64_t>(std::max<int64_t>(t->num_elements(), 0));
        }
      }
      ss.ops.push_back(std::move(os));
    }
    for (size_t ti = 0; ti < sg.tensors.size(); ++ti) {
      const Tensor& t = sg.tensors[ti];
      if (!used[ti]) ++s.unused_tensors;
      if (!g.IsConstant(t) || dtype_counted[t.buffer]) continue;
      dtype_counted[t.buffer] = 1;
      by_dtype[std::string(DTypeName(t.type))] += g.buffers[t.buffer].size();
    }
    s.subgraphs.push_back(std::move(ss));
  }

  for (size_t b = 0; b < g.buffers.size(); ++b) {
    if (!dtype_counted[b]) continue;
    s.constant_bytes += g.buffers[b].size();
    if (!buffer_counted[b]) s.unused_constant_bytes += g.buffers[b].size();
  }
  for (const auto& m : g.metadata) {
    MetadataSummary ms;
    ms.name = m.name;
    ms.bytes = m.buffer < g.buffers.size() ? g.buffers[m.buffer].size() : 0;
    s.metadata_bytes += ms.bytes;
    s.metadata.push_back(std::move(ms));
  }
  for (const auto& sig : g.signatures) {
    SignatureSummary ss;
    ss.key = sig.signature_key;
    ss.subgraph = sig.subgraph_index;
    for (const auto& m : sig.inputs) ss.inputs.push_back({m.name, m.tensor_index});
    for (const auto& m : sig.outputs) ss.outputs.push_back({m.name, m.tensor_index});
    s.signatures.push_back(std::move(ss));
  }
  s.op_histogram = SortedCounts(histogram);
  s.constant_bytes_by_dtype = SortedCounts(by_dtype);
  s.constant_bytes_by_op = SortedCounts(by_op);
  s.quantization = DeriveScheme(s, by_precision);
  return s;
}

std::string ShapeString(const std::vector<int32_t>& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) r += ',';
    r += std::to_string(shape[i]);
  }
  r += ']';
  return r;
}

std::string QuantizationString(const TensorSummary& t) {
  if (t.num_scales == 0) return "none";
  if (t.per_channel())
    return "per-channel (" + std::to_string(t.num_scales) + " scales, axis " + std::to_string(t.quant_axis) + ")";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "scale %.7g, zero point %lld", static_cast<double>(t.scale),
                static_cast<long long>(t.zero_point));
  return buf;
}

namespace {

std::string TensorBrief(const TensorSummary& t) {
  if (t.index == kNoTensor) return "-";
  if (t.name == "<invalid>") return "<invalid tensor " + std::to_string(t.index) + ">";
  return std::string(t.constant ? "const " : "") + std::string(DTypeName(t.dtype)) + ShapeString(t.shape);
}

std::string JoinBriefs(const std::vector<TensorSummary>& ts) {
  std::string r;
  for (const auto& t : ts) AppendItem(r, ", ", TensorBrief(t));
  return r;
}

std::string Section(const std::string& title) { return "\n" + title + "\n"; }

void IoTable(std::string& out, const std::string& title, const std::vector<TensorSummary>& ts) {
  out += Section(title);
  if (ts.empty()) {
    out += "  (none)\n";
    return;
  }
  TextTable t({"#", "name", "shape", "dtype", "quantization"});
  t.AlignRight(0);
  for (const auto& x : ts)
    t.AddRow({std::to_string(x.index), x.name.empty() ? "-" : Printable(x.name), ShapeString(x.shape),
              std::string(DTypeName(x.dtype)), QuantizationString(x)});
  out += t.Render("  ");
}

void BytesTable(std::string& out, const std::string& title, const CountList& l, uint64_t total) {
  out += Section(title);
  if (l.empty()) {
    out += "  (none)\n";
    return;
  }
  TextTable t;
  t.AlignRight(1);
  t.AlignRight(2);
  for (const auto& [k, v] : l) t.AddRow({Printable(k), HumanBytes(v), Percent(v, total)});
  out += t.Render("  ");
}

}  // namespace

std::string SummaryToText(const ModelSummary& s, const SummaryTextOptions& options) {
  std::string out;
  {
    TextTable t;
    if (!s.path.empty()) t.AddRow({"model", Printable(s.path)});
    if (s.file_size) t.AddRow({"file size", HumanBytes(s.file_size) + " (" + GroupDigits(static_cast<int64_t>(s.file_size)) + " bytes)"});
    t.AddRow({"producer", s.description.empty() ? "(no description)" : Printable(s.description)});
    t.AddRow({"schema", "version " + std::to_string(s.schema_version)});
    t.AddRow({"quantization", s.quantization.description});
    t.AddRow({"parameters", GroupDigits(static_cast<int64_t>(s.parameters))});
    std::string data = HumanBytes(s.constant_bytes) + " constant data";
    if (s.unused_constant_bytes) data += " (" + HumanBytes(s.unused_constant_bytes) + " read by no op)";
    if (s.metadata_bytes) data += ", " + HumanBytes(s.metadata_bytes) + " metadata";
    if (s.file_size >= s.constant_bytes + s.metadata_bytes && s.file_size)
      data += ", " + HumanBytes(s.file_size - s.constant_bytes - s.metadata_bytes) + " graph structure (ops, tensors, quantization parameters, padding)";
    t.AddRow({"size", data});
    t.AddRow({"ops", GroupDigits(static_cast<int64_t>(s.num_ops)) + " in " + Plural(s.subgraphs.size(), "subgraph", "subgraphs")});
    if (s.unused_tensors) t.AddRow({"unused tensors", std::to_string(s.unused_tensors) + " (edgeopt convert --strip-unused removes them)"});
    out += t.Render();
  }

  out += Section("Subgraphs");
  {
    TextTable t({"#", "name", "tensors", "ops", "inputs", "outputs"});
    for (size_t c : {0, 2, 3, 4, 5}) t.AlignRight(c);
    for (const auto& sg : s.subgraphs)
      t.AddRow({std::to_string(sg.index), sg.name.empty() ? "-" : Printable(sg.name), std::to_string(sg.num_tensors),
                std::to_string(sg.ops.size()), std::to_string(sg.inputs.size()), std::to_string(sg.outputs.size())});
    out += t.Render("  ");
  }
  if (!s.subgraphs.empty()) {
    IoTable(out, "Inputs (subgraph 0)", s.subgraphs[0].inputs);
    IoTable(out, "Outputs (subgraph 0)", s.subgraphs[0].outputs);
  }

  out += Section(s.subgraphs.size() > 1 ? "Ops by type (all subgraphs)" : "Ops by type");
  {
    TextTable t;
    t.AlignRight(1);
    for (const auto& [k, v] : s.op_histogram) t.AddRow({Printable(k), std::to_string(v)});
    out += s.op_histogram.empty() ? "  (none)\n" : t.Render("  ");
  }
  out += Section("Ops by precision");
  {
    TextTable t;
    t.AlignRight(1);
    for (const auto& [k, v] : s.quantization.ops_by_precision) t.AddRow({k, std::to_string(v)});
    out += s.quantization.ops_by_precision.empty() ? "  (none)\n" : t.Render("  ");
  }
  BytesTable(out, "Constant data by dtype", s.constant_bytes_by_dtype, s.constant_bytes);
  BytesTable(out, "Constant data by op type (each buffer counted once)", s.constant_bytes_by_op, s.constant_bytes);

  out += Section("Signatures");
  if (s.signatures.empty()) out += "  (none)\n";
  for (const auto& sig : s.signatures) {
    auto names = [](const std::vector<SignatureSummary::Entry>& es) {
      std::string r;
      for (const auto& e : es) AppendItem(r, ", ", Printable(e.name) + " (tensor " + std::to_string(e.tensor) + ")");
      return r.empty() ? std::string("-") : r;
    };
    out += "  '" + Printable(sig.key) + "' (subgraph " + std::to_string(sig.subgraph) + ")\n";
    out += "    inputs:  " + names(sig.inputs) + "\n";
    out += "    outputs: " + names(sig.outputs) + "\n";
  }

  out += Section("Metadata");
  if (s.metadata.empty()) out += "  (none)\n";
  {
    TextTable t;
    t.AlignRight(1);
    for (const auto& m : s.metadata) t.AddRow({m.name.empty() ? "-" : Printable(m.name), HumanBytes(m.bytes)});
    out += t.Render("  ");
  }

  if (options.max_ops != 0 && options.ops_subgraph >= 0 && static_cast<size_t>(options.ops_subgraph) < s.subgraphs.size()) {
    const SubgraphSummary& sg = s.subgraphs[options.ops_subgraph];
    const size_t n = sg.ops.size();
    const size_t shown = options.max_ops < 0 ? n : std::min(n, static_cast<size_t>(options.max_ops));
    std::string title = "Ops of subgraph " + std::to_string(sg.index);
    if (!sg.name.empty()) title += " '" + Printable(sg.name) + "'";
    title += shown < n ? " (first " + std::to_string(shown) + " of " + std::to_string(n) + ")" : "";
    out += Section(title);
    TextTable t({"#", "op", "precision", "inputs -> outputs"});
    t.AlignRight(0);
    for (size_t i = 0; i < shown; ++i) {
      const OpSummary& op = sg.ops[i];
      t.AddRow({std::to_string(op.index), Printable(op.type), op.precision, JoinBriefs(op.inputs) + " -> " + JoinBriefs(op.outputs)});
    }
    out += n == 0 ? "  (none)\n" : t.Render("  ");
    if (shown < n) {
      out += "  ... " + Plural(n - shown, "more op", "more ops") + " not shown";
      out += options.truncation_hint.empty() ? "\n" : " (" + options.truncation_hint + ")\n";
    }
  }
  return out;
}

namespace {

Json TensorJson(const TensorSummary& t, bool with_quant) {
  if (t.index == kNoTensor) return nullptr;
  Json j;
  j["index"] = t.index;
  j["name"] = t.name;
  j["shape"] = t.shape;
  j["dtype"] = std::string(DTypeName(t.dtype));
  j["constant"] = t.constant;
  if (with_quant) {
    Json q;
    if (t.num_scales == 0) {
      q["type"] = "none";
    } else if (t.per_channel()) {
      q["type"] = "per_channel";
      q["num_scales"] = t.num_scales;
      q["axis"] = t.quant_axis;
    } else {
      q["type"] = "per_tensor";
      q["scale"] = t.scale;
      q["zero_point"] = t.zero_point;
    }
    j["quantization"] = q;
  }
  return j;
}

Json TensorsJson(const std::vector<TensorSummary>& ts, bool with_quant) {
  Json a = Json::array();
  for (const auto& t : ts) a.push_back(TensorJson(t, with_quant));
  return a;
}

Json CountsJson(const CountList& l) {
  Json o = Json::object();
  for (const auto& [k, v] : l) o[k] = v;
  return o;
}

}  // namespace

std::string SummaryToJson(const ModelSummary& s, int indent) {
  Json j;
  j["path"] = s.path;
  j["file_size"] = s.file_size;
  j["schema_version"] = s.schema_version;
  j["description"] = s.description;
  j["quantization"] = {{"scheme", s.quantization.id},
                       {"description", s.quantization.description},
                       {"ops_by_precision", CountsJson(s.quantization.ops_by_precision)}};
  j["num_ops"] = s.num_ops;
  j["parameters"] = s.parameters;
  j["constant_bytes"] = s.constant_bytes;
  j["unused_constant_bytes"] = s.unused_constant_bytes;
  j["metadata_bytes"] = s.metadata_bytes;
  j["constant_bytes_by_dtype"] = CountsJson(s.constant_bytes_by_dtype);
  j["constant_bytes_by_op"] = CountsJson(s.constant_bytes_by_op);
  j["num_buffers"] = s.num_buffers;
  j["unused_tensors"] = s.unused_tensors;
  j["inputs"] = s.subgraphs.empty() ? Json::array() : TensorsJson(s.subgraphs[0].inputs, true);
  j["outputs"] = s.subgraphs.empty() ? Json::array() : TensorsJson(s.subgraphs[0].outputs, true);
  j["op_histogram"] = CountsJson(s.op_histogram);
  Json sgs = Json::array();
  for (const auto& sg : s.subgraphs) {
    Json o;
    o["index"] = sg.index;
    o["name"] = sg.name;
    o["num_tensors"] = sg.num_tensors;
    o["num_ops"] = sg.ops.size();
    o["inputs"] = TensorsJson(sg.inputs, true);
    o["outputs"] = TensorsJson(sg.outputs, true);
    Json ops = Json::array();
    for (const auto& op : sg.ops) {
      Json jo;
      jo["index"] = op.index;
      jo["op"] = op.type;
      jo["version"] = op.version;
      jo["precision"] = op.precision;
      jo["inputs"] = TensorsJson(op.inputs, false);
      jo["outputs"] = TensorsJson(op.outputs, false);
      ops.push_back(std::move(jo));
    }
    o["ops"] = std::move(ops);
    sgs.push_back(std::move(o));
  }
  j["subgraphs"] = std::move(sgs);
  Json sigs = Json::array();
  for (const auto& sig : s.signatures) {
    auto entries = [](const std::vector<SignatureSummary::Entry>& es) {
      Json a = Json::array();
      for (const auto& e : es) a.push_back({{"name", e.name}, {"tensor", e.tensor}});
      return a;
    };
    sigs.push_back({{"key", sig.key}, {"subgraph", sig.subgraph}, {"inputs", entries(sig.inputs)}, {"outputs", entries(sig.outputs)}});
  }
  j["signatures"] = std::move(sigs);
  Json md = Json::array();
  for (const auto& m : s.metadata) md.push_back({{"name", m.name}, {"bytes", m.bytes}});
  j["metadata"] = std::move(md);
  // Replace invalid UTF-8 (names come from untrusted files) instead of throwing.
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace edgeopt
