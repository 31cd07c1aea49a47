// Optimized kernels that keep the reference kernel of their op beside them.
//
// A fast kernel is made by a factory registered in front of the op's earlier factory (see
// RegisterFastInt8Kernels) and wraps the kernel that earlier factory creates with
// reference_only set (the reference kernel):
// - Prepare runs the reference Prepare first, so the op is validated, errors read exactly as
//   without the fast path and output shapes are set by one piece of code; then PrepareFast
//   checks what only shapes reveal and may hand the op back to the reference kernel.
// - Invoke, variant() and Macs() follow whichever kernel runs.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "runtime/cpu.h"
#include "runtime/kernel.h"
#include "runtime/registry.h"

namespace edgeopt::kernels {

// The factory registered for the op before the fast one (reference, possibly behind the float fast path).
using RefFactory = const rt::KernelFactory&;

// Registers `make` in front of the factory registered before for `code` (the reference family,
// possibly behind the float fast path): `make` is given that earlier factory and returns a fast
// kernel or declines with nullptr, and then the earlier factory takes the op.
using FastMakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&, RefFactory);
inline void AddFastWithFallback(rt::OpRegistry& r, tflite::BuiltinOperator code, FastMakeFn make) {
  Operator op;
  op.code = code;
  const rt::KernelFactory* prev = r.Find(op);
  rt::KernelFactory fallback = prev ? *prev : rt::KernelFactory();
  r.Add(code, [make, fallback](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (!fallback) return cc.Error("no kernel registered for this op");
    if (auto k = make(cc, fallback)) return k;
    return fallback(cc);
  });
}

// The widest of an op's three loops this CPU runs, with its name for the variant ("avx512",
// "avx2" or "portable"): the choice the fast elementwise factories make.
template <typename Fn>
Fn WidestLoop(const rt::CpuFeatures& cpu, Fn portable, Fn avx2, Fn avx512, std::string* isa) {
  if (cpu.has_avx512()) {
    *isa = "avx512";
    return avx512;
  }
  if (cpu.has_avx2_fma()) {
    *isa = "avx2";
    return avx2;
  }
  *isa = "portable";
  return portable;
}

// The reference kernel `reference` makes for this op (nullptr if it refuses the op: then the
// fast path must decline too, and the reference factory reports the problem).
inline std::unique_ptr<rt::OpKernel> MakeReferenceKernel(const rt::KernelCreateContext& cc, RefFactory reference) {
  rt::KernelCreateContext ref_cc = cc;
  ref_cc.reference_only = true;
  if (!reference) return nullptr;
  auto k = reference(ref_cc);
  if (!k.ok()) return nullptr;
  return std::move(*k);
}

class FastKernel : public rt::OpKernel {
 public:
  explicit FastKernel(std::unique_ptr<rt::OpKernel> reference) : ref_(std::move(reference)) {}

  Status Prepare(rt::KernelContext& ctx) final {
    RETURN_IF_ERROR(ref_->Prepare(ctx));
    ASSIGN_OR_RETURN(const bool fast, PrepareFast(ctx));
    use_ref_ = !fast;
    return Status::Ok();
  }
  Status Invoke(rt::KernelContext& ctx) final { return use_ref_ ? ref_->Invoke(ctx) : InvokeFast(ctx); }
  std::string variant() const final { return use_ref_ ? ref_->variant() : FastVariant(); }
  int64_t Macs(const rt::KernelContext& ctx) const override { return ref_->Macs(ctx); }
  // After Prepare: whether the op runs on the reference kernel.
  bool uses_reference() const { return use_ref_; }

 protected:
  // After the reference Prepare succeeded: prepare the fast path, or return false to leave the
  // op to the reference kernel (cases the fast path does not implement).
  virtual Expected<bool> PrepareFast(rt::KernelContext& ctx) = 0;
  virtual Status InvokeFast(rt::KernelContext& ctx) = 0;
  virtual std::string FastVariant() const = 0;

 private:
  std::unique_ptr<rt::OpKernel> ref_;
  bool use_ref_ = false;
};

}  // namespace edgeopt::kernels
