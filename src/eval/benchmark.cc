#include "eval/benchmark.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include "core/tick_clock.h"
#include "eval/inputs.h"

namespace edgeopt::eval {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
double MsSince(int64_t t0_ns) { return (NowNs() - t0_ns) / 1e6; }

// Runs whose time is within this many back-to-back clock intervals of the median count as
// "around the median" even beyond the middle fifth (see CentralRange).
constexpr double kCentralSteps = 3;

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// The runs around the median of a sorted series, as an index range [first, last): the middle
// fifth (on a shared machine a third of the runs can be disturbed by other processes, and they
// would dominate plain or quartile-trimmed means), widened to every run within `near` of the
// median, so that runs one clock step apart all count and their mean resolves a time finer than
// the clock's step.
std::pair<size_t, size_t> CentralRange(const std::vector<double>& sorted, double near) {
  if (sorted.empty()) return {0, 0};
  const size_t cut = sorted.size() * 2 / 5;
  size_t first = cut, last = std::max(cut + 1, sorted.size() - cut);
  const double median = Percentile(sorted, 50);
  first = std::min<size_t>(first, static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), median - near) - sorted.begin()));
  last = std::max<size_t>(last, static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), median + near) - sorted.begin()));
  return {first, last};
}

double CentralMean(std::vector<double> v, double near) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto [first, last] = CentralRange(v, near);
  double sum = 0;
  for (size_t k = first; k < last; ++k) sum += v[k];
  // Within the values averaged, as a mean is: the rounded sum and division can land an ulp
  // outside (equal values x averaged to just below x failed the mean >= min check of a test).
  return std::clamp(sum / static_cast<double>(last - first), v[first], v[last - 1]);
}

// What timing an invoke adds to its measured time: the interval between two back-to-back clock
// reads. Subtracted from every timed invoke: at 0.1 us per invoke it is ~10%. A mean of many
// pairs (those around the median: an interrupt in one pair must not count), not the fastest: a
// clock that ticks in steps (a virtualized TSC steps by ~10 ns) makes every interval a whole
// number of steps, the fastest is then one step however long the reads really take, and only
// the mean over pairs started at varied phases of the step is right.
double TimerOverheadNs() {
  constexpr int kPairs = 4000;
  const bool tsc = TickClock::UsesTsc();
  std::vector<double> ns(kPairs);
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kPairs; ++i) {
    const uint64_t a = TickClock::Read(tsc);
    const uint64_t b = TickClock::Read(tsc);
    ns[static_cast<size_t>(i)] = TickClock::ToNs(b - a);
    fastest = std::min(fastest, ns[static_cast<size_t>(i)]);
  }
  return CentralMean(std::move(ns), kCentralSteps * fastest);
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

// An interpreter of `model` (from `path`) for the options with `threads` threads (*init_ms: the
// time its creation took), its inputs set from --input files or seeded random values (*inputs:
// them, for their descriptions).
Expected<std::unique_ptr<rt::Interpreter>> CreateBenchInterpreter(const std::shared_ptr<const rt::Model>& model,
                                                                  const std::string& path, const BenchOptions& o,
                                                                  int threads, double* init_ms,
                                                                  std::vector<LoadedInput>* inputs) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.reference_kernels_only = o.reference_kernels_only;
  const int64_t t0 = NowNs();
  auto created = rt::Interpreter::Create(model, io);
  if (!created.ok()) return created.status().WithContext("'" + path + "'");
  *init_ms = MsSince(t0);
  const auto specs = InputSpecsOf(**created);
  ASSIGN_OR_RETURN(auto files, MatchInputFlags(o.input_flags, specs));
  ASSIGN_OR_RETURN(*inputs, LoadInputs(files, specs, o.norm, o.seed));
  RETURN_IF_ERROR(SetInterpreterInputs(**created, *inputs));
  return std::move(*created);
}

