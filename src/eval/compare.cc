#include "eval/compare.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "eval/accuracy.h"
#include "eval/workers.h"

namespace edgeopt::eval {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool IsConversion(const Operator& op) {
  return op.code == tflite::BuiltinOperator_QUANTIZE || op.code == tflite::BuiltinOperator_DEQUANTIZE;
}

bool IsNumeric(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kFloat16: case DType::kFloat64: case DType::kInt8: case DType::kUInt8:
    case DType::kInt16: case DType::kInt32: case DType::kInt64: case DType::kBool:
      return true;
    default:
      return false;
  }
}

bool IsIntegerQuantized(const Tensor& t) {
  return t.is_quantized() && (t.type == DType::kInt8 || t.type == DType::kUInt8 || t.type == DType::kInt16);
}

// An activation worth comparing: computed at run time, numeric, not a variable (LSTM state).
bool IsActivation(const Graph& g, const Tensor& t) { return !g.IsConstant(t) && !t.is_variable && IsNumeric(t.type); }

// Ops that compute something at run time: not QUANTIZE/DEQUANTIZE, not ops on constants only.
std::vector<int> ComputeOps(const Graph& g) {
  const Subgraph& sg = g.main();
  std::vector<int> ops;
  for (size_t i = 0; i < sg.ops.size(); ++i) {
    const Operator& op = sg.ops[i];
    if (IsConversion(op)) continue;
    bool any_dynamic = false;
    for (int32_t t : op.inputs)
      if (t >= 0 && !g.IsConstant(sg.tensors[t])) any_dynamic = true;
    if (!any_dynamic && !op.inputs.empty()) continue;
    ops.push_back(static_cast<int>(i));
  }
  return ops;
}

// Longest common subsequence of op types: pairs (ref op, cand op).
std::vector<std::pair<int, int>> AlignOps(const Graph& ref, const std::vector<int>& a, const Graph& cand,
                                          const std::vector<int>& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::pair<int, int>> pairs;
  auto same = [&](size_t i, size_t j) { return ref.main().ops[a[i]].type_name() == cand.main().ops[b[j]].type_name(); };
  if (n == 0 || m == 0) return pairs;
  if (n * m > 16'000'000) {  // too big for the table: greedy in order
    size_t j = 0;
    for (size_t i = 0; i < n && j < m; ++i) {
      size_t k = j;
      while (k < m && !same(i, k)) ++k;
      if (k < m) {
        pairs.emplace_back(a[i], b[k]);
        j = k + 1;
      }
    }
    return pairs;
  }
  std::vector<int32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> int32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;) at(i, j) = same(i, j) ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (same(i, j)) {
      pairs.emplace_back(a[i], b[j]);
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return pairs;
}

}  // namespace

