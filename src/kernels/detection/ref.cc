// Custom op TFLite_Detection_PostProcess (SSD box decoding + non-max suppression), with the
// semantics of TFLite 2.9's kernels/detection_postprocess.cc.
//
// Inputs: box encodings [1, N, >=4] (y, x, h, w relative to the anchor), class scores
// [1, N, C] (C = num_classes, or num_classes + 1 with a leading background class), anchors
// [N, 4] (y, x, h, w). float32, or uint8/int8 dequantized with each tensor's scale/zero point.
// Outputs (float32): boxes [1, D, 4] (ymin, xmin, ymax, xmax), classes [1, D], scores [1, D],
// num_detections [1], with D = max_detections * max_classes_per_detection.
// Options come from a flexbuffer map in the op's custom options.
//
// Fast NMS (default): each anchor's best class score drives one NMS over anchors, and each kept
// anchor reports its top max_classes_per_detection classes. Regular NMS (use_regular_nms): NMS
// per class (detections_per_class each), then the best max_detections over all classes.
// Ranking ties are broken exactly as TFLite does (stable sort for NMS, first maximum for a
// single class, std::partial_sort for an anchor's top classes, and for regular NMS the newer
// class first among equal scores when merging classes).
// Output rows TFLite leaves unwritten (fewer detections than D) are zero here.
#include <emmintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include <flatbuffers/flexbuffers.h>

#include "kernels/common/kernel_util.h"
#include "kernels/registration.h"

namespace edgeopt::kernels {
namespace {

struct DetectionOptions {
  int max_detections = 0;
  int max_classes_per_detection = 0;
  int detections_per_class = 100;
  bool use_regular_nms = false;
  float score_threshold = 0;
  float iou_threshold = 0;
  int num_classes = 0;
  float y_scale = 0, x_scale = 0, h_scale = 0, w_scale = 0;
};

struct Box {
  float ymin, xmin, ymax, xmax;
};

Expected<DetectionOptions> ParseOptions(const rt::KernelCreateContext& cc) {
  const auto& bytes = cc.op.custom_options;
  if (bytes.empty()) return cc.Error("needs flexbuffer custom options (max_detections, num_classes, ...)");
  if (!flexbuffers::VerifyBuffer(bytes.data(), bytes.size()))
    return cc.Error("custom options are not a valid flexbuffer");
  const flexbuffers::Reference root = flexbuffers::GetRoot(bytes.data(), bytes.size());
  if (!root.IsMap()) return cc.Error("custom options must be a flexbuffer map");
  const flexbuffers::Map m = root.AsMap();
  std::string missing;
  auto get = [&](const char* key) {
    flexbuffers::Reference r = m[key];
    if (r.IsNull()) missing += std::string(missing.empty() ? "" : ", ") + key;
    return r;
  };
  DetectionOptions o;
  o.max_detections = get("max_detections").AsInt32();
  o.max_classes_per_detection = get("max_classes_per_detection").AsInt32();
  o.score_threshold = get("nms_score_threshold").AsFloat();
  o.iou_threshold = get("nms_iou_threshold").AsFloat();
  o.num_classes = get("num_classes").AsInt32();
  o.y_scale = get("y_scale").AsFloat();
  o.x_scale = get("x_scale").AsFloat();
  o.h_scale = get("h_scale").AsFloat();
  o.w_scale = get("w_scale").AsFloat();
  if (!missing.empty()) return cc.Error("custom options lack " + missing);
  if (!m["detections_per_class"].IsNull()) o.detections_per_class = m["detections_per_class"].AsInt32();
  if (!m["use_regular_nms"].IsNull()) o.use_regular_nms = m["use_regular_nms"].AsBool();

  if (o.max_detections < 0) return cc.Error("max_detections must be >= 0, is " + std::to_string(o.max_detections));
  if (o.max_classes_per_detection <= 0)
    return cc.Error("max_classes_per_detection must be > 0, is " + std::to_string(o.max_classes_per_detection));
  if (o.use_regular_nms && o.detections_per_class <= 0)
    return cc.Error("detections_per_class must be > 0, is " + std::to_string(o.detections_per_class));
  if (!(o.iou_threshold > 0.0f && o.iou_threshold <= 1.0f))
    return cc.Error("nms_iou_threshold must be in (0, 1], is " + std::to_string(o.iou_threshold));
  if (o.num_classes <= 0) return cc.Error("num_classes must be > 0, is " + std::to_string(o.num_classes));
  if (static_cast<int64_t>(o.max_detections) * o.max_classes_per_detection > (int64_t{1} << 24))
    return cc.Error("max_detections * max_classes_per_detection is too large");
  return o;
}

bool IsSupportedType(DType t) { return t == DType::kFloat32 || t == DType::kUInt8 || t == DType::kInt8; }

// Index of the first largest of n > 0 bytes, compared as uint8 or (is_signed) as int8. SSE2:
// the maximum over 16 bytes at a time (int8 compared as uint8 with the sign bit flipped), then
// memchr for its first occurrence.
int FirstMaxByte(const uint8_t* p, int n, bool is_signed) {
  const uint8_t flip = is_signed ? 0x80 : 0;
  const __m128i vflip = _mm_set1_epi8(static_cast<char>(flip));
  __m128i vmax = _mm_setzero_si128();
  int i = 0;
  for (; i + 16 <= n; i += 16)
    vmax = _mm_max_epu8(vmax, _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), vflip));
  vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 8));
  vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 4));
  vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 2));
  vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 1));
  uint8_t m = static_cast<uint8_t>(_mm_cvtsi128_si32(vmax));
  for (; i < n; ++i) m = std::max<uint8_t>(m, p[i] ^ flip);
  return static_cast<int>(static_cast<const uint8_t*>(std::memchr(p, m ^ flip, static_cast<size_t>(n))) - p);
}

