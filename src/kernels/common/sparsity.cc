#include "kernels/common/sparsity.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/half.h"

namespace edgeopt::kernels {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;

std::string Vec(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// Reads a SparseIndexVector union into int32 values.
Status ReadIndexVector(const tflite::SparseIndexVectorUnion& u, const std::string& what, std::vector<int32_t>* out) {
  out->clear();
  switch (u.type) {
    case tflite::SparseIndexVector_Int32Vector:
      if (u.AsInt32Vector()) *out = u.AsInt32Vector()->values;
      break;
    case tflite::SparseIndexVector_Uint16Vector:
      if (u.AsUint16Vector()) out->assign(u.AsUint16Vector()->values.begin(), u.AsUint16Vector()->values.end());
      break;
    case tflite::SparseIndexVector_Uint8Vector:
      if (u.AsUint8Vector()) out->assign(u.AsUint8Vector()->values.begin(), u.AsUint8Vector()->values.end());
      break;
    default:
      return InvalidModel("sparsity: " + what + " is missing");
  }
  return Status::Ok();
}

// An index vector of type `type` (NONE: the smallest type holding the values).
Expected<tflite::SparseIndexVectorUnion> MakeIndexVector(const std::vector<int32_t>& v, tflite::SparseIndexVector type) {
  int32_t max_value = 0;
  for (int32_t x : v) max_value = std::max(max_value, x);
  if (type == tflite::SparseIndexVector_NONE) {
    type = max_value <= std::numeric_limits<uint8_t>::max()    ? tflite::SparseIndexVector_Uint8Vector
           : max_value <= std::numeric_limits<uint16_t>::max() ? tflite::SparseIndexVector_Uint16Vector
                                                               : tflite::SparseIndexVector_Int32Vector;
  }
  if ((type == tflite::SparseIndexVector_Uint8Vector && max_value > std::numeric_limits<uint8_t>::max()) ||
      (type == tflite::SparseIndexVector_Uint16Vector && max_value > std::numeric_limits<uint16_t>::max()))
    return InvalidArgument("sparsify: index value " + std::to_string(max_value) + " does not fit the requested index type");
  tflite::SparseIndexVectorUnion u;
  if (type == tflite::SparseIndexVector_Uint8Vector) {
    tflite::Uint8VectorT t;
    t.values.assign(v.begin(), v.end());
    u.Set(std::move(t));
  } else if (type == tflite::SparseIndexVector_Uint16Vector) {
    tflite::Uint16VectorT t;
    t.values.assign(v.begin(), v.end());
    u.Set(std::move(t));
  } else {
    tflite::Int32VectorT t;
    t.values = v;
    u.Set(std::move(t));
  }
  return u;
}

// Expanded-dimension sizes and per-original-dimension block lookup shared by both directions.
struct Expansion {
  std::vector<int32_t> expanded;   // n + k sizes
  std::vector<int32_t> block_of;   // original dim -> block index or -1
};

Status Expand(const std::vector<int32_t>& shape, const std::vector<int32_t>& block_map,
              const std::vector<int32_t>& block_sizes, Expansion* e) {
  const int n = static_cast<int>(shape.size());
  e->block_of.assign(n, -1);
  e->expanded.assign(shape.begin(), shape.end());
  for (size_t b = 0; b < block_map.size(); ++b) {
    const int32_t d = block_map[b];
    if (d < 0 || d >= n) return InvalidModel("sparsity: block_map " + Vec(block_map) + " names a missing dimension");
    if (e->block_of[d] >= 0) return InvalidModel("sparsity: block_map " + Vec(block_map) + " repeats a dimension");
    const int32_t bs = block_sizes[b];
    if (bs <= 0 || shape[d] % bs != 0)
      return InvalidModel("sparsity: block size " + std::to_string(bs) + " does not divide dimension " +
                          std::to_string(d) + " of " + Vec(shape));
    e->block_of[d] = static_cast<int32_t>(b);
    e->expanded[d] = shape[d] / bs;
  }
  for (size_t b = 0; b < block_sizes.size(); ++b) e->expanded.push_back(block_sizes[b]);
  return Status::Ok();
}

Status CheckPermutation(const std::vector<int32_t>& order, size_t total) {
  if (order.size() != total)
    return InvalidModel("sparsity: traversal_order " + Vec(order) + " must list " + std::to_string(total) + " dimensions");
  std::vector<char> seen(total, 0);
  for (int32_t d : order) {
    if (d < 0 || static_cast<size_t>(d) >= total || seen[d])
      return InvalidModel("sparsity: traversal_order " + Vec(order) + " is not a permutation");
    seen[d] = 1;
  }
  return Status::Ok();
}

bool IsZeroElement(const uint8_t* p, DType type, size_t elem) {
  switch (type) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v == 0.0f;
    }
    case DType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v == 0.0;
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return (v & 0x7fff) == 0;
    }
    default:
      for (size_t i = 0; i < elem; ++i)
        if (p[i]) return false;
      return true;
  }
}

}  // namespace

