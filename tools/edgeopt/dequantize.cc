// edgeopt dequantize IN -o OUT [--json]
// Any quantized or float16 model becomes a pure float32 model: weights dequantized,
// QUANTIZE/DEQUANTIZE removed, float I/O. The result is checked to load and run before it is
// written (atomically).
#include <iostream>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/inspect.h"
#include "optimize/quantize/dequantize.h"
#include "runtime/interpreter.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "dequantize";

struct DequantizeCliOptions {
  std::string input, output;
  bool json = false;
};

int RunDequantize(const DequantizeCliOptions& o) {
  int exit_code = kExitOk;
  auto graph = ReadModelToRewrite(kCmd, o.input, o.output, "", &exit_code);
  if (!graph) return exit_code;
  const uint64_t size_before = graph->source ? graph->source->size() : 0;
  const ModelSummary before = SummarizeModel(*graph);
  Graph g = *graph;
  auto report = optimize::DequantizeModel(g);
  if (!report.ok()) return Fail(kCmd, report.status().WithContext("'" + o.input + "'"));
  auto bytes = SerializeModel(g);
  if (!bytes.ok()) return Fail(kCmd, bytes.status().WithContext("cannot serialize the float model"));
  auto reread = ReadModelBytes(*bytes, o.output);
  if (!reread.ok()) return Fail(kCmd, reread.status().WithContext("the float model does not read back"));
  const ModelSummary after = SummarizeModel(*reread);
  {
    auto model = rt::Model::FromGraph(*reread);
    if (!model.ok()) return Fail(kCmd, model.status().WithContext("the float model does not load"));
    auto interp = rt::Interpreter::Create(*model);
    if (!interp.ok()) return Fail(kCmd, interp.status().WithContext("the float model does not load"));
    if (Status st = (*interp)->AllocateTensors(); !st.ok()) return Fail(kCmd, st.WithContext("the float model does not run"));
  }
  Status st = WriteFileAtomically(o.output, bytes->data(), bytes->size());
  if (!st.ok()) return Fail(kCmd, st.WithContext("cannot write '" + o.output + "'"));
  const uint64_t size_after = bytes->size();
  if (o.json) {
    nlohmann::ordered_json j;
    j["input"] = o.input;
    j["output"] = o.output;
    j["scheme"] = {{"before", before.quantization.id}, {"after", after.quantization.id}};
    j["file_size"] = {{"before", size_before}, {"after", size_after}};
    j["constant_bytes"] = {{"before", report->bytes_before}, {"after", report->bytes_after}};
    j["constants_dequantized"] = report->constants_dequantized;
    j["activations_converted"] = report->activations_converted;
    j["conversion_ops_removed"] = report->ops_removed;
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "edgeopt dequantize: wrote " << Printable(o.output) << "\n";
  TextTable t;
  t.AddRow({"scheme", before.quantization.description + " -> " + after.quantization.description});
  t.AddRow({"file size", HumanBytes(size_before) + " -> " + HumanBytes(size_after)});
  t.AddRow({"constants", std::to_string(report->constants_dequantized) + " dequantized to float32"});
  t.AddRow({"activations", std::to_string(report->activations_converted) + " integer tensors now float32"});
  t.AddRow({"ops removed", std::to_string(report->ops_removed) + " QUANTIZE/DEQUANTIZE"});
  std::cout << t.Render("  ");
  return kExitOk;
}

}  // namespace

void RegisterDequantize(CommandSet& commands) {
  auto o = std::make_shared<DequantizeCliOptions>();
  CLI::App* sub = commands.Add("dequantize", "Turn a quantized or float16 model into a pure float32 model",
                               [o] { return RunDequantize(*o); });
  sub->add_option("input", o->input, "The quantized .tflite model (never modified)")->required()->type_name("IN");
  sub->add_option("-o,--output", o->output, "The float .tflite file to write (atomically)")->required()->type_name("OUT");
  sub->add_flag("--json", o->json, "Print what changed as JSON");
  sub->footer(R"HELP(Weights are dequantized (per-tensor or per-channel), integer activations become float32,
QUANTIZE/DEQUANTIZE ops disappear and the model's inputs and outputs become float32 (real values,
not the integer codes). Integer-only details are made explicit where float needs them (an int8
output range of [0, 6] becomes a fused RELU6). Use it to get a float model to re-quantize, or to
measure what quantization costs.

Example:
  edgeopt dequantize mobilenet_v2_1.0_224_ptq_int8.tflite -o mobilenet_v2_float.tflite)HELP");
}

}  // namespace edgeopt::cli
