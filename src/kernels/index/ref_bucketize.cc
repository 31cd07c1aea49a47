// BUCKETIZE: for each input element, the number of boundaries (the float32 option, sorted
// ascending, equal neighbours allowed) that are <= it, i.e. the position std::upper_bound finds,
// compared as TFLite compares: int32 / int64 / float32 inputs against the float boundary in
// float, float64 inputs in double. NaN compares below nothing, so lands in the last bucket.
// Output int32, the input's shape. A missing BucketizeOptions table is an error (as in TFLite);
// a table without boundaries (absent and empty vectors look alike once read) puts every value
// in bucket 0.
#include <algorithm>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/index/index.h"

namespace edgeopt::kernels::index_ops {
namespace {

template <typename T>
void BucketizeOf(const T* in, int64_t n, const std::vector<float>& b, int32_t* out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int32_t>(std::upper_bound(b.begin(), b.end(), in[i]) - b.begin());
}

class BucketizeKernel : public PlannedKernel {
 public:
  BucketizeKernel() : PlannedKernel("bucketize/any/ref", {}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckIo(ctx, 1, 1, 1));
    const rt::RtTensor& in = *ctx.input(0);
    switch (in.type) {
      case DType::kFloat32: case DType::kFloat64: case DType::kInt32: case DType::kInt64:
        break;
      default:
        return ctx.UnsupportedError("input " + Describe(in) + ": type " + TypeName(in.type) +
                                    " is not supported (float32, float64, int32, int64)");
    }
    if (ctx.output(0)->type != DType::kInt32)
      return ctx.Error("output " + Describe(*ctx.output(0)) + " must be int32");
    if (ctx.op().options.type != tflite::BuiltinOptions_BucketizeOptions || !ctx.op().options.value)
      return ctx.Error("the boundaries option (BucketizeOptions) is missing");
    const std::vector<float>& b = GetOptions<tflite::BucketizeOptionsT>(ctx.op()).boundaries;
    if (!std::is_sorted(b.begin(), b.end())) return ctx.Error("boundaries must be sorted ascending");
    boundaries_ = &b;
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override { return ctx.SetOutputShape(0, ctx.input(0)->shape); }

  Status Run(rt::KernelContext& ctx) override {
    const rt::RtTensor& in = *ctx.input(0);
    int32_t* out = ctx.output(0)->data_as<int32_t>();
    const int64_t n = in.num_elements();
    const std::vector<float>& b = *boundaries_;
    switch (in.type) {
      case DType::kFloat32: BucketizeOf(in.data_as<float>(), n, b, out); break;
      case DType::kFloat64: BucketizeOf(in.data_as<double>(), n, b, out); break;
      case DType::kInt32: BucketizeOf(in.data_as<int32_t>(), n, b, out); break;
      default: BucketizeOf(in.data_as<int64_t>(), n, b, out); break;
    }
    return Status::Ok();
  }

 private:
  const std::vector<float>* boundaries_ = nullptr;  // the op's options (outlive the kernel's use)
};

}  // namespace

void RegisterBucketize(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_BUCKETIZE, MakeKernelFactory<BucketizeKernel>());
}

}  // namespace edgeopt::kernels::index_ops
