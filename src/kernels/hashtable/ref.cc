// Lookup tables, TFLite 2.9 builtin semantics (what tf.lookup.StaticHashTable converts to):
//   HASHTABLE         output: the resource handle of table `table_id` ([1] resource tensor);
//                     creates the (empty) table on first run, of key_dtype -> value_dtype
//   HASHTABLE_IMPORT  (handle, keys, values): fills the table, on its first run only (later
//                     imports are no-ops); a repeated key keeps its first value
//   HASHTABLE_FIND    (handle, keys, default): output[i] = table[keys[i]], or default[0] for a
//                     missing key; the output has the keys' shape
//   HASHTABLE_SIZE    (handle): int64 [1] number of entries (0 before the import)
// Key/value pairs: int64 -> string and string -> int64 (the only ones TFLite accepts). Tables
// live in the interpreter-wide ResourceStore under their table_id, so the CALL_ONCE init
// subgraph that imports a table and the main subgraph that reads it share it. String tensors use
// LiteRT's packed layout (int32 count, count+1 int32 offsets, then the bytes).
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/registration.h"
#include "runtime/resources.h"

namespace edgeopt::kernels {
namespace {

// ---- the table resource ---------------------------------------------------------------------

class LookupTable : public rt::ResourceObject {
 public:
  LookupTable(DType key, DType value) : key_type(key), value_type(value) {}
  const DType key_type, value_type;
  bool initialized = false;
  std::unordered_map<int64_t, std::string> int_to_string;  // int64 -> string tables
  std::unordered_map<std::string, int64_t> string_to_int;  // string -> int64 tables
  size_t size() const { return key_type == DType::kInt64 ? int_to_string.size() : string_to_int.size(); }
};

bool SupportedPair(DType key, DType value) {
  return (key == DType::kInt64 && value == DType::kString) || (key == DType::kString && value == DType::kInt64);
}

std::string PairName(DType key, DType value) { return TypeName(key) + " -> " + TypeName(value); }

// ---- packed string tensors ------------------------------------------------------------------

Status ReadStrings(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what,
                   std::vector<std::string_view>* out) {
  const int64_t want = t.num_elements();
  out->clear();
  if (t.bytes == 0 && want == 0) return Status::Ok();
  const auto bad = [&](const std::string& why) {
    return ctx.Error(what + " " + Describe(t) + ": malformed string buffer (" + why + ")");
  };
  if (!t.data || t.bytes < 4) return bad("shorter than its header");
  int32_t count;
  std::memcpy(&count, t.data, 4);
  if (count != want)
    return bad("holds " + std::to_string(count) + " strings, the shape has " + std::to_string(want) + " elements");
  if (static_cast<size_t>(count) + 2 > t.bytes / 4) return bad("offset table past its end");
  out->reserve(static_cast<size_t>(count));
  int32_t prev;
  std::memcpy(&prev, t.data + 4, 4);
  for (int32_t i = 0; i < count; ++i) {
    int32_t next;
    std::memcpy(&next, t.data + 8 + 4 * static_cast<size_t>(i), 4);
    if (prev < 0 || next < prev || static_cast<size_t>(next) > t.bytes) return bad("offsets out of order or range");
    out->emplace_back(reinterpret_cast<const char*>(t.data) + prev, static_cast<size_t>(next - prev));
    prev = next;
  }
  return Status::Ok();
}

// Writes `strings` into output 0 in the packed layout (heap storage sized at invoke).
Status WriteStrings(rt::KernelContext& ctx, const rt::Shape& shape, const std::vector<const std::string*>& strings) {
  RETURN_IF_ERROR(ctx.SetOutputShape(0, shape));
  size_t total = 4 * (strings.size() + 2);
  for (const std::string* s : strings) total += s->size();
  if (total > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return ctx.Error("output strings exceed 2 GiB");
  rt::RtTensor* out = ctx.output(0);
  std::vector<uint8_t> buf(total);
  const auto put = [&](size_t at, size_t v) {
    const auto x = static_cast<int32_t>(v);
    std::memcpy(buf.data() + at, &x, 4);
  };
  put(0, strings.size());
  size_t offset = 4 * (strings.size() + 2);
  for (size_t i = 0; i < strings.size(); ++i) {
    put(4 + 4 * i, offset);
    if (!strings[i]->empty()) std::memcpy(buf.data() + offset, strings[i]->data(), strings[i]->size());
    offset += strings[i]->size();
  }
  put(4 + 4 * strings.size(), offset);
  out->owned = std::move(buf);
  out->data = out->owned.data();
  out->bytes = out->owned.size();
  out->alloc = rt::Allocation::kDynamic;
  return Status::Ok();
}

// ---- shared checks --------------------------------------------------------------------------

Status CheckHandleInput(const rt::KernelContext& ctx) {
  const rt::RtTensor* h = ctx.input(0);
  if (!h) return ctx.Error("input 0 (table handle) is missing");
  if (h->type != DType::kResource) return ctx.Error("input 0 must be a resource handle, is " + Describe(*h));
  if (h->num_elements() != 1) return ctx.Error("input 0 must be a [1] resource handle, is " + Describe(*h));
  return Status::Ok();
}

// The table behind input 0's handle, or an error when no HASHTABLE created it.
Expected<LookupTable*> TableOf(rt::KernelContext& ctx) {
  int32_t id;
  std::memcpy(&id, ctx.input(0)->data, sizeof(id));
  auto* table = dynamic_cast<LookupTable*>(ctx.host()->resources().FindObject(id));
  if (!table) return ctx.Error("no hash table with id " + std::to_string(id) + " (no HASHTABLE op created it)");
  return table;
}

Status CheckTableTypes(const rt::KernelContext& ctx, const LookupTable& table, const rt::RtTensor& keys,
                       const rt::RtTensor& values, const char* values_what) {
  if (keys.type != table.key_type || values.type != table.value_type)
    return ctx.Error("table is " + PairName(table.key_type, table.value_type) + ", keys " + Describe(keys) + " and " +
                     values_what + " " + Describe(values) + " do not match");
  return Status::Ok();
}

struct NoState {};

// ---- HASHTABLE ------------------------------------------------------------------------------

class HashtableKernel : public rt::OpKernel {
 public:
  HashtableKernel(int32_t id, DType key, DType value) : id_(id), key_(key), value_(value) {}
  std::string variant() const override { return "hashtable/resource/ref"; }
  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 0, 0));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
    if (!SupportedPair(key_, value_))
      return ctx.UnsupportedError("table type " + PairName(key_, value_) +
                                  " is not supported (int64 -> string or string -> int64)");
    const rt::RtTensor* out = ctx.output(0);
    if (out->type != DType::kResource) return ctx.Error("output must be a resource tensor, is " + Describe(*out));
    return ctx.SetOutputShape(0, {1});
  }
  Status Invoke(rt::KernelContext& ctx) override {
    std::memcpy(ctx.output(0)->data, &id_, sizeof(id_));
    rt::ResourceStore& store = ctx.host()->resources();
    // As TFLite: an existing table (of any type) is kept; the import/find type checks catch a mismatch.
    if (!store.FindObject(id_)) store.SetObject(id_, std::make_unique<LookupTable>(key_, value_));
    return Status::Ok();
  }