Expected<SparseLayout> ParseSparsity(const tflite::SparsityParametersT& params, const std::vector<int32_t>& dense_shape) {
  SparseLayout l;
  l.dense_shape = dense_shape;
  const size_t n = dense_shape.size();
  const size_t k = params.block_map.size();
  const size_t total = n + k;
  int64_t elements = 1;
  for (int32_t d : dense_shape) {
    if (d < 0) return InvalidModel("sparsity: dense shape " + Vec(dense_shape) + " has a negative dimension");
    elements *= d;
    if (elements > kMaxElements) return InvalidModel("sparsity: dense shape " + Vec(dense_shape) + " is too large");
  }
  l.dense_elements = elements;
  RETURN_IF_ERROR(CheckPermutation(params.traversal_order, total));
  if (params.dim_metadata.size() != total)
    return InvalidModel("sparsity: " + std::to_string(params.dim_metadata.size()) + " dim_metadata entries for " +
                        std::to_string(total) + " traversal dimensions");
  for (const auto& dm : params.dim_metadata)
    if (!dm) return InvalidModel("sparsity: dim_metadata entry missing");
  l.traversal_order = params.traversal_order;
  l.block_map = params.block_map;
  // Block sizes: the dense_size of the level traversing each block dimension.
  l.block_sizes.assign(k, 0);
  for (size_t j = 0; j < total; ++j) {
    const int32_t e = params.traversal_order[j];
    if (static_cast<size_t>(e) < n) continue;
    const auto& dm = *params.dim_metadata[j];
    if (dm.format != tflite::DimensionType_DENSE)
      return InvalidModel("sparsity: block dimension " + std::to_string(e) + " must be DENSE");
    l.block_sizes[e - n] = dm.dense_size;
  }
  Expansion ex;
  RETURN_IF_ERROR(Expand(dense_shape, l.block_map, l.block_sizes, &ex));

  int64_t parents = 1;
  l.levels.resize(total);
  for (size_t j = 0; j < total; ++j) {
    const auto& dm = *params.dim_metadata[j];
    SparseLevel& lv = l.levels[j];
    lv.size = ex.expanded[params.traversal_order[j]];
    const std::string label = "level " + std::to_string(j);
    if (dm.format == tflite::DimensionType_DENSE) {
      if (dm.dense_size != lv.size)
        return InvalidModel("sparsity: " + label + " dense_size " + std::to_string(dm.dense_size) + " should be " +
                            std::to_string(lv.size));
      parents *= lv.size;
      if (parents > kMaxElements) return InvalidModel("sparsity: too many stored elements");
    } else if (dm.format == tflite::DimensionType_SPARSE_CSR) {
      lv.sparse = true;
      RETURN_IF_ERROR(ReadIndexVector(dm.array_segments, label + " array_segments", &lv.segments));
      RETURN_IF_ERROR(ReadIndexVector(dm.array_indices, label + " array_indices", &lv.indices));
      if (static_cast<int64_t>(lv.segments.size()) != parents + 1)
        return InvalidModel("sparsity: " + label + " has " + std::to_string(lv.segments.size()) + " segments, needs " +
                            std::to_string(parents + 1));
      if (lv.segments.front() != 0) return InvalidModel("sparsity: " + label + " segments must start at 0");
      for (size_t s = 1; s < lv.segments.size(); ++s)
        if (lv.segments[s] < lv.segments[s - 1]) return InvalidModel("sparsity: " + label + " segments decrease");
      if (static_cast<size_t>(lv.segments.back()) != lv.indices.size())
        return InvalidModel("sparsity: " + label + " segments end at " + std::to_string(lv.segments.back()) + " but " +
                            std::to_string(lv.indices.size()) + " indices are stored");
      for (int32_t idx : lv.indices)
        if (idx < 0 || idx >= lv.size)
          return InvalidModel("sparsity: " + label + " index " + std::to_string(idx) + " is outside [0, " +
                              std::to_string(lv.size) + ")");
      parents = static_cast<int64_t>(lv.indices.size());
    } else {
      return InvalidModel("sparsity: " + label + " has an unknown format");
    }
  }
  l.num_values = parents;
  return l;
}

