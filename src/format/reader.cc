#include "format/reader.h"

#include <algorithm>
#include <limits>

#include "flatbuffers/flatbuffers.h"

namespace edgeopt {
namespace {

std::string TensorLabel(int index, const tflite::Tensor* t) {
  std::string s = "tensor " + std::to_string(index);
  if (t && t->name()) s += " '" + t->name()->str() + "'";
  return s;
}

template <typename T, typename V>
std::vector<T> ToVector(const flatbuffers::Vector<V>* v) {
  std::vector<T> out;
  if (!v) return out;
  out.reserve(v->size());
  for (auto x : *v) out.push_back(static_cast<T>(x));
  return out;
}

// Byte size a dense constant of this shape and type must have, or -1 if not fixed.
int64_t ExpectedBytes(DType type, int64_t elements) {
  if (type == DType::kString || type == DType::kResource || type == DType::kVariant) return -1;
  if (type == DType::kInt4) return (elements + 1) / 2;
  return elements * static_cast<int64_t>(DTypeSize(type));
}

class Reader {
 public:
  Reader(std::shared_ptr<const MappedFile> file, const ReadOptions& options)
      : file_(std::move(file)), options_(options) {}

  Expected<Graph> Read() {
    const std::string& path = file_->path();
    const size_t size = file_->size();
    if (size < 8) return InvalidModel("'" + path + "': file too small to be a .tflite model (" + std::to_string(size) + " bytes)");
    if (!flatbuffers::BufferHasIdentifier(file_->data(), tflite::ModelIdentifier())) {
      return InvalidModel("'" + path + "': not a .tflite model (missing the 'TFL3' file identifier)");
    }
    // The flatbuffer part of a >2 GB model is at the start; its buffers live after it.
    const size_t fb_size = std::min<size_t>(size, FLATBUFFERS_MAX_BUFFER_SIZE - 1);
    flatbuffers::Verifier::Options vopts;
    vopts.max_depth = 64;
    vopts.max_tables = 50'000'000;
    vopts.check_alignment = true;
    flatbuffers::Verifier verifier(file_->data(), fb_size, vopts);
    if (!tflite::VerifyModelBuffer(verifier)) {
      return InvalidModel("'" + path + "': corrupt or truncated .tflite file (flatbuffer verification failed)");
    }
    model_ = tflite::GetModel(file_->data());
    Status st = Convert();
    if (!st.ok()) return st.WithContext("'" + path + "'");
    graph_.source = file_;
    return std::move(graph_);
  }

 private:
  Status Convert() {
    graph_.version = model_->version();
    if (model_->description()) graph_.description = model_->description()->str();
    RETURN_IF_ERROR(ReadBuffers());
    RETURN_IF_ERROR(ReadOperatorCodes());
    if (!model_->subgraphs() || model_->subgraphs()->size() == 0) return InvalidModel("model has no subgraphs");
    for (uint32_t i = 0; i < model_->subgraphs()->size(); ++i) {
      Subgraph sg;
      RETURN_IF_ERROR_CTX(ReadSubgraph(model_->subgraphs()->Get(i), &sg), "subgraph " + std::to_string(i));
      graph_.subgraphs.push_back(std::move(sg));
    }
    RETURN_IF_ERROR(ReadMetadata());
    RETURN_IF_ERROR(ReadSignatures());
    return Status::Ok();
  }

  Status ReadBuffers() {
    graph_.buffers.clear();
    const auto* buffers = model_->buffers();
    if (!buffers || buffers->size() == 0) {
      graph_.buffers.emplace_back();  // a model may omit even the sentinel
      return Status::Ok();
    }
    graph_.buffers.reserve(buffers->size());
    for (uint32_t i = 0; i < buffers->size(); ++i) {
      const tflite::Buffer* b = buffers->Get(i);
      if (!b) {
        graph_.buffers.emplace_back();
        continue;
      }
      if (b->offset() > 1) {
        // Stored after the flatbuffer (models over 2 GB); offset is from the start of the file.
        uint64_t off = b->offset(), sz = b->size();
        if (off > file_->size() || sz > file_->size() - off) {
          return InvalidModel("buffer " + std::to_string(i) + ": data at offset " + std::to_string(off) + " size " +
                              std::to_string(sz) + " lies past the end of the file (" +
                              std::to_string(file_->size()) + " bytes)");
        }
        graph_.buffers.push_back(Buffer::View(file_->data() + off, sz));
      } else if (b->data() && b->data()->size() > 0) {
        graph_.buffers.push_back(Buffer::View(b->data()->data(), b->data()->size()));
      } else {
        graph_.buffers.emplace_back();
      }
    }
    return Status::Ok();
  }