std::vector<LayerMatch> MatchLayers(const Graph& ref, const Graph& cand, int* unmatched) {
  const Subgraph& rs = ref.main();
  const Subgraph& cs = cand.main();
  std::map<std::string, int32_t> cand_by_name;
  for (size_t t = 0; t < cs.tensors.size(); ++t)
    if (IsActivation(cand, cs.tensors[t])) cand_by_name.emplace(cs.tensors[t].name, static_cast<int32_t>(t));
  std::set<int32_t> used;
  std::vector<LayerMatch> out;
  int missing = 0;

  auto fits = [&](int32_t r, int32_t c) {
    return c >= 0 && !used.count(c) && IsActivation(cand, cs.tensors[c]) &&
           rs.tensors[r].num_elements() == cs.tensors[c].num_elements();
  };

  // Model inputs: the candidate's quantized twin when it has one.
  for (size_t k = 0; k < rs.inputs.size() && k < cs.inputs.size(); ++k) {
    const int32_t r = rs.inputs[k];
    int32_t c = cs.inputs[k];
    if (r < 0 || c < 0 || !IsActivation(ref, rs.tensors[r])) continue;
    for (int consumer : cs.FindConsumers(c)) {
      const Operator& op = cs.ops[consumer];
      if (op.code == tflite::BuiltinOperator_QUANTIZE && IsIntegerQuantized(cs.tensors[op.outputs[0]])) {
        c = op.outputs[0];
        break;
      }
    }
    if (!fits(r, c)) continue;
    used.insert(c);
    out.push_back({r, c, -1, cs.FindProducer(c), "input", false});
  }

  const std::vector<int> ref_ops = ComputeOps(ref);
  const std::vector<int> cand_ops = ComputeOps(cand);
  std::map<int, int> aligned;
  for (auto [a, b] : AlignOps(ref, ref_ops, cand, cand_ops)) aligned[a] = b;

  for (int op_index : ref_ops) {
    const Operator& op = rs.ops[op_index];
    for (size_t j = 0; j < op.outputs.size(); ++j) {
      const int32_t r = op.outputs[j];
      if (r < 0 || !IsActivation(ref, rs.tensors[r])) continue;
      const std::string& name = rs.tensors[r].name;
      int32_t c = -1;
      std::string method;
      auto it = cand_by_name.find(name);
      if (it != cand_by_name.end()) {
        c = it->second;
        // A float tensor made by DEQUANTIZE: the integer tensor behind it is the layer.
        const int p = cs.FindProducer(c);
        if (p >= 0 && cs.ops[p].code == tflite::BuiltinOperator_DEQUANTIZE && !cs.ops[p].inputs.empty() &&
            fits(r, cs.ops[p].inputs[0]))
          c = cs.ops[p].inputs[0];
        if (!fits(r, c)) c = -1;
      }
      for (const char* suffix : {"_int8", "_int16"}) {
        if (c >= 0) break;
        auto s = cand_by_name.find(name + suffix);
        if (s != cand_by_name.end() && fits(r, s->second)) c = s->second;
      }
      if (c >= 0) method = "name";
      if (c < 0) {
        auto a = aligned.find(op_index);
        if (a != aligned.end() && j < cs.ops[a->second].outputs.size() && fits(r, cs.ops[a->second].outputs[j])) {
          c = cs.ops[a->second].outputs[j];
          method = "position";
        }
      }
      if (c < 0) {
        ++missing;
        continue;
      }
      used.insert(c);
      out.push_back({r, c, op_index, cs.FindProducer(c), method, false});
    }
  }
  for (auto& m : out)
    for (int32_t o : rs.outputs)
      if (m.ref_tensor == o) m.is_output = true;
  if (unmatched) *unmatched = missing;
  return out;
}

std::string ExactNamesRegex(const std::vector<std::string>& names) {
  std::string re = "^(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) re += '|';
    for (char ch : names[i]) {
      if (std::string_view("\\^$.|?*+()[]{}").find(ch) != std::string_view::npos) re += '\\';
      re += ch;
    }
  }
  return re + ")$";
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "'\\''";
    else q += ch;
  }
  return q + "'";
}

void ChannelFit::Add(std::span<const float> ref, std::span<const float> cand, size_t channels) {
  if (channels == 0 || ref.size() != cand.size()) return;
  if (xx_.size() != channels) {
    xx_.assign(channels, 0);
    xy_.assign(channels, 0);
    yy_.assign(channels, 0);
  }
  values_ += static_cast<int64_t>(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const size_t c = i % channels;
    const double x = ref[i], y = cand[i];
    xx_[c] += x * x;
    xy_[c] += x * y;
    yy_[c] += y * y;
  }
}

void ChannelFit::Merge(const ChannelFit& o) {
  if (o.xx_.empty()) return;
  if (xx_.empty()) {
    *this = o;
    return;
  }
  values_ += o.values_;
  for (size_t c = 0; c < xx_.size() && c < o.xx_.size(); ++c) {
    xx_[c] += o.xx_[c];
    xy_[c] += o.xy_[c];
    yy_[c] += o.yy_[c];
  }
}

std::vector<float> ChannelFit::RescaleFactors() const {
  const size_t channels = xx_.size();
  if (channels < 2 || values_ < kRescaleMinValuesPerChannel * static_cast<int64_t>(channels)) return {};
  double xx = 0, xy = 0, yy = 0, residual = 0, far = 1;
  std::vector<float> factors(channels, 1.0f);
  for (size_t c = 0; c < channels; ++c) {
    xx += xx_[c];
    xy += xy_[c];
    yy += yy_[c];
    if (yy_[c] <= 0 || xx_[c] <= 0) {
      residual += xx_[c];  // nothing to fit: a channel that is zero on one side
      continue;
    }
    const double a = xy_[c] / yy_[c];
    if (a <= 0) return {};  // a sign flip is not a rescale
    factors[c] = static_cast<float>(a);
    residual += std::max(0.0, xx_[c] - xy_[c] * xy_[c] / yy_[c]);
    far = std::max(far, std::max(a, 1.0 / a));
  }
  if (yy <= 0 || xx <= 0) return {};
  const double residual_one_factor = std::max(0.0, xx - xy * xy / yy);
  if (far < kRescaleFactorFar || residual > kRescaleResidualRatio * residual_one_factor) return {};
  return factors;
}

