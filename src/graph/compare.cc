#include "graph/compare.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "flatbuffers/flatbuffers.h"

namespace edgeopt {

std::vector<uint8_t> OptionsBytes(const Operator& op) {
  flatbuffers::FlatBufferBuilder fbb;
  // A type without a value (a half-edited IR) is compared by its type alone: packing it would
  // dereference null.
  auto o1 = op.options.value ? op.options.Pack(fbb) : 0;
  auto o2 = op.options2.value ? op.options2.Pack(fbb) : 0;
  tflite::OperatorBuilder b(fbb);
  if (op.options.type != tflite::BuiltinOptions_NONE) {
    b.add_builtin_options_type(op.options.type);
    b.add_builtin_options(o1);
  }
  if (op.options2.type != tflite::BuiltinOptions2_NONE) {
    b.add_builtin_options_2_type(op.options2.type);
    b.add_builtin_options_2(o2);
  }
  fbb.Finish(b.Finish());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

namespace {

// Bitwise, so that NaN equals itself and -0 differs from 0: a round trip must keep the bits.
bool SameFloats(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

std::vector<uint8_t> DetailsBytes(const QuantParams& q) {
  if (q.details.type == tflite::QuantizationDetails_NONE || !q.details.value) return {};
  flatbuffers::FlatBufferBuilder fbb;
  auto d = q.details.Pack(fbb);
  tflite::QuantizationParametersBuilder b(fbb);
  b.add_details_type(q.details.type);
  b.add_details(d);
  fbb.Finish(b.Finish());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

bool SameQuant(const std::optional<QuantParams>& x, const std::optional<QuantParams>& y) {
  if (x.has_value() != y.has_value()) return false;
  if (!x) return true;
  return SameFloats(x->scale, y->scale) && x->zero_point == y->zero_point && SameFloats(x->min, y->min) &&
         SameFloats(x->max, y->max) && x->quantized_dimension == y->quantized_dimension &&
         x->details.type == y->details.type && DetailsBytes(*x) == DetailsBytes(*y);
}

bool SameVariants(const Tensor& p, const Tensor& q) {
  if (p.variant_tensors.size() != q.variant_tensors.size()) return false;
  for (size_t i = 0; i < p.variant_tensors.size(); ++i) {
    const auto& a = p.variant_tensors[i];
    const auto& b = q.variant_tensors[i];
    if (a.shape != b.shape || a.type != b.type || a.has_rank != b.has_rank) return false;
  }
  return true;
}

std::vector<uint8_t> SparsityBytes(const Tensor& t) {
  if (!t.sparsity) return {};
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(tflite::CreateSparsityParameters(fbb, t.sparsity.get()));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

std::span<const uint8_t> BufferBytes(const Graph& g, uint32_t b) {
  return b < g.buffers.size() ? g.buffers[b].bytes() : std::span<const uint8_t>();
}

bool SameSpan(std::span<const uint8_t> x, std::span<const uint8_t> y) {
  return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
}

class Differ {
 public:
  Differ(const Graph& a, const Graph& b, size_t max) : a_(a), b_(b), max_(max) {}

  std::vector<std::string> Run() {
    Check(a_.version == b_.version, "model version");
    Check(a_.description == b_.description, "model description");
    if (!Check(a_.subgraphs.size() == b_.subgraphs.size(), "subgraph count")) return out_;
    for (size_t i = 0; i < a_.subgraphs.size() && !Full(); ++i) Subgraphs(i);
    Signatures();
    Metadatas();
    return out_;
  }

 private:
  bool Full() const { return out_.size() >= max_; }
  bool Check(bool ok, const std::string& what) {
    if (!ok && !Full()) out_.push_back(what + " differs");
    return ok;
  }

  bool SameBytes(uint32_t ba, uint32_t bb) {
    auto x = ba < a_.buffers.size() ? a_.buffers[ba].bytes() : std::span<const uint8_t>();
    auto y = bb < b_.buffers.size() ? b_.buffers[bb].bytes() : std::span<const uint8_t>();
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
  }

  void Subgraphs(size_t si) {
    const Subgraph& x = a_.subgraphs[si];
    const Subgraph& y = b_.subgraphs[si];
    const std::string sg = "subgraph " + std::to_string(si);
    Check(x.name == y.name, sg + " name");
    Check(x.inputs == y.inputs, sg + " inputs");
    Check(x.outputs == y.outputs, sg + " outputs");
    if (!Check(x.tensors.size() == y.tensors.size(), sg + " tensor count")) return;
    for (size_t i = 0; i < x.tensors.size() && !Full(); ++i) {
      const Tensor& p = x.tensors[i];
      const Tensor& q = y.tensors[i];
      const std::string t = sg + " tensor " + std::to_string(i) + " '" + p.name + "'";
      Check(p.name == q.name, t + " name");
      Check(p.shape == q.shape, t + " shape");
      Check(p.shape_signature == q.shape_signature, t + " shape_signature");
      Check(p.type == q.type, t + " type");
      Check(p.is_variable == q.is_variable, t + " is_variable");
      Check(p.has_rank == q.has_rank, t + " has_rank");
      Check(p.external_buffer == q.external_buffer, t + " external_buffer");
      Check(SameQuant(p.quant, q.quant), t + " quantization");
      Check(SparsityBytes(p) == SparsityBytes(q), t + " sparsity");
      Check(SameVariants(p, q), t + " variant tensors");
      Check(SameBytes(p.buffer, q.buffer), t + " buffer bytes");
    }
    if (!Check(x.ops.size() == y.ops.size(), sg + " operator count")) return;
    for (size_t i = 0; i < x.ops.size() && !Full(); ++i) {
      const Operator& p = x.ops[i];
      const Operator& q = y.ops[i];
      const std::string o = sg + " op " + std::to_string(i) + " (" + p.type_name() + ")";
      Check(p.code == q.code && p.custom_code == q.custom_code, o + " code");
      Check(p.version == q.version, o + " version");
      Check(p.inputs == q.inputs, o + " inputs");
      Check(p.outputs == q.outputs, o + " outputs");
      Check(p.intermediates == q.intermediates, o + " intermediates");
      Check(p.options.type == q.options.type && p.options2.type == q.options2.type, o + " options type");
      Check(OptionsBytes(p) == OptionsBytes(q), o + " options");
      Check(p.custom_options == q.custom_options && p.has_custom_options == q.has_custom_options, o + " custom options");
      Check(p.custom_options_format == q.custom_options_format, o + " custom options format");
      Check(p.mutating_variable_inputs == q.mutating_variable_inputs, o + " mutating_variable_inputs");
    }
  }

  void Signatures() {
    if (!Check(a_.signatures.size() == b_.signatures.size(), "signature count")) return;
    for (size_t i = 0; i < a_.signatures.size(); ++i) {
      const auto& x = a_.signatures[i];
      const auto& y = b_.signatures[i];
      const std::string s = "signature '" + x.signature_key + "'";
      Check(x.signature_key == y.signature_key && x.subgraph_index == y.subgraph_index, s);
      auto same = [](const std::vector<TensorMap>& p, const std::vector<TensorMap>& q) {
        if (p.size() != q.size()) return false;
        for (size_t k = 0; k < p.size(); ++k)
          if (p[k].name != q[k].name || p[k].tensor_index != q[k].tensor_index) return false;
        return true;
      };
      Check(same(x.inputs, y.inputs), s + " inputs");
      Check(same(x.outputs, y.outputs), s + " outputs");
    }
  }

  void Metadatas() {
    if (!Check(a_.metadata.size() == b_.metadata.size(), "metadata count")) return;
    for (size_t i = 0; i < a_.metadata.size(); ++i) {
      Check(a_.metadata[i].name == b_.metadata[i].name, "metadata " + std::to_string(i) + " name");
      Check(SameBytes(a_.metadata[i].buffer, b_.metadata[i].buffer), "metadata '" + a_.metadata[i].name + "' bytes");
    }
    // metadata_buffer lists buffer indices, so compare what they refer to.
    bool same = a_.metadata_buffer.size() == b_.metadata_buffer.size();
    for (size_t i = 0; same && i < a_.metadata_buffer.size(); ++i)
      same = a_.metadata_buffer[i] >= 0 && b_.metadata_buffer[i] >= 0 &&
             SameBytes(static_cast<uint32_t>(a_.metadata_buffer[i]), static_cast<uint32_t>(b_.metadata_buffer[i]));
    Check(same || a_.metadata_buffer == b_.metadata_buffer, "metadata_buffer");
  }

  const Graph& a_;
  const Graph& b_;
  size_t max_;
  std::vector<std::string> out_;
};


// See DiffGraphsSemantic in compare.h.
class SemanticDiffer {
 public:
  SemanticDiffer(const Graph& a, const Graph& b, size_t max) : a_(a), b_(b), max_(max) {}

  std::vector<std::string> Run() {
    Check(a_.version == b_.version, "model version");
    Check(a_.description == b_.description, "model description");
    if (!Check(a_.subgraphs.size() == b_.subgraphs.size(), "subgraph count")) return out_;
    maps_.resize(a_.subgraphs.size());
    for (size_t i = 0; i < a_.subgraphs.size(); ++i) {
      maps_[i].a_to_b.assign(a_.subgraphs[i].tensors.size(), kUnmapped);
      maps_[i].b_to_a.assign(b_.subgraphs[i].tensors.size(), kUnmapped);
    }
    for (size_t i = 0; i < a_.subgraphs.size() && !Full(); ++i) Subgraphs(i);
    Signatures();
    Metadatas();
    return out_;
  }

 private:
  static constexpr int32_t kUnmapped = -2;
  struct TensorMapping {
    std::vector<int32_t> a_to_b, b_to_a;
  };

  bool Full() const { return out_.size() >= max_; }
  bool Check(bool ok, const std::string& what) {
    if (!ok && !Full()) out_.push_back(what + " differs");
    return ok;
  }

  static std::string Label(const Subgraph& sg, int32_t t) {
    if (t < 0 || static_cast<size_t>(t) >= sg.tensors.size()) return "tensor " + std::to_string(t);
    return "tensor '" + sg.tensors[t].name + "'";
  }

  // Pairs tensor ta of graph a with tb of graph b at a use site; the first pairing compares
  // content, later ones must agree with it (same wiring).
  void SameTensor(size_t si, int32_t ta, int32_t tb, const std::string& where) {
    const Subgraph& x = a_.subgraphs[si];
    const Subgraph& y = b_.subgraphs[si];
    if (ta == kNoTensor || tb == kNoTensor) {
      Check(ta == tb, where + " (omitted optional input)");
      return;
    }
    if (ta < 0 || tb < 0 || static_cast<size_t>(ta) >= x.tensors.size() || static_cast<size_t>(tb) >= y.tensors.size()) {
      Check(false, where + " tensor index");
      return;
    }
    TensorMapping& m = maps_[si];
    if (m.a_to_b[ta] == tb) return;
    if (m.a_to_b[ta] != kUnmapped || m.b_to_a[tb] != kUnmapped) {
      Check(false, where + " wiring (" + Label(x, ta) + " vs " + Label(y, tb) + ")");
      return;
    }
    m.a_to_b[ta] = tb;
    m.b_to_a[tb] = ta;
    const Tensor& p = x.tensors[ta];
    const Tensor& q = y.tensors[tb];
    const std::string t = where + " " + Label(x, ta);
    Check(p.name == q.name, t + " name");
    Check(p.shape == q.shape, t + " shape");
    Check(p.shape_signature == q.shape_signature, t + " shape_signature");
    Check(p.type == q.type, t + " type");
    Check(p.is_variable == q.is_variable, t + " is_variable");
    Check(p.has_rank == q.has_rank, t + " has_rank");
    Check(SameQuant(p.quant, q.quant), t + " quantization");
    Check(SparsityBytes(p) == SparsityBytes(q), t + " sparsity");
    Check(SameVariants(p, q), t + " variant tensors");
    Check(SameSpan(BufferBytes(a_, p.buffer), BufferBytes(b_, q.buffer)), t + " constant bytes");
  }

  void SameTensorLists(size_t si, const std::vector<int32_t>& x, const std::vector<int32_t>& y, const std::string& what) {
    if (!Check(x.size() == y.size(), what + " count")) return;
    for (size_t k = 0; k < x.size() && !Full(); ++k) SameTensor(si, x[k], y[k], what + " " + std::to_string(k));
  }

  void Subgraphs(size_t si) {
    const Subgraph& x = a_.subgraphs[si];
    const Subgraph& y = b_.subgraphs[si];
    const std::string sg = "subgraph " + std::to_string(si);
    Check(x.name == y.name, sg + " name");
    SameTensorLists(si, x.inputs, y.inputs, sg + " input");
    SameTensorLists(si, x.outputs, y.outputs, sg + " output");
    if (!Check(x.ops.size() == y.ops.size(), sg + " operator count")) return;
    for (size_t i = 0; i < x.ops.size() && !Full(); ++i) {
      const Operator& p = x.ops[i];
      const Operator& q = y.ops[i];
      const std::string o = sg + " op " + std::to_string(i) + " (" + p.type_name() + ")";
      if (!Check(p.code == q.code && p.custom_code == q.custom_code, o + " code")) continue;
      Check(p.version == q.version, o + " version");
      Check(OptionsBytes(p) == OptionsBytes(q), o + " options");
      Check(p.custom_options == q.custom_options && p.has_custom_options == q.has_custom_options, o + " custom options");
      Check(p.custom_options_format == q.custom_options_format, o + " custom options format");
      Check(p.mutating_variable_inputs == q.mutating_variable_inputs, o + " mutating_variable_inputs");
      SameTensorLists(si, p.inputs, q.inputs, o + " input");
      SameTensorLists(si, p.outputs, q.outputs, o + " output");
      SameTensorLists(si, p.intermediates, q.intermediates, o + " intermediate");
    }
  }

  void Signatures() {
    if (!Check(a_.signatures.size() == b_.signatures.size(), "signature count")) return;
    for (size_t i = 0; i < a_.signatures.size() && !Full(); ++i) {
      const auto& x = a_.signatures[i];
      const auto& y = b_.signatures[i];
      const std::string s = "signature '" + x.signature_key + "'";
      if (!Check(x.signature_key == y.signature_key && x.subgraph_index == y.subgraph_index, s)) continue;
      if (x.subgraph_index >= a_.subgraphs.size()) continue;
      auto same = [&](const std::vector<TensorMap>& p, const std::vector<TensorMap>& q, const std::string& what) {
        if (!Check(p.size() == q.size(), what + " count")) return;
        for (size_t k = 0; k < p.size(); ++k) {
          Check(p[k].name == q[k].name, what + " '" + p[k].name + "' name");
          SameTensor(x.subgraph_index, static_cast<int32_t>(p[k].tensor_index), static_cast<int32_t>(q[k].tensor_index),
                     what + " '" + p[k].name + "'");
        }
      };
      same(x.inputs, y.inputs, s + " input");
      same(x.outputs, y.outputs, s + " output");
    }
  }

  void Metadatas() {
    if (!Check(a_.metadata.size() == b_.metadata.size(), "metadata count")) return;
    for (size_t i = 0; i < a_.metadata.size(); ++i) {
      Check(a_.metadata[i].name == b_.metadata[i].name, "metadata " + std::to_string(i) + " name");
      Check(SameSpan(BufferBytes(a_, a_.metadata[i].buffer), BufferBytes(b_, b_.metadata[i].buffer)),
            "metadata '" + a_.metadata[i].name + "' bytes");
    }
  }

  const Graph& a_;
  const Graph& b_;
  size_t max_;
  std::vector<TensorMapping> maps_;
  std::vector<std::string> out_;
};

}  // namespace

std::vector<std::string> DiffGraphs(const Graph& a, const Graph& b, size_t max_diffs) {
  return Differ(a, b, max_diffs).Run();
}

std::vector<std::string> DiffGraphsSemantic(const Graph& a, const Graph& b, size_t max_diffs) {
  return SemanticDiffer(a, b, max_diffs).Run();
}

}  // namespace edgeopt
