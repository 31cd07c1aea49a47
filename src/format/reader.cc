#include "format/reader.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "flatbuffers/flatbuffers.h"

namespace edgeopt {
namespace {

// Alignment typed access to a constant of this type needs (Buffer::as<T>).
size_t AlignmentOf(DType type) {
  switch (type) {
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kComplex128: return 8;
    case DType::kFloat32:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kComplex64: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
    case DType::kUInt16: return 2;
    default: return 1;
  }
}

// Counts what converting a flatbuffer materializes: one per table reached, one per vector element
// and string byte, following every reference each time it is reached. Flatbuffers may share a
// table or vector between many parents, so a few kilobytes can describe terabytes once expanded;
// the Verifier bounds only how many tables it visits, not how many elements shared vectors hold.
// Buffer data is skipped (it stays a view into the file). Every read is bounds-checked on its
// own, so fields the Verifier skips (deprecated ones) cannot lead outside the buffer.
class ExpansionCounter {
 public:
  ExpansionCounter(const uint8_t* data, size_t size, uint64_t limit) : data_(data), size_(size), limit_(limit) {}

  // False when the count exceeds the limit (or a reference leads outside the buffer).
  bool CountRoot() {
    uint32_t root;
    return Read(0, &root) && Table(root, tflite::ModelTypeTable(), 0);
  }
  uint64_t count() const { return count_; }

 private:
  template <typename T>
  bool Read(uint64_t pos, T* out) const {
    if (pos > size_ || sizeof(T) > size_ - pos) return false;
    std::memcpy(out, data_ + pos, sizeof(T));
    return true;
  }
  // Follows the uoffset stored at `pos`.
  bool Deref(uint64_t pos, uint64_t* target) const {
    uint32_t off;
    if (!Read(pos, &off)) return false;
    *target = pos + off;
    return *target < size_;
  }
  bool Charge(uint64_t n) {
    count_ += n;
    return count_ <= limit_;
  }

  bool Table(uint64_t pos, const flatbuffers::TypeTable* tt, int depth) {
    if (depth > 64 || !Charge(1)) return false;
    if (tt == tflite::BufferTypeTable()) return true;  // data stays a view
    int32_t soff;
    if (!Read(pos, &soff)) return false;
    const int64_t vt = static_cast<int64_t>(pos) - soff;
    uint16_t vsize;
    if (vt < 0 || !Read(static_cast<uint64_t>(vt), &vsize)) return false;
    int utype_field = -1;
    uint8_t utype = 0;
    for (size_t i = 0; i < tt->num_elems; ++i) {
      const flatbuffers::TypeCode tc = tt->type_codes[i];
      const uint64_t voff = 4 + 2 * i;
      uint16_t fo = 0;
      if (voff + 2 > vsize || !Read(static_cast<uint64_t>(vt) + voff, &fo) || fo == 0) continue;
      const uint64_t field = pos + fo;
      const auto base = static_cast<flatbuffers::ElementaryType>(tc.base_type);
      const flatbuffers::TypeTable* ref = tc.sequence_ref >= 0 ? tt->type_refs[tc.sequence_ref]() : nullptr;
      if (base == flatbuffers::ET_UTYPE && !tc.is_repeating) {
        if (!Read(field, &utype)) return false;
        utype_field = static_cast<int>(i);
        continue;
      }
      if (tc.is_repeating) {
        uint64_t vec;
        uint32_t len;
        if (!Deref(field, &vec) || !Read(vec, &len) || !Charge(len)) return false;
        if (base == flatbuffers::ET_STRING) {
          for (uint32_t k = 0; k < len; ++k)
            if (!String(vec + 4 + 4 * uint64_t{k})) return false;
        } else if (base == flatbuffers::ET_SEQUENCE && ref && ref->st == flatbuffers::ST_TABLE) {
          for (uint32_t k = 0; k < len; ++k) {
            uint64_t elem;
            if (!Deref(vec + 4 + 4 * uint64_t{k}, &elem) || !Table(elem, ref, depth + 1)) return false;
          }
        }
        continue;
      }
      if (base == flatbuffers::ET_STRING) {
        if (!String(field)) return false;
      } else if (base == flatbuffers::ET_SEQUENCE && ref && ref->st == flatbuffers::ST_TABLE) {
        uint64_t sub;
        if (!Deref(field, &sub) || !Table(sub, ref, depth + 1)) return false;
      } else if (base == flatbuffers::ET_SEQUENCE && ref && ref->st == flatbuffers::ST_UNION) {
        // The union's type is the field just before it; unknown members are rejected later.
        if (utype_field != static_cast<int>(i) - 1 || utype == 0 || utype >= ref->num_elems) continue;
        const flatbuffers::TypeCode mc = ref->type_codes[utype];
        if (mc.base_type != flatbuffers::ET_SEQUENCE || mc.sequence_ref < 0) continue;
        const flatbuffers::TypeTable* member = ref->type_refs[mc.sequence_ref]();
        uint64_t sub;
        if (member->st == flatbuffers::ST_TABLE && (!Deref(field, &sub) || !Table(sub, member, depth + 1)))
          return false;
      }
    }
    return true;
  }