// Creates an interpreter with `threads` threads, sets the inputs and measures everything after
// the model load. `phase_prefix` labels progress ("threads 2: ").
Expected<BenchResult> MeasureWithThreads(const std::shared_ptr<const rt::Model>& model, const std::string& model_path,
                                         const BenchOptions& o, int threads, bool profile, const ProgressTicker& ticker,
                                         const std::string& phase_prefix) {
  BenchResult r;
  r.model = model_path;
  r.hardware_threads = HardwareThreads();
  std::vector<LoadedInput> inputs;
  ASSIGN_OR_RETURN(std::unique_ptr<rt::Interpreter> interp,
                   CreateBenchInterpreter(model, model_path, o, threads, &r.init_ms, &inputs));
  r.threads = interp->num_threads();
  for (const auto& in : inputs) {
    r.input_names.push_back(in.tensor.name);
    r.input_sources.push_back(in.source);
    for (const auto& n : in.notes) r.notes.push_back(n);
    if (in.random) r.randomized_inputs.push_back(in.tensor.name);
  }

  const std::string where = "'" + model_path + "'";
  int64_t t0 = NowNs();
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

  // Steady state. With profiling, each timed run is followed by a profiled run. Invokes are
  // timed with the profiler's cheap clock, whose own cost is a few nanoseconds.
  std::vector<double> times, profiled_times;
  std::vector<std::vector<rt::OpTiming>> run_profiles;  // raw per-op times of each profiled run
  std::vector<rt::ThreadPool::Slice> slices;
  int64_t trace_origin = 0;
  const Subgraph& sg = model->graph().main();
  if (profile) {
    r.profiler_clock = TickClock::Source();
    r.profiler_clock_read_ns = rt::ProfilerCostPerOpNs();
    // Storage for every run's profile allocated now: no allocation between the timed invokes
    // (an unprofiled invoke right after one would start with colder caches than a profiled one).
    run_profiles.resize(static_cast<size_t>(o.runs));
    for (auto& p : run_profiles) p.reserve(interp->ops().size());
  }
  r.timer_overhead_ns = TimerOverheadNs();
  // The invokes are timed with the same bare clock reads as TimerOverheadNs (the clock source
  // cached, no call between the reads and the invoke), so that what it subtracts is what they cost.
  const bool tsc = TickClock::UsesTsc();
  const double timer_ms = r.timer_overhead_ns / 1e6;
  const int64_t start = NowNs();
  const int total = o.runs * (profile ? 2 : 1);
  for (int i = 0; i < o.runs; ++i) {
    uint64_t tick0 = TickClock::Read(tsc);
    Status st = interp->Invoke();
    uint64_t tick1 = TickClock::Read(tsc);
    RETURN_IF_ERROR_CTX(st, where);
    times.push_back(std::max(0.0, TickClock::ToNs(tick1 - tick0) / 1e6 - timer_ms));
    ticker.Tick(phase_prefix + "measuring", static_cast<int>(times.size() + profiled_times.size()), total);
    if (profile) {
      const int run = static_cast<int>(profiled_times.size());
      interp->EnableProfiling(true);
      if (o.trace) {
        slices.clear();
        interp->threads().SetSliceSink(&slices);
      }
      tick0 = TickClock::Read(tsc);
      st = interp->Invoke();
      tick1 = TickClock::Read(tsc);
      interp->threads().SetSliceSink(nullptr);
      interp->EnableProfiling(false);
      RETURN_IF_ERROR_CTX(st, where);
      const int64_t begin = TickClock::ToSteadyNs(tick0), end = TickClock::ToSteadyNs(tick1);
      if (run == 0) trace_origin = begin;
      profiled_times.push_back(std::max(0.0, TickClock::ToNs(tick1 - tick0) / 1e6 - timer_ms));
      const std::vector<rt::OpTiming>& last = interp->last_profile();
      run_profiles[static_cast<size_t>(run)].assign(last.begin(), last.end());
      if (o.trace) {
        for (const auto& p : interp->last_profile()) {
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
  if (profile) run_profiles.resize(profiled_times.size());

  if (profile) {
    r.profiled = true;
    r.profile_runs = static_cast<int>(profiled_times.size());
    r.unprofiled_invoke_ms = r.latency.mean;
    r.profiled_invoke_p50_ms = ComputeStats(profiled_times).p50;
    r.unprofiled_invoke_p50_ms = r.latency.p50;
    r.profiler_overhead_pct = r.unprofiled_invoke_p50_ms > 0
                                  ? 100.0 * (r.profiled_invoke_p50_ms - r.unprofiled_invoke_p50_ms) / r.unprofiled_invoke_p50_ms
                                  : 0;
    // The three series (unprofiled invokes, profiled invokes timed from outside, the profiled
    // invokes' own op windows) are all reduced the same way: the mean of the runs around the
    // median (CentralRange), so that what is compared was measured alike. A median alone would
    // not do for tiny models: the clock may tick in steps of ~10 ns (a virtualized TSC), so one
    // invoke's time is a whole number of steps and only a mean over runs that start at varied
    // phases of the step resolves it.
    const double near_ms = kCentralSteps * r.timer_overhead_ns / 1e6;
    r.unprofiled_invoke_ref_ms = CentralMean(times, near_ms);
    r.profiled_invoke_ref_ms = CentralMean(profiled_times, near_ms);
    std::vector<std::pair<int64_t, size_t>> by_total;
    for (size_t k = 0; k < run_profiles.size(); ++k) {
      const auto& prof = run_profiles[k];
      by_total.push_back({prof.empty() ? 0 : prof.back().end_ns - prof.front().begin_ns, k});
    }
    std::sort(by_total.begin(), by_total.end());
    {
      std::vector<double> totals;
      for (const auto& [ns, k] : by_total) totals.push_back(ns / 1e6);
      const auto [lo, hi] = CentralRange(totals, near_ms);
      by_total.erase(by_total.begin() + static_cast<std::ptrdiff_t>(hi), by_total.end());
      by_total.erase(by_total.begin(), by_total.begin() + static_cast<std::ptrdiff_t>(lo));
    }
    const size_t kept = by_total.size();
    r.profile_runs_averaged = static_cast<int>(kept);
    // The profiler's cost per op, measured where it matters: what profiling adds to an invoke
    // (profiled minus unprofiled, interleaved runs), per clock read (one per op plus the first).
    // A clock read overlaps with the kernels' own work, so this is usually below the cost of
    // back-to-back reads, which bounds it (busy-machine noise cannot make it larger, nor
    // negative).
    const size_t reads = run_profiles.empty() ? 1 : run_profiles.front().size() + 1;
    const double added_ns = (r.profiled_invoke_ref_ms - r.unprofiled_invoke_ref_ms) * 1e6;
    r.profiler_cost_ns_per_op = std::clamp(added_ns / static_cast<double>(reads), 0.0, r.profiler_clock_read_ns);
    std::map<int, double> op_total, op_raw_total;  // op index -> summed ms over the kept runs
    const double cost_ms = r.profiler_cost_ns_per_op / 1e6;
    double invoke_total = 0;
    for (size_t k = 0; k < kept; ++k) {
      invoke_total += by_total[k].first / 1e6;
      for (const auto& p : run_profiles[by_total[k].second]) {
        const double raw = (p.end_ns - p.begin_ns) / 1e6;
        op_raw_total[p.op_index] += raw;
        op_total[p.op_index] += std::max(0.0, raw - cost_ms);
      }
    }
    const double n = static_cast<double>(kept);
    r.profiled_invoke_ms = invoke_total / n;
    for (const auto& [index, ms] : op_total) r.profiled_ops_sum_ms += ms / n;
    for (const auto& [index, ms] : op_raw_total) r.profiled_raw_ops_sum_ms += ms / n;
    r.outside_ops_ms = r.unprofiled_invoke_ref_ms - r.profiled_ops_sum_ms;
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
      p.threads = info.threads;
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

Expected<InterleavedResult> RunInterleaved(const std::vector<std::string>& paths, const std::vector<int>& threads,
                                           const BenchOptions& o) {
  RETURN_IF_ERROR(ValidateBenchOptions(o));
  if (paths.size() < 2 || threads.size() != paths.size())
    return InvalidArgument("interleaved runs need two or more models and a thread count for each");
  const int64_t start = NowNs();
  const ProgressTicker ticker(o, "interleaved", start);
  const size_t n = paths.size();
  std::vector<std::unique_ptr<rt::Interpreter>> its;
  for (size_t k = 0; k < n; ++k) {
    ASSIGN_OR_RETURN(auto model, rt::Model::FromFile(paths[k]));
    double init_ms = 0;
    std::vector<LoadedInput> inputs;
    ASSIGN_OR_RETURN(std::unique_ptr<rt::Interpreter> interp,
                     CreateBenchInterpreter(model, paths[k], o, threads[k], &init_ms, &inputs));
    for (int i = 0; i <= o.warmup; ++i) RETURN_IF_ERROR_CTX(interp->Invoke(), "'" + paths[k] + "'");
    its.push_back(std::move(interp));
  }
  // Rounds of a block of invokes per model (the first kSettle of each block untimed: the model's
  // weights and activations back in cache after the others ran), the model that starts a round
  // rotating; a round's ratio is the ratio of its blocks' medians.
  constexpr int kSettle = 2;
  const int block = std::clamp(o.runs / 10, 1, 20);
  const int want_rounds = std::max(1, (o.runs + block - 1) / block);
  const bool tsc = TickClock::UsesTsc();
  const double timer_ms = TimerOverheadNs() / 1e6;
  const double budget_ms = o.max_secs > 0 ? o.max_secs * 1000.0 : 0;
  std::vector<std::vector<double>> times(n), block_p50(n);
  const int64_t t0 = NowNs();
  int rounds = 0;
  while (rounds < want_rounds) {
    for (size_t i = 0; i < n; ++i) {
      const size_t k = (static_cast<size_t>(rounds) + i) % n;
      const std::string where = "'" + paths[k] + "'";
      for (int s = 0; s < kSettle; ++s) RETURN_IF_ERROR_CTX(its[k]->Invoke(), where);
      std::vector<double> b;
      for (int j = 0; j < block; ++j) {
        const uint64_t tick0 = TickClock::Read(tsc);
        const Status st = its[k]->Invoke();
        const uint64_t tick1 = TickClock::Read(tsc);
        RETURN_IF_ERROR_CTX(st, where);
        b.push_back(std::max(0.0, TickClock::ToNs(tick1 - tick0) / 1e6 - timer_ms));
      }
      times[k].insert(times[k].end(), b.begin(), b.end());
      std::sort(b.begin(), b.end());
      block_p50[k].push_back(Percentile(b, 50));
    }
    ++rounds;
    ticker.Tick("interleaved rounds", rounds, want_rounds);
    if (budget_ms > 0 && MsSince(t0) > budget_ms) break;
  }
  InterleavedResult r;
  r.rounds = rounds;
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> sorted = times[k], ratios;
    std::sort(sorted.begin(), sorted.end());
    r.p50_ms.push_back(Percentile(sorted, 50));
    for (int i = 0; i < rounds; ++i)
      if (block_p50[0][static_cast<size_t>(i)] > 0)
        ratios.push_back(block_p50[k][static_cast<size_t>(i)] / block_p50[0][static_cast<size_t>(i)]);
    std::sort(ratios.begin(), ratios.end());
    r.ratio_p50.push_back(Percentile(ratios, 50));
    r.ratio_q1.push_back(Percentile(ratios, 25));
    r.ratio_q3.push_back(Percentile(ratios, 75));
  }
  return r;
}

}  // namespace edgeopt::eval
