// edgeopt convert IN -o OUT [--strip-unused] [--dedupe] [--verify] [--json]
// Read -> optional cleanups -> serialize -> (verify) -> atomic write; reports what changed.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "format/mapped_file.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/compare.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "convert";

struct ConvertOptions {
  std::string input;
  std::string output;
  bool strip_unused = false;
  bool dedupe = false;
  bool verify = false;
  bool json = false;
};

struct GraphCounts {
  uint64_t tensors = 0;
  uint64_t buffers = 0;  // including the empty buffer 0
  uint64_t constant_bytes = 0;
};

GraphCounts Count(const Graph& g) {
  GraphCounts c;
  for (const auto& sg : g.subgraphs) c.tensors += sg.tensors.size();
  c.buffers = g.buffers.size();
  c.constant_bytes = ConstantBytes(g);
  return c;
}

std::string Change(uint64_t before, uint64_t after, bool bytes) {
  auto fmt = [&](uint64_t v) { return bytes ? HumanBytes(v) : GroupDigits(static_cast<int64_t>(v)); };
  std::string s = fmt(before) + " -> " + fmt(after);
  if (after < before) s += " (-" + fmt(before - after) + ")";
  if (after > before) s += " (+" + fmt(after - before) + ")";
  return s;
}

int RunConvert(const ConvertOptions& o) {
  int exit_code = kExitOk;
  auto graph = ReadModelToRewrite(kCmd, o.input, o.output, "", &exit_code);
  if (!graph) return exit_code;

  const uint64_t size_before = graph->source ? graph->source->size() : 0;
  const GraphCounts before = Count(*graph);
  Graph::PruneStats pruned;
  int merged = 0;
  if (o.strip_unused) pruned = graph->DropUnused();
  if (o.dedupe) merged = graph->DedupeBuffers();
  const GraphCounts after = Count(*graph);

  auto bytes = SerializeModel(*graph);
  if (!bytes.ok()) return Fail(kCmd, bytes.status().WithContext("cannot serialize '" + o.input + "'"));

  // Verification happens on the exact bytes about to be written, so a failure leaves no file.
  std::string verify_note;
  if (o.verify) {
    auto reread = ReadModelBytes(*bytes, o.output);
    if (!reread.ok()) return Fail(kCmd, reread.status().WithContext("verify: the output does not read back"));
    // 1. The writer preserved every field of the graph it was given.
    auto diffs = DiffGraphs(*graph, *reread);
    // 2. The output computes what the input did: exact when nothing was changed, by wiring and
    //    content (names, shapes, types, quantization, constant bytes) after strip/dedupe.
    auto original = ReadModelFile(o.input);
    if (!original.ok()) return Fail(kCmd, original.status().WithContext("verify: cannot re-read the input"));
    const bool changed = o.strip_unused || o.dedupe;
    auto semantic = changed ? DiffGraphsSemantic(*original, *reread) : DiffGraphs(*original, *reread);
    diffs.insert(diffs.end(), semantic.begin(), semantic.end());
    if (!diffs.empty()) {
      std::string msg = "verify failed, output not written; differences:";
      for (const auto& d : diffs) msg += "\n  " + d;
      return Fail(kCmd, msg);
    }
    verify_note = changed ? "ok (output re-read; same ops, wiring, tensors and constant bytes as the input)"
                          : "ok (output re-read; identical to the input field by field)";
  }

  Status st = WriteFileAtomically(o.output, bytes->data(), bytes->size());
  if (!st.ok()) return Fail(kCmd, st.WithContext("cannot write '" + o.output + "'"));

  if (o.verify) {
    // The file on disk holds the bytes that were verified.
    auto written = MappedFile::Open(o.output);
    if (!written.ok()) return Fail(kCmd, written.status().WithContext("verify"));
    auto w = (*written)->bytes();
    if (w.size() != bytes->size() || !std::equal(w.begin(), w.end(), bytes->begin())) {
      ::unlink(o.output.c_str());
      return Fail(kCmd, "verify: '" + o.output + "' does not hold the bytes written; removed it");
    }
  }

  const uint64_t size_after = bytes->size();
  if (o.json) {
    nlohmann::ordered_json j;
    j["input"] = o.input;
    j["output"] = o.output;
    j["file_size"] = {{"before", size_before}, {"after", size_after}};
    j["tensors"] = {{"before", before.tensors}, {"after", after.tensors}};
    j["buffers"] = {{"before", before.buffers}, {"after", after.buffers}};
    j["constant_bytes"] = {{"before", before.constant_bytes}, {"after", after.constant_bytes}};
    j["unused_tensors_removed"] = pruned.tensors;
    j["unused_buffers_removed"] = pruned.buffers;
    j["duplicate_buffers_merged"] = merged;
    j["verified"] = o.verify;
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "edgeopt convert: wrote " << Printable(o.output) << "\n";
  TextTable t;
  t.AddRow({"file size", Change(size_before, size_after, true)});
  t.AddRow({"tensors", Change(before.tensors, after.tensors, false) +
                           (o.strip_unused ? ", " + std::to_string(pruned.tensors) + " unused removed" : "")});
  std::string buf = Change(before.buffers, after.buffers, false);
  if (o.strip_unused) buf += ", " + std::to_string(pruned.buffers) + " unused removed";
  if (o.dedupe) buf += ", " + std::to_string(merged) + " duplicates merged";
  t.AddRow({"buffers", buf});
  t.AddRow({"constant data", Change(before.constant_bytes, after.constant_bytes, true)});
  if (o.verify) t.AddRow({"verify", verify_note});
  std::cout << t.Render("  ");
  if (!o.strip_unused && !o.dedupe)
    std::cout << "  (graph unchanged: rewritten with 16-byte aligned buffers; --strip-unused and --dedupe shrink it)\n";
  return kExitOk;
}

}  // namespace

void RegisterConvert(CommandSet& commands) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* sub = commands.Add("convert", "Rewrite a .tflite model, optionally removing unused and duplicate data",
                               [o] { return RunConvert(*o); });
  sub->add_option("input", o->input, "The .tflite file to read (never modified)")->required()->type_name("IN");
  sub->add_option("-o,--output", o->output, "The .tflite file to write (atomically; not the input)")
      ->required()
      ->type_name("OUT");
  sub->add_flag("--strip-unused", o->strip_unused,
                "Remove tensors no op, input, output or signature uses, and buffers no tensor or metadata uses");
  sub->add_flag("--dedupe", o->dedupe, "Make constant tensors with byte-identical data share one buffer");
  sub->add_flag("--verify", o->verify,
                "Re-read the output before writing it and compare with the input (exactly; by wiring and "
                "content after --strip-unused/--dedupe); nothing is written if they differ");
  sub->add_flag("--json", o->json, "Print what changed as JSON");
  sub->footer(R"HELP(The output is written to a temporary file beside OUT and renamed, so a failure leaves no
partial file. Writing over the input is refused.

Examples:
  edgeopt convert model.tflite -o copy.tflite --verify
  edgeopt convert model.tflite -o small.tflite --strip-unused --dedupe --verify)HELP");
}

}  // namespace edgeopt::cli
