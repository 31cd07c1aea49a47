// edgeopt prune IN -o OUT --sparsity S [--structure unstructured|2:4|block:RxC] [--scope REGEX]
//   [--skip-op TYPE] [--per-layer|--global] [--min-params N] [--encode dense|sparse]
//   [--samples PATH] [--json FILE]
// Read -> optimize::PruneModel -> serialize -> agreement on samples -> atomic write -> report.
#include <cmath>
#include <iostream>
#include <memory>
#include <regex>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/prune/prune.h"
#include "optimize_report.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "prune";

struct PruneFlags {
  std::string input, output;
  double sparsity = 0.5;
  std::string structure = "unstructured";
  std::string scope;
  std::vector<std::string> skip_ops;
  bool per_layer = false, global = false;
  int64_t min_params = 0;
  std::string encode = "dense";
  std::string json;
  AgreementFlags agreement;
  CLI::Option* sparsity_option = nullptr;
};

int RunPrune(const PruneFlags& f) {
  optimize::PruneOptions o;
  // Flag values first (usage errors, exit 2), then the model (exit 1).
  if (Status st = optimize::ParsePruneStructure(f.structure, &o); !st.ok()) return UsageError(kCmd, st.message());
  const bool sparsity_given = f.sparsity_option && f.sparsity_option->count() > 0;
  if (o.structure == optimize::PruneStructure::kTwoFour) {
    if (sparsity_given && f.sparsity != 0.5)
      return UsageError(kCmd, "--structure 2:4 always prunes 50% (2 of every 4 weights); drop --sparsity or give 0.5");
    o.sparsity = 0.5;
  } else {
    if (!sparsity_given) return UsageError(kCmd, "--sparsity S is required (the fraction of weights to zero, e.g. 0.5)");
    if (!(f.sparsity >= 0.0 && f.sparsity < 1.0))
      return UsageError(kCmd, "--sparsity must be in [0, 1) (the fraction of weights set to zero), got " +
                                  std::to_string(f.sparsity));
    o.sparsity = f.sparsity;
  }
  if (f.per_layer && f.global) return UsageError(kCmd, "give --per-layer or --global, not both");
  o.global = f.global;
  if (o.global && o.structure != optimize::PruneStructure::kUnstructured)
    return UsageError(kCmd, "--global applies to unstructured pruning only");
  if (f.encode != "dense" && f.encode != "sparse")
    return UsageError(kCmd, "--encode must be dense or sparse, got '" + f.encode + "'");
  o.encode_sparse = f.encode == "sparse";
  if (std::string p = WeightSelectionProblem(f.scope, f.skip_ops, f.min_params, f.agreement); !p.empty())
    return UsageError(kCmd, p);
  o.selection.scope_regex = f.scope;
  o.selection.skip_ops = f.skip_ops;
  o.selection.min_params = f.min_params;

  int exit_code = kExitOk;
  auto graph = ReadModelToRewrite(kCmd, f.input, f.output, f.json, &exit_code);
  if (!graph) return exit_code;
  const Graph original = *graph;
  auto report = optimize::PruneModel(*graph, o);
  if (!report.ok()) return Fail(kCmd, report.status().WithContext("'" + f.input + "'"));

  auto out = WriteOptimizedModel(original, *graph, f.output, f.agreement, "pruned");
  if (!out.ok()) return Fail(kCmd, out.status());
  const optimize::CompressedSizes& before = out->before;
  const optimize::CompressedSizes& after = out->after;
  const Expected<Agreement>& agreement = out->agreement;

  const auto& r = *report;
  const std::string how = optimize::PruneStructureName(o) +
                          (o.structure == optimize::PruneStructure::kUnstructured ? (o.global ? ", global" : ", per layer") : "");
  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["input"] = f.input;
    j["output"] = f.output;
    j["structure"] = optimize::PruneStructureName(o);
    j["scope"] = o.global ? "global" : "per_layer";
    j["target_sparsity"] = o.sparsity;
    j["encoding"] = f.encode;
    j["sparsity"] = r.sparsity();
    j["pruned_params"] = r.total_params;
    j["zero_params"] = r.total_zeros;
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
      x["zeros_before"] = l.zeros_before;
      x["zeros_after"] = l.zeros_after;
      x["sparsity"] = l.sparsity();
      x["sparse_encoded"] = l.sparse_encoded;
      x["bytes_before"] = l.bytes_before;
      x["bytes_after"] = l.bytes_after;
      j["layers"].push_back(x);
    }
    j["skipped"] = r.skipped;
    if (Status js = WriteJson(f.json, j); !js.ok()) return Fail(kCmd, js.WithContext("--json"));
    if (f.json == "-") return kExitOk;
  }

  std::cout << "edgeopt prune: wrote " << Printable(f.output) << "\n";
  TextTable t;
  t.AddRow({"pruning", how + (o.structure == optimize::PruneStructure::kTwoFour ? "" : ", target " + Pct(o.sparsity))});
  t.AddRow({"layers", std::to_string(r.layers.size()) + " pruned, " + std::to_string(r.skipped.size()) + " left out"});
  t.AddRow({"weights", GroupDigits(r.total_zeros) + " of " + GroupDigits(r.total_params) + " zero (" + Pct(r.sparsity()) +
                           ")"});
  t.AddRow({"encoding", o.encode_sparse ? std::to_string(r.sparse_encoded) +
                                              " weight tensor(s) stored sparse (.tflite SparsityParameters + DENSIFY)"
                                        : "dense float32 with exact zeros (--encode sparse stores them sparse)"});
  TextTable layers({"tensor", "op", "shape", "params", "sparsity", "stored"});
  layers.AlignRight(3);
  layers.AlignRight(4);
  layers.AlignRight(5);
  for (const auto& l : r.layers) {
    const std::string sparsity = l.zeros_before ? Pct(static_cast<double>(l.zeros_before) / l.params) + " -> " + Pct(l.sparsity())
                                                : Pct(l.sparsity());
    layers.AddRow({Printable(l.tensor), l.op, ShapeText(l.shape), GroupDigits(l.params), sparsity,
                   (l.sparse_encoded ? "sparse " : "") + HumanBytes(l.bytes_after)});
  }
  PrintShrinkReport(t, *out, layers, r.skipped);
  return kExitOk;
}

}  // namespace