  Status ReadOperatorCodes() {
    const auto* codes = model_->operator_codes();
    if (!codes) return Status::Ok();
    for (uint32_t i = 0; i < codes->size(); ++i) {
      const tflite::OperatorCode* c = codes->Get(i);
      OpCode oc;
      if (c) {
        // Files written before builtin_code existed only have the deprecated byte; newer ones put
        // PLACEHOLDER_FOR_GREATER_OP_CODES (127) there. The larger of the two is the real code.
        int32_t code = std::max<int32_t>(c->deprecated_builtin_code(), static_cast<int32_t>(c->builtin_code()));
        if (code < 0) return InvalidModel("operator code " + std::to_string(i) + " is negative (" + std::to_string(code) + ")");
        oc.code = static_cast<tflite::BuiltinOperator>(code);
        if (c->custom_code()) oc.custom = c->custom_code()->str();
        oc.version = c->version();
      }
      opcodes_.push_back(std::move(oc));
    }
    return Status::Ok();
  }

  Status CheckTensorIndex(int32_t t, size_t n, bool allow_missing, const std::string& what) {
    if (t == kNoTensor && allow_missing) return Status::Ok();
    if (t < 0 || static_cast<size_t>(t) >= n) {
      return InvalidModel(what + " refers to tensor " + std::to_string(t) + ", but the subgraph has " +
                          std::to_string(n) + " tensors");
    }
    return Status::Ok();
  }

  Status ReadQuantization(const tflite::QuantizationParameters* q, Tensor* t) {
    QuantParams p;
    p.scale = ToVector<float>(q->scale());
    p.zero_point = ToVector<int64_t>(q->zero_point());
    p.min = ToVector<float>(q->min());
    p.max = ToVector<float>(q->max());
    p.quantized_dimension = q->quantized_dimension();
    if (q->details_type() != tflite::QuantizationDetails_NONE && q->details()) {
      p.details.type = q->details_type();
      p.details.value = tflite::QuantizationDetailsUnion::UnPack(q->details(), q->details_type(), nullptr);
    }
    if (!p.zero_point.empty() && !p.scale.empty() && p.zero_point.size() != p.scale.size() && p.zero_point.size() != 1) {
      return InvalidModel("quantization has " + std::to_string(p.scale.size()) + " scales but " +
                          std::to_string(p.zero_point.size()) + " zero points");
    }
    for (float s : p.scale) {
      if (!(s >= 0.0f) || s == std::numeric_limits<float>::infinity())
        return InvalidModel("quantization scale " + std::to_string(s) + " is negative or not finite");
    }
    if (p.scale.size() > 1) {
      const int rank = static_cast<int>(t->shape.size());
      if (p.quantized_dimension < 0 || p.quantized_dimension >= rank) {
        return InvalidModel("per-axis quantization on dimension " + std::to_string(p.quantized_dimension) +
                            " of a rank-" + std::to_string(rank) + " tensor");
      }
      if (static_cast<int64_t>(p.scale.size()) != t->shape[p.quantized_dimension]) {
        return InvalidModel("per-axis quantization has " + std::to_string(p.scale.size()) + " scales for dimension " +
                            std::to_string(p.quantized_dimension) + " of size " +
                            std::to_string(t->shape[p.quantized_dimension]));
      }
    }
    t->quant = std::move(p);
    return Status::Ok();
  }

