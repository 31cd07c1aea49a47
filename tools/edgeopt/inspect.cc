// edgeopt inspect MODEL [--json] [--ops N|all|none] [--subgraph K]
// Thin wrapper over graph/inspect.h: read, summarize, print.
#include <iostream>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "format/reader.h"
#include "graph/inspect.h"

namespace edgeopt::cli {
namespace {

struct InspectOptions {
  std::string model;
  bool json = false;
  std::string ops = "40";
  int subgraph = 0;
};

int RunInspect(const InspectOptions& o) {
  int max_ops = 0;
  if (!ParseCountOrAll(o.ops, &max_ops))
    return UsageError("inspect", "--ops expects a number, 'all' or 'none', got '" + o.ops + "'");
  auto graph = ReadModelFile(o.model);
  if (!graph.ok()) return Fail("inspect", graph.status());
  if (o.subgraph < 0 || static_cast<size_t>(o.subgraph) >= graph->subgraphs.size()) {
    return UsageError("inspect", "--subgraph " + std::to_string(o.subgraph) + " does not exist ('" + o.model +
                                     "' has " + std::to_string(graph->subgraphs.size()) + " subgraphs)");
  }
  const ModelSummary summary = SummarizeModel(*graph);
  if (o.json) {
    std::cout << SummaryToJson(summary) << std::endl;
  } else {
    SummaryTextOptions to;
    to.max_ops = max_ops;
    to.ops_subgraph = o.subgraph;
    to.truncation_hint = "--ops all lists every op";
    std::cout << SummaryToText(summary, to);
  }
  return kExitOk;
}

}  // namespace

void RegisterInspect(CommandSet& commands) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = commands.Add("inspect", "Summarize a .tflite model: inputs/outputs, ops, quantization scheme, sizes",
                               [o] { return RunInspect(*o); });
  sub->add_option("model", o->model, "The .tflite file to read")->required()->type_name("MODEL");
  sub->add_flag("--json", o->json, "Print the summary as JSON (every subgraph and op; keys in README.md)");
  sub->add_option("--ops", o->ops, "Ops to list in text mode: a number, 'all' or 'none' (default 40)")
      ->type_name("N|all|none");
  sub->add_option("--subgraph", o->subgraph, "Subgraph whose ops are listed in text mode (default 0)")
      ->type_name("K");
  sub->footer(R"HELP(The text report shows: producer, schema version, file size; quantization scheme in words
(e.g. "full integer int8 (uint8 I/O with QUANTIZE at the edges)"); parameter count; subgraphs;
inputs/outputs with shape (-1 = dynamic), dtype and quantization; ops by type and by precision;
constant bytes by dtype and by op type; signatures; metadata; and the op list.

Parameters count the elements of constant weight tensors that ops read: float, int8/uint8/int16/
int4 tensors and quantized int32 biases; shapes, axes and indices are not parameters.

Examples:
  edgeopt inspect mobilenet.tflite
  edgeopt inspect mobilenet.tflite --ops all
  edgeopt inspect mobilenet.tflite --json | jq '.op_histogram')HELP");
}

}  // namespace edgeopt::cli
