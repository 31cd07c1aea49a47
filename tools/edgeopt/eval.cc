// edgeopt eval MODEL --task classify --data DIR|FILE.npy [--labels FILE] [--reference MODEL] [--json FILE]
// Task accuracy over a dataset (eval/accuracy.h): top-1/top-5 against labels, and agreement with a
// reference model for any task.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "cli_util.h"
#include "commands.h"
#include "dataset_flags.h"
#include "eval/accuracy.h"
#include "format/writer.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "eval";

struct EvalFlags {
  std::string model;
  std::string task = "classify";
  std::vector<std::string> data;
  std::string labels;
  std::string label_csv;
  int label_offset = 0;
  std::string reference;
  int samples = 0;
  int threads = 0;
  int output = 0;
  uint64_t seed = 1;
  bool keep_state = false;
  uint64_t shuffle = 0;
  std::string json;
  PreprocessFlags pre;
};

std::string Pct(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f%%", digits, v);
  return buf;
}

std::string Fmt(double v, const char* f = "%.4g") {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

nlohmann::ordered_json AccuracyJson(const eval::ClassificationAccumulator& c) {
  nlohmann::ordered_json j;
  j["top1"] = c.top1_percent();
  j["top5"] = c.top5_percent();
  j["top1_correct"] = c.top1_count();
  j["top5_correct"] = c.top5_count();
  j["labelled_samples"] = c.samples();
  return j;
}

int RunEval(const EvalFlags& f) {
  if (f.task != "classify" && f.task != "agreement")
    return UsageError(kCmd, "--task expects classify or agreement, got '" + f.task + "'");
  if (f.task == "agreement" && f.reference.empty())
    return UsageError(kCmd, "--task agreement needs --reference MODEL (the model whose outputs count as right)");
  if (f.data.empty()) return UsageError(kCmd, "--data is required (a folder, a .npy batch, images, or random:N)");
  if (f.samples < 0) return UsageError(kCmd, "--samples must not be negative");
  if (f.threads < 0) return UsageError(kCmd, "--threads must not be negative");
  if (f.keep_state && f.threads > 1)
    return UsageError(kCmd, "--keep-state runs the samples as one stream through one interpreter; drop --threads " +
                                std::to_string(f.threads));
  auto pp = ParsePreprocess(f.pre);
  if (!pp.ok()) return UsageError(kCmd, pp.status().message());
  auto model = rt::Model::FromFile(f.model);
  if (!model.ok()) return Fail(kCmd, model.status());
  std::shared_ptr<const rt::Model> reference;
  if (!f.reference.empty()) {
    auto r = rt::Model::FromFile(f.reference);
    if (!r.ok()) return Fail(kCmd, r.status());
    reference = *r;
  }
  if (f.output < 0 || (*model)->graph().main().outputs.size() <= static_cast<size_t>(f.output))
    return UsageError(kCmd, "--output " + std::to_string(f.output) + " does not exist (the model has " +
                                std::to_string((*model)->graph().main().outputs.size()) + " outputs)");
  // Data is prepared for the reference's inputs when there is one (so both models see the same
  // real values), else for the model's.
  auto specs = eval::InputSpecsOf(reference ? reference : *model);
  if (!specs.ok()) return Fail(kCmd, specs.status());
  eval::DatasetOptions dopts;
  dopts.class_names = f.labels;
  dopts.label_csv = f.label_csv;
  dopts.seed = f.seed;
  auto opened = eval::Dataset::Open(f.data, *specs, dopts);
  if (!opened.ok()) return Fail(kCmd, opened.status());
  const eval::Dataset data = LimitSamples(*opened, f.samples);
  bool any_label = false;
  for (size_t i = 0; i < data.size() && !any_label; ++i) any_label = data.label(i) >= 0;
  if (f.task == "classify" && !any_label && !reference)
    return Fail(kCmd, "no labels found for " + data.Describe() +
                          " (labels.npy beside a .npy batch, labels.csv, class subfolders or class names in file names; "
                          "or compare with --reference MODEL)");

  const int threads = f.keep_state ? 1
                     : f.threads > 0 ? f.threads
                                     : static_cast<int>(std::max(1u, std::min(4u, std::thread::hardware_concurrency())));
  eval::EvalOptions eo;
  eo.run.pp = *pp;
  eo.run.threads = threads;
  eo.run.keep_state = f.keep_state;
  eo.run.shuffle_seed = f.shuffle;
  eo.output = f.output;
  eo.label_offset = f.label_offset;
  ProgressBar bar("evaluating");
  eo.run.progress = [&](size_t done, size_t total) { bar.Update(done, total); };
  eval::EvalResult ref_result;
  auto r = eval::Evaluate(*model, data, eo, reference, reference ? &ref_result : nullptr);
  bar.Finish();
  if (!r.ok()) return Fail(kCmd, r.status());

  const std::string norm = f.pre.range.empty() && f.pre.mean.empty() && f.pre.stddev.empty()
                               ? "automatic normalization (images: [-1,1] for float inputs, raw pixels for 8-bit inputs)"
                               : pp->norm.Describe() + " normalization";
  const bool show_labels = r->has_labels && f.task == "classify";
  std::cout << "model      " << Printable(f.model) << "\n";
  if (reference) std::cout << "reference  " << Printable(f.reference) << "\n";
  std::cout << "data       " << Printable(data.Describe()) << "\n"
            << "input      " << norm << "\n"
            << "samples    " << r->samples << " (" << Fmt(r->seconds, "%.2f") << " s, "
            << Fmt(r->samples ? 1000.0 * r->seconds / r->samples : 0, "%.3f") << " ms/sample, " << threads << " thread"
            << (threads > 1 ? "s" : "") << ")\n"
            << "order      " << (f.shuffle ? "shuffled (seed " + std::to_string(f.shuffle) + ")" : std::string("data order"))
            << (f.keep_state ? "; recurrent state carried from sample to sample (--keep-state, one stream)"
                             : "; recurrent state reset before every sample")
            << "\n\n";
  TextTable t({"metric", "value", ""});
  t.AlignRight(1);
  if (show_labels) {
    const auto& c = r->classification;
    t.AddRow({"top-1 accuracy", Pct(c.top1_percent()), std::to_string(c.top1_count()) + " / " + std::to_string(c.samples())});
    t.AddRow({"top-5 accuracy", Pct(c.top5_percent()), std::to_string(c.top5_count()) + " / " + std::to_string(c.samples())});
    if (reference) {
      const auto& rc = ref_result.classification;
      t.AddRow({"reference top-1", Pct(rc.top1_percent()), "drop " + Fmt(rc.top1_percent() - c.top1_percent(), "%.2f") + " points"});
      t.AddRow({"reference top-5", Pct(rc.top5_percent()), ""});
    }
  }
  if (reference) {
    if (r->classifier) {
      t.AddRow({"top-1 agreement", Pct(r->agreement.top1_percent()), "same top class as the reference"});
      t.AddRow({"top-5 agreement", Pct(r->agreement.top5_percent()), "reference's top class in the top 5"});
    }
    for (size_t k = 0; k < r->output_errors.size(); ++k) {
      const auto& e = r->output_errors[k];
      const std::string p = r->output_errors.size() > 1 ? "output " + std::to_string(k) + " " : "output ";
      t.AddRow({p + "SNR", eval::FormatSnr(e.snr_db), "RMSE " + Fmt(e.rmse) + ", max abs " + Fmt(e.max_abs) + ", cosine " +
                                                          Fmt(e.cosine, "%.5f")});
    }
  }
  std::cout << t.Render("  ");

  if (!f.json.empty()) {
    nlohmann::ordered_json j;
    j["model"] = f.model;
    j["task"] = f.task;
    j["data"] = data.Describe();
    j["samples"] = r->samples;
    if (show_labels) {
      j.update(AccuracyJson(r->classification));
    } else if (reference && r->classifier) {  // --task agreement: top1/top5 are the agreement
      j["top1"] = r->agreement.top1_percent();
      j["top5"] = r->agreement.top5_percent();
    }
    j["seconds"] = r->seconds;
    j["threads"] = threads;
    j["keep_state"] = f.keep_state;
    j["shuffle_seed"] = f.shuffle;
    if (reference) {
      nlohmann::ordered_json rj;
      rj["model"] = f.reference;
      if (show_labels) rj.update(AccuracyJson(ref_result.classification));
      if (r->classifier) {
        rj["top1_agreement"] = r->agreement.top1_percent();
        rj["top5_agreement"] = r->agreement.top5_percent();
      }
      auto outs = nlohmann::ordered_json::array();
      for (const auto& e : r->output_errors) {
        nlohmann::ordered_json o;
        o["rmse"] = JsonNumber(e.rmse);
        o["max_abs"] = JsonNumber(e.max_abs);
        o["snr_db"] = JsonNumber(e.snr_db);
        o["cosine"] = JsonNumber(e.cosine);
        outs.push_back(o);
      }
      rj["outputs"] = outs;
      j["reference"] = rj;
    }
    const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    if (f.json == "-") {
      std::cout << text;
    } else {
      Status st = WriteFileAtomically(f.json, text.data(), text.size());
      if (!st.ok()) return Fail(kCmd, st);
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterEval(CommandSet& commands) {
  auto f = std::make_shared<EvalFlags>();
  CLI::App* sub = commands.Add("eval", "Measure task accuracy on labelled data, or agreement with a reference model",
                               [f] { return RunEval(*f); });
  sub->add_option("model", f->model, "The .tflite model to evaluate")->required()->type_name("MODEL");
  sub->add_option("--task", f->task, "classify (top-1/top-5 on labels; default) or agreement (with --reference)")
      ->type_name("TASK");
  sub->add_option("--data", f->data, "Samples (see below)")->type_name("SRC");
  sub->add_option("--labels", f->labels, "Class names, one per line (to read labels given as names)")->type_name("FILE");
  sub->add_option("--label-csv", f->label_csv, "FILE,LABEL rows labelling the data files")->type_name("CSV");
  sub->add_option("--label-offset", f->label_offset,
                  "Added to every label (1 for ImageNet models whose class 0 is 'background')")
      ->type_name("N");
  sub->add_option("--reference", f->reference, "Also measure agreement with this model's outputs")->type_name("MODEL");
  sub->add_option("--samples", f->samples, "Use at most N samples, spread over the data (default: all)")->type_name("N");
  sub->add_option("--threads", f->threads, "Samples evaluated in parallel (default: cores, at most 4)")->type_name("N");
  sub->add_option("--output", f->output, "Output holding the class scores (default 0)")->type_name("K");
  AddPreprocessOptions(sub, &f->pre);
  sub->add_option("--seed", f->seed, "Seed of random inputs (default 1)")->type_name("S");
  sub->add_flag("--keep-state", f->keep_state,
                "Streaming models (LSTM/RNN): carry the recurrent state from one sample to the next, as an app "
                "feeding one interpreter would, instead of resetting it per sample (default). Runs one stream, "
                "one thread; the result then depends on the sample order");
  sub->add_option("--shuffle", f->shuffle,
                  "Visit the samples in a random order fixed by SEED (default 0: data order); matters only with "
                  "--keep-state")
      ->type_name("SEED");
  sub->add_option("--json", f->json, "Also write the results as JSON to FILE ('-': stdout): top1, top5 (percent), samples, ...")
      ->type_name("FILE");
  sub->footer(std::string(R"HELP(classify: the model's top-1/top-5 predictions (output K) against the labels. With
--reference MODEL, both models run on the same real input values (each in its own input dtype)
and the report adds the reference's accuracy, top-1/top-5 agreement and the output error
(SNR, RMSE, cosine) — the measure for tasks without labels (--task agreement).

)HELP") + kDataHelp + R"HELP(

Recurrent state: by default every sample starts from the model's initial state (an LSTM sees
each digit alone), so results do not depend on order or threads. --keep-state instead streams the
samples through one interpreter without resetting (what a TFLite interpreter does when an app
invokes it sample after sample); --shuffle SEED picks the order.

Examples:
  edgeopt eval mnist_lstm_float.tflite --data ../shared/data/mnist --range 0,1
  edgeopt eval mnist_lstm_float.tflite --data ../shared/data/mnist --range 0,1 --keep-state --shuffle 1
  edgeopt eval model_int8.tflite --data images/ --range 0,1 --reference model.tflite --task agreement
  edgeopt eval mobilenet.tflite --data imagenet_val/ --labels imagenet_labels.txt --json result.json)HELP");
}

}  // namespace edgeopt::cli
