// edgeopt cluster IN -o OUT --clusters K [--init linear|density|kmeans++|random] [--per-channel]
//   [--preserve-sparsity] [--scope REGEX] [--skip-op TYPE] [--min-params N] [--samples PATH]
//   [--json FILE]
// Read -> optimize::ClusterModel -> serialize -> agreement on samples -> atomic write -> report.
#include <cstdio>
#include <iostream>
#include <memory>
#include <regex>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/cluster/cluster.h"
#include "optimize_report.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "cluster";

struct ClusterFlags {
  std::string input, output;
  int clusters = 0;
  std::string init = "kmeans++";
  bool per_channel = false;
  bool preserve_sparsity = false;
  std::string scope;
  std::vector<std::string> skip_ops;
  int64_t min_params = 0;
  uint64_t seed = 1;
  std::string json;
  AgreementFlags agreement;
};

std::string Rmse(double rmse, double max_abs) {
  char buf[64];
  if (max_abs > 0) std::snprintf(buf, sizeof buf, "%.3g (%.2f%% of max|w|)", rmse, 100.0 * rmse / max_abs);
  else std::snprintf(buf, sizeof buf, "%.3g", rmse);
  return buf;
}

int RunCluster(const ClusterFlags& f) {
  optimize::ClusterOptions o;
  if (f.clusters < 2 || f.clusters > 65536)
    return UsageError(kCmd, "--clusters K must be between 2 and 65536, got " + std::to_string(f.clusters));
  o.clusters = f.clusters;
  if (!optimize::ParseClusterInit(f.init, &o.init))
    return UsageError(kCmd, "--init must be linear, density, kmeans++ or random, got '" + f.init + "'");
  o.per_channel = f.per_channel;
  o.preserve_sparsity = f.preserve_sparsity;
  o.seed = f.seed;
  if (std::string p = WeightSelectionProblem(f.scope, f.skip_ops, f.min_params, f.agreement); !p.empty())
    return UsageError(kCmd, p);
  o.selection.scope_regex = f.scope;
  o.selection.skip_ops = f.skip_ops;
  o.selection.min_params = f.min_params;

  int exit_code = kExitOk;
  auto graph = ReadModelToRewrite(kCmd, f.input, f.output, f.json, &exit_code);
  if (!graph) return exit_code;
  const Graph original = *graph;
  auto report = optimize::ClusterModel(*graph, o);
  if (!report.ok()) return Fail(kCmd, report.status().WithContext("'" + f.input + "'"));

  auto out = WriteOptimizedModel(original, *graph, f.output, f.agreement, "clustered");
  if (!out.ok()) return Fail(kCmd, out.status());
  const optimize::CompressedSizes& before = out->before;
  const optimize::CompressedSizes& after = out->after;
  const Expected<Agreement>& agreement = out->agreement;

  const auto& r = *report;
  int64_t params = 0, max_distinct = 0;
  for (const auto& l : r.layers) {
    params += l.params;
    max_distinct = std::max(max_distinct, l.distinct_after);
  }
  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["input"] = f.input;
    j["output"] = f.output;
    j["clusters"] = o.clusters;
    j["init"] = optimize::ClusterInitName(o.init);
    j["per_channel"] = o.per_channel;
    j["preserve_sparsity"] = o.preserve_sparsity;
    j["clustered_params"] = params;
    j["file_size"] = SizesJson(before, after);
    j["agreement"] = agreement.ok() ? AgreementJson(*agreement) : nlohmann::ordered_json(nullptr);
    if (!agreement.ok()) j["agreement_error"] = agreement.status().message();
    j["layers"] = nlohmann::ordered_json::array();
    for (const auto& l : r.layers) {
      nlohmann::ordered_json x;
      x["tensor"] = l.tensor;
      x["op"] = l.op;
      x["shape"] = l.shape;
      x["params"] = l.params;
      x["groups"] = l.groups;
      x["distinct_before"] = l.distinct_before;
      x["distinct_after"] = l.distinct_after;
      x["zeros_before"] = l.zeros_before;
      x["zeros_after"] = l.zeros_after;
      x["sparsity"] = l.params ? static_cast<double>(l.zeros_after) / l.params : 0.0;
      x["rmse"] = l.rmse;
      j["layers"].push_back(x);
    }
    j["skipped"] = r.skipped;
    j["notes"] = r.notes;
    if (Status js = WriteJson(f.json, j); !js.ok()) return Fail(kCmd, js.WithContext("--json"));
    if (f.json == "-") return kExitOk;
  }

  std::cout << "edgeopt cluster: wrote " << Printable(f.output) << "\n";
  TextTable t;
  t.AddRow({"clustering", std::to_string(o.clusters) + " clusters per " + (o.per_channel ? "output channel" : "layer") +
                              ", " + optimize::ClusterInitName(o.init) + " init" +
                              (o.preserve_sparsity ? ", zeros preserved" : "")});
  t.AddRow({"layers", std::to_string(r.layers.size()) + " clustered (" + GroupDigits(params) + " weights), " +
                          std::to_string(r.skipped.size()) + " left out"});
  t.AddRow({"storage", "dense float32, at most " + std::to_string(max_distinct) + " distinct values per " +
                           (o.per_channel ? "channel" : "layer") + " (a standard .tflite)"});
  TextTable layers({"tensor", "op", "shape", "params", "distinct", "sparsity", "rmse"});
  layers.AlignRight(3);
  layers.AlignRight(4);
  layers.AlignRight(5);
  for (const auto& l : r.layers) {
    layers.AddRow({Printable(l.tensor), l.op, ShapeText(l.shape), GroupDigits(l.params),
                   GroupDigits(l.distinct_before) + " -> " + GroupDigits(l.distinct_after),
                   Pct(l.params ? static_cast<double>(l.zeros_after) / l.params : 0.0), Rmse(l.rmse, l.max_abs_weight)});
  }
  PrintShrinkReport(t, *out, layers, r.skipped);
  for (const auto& n : r.notes) Warn(kCmd, n);
  return kExitOk;
}

}  // namespace

