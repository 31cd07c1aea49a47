// edgeopt bench MODEL [MODEL2 ...] [--threads N|auto] [--warmup W] [--runs R] [--max-secs S]
//                     [--profile] [--trace FILE.json] [--json FILE] [--csv FILE] [--input ...]
// Thin wrapper over eval/benchmark.h (measuring) and eval/bench_report.h (reports).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "eval/bench_report.h"
#include "eval/benchmark.h"
#include "eval/inputs.h"
#include "format/reader.h"
#include "format/writer.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "bench";

struct BenchFlags {
  std::vector<std::string> models;
  std::string threads = "1";
  int warmup = 3;
  int runs = 50;
  double max_secs = 0;
  bool profile = false;
  bool reference_kernels = false;
  std::string trace, json, csv;
  std::vector<std::string> inputs;
  std::string mean, stddev, range;
  uint64_t seed = 1;
};

// Progress on stderr once a model has been running for 2 s: on a terminal one line rewritten in
// place; otherwise a new line at most once per tenth of a phase and 3 s apart (a handful of lines
// even for a long benchmark).
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressPrinter() { Finish(); }

  void Update(const eval::BenchProgress& p) {
    if (p.elapsed_s < 2.0) return;
    const double now = p.elapsed_s;
    const int decile = p.total > 0 ? p.done * 10 / p.total : 0;
    const bool new_phase = p.phase != phase_ || p.model != model_;
    if (tty_) {
      if (now - last_ < 0.2 && !new_phase && p.done != p.total) return;
    } else {
      if (!new_phase && (decile == decile_ || now - last_ < 3.0)) return;
    }
    phase_ = p.phase;
    model_ = p.model;
    decile_ = decile;
    last_ = now;
    char buf[64];
    std::snprintf(buf, sizeof(buf), " (%.0f s)", p.elapsed_s);
    const std::string line = "edgeopt bench: " + Basename(p.model) + ": " + p.phase + " " + std::to_string(p.done) + "/" +
                             std::to_string(p.total) + buf;
    if (tty_) {
      std::cerr << "\r" << line << "\033[K" << std::flush;
      dirty_ = true;
    } else {
      std::cerr << line << std::endl;
    }
  }
  // Clears the in-place line before other output.
  void Finish() {
    if (dirty_) std::cerr << "\r\033[K" << std::flush;
    dirty_ = false;
    phase_.clear();
    model_.clear();
    last_ = -1e9;
  }

 private:
  static std::string Basename(const std::string& p) {
    const size_t s = p.find_last_of('/');
    return s == std::string::npos ? p : p.substr(s + 1);
  }
  bool tty_;
  bool dirty_ = false;
  std::string phase_, model_;
  int decile_ = -1;
  double last_ = -1e9;
};

// An output file's folder must exist before minutes of measuring.
bool CheckOutputPath(const std::string& flag, const std::string& path, std::string* error) {
  if (path.empty() || path == "-") return true;
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    *error = flag + " '" + path + "': folder '" + parent.string() + "' does not exist";
    return false;
  }
  if (std::filesystem::is_directory(path, ec)) {
    *error = flag + " '" + path + "' is a directory";
    return false;
  }
  return true;
}

