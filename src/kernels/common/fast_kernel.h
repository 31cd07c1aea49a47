// Optimized kernels that keep the reference kernel of their op beside them.
//
// A fast kernel is made by the op's reference factory (see each family's Make*Fast function)
// and wraps the reference kernel created by the same factory with reference_only set:
// - Prepare runs the reference Prepare first, so the op is validated, errors read exactly as
//   without the fast path and output shapes are set by one piece of code; then PrepareFast
//   checks what only shapes reveal and may hand the op back to the reference kernel.
// - Invoke, variant() and Macs() follow whichever kernel runs.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "runtime/kernel.h"

namespace edgeopt::kernels {

using RefFactory = Expected<std::unique_ptr<rt::OpKernel>> (*)(const rt::KernelCreateContext&);

// The reference kernel `reference` makes for this op (nullptr if it refuses the op: then the
// fast path must decline too, and the reference factory reports the problem).
inline std::unique_ptr<rt::OpKernel> MakeReferenceKernel(const rt::KernelCreateContext& cc, RefFactory reference) {
  rt::KernelCreateContext ref_cc = cc;
  ref_cc.reference_only = true;
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