// Element i of a float32/uint8/int8 tensor as float (TFLite's Dequantizer: (q - zp) * scale).
float BoxValue(const rt::RtTensor& t, int64_t i) {
  switch (t.type) {
    case DType::kUInt8: return (static_cast<float>(t.data[i]) - t.zero_point()) * t.scale();
    case DType::kInt8: return (static_cast<float>(t.data_as<int8_t>()[i]) - t.zero_point()) * t.scale();
    default: return t.data_as<float>()[i];
  }
}

class DetectionPostProcessKernel : public rt::OpKernel {
 public:
  explicit DetectionPostProcessKernel(DetectionOptions o) : o_(o) {}
  std::string variant() const override { return "detection_postprocess/" + dtype_ + "/ref"; }

  Status Prepare(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(CheckInputCount(ctx, 3, 3));
    RETURN_IF_ERROR(CheckOutputCount(ctx, 4));
    const rt::RtTensor* boxes = ctx.input(0);
    const rt::RtTensor* scores = ctx.input(1);
    const rt::RtTensor* anchors = ctx.input(2);
    if (!boxes || !scores || !anchors) return ctx.Error("box encodings, class scores and anchors are all required");
    if (boxes->rank() != 3 || boxes->dim(0) != 1 || boxes->dim(2) < 4)
      return ctx.Error("box encodings must be [1, num_boxes, >=4], are " + Describe(*boxes));
    num_boxes_ = boxes->dim(1);
    box_stride_ = boxes->dim(2);
    if (scores->rank() != 3 || scores->dim(0) != 1 || scores->dim(1) != num_boxes_)
      return ctx.Error("class scores must be [1, " + std::to_string(num_boxes_) + ", classes], are " + Describe(*scores));
    classes_with_background_ = scores->dim(2);
    const int label_offset = classes_with_background_ - o_.num_classes;
    if (label_offset < 0 || label_offset > 1)
      return ctx.Error("class scores have " + std::to_string(classes_with_background_) + " columns for num_classes " +
                       std::to_string(o_.num_classes) + " (expected num_classes or num_classes + 1)");
    if (anchors->rank() != 2 || anchors->dim(0) != num_boxes_ || anchors->dim(1) != 4)
      return ctx.Error("anchors must be [" + std::to_string(num_boxes_) + ", 4], are " + Describe(*anchors));
    for (const rt::RtTensor* t : {boxes, scores, anchors})
      if (!IsSupportedType(t->type)) return ctx.Error("input " + Describe(*t) + " must be float32, uint8 or int8");
    if ((boxes->type == DType::kFloat32) != (anchors->type == DType::kFloat32))
      return ctx.Error("box encodings " + Describe(*boxes) + " and anchors " + Describe(*anchors) +
                       " must both be float32 or both quantized");
    for (int i = 0; i < 4; ++i)
      if (ctx.output(i)->type != DType::kFloat32)
        return ctx.Error("output " + std::to_string(i) + " must be float32, is " + Describe(*ctx.output(i)));
    dtype_ = boxes->type == DType::kFloat32 ? "f32" : boxes->type == DType::kUInt8 ? "u8" : "i8";
    const int d = o_.max_detections * o_.max_classes_per_detection;
    RETURN_IF_ERROR(ctx.SetOutputShape(0, {1, d, 4}));
    RETURN_IF_ERROR(ctx.SetOutputShape(1, {1, d}));
    RETURN_IF_ERROR(ctx.SetOutputShape(2, {1, d}));
    RETURN_IF_ERROR(ctx.SetOutputShape(3, {1}));
    // Working memory, sized once per shape (Invoke does not allocate).
    decoded_.resize(num_boxes_);
    decoded_stamp_.assign(num_boxes_, 0u);
    stamp_ = 0;
    column_.resize(num_boxes_);
    keep_values_.reserve(num_boxes_);
    keep_indices_.reserve(num_boxes_);
    order_.resize(num_boxes_);
    selected_.reserve(num_boxes_);
    merged_index_.resize(num_boxes_ + o_.max_detections);
    merged_score_.resize(num_boxes_ + o_.max_detections);
    sort_scratch_.resize(num_boxes_ + o_.max_detections);
    sorted_values_.resize(num_boxes_ + o_.max_detections);
    max_scores_.resize(num_boxes_);
    max_keys_.resize(num_boxes_);
    class_order_.resize(static_cast<size_t>(num_boxes_) * o_.num_classes);
    row_scores_.resize(o_.num_classes);
    // Quantized scores: every possible byte's value, as TFLite's Dequantize computes it (double
    // scale times (q - zero_point), rounded to float). When the mapping is strictly increasing
    // (checked: a positive scale, and no two values rounded together or to infinity), ranking
    // bytes ranks their values, ties included; key = byte ^ key_flip_ orders bytes by value.
    quantized_scores_ = scores->type != DType::kFloat32;
    rank_bytes_ = false;
    if (quantized_scores_) {
      const double scale = scores->scale();
      const int32_t zp = scores->zero_point();
      for (int b = 0; b < 256; ++b) {
        const int32_t q = scores->type == DType::kUInt8 ? b : static_cast<int8_t>(static_cast<uint8_t>(b));
        score_lut_[b] = static_cast<float>(scale * (q - zp));
      }
      key_flip_ = scores->type == DType::kInt8 ? 0x80 : 0;
      rank_bytes_ = true;
      for (int k = 0; k + 1 < 256; ++k)
        rank_bytes_ = rank_bytes_ && score_lut_[k ^ key_flip_] < score_lut_[(k + 1) ^ key_flip_];
      // The smallest key whose value passes the score threshold (256: none; a NaN threshold
      // passes nothing, as the comparison in SingleClassNms).
      min_key_ = 256;
      for (int k = 255; k >= 0 && score_lut_[k ^ key_flip_] >= o_.score_threshold; --k) min_key_ = k;
    }
    return Status::Ok();
  }

