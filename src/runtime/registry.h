// Maps builtin op codes and custom op names to kernel factories.
#pragma once

#include <map>
#include <string>

#include "runtime/kernel.h"

namespace edgeopt::rt {

class OpRegistry {
 public:
  void Add(tflite::BuiltinOperator code, KernelFactory factory) { builtins_[static_cast<int>(code)] = std::move(factory); }
  void AddCustom(const std::string& name, KernelFactory factory) { customs_[name] = std::move(factory); }

  // The factory for this op, or nullptr.
  const KernelFactory* Find(const Operator& op) const {
    if (op.is_custom()) {
      auto it = customs_.find(op.custom_code);
      return it == customs_.end() ? nullptr : &it->second;
    }
    auto it = builtins_.find(static_cast<int>(op.code));
    return it == builtins_.end() ? nullptr : &it->second;
  }
  bool empty() const { return builtins_.empty() && customs_.empty(); }
  std::vector<std::string> Names() const;

  // Every kernel edgeopt ships (built once, immutable).
  static const OpRegistry& Builtin();

 private:
  std::map<int, KernelFactory> builtins_;
  std::map<std::string, KernelFactory> customs_;
};

// Defined in src/kernels/register_all.cc: adds every built-in kernel family.
void RegisterAllKernels(OpRegistry& registry);

}  // namespace edgeopt::rt
