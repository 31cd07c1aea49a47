#include "eval/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/text_format.h"

namespace edgeopt::eval {
namespace {

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// Milliseconds with about 3 significant digits, also for microsecond-scale models (0.000412).
std::string MsNum(double ms) {
  if (ms >= 100) return Fixed(ms, 1);
  if (ms >= 10) return Fixed(ms, 2);
  if (!(ms > 0) || ms >= 0.1) return Fixed(ms, 3);
  return Fixed(ms, std::clamp(2 - static_cast<int>(std::floor(std::log10(ms))), 3, 6));
}
std::string Ms(double ms) { return MsNum(ms) + " ms"; }
std::string Pct(double p) { return Fixed(p, 1) + "%"; }
std::string Ratio(double r) { return Fixed(r, 2) + "x"; }

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ShapeList(const std::vector<TensorBrief>& ts, bool with_type, bool skip_constants) {
  std::string s;
  for (const auto& t : ts) {
    if (t.omitted || (skip_constants && t.constant)) continue;
    if (!s.empty()) s += ",";
    if (with_type) s += std::string(DTypeName(t.type));
    s += rt::ShapeToString(t.shape);
  }
  return s;
}

// "float32[1,224,224,3] -> uint8[1,224,224,3]"
std::string TypedShapes(const OpProfile& op) {
  return ShapeList(op.inputs, true, true) + " -> " + ShapeList(op.outputs, true, false);
}

bool IsReferenceKernel(const std::string& kernel) {
  return kernel.size() >= 4 && kernel.compare(kernel.size() - 4, 4, "/ref") == 0;
}

std::string Join(const std::set<std::string>& items, const std::string& sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string Threads(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

nlohmann::ordered_json StatsJson(const LatencyStats& s) {
  return {{"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max},
          {"p50", s.p50},   {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

nlohmann::ordered_json TensorsJson(const std::vector<TensorBrief>& ts) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& t : ts) {
    if (t.omitted) {
      a.push_back(nullptr);
      continue;
    }
    a.push_back({{"dtype", std::string(DTypeName(t.type))}, {"shape", t.shape}, {"constant", t.constant}});
  }
  return a;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string Num(double v) {
  std::ostringstream ss;
  ss.precision(6);
  ss << v;
  return ss.str();
}

}  // namespace

std::string OpShapes(const OpProfile& op) { return ShapeList(op.inputs, false, true) + " -> " + ShapeList(op.outputs, false, false); }

bool IsConversionOp(const std::string& type) { return type == "QUANTIZE" || type == "DEQUANTIZE" || type == "CAST"; }

namespace {
// An op run inside a fused kernel: its first op ("fused/...", holding the kernel's whole time) or
// one of the others ("fused into #k", no time of its own).
bool IsFusedKernel(const std::string& kernel) { return kernel.rfind("fused", 0) == 0; }
}  // namespace

std::string ModelLetter(size_t k) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('A' + k % 26));
    k /= 26;
  } while (k-- > 0);
  return s;
}

std::vector<OpTypeSummary> SummarizeByType(const BenchResult& r) {
  std::map<std::string, OpTypeSummary> by;
  std::vector<std::string> order;
  std::set<int> partitions_seen;
  for (const auto& op : r.ops) {
    auto [it, inserted] = by.try_emplace(op.type);
    if (inserted) order.push_back(op.type);
    OpTypeSummary& s = it->second;
    s.type = op.type;
    if (op.folded) {
      ++s.folded;
      continue;
    }
    ++s.count;
    // A fused run names the op holding its time; a partition's time is on its first op.
    const bool later_in_partition = op.partition >= 0 && !partitions_seen.insert(op.partition).second;
    if (op.kernel.rfind("fused into #", 0) == 0 || later_in_partition) ++s.merged;
    if (op.kernel.rfind("fused/", 0) == 0) ++s.hosts;
    s.ms += op.avg_ms;
    s.macs += op.macs;
    s.kernels.insert(op.kernel);
  }
  std::vector<OpTypeSummary> out;
  for (const auto& t : order) {
    OpTypeSummary s = by[t];
    s.percent = r.profiled_ops_sum_ms > 0 ? 100.0 * s.ms / r.profiled_ops_sum_ms : 0;
    s.gops = s.ms > 0 ? 2.0 * static_cast<double>(s.macs) / (s.ms * 1e6) : 0;
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  return out;
}

ConversionCost ConversionCostOf(const BenchResult& r) {
  ConversionCost c;
  for (const auto& op : r.ops) {
    if (!IsConversionOp(op.type)) continue;
    if (op.folded) {
      ++c.folded;
      continue;
    }
    if (IsFusedKernel(op.kernel)) {
      ++c.fused;
      continue;
    }
    ++c.ops;
    c.ms += op.avg_ms;
  }
  c.percent = r.profiled_ops_sum_ms > 0 ? 100.0 * c.ms / r.profiled_ops_sum_ms : 0;
  return c;
}

std::vector<std::string> BenchWarnings(const BenchResult& r) {
  std::vector<std::string> w;
  const std::string name = Basename(r.model);
  for (size_t k = 1; k < r.sweep.size(); ++k) {
    const auto& fewer = r.sweep[k - 1];
    const auto& more = r.sweep[k];
    if (more.latency.p50 > fewer.latency.p50)
      w.push_back(name + ": " + Threads(more.threads) + " is slower than " + Threads(fewer.threads) + " (p50 " +
                  Ms(more.latency.p50) + " vs " + Ms(fewer.latency.p50) +
                  "); the extra threads cost more than they add (small ops, or cores busy with other work)");
  }
  if (r.profiled && r.unprofiled_invoke_ref_ms > 0 && std::fabs(r.ops_coverage_pct() - 100.0) > kOpsCoverageTolerancePct)
    w.push_back(name + ": per-op times add up to " + Pct(r.ops_coverage_pct()) + " of the unprofiled invoke time (" +
                Ms(r.profiled_ops_sum_ms) + " of " + Ms(r.unprofiled_invoke_ref_ms) + "), outside " +
                Fixed(kOpsCoverageTolerancePct, 0) + "%: the runs were disturbed (busy machine), or the model is too small to time per op");
  if (r.stopped_by_max_secs)
    w.push_back(name + ": --max-secs stopped the measured runs after " + std::to_string(r.latency.count) + " runs");
  return w;
}

std::string FormatBenchText(const BenchResult& r, const TextReportOptions& to) {
  std::string out;
  out += "model    " + Printable(r.model) + "\n";
  for (size_t i = 0; i < r.input_names.size(); ++i)
    out += "input    '" + Printable(r.input_names[i]) + "' <- " + Printable(r.input_sources[i]) + "\n";
  out += "threads  " + std::to_string(r.threads) + " (this process may use " + std::to_string(r.hardware_threads) +
         " hardware threads)\n";

  if (!r.sweep.empty()) {
    out += "\nThreads (--threads auto: each count measured with the same warm-up and runs)\n";
    TextTable t({"threads", "p50 ms", "mean ms", "min ms", "init ms", "speed-up vs 1", ""});
    for (size_t c = 0; c < 6; ++c) t.AlignRight(c);
    const double base = r.sweep[0].latency.p50;
    for (const auto& p : r.sweep)
      t.AddRow({std::to_string(p.threads), MsNum(p.latency.p50), MsNum(p.latency.mean), MsNum(p.latency.min),
                MsNum(p.init_ms), p.latency.p50 > 0 ? Ratio(base / p.latency.p50) : "-",
                p.threads == r.threads ? "<- fastest, used below" : ""});
    out += t.Render("  ");
  }

  out += "\nTimings\n";
  TextTable t;
  t.AlignRight(1);
  t.AddRow({"load", Ms(r.load_ms), "map and verify the .tflite file"});
  t.AddRow({"init", Ms(r.init_ms), "create the interpreter: choose kernels, pack weights, fold constants, plan memory"});
  t.AddRow({"first inference", Ms(r.first_ms), "the first invoke (cold caches)"});
  t.AddRow({"warm-up", std::to_string(r.warmup_runs) + " runs", Ms(r.warmup_ms) + " in total, not counted"});
  const LatencyStats& s = r.latency;
  t.AddRow({"steady state", std::to_string(s.count) + " runs",
            "mean " + MsNum(s.mean) + "  std " + MsNum(s.std) + "  min " + MsNum(s.min) + "  p50 " + MsNum(s.p50) +
                "  p90 " + MsNum(s.p90) + "  p99 " + MsNum(s.p99) + "  (ms, less " + Fixed(r.timer_overhead_ns, 0) +
                " ns of timer overhead)" + (r.stopped_by_max_secs ? "  stopped early by --max-secs" : "")});
  out += t.Render("  ");
  out += "latency (median): " + Ms(s.p50) + "\n";

  out += "\nMemory\n";
  const MemoryReport& m = r.memory;
  TextTable mt;
  mt.AlignRight(1);
  mt.AddRow({"arena", HumanBytes(m.arena_bytes), "intermediate tensors (sharing memory by lifetime) and kernel scratch"});
  mt.AddRow({"packed weights", HumanBytes(m.packed_weight_bytes), "weights re-laid out at init for the chosen kernels"});
  mt.AddRow({"persistent", HumanBytes(m.persistent_bytes), "variable tensors (e.g. LSTM state) and constants folded at init"});
  mt.AddRow({"mapped model", HumanBytes(m.mapped_model_bytes), "the .tflite file mapped into memory; weights are read in place"});
  mt.AddRow({"peak RSS", HumanBytes(m.peak_rss_bytes),
             m.peak_rss_reset ? "peak resident memory of this process while benchmarking this model"
                              : "peak resident memory of this process since it started"});
  out += mt.Render("  ");

  if (!r.profiled) return out;

  out += "\nPer-op profile (mean of " + std::to_string(r.profile_runs_averaged) + " of " + std::to_string(r.profile_runs) +
         " profiled runs: those around the median total time; profiler cost subtracted; in run order)\n";
  // With several threads, the threads each op ran on: thread tuning runs the small ops that
  // measured faster unsplit on the calling thread alone (InterpreterOptions::tune_op_threads).
  const bool thr = r.threads > 1;
  std::vector<std::string> head = {"#", "op", "kernel", "shapes (inputs -> outputs)", "ms", "%", "cum %", "MMACs", "GOP/s"};
  if (thr) head.push_back("thr");
  TextTable ot(head);
  for (size_t c : {0, 4, 5, 6, 7, 8, 9}) {
    if (c < head.size()) ot.AlignRight(c);
  }
  int shown = 0, hidden = 0;
  for (const auto& op : r.ops) {
    if (to.max_op_rows >= 0 && shown >= to.max_op_rows) {
      ++hidden;
      continue;
    }
    ++shown;
    std::vector<std::string> row;
    if (op.folded)
      row = {std::to_string(op.index), op.type, op.kernel, OpShapes(op), "folded at init", "", "", "", ""};
    else
      row = {std::to_string(op.index), op.type, op.kernel, OpShapes(op), MsNum(op.avg_ms), Fixed(op.percent, 1),
             Fixed(op.cumulative_percent, 1), op.macs ? Fixed(op.macs / 1e6, 2) : "-", op.macs ? Fixed(op.gops, 2) : "-"};
    if (thr) row.push_back(op.folded ? "" : std::to_string(op.threads));
    ot.AddRow(row);
  }
  out += ot.Render("  ");
  if (hidden) out += "  ... " + std::to_string(hidden) + " more ops\n";
  if (thr) {
    int alone = 0;
    for (const auto& op : r.ops) alone += !op.folded && op.threads == 1 ? 1 : 0;
    if (alone)
      out += "  thr: " + std::to_string(alone) + " small op" + (alone == 1 ? "" : "s") +
             " ran on one thread, where timing showed splitting them did not pay (EDGEOPT_OP_THREADS=all: split every op)\n";
  }

  out += "\nBy op type\n";
  TextTable bt({"op", "count", "ms", "%", "MMACs", "GOP/s", "kernels"});
  for (size_t c : {1, 2, 3, 4, 5}) bt.AlignRight(c);
  for (const auto& ts : SummarizeByType(r)) {
    std::string count = std::to_string(ts.count);
    if (ts.merged) count += " (" + std::to_string(ts.merged) + " fused)";
    if (ts.folded) count += " (+" + std::to_string(ts.folded) + " folded)";
    bt.AddRow({ts.type, count, ts.count ? MsNum(ts.ms) : "-", ts.count ? Fixed(ts.percent, 1) : "-",
               ts.macs ? Fixed(ts.macs / 1e6, 2) : "-", ts.macs ? Fixed(ts.gops, 2) : "-",
               ts.count ? Join(ts.kernels, ", ") : "folded at init"});
  }
  out += bt.Render("  ");

  std::vector<const OpProfile*> slow;
  for (const auto& op : r.ops)
    if (!op.folded) slow.push_back(&op);
  std::stable_sort(slow.begin(), slow.end(), [](const auto* a, const auto* b) { return a->avg_ms > b->avg_ms; });
  if (slow.size() > 10) slow.resize(10);
  out += "\nSlowest " + std::to_string(slow.size()) + " ops\n";
  TextTable st({"#", "op", "kernel", "shapes (inputs -> outputs)", "ms", "%"});
  for (size_t c : {0, 4, 5}) st.AlignRight(c);
  for (const auto* op : slow)
    st.AddRow({std::to_string(op->index), op->type, op->kernel, OpShapes(*op), MsNum(op->avg_ms), Fixed(op->percent, 1)});
  out += st.Render("  ");

  // Plain facts that explain time: reference kernels and conversions.
  int ref_ops = 0, run_ops = 0, folded = 0;
  double ref_ms = 0;
  for (const auto& op : r.ops) {
    if (op.folded) {
      ++folded;
      continue;
    }
    ++run_ops;
    if (IsReferenceKernel(op.kernel)) {
      ++ref_ops;
      ref_ms += op.avg_ms;
    }
  }
  out += "\nNotes\n";
  out += "  " + std::to_string(run_ops) + " ops run per inference" +
         (folded ? ", " + std::to_string(folded) + " folded at init (computed once, no time per inference)" : "") + "\n";
  if (ref_ops)
    out += "  " + std::to_string(ref_ops) + " of them (" + Pct(r.profiled_ops_sum_ms > 0 ? 100 * ref_ms / r.profiled_ops_sum_ms : 0) +
           " of op time) use portable reference kernels (kernel name ends in /ref)\n";
  const ConversionCost cc = ConversionCostOf(r);
  if (cc.ops || cc.folded)
    out += "  QUANTIZE/DEQUANTIZE/CAST: " + std::to_string(cc.ops) + " ops, " + Ms(cc.ms) + " = " + Pct(cc.percent) +
           " of op time" + (cc.folded ? " (+" + std::to_string(cc.folded) + " folded at init)" : "") + "\n";

  out += "\nProfile check\n";
  const double cov = r.ops_coverage_pct();
  const bool within = std::fabs(cov - 100.0) <= kOpsCoverageTolerancePct;
  char sign = r.profiler_overhead_pct >= 0 ? '+' : '-';
  out += "  profiler overhead: " + Fixed(r.profiler_cost_ns_per_op, 1) + " ns per op, subtracted; profiled invoke " + sign +
         Pct(std::fabs(r.profiler_overhead_pct)) + " (medians of " + std::to_string(r.profile_runs) +
         " interleaved runs each: " + Ms(r.profiled_invoke_p50_ms) + " vs " + Ms(r.unprofiled_invoke_p50_ms) +
         "; cost per " + r.profiler_clock + " clock read from the means around the median, " + Ms(r.profiled_invoke_ref_ms) +
         " vs " + Ms(r.unprofiled_invoke_ref_ms) + ", at most " + Fixed(r.profiler_clock_read_ns, 1) + " ns back to back)\n";
  out += "  raw per-op sum " + Ms(r.profiled_raw_ops_sum_ms) + " = the profiled invoke " + Ms(r.profiled_invoke_ms) +
         " (one clock read per op boundary)\n";
  out += "  per-op sum     " + Ms(r.profiled_ops_sum_ms) + " = " + Pct(cov) + " of the unprofiled invoke " +
         Ms(r.unprofiled_invoke_ref_ms) + " (mean around the median)" + (within ? " (within " : " (NOT within ") +
         Fixed(kOpsCoverageTolerancePct, 0) + "%)\n";
  out += "  outside ops    " + Fixed(r.outside_ops_ms * 1e6, 1) +
         " ns per invoke (interpreter: the call, entry and exit that no op holds, and measuring noise)\n";
  return out;
}

std::string FormatComparison(const std::vector<BenchResult>& results) {
  if (results.size() < 2) return "";
  const BenchResult& a = results[0];
  std::string out = "Comparison (ratios are relative to A)\n";
  {
    std::vector<std::string> header = {""};
    for (size_t k = 0; k < results.size(); ++k) header.push_back(ModelLetter(k));
    TextTable t(header);
    for (size_t k = 1; k <= results.size(); ++k) t.AlignRight(k);
    std::vector<std::string> names = {"model"};
    for (const auto& r : results) names.push_back(Basename(r.model));
    t.AddRow(names);
    auto add_ms = [&](const std::string& label, double (*get)(const BenchResult&)) {
      std::vector<std::string> cells = {label};
      const double base = get(a);
      for (size_t k = 0; k < results.size(); ++k) {
        const double v = get(results[k]);
        std::string cell = Ms(v);
        if (k > 0 && base > 0) cell += " (" + Ratio(v / base) + ")";
        cells.push_back(cell);
      }
      t.AddRow(cells);
    };
    auto add_bytes = [&](const std::string& label, size_t (*get)(const BenchResult&)) {
      std::vector<std::string> cells = {label};
      for (const auto& r : results) cells.push_back(HumanBytes(get(r)));
      t.AddRow(cells);
    };
    add_ms("latency (median)", [](const BenchResult& r) { return r.latency.p50; });
    if (a.interleaved_rounds > 0) {
      // The models in turn, a block of invokes each per round: the ratio is the median of the rounds'.
      std::vector<std::string> cells = {"interleaved (median)"};
      for (size_t k = 0; k < results.size(); ++k) {
        const BenchResult& r = results[k];
        std::string cell = Ms(r.interleaved_p50_ms);
        if (k > 0) cell += " (" + Ratio(r.interleaved_ratio) + ")";
        cells.push_back(cell);
      }
      t.AddRow(cells);
    }
    add_ms("mean", [](const BenchResult& r) { return r.latency.mean; });
    add_ms("min", [](const BenchResult& r) { return r.latency.min; });
    add_ms("first inference", [](const BenchResult& r) { return r.first_ms; });
    add_ms("init", [](const BenchResult& r) { return r.init_ms; });
    add_bytes("model file", [](const BenchResult& r) { return r.memory.mapped_model_bytes; });
    add_bytes("arena", [](const BenchResult& r) { return r.memory.arena_bytes; });
    add_bytes("packed weights", [](const BenchResult& r) { return r.memory.packed_weight_bytes; });
    add_bytes("peak RSS", [](const BenchResult& r) { return r.memory.peak_rss_bytes; });
    std::vector<std::string> threads = {"threads"};
    for (const auto& r : results) threads.push_back(std::to_string(r.threads));
    t.AddRow(threads);
    out += t.Render("  ");
  }

  bool all_profiled = true;
  for (const auto& r : results) all_profiled = all_profiled && r.profiled;
  if (!all_profiled) return out;

  // Time per op type, in the order of A's op types by time, then types only in later models.
  std::vector<std::vector<OpTypeSummary>> by(results.size());
  for (size_t k = 0; k < results.size(); ++k) by[k] = SummarizeByType(results[k]);
  std::vector<std::string> types;
  for (const auto& v : by)
    for (const auto& s : v)
      if (std::find(types.begin(), types.end(), s.type) == types.end()) types.push_back(s.type);
  auto find = [&](size_t k, const std::string& type) -> const OpTypeSummary* {
    for (const auto& s : by[k])
      if (s.type == type) return &s;
    return nullptr;
  };
  out += "\nTime per op type (ms per inference, from the profiled runs; ratio = model / A)\n";
  std::vector<std::string> header = {"op"};
  for (size_t k = 0; k < results.size(); ++k) {
    header.push_back(ModelLetter(k) + " ms");
    if (k > 0) header.push_back(ModelLetter(k) + "/A");
  }
  header.push_back("");
  TextTable t(header);
  for (size_t c = 1; c + 1 < header.size(); ++c) t.AlignRight(c);
  struct Slower {
    size_t model;
    std::string type;
    double ratio;
    std::string kernels_a, kernels_m;
    std::string merged;  // which side runs some of these ops inside other ops' kernels
  };
  // "A runs 4 of its 17 inside other ops' kernels" notes: the per-type times then compare unlike
  // work (a fused run's time is booked on its first op, of another type).
  const auto merged_note = [&](size_t k, const OpTypeSummary* s) {
    if (!s || (s->merged == 0 && s->hosts == 0)) return std::string();
    std::string note = ModelLetter(k) + " runs ";
    if (s->merged)
      note += std::to_string(s->merged) + " of its " + std::to_string(s->count) +
              " inside other ops' fused kernels (their time is counted there)";
    if (s->merged && s->hosts) note += " and ";
    if (s->hosts) note += std::to_string(s->hosts) + " as the first op of a fused run (their time includes the run's other ops)";
    return note;
  };
  std::vector<Slower> slower;
  for (const auto& type : types) {
    std::vector<std::string> row = {type};
    std::string note;
    const OpTypeSummary* sa = find(0, type);
    for (size_t k = 0; k < results.size(); ++k) {
      const OpTypeSummary* s = find(k, type);
      const bool runs = s && s->count > 0;
      row.push_back(runs ? MsNum(s->ms) : (s ? "folded" : "-"));
      if (k == 0) continue;
      const bool a_runs = sa && sa->count > 0;
      if (runs && a_runs && sa->ms > 0) {
        const double ratio = s->ms / sa->ms;
        row.push_back(Ratio(ratio));
        // Slower by more than noise: 10% and 0.01 ms.
        if (ratio > 1.10 && s->ms - sa->ms > 0.01) {
          const bool unlike = sa->merged > 0 || s->merged > 0 || sa->hosts > 0 || s->hosts > 0;
          note += (note.empty() ? "" : "; ") + std::string("slower in ") + ModelLetter(k) + (unlike ? " (fused ops: see below)" : "");
          std::string merged = merged_note(0, sa);
          const std::string mk = merged_note(k, s);
          if (!mk.empty()) merged += (merged.empty() ? "" : "; ") + mk;
          slower.push_back({k, type, ratio, Join(sa->kernels, ", "), Join(s->kernels, ", "), merged});
        }
      } else if (runs && !a_runs) {
        row.push_back("new");
        note += (note.empty() ? "" : "; ") + std::string("only in ") + ModelLetter(k);
      } else if (!runs && a_runs) {
        row.push_back("gone");
      } else {
        row.push_back("-");
      }
    }
    if (IsConversionOp(type)) note += (note.empty() ? "" : "; ") + std::string("conversion");
    // A type that heads fused runs carries their other ops' time (e.g. a QUANTIZE fused with the
    // convolution it feeds).
    std::string hosts;
    for (size_t k = 0; k < results.size(); ++k)
      if (const OpTypeSummary* s = find(k, type); s && s->hosts > 0) hosts += ModelLetter(k);
    if (!hosts.empty())
      note += (note.empty() ? "" : "; ") + std::string("includes ops fused into it (") + hosts + ")";
    row.push_back(note);
    t.AddRow(row);
  }
  std::vector<std::string> total = {"all ops"};
  for (size_t k = 0; k < results.size(); ++k) {
    total.push_back(MsNum(results[k].profiled_ops_sum_ms));
    if (k > 0) total.push_back(a.profiled_ops_sum_ms > 0 ? Ratio(results[k].profiled_ops_sum_ms / a.profiled_ops_sum_ms) : "-");
  }
  total.push_back("");
  t.AddRow(total);
  out += t.Render("  ");

  out += "\nConversions between number formats (QUANTIZE / DEQUANTIZE / CAST)\n";
  for (size_t k = 0; k < results.size(); ++k) {
    const BenchResult& r = results[k];
    const ConversionCost c = ConversionCostOf(r);
    out += "  " + ModelLetter(k) + "  ";
    if (c.ops == 0 && c.folded == 0 && c.fused == 0) {
      out += "none\n";
      continue;
    }
    out += std::to_string(c.ops) + " per inference, " + Ms(c.ms) + " = " + Pct(c.percent) + " of " + ModelLetter(k) +
           "'s op time" + (c.folded ? "; " + std::to_string(c.folded) + " folded at init (no cost per inference)" : "") +
           (c.fused ? "; " + std::to_string(c.fused) + " fused into the op they feed (no conversion pass)" : "") + "\n";
    TextTable ct;
    for (size_t col : {3, 4}) ct.AlignRight(col);
    for (const auto& op : r.ops) {
      if (!IsConversionOp(op.type)) continue;
      if (IsFusedKernel(op.kernel)) {
        ct.AddRow({"#" + std::to_string(op.index), op.type, TypedShapes(op), "fused", "", "(" + op.kernel + ")"});
        continue;
      }
      ct.AddRow({"#" + std::to_string(op.index), op.type, TypedShapes(op), op.folded ? "folded at init" : Ms(op.avg_ms),
                 op.folded ? "" : Pct(op.percent)});
    }
    out += ct.Render("       ");
  }

  out += "\nIn plain words\n";
  for (size_t k = 1; k < results.size(); ++k) {
    const BenchResult& r = results[k];
    const std::string m = ModelLetter(k);
    const auto faster_slower = [](double ratio) {
      return ratio >= 1 ? Ratio(ratio) + " slower" : Ratio(1 / ratio) + " faster";
    };
    if (a.latency.p50 > 0 && r.latency.p50 > 0)
      out += "  " + m + " takes " + Ms(r.latency.p50) + " vs A's " + Ms(a.latency.p50) + ": " +
             faster_slower(r.latency.p50 / a.latency.p50) + " (medians).\n";
    if (r.interleaved_rounds > 0 && r.interleaved_ratio > 0)
      out += "  Timed in turn with A (" + std::to_string(r.interleaved_rounds) + " rounds of a block of invokes each): " + m +
             " is " + faster_slower(r.interleaved_ratio) + " (median of the rounds' ratios; middle half " +
             Ratio(r.interleaved_ratio_q1) + "-" + Ratio(r.interleaved_ratio_q3) +
             " of A's time): the figure that holds when the machine is busy.\n";
    const ConversionCost c = ConversionCostOf(r);
    if (c.ops > 0)
      out += "  " + m + " spends " + Pct(c.percent) + " of its op time (" + Ms(c.ms) + ") converting between number formats in " +
             std::to_string(c.ops) + " QUANTIZE/DEQUANTIZE/CAST op" + (c.ops > 1 ? "s" : "") +
             (c.fused ? "; " + std::to_string(c.fused) + " more run" + (c.fused > 1 ? "" : "s") +
                            " inside the kernel of the op it feeds (no pass of its own)"
                      : "") +
             ".\n";
    else if (c.fused > 0)
      out += "  " + m + "'s " + std::to_string(c.fused) + " QUANTIZE/DEQUANTIZE/CAST op" + (c.fused > 1 ? "s run" : " runs") +
             " inside the kernel of the op it feeds: no conversion pass.\n";
    for (const auto& s : slower) {
      if (s.model != k) continue;
      std::string line = "  " + s.type + " takes " + Ratio(s.ratio) + " as long in " + m + " as in A";
      if (s.kernels_a != s.kernels_m) line += ": " + m + " runs " + s.kernels_m + ", A runs " + s.kernels_a;
      bool ref = s.kernels_m.find("/ref") != std::string::npos && s.kernels_a.find("/ref") == std::string::npos;
      if (ref) line += " (a portable reference kernel against an optimized one)";
      if (!s.merged.empty()) line += "; but " + s.merged + ", so compare the whole models";
      out += line + ".\n";
    }
  }
  return out;
}

nlohmann::ordered_json BenchJson(const std::vector<BenchResult>& results) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (size_t k = 0; k < results.size(); ++k) {
    const BenchResult& r = results[k];
    nlohmann::ordered_json j;
    j["model"] = r.model;
    j["threads"] = r.threads;
    j["hardware_threads"] = r.hardware_threads;
    j["load_ms"] = r.load_ms;
    j["init_ms"] = r.init_ms;
    j["first_ms"] = r.first_ms;
    j["warmup_runs"] = r.warmup_runs;
    j["latency_ms"] = StatsJson(r.latency);
    if (r.interleaved_rounds > 0)
      j["interleaved"] = {{"rounds", r.interleaved_rounds},
                          {"p50_ms", r.interleaved_p50_ms},
                          {"ratio_to_first", {{"p50", r.interleaved_ratio}, {"q1", r.interleaved_ratio_q1}, {"q3", r.interleaved_ratio_q3}}}};
    j["timer_overhead_ns"] = r.timer_overhead_ns;
    j["stopped_by_max_secs"] = r.stopped_by_max_secs;
    j["memory"] = {{"arena_bytes", r.memory.arena_bytes},
                   {"packed_weight_bytes", r.memory.packed_weight_bytes},
                   {"persistent_bytes", r.memory.persistent_bytes},
                   {"mapped_model_bytes", r.memory.mapped_model_bytes},
                   {"peak_rss_bytes", r.memory.peak_rss_bytes},
                   {"peak_rss_since_model_load", r.memory.peak_rss_reset}};
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    for (size_t i = 0; i < r.input_names.size(); ++i)
      inputs.push_back({{"name", r.input_names[i]}, {"source", r.input_sources[i]}});
    j["inputs"] = inputs;
    if (!r.sweep.empty()) {
      nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
      for (const auto& p : r.sweep) sweep.push_back({{"threads", p.threads}, {"init_ms", p.init_ms}, {"latency_ms", StatsJson(p.latency)}});
      j["thread_sweep"] = sweep;
    }
    if (r.profiled) {
      j["profile"] = {{"runs", r.profile_runs},
                      {"invoke_ms", r.profiled_invoke_ms},
                      {"unprofiled_invoke_ms", r.unprofiled_invoke_ms},
                      {"profiled_invoke_p50_ms", r.profiled_invoke_p50_ms},
                      {"unprofiled_invoke_p50_ms", r.unprofiled_invoke_p50_ms},
                      {"profiled_invoke_ref_ms", r.profiled_invoke_ref_ms},
                      {"unprofiled_invoke_ref_ms", r.unprofiled_invoke_ref_ms},
                      {"outside_ops_ns", r.outside_ops_ms * 1e6},
                      {"runs_averaged", r.profile_runs_averaged},
                      {"raw_ops_sum_ms", r.profiled_raw_ops_sum_ms},
                      {"ops_sum_ms", r.profiled_ops_sum_ms},
                      {"ops_sum_percent_of_invoke", r.ops_coverage_pct()},
                      {"profiler_clock", r.profiler_clock},
                      {"overhead_ns_per_op", r.profiler_cost_ns_per_op},
                      {"clock_read_ns", r.profiler_clock_read_ns},
                      {"overhead_percent", r.profiler_overhead_pct}};
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (const auto& op : r.ops) {
        ops.push_back({{"index", op.index},
                       {"type", op.type},
                       {"kernel", op.kernel},
                       {"backend", op.backend},
                       {"folded", op.folded},
                       {"ms", op.avg_ms},
                       {"percent", op.percent},
                       {"cumulative_percent", op.cumulative_percent},
                       {"macs", op.macs},
                       {"gops", op.gops},
                       {"threads", op.threads},
                       {"inputs", TensorsJson(op.inputs)},
                       {"outputs", TensorsJson(op.outputs)}});
      }
      j["ops"] = ops;
      nlohmann::ordered_json types = nlohmann::ordered_json::array();
      for (const auto& s : SummarizeByType(r))
        types.push_back({{"type", s.type}, {"count", s.count}, {"folded", s.folded}, {"ms", s.ms}, {"percent", s.percent},
                         {"macs", s.macs}, {"kernels", std::vector<std::string>(s.kernels.begin(), s.kernels.end())}});
      j["op_types"] = types;
      const ConversionCost c = ConversionCostOf(r);
      j["conversions"] = {{"ops", c.ops}, {"folded", c.folded}, {"ms", c.ms}, {"percent", c.percent}};
      if (k > 0 && results[0].profiled && results[0].latency.p50 > 0)
        j["vs_first_model"] = {{"latency_p50_ratio", r.latency.p50 / results[0].latency.p50}};
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

std::string BenchCsv(const std::vector<BenchResult>& results) {
  bool profiled = !results.empty();
  for (const auto& r : results) profiled = profiled && r.profiled;
  std::string out;
  if (profiled) {
    out = "model,index,op,kernel,folded,inputs,outputs,ms,percent,cumulative_percent,macs,gops,threads\n";
    for (const auto& r : results)
      for (const auto& op : r.ops)
        out += CsvField(r.model) + "," + std::to_string(op.index) + "," + CsvField(op.type) + "," + CsvField(op.kernel) + "," +
               (op.folded ? "1" : "0") + "," + CsvField(ShapeList(op.inputs, true, false)) + "," +
               CsvField(ShapeList(op.outputs, true, false)) + "," + Num(op.avg_ms) + "," + Num(op.percent) + "," +
               Num(op.cumulative_percent) + "," + std::to_string(op.macs) + "," + Num(op.gops) + "," +
               std::to_string(op.threads) + "\n";
    return out;
  }
  out = "model,threads,load_ms,init_ms,first_ms,mean_ms,std_ms,min_ms,p50_ms,p90_ms,p99_ms,count,arena_bytes,"
        "packed_weight_bytes,persistent_bytes,mapped_model_bytes,peak_rss_bytes\n";
  for (const auto& r : results) {
    const auto& s = r.latency;
    const auto& m = r.memory;
    out += CsvField(r.model) + "," + std::to_string(r.threads) + "," + Num(r.load_ms) + "," + Num(r.init_ms) + "," +
           Num(r.first_ms) + "," + Num(s.mean) + "," + Num(s.std) + "," + Num(s.min) + "," + Num(s.p50) + "," + Num(s.p90) +
           "," + Num(s.p99) + "," + std::to_string(s.count) + "," + std::to_string(m.arena_bytes) + "," +
           std::to_string(m.packed_weight_bytes) + "," + std::to_string(m.persistent_bytes) + "," +
           std::to_string(m.mapped_model_bytes) + "," + std::to_string(m.peak_rss_bytes) + "\n";
  }
  return out;
}

std::string TraceJson(const std::vector<BenchResult>& results) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (size_t m = 0; m < results.size(); ++m) {
    const BenchResult& r = results[m];
    const int pid = static_cast<int>(m + 1);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                      {"args", {{"name", ModelLetter(m) + ": " + Basename(r.model) + " (" + Threads(r.threads) + ")"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
    int max_tid = 0;
    for (const auto& e : r.trace) max_tid = std::max(max_tid, e.tid);
    for (int t = 0; t <= max_tid; ++t)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid},
                        {"tid", t},
                        {"args", {{"name", t == 0 ? std::string("invoking thread (ops)") : "pool worker " + std::to_string(t)}}}});
    std::map<int, const OpProfile*> op_by_index;
    for (const auto& op : r.ops) op_by_index[op.index] = &op;
    for (const auto& e : r.trace) {
      nlohmann::ordered_json args = {{"run", e.run}};
      std::string name = e.name;
      if (e.op_index >= 0) {
        args["op_index"] = e.op_index;
        name += " #" + std::to_string(e.op_index);
        auto it = op_by_index.find(e.op_index);
        if (it != op_by_index.end()) {
          args["kernel"] = it->second->kernel;
          args["shapes"] = OpShapes(*it->second);
          if (it->second->macs) args["macs"] = it->second->macs;
        }
      } else if (e.category == "invoke") {
        name += " (run " + std::to_string(e.run) + ")";
      }
      events.push_back({{"name", name},
                        {"cat", e.category},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", e.tid},
                        {"ts", e.ts_us},
                        {"dur", e.dur_us},
                        {"args", args}});
    }
  }
  nlohmann::ordered_json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace edgeopt::eval