  Status ReadSparsity(const tflite::SparsityParameters* s, Tensor* t) {
    std::shared_ptr<tflite::SparsityParametersT> sp(s->UnPack());
    const size_t rank = t->shape.size();
    const size_t dims = sp->traversal_order.size();
    if (sp->dim_metadata.size() != dims) {
      return InvalidModel("sparsity has " + std::to_string(dims) + " traversal dimensions but " +
                          std::to_string(sp->dim_metadata.size()) + " dimension metadata entries");
    }
    if (dims < rank) return InvalidModel("sparsity describes fewer dimensions than the tensor has");
    for (int32_t d : sp->traversal_order)
      if (d < 0 || static_cast<size_t>(d) >= dims) return InvalidModel("sparsity traversal order out of range");
    for (int32_t d : sp->block_map)
      if (d < 0 || static_cast<size_t>(d) >= rank) return InvalidModel("sparsity block map out of range");
    if (sp->block_map.size() != dims - rank) return InvalidModel("sparsity block map size does not match its extra dimensions");
    for (const auto& dm : sp->dim_metadata) {
      if (!dm) return InvalidModel("sparsity dimension metadata missing");
      if (dm->format == tflite::DimensionType_SPARSE_CSR &&
          (dm->array_segments.type == tflite::SparseIndexVector_NONE || dm->array_indices.type == tflite::SparseIndexVector_NONE)) {
        return InvalidModel("sparse dimension without segment or index arrays");
      }
    }
    t->sparsity = std::move(sp);
    return Status::Ok();
  }

  Status ReadTensor(int index, const tflite::Tensor* ft, Tensor* t) {
    if (!ft) return InvalidModel("tensor " + std::to_string(index) + " is null");
    const std::string label = TensorLabel(index, ft);
    if (ft->name()) t->name = ft->name()->str();
    t->shape = ToVector<int32_t>(ft->shape());
    t->shape_signature = ToVector<int32_t>(ft->shape_signature());
    if (!IsValidDType(static_cast<int>(ft->type())))
      return InvalidModel(label + ": unknown tensor type " + std::to_string(static_cast<int>(ft->type())));
    t->type = static_cast<DType>(ft->type());
    if (static_cast<int>(t->shape.size()) > options_.max_rank)
      return InvalidModel(label + ": rank " + std::to_string(t->shape.size()) + " exceeds the limit of " + std::to_string(options_.max_rank));
    int64_t elements = 1;
    for (int32_t d : t->shape) {
      if (d < 0) return InvalidModel(label + ": negative dimension " + std::to_string(d) + " in its shape");
      if (d > 0 && elements > options_.max_tensor_elements / d)
        return InvalidModel(label + ": shape has more than " + std::to_string(options_.max_tensor_elements) + " elements");
      elements *= d;
    }
    if (!t->shape_signature.empty() && t->shape_signature.size() != t->shape.size())
      return InvalidModel(label + ": shape_signature rank differs from shape rank");
    for (int32_t d : t->shape_signature)
      if (d < -1) return InvalidModel(label + ": invalid dimension " + std::to_string(d) + " in shape_signature");
    t->buffer = ft->buffer();
    if (t->buffer >= graph_.buffers.size())
      return InvalidModel(label + ": buffer index " + std::to_string(t->buffer) + " out of range (model has " +
                          std::to_string(graph_.buffers.size()) + " buffers)");
    t->is_variable = ft->is_variable();
    t->has_rank = ft->has_rank();
    if (ft->quantization()) RETURN_IF_ERROR_CTX(ReadQuantization(ft->quantization(), t), label);
    if (ft->sparsity()) RETURN_IF_ERROR_CTX(ReadSparsity(ft->sparsity(), t), label);
    if (ft->variant_tensors()) {
      for (const auto* v : *ft->variant_tensors()) {
        if (!v) continue;
        Tensor::VariantSubType vt;
        vt.shape = ToVector<int32_t>(v->shape());
        if (!IsValidDType(static_cast<int>(v->type()))) return InvalidModel(label + ": unknown variant subtype");
        vt.type = static_cast<DType>(v->type());
        vt.has_rank = v->has_rank();
        t->variant_tensors.push_back(std::move(vt));
      }
    }
    t->external_buffer = ft->external_buffer();
    const size_t data_size = graph_.buffers[t->buffer].size();
    if (data_size > 0 && !t->sparsity) {
      int64_t need = ExpectedBytes(t->type, elements);
      if (need >= 0 && static_cast<int64_t>(data_size) < need) {
        return InvalidModel(label + ": constant data has " + std::to_string(data_size) + " bytes but its shape and type need " +
                            std::to_string(need));
      }
    }
    return Status::Ok();
  }