  Status Invoke(rt::KernelContext& ctx) override {
    RETURN_IF_ERROR(BeginBoxes(ctx));
    for (int i = 0; i < 4; ++i) {
      rt::RtTensor* out = ctx.output(i);
      std::fill_n(out->data_as<float>(), out->num_elements(), 0.0f);
    }
    if (o_.use_regular_nms)
      RegularNms(ctx);
    else
      FastNms(ctx);
    return Status::Ok();
  }

 private:
  // Starts this invoke's boxes. They are decoded when first needed (Decoded: NMS reaches an
  // anchor, or a detection is written); TFLite decodes all N (two exp each; 1917 for SSD
  // MobileNet, about 40% of this op's time there) though NMS looks at a few dozen. Its check that
  // no decoded box has min > max is kept exactly: with half-height 0.5 exp(.) * anchor_h,
  // ycenter - half > ycenter + half in float needs half < 0 (float addition and subtraction are
  // monotonic, NaN compares false), so only anchors with a negative height or width can fail;
  // those are decoded and checked here, in box order.
  Status BeginBoxes(rt::KernelContext& ctx) {
    enc_ = ctx.input(0);
    anchors_ = ctx.input(2);
    if (++stamp_ == 0) {  // wrapped: forget every stamp
      std::fill(decoded_stamp_.begin(), decoded_stamp_.end(), 0u);
      stamp_ = 1;
    }
    for (int i = 0; i < num_boxes_; ++i) {
      if (!(BoxValue(*anchors_, 4 * i + 2) < 0) && !(BoxValue(*anchors_, 4 * i + 3) < 0)) continue;
      const Box& b = Decoded(i);
      if (b.ymin > b.ymax || b.xmin > b.xmax)
        return ctx.Error("decoded box " + std::to_string(i) + " has min > max (negative anchor size?)");
    }
    return Status::Ok();
  }

