// edgeopt optimize IN -o OUT --calibration ... --eval ... --max-drop POINTS [--objective size|latency]
// Tries optimization recipes (optimize/auto/auto_optimize.h), keeps the smallest or fastest model
// within the accuracy budget, prints the table of candidates and writes an HTML report.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "dataset_flags.h"
#include "eval/accuracy.h"
#include "eval/compare.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/auto/auto_optimize.h"
#include "optimize/quantize/quantize.h"

namespace edgeopt::cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kCmd = "optimize";

struct OptimizeFlags {
  std::string input;
  std::string output;
  std::vector<std::string> calibration;
  std::vector<std::string> evaluation;
  std::string labels;
  std::string label_csv;
  int label_offset = 0;
  double max_drop = 1.0;
  std::string objective = "size";
  std::string size_metric = "raw";
  std::string modes = "float16,dynamic,int8,int16x8";
  std::string prune;
  std::string cluster;
  bool no_fallback = false;
  bool agreement = false;
  int calibration_samples = 100;
  int eval_samples = 0;
  int threads = 0;
  int output_index = 0;
  double bench_seconds = 0.3;
  std::string report;
  std::string skip_tensor;
  std::string json;
  uint64_t seed = 1;
  PreprocessFlags pre;
};

// The command line, rebuilt from the options (for the report).
std::string CommandLine(const OptimizeFlags& f) {
  std::string s = "edgeopt optimize " + f.input + " -o " + f.output;
  for (const auto& c : f.calibration) s += " --calibration " + c;
  for (const auto& e : f.evaluation) s += " --eval " + e;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", f.max_drop);
  s += std::string(" --max-drop ") + buf + " --objective " + f.objective;
  if (f.size_metric != "raw") s += " --size-metric " + f.size_metric;
  if (!f.pre.range.empty()) s += " --range " + f.pre.range;
  if (!f.pre.mean.empty()) s += " --mean " + f.pre.mean;
  if (!f.pre.stddev.empty()) s += " --std " + f.pre.stddev;
  if (f.pre.resize != "stretch") s += " --resize " + f.pre.resize;
  if (!f.prune.empty()) s += " --prune " + f.prune;
  if (!f.cluster.empty()) s += " --cluster " + f.cluster;
  if (f.eval_samples > 0) s += " --eval-samples " + std::to_string(f.eval_samples);
  if (f.agreement) s += " --agreement";
  if (!f.skip_tensor.empty()) s += " --skip-tensor " + eval::ShellQuote(f.skip_tensor);
  return s;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string Fmt(double v, const char* f) {
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string CanonicalOr(const std::string& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(p, ec);
  return ec ? p : c.string();
}

bool SameSources(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (CanonicalOr(a[i]) != CanonicalOr(b[i])) return false;
  return true;
}

std::string DefaultReportPath(const std::string& out) {
  fs::path p(out);
  if (p.extension() == ".tflite") p.replace_extension(".html");
  else p += ".html";
  return p.string();
}

int RunOptimize(const OptimizeFlags& f) {
  optimize::AutoOptimizeOptions o;
  if (!optimize::ParseObjective(f.objective, &o.objective))
    return UsageError(kCmd, "--objective expects size or latency, got '" + f.objective + "'");
  if (!optimize::ParseSizeMetric(f.size_metric, &o.size_metric))
    return UsageError(kCmd, "--size-metric expects raw, gzip or zstd, got '" + f.size_metric + "'");
  if (!(f.max_drop >= 0)) return UsageError(kCmd, "--max-drop must be a number of points >= 0");
  if (f.calibration.empty()) return UsageError(kCmd, "--calibration is required (samples to calibrate int8 with)");
  if (f.evaluation.empty()) return UsageError(kCmd, "--eval is required (held-out samples to measure accuracy on)");
  if (f.calibration_samples < 1) return UsageError(kCmd, "--calibration-samples must be at least 1");
  if (!f.skip_tensor.empty()) {
    try {
      std::regex check(f.skip_tensor);
    } catch (const std::regex_error& e) {
      return UsageError(kCmd, "--skip-tensor '" + f.skip_tensor + "' is not a valid regular expression: " + e.what());
    }
    o.skip_tensor_regex = f.skip_tensor;
  }
  o.modes = SplitList(f.modes);
  for (const auto& m : o.modes) {
    optimize::QuantMode qm;
    if (!optimize::ParseQuantMode(m, &qm))
      return UsageError(kCmd, "--modes: unknown mode '" + m + "' (float16, dynamic, int8, int16x8)");
  }
  for (const auto& s : SplitList(f.prune)) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (*end != 0 || !(v > 0 && v < 1)) return UsageError(kCmd, "--prune expects sparsities in (0,1), e.g. 0.5,0.75; got '" + s + "'");
    o.prune_sparsities.push_back(v);
  }
  for (const auto& s : SplitList(f.cluster)) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (*end != 0 || v < 2 || v > 256) return UsageError(kCmd, "--cluster expects cluster counts 2..256, e.g. 16,32; got '" + s + "'");
    o.cluster_counts.push_back(static_cast<int>(v));
  }
  auto pp = ParsePreprocess(f.pre);
  if (!pp.ok()) return UsageError(kCmd, pp.status().message());
  if (CanonicalOr(f.input) == CanonicalOr(f.output))
    return UsageError(kCmd, "refusing to overwrite the input model '" + f.input + "'; write to another path");

  auto graph = ReadModelFile(f.input);
  if (!graph.ok()) return Fail(kCmd, graph.status());
  auto model = rt::Model::FromGraph(*graph);
  if (!model.ok()) return Fail(kCmd, model.status());
  auto specs = eval::InputSpecsOf(*model);
  if (!specs.ok()) return Fail(kCmd, specs.status());
  eval::DatasetOptions dopts;
  dopts.class_names = f.labels;
  dopts.label_csv = f.label_csv;
  dopts.seed = f.seed;
  auto cal_all = eval::Dataset::Open(f.calibration, *specs, dopts);
  if (!cal_all.ok()) return Fail(kCmd, cal_all.status().WithContext("--calibration"));
  eval::Dataset calibration, evaluation;
  std::string split_note;
  if (SameSources(f.calibration, f.evaluation)) {
    // Never calibrate and evaluate on the same samples: split one source in two.
    if (cal_all->size() < 2) return Fail(kCmd, "--calibration and --eval name the same single sample; give different data");
    const size_t n_cal = std::min(static_cast<size_t>(f.calibration_samples), cal_all->size() / 2);
    auto [c, e] = cal_all->SplitEvenly(n_cal);
    calibration = c;
    evaluation = LimitSamples(e, f.eval_samples);
    split_note = "calibration and evaluation use disjoint samples of the same data (" + std::to_string(calibration.size()) +
                 " / " + std::to_string(e.size()) + ")";
  } else {
    calibration = LimitSamples(*cal_all, f.calibration_samples);
    auto ev = eval::Dataset::Open(f.evaluation, *specs, dopts);
    if (!ev.ok()) return Fail(kCmd, ev.status().WithContext("--eval"));
    evaluation = LimitSamples(*ev, f.eval_samples);
  }

  o.max_drop = f.max_drop;
  o.float_fallback = !f.no_fallback;
  o.pp = *pp;
  o.threads = f.threads > 0 ? f.threads : static_cast<int>(std::max(1u, std::min(4u, std::thread::hardware_concurrency())));
  o.output = f.output_index;
  o.label_offset = f.label_offset;
  o.use_labels = !f.agreement;
  o.bench_seconds = f.bench_seconds;
  const bool tty = isatty(2) != 0;
  o.log = [&](const std::string& line) {
    if (tty) std::cerr << "\r\033[K" << "edgeopt optimize: " << line << std::flush;
  };
  std::cout << "model        " << Printable(f.input) << "\n"
            << "calibration  " << Printable(calibration.Describe()) << "\n"
            << "evaluation   " << Printable(evaluation.Describe()) << "\n";
  if (!split_note.empty()) std::cout << "             " << split_note << "\n";
  std::cout << std::flush;

  auto r = optimize::AutoOptimize(*graph, calibration, evaluation, o);
  if (tty) std::cerr << "\r\033[K" << std::flush;
  if (!r.ok()) return Fail(kCmd, r.status());

  std::cout << "accuracy     " << r->metric << "; float model " << Fmt(r->baseline_accuracy, "%.2f") << "%, budget "
            << Fmt(r->max_drop, "%.2f") << " points (>= " << Fmt(r->baseline_accuracy - r->max_drop, "%.2f") << "%)\n"
            << "objective    " << (o.objective == optimize::Objective::kSize ? std::string("smallest ") + optimize::SizeMetricName(o.size_metric)
                                                                            : std::string("lowest latency"))
            << "\n\n";
  TextTable t({"#", "candidate", "size", "vs float", "latency ms", "accuracy", "drop", "output SNR", "budget"});
  for (size_t c : {0u, 2u, 3u, 4u, 5u, 6u, 7u}) t.AlignRight(c);
  const auto& base = r->candidates[0];
  for (size_t i = 0; i < r->candidates.size(); ++i) {
    const auto& c = r->candidates[i];
    if (!c.error.empty()) {
      t.AddRow({std::to_string(i + 1), c.name, "-", "-", "-", "-", "-", "-", "failed"});
      continue;
    }
    t.AddRow({std::to_string(i + 1), c.name + (c.chosen ? "  <- chosen" : ""), HumanBytes(c.size_bytes),
              Fmt(100.0 * c.size_bytes / std::max<size_t>(1, base.size_bytes), "%.1f%%"), Fmt(c.latency_ms, "%.3f"),
              Fmt(c.accuracy, "%.2f%%"), Fmt(c.drop, "%.2f"), eval::FormatSnr(c.output_snr_db),
              c.within_budget ? "within" : "over"});
  }
  std::cout << t.Render("  ");
  for (size_t i = 0; i < r->candidates.size(); ++i)
    if (!r->candidates[i].error.empty())
      std::cout << "  #" << i + 1 << " " << r->candidates[i].name << " failed: " << Printable(r->candidates[i].error) << "\n";
  for (const auto& n : r->notes) std::cout << "  note: " << Printable(n) << "\n";

  if (r->chosen < 0) return Fail(kCmd, "no candidate stays within the budget (not even the float model?)");
  const auto& best = r->candidates[static_cast<size_t>(r->chosen)];
  Status st = WriteFileAtomically(f.output, best.bytes.data(), best.bytes.size());
  if (!st.ok()) return Fail(kCmd, st);
  std::cout << "\nchosen       #" << r->chosen + 1 << " " << best.name << ": " << HumanBytes(best.size_bytes) << " ("
            << Fmt(100.0 * best.size_bytes / std::max<size_t>(1, base.size_bytes), "%.1f") << "% of float), "
            << Fmt(best.latency_ms, "%.3f") << " ms, " << Fmt(best.accuracy, "%.2f") << "% (drop "
            << Fmt(best.drop, "%.2f") << " points)\n"
            << "how          " << best.recipe << "\n"
            << "wrote        " << Printable(f.output) << "\n";

  optimize::ReportInfo info;
  info.input = f.input;
  info.output = f.output;
  info.command = CommandLine(f);
  info.calibration = calibration.Describe();
  info.evaluation = evaluation.Describe();
  const std::string report_path = f.report.empty() ? DefaultReportPath(f.output) : f.report;
  if (report_path != "none") {
    const std::string html = optimize::AutoReportHtml(*r, info);
    st = WriteFileAtomically(report_path, html.data(), html.size());
    if (!st.ok()) return Fail(kCmd, st);
    std::cout << "report       " << Printable(report_path) << "\n";
  }
  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["input"] = f.input;
    j["output"] = f.output;
    j["metric"] = r->metric;
    j["baseline_accuracy"] = r->baseline_accuracy;
    j["max_drop"] = r->max_drop;
    j["objective"] = f.objective;
    j["size_metric"] = f.size_metric;
    j["calibration_samples"] = r->calibration_samples;
    j["eval_samples"] = r->eval_samples;
    j["chosen"] = best.name;
    auto cands = nlohmann::ordered_json::array();
    for (const auto& c : r->candidates) {
      nlohmann::ordered_json e;
      e["name"] = c.name;
      e["recipe"] = c.recipe;
      if (!c.error.empty()) {
        e["error"] = c.error;
      } else {
        e["file_bytes"] = c.file_bytes;
        e["size_bytes"] = c.size_bytes;
        e["latency_ms"] = c.latency_ms;
        e["accuracy"] = c.accuracy;
        e["drop"] = c.drop;
        e["output_snr_db"] = JsonNumber(c.output_snr_db);
        e["within_budget"] = c.within_budget;
        e["chosen"] = c.chosen;
        if (!c.float_layers.empty()) e["float_layers"] = c.float_layers;
      }
      cands.push_back(e);
    }
    j["candidates"] = cands;
    j["notes"] = r->notes;
    const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    st = f.json == "-" ? (std::cout << text, Status::Ok()) : WriteFileAtomically(f.json, text.data(), text.size());
    if (!st.ok()) return Fail(kCmd, st);
  }
  return kExitOk;
}

}  // namespace

