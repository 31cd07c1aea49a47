// NON_MAX_SUPPRESSION_V4 (hard NMS) and NON_MAX_SUPPRESSION_V5 (Soft-NMS with Gaussian decay) on
// float32 boxes [N, 4] (y1, x1, y2, x2; either corner first) and scores [N], as TFLite's
// non_max_suppression.cc and reference/non_max_suppression.h:
// - like TFLite, the input count decides: 6 inputs (with soft_nms_sigma) is Soft-NMS with the
//   outputs (selected_indices [M], selected_scores [M], num_valid []), 5 inputs is hard NMS with
//   (selected_indices [M], num_valid []), M = max_output_size; entries past num_valid are 0.
// - candidates are scores strictly above score_threshold, taken best first from a binary max-heap
//   on the score alone, filled and popped in TFLite's order with std::push_heap / std::pop_heap
//   (what std::priority_queue does), so equal scores leave in the same order as in TFLite.
// - a candidate is compared with the boxes selected since it was last examined, newest first;
//   IoU >= iou_threshold drops it; with sigma > 0 each IoU decays its score by exp(-iou^2 / 2sigma)
//   and a decayed candidate goes back into the heap while its score stays above the threshold.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/planned_kernel.h"
#include "kernels/nms/nms.h"

namespace edgeopt::kernels::nms {
namespace {

struct Candidate {
  int index;
  float score;
  int suppress_begin;  // selections [0, suppress_begin) were already compared with it
};

// The heap order of std::priority_queue<Candidate> with operator< on the score.
inline bool LowerScore(const Candidate& a, const Candidate& b) { return a.score < b.score; }

// Intersection over union of boxes i and j, 0 when either box has no positive area. The same
// float operations in the same order as TFLite (std::min/std::max with their NaN behaviour).
float Iou(const float* boxes, int i, int j) {
  const float* a = boxes + 4 * static_cast<int64_t>(i);
  const float* b = boxes + 4 * static_cast<int64_t>(j);
  const float a_ymin = std::min(a[0], a[2]), a_ymax = std::max(a[0], a[2]);
  const float a_xmin = std::min(a[1], a[3]), a_xmax = std::max(a[1], a[3]);
  const float b_ymin = std::min(b[0], b[2]), b_ymax = std::max(b[0], b[2]);
  const float b_xmin = std::min(b[1], b[3]), b_xmax = std::max(b[1], b[3]);
  const float area_a = (a_ymax - a_ymin) * (a_xmax - a_xmin);
  const float area_b = (b_ymax - b_ymin) * (b_xmax - b_xmin);
  if (area_a <= 0.0f || area_b <= 0.0f) return 0.0f;
  const float inter_ymax = std::min(a_ymax, b_ymax);
  const float inter_xmax = std::min(a_xmax, b_xmax);
  const float inter_ymin = std::max(a_ymin, b_ymin);
  const float inter_xmin = std::max(a_xmin, b_xmin);
  const float inter = std::max(inter_ymax - inter_ymin, 0.0f) * std::max(inter_xmax - inter_xmin, 0.0f);
  const float uni = area_a + area_b - inter;
  if (uni == 0.0f) return 0.0f;
  return inter / uni;
}

// Selects up to max_out boxes; `heap` is scratch with capacity >= num_boxes (no allocation).
// Returns the number selected; indices/scores (scores may be null) get that many entries.
int Select(const float* boxes, const float* scores, int num_boxes, int max_out, float iou_threshold,
           float score_threshold, float sigma, std::vector<Candidate>& heap, int32_t* indices, float* out_scores) {
  heap.clear();
  for (int i = 0; i < num_boxes; ++i) {
    if (scores[i] > score_threshold) {
      heap.push_back({i, scores[i], 0});
      std::push_heap(heap.begin(), heap.end(), LowerScore);
    }
  }
  const int wanted = std::min(static_cast<int>(heap.size()), max_out);
  int selected = 0;
  if (wanted == 0) return 0;
  // The decay exponent's factor; TFLite computes -0.5 / sigma (a correctly rounded quotient).
  const float scale = sigma > 0.0f ? -0.5f / sigma : 0.0f;
  while (selected < wanted && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LowerScore);
    Candidate c = heap.back();
    heap.pop_back();
    const float original = c.score;
    bool hard_suppressed = false;
    for (int j = selected - 1; j >= c.suppress_begin; --j) {
      const float iou = Iou(boxes, c.index, indices[j]);
      if (iou >= iou_threshold) {
        hard_suppressed = true;
        break;
      }
      if (sigma > 0.0f) c.score = c.score * std::exp(scale * iou * iou);
      if (c.score <= score_threshold) break;
    }
    c.suppress_begin = selected;
    if (hard_suppressed) continue;
    if (c.score == original) {  // not decayed: selected now
      indices[selected] = c.index;
      if (out_scores) out_scores[selected] = c.score;
      ++selected;
    }
    // Back into the heap while above the threshold, also when just selected (as TFLite): its
    // IoU of 1 with itself suppresses it next time, unless it has no area or iou_threshold > 1,
    // and then TFLite selects the same box again, and so does this.
    if (c.score > score_threshold) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), LowerScore);
    }
  }
  return selected;
}

