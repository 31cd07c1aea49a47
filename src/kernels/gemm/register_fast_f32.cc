// Registration of the fast float32 kernels. For each op the factory asks the fast path first
// (Make*F32) and falls back to the factory that was registered before (the reference family),
// so this must run after the reference families in register_all.cc. Until those families are
// merged there is nothing to fall back to and unhandled cases are reported as unsupported.
// See README.md for the contract.
#include <string>

#include "kernels/gemm/ops_f32.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {

// temp_ref_ops.cc (temporary, see there).
std::unique_ptr<rt::OpKernel> MakeTempRefF32(const rt::KernelCreateContext& cc);

namespace {

using MakeFn = std::unique_ptr<rt::OpKernel> (*)(const rt::KernelCreateContext&);

const rt::KernelFactory* Existing(const rt::OpRegistry& r, tflite::BuiltinOperator code) {
  Operator op;
  op.code = code;
  return r.Find(op);
}

// Fast path first, then whatever was registered for the op before.
void AddFastFirst(rt::OpRegistry& r, tflite::BuiltinOperator code, MakeFn make) {
  const rt::KernelFactory* prev = Existing(r, code);
  rt::KernelFactory fallback = prev ? *prev : rt::KernelFactory();
  r.Add(code, [make, fallback](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (auto k = make(cc)) return k;
    if (fallback) return fallback(cc);
    return cc.Error(cc.reference_only ? "no reference kernel on this branch yet (only the fast float32 path)"
                                      : "only float32 with constant weights and a clamp activation is supported "
                                        "(fast float32 path; reference kernels not merged yet)");
  });
}

// Only when the op has no kernel at all (temporary stand-ins, see temp_ref_ops.cc).
void AddIfAbsent(rt::OpRegistry& r, tflite::BuiltinOperator code, MakeFn make) {
  if (Existing(r, code)) return;
  r.Add(code, [make](const rt::KernelCreateContext& cc) -> Expected<std::unique_ptr<rt::OpKernel>> {
    if (auto k = make(cc)) return k;
    return cc.Error("only float32 is supported by the temporary kernel on this branch");
  });
}

}  // namespace

void RegisterFastFloatKernels(rt::OpRegistry& r) {
  AddFastFirst(r, tflite::BuiltinOperator_CONV_2D, MakeConv2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_FULLY_CONNECTED, MakeFullyConnectedF32);
  AddFastFirst(r, tflite::BuiltinOperator_DEPTHWISE_CONV_2D, MakeDepthwiseConv2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_AVERAGE_POOL_2D, MakeAveragePool2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_MAX_POOL_2D, MakeMaxPool2DF32);
  AddFastFirst(r, tflite::BuiltinOperator_ADD, MakeBinaryF32);
  AddFastFirst(r, tflite::BuiltinOperator_SUB, MakeBinaryF32);
  AddFastFirst(r, tflite::BuiltinOperator_MUL, MakeBinaryF32);
  // TEMPORARY stand-ins until those families are merged (float32 only, plain loops).
  AddIfAbsent(r, tflite::BuiltinOperator_SOFTMAX, MakeTempRefF32);
  AddIfAbsent(r, tflite::BuiltinOperator_RESIZE_BILINEAR, MakeTempRefF32);
  AddIfAbsent(r, tflite::BuiltinOperator_CONCATENATION, MakeTempRefF32);
  AddIfAbsent(r, tflite::BuiltinOperator_MEAN, MakeTempRefF32);
}

}  // namespace edgeopt::kernels