 private:
  int32_t id_;
  DType key_, value_;
};

// ---- HASHTABLE_IMPORT -----------------------------------------------------------------------

Status ImportPrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 3, 3));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 0));
  RETURN_IF_ERROR(CheckHandleInput(ctx));
  ASSIGN_OR_RETURN(const rt::RtTensor* keys, RequiredInput(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* values, RequiredInput(ctx, 2));
  if (!SupportedPair(keys->type, values->type))
    return ctx.UnsupportedError("keys " + Describe(*keys) + " and values " + Describe(*values) +
                                ": only int64 -> string and string -> int64 tables are supported");
  if (keys->shape != values->shape)
    return ctx.Error("keys " + Describe(*keys) + " and values " + Describe(*values) + " must have the same shape");
  return Status::Ok();
}

Status ImportInvoke(rt::KernelContext& ctx, const NoState&) {
  ASSIGN_OR_RETURN(LookupTable * table, TableOf(ctx));
  const rt::RtTensor& keys = *ctx.input(1);
  const rt::RtTensor& values = *ctx.input(2);
  RETURN_IF_ERROR(CheckTableTypes(ctx, *table, keys, values, "values"));
  if (table->initialized) return Status::Ok();  // only the first import counts, as in TFLite
  const auto n = static_cast<size_t>(keys.num_elements());
  std::vector<std::string_view> strings;
  if (keys.type == DType::kInt64) {
    RETURN_IF_ERROR(ReadStrings(ctx, values, "values", &strings));
    const int64_t* k = keys.data_as<int64_t>();
    for (size_t i = 0; i < n; ++i) table->int_to_string.emplace(k[i], std::string(strings[i]));  // first wins
  } else {
    RETURN_IF_ERROR(ReadStrings(ctx, keys, "keys", &strings));
    const int64_t* v = values.data_as<int64_t>();
    for (size_t i = 0; i < n; ++i) table->string_to_int.emplace(std::string(strings[i]), v[i]);
  }
  table->initialized = true;
  return Status::Ok();
}

// ---- HASHTABLE_FIND -------------------------------------------------------------------------

