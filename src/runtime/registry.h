// Maps builtin op codes and custom op names to kernel factories.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace edgeopt::rt {

// A run of consecutive ops [first, first + num_ops) that one kernel computes (a fusion). `op` is
// the synthetic operator the interpreter runs in their place: the inputs the kernel reads (from
// outside the run, constants included) and the outputs it writes; tensors inside the run belong
// to the kernel and are not planned.
struct FusedRun {
  int num_ops = 0;  // 0: no match
  std::unique_ptr<Operator> op;
  std::unique_ptr<OpKernel> kernel;
  // When not empty: the ops the kernel computes, ascending, from first to first + num_ops - 1.
  // The other ops of that range must be constant ops (IsConstantOp in constant_fold.h: float16
  // weights' DEQUANTIZE, which converters place between the layers); the interpreter runs
  // (folds) them before the run.
  std::vector<int> ops;
};
// Limits the interpreter puts on fusions (InterpreterOptions).
struct FusionLimits {
  // Fuse a run only if a tensor inside it has at least this many bytes.
  size_t min_inner_bytes = 0;
  // The same for int8 depthwise chains (kernels/fused/dw_chain_int8.cc).
  size_t min_inner_bytes_int8 = 0;
};
// Looks for a run starting at cc.op (cc.op_index).
using FusionMatcher = FusedRun (*)(const KernelCreateContext& cc, const FusionLimits& limits);

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
  void AddFusion(FusionMatcher m) { fusions_.push_back(m); }
  const std::vector<FusionMatcher>& fusions() const { return fusions_; }
  std::vector<std::string> Names() const;

  // Every kernel edgeopt ships (built once, immutable).
  static const OpRegistry& Builtin();

 private:
  std::map<int, KernelFactory> builtins_;
  std::map<std::string, KernelFactory> customs_;
  std::vector<FusionMatcher> fusions_;
};

// Defined in src/kernels/register_all.cc: adds every built-in kernel family.
void RegisterAllKernels(OpRegistry& registry);

}  // namespace edgeopt::rt