int RunBench(const BenchFlags& f) {
  eval::BenchOptions o;
  if (f.threads == "auto") {
    o.auto_threads = true;
  } else {
    int n = 0;
    if (!ParseCountOrAll(f.threads, &n) || f.threads == "all" || f.threads == "none")
      return UsageError(kCmd, "--threads expects a number of threads or 'auto', got '" + f.threads + "'");
    o.threads = n;
  }
  o.warmup = f.warmup;
  o.runs = f.runs;
  o.max_secs = f.max_secs;
  o.trace = !f.trace.empty();
  o.profile = f.profile || o.trace || f.models.size() > 1;
  o.reference_kernels_only = f.reference_kernels;
  o.input_flags = f.inputs;
  o.seed = f.seed;
  if (Status st = eval::ValidateBenchOptions(o); !st.ok()) return UsageError(kCmd, st.message());
  auto norm = eval::NormalizationFromFlags(f.mean, f.stddev, f.range);
  if (!norm.ok()) return UsageError(kCmd, norm.status().message());
  o.norm = *norm;
  std::string error;
  if (!CheckOutputPath("--trace", f.trace, &error) || !CheckOutputPath("--json", f.json, &error) ||
      !CheckOutputPath("--csv", f.csv, &error))
    return UsageError(kCmd, error);
  if (f.trace == "-") return UsageError(kCmd, "--trace needs a file name");
  if (f.json == "-" && f.csv == "-") return UsageError(kCmd, "only one of --json and --csv can go to stdout ('-')");

  // Check every model and its --input names before measuring anything.
  for (const auto& path : f.models) {
    auto graph = ReadModelFile(path);
    if (!graph.ok()) return Fail(kCmd, graph.status());
    auto files = eval::MatchInputFlags(f.inputs, eval::InputSpecsOf(*graph));
    if (!files.ok()) return UsageError(kCmd, "'" + path + "': " + files.status().message());
  }
  if (f.models.size() > 1 && !f.profile && !o.trace)
    Note(kCmd, "comparing " + std::to_string(f.models.size()) + " models: per-op profiling is on to compare time per op type");

  ProgressPrinter progress;
  o.progress = [&progress](const eval::BenchProgress& p) { progress.Update(p); };
  std::vector<eval::BenchResult> results;
  std::set<std::string> said;
  for (const auto& path : f.models) {
    auto r = eval::RunBenchmark(path, o);
    progress.Finish();
    if (!r.ok()) return Fail(kCmd, r.status());
    for (const auto& n : r->notes)
      if (said.insert(n).second) Note(kCmd, n);
    for (const auto& name : r->randomized_inputs) {
      const std::string n = "no --input for '" + name + "' of " + path + ": seeded random values";
      if (said.insert(n).second) Note(kCmd, n);
    }
    for (const auto& w : eval::BenchWarnings(*r)) Warn(kCmd, w);
    results.push_back(std::move(*r));
  }
  if (results.size() > 1) {
    // The models once more in turn, a block of invokes each per round, each at the thread count
    // it was measured with: the ratios that hold on a busy machine.
    std::vector<int> threads;
    for (const auto& r : results) threads.push_back(r.threads);
    auto il = eval::RunInterleaved(f.models, threads, o);
    progress.Finish();
    if (!il.ok()) return Fail(kCmd, il.status());
    for (size_t k = 0; k < results.size(); ++k) {
      results[k].interleaved_rounds = il->rounds;
      results[k].interleaved_p50_ms = il->p50_ms[k];
      results[k].interleaved_ratio = il->ratio_p50[k];
      results[k].interleaved_ratio_q1 = il->ratio_q1[k];
      results[k].interleaved_ratio_q3 = il->ratio_q3[k];
    }
  }

  // Files first (all or nothing is not possible across files, but nothing is written on a
  // measuring error, and each file is written atomically).
  auto write = [&](const std::string& flag, const std::string& path, const std::string& text) -> bool {
    Status st = WriteFileAtomically(path, text.data(), text.size());
    if (!st.ok()) {
      Fail(kCmd, st.WithContext(flag));
      return false;
    }
    return true;
  };
  const std::string json_text = eval::BenchJson(results).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  const std::string csv_text = eval::BenchCsv(results);
  if (!f.trace.empty() && !write("--trace", f.trace, eval::TraceJson(results))) return kExitError;
  if (!f.json.empty() && f.json != "-" && !write("--json", f.json, json_text)) return kExitError;
  if (!f.csv.empty() && f.csv != "-" && !write("--csv", f.csv, csv_text)) return kExitError;

  if (f.json == "-") {
    std::cout << json_text << std::flush;
    return kExitOk;
  }
  if (f.csv == "-") {
    std::cout << csv_text << std::flush;
    return kExitOk;
  }
  for (size_t k = 0; k < results.size(); ++k) {
    if (results.size() > 1) std::cout << (k ? "\n" : "") << "== " << eval::ModelLetter(k) << "\n";
    std::cout << eval::FormatBenchText(results[k]);
  }
  if (results.size() > 1) std::cout << "\n" << eval::FormatComparison(results);
  for (const auto& [flag, path] : {std::pair{"trace", &f.trace}, std::pair{"json", &f.json}, std::pair{"csv", &f.csv}})
    if (!path->empty()) std::cout << "\nwrote " << flag << " " << *path;
  if (!f.trace.empty() || !f.json.empty() || !f.csv.empty()) std::cout << "\n";
  if (!f.trace.empty()) std::cout << "open the trace in https://ui.perfetto.dev or chrome://tracing\n";
  std::cout << std::flush;
  return kExitOk;
}

}  // namespace

