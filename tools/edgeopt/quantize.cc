// edgeopt quantize IN -o OUT --mode float16|dynamic|int8|int16x8 [options]
// Read -> (load calibration samples) -> optimize::QuantizeModel -> serialize -> check that the
// result loads and runs -> compare with the float model on held-out samples -> atomic write.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "eval/agreement.h"
#include "eval/dataset.h"
#include "format/reader.h"
#include "format/writer.h"
#include "graph/inspect.h"
#include "optimize/quantize/dequantize.h"
#include "optimize/quantize/quantize.h"
#include "runtime/interpreter.h"

namespace edgeopt::cli {
namespace {

// Whether the model's only quantization is float16 constants (no integer-quantized tensor).
bool OnlyFloat16Weights(const Graph& g) {
  bool any = false;
  for (const auto& sg : g.subgraphs)
    for (const auto& t : sg.tensors) {
      if (t.is_quantized() && t.type != DType::kFloat32 && t.type != DType::kFloat16) return false;
      any = any || (t.type == DType::kFloat16 && g.IsConstant(t));
    }
  return any;
}

constexpr const char* kCmd = "quantize";

struct QuantizeCliOptions {
  std::string input, output;
  std::string mode;
  std::string calibration;
  int samples = 100;
  int eval_samples = 100;
  std::string mean, std, range;
  std::string calibrator = "minmax";
  double percentile = 99.99;
  std::string io = "float";
  bool integer_only = false;
  std::vector<std::string> skip_ops;
  std::string skip_tensor;
  bool per_tensor = false;
  bool no_equalize = false;
  bool no_bias_correction = false;
  double outlier_factor = 4.0;
  int64_t min_elements = 1024;
  bool symmetric_inputs = false;
  std::string ranges = "20";
  int threads = 1;
  bool json = false;
  bool quiet = false;
};

std::string Fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string Number(double v) {
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

// A progress bar on stderr, only when stderr is a terminal (logs and tests stay clean).
class Progress {
 public:
  Progress(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled && ::isatty(2)) {}
  void Update(int done, int total) {
    if (!enabled_ || total <= 0) return;
    const int width = 30;
    const int filled = static_cast<int>(static_cast<int64_t>(width) * done / total);
    std::cerr << "\r" << label_ << " [" << std::string(filled, '#') << std::string(width - filled, ' ') << "] " << done
              << "/" << total << std::flush;
    if (done >= total) std::cerr << "\n";
  }

 private:
  std::string label_;
  bool enabled_;
};

Expected<eval::PixelNormalization> Normalization(const QuantizeCliOptions& o) {
  eval::PixelNormalization norm;
  if (!o.range.empty() && (!o.mean.empty() || !o.std.empty()))
    return InvalidArgument("--range and --mean/--std are alternatives; give one");
  if (!o.range.empty()) return eval::ParseRange(o.range);
  if (!o.mean.empty() || !o.std.empty()) {
    norm.kind = eval::PixelNormalization::Kind::kMeanStd;
    if (!o.mean.empty()) {
      ASSIGN_OR_RETURN(norm.mean, eval::ParseFloatList(o.mean));
    }
    if (!o.std.empty()) {
      ASSIGN_OR_RETURN(norm.stddev, eval::ParseFloatList(o.std));
    }
    for (float s : norm.stddev)
      if (s == 0) return InvalidArgument("--std must not be 0");
  }
  return norm;
}

nlohmann::ordered_json CountListJson(const CountList& l) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : l) j[k] = v;
  return j;
}

std::string CountListText(const CountList& l) {
  std::string s;
  for (const auto& [k, v] : l) s += (s.empty() ? "" : ", ") + k + " " + HumanBytes(v);
  return s.empty() ? "none" : s;
}

int RunQuantize(const QuantizeCliOptions& o) {
  optimize::QuantizeOptions q;
  if (!optimize::ParseQuantMode(o.mode, &q.mode))
    return UsageError(kCmd, "--mode must be float16, dynamic, int8 or int16x8, got '" + o.mode + "'");
  if (!optimize::ParseCalibrator(o.calibrator, &q.calibrator))
    return UsageError(kCmd, "--calibrator must be minmax, percentile, entropy or mse, got '" + o.calibrator + "'");
  if (!optimize::ParseIoType(o.io, &q.io)) return UsageError(kCmd, "--io must be float, int8 or uint8, got '" + o.io + "'");
  const bool full_integer = q.mode == optimize::QuantMode::kInt8 || q.mode == optimize::QuantMode::kInt16x8;
  if (!full_integer && (o.io != "float" || o.integer_only))
    return UsageError(kCmd, "--io and --integer-only apply to --mode int8 and int16x8 only");
  if (!full_integer && (o.no_equalize || o.no_bias_correction))
    return UsageError(kCmd, "--no-equalize and --no-bias-correction apply to --mode int8 and int16x8 only");
  if (q.mode == optimize::QuantMode::kInt16x8 && q.io == optimize::IoType::kUInt8)
    return UsageError(kCmd, "--io uint8 is not available with --mode int16x8 (use float or int8 for int16 I/O)");
  if (full_integer && o.calibration.empty())
    return UsageError(kCmd, "--mode " + o.mode +
                                " needs representative data: --calibration DIR (images or .npy files) or FILE.npy");
  if (o.samples < 1) return UsageError(kCmd, "--samples must be at least 1");
  if (o.percentile <= 50 || o.percentile > 100) return UsageError(kCmd, "--percentile must be in (50, 100]");
  if (!(o.outlier_factor == 0 || o.outlier_factor > 1))
    return UsageError(kCmd, "--outlier-factor must be 0 (keep every sample) or greater than 1");
  int max_ranges = 20;
  if (!ParseCountOrAll(o.ranges, &max_ranges)) return UsageError(kCmd, "--ranges wants a count, 'all' or 'none'");
  auto norm = Normalization(o);
  if (!norm.ok()) return UsageError(kCmd, norm.status().message());
  int exit_code = kExitOk;
  auto graph = ReadModelToRewrite(kCmd, o.input, o.output, "", &exit_code);
  if (!graph) return exit_code;
  const uint64_t size_before = graph->source ? graph->source->size() : 0;
  const ModelSummary summary_before = SummarizeModel(*graph);
  std::string why;
  bool from_float16 = false;
  if (optimize::IsAlreadyQuantized(*graph, &why)) {
    // Float16 weights and nothing integer (MediaPipe ships its models so): read as float32, as
    // `edgeopt dequantize` does, and quantized from there. Integer models are refused.
    if (q.mode == optimize::QuantMode::kFloat16 || !OnlyFloat16Weights(*graph))
      return Fail(kCmd, "'" + o.input + "' is already quantized (" + why + "); run `edgeopt dequantize " + o.input +
                            " -o float.tflite` first, then quantize the float model");
    auto dq = optimize::DequantizeModel(*graph);
    if (!dq.ok()) return Fail(kCmd, dq.status().WithContext("'" + o.input + "': reading its float16 weights as float32"));
    from_float16 = true;
  }

  // The float model, for input shapes, calibration and the agreement check.
  auto float_model = rt::Model::FromGraph(*graph);
  if (!float_model.ok()) return Fail(kCmd, float_model.status().WithContext("'" + o.input + "'"));
  auto float_interp = rt::Interpreter::Create(*float_model);
  if (!float_interp.ok()) return Fail(kCmd, float_interp.status().WithContext("'" + o.input + "'"));
  if (Status st = (*float_interp)->AllocateTensors(); !st.ok()) return Fail(kCmd, st.WithContext("'" + o.input + "'"));

  // Samples: calibration (full integer) and held-out evaluation samples, disjoint.
  std::vector<std::vector<eval::HostTensor>> eval_samples;
  std::string data_note;
  std::vector<std::string> calibration_names;  // per calibration sample, for the report
  if (!o.calibration.empty()) {
    if ((*float_interp)->num_inputs() != 1)
      return Fail(kCmd, "--calibration supports models with one input; this model has " +
                            std::to_string((*float_interp)->num_inputs()));
    const std::vector<eval::InputSpec> specs = {eval::SpecOf(*(*float_interp)->input(0))};
    eval::DatasetOptions dopts;
    dopts.flag_name = "--calibration";
    auto set = eval::Dataset::Open({o.calibration}, specs, dopts);
    if (!set.ok()) return Fail(kCmd, set.status());
    eval::Preprocess pp;
    pp.norm = *norm;
    const size_t ncal = full_integer ? static_cast<size_t>(o.samples) : 0;
    if (full_integer && set->size() < 2 && o.eval_samples > 0)
      Warn(kCmd, "only one sample in '" + o.calibration + "': nothing is left for the held-out comparison");
    const eval::SampleSplit split = eval::SplitSamples(set->size(), ncal, static_cast<size_t>(std::max(0, o.eval_samples)));
    Progress load("loading samples", !o.quiet && !o.json);
    const int total = static_cast<int>(split.calibration.size() + split.evaluation.size());
    int done = 0;
    for (size_t i : split.calibration) {
      auto t = set->Load(i, specs, pp);
      if (!t.ok()) return Fail(kCmd, t.status().WithContext("calibration data"));
      q.calibration.push_back(std::move(*t));
      calibration_names.push_back(set->sample_name(i));
      load.Update(++done, total);
    }
    for (size_t i : split.evaluation) {
      auto t = set->Load(i, specs, pp);
      if (!t.ok()) return Fail(kCmd, t.status().WithContext("evaluation data"));
      eval_samples.push_back(std::move(*t));
      load.Update(++done, total);
    }
    data_note = set->Describe();
    if (full_integer && static_cast<int64_t>(q.calibration.size()) < o.samples)
      data_note += " (" + std::to_string(q.calibration.size()) + " available for calibration)";
  } else {
    // No data: seeded random inputs in [-1, 1] for the agreement check.
    for (int s = 0; s < 4; ++s) {
      std::vector<eval::HostTensor> sample;
      for (int i = 0; i < (*float_interp)->num_inputs(); ++i)
        sample.push_back(eval::RandomInput(eval::SpecOf(*(*float_interp)->input(i)), 1000 + s));
      eval_samples.push_back(std::move(sample));
    }
    data_note = "4 seeded random inputs in [-1,1] (give --calibration DIR for real samples)";
  }

  q.percentile = o.percentile;
  q.integer_only = o.integer_only;
  q.skip_ops = o.skip_ops;
  q.skip_tensor_regex = o.skip_tensor;
  q.per_channel = !o.per_tensor;
  q.equalize = !o.no_equalize;
  q.bias_correction = !o.no_bias_correction;
  q.outlier_factor = o.outlier_factor;
  q.dynamic_min_elements = o.min_elements;
  q.asymmetric_inputs = !o.symmetric_inputs;
  q.threads = o.threads;
  Progress cal("calibrating", !o.quiet && !o.json);
  q.progress = [&](int done, int total) { cal.Update(done, total); };

  Graph quantized = *graph;
  auto report = optimize::QuantizeModel(quantized, q);
  if (!report.ok()) return Fail(kCmd, report.status().WithContext("'" + o.input + "'"));
  auto bytes = SerializeModel(quantized);
  if (!bytes.ok()) return Fail(kCmd, bytes.status().WithContext("cannot serialize the quantized model"));

  // The output must load and run before it is written.
  auto reread = ReadModelBytes(*bytes, o.output);
  if (!reread.ok()) return Fail(kCmd, reread.status().WithContext("the quantized model does not read back"));
  const ModelSummary summary_after = SummarizeModel(*reread);
  auto qmodel = rt::Model::FromGraph(*reread);
  if (!qmodel.ok()) return Fail(kCmd, qmodel.status().WithContext("the quantized model does not load"));
  auto agreement = eval::CompareModels(*float_model, *qmodel, eval_samples, o.threads);
  if (!agreement.ok()) return Fail(kCmd, agreement.status().WithContext("the quantized model does not run"));

  Status st = WriteFileAtomically(o.output, bytes->data(), bytes->size());
  if (!st.ok()) return Fail(kCmd, st.WithContext("cannot write '" + o.output + "'"));

  const uint64_t size_after = bytes->size();
  const double ratio = size_before ? static_cast<double>(size_after) / static_cast<double>(size_before) : 0.0;
  const std::string eval_note =
      o.calibration.empty() ? data_note
                            : std::to_string(agreement->samples) + (full_integer ? " held-out samples" : " samples") +
                                  " of " + data_note;
  if (o.json) {
    nlohmann::ordered_json j;
    j["input"] = o.input;
    j["output"] = o.output;
    j["mode"] = optimize::QuantModeName(q.mode);
    j["float16_weights_read_as_float32"] = from_float16;
    j["scheme"] = summary_after.quantization.id;
    j["scheme_description"] = summary_after.quantization.description;
    j["file_size"] = {{"before", size_before}, {"after", size_after}, {"ratio", ratio}};
    j["constant_bytes_by_dtype"] = {{"before", CountListJson(summary_before.constant_bytes_by_dtype)},
                                    {"after", CountListJson(summary_after.constant_bytes_by_dtype)}};
    j["ops_by_precision"] = CountListJson(summary_after.quantization.ops_by_precision);
    j["weights_quantized"] = report->weights_quantized;
    j["sparse_weights_densified"] = report->densified;
    j["weights_kept_float"] = report->weights_kept_float;
    j["ops_quantized"] = report->ops_quantized;
    j["float_ops"] = report->float_ops;
    j["conversion_ops"] = report->conversion_ops;
    if (full_integer) {
      j["calibration"] = {{"samples", report->calibration_samples},
                          {"calibrator", optimize::CalibratorName(q.calibrator)},
                          {"data", data_note}};
      nlohmann::ordered_json outliers = nlohmann::ordered_json::array();
      for (const auto& [s, x] : report->outlier_samples)
        outliers.push_back({{"sample", s < calibration_names.size() ? calibration_names[s] : std::to_string(s)},
                            {"inflation", x}});
      j["calibration"]["outliers_left_out"] = outliers;
      j["equalized_layer_pairs"] = report->equalized_pairs;
      j["bias_corrected_layers"] = report->bias_corrected_ops;
      nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
      for (const auto& r : report->ranges)
        ranges.push_back({{"tensor", r.name}, {"min", r.min}, {"max", r.max}, {"scale", r.scale}, {"zero_point", r.zero_point}});
      j["ranges"] = ranges;
    }
    nlohmann::ordered_json outs = nlohmann::ordered_json::array();
    for (const auto& a : agreement->outputs) {
      nlohmann::ordered_json e = {{"name", a.name},
                                  {"snr_db", std::isfinite(a.snr_db) ? nlohmann::ordered_json(a.snr_db) : nlohmann::ordered_json("inf")},
                                  {"max_abs_error", a.max_abs_error}};
      if (a.classifier) e["top1_agreement"] = a.samples ? static_cast<double>(a.top1_agree) / a.samples : 0.0;
      outs.push_back(e);
    }
    j["agreement"] = {{"samples", agreement->samples}, {"data", eval_note}, {"outputs", outs}};
    PrintJson(j);
    return kExitOk;
  }

  std::cout << "edgeopt quantize: wrote " << Printable(o.output) << " (" << optimize::QuantModeName(q.mode) << ")\n";
  TextTable t;
  if (from_float16) t.AddRow({"input", "float16 weights, read as float32 (as `edgeopt dequantize` does)"});
  t.AddRow({"scheme", summary_after.quantization.description});
  t.AddRow({"file size", HumanBytes(size_before) + " -> " + HumanBytes(size_after) + " (" + Fixed(ratio, 3) + "x)"});
  t.AddRow({"weights before", CountListText(summary_before.constant_bytes_by_dtype)});
  t.AddRow({"weights after", CountListText(summary_after.constant_bytes_by_dtype)});
  std::string prec;
  for (const auto& [k, v] : summary_after.quantization.ops_by_precision) prec += (prec.empty() ? "" : ", ") + k + " " + std::to_string(v);
  t.AddRow({"ops by precision", prec});
  if (report->densified > 0)
    t.AddRow({"sparse weights", std::to_string(report->densified) +
                                    " DENSIFY of sparse constants folded into dense weights (quantized kernels take dense "
                                    "weights: left sparse, those layers would stay float)"});
  if (full_integer) {
    t.AddRow({"calibration", std::to_string(report->calibration_samples) + " samples, " +
                                 optimize::CalibratorName(q.calibrator) +
                                 (q.calibrator == optimize::Calibrator::kPercentile ? " " + Number(q.percentile) : "") +
                                 "; " + data_note});
    if (!report->outlier_samples.empty()) {
      std::string list;
      for (const auto& [s, x] : report->outlier_samples)
        list += (list.empty() ? "" : ", ") + (s < calibration_names.size() ? calibration_names[s] : "#" + std::to_string(s)) +
                " (activations " + Fixed(x, 1) + "x the median sample's)";
      t.AddRow({"outliers", std::to_string(report->outlier_samples.size()) + " calibration sample(s) left out of the ranges: " +
                                list + "; --outlier-factor 0 keeps them"});
    }
    t.AddRow({"corrections", (q.equalize ? "equalized " + std::to_string(report->equalized_pairs) + " layer pairs"
                                         : std::string("no equalization (--no-equalize)")) +
                                 ", " +
                                 (q.bias_correction ? "bias-corrected " + std::to_string(report->bias_corrected_ops) + " layers"
                                                    : std::string("no bias correction (--no-bias-correction)"))});
  } else {
    t.AddRow({"weights", std::to_string(report->weights_quantized) + " quantized, " +
                             std::to_string(report->weights_kept_float) + " kept float"});
  }
  if (agreement->samples == 0)
    t.AddRow({"vs float", "not measured: no held-out sample (every sample went to calibration; give --samples N "
                          "below the number of samples to keep some for this comparison)"});
  for (const auto& a : agreement->outputs) {
    if (agreement->samples == 0) break;
    std::string line = "'" + a.name + "': SNR " + (std::isfinite(a.snr_db) ? Fixed(a.snr_db, 1) + " dB" : "inf (identical)");
    if (a.classifier)
      line += ", top-1 agrees " + std::to_string(a.top1_agree) + "/" + std::to_string(a.samples) + " (" +
              Fixed(a.samples ? 100.0 * a.top1_agree / a.samples : 0.0, 1) + "%)";
    t.AddRow({"vs float", line});
  }
  t.AddRow({"compared on", eval_note});
  std::cout << t.Render("  ");
  if (full_integer) {
    std::cout << "\nFloat islands (" << report->float_ops.size() << ")\n";
    if (report->float_ops.empty()) std::cout << "  none: every op is integer\n";
    for (const auto& f : report->float_ops) std::cout << "  " << Printable(f) << "\n";
    std::cout << "\nConversion ops (" << report->conversion_ops.size() << ")\n";
    for (const auto& c : report->conversion_ops) std::cout << "  " << Printable(c) << "\n";
    const size_t n = report->ranges.size();
    const size_t shown = max_ranges < 0 ? n : std::min<size_t>(n, static_cast<size_t>(max_ranges));
    if (shown > 0) {
      std::cout << "\nCalibration ranges (" << (shown < n ? "first " + std::to_string(shown) + " of " : "")
                << n << " tensors" << (shown < n ? "; --ranges all lists every one" : "") << ")\n";
      TextTable r;
      r.AddRow({"tensor", "min", "max", "scale", "zero point"});
      for (size_t i = 0; i < shown; ++i) {
        const auto& x = report->ranges[i];
        r.AddRow({Printable(x.name), Number(x.min), Number(x.max), Number(x.scale), std::to_string(x.zero_point)});
      }
      std::cout << r.Render("  ");
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterQuantize(CommandSet& commands) {
  auto o = std::make_shared<QuantizeCliOptions>();
  CLI::App* sub = commands.Add("quantize", "Post-training quantization: float16, dynamic range, full integer int8 or 16x8",
                               [o] { return RunQuantize(*o); });
  sub->add_option("input", o->input, "The float .tflite model to quantize (never modified)")->required()->type_name("IN");
  sub->add_option("-o,--output", o->output, "The .tflite file to write (atomically)")->required()->type_name("OUT");
  sub->add_option("--mode", o->mode,
                  "float16 (float16 weights + DEQUANTIZE), dynamic (int8 weights, hybrid ops), int8 (full integer), "
                  "int16x8 (int16 activations, int8 weights)")
      ->required()
      ->type_name("MODE");
  sub->add_option("--calibration,--data", o->calibration,
                  "Representative samples: a folder of images or .npy files, or one .npy of N samples (e.g. a dataset "
                  "array). Required for int8/int16x8; for the other modes it is used for the comparison only")
      ->type_name("PATH");
  sub->add_option("--samples", o->samples, "Calibration samples taken from the data (default 100)")->type_name("N");
  sub->add_option("--eval-samples", o->eval_samples,
                  "Other samples (never the calibration ones) on which the result is compared with the float model "
                  "(default 100; 0 skips)")
      ->type_name("N");
  sub->add_option("--range", o->range, "Pixel values 0..255 map linearly onto LO,HI (e.g. -1,1 or 0,1)")->type_name("LO,HI");
  sub->add_option("--mean", o->mean, "Pixel normalization (p - mean) / std: one value or one per channel")->type_name("M[,M,M]");
  sub->add_option("--std", o->std, "See --mean")->type_name("S[,S,S]");
  sub->add_option("--calibrator", o->calibrator, "minmax (default), percentile, entropy (KL) or mse")->type_name("NAME");
  sub->add_option("--percentile", o->percentile, "Percentile kept by --calibrator percentile (default 99.99)")
      ->type_name("P");
  sub->add_option("--io", o->io,
                  "Model I/O after full-integer quantization: float (QUANTIZE/DEQUANTIZE at the edges, default), "
                  "int8 or uint8 (integer end to end)")
      ->type_name("TYPE");
  sub->add_flag("--integer-only", o->integer_only,
                "Fail, listing each op that cannot be quantized, instead of keeping float islands");
  sub->add_option("--skip-op", o->skip_ops, "Keep every op of this type float (repeatable), e.g. SOFTMAX")->type_name("TYPE");
  sub->add_option("--skip-tensor", o->skip_tensor, "Keep float the ops whose output name matches this regular expression")
      ->type_name("REGEX");
  sub->add_flag("--per-tensor", o->per_tensor, "One scale per weight tensor instead of per output channel (conv/depthwise)");
  sub->add_flag("--no-equalize", o->no_equalize,
                "int8/int16x8: skip cross-layer range equalization (by default each CONV_2D/DEPTHWISE_CONV_2D with a "
                "fused RELU6 -> CONV_2D/FULLY_CONNECTED pair is rescaled per channel, exactly in float, so that small "
                "channels keep their precision under the shared [0,6] activation range; only channels whose "
                "calibrated maximum stays below 3)");
  sub->add_flag("--no-bias-correction", o->no_bias_correction,
                "int8/int16x8: keep the biases as they are (by default each conv/FC bias absorbs the mean output error "
                "E[(Wq-W)x] that weight quantization causes on the calibration samples)");
  sub->add_option("--outlier-factor", o->outlier_factor,
                  "int8: a calibration sample whose activations are more than X times the median sample's "
                  "(in the upper quartile of the tensors) is left out of the ranges, so that one unrepresentative "
                  "sample (a blank image, a mask) cannot coarsen every scale; listed in the report. Needs 4 samples "
                  "or more, never drops half of them (default 4; 0 keeps every sample; int16x8 keeps them all: its "
                  "65536 levels afford the wider ranges)")
      ->type_name("X");
  sub->add_option("--min-elements", o->min_elements,
                  "dynamic: weights with fewer elements stay float (default 1024, as LiteRT)")
      ->type_name("N");
  sub->add_flag("--symmetric-inputs", o->symmetric_inputs,
                "dynamic: hybrid FULLY_CONNECTED/BATCH_MATMUL/LSTM quantize activations symmetrically (default asymmetric)");
  sub->add_option("--ranges", o->ranges, "Calibration ranges printed: a count (default 20), 'all' or 'none'")->type_name("N");
  sub->add_option("--threads", o->threads, "Threads for calibration and comparison (default 1)")->type_name("N");
  sub->add_flag("--json", o->json, "Print the report as JSON");
  sub->add_flag("--quiet", o->quiet, "No progress bar");
  sub->footer(R"HELP(The float model is run on the calibration samples; the quantized model is checked to load and run
and compared with the float model on other samples before it is written (atomically: a failure
leaves no file). A model whose weights are float16 (and nothing else quantized) is read as float32
first, as `edgeopt dequantize` would; an integer-quantized model is refused: `edgeopt dequantize`
makes it float first.

Examples:
  edgeopt quantize model.tflite -o model_fp16.tflite --mode float16
  edgeopt quantize model.tflite -o model_dr.tflite --mode dynamic
  edgeopt quantize mobilenet.tflite -o mobilenet_int8.tflite --mode int8 --calibration images/ --range -1,1 --samples 8
  edgeopt quantize lstm.tflite -o lstm_int8.tflite --mode int8 --calibration mnist/images_uint8.npy --range 0,1
  edgeopt quantize model.tflite -o edgetpu.tflite --mode int8 --calibration data/ --io int8 --integer-only)HELP");
}

}  // namespace edgeopt::cli
