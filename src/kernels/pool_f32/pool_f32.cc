// AVERAGE_POOL_2D and MAX_POOL_2D, float32.
#include "kernels/pool_f32/pool_f32.h"

#include <algorithm>
#include <limits>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/quant_utils.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/ops_f32.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels {
namespace pool {

void RowsScalar(Kind kind, const Geometry& g, const float* in, float* out, int row_begin, int row_end,
                gemm::MinMax mm) {
  for (int row = row_begin; row < row_end; ++row) {
    const int b = row / g.oh, oy = row % g.oh;
    const int iy0 = oy * g.sh - g.pad_top;
    const int fy0 = std::max(0, -iy0), fy1 = std::min(g.fh, g.h - iy0);
    for (int ox = 0; ox < g.ow; ++ox) {
      const int ix0 = ox * g.sw - g.pad_left;
      const int fx0 = std::max(0, -ix0), fx1 = std::min(g.fw, g.w - ix0);
      const int count = std::max(0, fy1 - fy0) * std::max(0, fx1 - fx0);
      float* o = out + (static_cast<size_t>(row) * g.ow + ox) * g.c;
      for (int c = 0; c < g.c; ++c) o[c] = kind == Kind::kAverage ? 0.0f : std::numeric_limits<float>::lowest();
      for (int fy = fy0; fy < fy1; ++fy)
        for (int fx = fx0; fx < fx1; ++fx) {
          const float* p = in + ((static_cast<size_t>(b) * g.h + iy0 + fy) * g.w + ix0 + fx) * g.c;
          if (kind == Kind::kAverage)
            for (int c = 0; c < g.c; ++c) o[c] += p[c];
          else
            for (int c = 0; c < g.c; ++c) o[c] = std::max(o[c], p[c]);
        }
      const float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
      for (int c = 0; c < g.c; ++c) {
        const float v = kind == Kind::kAverage ? o[c] * scale : o[c];
        o[c] = std::min(std::max(v, mm.min), mm.max);
      }
    }
  }
}

}  // namespace pool

namespace {

using gemm::MinMax;

class Pool2DF32 : public rt::OpKernel {
 public:
  Pool2DF32(pool::Kind kind, bool avx2, MinMax mm) : kind_(kind), avx2_(avx2), mm_(mm) {}

  // Shapes are checked as the reference kernel checks them (kernels/pooling), with its messages.
  Status Prepare(rt::KernelContext& ctx) override {
    const auto& o = GetOptions<tflite::Pool2DOptionsT>(ctx.op());
    const rt::RtTensor* in = ctx.input(0);
    if (in->rank() != 4) return ctx.Error("input " + Describe(*in) + " must have rank 4 (NHWC)");
    WindowSpec spec;
    spec.padding = o.padding;
    spec.stride_h = o.stride_h;
    spec.stride_w = o.stride_w;
    spec.filter_h = o.filter_height;
    spec.filter_w = o.filter_width;
    WindowGeometry wg;
    RETURN_IF_ERROR(ComputeWindow(ctx, spec, in->dim(1), in->dim(2), &wg));
    pool::Geometry g;
    g.batch = in->dim(0);
    g.h = in->dim(1);
    g.w = in->dim(2);
    g.c = in->dim(3);
    g.fh = o.filter_height;
    g.fw = o.filter_width;
    g.sh = o.stride_h;
    g.sw = o.stride_w;
    g.oh = wg.out_h;
    g.ow = wg.out_w;
    g.pad_top = wg.pad_h;
    g.pad_left = wg.pad_w;
    g_ = g;
    return ctx.SetOutputShape(0, {g.batch, g.oh, g.ow, g.c});
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const float* in = ctx.input(0)->data_as<float>();
    float* out = ctx.output(0)->data_as<float>();
    const int rows = g_.batch * g_.oh;
    const int64_t row_work = int64_t{g_.ow} * g_.c * g_.fh * g_.fw;
    const int64_t tasks =
        TaskCount(ctx.threads().num_threads(), rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, row_work)));
    RunTasks(&ctx.threads(), tasks, [&](int64_t t) {
      const int r0 = static_cast<int>(rows * t / tasks), r1 = static_cast<int>(rows * (t + 1) / tasks);
      if (avx2_)
        pool::RowsAvx2(kind_, g_, in, out, r0, r1, mm_);
      else
        pool::RowsScalar(kind_, g_, in, out, r0, r1, mm_);
    });
    return Status::Ok();
  }

  std::string variant() const override {
    return std::string(kind_ == pool::Kind::kAverage ? "average_pool2d" : "max_pool2d") + "/f32/" +
           (avx2_ ? "avx2" : "scalar");
  }

 private:
  const pool::Kind kind_;
  const bool avx2_;
  const MinMax mm_;
  pool::Geometry g_;
};

std::unique_ptr<rt::OpKernel> MakePool(pool::Kind kind, const rt::KernelCreateContext& cc) {
  if (cc.reference_only || cc.num_inputs() != 1 || cc.num_outputs() != 1) return nullptr;
  if (!IsFloat32(cc.input(0)) || !IsFloat32(cc.output(0))) return nullptr;
  const auto& o = GetOptions<tflite::Pool2DOptionsT>(cc.op);
  MinMax mm;
  if (!FusedMinMax(o.fused_activation_function, &mm)) return nullptr;
  if (o.padding != tflite::Padding_SAME && o.padding != tflite::Padding_VALID) return nullptr;
  return std::make_unique<Pool2DF32>(kind, cc.cpu.has_avx2_fma(), mm);
}

}  // namespace

std::unique_ptr<rt::OpKernel> MakeAveragePool2DF32(const rt::KernelCreateContext& cc) {
  return MakePool(pool::Kind::kAverage, cc);
}
std::unique_ptr<rt::OpKernel> MakeMaxPool2DF32(const rt::KernelCreateContext& cc) {
  return MakePool(pool::Kind::kMax, cc);
}

}  // namespace edgeopt::kernels