void RegisterPrune(CommandSet& commands) {
  auto f = std::make_shared<PruneFlags>();
  CLI::App* sub = commands.Add("prune", "Zero the smallest-magnitude weights of a float model (smaller compressed files, sparse kernels)",
                               [f] { return RunPrune(*f); });
  sub->add_option("input", f->input, "The float .tflite model to read (never modified)")->required()->type_name("IN");
  sub->add_option("-o,--output", f->output, "The .tflite file to write (atomically; not the input)")
      ->required()
      ->type_name("OUT");
  f->sparsity_option =
      sub->add_option("--sparsity", f->sparsity, "Fraction of weights to set to zero, in [0, 1) (2:4 is always 0.5)")
          ->type_name("S");
  sub->add_option("--structure", f->structure,
                  "unstructured (default), 2:4 (2 of every 4 along input channels) or block:RxC (R output channels x "
                  "C inputs, lowest L2 norm first)")
      ->type_name("KIND");
  sub->add_option("--scope", f->scope, "Only weights whose tensor name matches this regular expression (searched)")
      ->type_name("REGEX");
  sub->add_option("--skip-op", f->skip_ops, "Leave the weights of this op type alone (repeatable), e.g. DEPTHWISE_CONV_2D")
      ->type_name("TYPE")
      ->allow_extra_args(false);
  sub->add_flag("--per-layer", f->per_layer, "Each layer gets the target sparsity (default)");
  sub->add_flag("--global", f->global, "One magnitude threshold across all selected layers (unstructured only)");
  sub->add_option("--min-params", f->min_params, "Leave weight tensors with fewer parameters alone (default 0)")
      ->type_name("N");
  sub->add_option("--encode", f->encode,
                  "dense: float32 with exact zeros (default; any runtime); sparse: .tflite sparse tensors behind "
                  "DENSIFY, so the file itself shrinks (LiteRT and edgeopt run it)")
      ->type_name("dense|sparse");
  AddAgreementFlags(sub, f->agreement);
  sub->add_option("--json", f->json, "Also write the report as JSON to FILE ('-': print it instead of the text)")
      ->type_name("FILE");
  sub->footer(R"HELP(Post-training magnitude pruning (no retraining): accuracy drops as sparsity grows, so check the
agreement figures (--samples with real inputs) before shipping. Pruned weights stay float32; quantize
afterwards (int8 symmetric weights keep zeros exactly zero). Quantized models must be dequantized first.

Examples:
  edgeopt prune model.tflite -o pruned.tflite --sparsity 0.5
  edgeopt prune model.tflite -o pruned.tflite --sparsity 0.8 --encode sparse --skip-op DEPTHWISE_CONV_2D
  edgeopt prune model.tflite -o pruned.tflite --structure 2:4 --samples ../shared/data/images
  edgeopt prune model.tflite -o pruned.tflite --sparsity 0.7 --structure block:1x4 --json report.json)HELP");
}

}  // namespace edgeopt::cli