void RegisterBench(CommandSet& commands) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* sub = commands.Add("bench", "Measure latency, memory and per-op time of one or more models (compare float vs int8)",
                               [f] { return RunBench(*f); });
  sub->add_option("models", f->models, "The .tflite file(s) to measure; two or more are compared side by side")
      ->required()
      ->type_name("MODEL...");
  sub->add_option("--threads", f->threads, "Interpreter threads, or 'auto' to measure 1..N and keep the fastest (default 1)")
      ->type_name("N|auto");
  sub->add_option("--warmup", f->warmup, "Untimed runs before measuring (default 3)")->type_name("W");
  sub->add_option("--runs", f->runs, "Timed runs (default 50)")->type_name("R");
  sub->add_option("--max-secs", f->max_secs, "Stop warm-up and timed runs after S seconds each (default 0: no limit)")
      ->type_name("S");
  sub->add_flag("--profile", f->profile, "Per-op table, time by op type, slowest ops (interleaved profiled runs)");
  sub->add_option("--trace", f->trace, "Write a Chrome trace (Perfetto, chrome://tracing) of the profiled runs; implies --profile")
      ->type_name("FILE.json");
  sub->add_option("--json", f->json, "Write the results as JSON ('-': print JSON instead of text)")->type_name("FILE");
  sub->add_option("--csv", f->csv, "Write the per-op table (or, without --profile, the summary) as CSV ('-': stdout)")
      ->type_name("FILE");
  sub->add_option("--input,-i", f->inputs, "NAME=FILE or FILE: input values (.npy, image, .wav, raw); default: seeded random")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  sub->add_option("--mean", f->mean, "Image inputs: (pixel - M) / S (one value or one per channel)")->type_name("M");
  sub->add_option("--std", f->stddev, "Image inputs: the S of --mean")->type_name("S");
  sub->add_option("--range", f->range, "Image inputs: pixels mapped onto [LO,HI]")->type_name("LO,HI");
  sub->add_option("--seed", f->seed, "Seed for random input values (default 1)")->type_name("N");
  sub->add_flag("--reference-kernels", f->reference_kernels, "Use only the portable reference kernels (to see what optimized ones buy)");
  sub->footer(R"HELP(What the numbers mean:
  load             map and verify the .tflite file
  init             create the interpreter: choose kernels, pack weights, fold constants, plan memory
  first inference  the first invoke (cold caches)
  steady state     the timed runs after warm-up: mean, std, min, p50 (median), p90, p99
  latency (median) the number to quote: p50 of the steady-state runs
  memory           arena (intermediate tensors), packed weights, persistent (variables, folded
                   constants), mapped model file, peak RSS of the process
With --profile, every timed run is followed by a profiled run. The profiler reads a cheap clock
(the CPU time-stamp counter, each read waiting for the work before it) once per op boundary, so
raw per-op times add up exactly to the profiled invoke; its own cost per op (profiled minus
unprofiled invoke per clock read, at most the cost of back-to-back reads) is stated and
subtracted from every op. Per-op times and both invoke times are means over the runs around
the median (the middle fifth by total time, widened to the runs within three clock steps of the
median: a clock that steps by ~10 ns is resolved by the mean). The per-op sum is checked against
the unprofiled invoke (within 5%); what is left is shown as "outside ops" (the interpreter's own
entry and exit), and the extra time of profiled invokes is stated.
With 2 or more threads, the interpreter times each small op (under 50 us) split across the
threads and on one thread, in its first invokes and in one pair of invokes in every 32, and runs
on one thread those that were clearly faster there (outputs are the same); an invoke under
30 ms is also timed with every op on one thread (less often while that is far slower), and runs
so while that is clearly faster. The
per-op table's "thr" column shows each op's threads. EDGEOPT_OP_THREADS=all splits every op.
Kernels named "fused/..." run several ops as one (MobileNet blocks, an activation after its
producer, SiLU = LOGISTIC + MUL), the others shown as "fused into #N"; float 3x3 stride-1
convolutions named ".../winograd2x2" use Winograd's F(2x2,3x3). To compare, run the same command
with EDGEOPT_FUSE=0 (no fusion) or EDGEOPT_WINOGRAD=0 (direct convolutions).
With two or more models: side-by-side totals, time per op type with ratios to the first model
(op types that got slower are flagged), and every QUANTIZE/DEQUANTIZE/CAST with its cost. The
models are then timed once more in turn (rounds of a block of runs of each, about --runs runs
each): "interleaved (median)" and its ratio, the median of the rounds' ratios, hold on a busy
machine, where medians measured a while apart can differ by tens of percent.

Examples:
  edgeopt bench model.tflite
  edgeopt bench model.tflite --profile --threads auto
  edgeopt bench float.tflite int8.tflite                 why is the int8 model slower?
  edgeopt bench model.tflite --trace trace.json          open in https://ui.perfetto.dev
  edgeopt bench model.tflite --runs 20 --json results.json --csv ops.csv --profile)HELP");
}

}  // namespace edgeopt::cli