namespace {

struct WorkerState {
  std::vector<ErrorAccumulator> layers;
  std::vector<ChannelFit> channels;
  std::vector<ErrorAccumulator> outputs;
  std::vector<AgreementAccumulator> agreement;
};

size_t LastDim(const rt::RtTensor& t) { return t.shape.empty() ? 0 : static_cast<size_t>(std::max(0, t.shape.back())); }

double NoiseFraction(double snr_db) { return std::isinf(snr_db) ? 0.0 : std::pow(10.0, -snr_db / 10.0); }

// The real range [lo, hi] a candidate tensor's values are clamped to by construction: when its
// only reader is a RELU / RELU6 / RELU_N1_TO_1 with the same quantization, the quantizer gave it
// the activation's parameters (as TFLite's converter does once it folds the activation into the
// producer), so its producer already clamps what the float reference clamps one op later. The
// reference tensor is compared after the same clamp; false when there is none.
bool ClampedByActivation(const Subgraph& cs, int32_t t, float* lo, float* hi) {
  if (t < 0 || !IsIntegerQuantized(cs.tensors[t])) return false;
  const std::vector<int> readers = cs.FindConsumers(t);
  if (readers.size() != 1) return false;
  const Operator& op = cs.ops[static_cast<size_t>(readers[0])];
  if (op.inputs.empty() || op.inputs[0] != t || op.outputs.size() != 1) return false;
  const Tensor& a = cs.tensors[t];
  const Tensor& b = cs.tensors[op.outputs[0]];
  if (!b.quant || a.quant->scale != b.quant->scale || a.quant->zero_point != b.quant->zero_point) return false;
  const float inf = std::numeric_limits<float>::infinity();
  switch (op.code) {
    case tflite::BuiltinOperator_RELU: *lo = 0; *hi = inf; return true;
    case tflite::BuiltinOperator_RELU6: *lo = 0; *hi = 6; return true;
    case tflite::BuiltinOperator_RELU_N1_TO_1: *lo = -1; *hi = 1; return true;
    default: return false;
  }
}

}  // namespace