void RegisterCluster(CommandSet& commands) {
  auto f = std::make_shared<ClusterFlags>();
  CLI::App* sub = commands.Add("cluster", "Share weights: K distinct values per layer or channel (k-means), for smaller compressed files",
                               [f] { return RunCluster(*f); });
  sub->add_option("input", f->input, "The float .tflite model to read (never modified)")->required()->type_name("IN");
  sub->add_option("-o,--output", f->output, "The .tflite file to write (atomically; not the input)")
      ->required()
      ->type_name("OUT");
  sub->add_option("--clusters", f->clusters, "Number of distinct weight values K per layer (or channel), >= 2")
      ->required()
      ->type_name("K");
  sub->add_option("--init", f->init, "Centroid initialization: kmeans++ (default), linear, density or random")
      ->type_name("KIND");
  sub->add_flag("--per-channel", f->per_channel, "K values per output channel instead of per layer");
  sub->add_flag("--preserve-sparsity", f->preserve_sparsity,
                "Zeros (e.g. from prune) stay exactly zero; zero counts as one of the K values");
  sub->add_option("--scope", f->scope, "Only weights whose tensor name matches this regular expression (searched)")
      ->type_name("REGEX");
  sub->add_option("--skip-op", f->skip_ops, "Leave the weights of this op type alone (repeatable)")
      ->type_name("TYPE")
      ->allow_extra_args(false);
  sub->add_option("--min-params", f->min_params, "Leave weight tensors with fewer parameters alone (default 0)")
      ->type_name("N");
  sub->add_option("--seed", f->seed, "Seed of the kmeans++/random initialization (default 1)")->type_name("N");
  AddAgreementFlags(sub, f->agreement);
  sub->add_option("--json", f->json, "Also write the report as JSON to FILE ('-': print it instead of the text)")
      ->type_name("FILE");
  sub->footer(R"HELP(Post-training k-means weight sharing (no retraining). The output is a standard dense float .tflite
that LiteRT runs; its weights compress far better (gzip/zstd), and int8 quantization afterwards keeps
at most K values per channel. edgeopt's runtime does not store clustered weights as palette+indices
(it runs them like any dense weights). Quantized models must be dequantized first.

Examples:
  edgeopt cluster model.tflite -o clustered.tflite --clusters 16
  edgeopt cluster pruned.tflite -o pc.tflite --clusters 16 --preserve-sparsity
  edgeopt cluster model.tflite -o c.tflite --clusters 8 --per-channel --samples ../shared/data/images)HELP");
}

}  // namespace edgeopt::cli
