// TEMPORARY: a minimal float32 SOFTMAX reference (last axis, beta), so whole classifiers run on
// this branch. The real SOFTMAX family lives on another branch; drop this file when it lands.
#include <algorithm>
#include <cmath>

#include "kernels/common/kernel_util.h"
#include "kernels/gemm/ops_f32.h"

namespace edgeopt::kernels {
namespace {

class SoftmaxF32Tmp : public rt::OpKernel {
 public:
  explicit SoftmaxF32Tmp(float beta) : beta_(beta) {}
  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    if (in->rank() < 1) return ctx.Error("input must have at least one dimension");
    return ctx.SetOutputShape(0, in->shape);
  }
  Status Invoke(rt::KernelContext& ctx) override {
    const rt::RtTensor* in = ctx.input(0);
    const int64_t d = in->dim(-1);
    if (d == 0) return Status::Ok();
    const int64_t rows = in->num_elements() / d;
    const float* x = in->data_as<float>();
    float* y = ctx.output(0)->data_as<float>();
    for (int64_t r = 0; r < rows; ++r, x += d, y += d) {
      const float mx = *std::max_element(x, x + d);
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += (y[i] = std::exp((x[i] - mx) * beta_));
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < d; ++i) y[i] *= inv;
    }
    return Status::Ok();
  }
  std::string variant() const override { return "softmax/f32/tmp-ref"; }

 private:
  const float beta_;
};

}  // namespace

std::unique_ptr<rt::OpKernel> MakeSoftmaxF32Tmp(const rt::KernelCreateContext& cc) {
  if (cc.num_inputs() != 1 || cc.num_outputs() != 1) return nullptr;
  if (cc.input(0)->type != DType::kFloat32 || cc.output(0)->type != DType::kFloat32) return nullptr;
  return std::make_unique<SoftmaxF32Tmp>(GetOptions<tflite::SoftmaxOptionsT>(cc.op).beta);
}

}  // namespace edgeopt::kernels