Expected<CompareReport> CompareLayers(std::shared_ptr<const rt::Model> ref, std::shared_ptr<const rt::Model> cand,
                                      const Dataset& data, const CompareOptions& o) {
  const Graph& rg = ref->graph();
  const Graph& cg = cand->graph();
  CompareReport report;
  const std::vector<LayerMatch> matches = MatchLayers(rg, cg, &report.unmatched);
  std::vector<std::pair<float, float>> clamp(matches.size(), {0.0f, 0.0f});
  std::vector<char> clamped(matches.size(), 0);
  for (size_t m = 0; m < matches.size(); ++m)
    clamped[m] = ClampedByActivation(cg.main(), matches[m].cand_tensor, &clamp[m].first, &clamp[m].second);
  const size_t n = data.size();
  report.samples = n;
  const int workers = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(1, o.threads)), 1, std::max<size_t>(n, 1)));
  std::vector<WorkerState> states(static_cast<size_t>(workers));
  std::atomic<size_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error = Status::Ok();
  auto last_report = std::chrono::steady_clock::now();
  auto fail = [&](const Status& st) {
    std::lock_guard<std::mutex> lock(mu);
    if (!failed.exchange(true)) first_error = st;
  };
  // Pass 1 compares every matched tensor as it is and gathers the per-channel fits; pass 2 runs
  // the samples again only when some tensors turned out to be rescaled (see ChannelFit), and
  // compares those after undoing the factors.
  std::vector<std::vector<float>> undo(matches.size());
  bool second_pass = false;
  auto work = [&](int w) {
    auto rr = ModelRunner::Create(ref, 1, true);
    if (!rr.ok()) return fail(rr.status().WithContext("reference model"));
    auto cr = ModelRunner::Create(cand, 1, true);
    if (!cr.ok()) return fail(cr.status().WithContext("candidate model"));
    if ((*rr)->input_specs().size() != (*cr)->input_specs().size())
      return fail(InvalidArgument("the models have different numbers of inputs (" +
                                  std::to_string((*rr)->input_specs().size()) + " and " +
                                  std::to_string((*cr)->input_specs().size()) + ")"));
    if ((*rr)->num_outputs() != (*cr)->num_outputs())
      return fail(InvalidArgument("the models have different numbers of outputs (" + std::to_string((*rr)->num_outputs()) +
                                  " and " + std::to_string((*cr)->num_outputs()) + ")"));
    WorkerState& s = states[static_cast<size_t>(w)];
    s.layers.assign(matches.size(), ErrorAccumulator());
    s.channels.resize(matches.size());
    s.outputs.resize(static_cast<size_t>((*rr)->num_outputs()));
    s.agreement.resize(s.outputs.size());
    for (size_t i = static_cast<size_t>(w); i < n && !failed.load(); i += static_cast<size_t>(workers)) {
      auto inputs = data.Load(i, (*rr)->input_specs(), o.pp);
      if (!inputs.ok()) return fail(inputs.status());
      std::vector<HostTensor> cand_inputs;
      for (size_t k = 0; k < inputs->size(); ++k) cand_inputs.push_back(ConvertForSpec((*inputs)[k], (*cr)->input_specs()[k]));
      Status st = (*rr)->Run(*inputs);
      if (!st.ok()) return fail(st.WithContext("reference model, sample " + data.sample_name(i)));
      st = (*cr)->Run(cand_inputs);
      if (!st.ok()) return fail(st.WithContext("candidate model, sample " + data.sample_name(i)));
      for (size_t m = 0; m < matches.size(); ++m) {
        if (second_pass && undo[m].empty()) continue;
        const rt::RtTensor& rt_ref = (*rr)->Tensor(matches[m].ref_tensor);
        const rt::RtTensor& rt_cand = (*cr)->Tensor(matches[m].cand_tensor);
        if (!rt_ref.data || !rt_cand.data || rt_ref.num_elements() != rt_cand.num_elements()) continue;
        std::vector<float> ref_values = TensorAsFloats(rt_ref);
        if (clamped[m])
          for (float& v : ref_values) v = std::clamp(v, clamp[m].first, clamp[m].second);
        std::vector<float> cand_values = TensorAsFloats(rt_cand);
        double step = IsIntegerQuantized(cg.main().tensors[matches[m].cand_tensor]) ? rt_cand.scale() : 0;
        if (second_pass) {
          // Undo the factors; the quantization step scales with them (their mean, as one step).
          const std::vector<float>& f = undo[m];
          for (size_t i = 0; i < cand_values.size(); ++i) cand_values[i] *= f[i % f.size()];
          double mean = 0;
          for (float v : f) mean += v;
          step *= mean / static_cast<double>(f.size());
        } else if (LastDim(rt_ref) == LastDim(rt_cand)) {
          s.channels[m].Add(ref_values, cand_values, LastDim(rt_ref));
        }
        s.layers[m].Add(ref_values, cand_values);
        if (step > 0) s.layers[m].AddScale(step);
      }
      if (second_pass) {
        ++done;
        continue;
      }
      for (int k = 0; k < (*rr)->num_outputs(); ++k) {
        const auto rv = (*rr)->Output(k);
        const auto cv = (*cr)->Output(k);
        s.outputs[static_cast<size_t>(k)].Add(rv, cv);
        if (IsClassifierOutput((*rr)->interpreter().output(k)->shape) && rv.size() == cv.size())
          s.agreement[static_cast<size_t>(k)].Add(rv, cv);
      }
      ++done;
      if (o.progress && w == 0) {
        std::lock_guard<std::mutex> lock(mu);
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::milliseconds(100)) {
          last_report = now;
          o.progress(done.load(), n);
        }
      }
    }
  };
  RunWorkers(workers, work);
  if (failed.load()) return first_error;
  if (o.progress) o.progress(n, n);

  // Merge.
  WorkerState& total = states[0];
  for (size_t w = 1; w < states.size(); ++w) {
    for (size_t m = 0; m < total.layers.size() && m < states[w].layers.size(); ++m) total.layers[m].Merge(states[w].layers[m]);
    for (size_t k = 0; k < total.outputs.size() && k < states[w].outputs.size(); ++k) {
      total.outputs[k].Merge(states[w].outputs[k]);
      total.agreement[k].Merge(states[w].agreement[k]);
    }
    for (size_t m = 0; m < total.channels.size() && m < states[w].channels.size(); ++m)
      total.channels[m].Merge(states[w].channels[m]);
  }
  std::vector<ErrorStats> as_matched(total.layers.size());
  for (size_t m = 0; m < total.layers.size(); ++m) {
    as_matched[m] = total.layers[m].Finish();
    undo[m] = total.channels[m].RescaleFactors();
    second_pass = second_pass || !undo[m].empty();
  }
  if (second_pass) {
    std::vector<ErrorAccumulator> before = total.layers;
    done = 0;
    RunWorkers(workers, work);
    if (failed.load()) return first_error;
    for (size_t m = 0; m < before.size(); ++m) {
      if (undo[m].empty()) continue;
      for (size_t w = 1; w < states.size(); ++w) states[0].layers[m].Merge(states[w].layers[m]);
      before[m] = states[0].layers[m];
    }
    total.layers = std::move(before);
  }

  const Subgraph& rs = rg.main();
  const Subgraph& cs = cg.main();
  std::map<int32_t, size_t> layer_of_tensor;
  for (size_t m = 0; m < matches.size(); ++m) {
    const LayerMatch& lm = matches[m];
    LayerComparison l;
    l.ref_op = lm.ref_op;
    l.op = lm.ref_op >= 0 ? rs.ops[lm.ref_op].type_name() : "input";
    l.cand_op = lm.cand_op >= 0 ? cs.ops[lm.cand_op].type_name() : "input";
    l.tensor = rs.tensors[lm.ref_tensor].name;
    l.cand_tensor = cs.tensors[lm.cand_tensor].name;
    l.shape = rs.tensors[lm.ref_tensor].shape;
    l.cand_dtype = DTypeName(cs.tensors[lm.cand_tensor].type);
    l.cand_quantized = IsIntegerQuantized(cs.tensors[lm.cand_tensor]);
    l.method = lm.method;
    l.is_output = lm.is_output;
    l.stats = m < total.layers.size() ? total.layers[m].Finish() : ErrorStats{};
    if (m < undo.size() && !undo[m].empty()) {
      l.rescaled = true;
      l.rescale_min = *std::min_element(undo[m].begin(), undo[m].end());
      l.rescale_max = *std::max_element(undo[m].begin(), undo[m].end());
      l.snr_as_matched_db = as_matched[m].snr_db;
    }
    l.flagged = l.stats.quantized() && l.stats.rmse_over_scale > kRmseOverScaleFlag;
    layer_of_tensor[lm.ref_tensor] = report.layers.size();
    report.layers.push_back(std::move(l));
  }
  // Input SNR: worst SNR among the matched tensors feeding the layer's op (looking through
  // unmatched producers).
  std::function<void(int32_t, int, double*)> worst_input = [&](int32_t t, int depth, double* worst) {
    auto it = layer_of_tensor.find(t);
    if (it != layer_of_tensor.end()) {
      *worst = std::min(*worst, report.layers[it->second].stats.snr_db);
      return;
    }
    const int p = rs.FindProducer(t);
    if (p < 0 || depth > 16) return;
    for (int32_t in : rs.ops[p].inputs)
      if (in >= 0 && IsActivation(rg, rs.tensors[in])) worst_input(in, depth + 1, worst);
  };
  for (auto& l : report.layers) {
    double in_snr = kInf;
    if (l.ref_op >= 0)
      for (int32_t in : rs.ops[l.ref_op].inputs)
        if (in >= 0 && IsActivation(rg, rs.tensors[in])) worst_input(in, 0, &in_snr);
    if (l.ref_op < 0) in_snr = kInf;
    l.input_snr_db = in_snr;
    const double out_snr = l.stats.snr_db;
    l.snr_drop_db = std::isinf(out_snr) ? 0.0 : (std::isinf(in_snr) ? kInf : std::max(0.0, in_snr - out_snr));
    const double added = NoiseFraction(out_snr) - NoiseFraction(in_snr);
    l.own_snr_db = added > 1e-12 ? -10.0 * std::log10(added) : kInf;
  }
  // Worst quantized layers: lowest own SNR.
  std::vector<size_t> order;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    const auto& l = report.layers[i];
    if (l.ref_op >= 0 && l.cand_quantized && !std::isinf(l.own_snr_db)) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return report.layers[a].own_snr_db < report.layers[b].own_snr_db; });
  report.worst.assign(order.begin(), order.begin() + std::min<size_t>(order.size(), static_cast<size_t>(std::max(0, o.worst))));
  for (size_t k = 0; k < order.size() && static_cast<int>(k) < o.suggest; ++k)
    report.suggested_tensors.push_back(report.layers[order[k]].tensor);
  if (!report.suggested_tensors.empty())
    report.suggestion = "--skip-tensor " + ShellQuote(ExactNamesRegex(report.suggested_tensors));

  for (size_t k = 0; k < total.outputs.size(); ++k) {
    OutputComparison oc;
    const int32_t t = rs.outputs[k];
    oc.name = rs.tensors[t].name;
    oc.shape = rs.tensors[t].shape;
    oc.stats = total.outputs[k].Finish();
    oc.classifier = total.agreement[k].samples() > 0;
    oc.agreement = total.agreement[k];
    report.outputs.push_back(std::move(oc));
  }
  return report;
}

}  // namespace edgeopt::eval
