#include "optimize/quantize/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/interpreter.h"

namespace edgeopt::optimize {
namespace {

constexpr int kBins = 2048;

// Quantization error of a histogram if values are clipped to [a, b] and rounded onto `levels`
// evenly spaced levels (bins stand for their centres).
double ClipError(const std::vector<double>& h, float lo, float hi, float a, float b, int levels) {
  const double width = (hi - lo) / static_cast<double>(h.size());
  const double step = (b - a) / (levels - 1);
  double err = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == 0) continue;
    const double x = lo + (i + 0.5) * width;
    const double c = std::clamp(x, static_cast<double>(a), static_cast<double>(b));
    const double q = step > 0 ? a + std::round((c - a) / step) * step : a;
    err += h[i] * (x - q) * (x - q);
  }
  return err;
}

// KL divergence between the reference distribution P (clipped at `bins` bins) and its
// quantized-to-`levels` approximation Q, as in the TensorRT entropy calibrator.
double KlForThreshold(const std::vector<double>& h, int bins, int levels) {
  std::vector<double> p(h.begin(), h.begin() + bins);
  double outliers = 0;
  for (size_t i = bins; i < h.size(); ++i) outliers += h[i];
  p[bins - 1] += outliers;
  std::vector<double> q(bins, 0.0);
  const double per = static_cast<double>(bins) / levels;
  for (int j = 0; j < levels; ++j) {
    const int start = static_cast<int>(std::floor(j * per));
    const int end = std::min(bins, static_cast<int>(std::floor((j + 1) * per)));
    double sum = 0;
    int nonzero = 0;
    for (int i = start; i < end; ++i) {
      sum += h[i];
      nonzero += h[i] > 0;
    }
    for (int i = start; i < end; ++i)
      if (h[i] > 0) q[i] = sum / nonzero;
  }
  double ps = 0, qs = 0;
  for (int i = 0; i < bins; ++i) {
    ps += p[i];
    qs += q[i];
  }
  if (ps <= 0 || qs <= 0) return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (int i = 0; i < bins; ++i) {
    if (p[i] <= 0) continue;
    const double pi = p[i] / ps;
    const double qi = q[i] > 0 ? q[i] / qs : 1e-12;
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

// The q-quantile (0..1) of v, the lower one between two elements.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t at = static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return v[at];
}

}  // namespace

std::vector<size_t> FindOutlierSamples(const std::vector<std::vector<Range>>& per_sample, double factor,
                                       std::vector<double>* inflation) {
  const size_t n = per_sample.size();
  if (inflation) inflation->assign(n, 1.0);
  std::vector<size_t> outliers;
  if (!(factor > 0) || n < kMinSamplesForOutliers) return outliers;
  const size_t tensors = per_sample[0].size();
  // Per tensor: each sample's magnitude over the median sample's magnitude.
  std::vector<std::vector<double>> ratios(n);
  for (size_t k = 0; k < tensors; ++k) {
    std::vector<double> mag(n, -1.0);
    std::vector<double> valid;
    for (size_t s = 0; s < n; ++s) {
      const Range& r = per_sample[s][k];
      if (!r.valid) continue;
      mag[s] = std::max(std::fabs(static_cast<double>(r.min)), std::fabs(static_cast<double>(r.max)));
      valid.push_back(mag[s]);
    }
    if (valid.size() != n) continue;  // computed for every sample only (no control flow differences)
    const double median = Quantile(valid, 0.5);
    if (!(median > 0)) continue;
    for (size_t s = 0; s < n; ++s) ratios[s].push_back(mag[s] / median);
  }
  if (ratios[0].empty()) return outliers;
  for (size_t s = 0; s < n; ++s) {
    // The upper quartile over the tensors: an outlier sample inflates a good part of the network
    // (a quarter of its tensors at least), not one tensor.
    const double x = Quantile(ratios[s], 0.75);
    if (inflation) (*inflation)[s] = x;
    if (x > factor) outliers.push_back(s);
  }
  // Never a majority: then the "outliers" are what the data looks like.
  if (outliers.size() * 2 >= n) outliers.clear();
  return outliers;
}

