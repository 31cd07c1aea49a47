#include "eval/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/inputs.h"

namespace edgeopt::eval {
namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p / 100.0 * (sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

std::string DescribeTensors(rt::SubgraphExec& sg, const std::vector<int32_t>& idx) {
  std::string s;
  for (int32_t t : idx) {
    if (!s.empty()) s += ", ";
    if (t < 0) {
      s += "-";
      continue;
    }
    const rt::RtTensor* r = sg.tensor(t);
    s += rt::ShapeToString(r->shape) + " " + std::string(DTypeName(r->type));
  }
  return s;
}

}  // namespace

LatencyStats ComputeStats(std::vector<double> ms) {
  LatencyStats s;
  s.count = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  double var = 0;
  for (double x : ms) var += (x - s.mean) * (x - s.mean);
  s.std = ms.size() > 1 ? std::sqrt(var / (ms.size() - 1)) : 0;
  s.p50 = Percentile(ms, 50);
  s.p90 = Percentile(ms, 90);
  s.p99 = Percentile(ms, 99);
  return s;
}

size_t PeakRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      size_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

Expected<BenchResult> RunBenchmark(const std::string& model_path, const BenchOptions& o) {
  if (o.runs < 1) return InvalidArgument("--runs must be at least 1");
  if (o.warmup < 0) return InvalidArgument("--warmup must not be negative");
  BenchResult r;
  r.model = model_path;
  r.threads = o.threads;
  double t0 = NowMs();
  ASSIGN_OR_RETURN(auto model, rt::Model::FromFile(model_path));
  r.load_ms = NowMs() - t0;
  rt::InterpreterOptions io;
  io.num_threads = o.threads;
  io.reference_kernels_only = o.reference_kernels_only;
  t0 = NowMs();
  ASSIGN_OR_RETURN(auto interp, rt::Interpreter::Create(model, io));
  r.init_ms = NowMs() - t0;
  r.threads = interp->num_threads();

  std::vector<InputSpec> specs;
  for (int i = 0; i < interp->num_inputs(); ++i) specs.push_back(SpecOf(*interp->input(i)));
  ASSIGN_OR_RETURN(auto inputs, ResolveInputs(o.input_flags, specs, PixelNormalization{}, o.seed, &r.randomized_inputs));
  for (size_t i = 0; i < inputs.size(); ++i) {
    rt::RtTensor* t = interp->input(static_cast<int>(i));
    if (t->bytes < inputs[i].data.size()) return Internal("input buffer too small");
    std::memcpy(t->data, inputs[i].data.data(), inputs[i].data.size());
  }

  t0 = NowMs();
  RETURN_IF_ERROR(interp->Invoke());
  r.first_ms = NowMs() - t0;
  const int total_steps = o.warmup + o.runs + (o.profile ? o.profile_runs : 0);
  int step = 0;
  double last_report = NowMs();
  auto tick = [&](const char* phase) {
    ++step;
    if (o.progress && NowMs() - last_report > 500) {
      o.progress(phase, step, total_steps);
      last_report = NowMs();
    }
  };
  for (int i = 0; i < o.warmup; ++i) {
    RETURN_IF_ERROR(interp->Invoke());
    tick("warm-up");
  }
  std::vector<double> times;
  const double start = NowMs();
  for (int i = 0; i < o.runs; ++i) {
    t0 = NowMs();
    RETURN_IF_ERROR(interp->Invoke());
    times.push_back(NowMs() - t0);
    tick("measuring");
    if (o.max_secs > 0 && NowMs() - start > o.max_secs * 1000.0) break;
  }
  r.latency = ComputeStats(times);

  auto infos = interp->ops();
  const Subgraph& sg = model->graph().main();
  if (o.profile) {
    interp->EnableProfiling(true);
    std::vector<rt::ThreadPool::Slice> slices;
    if (o.trace) interp->threads().SetSliceSink(&slices);
    std::map<int, double> op_total;
    std::vector<double> invoke_times;
    const double trace_origin = NowMs();
    const int64_t origin_ns = static_cast<int64_t>(trace_origin * 1e6);
    for (int run = 0; run < o.profile_runs; ++run) {
      slices.clear();
      t0 = NowMs();
      RETURN_IF_ERROR(interp->Invoke());
      invoke_times.push_back(NowMs() - t0);
      for (const auto& p : interp->last_profile()) {
        op_total[p.op_index] += (p.end_ns - p.begin_ns) / 1e6;
        if (o.trace) {
          TraceEvent e;
          e.name = sg.ops[p.op_index].type_name();
          e.op_index = p.op_index;
          e.run = run;
          e.tid = 0;
          e.ts_us = (p.begin_ns - origin_ns) / 1e3;
          e.dur_us = (p.end_ns - p.begin_ns) / 1e3;
          r.trace.push_back(std::move(e));
        }
      }
      if (o.trace) {
        for (const auto& s : slices) {
          if (s.thread == 0) continue;  // the invoking thread's share is inside its op slice
          TraceEvent e;
          e.name = "worker";
          e.tid = s.thread;
          e.run = run;
          e.ts_us = (s.begin_ns - origin_ns) / 1e3;
          e.dur_us = (s.end_ns - s.begin_ns) / 1e3;
          r.trace.push_back(std::move(e));
        }
      }
      tick("profiling");
    }
    interp->threads().SetSliceSink(nullptr);
    interp->EnableProfiling(false);
    r.profiled_invoke_ms = ComputeStats(invoke_times).mean;
    double sum = 0;
    for (const auto& [idx, total] : op_total) sum += total / o.profile_runs;
    r.profiled_ops_sum_ms = sum;
    r.profiler_overhead_pct =
        r.latency.mean > 0 ? 100.0 * (r.profiled_invoke_ms - r.latency.mean) / r.latency.mean : 0;
    double cumulative = 0;
    for (const auto& info : infos) {
      OpProfile p;
      p.index = info.index;
      p.type = info.type;
      p.kernel = info.variant;
      p.backend = info.backend;
      p.folded = info.folded;
      p.macs = info.macs;
      const Operator& op = sg.ops[info.index];
      p.inputs = DescribeTensors(interp->main(), op.inputs);
      p.outputs = DescribeTensors(interp->main(), op.outputs);
      auto it = op_total.find(info.index);
      p.avg_ms = it == op_total.end() ? 0 : it->second / o.profile_runs;
      p.percent = sum > 0 ? 100.0 * p.avg_ms / sum : 0;
      cumulative += p.percent;
      p.cumulative_percent = cumulative;
      p.gops = p.avg_ms > 0 ? 2.0 * p.macs / (p.avg_ms * 1e6) : 0;
      r.ops.push_back(std::move(p));
    }
  }
  r.memory.arena_bytes = interp->arena_bytes();
  r.memory.packed_weight_bytes = interp->packed_weight_bytes();
  r.memory.persistent_bytes = interp->persistent_bytes();
  r.memory.mapped_model_bytes = model->mapped_bytes();
  r.memory.peak_rss_bytes = PeakRssBytes();
  return r;
}

std::string TraceJson(const std::vector<BenchResult>& results) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t m = 0; m < results.size(); ++m) {
    const int pid = static_cast<int>(m + 1);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", results[m].model}}}});
    int max_tid = 0;
    for (const auto& e : results[m].trace) max_tid = std::max(max_tid, e.tid);
    for (int t = 0; t <= max_tid; ++t)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", t},
                        {"args", {{"name", t == 0 ? std::string("invoke (caller thread)") : "worker " + std::to_string(t)}}}});
    for (const auto& e : results[m].trace) {
      nlohmann::json args = {{"run", e.run}};
      if (e.op_index >= 0) args["op_index"] = e.op_index;
      events.push_back({{"name", e.op_index >= 0 ? e.name + " #" + std::to_string(e.op_index) : e.name},
                        {"cat", e.op_index >= 0 ? "op" : "worker"},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", e.tid},
                        {"ts", e.ts_us},
                        {"dur", e.dur_us},
                        {"args", args}});
    }
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

}  // namespace edgeopt::eval
