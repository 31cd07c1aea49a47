// edgeopt run MODEL [--input NAME=FILE ...] [--output-dir DIR] [--labels FILE] [--top-k K]
//                   [--threads N] [--mean M --std S | --range LO,HI] [--seed N]
// Thin wrapper over eval/inputs.h and eval/run.h: load, resolve inputs, invoke once, report.
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "eval/image.h"
#include "eval/inputs.h"
#include "eval/run.h"
#include "runtime/interpreter.h"

namespace edgeopt::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  std::string labels;
  int top_k = 5;
  int threads = 1;
  std::string mean, stddev, range;
  uint64_t seed = 1;
};

constexpr const char* kCmd = "run";

int RunRun(const RunOptions& o) {
  if (o.top_k < 1) return UsageError(kCmd, "--top-k must be at least 1, got " + std::to_string(o.top_k));
  if (o.threads < 1) return UsageError(kCmd, "--threads must be at least 1, got " + std::to_string(o.threads));
  auto norm_or = eval::NormalizationFromFlags(o.mean, o.stddev, o.range);
  if (!norm_or.ok()) return UsageError(kCmd, norm_or.status().message());
  const eval::PixelNormalization norm = *norm_or;

  auto model = rt::Model::FromFile(o.model);
  if (!model.ok()) return Fail(kCmd, model.status());
  rt::InterpreterOptions io;
  io.num_threads = o.threads;
  auto interp = rt::Interpreter::Create(*model, io);
  if (!interp.ok()) return Fail(kCmd, interp.status().WithContext("'" + o.model + "'"));
  const auto specs = eval::InputSpecsOf(**interp);
  auto files = eval::MatchInputFlags(o.inputs, specs);
  if (!files.ok()) return UsageError(kCmd, files.status().message());
  std::vector<std::string> labels;
  if (!o.labels.empty()) {
    auto l = eval::ReadLabels(o.labels);
    if (!l.ok()) return Fail(kCmd, l.status());
    labels = std::move(*l);
  }
  auto inputs = eval::LoadInputs(*files, specs, norm, o.seed);
  if (!inputs.ok()) return Fail(kCmd, inputs.status());
  for (const auto& in : *inputs) {
    for (const auto& note : in.notes) Note(kCmd, note);
    if (in.random) Note(kCmd, "no --input for '" + in.tensor.name + "': using " + in.source);
  }
  if (Status st = eval::SetInterpreterInputs(**interp, *inputs); !st.ok()) return Fail(kCmd, st);

  const auto t0 = std::chrono::steady_clock::now();
  if (Status st = (*interp)->Invoke(); !st.ok()) return Fail(kCmd, st.WithContext("'" + o.model + "'"));
  const double invoke_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto outputs = eval::CopyOutputs(**interp);

  const bool classifier = eval::IsClassifierLike(outputs);
  if (!labels.empty()) {
    if (!classifier)
      Warn(kCmd, "--labels ignored: the model's outputs are not one [N] or [1,N] score vector");
    else if (auto w = eval::LabelCountWarning(labels.size(), outputs[0].num_elements(), o.labels); !w.empty())
      Warn(kCmd, w);
  }

  eval::RunReportOptions ro;
  ro.model = o.model;
  ro.top_k = o.top_k;
  ro.labels = labels.empty() ? nullptr : &labels;
  ro.labels_path = o.labels;
  ro.invoke_ms = invoke_ms;
  ro.threads = (*interp)->num_threads();
  if (!o.output_dir.empty()) {
    auto written = eval::WriteOutputsNpy(o.output_dir, outputs);
    if (!written.ok()) return Fail(kCmd, written.status());
    ro.written = *written;
  }
  std::cout << eval::FormatRunReport(*inputs, outputs, ro) << std::flush;
  return kExitOk;
}

}  // namespace

void RegisterRun(CommandSet& commands) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = commands.Add("run", "Run a model once on inputs from files (npy, image, wav, raw) or random values",
                               [o] { return RunRun(*o); });
  sub->add_option("model", o->model, "The .tflite file to run")->required()->type_name("MODEL");
  sub->add_option("--input,-i", o->inputs,
                  "NAME=FILE or FILE (inputs in order): .npy, image (jpg/png/bmp), .wav, or raw bytes; repeatable")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  sub->add_option("--output-dir,-o", o->output_dir, "Write each output to DIR/output_<index>.npy (raw dtype values)")
      ->type_name("DIR");
  sub->add_option("--labels", o->labels, "Labels file, one per line: line i names class i")->type_name("FILE");
  sub->add_option("--top-k", o->top_k, "How many top classes to print for a classifier output (default 5)")->type_name("K");
  sub->add_option("--threads", o->threads, "Threads for the interpreter (default 1)")->type_name("N");
  auto* mean = sub->add_option("--mean", o->mean, "Image pixels: (p - M) / S; one value or one per channel, e.g. 127.5 or 123.7,116.3,103.5")
                   ->type_name("M");
  auto* stddev = sub->add_option("--std", o->stddev, "Image pixels: the S of --mean (one value or one per channel)")->type_name("S");
  auto* range = sub->add_option("--range", o->range, "Image pixels mapped linearly onto [LO,HI], e.g. -1,1 or 0,1")
                    ->type_name("LO,HI");
  mean->needs(stddev);
  stddev->needs(mean);
  range->excludes(mean);
  range->excludes(stddev);
  sub->add_option("--seed", o->seed, "Seed for random values of inputs given no file (default 1)")->type_name("N");
  sub->footer(R"HELP(Inputs: every input without --input gets seeded random values (said on stderr). Images are
resized to the input's height and width (bilinear); 8-bit quantized image inputs get raw pixels
(uint8 0..255, int8 pixel-128) unless --mean/--std or --range is given, then the normalized
values are quantized with the input's scale. Float image inputs default to [-1,1] (said on
stderr). A .wav feeds a 1-D waveform input: mono, padded or truncated to its length, not
resampled. A .npy must have the input's shape (a leading batch 1 may be missing); float .npy
data for a quantized input is quantized.

Output: for one [N] or [1,N] output, the top-k classes with --labels names and dequantized scores;
otherwise each output's name, dtype, shape and min/max/mean (dequantized). --output-dir writes
every output, all or nothing.

Examples:
  edgeopt run mobilenet_quant.tflite --input cat.jpg --labels imagenet_labels.txt
  edgeopt run deeplab.tflite --input image=photo.jpg --range -1,1 --output-dir out/
  edgeopt run yamnet.tflite --input speech.wav
  edgeopt run model.tflite --input x=features.npy -o out/)HELP");
}

}  // namespace edgeopt::cli
