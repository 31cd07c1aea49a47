#include "format/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "flatbuffers/flatbuffers.h"
#include "format/mapped_file.h"

namespace edgeopt {
namespace {

constexpr size_t kBufferAlignment = 16;
// deprecated_builtin_code is a byte; larger codes put this placeholder there.
constexpr int32_t kPlaceholderForGreaterOpCodes = 127;

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

class Writer {
 public:
  Writer(const Graph& g, const WriteOptions& o) : g_(g), opts_(o), fbb_(1 << 20) {}

  Expected<std::vector<uint8_t>> Run() {
    uint64_t total = 0;
    for (const auto& b : g_.buffers) total += b.size();
    external_ = total > opts_.external_buffers_threshold;

    std::vector<Offset<tflite::SubGraph>> subgraphs;
    for (size_t i = 0; i < g_.subgraphs.size(); ++i) {
      auto sg = WriteSubgraph(g_.subgraphs[i]);
      if (!sg.ok()) return sg.status().WithContext("subgraph " + std::to_string(i));
      subgraphs.push_back(*sg);
    }
    auto opcodes = WriteOpcodes();
    auto buffers = WriteBuffers();
    std::vector<Offset<tflite::Metadata>> metadata;
    for (const auto& m : g_.metadata)
      metadata.push_back(tflite::CreateMetadata(fbb_, fbb_.CreateString(m.name), m.buffer));
    std::vector<Offset<tflite::SignatureDef>> sigs;
    for (const auto& s : g_.signatures) sigs.push_back(WriteSignature(s));

    auto description = fbb_.CreateString(g_.description);
    auto sg_vec = fbb_.CreateVector(subgraphs);
    auto md_buf = g_.metadata_buffer.empty() ? 0 : fbb_.CreateVector(g_.metadata_buffer);
    auto md_vec = metadata.empty() ? 0 : fbb_.CreateVector(metadata);
    auto sig_vec = sigs.empty() ? 0 : fbb_.CreateVector(sigs);
    Offset<flatbuffers::Vector<Offset<tflite::ExternalBufferGroup>>> ext_groups = 0;
    if (!g_.external_buffer_groups.empty()) {
      std::vector<Offset<tflite::ExternalBufferGroup>> v;
      for (const auto& n : g_.external_buffer_groups) v.push_back(tflite::CreateExternalBufferGroup(fbb_, fbb_.CreateString(n)));
      ext_groups = fbb_.CreateVector(v);
    }
    Offset<flatbuffers::Vector<Offset<tflite::ExternalBuffer>>> ext_bufs = 0;
    if (!g_.external_buffers.empty()) {
      std::vector<Offset<tflite::ExternalBuffer>> v;
      for (const auto& e : g_.external_buffers)
        v.push_back(tflite::CreateExternalBuffer(fbb_, e.id, e.group, e.offset, e.length,
                                                 e.packing.empty() ? 0 : fbb_.CreateString(e.packing)));
      ext_bufs = fbb_.CreateVector(v);
    }
    tflite::ModelBuilder mb(fbb_);
    mb.add_version(g_.version);
    mb.add_operator_codes(opcodes);
    mb.add_subgraphs(sg_vec);
    mb.add_description(description);
    mb.add_buffers(buffers);
    if (!md_buf.IsNull()) mb.add_metadata_buffer(md_buf);
    if (!md_vec.IsNull()) mb.add_metadata(md_vec);
    if (!sig_vec.IsNull()) mb.add_signature_defs(sig_vec);
    if (!ext_groups.IsNull()) mb.add_external_buffer_groups(ext_groups);
    if (!ext_bufs.IsNull()) mb.add_external_buffers(ext_bufs);
    fbb_.Finish(mb.Finish(), tflite::ModelIdentifier());

    std::vector<uint8_t> out(fbb_.GetBufferPointer(), fbb_.GetBufferPointer() + fbb_.GetSize());
    if (external_) AppendExternalBuffers(&out);
    return out;
  }

 private:
  using OpKey = std::tuple<int32_t, std::string, int32_t>;

  uint32_t OpcodeIndex(const Operator& op) {
    OpKey key{static_cast<int32_t>(op.code), op.is_custom() ? op.custom_code : std::string(), op.version};
    auto it = opcode_index_.find(key);
    if (it != opcode_index_.end()) return it->second;
    uint32_t idx = static_cast<uint32_t>(opcode_order_.size());
    opcode_index_.emplace(key, idx);
    opcode_order_.push_back(key);
    return idx;
  }

