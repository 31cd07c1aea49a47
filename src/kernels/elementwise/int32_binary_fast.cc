// The int32 ADD / SUB / MUL fast path: the reference kernel's Prepare validates the op, then
// the broadcast is reduced to the fewest dimensions that describe it (size-1 output axes
// dropped, neighbours that broadcast alike merged), so the innermost run is as long as
// possible, and runs are done by int32_binary.h's vector loops in blocks over the threads.
#include <algorithm>
#include <memory>

#include "kernels/common/broadcast_parallel.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/kernel_util.h"
#include "kernels/elementwise/int32_binary.h"
#include "kernels/elementwise/ops.h"

namespace edgeopt::kernels::elementwise {

void Int32RunPortable(const Int32Run& r, const int32_t* a, bool a_scalar, const int32_t* b, bool b_scalar,
                      int32_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const auto x = static_cast<uint32_t>(a[a_scalar ? 0 : i]), y = static_cast<uint32_t>(b[b_scalar ? 0 : i]);
    const auto z = static_cast<int32_t>(r.op == Int32Op::kAdd ? x + y : r.op == Int32Op::kSub ? x - y : x * y);
    out[i] = std::min(std::max(z, r.lo), r.hi);
  }
}

namespace {

class Int32Binary : public FastKernel {
 public:
  Int32Binary(std::unique_ptr<rt::OpKernel> ref, Int32Run run, Int32RunFn fn, std::string variant)
      : FastKernel(std::move(ref)), run_(run), fn_(fn), variant_(std::move(variant)) {}

 protected:
  Expected<bool> PrepareFast(rt::KernelContext& ctx) override {
    const rt::Shape& sa = ctx.input(0)->shape;
    const rt::Shape& sb = ctx.input(1)->shape;
    const rt::Shape& out = ctx.output(0)->shape;
    dims_ = CollapseBroadcast(sa, sb, out);
    return true;
  }

  Status InvokeFast(rt::KernelContext& ctx) override {
    const int32_t* a = ctx.input(0)->data_as<int32_t>();
    const int32_t* b = ctx.input(1)->data_as<int32_t>();
    int32_t* out = ctx.output(0)->data_as<int32_t>();
    const bool a_scalar = dims_.back().a_stride == 0, b_scalar = dims_.back().b_stride == 0;
    ForEachBroadcastPiece(ctx.threads(), dims_, [&](int64_t oa, int64_t ob, int64_t o, int64_t n) {
      fn_(run_, a + oa, a_scalar, b + ob, b_scalar, out + o, n);
    });
    return Status::Ok();
  }

  std::string FastVariant() const override { return variant_; }

 private:
  Int32Run run_;
  Int32RunFn fn_;
  std::string variant_;
  std::vector<BroadcastDim> dims_;
};

std::unique_ptr<rt::OpKernel> MakeInt32Binary(const rt::KernelCreateContext& cc, RefFactory reference) {
  if (cc.reference_only || cc.num_inputs() != 2 || cc.num_outputs() != 1) return nullptr;
  for (const Tensor* t : {cc.input(0), cc.input(1), cc.output(0)})
    if (!t || t->type != DType::kInt32) return nullptr;
  Int32Run run;
  int activation = 0;
  std::string name;
  switch (cc.op.code) {
    case tflite::BuiltinOperator_ADD:
      run.op = Int32Op::kAdd;
      activation = GetOptions<tflite::AddOptionsT>(cc.op).fused_activation_function;
      name = "add";
      break;
    case tflite::BuiltinOperator_SUB:
      run.op = Int32Op::kSub;
      activation = GetOptions<tflite::SubOptionsT>(cc.op).fused_activation_function;
      name = "sub";
      break;
    case tflite::BuiltinOperator_MUL:
      run.op = Int32Op::kMul;
      activation = GetOptions<tflite::MulOptionsT>(cc.op).fused_activation_function;
      name = "mul";
      break;
    default: return nullptr;
  }
  IntActivationRange<int32_t>(activation, &run.lo, &run.hi);
  auto ref = MakeReferenceKernel(cc, reference);
  if (!ref) return nullptr;
  std::string isa;
  const Int32RunFn fn = WidestLoop<Int32RunFn>(cc.cpu, Int32RunPortable, Int32RunAvx2, Int32RunAvx512, &isa);
  return std::make_unique<Int32Binary>(std::move(ref), run, fn, name + "/int32/" + isa);
}

}  // namespace

void RegisterFastInt32Binary(rt::OpRegistry& r) {
  for (auto op : {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB, tflite::BuiltinOperator_MUL})
    AddFastWithFallback(r, op, MakeInt32Binary);
}

}  // namespace edgeopt::kernels::elementwise
