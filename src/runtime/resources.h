// Interpreter-wide state that ops of every subgraph share: resource variables, as LiteRT keeps
// them per interpreter (VAR_HANDLE names a variable by container/shared_name and yields its
// handle id; ASSIGN_VARIABLE / READ_VARIABLE write and read it). Owned by the Interpreter and
// reached by kernels through KernelHost::resources(). Like the Interpreter, not thread-safe.
// Other resource kinds (the lookup tables of HASHTABLE, keyed by table_id as LiteRT does) are
// kept as ResourceObjects that their kernels define and downcast.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "runtime/tensor.h"

namespace edgeopt::rt {

// Base of the non-variable resources (e.g. kernels/hashtable's tables).
class ResourceObject {
 public:
  virtual ~ResourceObject() = default;
};

class ResourceStore {
 public:
  struct Variable {
    DType type = DType::kFloat32;
    Shape shape;
    std::vector<uint8_t> data;
  };

  // The handle id of (container, shared_name): assigned on first use, then stable.
  int32_t HandleId(const std::string& container, const std::string& shared_name) {
    auto [it, inserted] = ids_.try_emplace({container, shared_name}, static_cast<int32_t>(ids_.size()));
    return it->second;
  }
  // The variable behind a handle, or nullptr if nothing was assigned to it yet.
  const Variable* Find(int32_t id) const {
    auto it = variables_.find(id);
    return it == variables_.end() ? nullptr : &it->second;
  }
  // Replaces the variable's value (type and shape included).
  void Assign(int32_t id, DType type, Shape shape, const uint8_t* data, size_t bytes) {
    Variable& v = variables_[id];
    v.type = type;
    v.shape = std::move(shape);
    v.data.assign(data, data + bytes);
  }
  // The object stored under `id` (nullptr if none), and storing one (replacing any).
  ResourceObject* FindObject(int32_t id) const {
    auto it = objects_.find(id);
    return it == objects_.end() ? nullptr : it->second.get();
  }
  ResourceObject* SetObject(int32_t id, std::unique_ptr<ResourceObject> object) {
    auto& slot = objects_[id];
    slot = std::move(object);
    return slot.get();
  }
  size_t bytes() const {
    size_t n = 0;
    for (const auto& [id, v] : variables_) n += v.data.size();
    return n;
  }

 private:
  std::map<std::pair<std::string, std::string>, int32_t> ids_;
  std::map<int32_t, Variable> variables_;
  std::map<int32_t, std::unique_ptr<ResourceObject>> objects_;
};

}  // namespace edgeopt::rt