  Offset<flatbuffers::Vector<Offset<tflite::OperatorCode>>> WriteOpcodes() {
    std::vector<Offset<tflite::OperatorCode>> codes;
    for (const auto& [code, custom, version] : opcode_order_) {
      auto custom_off = custom.empty() ? 0 : fbb_.CreateString(custom);
      tflite::OperatorCodeBuilder b(fbb_);
      b.add_deprecated_builtin_code(static_cast<int8_t>(std::min(code, kPlaceholderForGreaterOpCodes)));
      if (!custom_off.IsNull()) b.add_custom_code(custom_off);
      b.add_version(version);
      b.add_builtin_code(static_cast<tflite::BuiltinOperator>(code));
      codes.push_back(b.Finish());
    }
    return fbb_.CreateVector(codes);
  }

  Offset<flatbuffers::Vector<Offset<tflite::Buffer>>> WriteBuffers() {
    std::vector<Offset<tflite::Buffer>> bufs;
    bufs.reserve(g_.buffers.size());
    for (size_t i = 0; i < g_.buffers.size(); ++i) {
      auto bytes = g_.buffers[i].bytes();
      if (bytes.empty()) {
        bufs.push_back(tflite::CreateBuffer(fbb_));
      } else if (external_) {
        // Placeholders (non-default so the fields are stored) patched once positions are known.
        bufs.push_back(tflite::CreateBuffer(fbb_, 0, 1, 1));
        external_indices_.push_back(i);
      } else {
        fbb_.ForceVectorAlignment(bytes.size(), sizeof(uint8_t), kBufferAlignment);
        auto data = fbb_.CreateVector(bytes.data(), bytes.size());
        bufs.push_back(tflite::CreateBuffer(fbb_, data));
      }
    }
    return fbb_.CreateVector(bufs);
  }