void RegisterOptimize(CommandSet& commands) {
  auto f = std::make_shared<OptimizeFlags>();
  CLI::App* sub = commands.Add("optimize",
                               "Find the smallest (or fastest) optimized model within an accuracy budget",
                               [f] { return RunOptimize(*f); });
  sub->add_option("input", f->input, "The float .tflite model")->required()->type_name("IN");
  sub->add_option("-o,--output", f->output, "Where to write the chosen model")->required()->type_name("OUT");
  sub->add_option("--calibration", f->calibration, "Calibration samples (same forms as --data of eval)")->type_name("SRC");
  sub->add_option("--eval", f->evaluation,
                  "Held-out samples accuracy is measured on (labelled: top-1 accuracy; else agreement with the float model)")
      ->type_name("SRC");
  sub->add_option("--max-drop", f->max_drop, "Accuracy budget: at most this many points below the float model (default 1)")
      ->type_name("POINTS");
  sub->add_option("--objective", f->objective, "size (default) or latency (median on our runtime, 1 thread)")
      ->type_name("size|latency");
  sub->add_option("--size-metric", f->size_metric, "raw file size (default), or gzip/zstd compressed")
      ->type_name("raw|gzip|zstd");
  sub->add_option("--modes", f->modes, "Quantization modes to try (default float16,dynamic,int8,int16x8)")->type_name("LIST");
  sub->add_option("--prune", f->prune, "Also try magnitude pruning at these sparsities, e.g. 0.5,0.75")->type_name("LIST");
  sub->add_option("--cluster", f->cluster, "Also try k-means weight clustering with these cluster counts, e.g. 16,32")
      ->type_name("LIST");
  sub->add_option("--skip-tensor", f->skip_tensor,
                  "Keep ops whose output tensor matches REGEX in float in every quantized candidate (e.g. the suggestion "
                  "of `edgeopt compare`)")
      ->type_name("REGEX");
  sub->add_flag("--no-fallback", f->no_fallback, "Do not try int8 with the most sensitive layers kept in float");
  sub->add_flag("--agreement", f->agreement, "Score by agreement with the float model even when the data has labels");
  sub->add_option("--labels", f->labels, "Class names, one per line (to read labels given as names)")->type_name("FILE");
  sub->add_option("--label-csv", f->label_csv, "FILE,LABEL rows labelling the data files")->type_name("CSV");
  sub->add_option("--label-offset", f->label_offset, "Added to every label (1 for ImageNet models with a background class)")
      ->type_name("N");
  sub->add_option("--calibration-samples", f->calibration_samples, "Calibration samples used (default 100)")->type_name("N");
  sub->add_option("--eval-samples", f->eval_samples, "Evaluation samples used, spread over the data (default: all)")
      ->type_name("N");
  sub->add_option("--threads", f->threads, "Evaluation threads (default: cores, at most 4)")->type_name("N");
  sub->add_option("--output-index", f->output_index, "Output holding the class scores (default 0)")->type_name("K");
  sub->add_option("--bench-seconds", f->bench_seconds, "Latency measurement time per candidate (default 0.3)")
      ->type_name("S");
  sub->add_option("--report", f->report, "HTML report path (default: OUT with .html; 'none': no report)")->type_name("FILE");
  sub->add_option("--json", f->json, "Also write the candidates as JSON to FILE ('-': stdout)")->type_name("FILE");
  AddPreprocessOptions(sub, &f->pre);
  sub->add_option("--seed", f->seed, "Seed of random inputs (default 1)")->type_name("S");
  sub->footer(std::string(R"HELP(Candidates: every --modes quantization (dynamic range is also tried on all weights when the
default 1024-element threshold leaves weights in float); when int8 alone is over budget, int8 with
the layers it hurts most kept in float (1, 2, 4, ... layers, ranked on calibration samples by
`edgeopt compare`'s own SNR); with --prune/--cluster, those applied before the best quantization
within budget. Each candidate is written to memory, reloaded, evaluated on the --eval samples and
timed. The chosen one is the smallest (or fastest) within the budget; ties go to accuracy.

If --calibration and --eval name the same data, it is split: --calibration-samples samples
spread over it calibrate, the others evaluate.

)HELP") + kDataHelp + R"HELP(

Examples:
  edgeopt optimize mnist_lstm_float.tflite -o mnist_small.tflite --range 0,1 \
      --calibration ../shared/data/mnist --eval ../shared/data/mnist --max-drop 0.5
  edgeopt optimize vww_96_float.tflite -o vww_small.tflite --range 0,1 \
      --calibration calib_images/ --eval eval_images/ --max-drop 0.5 --objective latency)HELP");
}

}  // namespace edgeopt::cli
