// A channel CONCATENATION read only by a 1×1 CONV_2D, run as one op (see fused.h for when it
// applies):
//
//   y = act(concat(x_0, ..., x_{J-1}) · W + bias) = act(sum_j x_j · W_j + bias)
//
// where W_j are the rows of W (input channels) that x_j fills. An input that is the same at
// every pixel of an image, u_j (a resize of a 1×1 map: DeepLab's image pooling branch is a
// global average pool, a 1×1 convolution and a bilinear resize back to the feature map),
// contributes the same vector u_j · W_j to every pixel: it is added to the bias once per image
// and its channels leave the GEMM. DeepLabV3's head (33×33 pixels, 512 -> 256 channels, half of
// them pooled) then multiplies 256 channels per pixel instead of 512, and the 1.1 MB
// concatenation is never written. The other inputs are read in place when there is one, or
// gathered into a scratch buffer when there are several (as the concatenation would have
// been, without the uniform channels).
//
// Uniformity is a property of the graph (the resize's input is 1×1), checked again at every
// Prepare on the actual shapes: when a resized model's pooled map is no longer 1×1, that input
// is treated as an ordinary one. The uniform vector is read from the resize's input, so the
// result is the unfused one up to the order of the float additions (and the rounding of
// bilinear weights that sum to 1).
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/kernel_util.h"
#include "kernels/common/nn_util.h"
#include "kernels/fused/fused.h"
#include "kernels/gemm/f32_op_util.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/parallel.h"

namespace edgeopt::kernels::fused {
namespace {

using gemm::PackedB;

// The weights [N][K] split by the inputs that are uniform (mask): the other inputs' columns
// packed for the GEMM with the bias, the uniform inputs' columns transposed ([Ku][N]).
struct SplitWeights {
  PackedB pixels;               // [N][K'] (K' = 0: empty)
  std::vector<float> bias;      // padded_n floats (zeros past N and without a bias)
  std::vector<float> uniform;   // [Ku][N]
};

class ConcatPointwiseF32 final : public rt::OpKernel {
 public:
  // Inputs of the synthetic op: the J concatenated inputs, the 1×1 weights, the bias (or -1),
  // then per concatenated input the 1×1 map it is a resize of (or -1).
  ConcatPointwiseF32(int parts, int conv_op, gemm::MinMax mm, const rt::CpuFeatures& cpu)
      : parts_(parts), conv_op_(conv_op), mm_(mm), cpu_(&cpu) {}

