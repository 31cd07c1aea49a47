// COMPLEX_ABS of complex64 on AVX-512 (complex_abs_avx512.cc), the reference kernel's values bit
// for bit; complex128 and CPUs without AVX-512 keep the reference kernel.
#include "kernels/common/fast_kernel.h"
#include "kernels/signal/signal.h"

namespace edgeopt::kernels {
namespace {

class ComplexAbsFast : public FastKernel {
 public:
  explicit ComplexAbsFast(std::unique_ptr<rt::OpKernel> ref) : FastKernel(std::move(ref)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override { return ctx.input(0)->type == DType::kComplex64; }
  Status InvokeFast(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    ComplexAbsAvx512(in->data_as<float>(), ctx.output(0)->data_as<float>(), in->num_elements());
    return Status::Ok();
  }
  std::string FastVariant() const override { return "complex_abs/complex64/avx512"; }
};

std::unique_ptr<rt::OpKernel> MakeComplexAbsFast(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || !cc.cpu.has_avx512()) return nullptr;
  auto ref = MakeReferenceKernel(cc, reference);
  return ref ? std::make_unique<ComplexAbsFast>(std::move(ref)) : nullptr;
}

}  // namespace

void RegisterFastComplexAbs(rt::OpRegistry& r) {
  AddFastWithFallback(r, tflite::BuiltinOperator_COMPLEX_ABS, MakeComplexAbsFast);
}

}  // namespace edgeopt::kernels
