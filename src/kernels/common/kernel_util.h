// Small helpers every kernel uses: typed options, input checks with clear messages.
#pragma once

#include <string>

#include "core/dtype.h"
#include "graph/graph.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

// The op's options of object-API type T (Conv2DOptionsT, ...), or schema defaults if absent.
template <typename T>
const T& GetOptions(const Operator& op) {
  static const T kDefault{};
  using Table = typename T::TableType;
  if (op.options.type == tflite::BuiltinOptionsTraits<Table>::enum_value && op.options.value)
    return *static_cast<const T*>(op.options.value);
  return kDefault;
}

// Same for BuiltinOptions2 (StableHLO-era ops).
template <typename T>
const T& GetOptions2(const Operator& op) {
  static const T kDefault{};
  using Table = typename T::TableType;
  if (op.options2.type == tflite::BuiltinOptions2Traits<Table>::enum_value && op.options2.value)
    return *static_cast<const T*>(op.options2.value);
  return kDefault;
}

inline std::string TypeName(DType t) { return std::string(DTypeName(t)); }

// "input 0 'name' [1,2,3] float32" for messages.
inline std::string Describe(const rt::RtTensor& t) {
  std::string s = "'" + t.name() + "' " + rt::ShapeToString(t.shape) + " " + TypeName(t.type);
  return s;
}

// Fails with a message naming the op when the op does not have between min and max inputs.
inline Status CheckInputCount(const rt::KernelContext& ctx, int min, int max) {
  if (ctx.num_inputs() < min || ctx.num_inputs() > max)
    return ctx.Error("expects " + std::to_string(min) + (min == max ? "" : ".." + std::to_string(max)) +
                     " inputs, has " + std::to_string(ctx.num_inputs()));
  return Status::Ok();
}

inline Status CheckOutputCount(const rt::KernelContext& ctx, int n) {
  if (ctx.num_outputs() != n)
    return ctx.Error("expects " + std::to_string(n) + " outputs, has " + std::to_string(ctx.num_outputs()));
  return Status::Ok();
}

// Requires input i to exist (not an omitted optional input).
inline Expected<rt::RtTensor*> RequiredInput(const rt::KernelContext& ctx, int i) {
  rt::RtTensor* t = ctx.input(i);
  if (!t) return ctx.Error("input " + std::to_string(i) + " is missing");
  return t;
}

// A reference kernel implemented by two functions; saves a class per simple op.
// Prepare: Status(KernelContext&, State&); Invoke: Status(KernelContext&, const State&).
template <typename State>
class FnKernel : public rt::OpKernel {
 public:
  using PrepareFn = Status (*)(rt::KernelContext&, State&);
  using InvokeFn = Status (*)(rt::KernelContext&, const State&);
  FnKernel(PrepareFn p, InvokeFn i, std::string variant, bool alias = false)
      : prepare_(p), invoke_(i), variant_(std::move(variant)), alias_(alias) {}
  Status Prepare(rt::KernelContext& ctx) override { return prepare_(ctx, state_); }
  Status Invoke(rt::KernelContext& ctx) override { return invoke_(ctx, state_); }
  std::string variant() const override { return variant_; }
  bool OutputMayAliasInput() const override { return alias_; }

 private:
  PrepareFn prepare_;
  InvokeFn invoke_;
  std::string variant_;
  bool alias_;
  State state_{};
};

// Factory for a FnKernel with no creation-time checks. `alias`: see OpKernel::OutputMayAliasInput.
template <typename State>
rt::KernelFactory MakeFnFactory(typename FnKernel<State>::PrepareFn p, typename FnKernel<State>::InvokeFn i,
                                std::string variant, bool alias = false) {
  return [p, i, variant, alias](const rt::KernelCreateContext&) -> Expected<std::unique_ptr<rt::OpKernel>> {
    return std::unique_ptr<rt::OpKernel>(new FnKernel<State>(p, i, variant, alias));
  };
}

}  // namespace edgeopt::kernels
