// Accuracy and error metrics: how far a candidate tensor is from a reference one (RMSE, max abs
// error, SNR, cosine similarity, error in quantization steps), top-k agreement between two
// classifiers, and top-k accuracy against labels. Accumulators take one sample at a time and
// report over all samples seen (errors over all elements of all samples pooled together).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace edgeopt::eval {

struct ErrorStats {
  int64_t elements = 0;   // values compared (over all samples)
  double rmse = 0;        // sqrt(mean((cand - ref)^2))
  double max_abs = 0;     // max |cand - ref|
  double mean_abs = 0;    // mean |cand - ref|
  double ref_rms = 0;     // sqrt(mean(ref^2)): the signal level the error is measured against
  // 10*log10(sum ref^2 / sum (cand-ref)^2); +infinity when identical, 0 dB when the error is as
  // large as the signal (and when the reference is all zero but the candidate is not).
  double snr_db = std::numeric_limits<double>::infinity();
  double cosine = 1;      // <ref,cand> / (|ref| |cand|); 1 when both are all zero
  // RMSE divided by the candidate's quantization step (mean scale over samples) when the candidate
  // tensor is quantized; NaN otherwise. Pure rounding of an exact value gives 1/sqrt(12) = 0.29.
  double rmse_over_scale = std::numeric_limits<double>::quiet_NaN();
  bool quantized() const { return rmse_over_scale == rmse_over_scale; }
};

// RMSE/scale above this: the error is well beyond rounding noise (the "flag above 0.7").
constexpr double kRmseOverScaleFlag = 0.7;
// RMSE/scale of pure rounding noise (uniform error over one step): 1/sqrt(12).
constexpr double kRoundingNoiseRmseOverScale = 0.28867513459481287;

class ErrorAccumulator {
 public:
  // One sample: reference and candidate values in real units, same length.
  void Add(std::span<const float> ref, std::span<const float> cand);
  // The candidate's quantization step for the sample just added (call once per sample when the
  // candidate tensor is quantized).
  void AddScale(double scale);
  void Merge(const ErrorAccumulator& o);
  ErrorStats Finish() const;
  int64_t elements() const { return n_; }

 private:
  int64_t n_ = 0;
  double sum_sq_err_ = 0, sum_abs_err_ = 0, max_abs_ = 0;
  double sum_sq_ref_ = 0, sum_sq_cand_ = 0, dot_ = 0;
  double scale_sum_ = 0;
  int scale_count_ = 0;
};

// Error statistics of one pair of arrays (a one-sample accumulator).
ErrorStats CompareValues(std::span<const float> ref, std::span<const float> cand);

// Indices of the k largest values, largest first; ties go to the lower index.
std::vector<int> TopKIndices(std::span<const float> values, int k);

// Top-k agreement of a candidate classifier with a reference one: the candidate's top-1 equals the
// reference's top-1 (top1), and the reference's top-1 is among the candidate's top-5 (top5), i.e.
// the candidate's top-1/top-5 accuracy when the reference's prediction is taken as the label.
class AgreementAccumulator {
 public:
  void Add(std::span<const float> ref_scores, std::span<const float> cand_scores);
  int samples() const { return samples_; }
  double top1_percent() const { return samples_ ? 100.0 * top1_ / samples_ : 0; }
  double top5_percent() const { return samples_ ? 100.0 * top5_ / samples_ : 0; }
  int top1_count() const { return top1_; }
  int top5_count() const { return top5_; }
  void Merge(const AgreementAccumulator& o);

 private:
  int samples_ = 0, top1_ = 0, top5_ = 0;
};

// Top-1/top-5 accuracy against labels (label < 0: the sample is not counted).
class ClassificationAccumulator {
 public:
  void Add(std::span<const float> scores, int label);
  int samples() const { return samples_; }
  int top1_count() const { return top1_; }
  int top5_count() const { return top5_; }
  double top1_percent() const { return samples_ ? 100.0 * top1_ / samples_ : 0; }
  double top5_percent() const { return samples_ ? 100.0 * top5_ / samples_ : 0; }
  void Merge(const ClassificationAccumulator& o);

 private:
  int samples_ = 0, top1_ = 0, top5_ = 0;
};

// "34.2 dB", "inf dB" (identical).
std::string FormatSnr(double snr_db);

}  // namespace edgeopt::eval