Range ChooseRange(const std::vector<double>& h, float lo, float hi, Calibrator c, double percentile, int levels) {
  Range r{lo, hi, true};
  if (!(hi > lo)) return r;
  const double width = (hi - lo) / static_cast<double>(h.size());
  double total = 0;
  for (double x : h) total += x;
  if (total <= 0) return r;
  switch (c) {
    case Calibrator::kMinMax:
      return r;
    case Calibrator::kPercentile: {
      const double tail = std::max(0.0, (100.0 - percentile) / 100.0) * total;
      double acc = 0;
      size_t i = 0;
      for (; i < h.size() && acc + h[i] <= tail; ++i) acc += h[i];
      const float low = lo + static_cast<float>(i * width);
      acc = 0;
      size_t j = h.size();
      for (; j > 0 && acc + h[j - 1] <= tail; --j) acc += h[j - 1];
      const float high = lo + static_cast<float>(j * width);
      r.min = low;
      r.max = high;
      if (r.max <= r.min) r = {lo, hi, true};
      return r;
    }
    case Calibrator::kMse: {
      double best = ClipError(h, lo, hi, lo, hi, levels);
      for (int k = 1; k < 40; ++k) {
        const float f = 1.0f - 0.02f * k;  // clip down to 22% of the range
        const float a = lo < 0 ? lo * f : lo, b = hi > 0 ? hi * f : hi;
        const double e = ClipError(h, lo, hi, a, b, levels);
        if (e < best) {
          best = e;
          r.min = a;
          r.max = b;
        }
      }
      return r;
    }
    case Calibrator::kEntropy: {
      // Work on the magnitude histogram around zero; the threshold clips both sides alike.
      const float amax = std::max(std::fabs(lo), std::fabs(hi));
      std::vector<double> mag(kBins, 0.0);
      for (size_t i = 0; i < h.size(); ++i) {
        const double x = std::fabs(lo + (i + 0.5) * width);
        const size_t b = std::min<size_t>(kBins - 1, static_cast<size_t>(x / amax * kBins));
        mag[b] += h[i];
      }
      const int half_levels = lo < 0 ? levels / 2 : levels;
      double best = std::numeric_limits<double>::infinity();
      int best_bins = kBins;
      for (int bins = half_levels; bins <= kBins; bins += 16) {
        const double kl = KlForThreshold(mag, bins, half_levels);
        if (kl < best) {
          best = kl;
          best_bins = bins;
        }
      }
      const float t = amax * best_bins / kBins;
      r.min = std::max(lo, -t);
      r.max = std::min(hi, t);
      if (r.max <= r.min) r = {lo, hi, true};
      return r;
    }
  }
  return r;
}

Expected<std::unique_ptr<rt::Interpreter>> MakeCalibrationInterpreter(const Graph& g, const QuantizeOptions& o) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(g));
  rt::InterpreterOptions io;
  io.num_threads = o.threads;
  io.preserve_all_tensors = true;
  io.fold_constants = true;
  return rt::Interpreter::Create(model, io);
}

Status FeedCalibrationSample(rt::Interpreter& interp, const QuantizeOptions& o, size_t s) {
  const auto& sample = o.calibration[s];
  if (static_cast<int>(sample.size()) != interp.num_inputs())
    return InvalidArgument("calibration sample " + std::to_string(s) + " has " + std::to_string(sample.size()) +
                           " inputs; the model has " + std::to_string(interp.num_inputs()));
  for (size_t i = 0; i < sample.size(); ++i) {
    rt::RtTensor* in = interp.input(static_cast<int>(i));
    if (sample[i].type != in->type || sample[i].shape != in->shape)
      return InvalidArgument("calibration sample " + std::to_string(s) + " input " + std::to_string(i) + " is " +
                             rt::ShapeToString(sample[i].shape) + " " + std::string(DTypeName(sample[i].type)) +
                             "; the model wants " + rt::ShapeToString(in->shape) + " " + std::string(DTypeName(in->type)));
    std::memcpy(in->data, sample[i].data.data(), sample[i].data.size());
  }
  interp.ResetVariables();
  return interp.Invoke();
}