  void AppendExternalBuffers(std::vector<uint8_t>* out) {
    tflite::Model* model = tflite::GetMutableModel(out->data());
    auto* buffers = model->mutable_buffers();
    std::vector<std::pair<uint64_t, uint64_t>> placed;
    uint64_t pos = out->size();
    for (size_t i : external_indices_) {
      pos = (pos + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
      placed.emplace_back(pos, g_.buffers[i].size());
      pos += g_.buffers[i].size();
    }
    for (size_t k = 0; k < external_indices_.size(); ++k) {
      auto* b = buffers->GetMutableObject(static_cast<flatbuffers::uoffset_t>(external_indices_[k]));
      b->mutate_offset(placed[k].first);
      b->mutate_size(placed[k].second);
    }
    out->resize(pos, 0);
    for (size_t k = 0; k < external_indices_.size(); ++k) {
      auto bytes = g_.buffers[external_indices_[k]].bytes();
      std::memcpy(out->data() + placed[k].first, bytes.data(), bytes.size());
    }
  }

  // Identical scalar vectors (shapes, quantization scales and zero points: per-channel zero
  // points are all-zero vectors repeated for every weight and bias) are written once and
  // referenced from every table that holds them; a FlatBuffer may share an offset (the verifier
  // checks each reference, not that it is unique).
  template <typename T>
  Offset<flatbuffers::Vector<T>> SharedVector(const std::vector<T>& v) {
    constexpr char kind = std::is_same_v<T, float> ? 'f' : std::is_same_v<T, int64_t> ? 'l' : std::is_same_v<T, int32_t> ? 'i' : '?';
    static_assert(kind != '?', "SharedVector: float, int32 or int64 elements");
    std::string key(1, kind);
    if (!v.empty()) key.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    auto it = shared_vectors_.find(key);
    if (it != shared_vectors_.end()) return Offset<flatbuffers::Vector<T>>(it->second);
    auto off = fbb_.CreateVector(v);
    shared_vectors_.emplace(std::move(key), off.o);
    return off;
  }

  Offset<tflite::QuantizationParameters> WriteQuant(const QuantParams& q) {
    auto vmin = q.min.empty() ? 0 : SharedVector(q.min);
    auto vmax = q.max.empty() ? 0 : SharedVector(q.max);
    auto vscale = q.scale.empty() ? 0 : SharedVector(q.scale);
    auto vzp = q.zero_point.empty() ? 0 : SharedVector(q.zero_point);
    Offset<void> details = q.details.Pack(fbb_);
    return tflite::CreateQuantizationParameters(fbb_, vmin, vmax, vscale, vzp, q.details.type, details,
                                                q.quantized_dimension);
  }

  Offset<tflite::Tensor> WriteTensor(const Tensor& t) {
    auto shape = SharedVector(t.shape);
    auto name = fbb_.CreateString(t.name);
    auto quant = t.quant ? WriteQuant(*t.quant) : 0;
    auto sparsity = t.sparsity ? tflite::CreateSparsityParameters(fbb_, t.sparsity.get()) : 0;
    auto sig = t.shape_signature.empty() ? 0 : SharedVector(t.shape_signature);
    Offset<flatbuffers::Vector<Offset<tflite::VariantSubType>>> variants = 0;
    if (!t.variant_tensors.empty()) {
      std::vector<Offset<tflite::VariantSubType>> v;
      for (const auto& vt : t.variant_tensors)
        v.push_back(tflite::CreateVariantSubType(fbb_, fbb_.CreateVector(vt.shape),
                                                 static_cast<tflite::TensorType>(vt.type), vt.has_rank));
      variants = fbb_.CreateVector(v);
    }
    tflite::TensorBuilder b(fbb_);
    b.add_shape(shape);
    b.add_type(static_cast<tflite::TensorType>(t.type));
    b.add_buffer(t.buffer);
    b.add_name(name);
    if (!quant.IsNull()) b.add_quantization(quant);
    b.add_is_variable(t.is_variable);
    if (!sparsity.IsNull()) b.add_sparsity(sparsity);
    if (!sig.IsNull()) b.add_shape_signature(sig);
    b.add_has_rank(t.has_rank);
    if (!variants.IsNull()) b.add_variant_tensors(variants);
    b.add_external_buffer(t.external_buffer);
    return b.Finish();
  }

  Expected<Offset<tflite::Operator>> WriteOperator(const Operator& op) {
    uint32_t opcode = OpcodeIndex(op);
    auto inputs = fbb_.CreateVector(op.inputs);
    auto outputs = fbb_.CreateVector(op.outputs);
    auto options = op.options.Pack(fbb_);
    auto options2 = op.options2.Pack(fbb_);
    auto custom = op.has_custom_options ? fbb_.CreateVector(op.custom_options) : 0;
    Offset<flatbuffers::Vector<uint8_t>> mutating = 0;
    if (!op.mutating_variable_inputs.empty()) {
      std::vector<uint8_t> m(op.mutating_variable_inputs.begin(), op.mutating_variable_inputs.end());
      mutating = fbb_.CreateVector(m);
    }
    auto intermediates = op.intermediates.empty() ? 0 : fbb_.CreateVector(op.intermediates);
    tflite::OperatorBuilder b(fbb_);
    b.add_opcode_index(opcode);
    b.add_inputs(inputs);
    b.add_outputs(outputs);
    if (op.options.type != tflite::BuiltinOptions_NONE) {
      b.add_builtin_options_type(op.options.type);
      b.add_builtin_options(options);
    }
    if (!custom.IsNull()) b.add_custom_options(custom);
    b.add_custom_options_format(op.custom_options_format);
    if (!mutating.IsNull()) b.add_mutating_variable_inputs(mutating);
    if (!intermediates.IsNull()) b.add_intermediates(intermediates);
    if (op.options2.type != tflite::BuiltinOptions2_NONE) {
      b.add_builtin_options_2_type(op.options2.type);
      b.add_builtin_options_2(options2);
    }
    b.add_debug_metadata_index(op.debug_metadata_index);
    return b.Finish();
  }

  Expected<Offset<tflite::SubGraph>> WriteSubgraph(const Subgraph& sg) {
    std::vector<Offset<tflite::Tensor>> tensors;
    tensors.reserve(sg.tensors.size());
    for (size_t i = 0; i < sg.tensors.size(); ++i) {
      const Tensor& t = sg.tensors[i];
      if (t.buffer >= g_.buffers.size())
        return InvalidArgument("tensor " + std::to_string(i) + " '" + t.name + "' refers to buffer " +
                               std::to_string(t.buffer) + ", out of range");
      if (t.quant && t.quant->details.type != tflite::QuantizationDetails_NONE && !t.quant->details.value)
        return InvalidArgument("tensor " + std::to_string(i) + " '" + t.name + "' has a quantization details type but no details");
      tensors.push_back(WriteTensor(t));
    }
    std::vector<Offset<tflite::Operator>> ops;
    for (size_t i = 0; i < sg.ops.size(); ++i) {
      const Operator& op = sg.ops[i];
      auto check = [&](int32_t t, bool optional) {
        return (optional && t == kNoTensor) || (t >= 0 && static_cast<size_t>(t) < sg.tensors.size());
      };
      for (int32_t t : op.inputs)
        if (!check(t, true)) return InvalidArgument("operator " + std::to_string(i) + " input tensor " + std::to_string(t) + " out of range");
      for (int32_t t : op.outputs)
        if (!check(t, false)) return InvalidArgument("operator " + std::to_string(i) + " output tensor " + std::to_string(t) + " out of range");
      // Packing a union whose type is set but whose value is not would dereference null.
      if ((op.options.type != tflite::BuiltinOptions_NONE && !op.options.value) ||
          (op.options2.type != tflite::BuiltinOptions2_NONE && !op.options2.value))
        return InvalidArgument("operator " + std::to_string(i) + " (" + op.type_name() + ") has an options type but no options");
      ASSIGN_OR_RETURN(auto off, WriteOperator(op));
      ops.push_back(off);
    }
    auto t_vec = fbb_.CreateVector(tensors);
    auto in_vec = fbb_.CreateVector(sg.inputs);
    auto out_vec = fbb_.CreateVector(sg.outputs);
    auto op_vec = fbb_.CreateVector(ops);
    auto name = sg.name.empty() ? 0 : fbb_.CreateString(sg.name);
    tflite::SubGraphBuilder b(fbb_);
    b.add_tensors(t_vec);
    b.add_inputs(in_vec);
    b.add_outputs(out_vec);
    b.add_operators(op_vec);
    if (!name.IsNull()) b.add_name(name);
    b.add_debug_metadata_index(sg.debug_metadata_index);
    return b.Finish();
  }

  Offset<tflite::SignatureDef> WriteSignature(const SignatureDef& s) {
    auto maps = [&](const std::vector<TensorMap>& v) {
      std::vector<Offset<tflite::TensorMap>> out;
      for (const auto& m : v) out.push_back(tflite::CreateTensorMap(fbb_, fbb_.CreateString(m.name), m.tensor_index));
      return fbb_.CreateVector(out);
    };
    auto in = maps(s.inputs);
    auto out = maps(s.outputs);
    auto key = fbb_.CreateString(s.signature_key);
    tflite::SignatureDefBuilder b(fbb_);
    b.add_inputs(in);
    b.add_outputs(out);
    b.add_signature_key(key);
    b.add_subgraph_index(s.subgraph_index);
    return b.Finish();
  }

  const Graph& g_;
  WriteOptions opts_;
  FlatBufferBuilder fbb_;
  bool external_ = false;
  std::vector<size_t> external_indices_;
  std::map<OpKey, uint32_t> opcode_index_;
  std::vector<OpKey> opcode_order_;
  std::unordered_map<std::string, flatbuffers::uoffset_t> shared_vectors_;
};

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

Expected<std::vector<uint8_t>> SerializeModel(const Graph& graph, const WriteOptions& options) {
  if (graph.subgraphs.empty()) return InvalidArgument("cannot write a model without subgraphs");
  if (graph.buffers.empty()) return InvalidArgument("graph lacks the empty sentinel buffer 0");
  return Writer(graph, options).Run();
}

Status WriteFileAtomically(const std::string& path, const void* data, size_t size) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create '" + tmp + "': " + std::strerror(errno));
  const auto* p = static_cast<const uint8_t*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return IoError("cannot write '" + tmp + "': " + std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError("cannot flush '" + tmp + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
  return Status::Ok();
}

Status WriteModelFile(const Graph& graph, const std::string& path, const WriteOptions& options) {
  if (graph.source && graph.source->is_mapped() && SameFile(graph.source->path(), path))
    return InvalidArgument("refusing to overwrite the input model '" + path + "'; choose another output path");
  ASSIGN_OR_RETURN(auto bytes, SerializeModel(graph, options));
  return WriteFileAtomically(path, bytes.data(), bytes.size());
}

}  // namespace edgeopt