  Status Prepare(rt::KernelContext& ctx) override {
    const rt::RtTensor* first = ctx.input(0);
    if (first->rank() != 4) return ctx.Error("input " + Describe(*first) + " must have rank 4 (NHWC)");
    batch_ = first->dim(0);
    pixels_ = int64_t{first->dim(1)} * first->dim(2);
    widths_.assign(parts_, 0);
    uniform_.assign(parts_, false);
    int k = 0;
    std::string mask;
    for (int j = 0; j < parts_; ++j) {
      const rt::RtTensor* x = ctx.input(j);
      if (x->rank() != 4 || x->dim(0) != batch_ || x->dim(1) != first->dim(1) || x->dim(2) != first->dim(2))
        return ctx.Error("concatenated input " + Describe(*x) + " does not match " + Describe(*first) +
                         " outside the channels");
      widths_[j] = x->dim(3);
      k += widths_[j];
      const rt::RtTensor* src = ctx.input(parts_ + 2 + j);
      uniform_[j] = src && src->rank() == 4 && src->dim(0) == batch_ && src->dim(1) == 1 && src->dim(2) == 1 &&
                    src->dim(3) == widths_[j];
      mask += uniform_[j] ? 'u' : 'x';
    }
    const rt::RtTensor* w = ctx.input(parts_);
    if (w->dim(3) != k)
      return ctx.Error("the concatenation has " + std::to_string(k) + " channels but the 1x1 weights " + Describe(*w) +
                       " expect " + std::to_string(w->dim(3)));
    n_ = w->dim(0);
    k_pixels_ = 0;
    gathered_ = 0;
    for (int j = 0; j < parts_; ++j)
      if (!uniform_[j]) {
        k_pixels_ += widths_[j];
        ++gathered_;
      }
    uk_ = &gemm::SelectPointwiseUkernels(*cpu_, std::max(k_pixels_, 1), n_, batch_ * pixels_);
    const rt::RtTensor* bias = ctx.input(parts_ + 1);
    split_ = GetOrPackFor<SplitWeights>(ctx, conv_op_, "concat-split/" + mask + "/" + gemm::PackKeyFor(*uk_), [&] {
      return Split(w->data_as<float>(), bias ? bias->data_as<float>() : nullptr, k);
    });
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {batch_, first->dim(1), first->dim(2), n_}));
    bias_scratch_ = ctx.RequestScratch(split_->bias.size() * sizeof(float));
    gather_scratch_ = gathered_ > 1 ? ctx.RequestScratch(static_cast<size_t>(pixels_) * k_pixels_ * sizeof(float)) : -1;
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    const SplitWeights& sw = *split_;
    float* bias = ctx.Scratch<float>(bias_scratch_);
    float* gather = gather_scratch_ >= 0 ? ctx.Scratch<float>(gather_scratch_) : nullptr;
    float* y = ctx.output(0)->data_as<float>();
    rt::ThreadPool& pool = ctx.threads();
    for (int b = 0; b < batch_; ++b) {
      // The bias of image b: the conv's, plus every uniform input's vector times its columns.
      std::copy(sw.bias.begin(), sw.bias.end(), bias);
      const float* wu = sw.uniform.data();
      for (int j = 0; j < parts_; ++j) {
        if (!uniform_[j]) continue;
        const float* u = ctx.input(parts_ + 2 + j)->data_as<float>() + static_cast<size_t>(b) * widths_[j];
        for (int c = 0; c < widths_[j]; ++c, wu += n_)
          for (int o = 0; o < n_; ++o) bias[o] += u[c] * wu[o];
      }
      float* yb = y + static_cast<size_t>(b) * pixels_ * n_;
      if (k_pixels_ == 0) {  // every input uniform: every pixel is the clamped bias
        for (int o = 0; o < n_; ++o) yb[o] = std::clamp(bias[o], mm_.min, mm_.max);
        for (int64_t p = 1; p < pixels_; ++p) std::memcpy(yb + p * n_, yb, static_cast<size_t>(n_) * sizeof(float));
        continue;
      }
      const float* a = nullptr;
      if (gathered_ == 1) {
        for (int j = 0; j < parts_ && !a; ++j)
          if (!uniform_[j]) a = ctx.input(j)->data_as<float>() + static_cast<size_t>(b) * pixels_ * widths_[j];
      } else {
        Gather(ctx, b, gather, &pool);
        a = gather;
      }
      gemm::Gemm(*uk_, &pool, static_cast<size_t>(pixels_), a, static_cast<size_t>(k_pixels_), sw.pixels, yb,
                 static_cast<size_t>(n_), mm_, bias);
    }
    return Status::Ok();
  }

  // A uniform input is read through the 1x1 map it is a resize of, never itself: its producer
  // (the resize) then need not run (SubgraphExec::MarkUnreadNodes).
  bool ReadsInputAtInvoke(int input) const override {
    return !(input >= 0 && input < parts_ && static_cast<size_t>(input) < uniform_.size() && uniform_[input]);
  }

  std::string variant() const override {
    const std::string isa = uk_ ? uk_->isa : "";
    return "fused/concat+pw/f32/" + isa + (k_pixels_ < KTotal() ? "/uniform" : "");
  }
  int64_t Macs(const rt::KernelContext&) const override {
    return int64_t{batch_} * (pixels_ * k_pixels_ + (KTotal() - k_pixels_)) * n_;
  }
  size_t PackedBytes() const override {
    return split_ ? split_->pixels.bytes() + (split_->bias.size() + split_->uniform.size()) * sizeof(float) : 0;
  }

 private:
  int KTotal() const {
    int k = 0;
    for (int wj : widths_) k += wj;
    return k;
  }

  SplitWeights Split(const float* w, const float* bias, int k) const {
    SplitWeights sw;
    std::vector<float> pixels(static_cast<size_t>(n_) * k_pixels_);
    sw.uniform.resize(static_cast<size_t>(k - k_pixels_) * n_);
    for (int o = 0; o < n_; ++o) {
      const float* row = w + static_cast<size_t>(o) * k;
      float* prow = pixels.data() + static_cast<size_t>(o) * k_pixels_;
      int c0 = 0, cu = 0;
      for (int j = 0; j < parts_; ++j) {
        for (int c = 0; c < widths_[j]; ++c) {
          if (uniform_[j]) sw.uniform[static_cast<size_t>(cu++) * n_ + o] = row[c0 + c];
          else *prow++ = row[c0 + c];
        }
        c0 += widths_[j];
      }
    }
    if (k_pixels_ > 0) sw.pixels = gemm::PackNKFor(*uk_, pixels.data(), bias, n_, k_pixels_);
    const size_t padded = static_cast<size_t>((n_ + gemm::kNr - 1) / gemm::kNr) * gemm::kNr;
    sw.bias.assign(padded, 0.0f);
    if (bias) std::copy(bias, bias + n_, sw.bias.begin());
    return sw;
  }