Expected<CalibrationResult> Calibrate(const Graph& g, const QuantizeOptions& o) {
  if (o.calibration.empty())
    return InvalidArgument("full-integer quantization needs calibration samples (--calibration DIR|FILE.npy)");
  ASSIGN_OR_RETURN(auto interp, MakeCalibrationInterpreter(g, o));
  const Subgraph& sg = g.main();
  std::vector<int32_t> watched;
  for (size_t t = 0; t < sg.tensors.size(); ++t)
    if (sg.tensors[t].type == DType::kFloat32 && !g.IsConstant(sg.tensors[t])) watched.push_back(static_cast<int32_t>(t));

  auto feed = [&](size_t s) -> Status { return FeedCalibrationSample(*interp, o, s); };
  // LSTM ops whose internals are replayed for the integer LSTM's scales.
  std::vector<int> lstm_ops;
  for (size_t i = 0; i < sg.ops.size(); ++i)
    if (CanReplayLstm(g, sg, sg.ops[i], nullptr)) lstm_ops.push_back(static_cast<int>(i));
  CalibrationResult result;

  const bool needs_histogram = o.calibrator != Calibrator::kMinMax;
  const int passes = needs_histogram ? 2 : 1;
  const int total = static_cast<int>(o.calibration.size()) * passes;
  std::map<int32_t, Range>& ranges = result.ranges;
  for (int32_t t : watched) ranges[t] = Range{std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), false};
  int done = 0;
  const size_t num_samples = o.calibration.size();
  // Per sample and watched tensor: the sample's own range (invalid when never computed).
  std::vector<std::vector<Range>> per_sample(num_samples, std::vector<Range>(watched.size()));
  for (size_t s = 0; s < num_samples; ++s) {
    RETURN_IF_ERROR(feed(s));
    for (size_t k = 0; k < watched.size(); ++k) {
      const rt::RtTensor* rt = interp->main().tensor(watched[k]);
      if (!rt->data) continue;
      const float* v = rt->data_as<float>();
      Range r{std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), false};
      for (int64_t i = 0; i < rt->num_elements(); ++i) {
        if (!std::isfinite(v[i])) continue;
        r.min = std::min(r.min, v[i]);
        r.max = std::max(r.max, v[i]);
        r.valid = true;
      }
      per_sample[s][k] = r;
    }
    for (int op : lstm_ops) {
      const int32_t in = sg.ops[op].inputs[0];
      const rt::RtTensor* rt = interp->main().tensor(in);
      if (!rt->data) continue;
      RETURN_IF_ERROR(ReplayLstm(g, sg, sg.ops[op], rt->data_as<float>(), rt->shape, &result.lstm[op]));
    }
    if (o.progress) o.progress(++done, total);
  }
  result.outlier_samples = FindOutlierSamples(per_sample, o.outlier_factor, &result.sample_inflation);
  std::vector<char> excluded(num_samples, 0);
  for (const size_t s : result.outlier_samples) excluded[s] = 1;
  for (size_t k = 0; k < watched.size(); ++k) {
    Range& r = ranges[watched[k]];
    for (size_t s = 0; s < num_samples; ++s) {
      const Range& x = per_sample[s][k];
      if (!x.valid || excluded[s]) continue;
      r.min = std::min(r.min, x.min);
      r.max = std::max(r.max, x.max);
      r.valid = true;
    }
  }
  if (needs_histogram) {
    std::map<int32_t, std::vector<double>> hist;
    for (int32_t t : watched)
      if (ranges[t].valid) hist[t].assign(kBins, 0.0);
    for (size_t s = 0; s < o.calibration.size(); ++s) {
      if (excluded[s]) {
        if (o.progress) o.progress(++done, total);
        continue;
      }
      RETURN_IF_ERROR(feed(s));
      for (auto& [t, h] : hist) {
        const rt::RtTensor* rt = interp->main().tensor(t);
        const float lo = ranges[t].min, hi = ranges[t].max;
        if (!(hi > lo)) continue;
        const float* v = rt->data_as<float>();
        const double inv = kBins / static_cast<double>(hi - lo);
        for (int64_t i = 0; i < rt->num_elements(); ++i) {
          if (!std::isfinite(v[i])) continue;
          const int b = std::clamp(static_cast<int>((v[i] - lo) * inv), 0, kBins - 1);
          h[b] += 1;
        }
      }
      if (o.progress) o.progress(++done, total);
    }
    const int levels = o.mode == QuantMode::kInt16x8 ? 65536 : 256;
    for (auto& [t, h] : hist) ranges[t] = ChooseRange(h, ranges[t].min, ranges[t].max, o.calibrator, o.percentile, levels);
  }
  return result;
}

}  // namespace edgeopt::optimize