  // The string whose uoffset is stored at `pos`.
  bool String(uint64_t pos) {
    uint64_t s;
    uint32_t len;
    return Deref(pos, &s) && Read(s, &len) && Charge(len);
  }

  const uint8_t* data_;
  size_t size_;
  uint64_t limit_;
  uint64_t count_ = 0;
};

// Values of a sparse index vector (any of its storage types); false if the type is unknown.
bool SparseIndexValues(const tflite::SparseIndexVectorUnion& u, std::vector<int64_t>* out) {
  out->clear();
  if (const auto* v = u.AsInt32Vector()) {
    out->assign(v->values.begin(), v->values.end());
  } else if (const auto* v16 = u.AsUint16Vector()) {
    out->assign(v16->values.begin(), v16->values.end());
  } else if (const auto* v8 = u.AsUint8Vector()) {
    out->assign(v8->values.begin(), v8->values.end());
  } else {
    return false;
  }
  return true;
}

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
    // Every table a well-formed file holds takes at least 8 bytes (its vtable offset and the
    // reference to it), so more visits than this mean tables shared between many parents.
    vopts.max_tables = std::min<size_t>(50'000'000, fb_size / 4 + 1024);
    vopts.check_alignment = true;
    flatbuffers::Verifier verifier(file_->data(), fb_size, vopts);
    if (!tflite::VerifyModelBuffer(verifier)) {
      return InvalidModel("'" + path + "': corrupt or truncated .tflite file (flatbuffer verification failed)");
    }
    // Each element of a well-formed file takes at least a byte of it; allow generous sharing.
    const uint64_t expansion_limit = 4 * uint64_t{fb_size} + (uint64_t{1} << 20);
    ExpansionCounter counter(file_->data(), fb_size, expansion_limit);
    if (!counter.CountRoot()) {
      return InvalidModel("'" + path + "': the flatbuffer expands to more than " + std::to_string(expansion_limit) +
                          " elements when read (tables or vectors shared by many parents); refusing to read it");
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
        // A custom code on a builtin op means nothing (and would not survive a write).
        if (c->custom_code() && oc.code == tflite::BuiltinOperator_CUSTOM) oc.custom = c->custom_code()->str();
        oc.version = c->version();
      }
      opcodes_.push_back(std::move(oc));
    }
    return Status::Ok();
  }

  Status CheckTensorIndex(int32_t t, size_t n, bool allow_missing, const std::string& what) {
    if (t == kNoTensor && allow_missing) return Status::Ok();
    if (t < 0 || static_cast<size_t>(t) >= n) {
      return InvalidModel(what + " refers to tensor " + std::to_string(t) + ", out of range (the subgraph has " +
                          std::to_string(n) + " tensors)");
    }
    return Status::Ok();
  }

  Status ReadQuantization(const tflite::QuantizationParameters* q, size_t num_tensors, Tensor* t) {
    QuantParams p;
    p.scale = ToVector<float>(q->scale());
    p.zero_point = ToVector<int64_t>(q->zero_point());
    p.min = ToVector<float>(q->min());
    p.max = ToVector<float>(q->max());
    p.quantized_dimension = q->quantized_dimension();
    if (q->details_type() != tflite::QuantizationDetails_NONE && q->details()) {
      if (q->details_type() > tflite::QuantizationDetails_MAX)
        return InvalidModel("unknown quantization details type " + std::to_string(q->details_type()));
      p.details.type = q->details_type();
      p.details.value = tflite::QuantizationDetailsUnion::UnPack(q->details(), q->details_type(), nullptr);
    }
    if (p.zero_point.size() > 1 && p.zero_point.size() != p.scale.size()) {
      return InvalidModel("quantization has " + std::to_string(p.scale.size()) + " scales but " +
                          std::to_string(p.zero_point.size()) + " zero points");
    }
    for (float s : p.scale) {
      if (!(s >= 0.0f) || s == std::numeric_limits<float>::infinity())
        return InvalidModel("quantization scale " + std::to_string(s) + " is negative or not finite");
    }
    const int rank = static_cast<int>(t->shape.size());
    if (p.scale.size() > 1) {
      if (p.quantized_dimension < 0 || p.quantized_dimension >= rank) {
        return InvalidModel("per-axis quantization on dimension " + std::to_string(p.quantized_dimension) +
                            " of a rank-" + std::to_string(rank) + " tensor is out of range");
      }
      if (static_cast<int64_t>(p.scale.size()) != t->shape[p.quantized_dimension]) {
        return InvalidModel("per-axis quantization has " + std::to_string(p.scale.size()) + " scales for dimension " +
                            std::to_string(p.quantized_dimension) + " of size " +
                            std::to_string(t->shape[p.quantized_dimension]));
      }
    }
    // Block-wise / multi-axis schemes keep their scales and zero points in other tensors.
    auto check_tensor = [&](const char* what, int32_t index, bool optional) -> Status {
      if ((optional && index == -1) || (index >= 0 && static_cast<size_t>(index) < num_tensors)) return Status::Ok();
      return InvalidModel(std::string("quantization ") + what + " tensor " + std::to_string(index) +
                          " out of range (the subgraph has " + std::to_string(num_tensors) + " tensors)");
    };
    if (const auto* bw = p.details.AsBlockwiseQuantization()) {
      RETURN_IF_ERROR(check_tensor("scales", bw->scales, false));
      RETURN_IF_ERROR(check_tensor("zero points", bw->zero_points, true));
    } else if (const auto* ma = p.details.AsMultiAxisQuantization()) {
      RETURN_IF_ERROR(check_tensor("scales", ma->scales, false));
      RETURN_IF_ERROR(check_tensor("zero points", ma->zero_points, true));
      for (int32_t d : ma->quantized_dimensions)
        if (d < 0 || d >= rank)
          return InvalidModel("multi-axis quantization on dimension " + std::to_string(d) + " of a rank-" +
                              std::to_string(rank) + " tensor is out of range");
    }
    t->quant = std::move(p);
    return Status::Ok();
  }

  // Checks a sparse tensor's encoding the way LiteRT's verifier does (and a little more), so a
  // densifier can trust it: returns the number of values the tensor stores in *stored.
  Status ReadSparsity(const tflite::SparsityParameters* s, Tensor* t, int64_t* stored) {
    std::shared_ptr<tflite::SparsityParametersT> sp(s->UnPack());
    const size_t rank = t->shape.size();
    const size_t dims = sp->traversal_order.size();
    if (sp->dim_metadata.size() != dims) {
      return InvalidModel("sparsity has " + std::to_string(dims) + " traversal dimensions but " +
                          std::to_string(sp->dim_metadata.size()) + " dimension metadata entries");
    }
    if (dims < rank)
      return InvalidModel("sparsity describes " + std::to_string(dims) + " dimensions, fewer than the tensor's rank " +
                          std::to_string(rank));
    std::vector<char> seen(dims, 0);
    for (int32_t d : sp->traversal_order) {
      if (d < 0 || static_cast<size_t>(d) >= dims)
        return InvalidModel("sparsity traversal order entry " + std::to_string(d) + " out of range [0, " +
                            std::to_string(dims) + ")");
      if (seen[d]++) return InvalidModel("sparsity traversal order repeats dimension " + std::to_string(d));
    }
    if (sp->block_map.size() != dims - rank)
      return InvalidModel("sparsity block map has " + std::to_string(sp->block_map.size()) + " entries for " +
                          std::to_string(dims - rank) + " block dimensions");
    for (int32_t d : sp->block_map)
      if (d < 0 || static_cast<size_t>(d) >= rank)
        return InvalidModel("sparsity block map entry " + std::to_string(d) + " out of range [0, " +
                            std::to_string(rank) + ")");
    for (const auto& dm : sp->dim_metadata) {
      if (!dm) return InvalidModel("sparsity dimension metadata missing");
      // A union type without its table (a corrupt file) would crash whoever packs it again.
      if ((dm->array_segments.type != tflite::SparseIndexVector_NONE && !dm->array_segments.value) ||
          (dm->array_indices.type != tflite::SparseIndexVector_NONE && !dm->array_indices.value))
        return InvalidModel("sparsity dimension metadata names an index array type but holds no such array");
    }

    // Size of each expanded dimension: the tensor's dims divided by their block sizes, then the
    // block dims (whose sizes are the dense_size of their metadata entries).
    std::vector<int64_t> expanded(dims, 0);
    for (size_t i = 0; i < rank; ++i) expanded[i] = t->shape[i];
    for (size_t i = 0; i < dims - rank; ++i) {
      const int32_t block = sp->dim_metadata[rank + i]->dense_size;
      const int32_t dim = sp->block_map[i];
      if (block <= 0) return InvalidModel("sparsity block size " + std::to_string(block) + " is not positive");
      if (expanded[dim] % block != 0)
        return InvalidModel("sparsity block size " + std::to_string(block) + " does not divide dimension " +
                            std::to_string(dim) + " of size " + std::to_string(t->shape[dim]));
      expanded[dim] /= block;
      expanded[rank + i] = block;
    }
    // Walk the levels in traversal order, counting the values stored below each.
    int64_t count = 1;
    std::vector<int64_t> segments, indices;
    for (size_t level = 0; level < dims; ++level) {
      const auto& dm = *sp->dim_metadata[level];
      const int64_t size = expanded[sp->traversal_order[level]];
      const std::string where = "sparsity level " + std::to_string(level);
      if (dm.format == tflite::DimensionType_DENSE) {
        if (dm.dense_size != size)
          return InvalidModel(where + ": dense size " + std::to_string(dm.dense_size) + " differs from dimension size " +
                              std::to_string(size));
        if (size > 0 && count > options_.max_tensor_elements / size)
          return InvalidModel(where + ": more than " + std::to_string(options_.max_tensor_elements) + " elements");
        count *= size;
        continue;
      }
      if (dm.format != tflite::DimensionType_SPARSE_CSR)
        return InvalidModel(where + ": unknown dimension format " + std::to_string(dm.format));
      if (!SparseIndexValues(dm.array_segments, &segments) || !SparseIndexValues(dm.array_indices, &indices))
        return InvalidModel(where + ": sparse dimension without (known) segment and index arrays");
      if (static_cast<int64_t>(segments.size()) != count + 1)
        return InvalidModel(where + ": " + std::to_string(segments.size()) + " segments, expected " +
                            std::to_string(count + 1));
      for (size_t k = 0; k < segments.size(); ++k) {
        if (segments[k] < 0 || (k > 0 && segments[k] < segments[k - 1]))
          return InvalidModel(where + ": segments are negative or decreasing at entry " + std::to_string(k));
      }
      if (segments.back() != static_cast<int64_t>(indices.size()))
        return InvalidModel(where + ": last segment " + std::to_string(segments.back()) + " differs from the " +
                            std::to_string(indices.size()) + " indices");
      for (int64_t x : indices)
        if (x < 0 || x >= size)
          return InvalidModel(where + ": index " + std::to_string(x) + " out of range [0, " + std::to_string(size) + ")");
      count = static_cast<int64_t>(indices.size());
    }
    *stored = count;
    t->sparsity = std::move(sp);
    return Status::Ok();
  }

  // A string tensor's buffer: int32 count, count+1 int32 offsets, then the characters.
  static Status CheckStringBuffer(std::span<const uint8_t> data) {
    auto read = [&](size_t i) {
      int32_t v;
      std::memcpy(&v, data.data() + 4 * i, 4);
      return v;
    };
    if (data.size() < 8) return InvalidModel("string data of " + std::to_string(data.size()) + " bytes is truncated");
    const int32_t n = read(0);
    if (n < 0 || (static_cast<uint64_t>(n) + 2) * 4 > data.size())
      return InvalidModel("string data claims " + std::to_string(n) + " strings, more than its " +
                          std::to_string(data.size()) + " bytes can hold");
    int64_t prev = static_cast<int64_t>(n + 2) * 4;
    for (int32_t i = 0; i <= n; ++i) {
      const int32_t off = read(static_cast<size_t>(i) + 1);
      if ((i == 0 && off != prev) || off < prev || static_cast<uint64_t>(off) > data.size())
        return InvalidModel("string offset " + std::to_string(i) + " (" + std::to_string(off) +
                            ") is out of range or decreasing");
      prev = off;
    }
    return Status::Ok();
  }

  Status ReadTensor(int index, const tflite::Tensor* ft, size_t num_tensors, Tensor* t) {
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
    if (ft->quantization()) RETURN_IF_ERROR_CTX(ReadQuantization(ft->quantization(), num_tensors, t), label);
    int64_t stored = elements;  // values the buffer holds (fewer for sparse tensors)
    if (ft->sparsity()) RETURN_IF_ERROR_CTX(ReadSparsity(ft->sparsity(), t, &stored), label);
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
    Buffer& data = graph_.buffers[t->buffer];
    const size_t data_size = data.size();
    if (data_size > 0) {
      const int64_t need = ExpectedBytes(t->type, stored);
      if (need >= 0 && static_cast<int64_t>(data_size) < need) {
        return InvalidModel(label + ": constant data has " + std::to_string(data_size) + " bytes but its " +
                            (t->sparsity ? "sparse encoding" : "shape") + " and type need " + std::to_string(need) +
                            " (truncated?)");
      }
      if (t->type == DType::kString) RETURN_IF_ERROR_CTX(CheckStringBuffer(data.bytes()), label);
      // Typed access (Buffer::as<T>) needs aligned data; the writer aligns to 16 but older files
      // or data after the flatbuffer may not be. Copy such buffers once instead of failing.
      if (reinterpret_cast<uintptr_t>(data.bytes().data()) % AlignmentOf(t->type) != 0) {
        auto b = data.bytes();
        data = Buffer::Owned(std::vector<uint8_t>(b.begin(), b.end()));
      }
    }
    return Status::Ok();
  }

  // Control-flow and StableHLO region options name other subgraphs by index. Whether a subgraph
  // calls itself is the runtime's business; that the index exists is the reader's.
  Status CheckSubgraphIndices(const Operator& op) const {
    const size_t n = model_->subgraphs()->size();
    auto check = [n](const char* field, int64_t index) -> Status {
      if (index >= 0 && static_cast<uint64_t>(index) < n) return Status::Ok();
      return InvalidModel(std::string(field) + " " + std::to_string(index) + " out of range (model has " +
                          std::to_string(n) + " subgraphs)");
    };
    if (const auto* o = op.options.AsIfOptions()) {
      RETURN_IF_ERROR(check("then_subgraph_index", o->then_subgraph_index));
      RETURN_IF_ERROR(check("else_subgraph_index", o->else_subgraph_index));
    } else if (const auto* w = op.options.AsWhileOptions()) {
      RETURN_IF_ERROR(check("cond_subgraph_index", w->cond_subgraph_index));
      RETURN_IF_ERROR(check("body_subgraph_index", w->body_subgraph_index));
    } else if (const auto* c = op.options.AsCallOnceOptions()) {
      RETURN_IF_ERROR(check("init_subgraph_index", c->init_subgraph_index));
    }
    const auto& o2 = op.options2;
    if (const auto* rw = o2.AsStablehloReduceWindowOptions()) {
      RETURN_IF_ERROR(check("body_subgraph_index", rw->body_subgraph_index));
    } else if (const auto* sw = o2.AsStablehloWhileOptions()) {
      RETURN_IF_ERROR(check("cond_subgraph_index", sw->cond_subgraph_index));
      RETURN_IF_ERROR(check("body_subgraph_index", sw->body_subgraph_index));
    } else if (const auto* so = o2.AsStablehloSortOptions()) {
      RETURN_IF_ERROR(check("comparator_subgraph_index", so->comparator_subgraph_index));
    } else if (const auto* cc = o2.AsStablehloCustomCallOptions()) {
      for (int32_t i : cc->called_computations) RETURN_IF_ERROR(check("called_computations entry", i));
    } else if (const auto* r = o2.AsStablehloReduceOptions()) {
      RETURN_IF_ERROR(check("body_subgraph_index", r->body_subgraph_index));
    } else if (const auto* sc = o2.AsStablehloScatterOptions()) {
      RETURN_IF_ERROR(check("update_computation_subgraph_index", sc->update_computation_subgraph_index));
    } else if (const auto* cs = o2.AsStablehloCaseOptions()) {
      for (int32_t i : cs->branch_subgraph_indices) RETURN_IF_ERROR(check("branch_subgraph_indices entry", i));
    } else if (const auto* cp = o2.AsStableHLOCompositeOptions()) {
      RETURN_IF_ERROR(check("decomposition_subgraph_index", cp->decomposition_subgraph_index));
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
    // Options of a type this schema does not know could be neither used nor written back.
    if (fo->builtin_options_type() != tflite::BuiltinOptions_NONE && fo->builtin_options()) {
      if (fo->builtin_options_type() > tflite::BuiltinOptions_MAX)
        return InvalidModel(full + ": unknown builtin options type " + std::to_string(fo->builtin_options_type()));
      op->options.type = fo->builtin_options_type();
      op->options.value = tflite::BuiltinOptionsUnion::UnPack(fo->builtin_options(), fo->builtin_options_type(), nullptr);
    }
    if (fo->builtin_options_2_type() != tflite::BuiltinOptions2_NONE && fo->builtin_options_2()) {
      if (fo->builtin_options_2_type() > tflite::BuiltinOptions2_MAX)
        return InvalidModel(full + ": unknown builtin options 2 type " + std::to_string(fo->builtin_options_2_type()));
      op->options2.type = fo->builtin_options_2_type();
      op->options2.value = tflite::BuiltinOptions2Union::UnPack(fo->builtin_options_2(), fo->builtin_options_2_type(), nullptr);
    }
    RETURN_IF_ERROR_CTX(CheckSubgraphIndices(*op), full);
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
    for (uint32_t i = 0; i < n; ++i) RETURN_IF_ERROR(ReadTensor(static_cast<int>(i), fs->tensors()->Get(i), n, &sg->tensors[i]));
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