  Status ReadOperator(int index, const tflite::Operator* fo, size_t num_tensors, Operator* op) {
    const std::string label = "operator " + std::to_string(index);
    if (!fo) return InvalidModel(label + " is null");
    if (fo->opcode_index() >= opcodes_.size())
      return InvalidModel(label + ": opcode index " + std::to_string(fo->opcode_index()) + " out of range (model has " +
                          std::to_string(opcodes_.size()) + " operator codes)");
    const OpCode& oc = opcodes_[fo->opcode_index()];
    op->code = oc.code;
    op->custom_code = oc.custom;
    op->version = oc.version;
    const std::string full = label + " (" + op->type_name() + ")";
    op->inputs = ToVector<int32_t>(fo->inputs());
    op->outputs = ToVector<int32_t>(fo->outputs());
    op->intermediates = ToVector<int32_t>(fo->intermediates());
    for (int32_t t : op->inputs) RETURN_IF_ERROR(CheckTensorIndex(t, num_tensors, true, full + " input"));
    for (int32_t t : op->outputs) RETURN_IF_ERROR(CheckTensorIndex(t, num_tensors, false, full + " output"));
    for (int32_t t : op->intermediates) RETURN_IF_ERROR(CheckTensorIndex(t, num_tensors, false, full + " intermediate"));
    if (fo->builtin_options_type() != tflite::BuiltinOptions_NONE && fo->builtin_options()) {
      op->options.type = fo->builtin_options_type();
      op->options.value = tflite::BuiltinOptionsUnion::UnPack(fo->builtin_options(), fo->builtin_options_type(), nullptr);
    }
    if (fo->builtin_options_2_type() != tflite::BuiltinOptions2_NONE && fo->builtin_options_2()) {
      op->options2.type = fo->builtin_options_2_type();
      op->options2.value = tflite::BuiltinOptions2Union::UnPack(fo->builtin_options_2(), fo->builtin_options_2_type(), nullptr);
    }
    if (fo->custom_options()) {
      op->has_custom_options = true;
      op->custom_options = ToVector<uint8_t>(fo->custom_options());
    } else if (fo->large_custom_options_offset() > 1) {
      uint64_t off = fo->large_custom_options_offset(), sz = fo->large_custom_options_size();
      if (off > file_->size() || sz > file_->size() - off)
        return InvalidModel(full + ": custom options at offset " + std::to_string(off) + " lie past the end of the file");
      op->has_custom_options = true;
      op->custom_options.assign(file_->data() + off, file_->data() + off + sz);
    }
    op->custom_options_format = fo->custom_options_format();
    if (fo->mutating_variable_inputs()) {
      for (auto b : *fo->mutating_variable_inputs()) op->mutating_variable_inputs.push_back(b != 0);
    }
    op->debug_metadata_index = fo->debug_metadata_index();
    return Status::Ok();
  }

  Status ReadSubgraph(const tflite::SubGraph* fs, Subgraph* sg) {
    if (!fs) return InvalidModel("subgraph is null");
    if (fs->name()) sg->name = fs->name()->str();
    sg->debug_metadata_index = fs->debug_metadata_index();
    const size_t n = fs->tensors() ? fs->tensors()->size() : 0;
    sg->tensors.resize(n);
    for (uint32_t i = 0; i < n; ++i) RETURN_IF_ERROR(ReadTensor(static_cast<int>(i), fs->tensors()->Get(i), &sg->tensors[i]));
    sg->inputs = ToVector<int32_t>(fs->inputs());
    sg->outputs = ToVector<int32_t>(fs->outputs());
    for (int32_t t : sg->inputs) RETURN_IF_ERROR(CheckTensorIndex(t, n, false, "subgraph input"));
    for (int32_t t : sg->outputs) RETURN_IF_ERROR(CheckTensorIndex(t, n, false, "subgraph output"));
    const size_t nops = fs->operators() ? fs->operators()->size() : 0;
    sg->ops.resize(nops);
    for (uint32_t i = 0; i < nops; ++i)
      RETURN_IF_ERROR(ReadOperator(static_cast<int>(i), fs->operators()->Get(i), n, &sg->ops[i]));
    return Status::Ok();
  }