  // The non-uniform inputs of image b, pixel by pixel, into dst ([pixels][K']).
  void Gather(rt::KernelContext& ctx, int b, float* dst, rt::ThreadPool* pool) const {
    std::vector<const float*> src;
    std::vector<int> width;
    for (int j = 0; j < parts_; ++j)
      if (!uniform_[j]) {
        src.push_back(ctx.input(j)->data_as<float>() + static_cast<size_t>(b) * pixels_ * widths_[j]);
        width.push_back(widths_[j]);
      }
    const int64_t tasks = TaskCount(pool->num_threads(), pixels_, std::max<int64_t>(1, 4096 / k_pixels_), 1);
    RunTasks(pool, tasks, [&](int64_t t) {
      const int64_t p0 = pixels_ * t / tasks, p1 = pixels_ * (t + 1) / tasks;
      for (int64_t p = p0; p < p1; ++p) {
        float* out = dst + p * k_pixels_;
        for (size_t j = 0; j < src.size(); ++j) {
          std::memcpy(out, src[j] + p * width[j], static_cast<size_t>(width[j]) * sizeof(float));
          out += width[j];
        }
      }
    });
  }

  int parts_;
  int conv_op_;
  gemm::MinMax mm_;
  const rt::CpuFeatures* cpu_;
  const gemm::Ukernels* uk_ = nullptr;
  std::shared_ptr<const SplitWeights> split_;
  std::vector<int> widths_;
  std::vector<bool> uniform_;
  int batch_ = 0;
  int64_t pixels_ = 0;
  int n_ = 0;
  int k_pixels_ = 0;
  int gathered_ = 0;  // inputs that are not uniform
  int bias_scratch_ = -1;
  int gather_scratch_ = -1;
};

// The 1×1 map that tensor t is a resize of (same at every pixel), or -1.
int32_t UniformSource(const Subgraph& s, int32_t t) {
  const int producer = s.FindProducer(t);
  if (producer < 0) return -1;
  const Operator& op = s.ops[producer];
  if (op.code != tflite::BuiltinOperator_RESIZE_BILINEAR && op.code != tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR)
    return -1;
  if (op.inputs.empty() || op.inputs[0] < 0) return -1;
  const Tensor& in = s.tensors[op.inputs[0]];
  if (in.type != DType::kFloat32 || in.shape.size() != 4 || in.shape[1] != 1 || in.shape[2] != 1) return -1;
  return op.inputs[0];
}

}  // namespace

rt::FusedRun MatchConcatPointwiseF32(const rt::KernelCreateContext& cc, const rt::FusionLimits& /*limits*/) {
  rt::FusedRun run;
  const Subgraph& s = cc.subgraph;
  const int i = cc.op_index;
  if (cc.reference_only || cc.op.code != tflite::BuiltinOperator_CONCATENATION || cc.num_outputs() != 1 ||
      i + 1 >= static_cast<int>(s.ops.size()))
    return run;
  const Tensor* out = cc.output(0);
  if (!IsFloat32(out) || out->shape.size() != 4) return run;
  const auto* o = cc.op.options.AsConcatenationOptions();
  if (!o || o->fused_activation_function != tflite::ActivationFunctionType_NONE) return run;
  if (o->axis != 3 && o->axis != -1) return run;
  if (!PrivateLink(s, i, i + 1)) return run;
  Pointwise pw;
  if (!MatchPointwise(ContextOf(cc, i + 1), &pw)) return run;
  std::vector<int32_t> sources;
  bool any = false;
  for (int j = 0; j < cc.num_inputs(); ++j) {
    const Tensor* x = cc.input(j);
    if (!IsFloat32(x) || x->shape.size() != 4) return run;
    sources.push_back(UniformSource(s, cc.op.inputs[j]));
    any = any || sources.back() >= 0;
  }
  if (!any) return run;
  const Operator& conv = s.ops[i + 1];
  auto op = std::make_unique<Operator>();
  op->code = tflite::BuiltinOperator_CUSTOM;
  op->custom_code = "FUSED_CONCAT_PW";
  op->inputs = cc.op.inputs;
  op->inputs.push_back(conv.inputs[1]);
  op->inputs.push_back(conv.inputs.size() > 2 ? conv.inputs[2] : -1);
  op->inputs.insert(op->inputs.end(), sources.begin(), sources.end());
  op->outputs = conv.outputs;
  run.num_ops = 2;
  run.op = std::move(op);
  run.kernel = std::make_unique<ConcatPointwiseF32>(cc.num_inputs(), i + 1, pw.mm, cc.cpu);
  return run;
}

}  // namespace edgeopt::kernels::fused