Status Densify(const SparseLayout& layout, std::span<const uint8_t> values, size_t elem_bytes, std::span<uint8_t> dense) {
  if (elem_bytes == 0) return InvalidArgument("sparsity: element type has no fixed size");
  if (values.size() < static_cast<size_t>(layout.num_values) * elem_bytes)
    return InvalidModel("sparsity: " + std::to_string(values.size()) + " bytes of values, the layout stores " +
                        std::to_string(layout.num_values) + " elements of " + std::to_string(elem_bytes) + " bytes");
  if (dense.size() != static_cast<size_t>(layout.dense_elements) * elem_bytes)
    return InvalidArgument("sparsity: dense buffer has the wrong size");
  std::fill(dense.begin(), dense.end(), uint8_t{0});
  const int n = static_cast<int>(layout.dense_shape.size());
  const int total = static_cast<int>(layout.levels.size());
  std::vector<int32_t> block_of(n, -1);
  for (size_t b = 0; b < layout.block_map.size(); ++b) block_of[layout.block_map[b]] = static_cast<int32_t>(b);
  std::vector<int64_t> stride(n, 1);
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * layout.dense_shape[d + 1];
  std::vector<int32_t> coord(total, 0);  // per expanded dimension
  int64_t next_value = 0;
  // Depth-first over the levels; `pos` is the position among the level's parents.
  auto visit = [&](auto&& self, int level, int64_t pos) -> void {
    if (level == total) {
      int64_t off = 0;
      for (int d = 0; d < n; ++d) {
        const int32_t b = block_of[d];
        const int64_t idx = b < 0 ? coord[d] : int64_t{coord[d]} * layout.block_sizes[b] + coord[n + b];
        off += idx * stride[d];
      }
      std::memcpy(dense.data() + off * static_cast<int64_t>(elem_bytes), values.data() + next_value * static_cast<int64_t>(elem_bytes),
                  elem_bytes);
      ++next_value;
      return;
    }
    const SparseLevel& lv = layout.levels[level];
    const int32_t e = layout.traversal_order[level];
    if (!lv.sparse) {
      for (int32_t i = 0; i < lv.size; ++i) {
        coord[e] = i;
        self(self, level + 1, pos * lv.size + i);
      }
    } else {
      for (int32_t s = lv.segments[pos]; s < lv.segments[pos + 1]; ++s) {
        coord[e] = lv.indices[s];
        self(self, level + 1, s);
      }
    }
  };
  visit(visit, 0, 0);
  return Status::Ok();
}

