#include "optimize/auto/auto_optimize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "eval/accuracy.h"
#include "eval/compare.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/cluster/cluster.h"
#include "optimize/compression.h"
#include "optimize/prune/prune.h"
#include "optimize/quantize/quantize.h"

namespace edgeopt::optimize {

bool ParseObjective(const std::string& s, Objective* out) {
  if (s == "size") *out = Objective::kSize;
  else if (s == "latency") *out = Objective::kLatency;
  else return false;
  return true;
}

bool ParseSizeMetric(const std::string& s, SizeMetric* out) {
  if (s == "raw" || s == "file") *out = SizeMetric::kRaw;
  else if (s == "gzip") *out = SizeMetric::kGzip;
  else if (s == "zstd") *out = SizeMetric::kZstd;
  else return false;
  return true;
}

const char* SizeMetricName(SizeMetric m) {
  switch (m) {
    case SizeMetric::kRaw: return "file size";
    case SizeMetric::kGzip: return "gzip -9 size";
    case SizeMetric::kZstd: return "zstd -19 size";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Everything needed to evaluate candidates against the float model.
struct Context {
  const AutoOptimizeOptions& o;
  const eval::Dataset& evaluation;
  std::vector<eval::InputSpec> specs;  // float model's inputs (data is prepared for these)
  std::shared_ptr<const rt::Model> float_model;
  eval::DatasetOutputs baseline_outputs;
  bool labels = false;
  double baseline = 0;
  std::vector<eval::HostTensor> bench_inputs;
  std::vector<std::vector<eval::HostTensor>> calibration;

  void Log(const std::string& s) const {
    if (o.log) o.log(s);
  }
};

Expected<std::shared_ptr<const rt::Model>> ModelFromBytes(const std::vector<uint8_t>& bytes, const std::string& name) {
  ASSIGN_OR_RETURN(Graph g, ReadModelBytes(bytes, name));
  return rt::Model::FromGraph(std::move(g));
}

double MedianLatencyMs(std::shared_ptr<const rt::Model> model, const std::vector<eval::HostTensor>& inputs,
                       const std::vector<eval::InputSpec>& float_specs, double seconds, int threads) {
  auto runner = eval::ModelRunner::Create(model, threads);
  if (!runner.ok()) return 0;
  std::vector<eval::HostTensor> in;
  for (size_t k = 0; k < inputs.size() && k < (*runner)->input_specs().size(); ++k)
    in.push_back(eval::ConvertForSpec(inputs[k], (*runner)->input_specs()[k]));
  (void)float_specs;
  for (int i = 0; i < 2; ++i)
    if (!(*runner)->Run(in).ok()) return 0;
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 5 || (std::chrono::duration<double>(Clock::now() - start).count() < seconds && times.size() < 2000)) {
    const auto t0 = Clock::now();
    if (!(*runner)->Run(in).ok()) return 0;
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

size_t SizeOf(const std::vector<uint8_t>& bytes, SizeMetric m) {
  if (m == SizeMetric::kRaw) return bytes.size();
  const CompressedSizes s = MeasureCompression(bytes);
  return m == SizeMetric::kGzip ? s.gzip : s.zstd;
}

// Serializes, measures and evaluates a candidate graph.
void Measure(const Context& c, const Graph& g, AutoCandidate* cand) {
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) {
    cand->error = bytes.status().message();
    return;
  }
  cand->bytes = std::move(*bytes);
  cand->file_bytes = cand->bytes.size();
  cand->size_bytes = SizeOf(cand->bytes, c.o.size_metric);
  auto model = ModelFromBytes(cand->bytes, cand->name);
  if (!model.ok()) {
    cand->error = model.status().message();
    return;
  }
  eval::RunOptions run;
  run.pp = c.o.pp;
  run.threads = c.o.threads;
  run.feed_specs = &c.specs;
  auto outputs = eval::RunDataset(*model, c.evaluation, run);
  if (!outputs.ok()) {
    cand->error = outputs.status().message();
    return;
  }
  eval::EvalOptions eo;
  eo.output = c.o.output;
  eo.label_offset = c.o.label_offset;
  const eval::EvalResult r = eval::ScoreOutputs(*outputs, c.evaluation, &c.baseline_outputs, eo);
  cand->accuracy = c.labels ? r.classification.top1_percent() : r.agreement.top1_percent();
  cand->drop = c.baseline - cand->accuracy;
  cand->output_snr_db =
      static_cast<size_t>(c.o.output) < r.output_errors.size() ? r.output_errors[static_cast<size_t>(c.o.output)].snr_db : 0;
  cand->within_budget = cand->drop <= c.o.max_drop + 1e-9;
  cand->latency_ms = MedianLatencyMs(*model, c.bench_inputs, c.specs, c.o.bench_seconds, c.o.bench_threads);
}

std::string Describe(const AutoCandidate& a) {
  if (!a.error.empty()) return a.name + ": failed: " + a.error;
  return a.name + ": " + Fixed(a.accuracy, 2) + "% (drop " + Fixed(a.drop, 2) + "), " + std::to_string(a.size_bytes) +
         " bytes, " + Fixed(a.latency_ms, 3) + " ms";
}

// Either pattern matches (one may be empty).
std::string CombinedRegex(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return "(?:" + a + ")|(?:" + b + ")";
}

Expected<Graph> Quantized(const Context& c, const Graph& g, QuantMode mode, const std::string& skip_regex,
                          int64_t dynamic_min_elements, QuantizeReport* report) {
  Graph q = g;
  QuantizeOptions qo;
  qo.mode = mode;
  qo.calibration = c.calibration;
  qo.skip_tensor_regex = CombinedRegex(c.o.skip_tensor_regex, skip_regex);
  qo.dynamic_min_elements = dynamic_min_elements;
  qo.threads = std::max(1, c.o.threads);
  ASSIGN_OR_RETURN(QuantizeReport r, QuantizeModel(q, qo));
  if (report) *report = r;
  return q;
}

std::string QuantRecipe(QuantMode mode, const std::string& skip_regex, int64_t dynamic_min) {
  std::string r = std::string("quantize --mode ") + QuantModeName(mode);
  if (mode == QuantMode::kInt8 || mode == QuantMode::kInt16x8) r += " --calibration CAL";
  if (mode == QuantMode::kDynamic && dynamic_min != 1024) r += " --dynamic-min-elements " + std::to_string(dynamic_min);
  if (!skip_regex.empty()) r += " --skip-tensor " + eval::ShellQuote(skip_regex);
  return r;
}

}  // namespace

Expected<AutoOptimizeResult> AutoOptimize(const Graph& float_model, const eval::Dataset& calibration,
                                          const eval::Dataset& evaluation, const AutoOptimizeOptions& o) {
  std::string why;
  if (IsAlreadyQuantized(float_model, &why))
    return InvalidArgument("optimize needs a float model; this one is already quantized (" + why +
                           "); run `edgeopt dequantize` first");
  if (evaluation.empty()) return InvalidArgument("no evaluation samples");
  AutoOptimizeResult result;
  result.max_drop = o.max_drop;
  result.objective = o.objective;
  result.size_metric = o.size_metric;
  result.calibration_samples = calibration.size();
  result.eval_samples = evaluation.size();
  Context c{o, evaluation, {}, nullptr, {}, false, 0, {}, {}};

  // The float model, as a file.
  AutoCandidate base;
  base.name = "float32";
  base.recipe = "(the input model)";
  {
    ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, SerializeModel(float_model));
    base.bytes = std::move(bytes);
  }
  ASSIGN_OR_RETURN(c.float_model, ModelFromBytes(base.bytes, "float32"));
  ASSIGN_OR_RETURN(c.specs, eval::InputSpecsOf(c.float_model));
  c.Log("float32: evaluating on " + std::to_string(evaluation.size()) + " samples");
  {
    eval::RunOptions run;
    run.pp = o.pp;
    run.threads = o.threads;
    run.feed_specs = &c.specs;
    ASSIGN_OR_RETURN(c.baseline_outputs, eval::RunDataset(c.float_model, evaluation, run));
  }
  const auto& first = c.baseline_outputs[0];
  if (static_cast<size_t>(o.output) >= first.size())
    return InvalidArgument("the model has " + std::to_string(first.size()) + " outputs; --output " + std::to_string(o.output) +
                           " does not exist");
  const size_t classes = first[static_cast<size_t>(o.output)].size();
  if (classes < 2)
    return Unsupported("optimize scores candidates by top-1 accuracy or top-1 agreement, which needs class scores; output " +
                       std::to_string(o.output) + " has " + std::to_string(classes) + " value(s)");
  c.labels = o.use_labels && evaluation.labelled();
  eval::EvalOptions eo;
  eo.output = o.output;
  eo.label_offset = o.label_offset;
  if (c.labels) {
    result.metric = "top-1 accuracy on the labels";
    c.baseline = eval::ScoreOutputs(c.baseline_outputs, evaluation, nullptr, eo).classification.top1_percent();
  } else {
    result.metric = "top-1 agreement with the float model";
    c.baseline = 100.0;
  }
  result.baseline_accuracy = c.baseline;
  ASSIGN_OR_RETURN(c.bench_inputs, evaluation.Load(0, c.specs, o.pp));
  base.file_bytes = base.bytes.size();
  base.size_bytes = SizeOf(base.bytes, o.size_metric);
  base.accuracy = c.baseline;
  base.drop = 0;
  base.output_snr_db = std::numeric_limits<double>::infinity();
  base.within_budget = true;
  base.latency_ms = MedianLatencyMs(c.float_model, c.bench_inputs, c.specs, o.bench_seconds, o.bench_threads);
  c.Log(Describe(base));
  result.candidates.push_back(std::move(base));

  // Calibration samples (needed by int8 / 16x8).
  for (size_t i = 0; i < calibration.size(); ++i) {
    ASSIGN_OR_RETURN(auto s, calibration.Load(i, c.specs, o.pp));
    c.calibration.push_back(std::move(s));
  }

  auto add = [&](AutoCandidate cand) {
    c.Log(Describe(cand));
    result.candidates.push_back(std::move(cand));
    return result.candidates.size() - 1;
  };
  auto try_quant = [&](const Graph& g, const std::string& name, const std::string& prefix_recipe, QuantMode mode,
                       const std::string& skip, int64_t dyn_min, QuantizeReport* qr) {
    AutoCandidate cand;
    cand.name = name;
    cand.recipe = prefix_recipe + QuantRecipe(mode, CombinedRegex(o.skip_tensor_regex, skip), dyn_min);
    c.Log(name + ": quantizing and evaluating");
    auto q = Quantized(c, g, mode, skip, dyn_min, qr);
    if (!q.ok()) cand.error = q.status().message();
    else Measure(c, *q, &cand);
    return add(std::move(cand));
  };

  int int8_index = -1;
  for (const std::string& mode_name : o.modes) {
    QuantMode mode;
    if (!ParseQuantMode(mode_name, &mode)) return InvalidArgument("unknown quantization mode '" + mode_name + "'");
    if ((mode == QuantMode::kInt8 || mode == QuantMode::kInt16x8) && c.calibration.empty())
      return InvalidArgument(std::string(QuantModeName(mode)) + " needs calibration samples");
    QuantizeReport qr;
    const size_t idx = try_quant(float_model, QuantModeName(mode), "", mode, "", 1024, &qr);
    if (mode == QuantMode::kInt8) int8_index = static_cast<int>(idx);
    // Dynamic range leaves weights under 1024 elements in float (as LiteRT); small models then
    // barely change, so also try it on every weight.
    if (mode == QuantMode::kDynamic && result.candidates[idx].error.empty() && qr.weights_kept_float > 0)
      try_quant(float_model, "dynamic (all weights)", "", mode, "", 0, nullptr);
  }

  // int8 over budget: keep the most sensitive layers in float.
  if (o.float_fallback && int8_index >= 0 && result.candidates[static_cast<size_t>(int8_index)].error.empty() &&
      !result.candidates[static_cast<size_t>(int8_index)].within_budget) {
    c.Log("int8 is over budget: ranking layers by sensitivity on calibration samples");
    auto int8_model = ModelFromBytes(result.candidates[static_cast<size_t>(int8_index)].bytes, "int8");
    if (!int8_model.ok()) return int8_model.status();
    eval::CompareOptions co;
    co.pp = o.pp;
    co.threads = o.threads;
    co.suggest = o.max_fallback_layers;
    co.worst = o.max_fallback_layers;
    const eval::Dataset sens = calibration.Spread(static_cast<size_t>(std::max(1, o.sensitivity_samples)));
    auto cmp = eval::CompareLayers(c.float_model, *int8_model, sens, co);
    if (!cmp.ok()) {
      result.notes.push_back("sensitivity analysis failed: " + cmp.status().message());
    } else {
      std::string ranking;
      for (size_t k = 0; k < cmp->worst.size(); ++k) {
        const auto& l = cmp->layers[cmp->worst[k]];
        ranking += (k ? ", " : "") + l.tensor + " (" + l.op + ", own SNR " + eval::FormatSnr(l.own_snr_db) + ")";
      }
      result.notes.push_back("int8 layers by sensitivity (lowest own SNR on " + std::to_string(sens.size()) +
                             " calibration samples): " + (ranking.empty() ? "none" : ranking));
      const auto& names = cmp->suggested_tensors;
      std::vector<size_t> counts;
      for (size_t k = 1; k < names.size(); k *= 2) counts.push_back(k);
      if (!names.empty()) counts.push_back(names.size());
      for (size_t k : counts) {
        const std::vector<std::string> keep(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(k));
        const std::string re = eval::ExactNamesRegex(keep);
        const size_t idx = try_quant(float_model, "int8 + " + std::to_string(k) + " float layer" + (k > 1 ? "s" : ""), "",
                                     QuantMode::kInt8, re, 1024, nullptr);
        result.candidates[idx].float_layers = keep;
        if (result.candidates[idx].within_budget) break;
      }
    }
  }

  // The smallest plain quantization within budget, for pruning/clustering to build on.
  bool have_quant = false;
  QuantMode quant_mode = QuantMode::kInt8;
  int64_t dyn_min = 1024;
  {
    int best = -1;
    for (size_t i = 1; i < result.candidates.size(); ++i) {
      const auto& a = result.candidates[i];
      if (!a.error.empty() || !a.within_budget || !a.float_layers.empty()) continue;
      if (best < 0 || a.size_bytes < result.candidates[static_cast<size_t>(best)].size_bytes) best = static_cast<int>(i);
    }
    if (best >= 0) {
      const std::string& name = result.candidates[static_cast<size_t>(best)].name;
      have_quant = ParseQuantMode(name.substr(0, name.find(' ')), &quant_mode);
      if (name.find("all weights") != std::string::npos) dyn_min = 0;
    }
  }
  for (double s : o.prune_sparsities) {
    const std::string pct = std::to_string(static_cast<int>(std::lround(s * 100)));
    Graph g = float_model;
    PruneOptions po;
    po.sparsity = s;
    po.encode_sparse = !have_quant;
    c.Log("prune " + pct + "%: pruning");
    auto pr = PruneModel(g, po);
    const std::string recipe = "prune --sparsity " + Fixed(s, 2) + (have_quant ? ", then " : " --encode-sparse");
    if (!pr.ok()) {
      AutoCandidate a;
      a.name = "prune " + pct + "%";
      a.recipe = recipe;
      a.error = pr.status().message();
      add(std::move(a));
      continue;
    }
    if (have_quant) {
      try_quant(g, "prune " + pct + "% + " + QuantModeName(quant_mode), recipe, quant_mode, "", dyn_min, nullptr);
    } else {
      AutoCandidate a;
      a.name = "prune " + pct + "% (sparse float32)";
      a.recipe = recipe;
      Measure(c, g, &a);
      add(std::move(a));
    }
  }
  for (int k : o.cluster_counts) {
    Graph g = float_model;
    ClusterOptions co;
    co.clusters = k;
    c.Log("cluster " + std::to_string(k) + ": clustering");
    auto cr = ClusterModel(g, co);
    const std::string recipe = "cluster --clusters " + std::to_string(k) + (have_quant ? ", then " : "");
    if (!cr.ok()) {
      AutoCandidate a;
      a.name = "cluster " + std::to_string(k);
      a.recipe = recipe;
      a.error = cr.status().message();
      add(std::move(a));
      continue;
    }
    if (have_quant) {
      try_quant(g, "cluster " + std::to_string(k) + " + " + QuantModeName(quant_mode), recipe, quant_mode, "", dyn_min, nullptr);
    } else {
      AutoCandidate a;
      a.name = "cluster " + std::to_string(k) + " (float32)";
      a.recipe = recipe;
      Measure(c, g, &a);
      add(std::move(a));
    }
  }

  // Choose.
  int best = -1;
  auto key = [&](const AutoCandidate& a) {
    return o.objective == Objective::kSize ? static_cast<double>(a.size_bytes) : a.latency_ms;
  };
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const auto& a = result.candidates[i];
    if (!a.error.empty() || !a.within_budget) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const auto& b = result.candidates[static_cast<size_t>(best)];
    if (key(a) < key(b) || (key(a) == key(b) && a.accuracy > b.accuracy)) best = static_cast<int>(i);
  }
  result.chosen = best;
  if (best >= 0) result.candidates[static_cast<size_t>(best)].chosen = true;
  return result;
}

}  // namespace edgeopt::optimize
