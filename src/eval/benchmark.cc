#include "eval/benchmark.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include "eval/inputs.h"

namespace edgeopt::eval {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
double MsSince(int64_t t0_ns) { return (NowNs() - t0_ns) / 1e6; }

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

std::vector<TensorBrief> Briefs(rt::SubgraphExec& sg, const std::vector<int32_t>& idx) {
  std::vector<TensorBrief> out;
  for (int32_t t : idx) {
    TensorBrief b;
    if (t < 0) {
      b.omitted = true;
    } else {
      const rt::RtTensor* r = sg.tensor(t);
      b.type = r->type;
      b.shape = r->shape;
      b.constant = r->is_constant();
    }
    out.push_back(std::move(b));
  }
  return out;
}

// Tells the progress callback about one more invoke.
class ProgressTicker {
 public:
  ProgressTicker(const BenchOptions& o, const std::string& model, int64_t start_ns)
      : o_(o), model_(model), start_ns_(start_ns) {}
  void Tick(const std::string& phase, int done, int total) const {
    if (!o_.progress) return;
    o_.progress(BenchProgress{model_, phase, done, total, (NowNs() - start_ns_) / 1e9});
  }

 private:
  const BenchOptions& o_;
  std::string model_;
  int64_t start_ns_;
};

// Creates an interpreter with `threads` threads, sets the inputs and measures everything after
// the model load. `phase_prefix` labels progress ("threads 2: ").
Expected<BenchResult> MeasureWithThreads(const std::shared_ptr<const rt::Model>& model, const std::string& model_path,
                                         const BenchOptions& o, int threads, bool profile, const ProgressTicker& ticker,
                                         const std::string& phase_prefix) {
  BenchResult r;
  r.model = model_path;
  r.hardware_threads = HardwareThreads();
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.reference_kernels_only = o.reference_kernels_only;
  int64_t t0 = NowNs();
  auto created = rt::Interpreter::Create(model, io);
  if (!created.ok()) return created.status().WithContext("'" + model_path + "'");
  std::unique_ptr<rt::Interpreter> interp = std::move(*created);
  r.init_ms = MsSince(t0);
  r.threads = interp->num_threads();

  const auto specs = InputSpecsOf(*interp);
  ASSIGN_OR_RETURN(auto files, MatchInputFlags(o.input_flags, specs));
  ASSIGN_OR_RETURN(auto inputs, LoadInputs(files, specs, o.norm, o.seed));
  for (const auto& in : inputs) {
    r.input_names.push_back(in.tensor.name);
    r.input_sources.push_back(in.source);
    for (const auto& n : in.notes) r.notes.push_back(n);
    if (in.random) r.randomized_inputs.push_back(in.tensor.name);
  }
  RETURN_IF_ERROR(SetInterpreterInputs(*interp, inputs));

  const std::string where = "'" + model_path + "'";
  t0 = NowNs();
  RETURN_IF_ERROR_CTX(interp->Invoke(), where);
  r.first_ms = MsSince(t0);

  const double budget_ms = o.max_secs > 0 ? o.max_secs * 1000.0 : 0;
  const int64_t warm_start = NowNs();
  for (int i = 0; i < o.warmup; ++i) {
    RETURN_IF_ERROR_CTX(interp->Invoke(), where);
    ++r.warmup_runs;
    ticker.Tick(phase_prefix + "warm-up", i + 1, o.warmup);
    if (budget_ms > 0 && MsSince(warm_start) > budget_ms) break;
  }
  r.warmup_ms = MsSince(warm_start);

  // Steady state. With profiling, each timed run is followed by a profiled run.
  std::vector<double> times, profiled_times, op_sums;
  std::map<int, double> op_total;  // op index -> summed ms over profiled runs
  std::vector<rt::ThreadPool::Slice> slices;
  int64_t trace_origin = 0;
  const Subgraph& sg = model->graph().main();
  const int64_t start = NowNs();
  const int total = o.runs * (profile ? 2 : 1);
  for (int i = 0; i < o.runs; ++i) {
    t0 = NowNs();
    RETURN_IF_ERROR_CTX(interp->Invoke(), where);
    times.push_back(MsSince(t0));
    ticker.Tick(phase_prefix + "measuring", static_cast<int>(times.size() + profiled_times.size()), total);
    if (profile) {
      const int run = static_cast<int>(profiled_times.size());
      interp->EnableProfiling(true);
      if (o.trace) {
        slices.clear();
        interp->threads().SetSliceSink(&slices);
      }
      const int64_t begin = NowNs();
      if (run == 0) trace_origin = begin;
      Status st = interp->Invoke();
      const int64_t end = NowNs();
      interp->threads().SetSliceSink(nullptr);
      interp->EnableProfiling(false);
      RETURN_IF_ERROR_CTX(st, where);
      profiled_times.push_back((end - begin) / 1e6);
      double sum = 0;
      for (const auto& p : interp->last_profile()) {
        const double ms = (p.end_ns - p.begin_ns) / 1e6;
        op_total[p.op_index] += ms;
        sum += ms;
        if (o.trace) {
          TraceEvent e;
          e.name = sg.ops[p.op_index].type_name();
          e.category = "op";
          e.op_index = p.op_index;
          e.run = run;
          e.tid = 0;
          e.ts_us = (p.begin_ns - trace_origin) / 1e3;
          e.dur_us = (p.end_ns - p.begin_ns) / 1e3;
          r.trace.push_back(std::move(e));
        }
      }
      op_sums.push_back(sum);
      if (o.trace) {
        TraceEvent inv;
        inv.name = "Invoke";
        inv.category = "invoke";
        inv.run = run;
        inv.ts_us = (begin - trace_origin) / 1e3;
        inv.dur_us = (end - begin) / 1e3;
        r.trace.push_back(std::move(inv));
        for (const auto& s : slices) {
          if (s.thread == 0) continue;  // the invoking thread's share is inside its op slice
          TraceEvent e;
          e.name = "work";
          e.category = "worker";
          e.tid = s.thread;
          e.run = run;
          e.ts_us = (s.begin_ns - trace_origin) / 1e3;
          e.dur_us = (s.end_ns - s.begin_ns) / 1e3;
          r.trace.push_back(std::move(e));
        }
      }
      ticker.Tick(phase_prefix + "measuring", static_cast<int>(times.size() + profiled_times.size()), total);
    }
    if (budget_ms > 0 && MsSince(start) > budget_ms && i + 1 < o.runs) {
      r.stopped_by_max_secs = true;
      break;
    }
  }
  r.latency = ComputeStats(times);

  if (profile) {
    r.profiled = true;
    r.profile_runs = static_cast<int>(profiled_times.size());
    const double n = r.profile_runs;
    r.profiled_invoke_ms = ComputeStats(profiled_times).mean;
    r.unprofiled_invoke_ms = r.latency.mean;
    r.profiled_ops_sum_ms = std::accumulate(op_sums.begin(), op_sums.end(), 0.0) / n;
    r.profiled_invoke_p50_ms = ComputeStats(profiled_times).p50;
    r.unprofiled_invoke_p50_ms = r.latency.p50;
    r.profiler_overhead_pct = r.unprofiled_invoke_p50_ms > 0
                                  ? 100.0 * (r.profiled_invoke_p50_ms - r.unprofiled_invoke_p50_ms) / r.unprofiled_invoke_p50_ms
                                  : 0;
    double cumulative = 0;
    for (const auto& info : interp->ops()) {
      OpProfile p;
      p.index = info.index;
      p.type = info.type;
      p.kernel = info.variant;
      p.backend = info.backend;
      p.folded = info.folded;
      p.partition = info.partition;
      p.macs = info.macs;
      const Operator& op = sg.ops[info.index];
      p.inputs = Briefs(interp->main(), op.inputs);
      p.outputs = Briefs(interp->main(), op.outputs);
      auto it = op_total.find(info.index);
      p.avg_ms = it == op_total.end() ? 0 : it->second / n;
      p.percent = r.profiled_ops_sum_ms > 0 ? 100.0 * p.avg_ms / r.profiled_ops_sum_ms : 0;
      cumulative += p.percent;
      p.cumulative_percent = cumulative;
      p.gops = p.avg_ms > 0 ? 2.0 * static_cast<double>(p.macs) / (p.avg_ms * 1e6) : 0;
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

}  // namespace

LatencyStats ComputeStats(std::vector<double> ms) {
  LatencyStats s;
  s.count = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.min = ms.front();
  s.max = ms.back();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  double var = 0;
  for (double x : ms) var += (x - s.mean) * (x - s.mean);
  s.std = ms.size() > 1 ? std::sqrt(var / static_cast<double>(ms.size() - 1)) : 0;
  s.p50 = Percentile(ms, 50);
  s.p90 = Percentile(ms, 90);
  s.p99 = Percentile(ms, 99);
  return s;
}

int HardwareThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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

bool ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

Status ValidateBenchOptions(const BenchOptions& o) {
  if (!o.auto_threads && o.threads < 1)
    return InvalidArgument("--threads must be at least 1 (or 'auto'), got " + std::to_string(o.threads));
  if (o.runs < 1) return InvalidArgument("--runs must be at least 1, got " + std::to_string(o.runs));
  if (o.warmup < 0) return InvalidArgument("--warmup must not be negative, got " + std::to_string(o.warmup));
  if (!(o.max_secs >= 0) || std::isinf(o.max_secs))
    return InvalidArgument("--max-secs must be a non-negative number of seconds (0: no limit)");
  return Status::Ok();
}

Expected<BenchResult> RunBenchmark(const std::string& model_path, const BenchOptions& o) {
  RETURN_IF_ERROR(ValidateBenchOptions(o));
  const int64_t start = NowNs();
  const ProgressTicker ticker(o, model_path, start);
  const bool rss_reset = ResetPeakRss();
  int64_t t0 = NowNs();
  ASSIGN_OR_RETURN(auto model, rt::Model::FromFile(model_path));
  const double load_ms = MsSince(t0);
  const bool profile = o.profile || o.trace;

  BenchResult r;
  if (o.auto_threads) {
    // Measure 1..N threads without profiling; keep the fastest median.
    const int max_threads = HardwareThreads();
    std::vector<BenchResult> points;
    for (int k = 1; k <= max_threads; ++k) {
      ASSIGN_OR_RETURN(BenchResult p,
                       MeasureWithThreads(model, model_path, o, k, false, ticker, "threads " + std::to_string(k) + ": "));
      points.push_back(std::move(p));
    }
    size_t best = 0;
    for (size_t k = 1; k < points.size(); ++k)
      if (points[k].latency.p50 < points[best].latency.p50) best = k;
    std::vector<ThreadSweepPoint> sweep;
    for (const auto& p : points) sweep.push_back({p.threads, p.init_ms, p.latency});
    if (profile) {
      ASSIGN_OR_RETURN(r, MeasureWithThreads(model, model_path, o, points[best].threads, true, ticker,
                                             "threads " + std::to_string(points[best].threads) + ", profiled: "));
    } else {
      r = std::move(points[best]);
    }
    r.sweep = std::move(sweep);
  } else {
    ASSIGN_OR_RETURN(r, MeasureWithThreads(model, model_path, o, o.threads, profile, ticker, ""));
  }
  r.load_ms = load_ms;
  r.memory.peak_rss_reset = rss_reset;
  return r;
}

}  // namespace edgeopt::eval