Expected<SparseTensor> Sparsify(std::span<const uint8_t> dense, const std::vector<int32_t>& shape, DType type,
                                const SparseEncoding& enc) {
  const size_t elem = DTypeSize(type);
  if (elem == 0 || type == DType::kString) return InvalidArgument("sparsify: type has no fixed element size");
  const int n = static_cast<int>(shape.size());
  if (enc.block_map.size() != enc.block_sizes.size())
    return InvalidArgument("sparsify: block_map and block_sizes differ in length");
  const int total = n + static_cast<int>(enc.block_map.size());
  int64_t elements = 1;
  for (int32_t d : shape) {
    if (d < 0) return InvalidArgument("sparsify: negative dimension");
    elements *= d;
    if (elements > kMaxElements) return InvalidArgument("sparsify: tensor too large");
  }
  if (dense.size() != static_cast<size_t>(elements) * elem) return InvalidArgument("sparsify: dense data has the wrong size");
  Expansion ex;
  {
    Status st = Expand(shape, enc.block_map, enc.block_sizes, &ex);
    if (!st.ok()) return InvalidArgument(st.message());
  }
  std::vector<int32_t> order = enc.traversal_order;
  if (order.empty())
    for (int i = 0; i < total; ++i) order.push_back(i);
  {
    Status st = CheckPermutation(order, total);
    if (!st.ok()) return InvalidArgument(st.message());
  }
  std::vector<bool> sparse = enc.sparse_levels;
  if (sparse.empty()) {
    sparse.assign(total, false);
    for (int j = 0; j < total; ++j)
      if (order[j] == n - 1) sparse[j] = true;
  }
  if (static_cast<int>(sparse.size()) != total) return InvalidArgument("sparsify: sparse_levels needs one entry per level");

  std::vector<SparseLevel> levels(total);
  for (int j = 0; j < total; ++j) {
    levels[j].sparse = sparse[j];
    levels[j].size = ex.expanded[order[j]];
    if (sparse[j]) levels[j].segments.push_back(0);
  }
  std::vector<int64_t> stride(n, 1);
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  std::vector<int32_t> coord(total, 0);
  SparseTensor out;
  std::vector<uint8_t>& values = out.values;

  // Returns whether the subtree holds a nonzero. Children of a sparse level without nonzeros
  // are rolled back (their values and deeper index entries removed).
  auto encode = [&](auto&& self, int level) -> bool {
    if (level == total) {
      int64_t off = 0;
      for (int d = 0; d < n; ++d) {
        const int32_t b = ex.block_of[d];
        const int64_t idx = b < 0 ? coord[d] : int64_t{coord[d]} * enc.block_sizes[b] + coord[n + b];
        off += idx * stride[d];
      }
      const uint8_t* p = dense.data() + off * static_cast<int64_t>(elem);
      values.insert(values.end(), p, p + elem);
      return !IsZeroElement(p, type, elem);
    }
    SparseLevel& lv = levels[level];
    const int32_t e = order[level];
    bool any = false;
    if (!lv.sparse) {
      for (int32_t i = 0; i < lv.size; ++i) {
        coord[e] = i;
        any = self(self, level + 1) || any;
      }
      return any;
    }
    for (int32_t i = 0; i < lv.size; ++i) {
      coord[e] = i;
      const size_t saved_values = values.size();
      std::vector<std::pair<size_t, size_t>> saved(total);
      for (int j = level + 1; j < total; ++j) saved[j] = {levels[j].segments.size(), levels[j].indices.size()};
      if (self(self, level + 1)) {
        lv.indices.push_back(i);
        any = true;
      } else {
        values.resize(saved_values);
        for (int j = level + 1; j < total; ++j) {
          levels[j].segments.resize(saved[j].first);
          levels[j].indices.resize(saved[j].second);
        }
      }
    }
    lv.segments.push_back(static_cast<int32_t>(lv.indices.size()));
    return any;
  };
  encode(encode, 0);
  out.num_values = static_cast<int64_t>(values.size() / elem);

  out.params.traversal_order = order;
  out.params.block_map = enc.block_map;
  for (int j = 0; j < total; ++j) {
    auto dm = std::make_unique<tflite::DimensionMetadataT>();
    if (levels[j].sparse) {
      dm->format = tflite::DimensionType_SPARSE_CSR;
      ASSIGN_OR_RETURN(dm->array_segments, MakeIndexVector(levels[j].segments, enc.index_type));
      ASSIGN_OR_RETURN(dm->array_indices, MakeIndexVector(levels[j].indices, enc.index_type));
    } else {
      dm->format = tflite::DimensionType_DENSE;
      dm->dense_size = levels[j].size;
    }
    out.params.dim_metadata.push_back(std::move(dm));
  }
  return out;
}

}  // namespace edgeopt::kernels