  // Box i of this invoke's encodings and anchors, decoded as TFLite does.
  const Box& Decoded(int i) {
    Box& d = decoded_[i];
    if (decoded_stamp_[i] == stamp_) return d;
    decoded_stamp_[i] = stamp_;
    const rt::RtTensor& enc = *enc_;
    const rt::RtTensor& anchors = *anchors_;
    const int64_t e = static_cast<int64_t>(i) * box_stride_;
    const double ey = BoxValue(enc, e), ex = BoxValue(enc, e + 1), eh = BoxValue(enc, e + 2), ew = BoxValue(enc, e + 3);
    const double ay = BoxValue(anchors, 4 * i), ax = BoxValue(anchors, 4 * i + 1);
    const double ah = BoxValue(anchors, 4 * i + 2), aw = BoxValue(anchors, 4 * i + 3);
    const float ycenter = static_cast<float>(ey / static_cast<double>(o_.y_scale) * ah + ay);
    const float xcenter = static_cast<float>(ex / static_cast<double>(o_.x_scale) * aw + ax);
    const float half_h = static_cast<float>(0.5 * std::exp(eh / static_cast<double>(o_.h_scale)) * ah);
    const float half_w = static_cast<float>(0.5 * std::exp(ew / static_cast<double>(o_.w_scale)) * aw);
    d = {ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w};
    return d;
  }

  float Iou(int i, int j) {
    const Box& a = Decoded(i);
    const Box& b = Decoded(j);
    const float area_a = (a.ymax - a.ymin) * (a.xmax - a.xmin);
    const float area_b = (b.ymax - b.ymin) * (b.xmax - b.xmin);
    if (area_a <= 0 || area_b <= 0) return 0.0f;
    const float ymin = std::max<float>(a.ymin, b.ymin);
    const float xmin = std::max<float>(a.xmin, b.xmin);
    const float ymax = std::min<float>(a.ymax, b.ymax);
    const float xmax = std::min<float>(a.xmax, b.xmax);
    const float inter = std::max<float>(ymax - ymin, 0.0f) * std::max<float>(xmax - xmin, 0.0f);
    return inter / (area_a + area_b - inter);
  }

  // NMS over anchors for one score per anchor; selected_ gets anchor indices, best first.
  //
  // TFLite walks the kept anchors in stable descending score order, selects each one still
  // active and deactivates every later anchor whose IoU with it exceeds the threshold. An anchor
  // is thus selected exactly when its IoU with every anchor selected before it is at most the
  // threshold, which is what this loop tests: at most max_detections IoUs per candidate instead
  // of one per later anchor. Only the front of the order is sorted, in steps as the walk needs
  // it: descending score, then ascending anchor (the stable sort's order; kept scores are never
  // NaN, as NaN fails the threshold test).
  void SingleClassNms(const std::vector<float>& values, int max_detections) {
    keep_values_.clear();
    keep_indices_.clear();
    for (int i = 0; i < num_boxes_; ++i)
      if (values[i] >= o_.score_threshold) {
        keep_values_.push_back(values[i]);
        keep_indices_.push_back(i);
      }
    const int kept = static_cast<int>(keep_values_.size());
    const int output_size = std::min(kept, max_detections);
    selected_.clear();
    std::iota(order_.begin(), order_.begin() + kept, 0);
    const auto before = [&](int a, int b) {
      return keep_values_[a] > keep_values_[b] || (keep_values_[a] == keep_values_[b] && a < b);
    };
    int sorted = 0;  // order_[0, sorted) is in its final place
    for (int i = 0; i < kept && static_cast<int>(selected_.size()) < output_size; ++i) {
      if (i == sorted) {
        const int next = std::min(kept, sorted + std::max(4 * output_size, sorted) + 16);
        std::partial_sort(order_.begin() + sorted, order_.begin() + next, order_.begin() + kept, before);
        sorted = next;
      }
      SelectUnlessSuppressed(keep_indices_[order_[i]]);
    }
  }