  Status ReadMetadata() {
    if (model_->metadata()) {
      for (const auto* m : *model_->metadata()) {
        if (!m) continue;
        Metadata md;
        if (m->name()) md.name = m->name()->str();
        md.buffer = m->buffer();
        if (md.buffer >= graph_.buffers.size())
          return InvalidModel("metadata '" + md.name + "' refers to buffer " + std::to_string(md.buffer) + ", out of range");
        graph_.metadata.push_back(std::move(md));
      }
    }
    graph_.metadata_buffer = ToVector<int32_t>(model_->metadata_buffer());
    if (model_->external_buffer_groups()) {
      for (const auto* g : *model_->external_buffer_groups())
        graph_.external_buffer_groups.push_back(g && g->name() ? g->name()->str() : std::string());
    }
    if (model_->external_buffers()) {
      for (const auto* e : *model_->external_buffers()) {
        Graph::ExternalBuffer eb;
        if (e) {
          eb.id = e->id();
          eb.group = e->group();
          eb.offset = e->offset();
          eb.length = e->length();
          if (e->packing()) eb.packing = e->packing()->str();
        }
        graph_.external_buffers.push_back(std::move(eb));
      }
    }
    for (int32_t b : graph_.metadata_buffer)
      if (b < 0 || static_cast<size_t>(b) >= graph_.buffers.size())
        return InvalidModel("metadata_buffer entry " + std::to_string(b) + " out of range");
    return Status::Ok();
  }

  Status ReadSignatures() {
    if (!model_->signature_defs()) return Status::Ok();
    for (const auto* s : *model_->signature_defs()) {
      if (!s) continue;
      SignatureDef sig;
      if (s->signature_key()) sig.signature_key = s->signature_key()->str();
      sig.subgraph_index = s->subgraph_index();
      const std::string label = "signature '" + sig.signature_key + "'";
      if (sig.subgraph_index >= graph_.subgraphs.size())
        return InvalidModel(label + " refers to subgraph " + std::to_string(sig.subgraph_index) + ", out of range");
      const size_t n = graph_.subgraphs[sig.subgraph_index].tensors.size();
      auto read_maps = [&](const auto* maps, std::vector<TensorMap>* out) -> Status {
        if (!maps) return Status::Ok();
        for (const auto* m : *maps) {
          if (!m) continue;
          TensorMap tm;
          if (m->name()) tm.name = m->name()->str();
          tm.tensor_index = m->tensor_index();
          if (tm.tensor_index >= n) return InvalidModel(label + " entry '" + tm.name + "' refers to tensor " + std::to_string(tm.tensor_index) + ", out of range");
          out->push_back(std::move(tm));
        }
        return Status::Ok();
      };
      RETURN_IF_ERROR(read_maps(s->inputs(), &sig.inputs));
      RETURN_IF_ERROR(read_maps(s->outputs(), &sig.outputs));
      graph_.signatures.push_back(std::move(sig));
    }
    return Status::Ok();
  }

  struct OpCode {
    tflite::BuiltinOperator code = tflite::BuiltinOperator_ADD;
    std::string custom;
    int32_t version = 1;
  };

  std::shared_ptr<const MappedFile> file_;
  ReadOptions options_;
  const tflite::Model* model_ = nullptr;
  std::vector<OpCode> opcodes_;
  Graph graph_;
};

}  // namespace

Expected<Graph> ReadModel(std::shared_ptr<const MappedFile> file, const ReadOptions& options) {
  return Reader(std::move(file), options).Read();
}

Expected<Graph> ReadModelFile(const std::string& path, const ReadOptions& options) {
  ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  return ReadModel(std::move(file), options);
}

Expected<Graph> ReadModelBytes(std::span<const uint8_t> bytes, const std::string& name, const ReadOptions& options) {
  if (bytes.empty()) return InvalidModel("'" + name + "' is empty (0 bytes)");
  return ReadModel(MappedFile::FromBytes(bytes, name), options);
}

}  // namespace edgeopt