Status FindPrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 3, 3));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  RETURN_IF_ERROR(CheckHandleInput(ctx));
  ASSIGN_OR_RETURN(const rt::RtTensor* keys, RequiredInput(ctx, 1));
  ASSIGN_OR_RETURN(const rt::RtTensor* def, RequiredInput(ctx, 2));
  const rt::RtTensor* out = ctx.output(0);
  if (def->type != out->type)
    return ctx.Error("default value " + Describe(*def) + " must have the output's type " + TypeName(out->type));
  if (!SupportedPair(keys->type, out->type))
    return ctx.UnsupportedError("keys " + Describe(*keys) + " and output " + Describe(*out) +
                                ": only int64 -> string and string -> int64 tables are supported");
  return ctx.SetOutputShape(0, keys->shape);
}

Status FindInvoke(rt::KernelContext& ctx, const NoState&) {
  ASSIGN_OR_RETURN(LookupTable * table, TableOf(ctx));
  const rt::RtTensor& keys = *ctx.input(1);
  const rt::RtTensor& def = *ctx.input(2);
  rt::RtTensor* out = ctx.output(0);
  RETURN_IF_ERROR(CheckTableTypes(ctx, *table, keys, *out, "output"));
  if (!table->initialized) return ctx.Error("the hash table must be initialized (HASHTABLE_IMPORT) before use");
  // TFLite reads default[0] unchecked; an empty default is an error here.
  if (def.num_elements() < 1) return ctx.Error("default value " + Describe(def) + " is empty");
  const auto n = static_cast<size_t>(keys.num_elements());
  if (keys.type == DType::kInt64) {
    std::vector<std::string_view> def_strings;
    RETURN_IF_ERROR(ReadStrings(ctx, def, "default value", &def_strings));
    const std::string fallback(def_strings[0]);
    const int64_t* k = keys.data_as<int64_t>();
    std::vector<const std::string*> found(n);
    for (size_t i = 0; i < n; ++i) {
      auto it = table->int_to_string.find(k[i]);
      found[i] = it == table->int_to_string.end() ? &fallback : &it->second;
    }
    return WriteStrings(ctx, keys.shape, found);
  }
  std::vector<std::string_view> key_strings;
  RETURN_IF_ERROR(ReadStrings(ctx, keys, "keys", &key_strings));
  const int64_t fallback = def.data_as<int64_t>()[0];
  int64_t* o = out->data_as<int64_t>();
  std::string key;
  for (size_t i = 0; i < n; ++i) {
    key.assign(key_strings[i]);
    auto it = table->string_to_int.find(key);
    o[i] = it == table->string_to_int.end() ? fallback : it->second;
  }
  return Status::Ok();
}

// ---- HASHTABLE_SIZE -------------------------------------------------------------------------

Status SizePrepare(rt::KernelContext& ctx, NoState&) {
  RETURN_IF_ERROR(CheckInputCount(ctx, 1, 1));
  RETURN_IF_ERROR(CheckOutputCount(ctx, 1));
  RETURN_IF_ERROR(CheckHandleInput(ctx));
  const rt::RtTensor* out = ctx.output(0);
  if (out->type != DType::kInt64) return ctx.Error("output must be int64, is " + Describe(*out));
  return ctx.SetOutputShape(0, {1});
}

Status SizeInvoke(rt::KernelContext& ctx, const NoState&) {
  ASSIGN_OR_RETURN(LookupTable * table, TableOf(ctx));
  ctx.output(0)->data_as<int64_t>()[0] = static_cast<int64_t>(table->size());
  return Status::Ok();
}

Expected<std::unique_ptr<rt::OpKernel>> CreateHashtable(const rt::KernelCreateContext& cc) {
  const auto& o = GetOptions<tflite::HashtableOptionsT>(cc.op);
  const auto type_of = [&](int8_t v, const char* what) -> Expected<DType> {
    if (!IsValidDType(v))
      return InvalidModel(cc.op.type_name() + ": " + what + " " + std::to_string(v) + " is not a tensor type");
    return static_cast<DType>(v);
  };
  ASSIGN_OR_RETURN(DType key, type_of(static_cast<int8_t>(o.key_dtype), "key_dtype"));
  ASSIGN_OR_RETURN(DType value, type_of(static_cast<int8_t>(o.value_dtype), "value_dtype"));
  return std::unique_ptr<rt::OpKernel>(new HashtableKernel(o.table_id, key, value));
}

}  // namespace

void RegisterHashtableKernels(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_HASHTABLE, CreateHashtable);
  r.Add(tflite::BuiltinOperator_HASHTABLE_IMPORT,
        MakeFnFactory<NoState>(ImportPrepare, ImportInvoke, "hashtable_import/resource/ref"));
  r.Add(tflite::BuiltinOperator_HASHTABLE_FIND,
        MakeFnFactory<NoState>(FindPrepare, FindInvoke, "hashtable_find/resource/ref"));
  r.Add(tflite::BuiltinOperator_HASHTABLE_SIZE,
        MakeFnFactory<NoState>(SizePrepare, SizeInvoke, "hashtable_size/resource/ref"));
}

}  // namespace edgeopt::kernels
