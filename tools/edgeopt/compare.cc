// edgeopt compare REF.tflite CAND.tflite [--data ...] [--samples N] [--json FILE] [--csv FILE]
// Layer-by-layer quantization debugger over eval/compare.h: per-layer error table, final outputs
// with top-k agreement, the worst layers, and a --skip-tensor flag for `edgeopt quantize`.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "dataset_flags.h"
#include "eval/accuracy.h"
#include "eval/compare.h"
#include "format/writer.h"

namespace edgeopt::cli {
namespace {

constexpr const char* kCmd = "compare";

struct CompareFlags {
  std::string reference;
  std::string candidate;
  std::vector<std::string> data;
  int samples = 0;
  uint64_t seed = 1;
  int threads = 1;
  int suggest = 3;
  int worst = 5;
  std::string layers = "all";
  std::string json;
  std::string csv;
  PreprocessFlags pre;
};

std::string Fmt(double v, const char* f = "%.4g") {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string Db(double v) { return std::isinf(v) ? "inf" : Fmt(v, "%.1f"); }

std::string ShapeText(const std::vector<int32_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

nlohmann::ordered_json StatsJson(const eval::ErrorStats& s) {
  nlohmann::ordered_json j;
  j["rmse"] = JsonNumber(s.rmse);
  j["max_abs"] = JsonNumber(s.max_abs);
  j["mean_abs"] = JsonNumber(s.mean_abs);
  j["snr_db"] = JsonNumber(s.snr_db);
  j["cosine"] = JsonNumber(s.cosine);
  j["rmse_over_scale"] = JsonNumber(s.rmse_over_scale);
  return j;
}

nlohmann::ordered_json ReportJson(const CompareFlags& f, const eval::CompareReport& r, const std::string& data) {
  nlohmann::ordered_json j;
  j["reference"] = f.reference;
  j["candidate"] = f.candidate;
  j["data"] = data;
  j["samples"] = r.samples;
  j["matched_layers"] = r.layers.size();
  j["unmatched_layers"] = r.unmatched;
  auto layers = nlohmann::ordered_json::array();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    nlohmann::ordered_json e;
    e["index"] = i;
    e["op_index"] = l.ref_op;
    e["op"] = l.op;
    e["tensor"] = l.tensor;
    e["candidate_tensor"] = l.cand_tensor;
    e["candidate_op"] = l.cand_op;
    e["shape"] = l.shape;
    e["candidate_dtype"] = l.cand_dtype;
    e["match"] = l.method;
    e["is_output"] = l.is_output;
    e.update(StatsJson(l.stats));
    e["input_snr_db"] = JsonNumber(l.input_snr_db);
    e["own_snr_db"] = JsonNumber(l.own_snr_db);
    e["flagged"] = l.flagged;
    e["rescaled"] = l.rescaled;
    if (l.rescaled) {
      e["rescale_factor_min"] = l.rescale_min;
      e["rescale_factor_max"] = l.rescale_max;
      e["snr_db_as_matched"] = JsonNumber(l.snr_as_matched_db);
    }
    layers.push_back(e);
  }
  j["layers"] = layers;
  auto outs = nlohmann::ordered_json::array();
  for (const auto& o : r.outputs) {
    nlohmann::ordered_json e;
    e["name"] = o.name;
    e["shape"] = o.shape;
    e.update(StatsJson(o.stats));
    if (o.classifier) {
      e["top1_agreement"] = o.agreement.top1_percent();
      e["top5_agreement"] = o.agreement.top5_percent();
    }
    outs.push_back(e);
  }
  j["outputs"] = outs;
  auto worst = nlohmann::ordered_json::array();
  for (size_t w : r.worst) worst.push_back(r.layers[w].tensor);
  j["worst_layers"] = worst;
  nlohmann::ordered_json s;
  s["tensors"] = r.suggested_tensors;
  s["skip_tensor_regex"] = r.suggested_tensors.empty() ? "" : eval::ExactNamesRegex(r.suggested_tensors);
  s["flags"] = r.suggestion;
  j["suggestion"] = s;
  return j;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string ReportCsv(const eval::CompareReport& r) {
  std::ostringstream s;
  s << "index,op_index,op,tensor,candidate_tensor,candidate_dtype,match,shape,rmse,max_abs,mean_abs,snr_db,cosine,"
       "rmse_over_scale,input_snr_db,own_snr_db,flagged,is_output,rescaled\n";
  auto num = [](double v) { return std::isnan(v) || std::isinf(v) ? std::string(std::isinf(v) && v > 0 ? "inf" : "")
                                                                   : Fmt(v, "%.9g"); };
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const auto& l = r.layers[i];
    s << i << ',' << l.ref_op << ',' << CsvField(l.op) << ',' << CsvField(l.tensor) << ',' << CsvField(l.cand_tensor) << ','
      << l.cand_dtype << ',' << l.method << ',' << CsvField(ShapeText(l.shape)) << ',' << num(l.stats.rmse) << ','
      << num(l.stats.max_abs) << ',' << num(l.stats.mean_abs) << ',' << num(l.stats.snr_db) << ',' << num(l.stats.cosine)
      << ',' << num(l.stats.rmse_over_scale) << ',' << num(l.input_snr_db) << ',' << num(l.own_snr_db) << ','
      << (l.flagged ? 1 : 0) << ',' << (l.is_output ? 1 : 0) << ',' << (l.rescaled ? 1 : 0) << '\n';
  }
  return s.str();
}

Status WriteText(const std::string& path, const std::string& text) {
  return WriteFileAtomically(path, text.data(), text.size());
}

int RunCompare(const CompareFlags& f) {
  int max_layers = -1;
  if (!ParseCountOrAll(f.layers, &max_layers))
    return UsageError(kCmd, "--layers expects a number, 'all' or 'none', got '" + f.layers + "'");
  if (f.samples < 0) return UsageError(kCmd, "--samples must not be negative");
  if (f.threads < 1) return UsageError(kCmd, "--threads must be at least 1");
  auto pp = ParsePreprocess(f.pre);
  if (!pp.ok()) return UsageError(kCmd, pp.status().message());
  auto ref = rt::Model::FromFile(f.reference);
  if (!ref.ok()) return Fail(kCmd, ref.status());
  auto cand = rt::Model::FromFile(f.candidate);
  if (!cand.ok()) return Fail(kCmd, cand.status());
  auto specs = eval::InputSpecsOf(*ref);
  if (!specs.ok()) return Fail(kCmd, specs.status().WithContext("'" + f.reference + "'"));

  eval::Dataset data;
  if (f.data.empty()) {
    data = eval::Dataset::Random(static_cast<size_t>(f.samples > 0 ? f.samples : 8), specs->size(), f.seed);
  } else {
    eval::DatasetOptions dopts;
    dopts.seed = f.seed;
    auto d = eval::Dataset::Open(f.data, *specs, dopts);
    if (!d.ok()) return Fail(kCmd, d.status());
    data = LimitSamples(*d, f.samples);
  }
  // Images for a float reference are normalized to [-1,1] unless told otherwise; the candidate is
  // fed the same real values (quantized for integer inputs), so nothing to resolve here.

  eval::CompareOptions co;
  co.pp = *pp;
  co.threads = f.threads;
  co.suggest = f.suggest;
  co.worst = f.worst;
  ProgressBar bar("comparing");
  co.progress = [&](size_t done, size_t total) { bar.Update(done, total); };
  auto r = eval::CompareLayers(*ref, *cand, data, co);
  bar.Finish();
  if (!r.ok()) return Fail(kCmd, r.status());

  const std::string data_text = data.Describe() + (f.data.empty() ? "" : ", " + pp->norm.Describe() + " normalization");
  if (f.json == "-") {
    if (!f.csv.empty()) {
      Status st = WriteText(f.csv, ReportCsv(*r));
      if (!st.ok()) return Fail(kCmd, st);
    }
    PrintJson(ReportJson(f, *r, data_text));
    return kExitOk;
  }
  if (!f.json.empty()) {
    Status st = WriteText(f.json, ReportJson(f, *r, data_text).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    if (!st.ok()) return Fail(kCmd, st);
  }
  if (!f.csv.empty()) {
    Status st = WriteText(f.csv, ReportCsv(*r));
    if (!st.ok()) return Fail(kCmd, st);
  }

  int by_name = 0, by_position = 0;
  for (const auto& l : r->layers) {
    by_name += l.method == "name";
    by_position += l.method == "position";
  }
  std::cout << "reference  " << Printable(f.reference) << "\n"
            << "candidate  " << Printable(f.candidate) << "\n"
            << "data       " << Printable(data_text) << "\n"
            << "matched    " << r->layers.size() << " tensors (" << by_name << " by name, " << by_position
            << " by op position, the rest model inputs); " << r->unmatched << " reference tensors without a match\n";

  // Layers.
  TextTable t({"#", "op", "tensor", "shape", "cand", "RMSE", "max abs", "SNR dB", "cosine", "RMSE/scale", "own SNR", ""});
  for (size_t c : {0u, 5u, 6u, 7u, 8u, 9u, 10u}) t.AlignRight(c);
  const size_t limit = max_layers < 0 ? r->layers.size() : std::min(r->layers.size(), static_cast<size_t>(max_layers));
  for (size_t i = 0; i < limit; ++i) {
    const auto& l = r->layers[i];
    std::string mark = l.flagged ? "> 0.7" : "";
    if (l.rescaled) mark += (mark.empty() ? "" : ", ") + std::string("rescaled (equalized)");
    for (size_t k = 0; k < r->worst.size(); ++k)
      if (r->worst[k] == i) mark += (mark.empty() ? "" : ", ") + std::string("worst #") + std::to_string(k + 1);
    std::string name = l.tensor;
    if (name.size() > 48) name = "..." + name.substr(name.size() - 45);
    t.AddRow({l.ref_op >= 0 ? std::to_string(l.ref_op) : "in", l.op, Printable(name), ShapeText(l.shape), l.cand_dtype,
              Fmt(l.stats.rmse), Fmt(l.stats.max_abs), Db(l.stats.snr_db), Fmt(l.stats.cosine, "%.5f"),
              Fmt(l.stats.rmse_over_scale, "%.2f"), Db(l.own_snr_db), mark});
  }
  if (limit > 0) {
    std::cout << "\nLayers (reference op order; RMSE/scale 0.29 is pure rounding noise, '> 0.7' flags more;\n"
                 "own SNR = estimated SNR of the layer with exact inputs, i.e. the error it adds itself)\n"
              << t.Render("  ");
    if (limit < r->layers.size())
      std::cout << "  ... " << r->layers.size() - limit << " more layers (--layers all lists every one)\n";
    for (size_t i = 0; i < limit; ++i) {
      const auto& l = r->layers[i];
      if (!l.rescaled) continue;
      std::cout << "  rescaled (equalized) " << Printable(l.tensor) << ": the candidate is the reference times a factor per "
                << "channel (" << Fmt(1.0 / l.rescale_max, "%.3g") << " to " << Fmt(1.0 / l.rescale_min, "%.3g")
                << "); metrics after undoing it (SNR as matched " << Db(l.snr_as_matched_db) << " dB)\n";
    }
  }

  std::cout << "\nOutputs\n";
  TextTable ot({"name", "shape", "RMSE", "max abs", "SNR dB", "cosine", "top-1 agree", "top-5 agree"});
  for (size_t c : {2u, 3u, 4u, 5u, 6u, 7u}) ot.AlignRight(c);
  for (const auto& o : r->outputs) {
    char a1[32] = "-", a5[32] = "-";
    if (o.classifier) {
      std::snprintf(a1, sizeof(a1), "%.1f%%", o.agreement.top1_percent());
      std::snprintf(a5, sizeof(a5), "%.1f%%", o.agreement.top5_percent());
    }
    ot.AddRow({Printable(o.name), ShapeText(o.shape), Fmt(o.stats.rmse), Fmt(o.stats.max_abs), Db(o.stats.snr_db),
               Fmt(o.stats.cosine, "%.5f"), a1, a5});
  }
  std::cout << ot.Render("  ");
  bool any_classifier = false;
  for (const auto& o : r->outputs) any_classifier = any_classifier || o.classifier;
  if (any_classifier)
    std::cout << "  (top-1 agree: same top class as the reference; top-5 agree: the reference's top class is in the "
                 "candidate's top 5; over "
              << r->samples << " samples)\n";

  if (!r->worst.empty()) {
    std::cout << "\nWorst layers (quantized layers adding the most error)\n";
    for (size_t k = 0; k < r->worst.size(); ++k) {
      const auto& l = r->layers[r->worst[k]];
      std::cout << "  " << k + 1 << ". op " << l.ref_op << " " << l.op << " -> " << Printable(l.tensor) << ": own SNR "
                << Db(l.own_snr_db) << " dB, SNR " << Db(l.stats.snr_db) << " dB (inputs " << Db(l.input_snr_db)
                << " dB), RMSE/scale " << Fmt(l.stats.rmse_over_scale, "%.2f") << "\n";
    }
  } else {
    std::cout << "\nNo quantized layer adds error (nothing to suggest).\n";
  }
  if (!r->suggestion.empty()) {
    std::cout << "\nSuggestion: keep the " << r->suggested_tensors.size()
              << " worst layers in float when quantizing the reference:\n"
              << "  edgeopt quantize " << Printable(f.reference) << " -o OUT.tflite ... " << Printable(r->suggestion) << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterCompare(CommandSet& commands) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* sub = commands.Add("compare",
                               "Compare two models layer by layer on the same inputs (quantization debugger)",
                               [f] { return RunCompare(*f); });
  sub->add_option("reference", f->reference, "The reference model (usually the float one)")->required()->type_name("REF");
  sub->add_option("candidate", f->candidate, "The model to check against it (e.g. its int8 version)")
      ->required()
      ->type_name("CAND");
  sub->add_option("--data", f->data, "Input samples (see below); default: 8 seeded random samples")->type_name("SRC");
  sub->add_option("--samples", f->samples, "Use at most N samples, spread over the data (default: all)")->type_name("N");
  AddPreprocessOptions(sub, &f->pre);
  sub->add_option("--seed", f->seed, "Seed of random inputs (default 1)")->type_name("S");
  sub->add_option("--threads", f->threads, "Samples compared in parallel (default 1)")->type_name("N");
  sub->add_option("--layers", f->layers, "Layers listed: a number, 'all' (default) or 'none'")->type_name("N|all|none");
  sub->add_option("--worst", f->worst, "Worst layers listed (default 5)")->type_name("N");
  sub->add_option("--suggest", f->suggest, "Layers suggested to keep in float (default 3)")->type_name("N");
  sub->add_option("--json", f->json, "Also write the report as JSON to FILE ('-': print JSON instead of text)")
      ->type_name("FILE");
  sub->add_option("--csv", f->csv, "Also write the per-layer table as CSV to FILE")->type_name("FILE");
  sub->footer(std::string(R"HELP(Both models run on the same inputs with every intermediate tensor kept. Tensors are matched by
name (the quantizer's `_int8` twins and DEQUANTIZE'd copies included), else by the position of
the producing op among the compute ops (QUANTIZE/DEQUANTIZE skipped). Values are compared in real
units (quantized tensors dequantized). A quantized tensor whose only reader is a RELU / RELU6 /
RELU_N1_TO_1 with the same parameters holds that activation's range (its producer clamps as the
activation would), so the reference tensor is clamped the same way before the comparison. Each
model gets its own input dtype: inputs are prepared for the reference and re-quantized for an
integer-input candidate.

Per layer: RMSE, max abs error, SNR (dB), cosine similarity; for quantized candidate tensors
RMSE/scale (0.29 = pure rounding noise; flagged above 0.7); own SNR, the layer's SNR with its
inputs' error taken out. The quantized layers with the lowest own SNR are the worst; the
suggestion is an `edgeopt quantize --skip-tensor` flag keeping them in float.
Cross-layer equalization (on by default in `edgeopt quantize`) multiplies a producer's output
channels by factors its consumer undoes: when one positive factor per channel (least squares)
explains a tensor's error far better than one factor for the whole tensor and the factors are
far from 1, the tensor is marked "rescaled (equalized)" (JSON "rescaled") and its metrics are
computed after undoing the fitted factors (a second pass over the samples).

)HELP") + kDataHelp + R"HELP(

Examples:
  edgeopt compare mobilenet_float.tflite mobilenet_int8.tflite --data images/ --range -1,1
  edgeopt compare model.tflite model_int8.tflite --samples 16 --json report.json --csv layers.csv)HELP");
}

}  // namespace edgeopt::cli
