// Base for kernels whose output shapes depend on the *values* of some inputs (axes, begin/size,
// paddings, multiples, output size...). Prepare computes the plan when those values are known
// (constant inputs, or a re-prepare during invoke); otherwise it marks the outputs dynamic and
// Invoke plans first, then sets the output shapes, as the runtime's kernel contract asks.
#pragma once

#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/tensor_args.h"

namespace edgeopt::kernels {

// Constant inputs must hold the bytes their shape needs: a sparse constant (its buffer holds
// only the stored values) must go through DENSIFY, never straight into another kernel.
inline Status CheckConstantInputsComplete(const rt::KernelContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const rt::RtTensor* t = ctx.input(i);
    if (!t || !t->is_constant()) continue;
    const size_t need = rt::TensorBytes(t->type, t->shape);
    if (t->bytes < need || (t->def && t->def->sparsity))
      return ctx.Error("constant input " + std::to_string(i) + " " + Describe(*t) + " has " + std::to_string(t->bytes) +
                       " bytes of data, its shape needs " + std::to_string(need) +
                       (t->def && t->def->sparsity ? " (sparse constants must be expanded by DENSIFY)" : ""));
  }
  return Status::Ok();
}

// Fails unless a quantized tensor's scale is finite and positive (requantizing divides by it).
inline Status CheckScale(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what) {
  const float s = t.scale();
  if (!(s > 0.0f) || !(s < std::numeric_limits<float>::infinity()))
    return ctx.Error(what + " has an invalid quantization scale " + std::to_string(s));
  return Status::Ok();
}

class PlannedKernel : public rt::OpKernel {
 public:
  // value_inputs: positions of the inputs whose values decide output shapes (missing optional
  // inputs are ignored).
  PlannedKernel(std::string variant, std::vector<int> value_inputs)
      : variant_(std::move(variant)), value_inputs_(std::move(value_inputs)) {}

  Status Prepare(rt::KernelContext& ctx) final {
    if (!AcceptsSparseInputs()) RETURN_IF_ERROR(CheckConstantInputsComplete(ctx));
    RETURN_IF_ERROR(Check(ctx));
    deferred_ = false;
    for (int i : value_inputs_) {
      const rt::RtTensor* t = ctx.input(i);
      if (t && !ValuesKnown(ctx, *t)) deferred_ = true;
    }
    if (deferred_) {
      for (int o = 0; o < ctx.num_outputs(); ++o) ctx.MarkOutputDynamic(o);
      return Status::Ok();
    }
    return Plan(ctx);
  }

  Status Invoke(rt::KernelContext& ctx) final {
    if (deferred_) RETURN_IF_ERROR(Plan(ctx));
    return Run(ctx);
  }

  std::string variant() const override { return variant_; }

 protected:
  // Checks that need no input values: counts, types, ranks. Runs in every Prepare.
  virtual Status Check(rt::KernelContext& ctx) = 0;
  // Reads the value inputs, validates them, stores what Run needs and sets output shapes.
  virtual Status Plan(rt::KernelContext& ctx) = 0;
  // Computes the outputs from the plan.
  virtual Status Run(rt::KernelContext& ctx) = 0;

  void set_variant(std::string v) { variant_ = std::move(v); }
  // Only DENSIFY reads constants stored in the sparse format.
  virtual bool AcceptsSparseInputs() const { return false; }

 private:
  std::string variant_;
  std::vector<int> value_inputs_;
  bool deferred_ = false;
};

// A factory making a fresh K(args...) for every op (no creation-time checks).
template <typename K, typename... Args>
rt::KernelFactory MakeKernelFactory(Args... args) {
  return [=](const rt::KernelCreateContext&) -> Expected<std::unique_ptr<rt::OpKernel>> {
    return std::unique_ptr<rt::OpKernel>(new K(args...));
  };
}

// Checks input/output counts and that the first `min_in` inputs are present (outputs < 0:
// any number of outputs).
inline Status CheckIo(const rt::KernelContext& ctx, int min_in, int max_in, int outputs) {
  RETURN_IF_ERROR(CheckInputCount(ctx, min_in, max_in));
  for (int i = 0; i < min_in; ++i)
    if (!ctx.input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
  if (outputs >= 0) RETURN_IF_ERROR(CheckOutputCount(ctx, outputs));
  if (ctx.num_outputs() < 1) return ctx.Error("has no outputs");
  return Status::Ok();
}

// Fails unless `t` is a copyable fixed-size type; `what` names it.
inline Status CheckCopyableType(const rt::KernelContext& ctx, const rt::RtTensor& t, const std::string& what) {
  if (ElementBytes(t.type) == 0) return ctx.UnsupportedError(what + " of type " + TypeName(t.type) + " is not supported");
  return Status::Ok();
}

// Fails unless output `o` has the type of input `i`.
inline Status CheckSameType(const rt::KernelContext& ctx, int i, int o) {
  const rt::RtTensor* in = ctx.input(i);
  const rt::RtTensor* out = ctx.output(o);
  if (in->type != out->type)
    return ctx.Error("output " + std::to_string(o) + " is " + TypeName(out->type) + " but input " + std::to_string(i) +
                     " is " + TypeName(in->type));
  return Status::Ok();
}

}  // namespace edgeopt::kernels