  // SingleClassNms on max_keys_ (FastNms with byte-ranked scores, one class per anchor): the
  // same walk, in the same order (descending value = descending key, then ascending anchor),
  // which a counting sort over the 256 keys gives in O(N) instead of sorting the front of the
  // kept scores by comparisons (SSD MobileNet's 1917 anchors: the op 0.87-0.97x the time).
  void SingleClassNmsKeys(int max_detections) {
    std::array<int, 257> start{};
    for (int i = 0; i < num_boxes_; ++i)
      if (max_keys_[i] >= min_key_) ++start[255 - max_keys_[i] + 1];
    for (int k = 1; k <= 256; ++k) start[k] += start[k - 1];
    const int kept = start[256];
    for (int i = 0; i < num_boxes_; ++i)
      if (max_keys_[i] >= min_key_) order_[start[255 - max_keys_[i]]++] = i;
    const int output_size = std::min(kept, max_detections);
    selected_.clear();
    for (int i = 0; i < kept && static_cast<int>(selected_.size()) < output_size; ++i) SelectUnlessSuppressed(order_[i]);
  }

  // Appends `candidate` to selected_ unless its IoU with a selected box exceeds the threshold.
  void SelectUnlessSuppressed(int candidate) {
    for (int s : selected_)
      if (Iou(s, candidate) > o_.iou_threshold) return;
    selected_.push_back(candidate);
  }

  // TFLite's DecreasingPartialArgSort: the first maximum for one, std::partial_sort otherwise.
  static void PartialArgSort(const float* values, int n, int k, int* indices) {
    if (k == 1) {
      int best = 0;
      for (int i = 1; i < n; ++i)
        if (values[i] > values[best]) best = i;
      indices[0] = best;
    } else {
      std::iota(indices, indices + n, 0);
      std::partial_sort(indices, indices + k, indices + n, [values](int i, int j) { return values[i] > values[j]; });
    }
  }

  void WriteDetection(rt::KernelContext& ctx, int row, int anchor, float cls, float score) {
    float* boxes = ctx.output(0)->data_as<float>();
    const Box& b = Decoded(anchor);
    boxes[4 * row] = b.ymin;
    boxes[4 * row + 1] = b.xmin;
    boxes[4 * row + 2] = b.ymax;
    boxes[4 * row + 3] = b.xmax;
    ctx.output(1)->data_as<float>()[row] = cls;
    ctx.output(2)->data_as<float>()[row] = score;
  }

  // Score of class column `col` (background included) of anchor `row`.
  float Score(const rt::RtTensor& scores, int row, int col) const {
    const int64_t i = static_cast<int64_t>(row) * classes_with_background_ + col;
    return quantized_scores_ ? score_lut_[scores.data[i]] : scores.data_as<float>()[i];
  }

  // The scores of anchor `row`'s classes (background left out): in place when float, else
  // dequantized into row_scores_.
  const float* RowScores(const rt::RtTensor& scores, int row, int label_offset) {
    const int64_t base = static_cast<int64_t>(row) * classes_with_background_ + label_offset;
    if (!quantized_scores_) return scores.data_as<float>() + base;
    for (int c = 0; c < o_.num_classes; ++c) row_scores_[c] = score_lut_[scores.data[base + c]];
    return row_scores_.data();
  }

  void FastNms(rt::KernelContext& ctx) {
    const rt::RtTensor& scores = *ctx.input(1);
    const int label_offset = classes_with_background_ - o_.num_classes;
    const int per_anchor = std::min(o_.max_classes_per_detection, o_.num_classes);
    for (int row = 0; row < num_boxes_; ++row) {
      int* order = class_order_.data() + static_cast<int64_t>(row) * o_.num_classes;
      if (rank_bytes_ && per_anchor == 1) {
        // The first largest byte is the first largest value.
        const uint8_t* q = scores.data + static_cast<int64_t>(row) * classes_with_background_ + label_offset;
        order[0] = FirstMaxByte(q, o_.num_classes, scores.type == DType::kInt8);
        max_keys_[row] = static_cast<uint8_t>(q[order[0]] ^ key_flip_);
        continue;
      }
      const float* box_scores = RowScores(scores, row, label_offset);
      PartialArgSort(box_scores, o_.num_classes, per_anchor, order);
      max_scores_[row] = box_scores[order[0]];
    }
    if (rank_bytes_ && per_anchor == 1)
      SingleClassNmsKeys(o_.max_detections);
    else
      SingleClassNms(max_scores_, o_.max_detections);
    int out_box = 0;
    for (int anchor : selected_) {
      const int* order = class_order_.data() + static_cast<int64_t>(anchor) * o_.num_classes;
      for (int col = 0; col < per_anchor; ++col)
        WriteDetection(ctx, o_.max_classes_per_detection * out_box + col, anchor, static_cast<float>(order[col]),
                       Score(scores, anchor, order[col] + label_offset));
      ++out_box;
    }
    ctx.output(3)->data_as<float>()[0] = static_cast<float>(out_box);
  }

