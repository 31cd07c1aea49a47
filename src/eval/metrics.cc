#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace edgeopt::eval {

void ErrorAccumulator::Add(std::span<const float> ref, std::span<const float> cand) {
  const size_t n = std::min(ref.size(), cand.size());
  for (size_t i = 0; i < n; ++i) {
    const double r = ref[i], c = cand[i];
    const double e = c - r;
    sum_sq_err_ += e * e;
    sum_abs_err_ += std::fabs(e);
    max_abs_ = std::max(max_abs_, std::fabs(e));
    sum_sq_ref_ += r * r;
    sum_sq_cand_ += c * c;
    dot_ += r * c;
  }
  n_ += static_cast<int64_t>(n);
}

void ErrorAccumulator::AddScale(double scale) {
  scale_sum_ += scale;
  ++scale_count_;
}

void ErrorAccumulator::Merge(const ErrorAccumulator& o) {
  n_ += o.n_;
  sum_sq_err_ += o.sum_sq_err_;
  sum_abs_err_ += o.sum_abs_err_;
  max_abs_ = std::max(max_abs_, o.max_abs_);
  sum_sq_ref_ += o.sum_sq_ref_;
  sum_sq_cand_ += o.sum_sq_cand_;
  dot_ += o.dot_;
  scale_sum_ += o.scale_sum_;
  scale_count_ += o.scale_count_;
}

ErrorStats ErrorAccumulator::Finish() const {
  ErrorStats s;
  s.elements = n_;
  if (n_ == 0) return s;
  s.rmse = std::sqrt(sum_sq_err_ / n_);
  s.mean_abs = sum_abs_err_ / n_;
  s.max_abs = max_abs_;
  s.ref_rms = std::sqrt(sum_sq_ref_ / n_);
  if (sum_sq_err_ == 0) {
    s.snr_db = std::numeric_limits<double>::infinity();
  } else if (sum_sq_ref_ == 0) {
    s.snr_db = 0;
  } else {
    s.snr_db = 10.0 * std::log10(sum_sq_ref_ / sum_sq_err_);
  }
  if (sum_sq_ref_ == 0 && sum_sq_cand_ == 0) {
    s.cosine = 1;
  } else if (sum_sq_ref_ == 0 || sum_sq_cand_ == 0) {
    s.cosine = 0;
  } else {
    s.cosine = std::clamp(dot_ / std::sqrt(sum_sq_ref_ * sum_sq_cand_), -1.0, 1.0);
  }
  if (scale_count_ > 0) {
    const double scale = scale_sum_ / scale_count_;
    if (scale > 0) s.rmse_over_scale = s.rmse / scale;
  }
  return s;
}

ErrorStats CompareValues(std::span<const float> ref, std::span<const float> cand) {
  ErrorAccumulator a;
  a.Add(ref, cand);
  return a.Finish();
}

std::vector<int> TopKIndices(std::span<const float> values, int k) {
  std::vector<int> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::clamp(k, 0, static_cast<int>(values.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    return values[a] != values[b] ? values[a] > values[b] : a < b;
  });
  idx.resize(static_cast<size_t>(k));
  return idx;
}

void AgreementAccumulator::Add(std::span<const float> ref_scores, std::span<const float> cand_scores) {
  const std::vector<int> r = TopKIndices(ref_scores, 1);
  const std::vector<int> c = TopKIndices(cand_scores, 5);
  ++samples_;
  if (r.empty() || c.empty()) return;
  if (c[0] == r[0]) ++top1_;
  if (std::find(c.begin(), c.end(), r[0]) != c.end()) ++top5_;
}

void AgreementAccumulator::Merge(const AgreementAccumulator& o) {
  samples_ += o.samples_;
  top1_ += o.top1_;
  top5_ += o.top5_;
}

void ClassificationAccumulator::Add(std::span<const float> scores, int label) {
  if (label < 0) return;
  const std::vector<int> top = TopKIndices(scores, 5);
  ++samples_;
  if (!top.empty() && top[0] == label) ++top1_;
  if (std::find(top.begin(), top.end(), label) != top.end()) ++top5_;
}

void ClassificationAccumulator::Merge(const ClassificationAccumulator& o) {
  samples_ += o.samples_;
  top1_ += o.top1_;
  top5_ += o.top5_;
}

std::string FormatSnr(double snr_db) {
  if (std::isinf(snr_db)) return "inf dB";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f dB", snr_db);
  return buf;
}

}  // namespace edgeopt::eval