class NmsKernel : public PlannedKernel {
 public:
  NmsKernel() : PlannedKernel("non_max_suppression/f32/ref", {2}) {}

 protected:
  Status Check(rt::KernelContext& ctx) override {
    if (ctx.num_inputs() != 5 && ctx.num_inputs() != 6)
      return ctx.Error("expects 5 inputs (NMS) or 6 (Soft-NMS, with soft_nms_sigma), has " +
                       std::to_string(ctx.num_inputs()));
    soft_ = ctx.num_inputs() == 6;
    RETURN_IF_ERROR(CheckIo(ctx, ctx.num_inputs(), ctx.num_inputs(), soft_ ? 3 : 2));
    const rt::RtTensor& boxes = *ctx.input(0);
    const rt::RtTensor& scores = *ctx.input(1);
    if (boxes.type != DType::kFloat32)
      return ctx.UnsupportedError("boxes of type " + TypeName(boxes.type) + " are not supported (float32)");
    if (boxes.rank() != 2 || boxes.shape[1] != 4)
      return ctx.Error("boxes " + Describe(boxes) + " must have shape [num_boxes, 4]");
    if (scores.type != DType::kFloat32)
      return ctx.UnsupportedError("scores of type " + TypeName(scores.type) + " are not supported (float32)");
    if (scores.rank() != 1 || scores.shape[0] != boxes.shape[0])
      return ctx.Error("scores " + Describe(scores) + " must have shape [" + std::to_string(boxes.shape[0]) +
                       "] (one per box)");
    const rt::RtTensor& max_out = *ctx.input(2);
    if (max_out.type != DType::kInt32)
      return ctx.Error("max_output_size " + Describe(max_out) + " must be int32");
    if (max_out.num_elements() != 1) return ctx.Error("max_output_size " + Describe(max_out) + " must be a scalar");
    const char* names[] = {"iou_threshold", "score_threshold", "soft_nms_sigma"};
    for (int i = 3; i < ctx.num_inputs(); ++i) {
      const rt::RtTensor& t = *ctx.input(i);
      if (t.type != DType::kFloat32 || t.num_elements() != 1)
        return ctx.Error(std::string(names[i - 3]) + " " + Describe(t) + " must be a float32 scalar");
    }
    if (ctx.output(0)->type != DType::kInt32)
      return ctx.Error("selected_indices " + Describe(*ctx.output(0)) + " must be int32");
    if (soft_ && ctx.output(1)->type != DType::kFloat32)
      return ctx.Error("selected_scores " + Describe(*ctx.output(1)) + " must be float32");
    const rt::RtTensor& count = *ctx.output(soft_ ? 2 : 1);
    if (count.type != DType::kInt32) return ctx.Error("num_valid " + Describe(count) + " must be int32");
    return Status::Ok();
  }

  Status Plan(rt::KernelContext& ctx) override {
    const int32_t m = ctx.input(2)->data_as<int32_t>()[0];
    if (m < 0) return ctx.Error("max_output_size must be >= 0, is " + std::to_string(m));
    max_out_ = m;
    heap_.reserve(static_cast<size_t>(ctx.input(0)->shape[0]));
    RETURN_IF_ERROR(ctx.SetOutputShape(0, rt::Shape{m}));
    if (soft_) RETURN_IF_ERROR(ctx.SetOutputShape(1, rt::Shape{m}));
    return ctx.SetOutputShape(soft_ ? 2 : 1, rt::Shape{});
  }

  Status Run(rt::KernelContext& ctx) override {
    const float iou_threshold = ctx.input(3)->data_as<float>()[0];
    const float score_threshold = ctx.input(4)->data_as<float>()[0];
    float sigma = 0.0f;
    if (soft_) {
      sigma = ctx.input(5)->data_as<float>()[0];
      if (sigma < 0.0f) return ctx.Error("soft_nms_sigma must be >= 0, is " + std::to_string(sigma));
    }
    int32_t* indices = ctx.output(0)->data_as<int32_t>();
    float* scores_out = soft_ ? ctx.output(1)->data_as<float>() : nullptr;
    const int n = ctx.input(0)->shape[0];
    const int selected = Select(ctx.input(0)->data_as<float>(), ctx.input(1)->data_as<float>(), n, max_out_,
                                iou_threshold, score_threshold, sigma, heap_, indices, scores_out);
    for (int i = selected; i < max_out_; ++i) {
      indices[i] = 0;
      if (scores_out) scores_out[i] = 0.0f;
    }
    ctx.output(soft_ ? 2 : 1)->data_as<int32_t>()[0] = selected;
    return Status::Ok();
  }

 private:
  bool soft_ = false;
  int max_out_ = 0;
  std::vector<Candidate> heap_;
};

}  // namespace

void RegisterNonMaxSuppression(rt::OpRegistry& r) {
  r.Add(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V4, MakeKernelFactory<NmsKernel>());
  r.Add(tflite::BuiltinOperator_NON_MAX_SUPPRESSION_V5, MakeKernelFactory<NmsKernel>());
}

}  // namespace edgeopt::kernels::nms