  // Per class NMS, then the class's picks are merged into the running best list. TFLite 2.9
  // merges with std::inplace_merge and the comparator `a.score >= b.score`, so on equal scores
  // the newer class comes first; the merge below reproduces that order.
  void RegularNms(rt::KernelContext& ctx) {
    const rt::RtTensor& scores = *ctx.input(1);
    const int label_offset = classes_with_background_ - o_.num_classes;
    int num_sorted = 0;
    for (int col = 0; col < o_.num_classes; ++col) {
      for (int row = 0; row < num_boxes_; ++row) column_[row] = Score(scores, row, col + label_offset);
      SingleClassNms(column_, o_.detections_per_class);
      // merged_[0, num_sorted) holds the best so far; selected_ is this class's picks, best first.
      int a = 0, b = 0, n = 0;
      const int na = num_sorted, nb = static_cast<int>(selected_.size());
      while (a < na && b < nb) {
        const float sb = column_[selected_[b]];
        if (sb >= merged_score_[a]) {
          sort_scratch_[n] = selected_[b] * classes_with_background_ + col + label_offset;
          sorted_values_[n] = sb;
          ++b;
        } else {
          sort_scratch_[n] = merged_index_[a];
          sorted_values_[n] = merged_score_[a];
          ++a;
        }
        ++n;
      }
      for (; a < na; ++a, ++n) {
        sort_scratch_[n] = merged_index_[a];
        sorted_values_[n] = merged_score_[a];
      }
      for (; b < nb; ++b, ++n) {
        sort_scratch_[n] = selected_[b] * classes_with_background_ + col + label_offset;
        sorted_values_[n] = column_[selected_[b]];
      }
      num_sorted = std::min(n, o_.max_detections);
      std::copy(sort_scratch_.begin(), sort_scratch_.begin() + num_sorted, merged_index_.begin());
      std::copy(sorted_values_.begin(), sorted_values_.begin() + num_sorted, merged_score_.begin());
    }
    for (int r = 0; r < num_sorted; ++r) {
      const int anchor = merged_index_[r] / classes_with_background_;
      const int cls = merged_index_[r] - anchor * classes_with_background_ - label_offset;
      WriteDetection(ctx, r, anchor, static_cast<float>(cls), merged_score_[r]);
    }
    ctx.output(3)->data_as<float>()[0] = static_cast<float>(num_sorted);
  }

  DetectionOptions o_;
  std::string dtype_ = "f32";  // box encoding type, for variant()
  int num_boxes_ = 0, box_stride_ = 4, classes_with_background_ = 0;
  std::vector<Box> decoded_;
  // decoded_[i] holds this invoke's box i when decoded_stamp_[i] == stamp_ (Decoded).
  std::vector<uint32_t> decoded_stamp_;
  uint32_t stamp_ = 0;
  const rt::RtTensor* enc_ = nullptr;
  const rt::RtTensor* anchors_ = nullptr;
  bool quantized_scores_ = false, rank_bytes_ = false;
  uint8_t key_flip_ = 0;  // key = byte ^ key_flip_ (rank_bytes_)
  int min_key_ = 256;     // keys >= min_key_ pass the score threshold
  std::vector<uint8_t> max_keys_;  // FastNms: each anchor's best key
  std::array<float, 256> score_lut_{};
  std::vector<float> row_scores_, column_, keep_values_, max_scores_, merged_score_, sorted_values_;
  std::vector<int> keep_indices_, order_, selected_, merged_index_, sort_scratch_, class_order_;
};

Expected<std::unique_ptr<rt::OpKernel>> CreateDetectionPostProcess(const rt::KernelCreateContext& cc) {
  ASSIGN_OR_RETURN(DetectionOptions o, ParseOptions(cc));
  return std::unique_ptr<rt::OpKernel>(new DetectionPostProcessKernel(o));
}

}  // namespace

void RegisterDetectionKernels(rt::OpRegistry& r) {
  r.AddCustom("TFLite_Detection_PostProcess", CreateDetectionPostProcess);
}

}  // namespace edgeopt::kernels
