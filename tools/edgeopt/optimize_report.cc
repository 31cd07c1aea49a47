#include "optimize_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <regex>

#include "cli_util.h"
#include "format/mapped_file.h"
#include "format/reader.h"
#include "format/writer.h"
#include "optimize/weight_selection.h"
#include "runtime/interpreter.h"

namespace edgeopt::cli {

void AddAgreementFlags(CLI::App* sub, AgreementFlags& f) {
  sub->add_option("--samples", f.samples,
                  "Inputs for the agreement check: image or .npy files, or folders of them (first model input); "
                  "default: seeded random inputs")
      ->type_name("PATH")
      ->allow_extra_args(false);
  sub->add_option("--num-samples", f.count, "Number of seeded random inputs when --samples is not given (default 8)")
      ->type_name("N");
  sub->add_option("--range", f.range,
                  "Pixel range for image samples, e.g. 0,1 or -1,1 or 0,255 (default -1,1); also the range of random "
                  "float inputs")
      ->type_name("LO,HI");
  sub->add_option("--threads", f.threads, "Threads for running the models in the agreement check (default 1)")
      ->type_name("N");
}

std::string AgreementFlagsProblem(const AgreementFlags& f) {
  if (f.count < 0 || f.count > 100000) return "--num-samples must be between 0 and 100000, got " + std::to_string(f.count);
  if (f.threads < 1 || f.threads > 256) return "--threads must be between 1 and 256, got " + std::to_string(f.threads);
  if (!f.range.empty()) {
    auto r = eval::ParseRange(f.range);
    if (!r.ok()) return "--range: " + r.status().message();
  }
  return "";
}

Expected<Agreement> MeasureAgreement(const Graph& original, const Graph& optimized, const AgreementFlags& f) {
  eval::SampleOptions so;
  so.paths = f.samples;
  so.random_count = f.count;
  if (!f.range.empty()) {
    ASSIGN_OR_RETURN(so.norm, eval::ParseRange(f.range));
    if (so.norm.kind == eval::PixelNormalization::Kind::kRange) {
      so.random_lo = so.norm.lo;
      so.random_hi = so.norm.hi;
    }
  }
  Agreement a;
  ASSIGN_OR_RETURN(auto samples, eval::MakeSamples(original, so, &a.inputs));
  ASSIGN_OR_RETURN(auto ref, rt::Model::FromGraph(original));
  ASSIGN_OR_RETURN(auto opt, rt::Model::FromGraph(optimized));
  ASSIGN_OR_RETURN(a.report, eval::CompareModels(ref, opt, samples, f.threads));
  return a;
}

std::string WeightSelectionProblem(const std::string& scope, const std::vector<std::string>& skip_ops,
                                   int64_t min_params, const AgreementFlags& agreement) {
  if (min_params < 0) return "--min-params must be >= 0";
  if (!scope.empty()) {
    try {
      std::regex check(scope);
    } catch (const std::regex_error& e) {
      return "--scope: invalid regular expression '" + scope + "': " + e.what();
    }
  }
  const auto& known = optimize::WeightOpNames();
  for (const auto& op : skip_ops) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return "--skip-op: '" + op + "' is not an op with weights (one of " + list + ")";
    }
  }
  return AgreementFlagsProblem(agreement);
}

Expected<WrittenModel> WriteOptimizedModel(const Graph& original, const Graph& optimized, const std::string& output,
                                           const AgreementFlags& flags, const std::string& what) {
  auto bytes = SerializeModel(optimized);
  if (!bytes.ok()) return bytes.status().WithContext("cannot serialize the " + what + " model");
  ASSIGN_OR_RETURN(auto before, InputSizes(original));
  const optimize::CompressedSizes after = optimize::MeasureCompression(*bytes);
  auto written = ReadModelBytes(*bytes, output);
  if (!written.ok()) return written.status().WithContext("the " + what + " model does not read back");
  WrittenModel result{before, after, MeasureAgreement(original, *written, flags)};
  Status st = WriteFileAtomically(output, bytes->data(), bytes->size());
  if (!st.ok()) return st.WithContext("cannot write '" + output + "'");
  return result;
}

Expected<optimize::CompressedSizes> InputSizes(const Graph& original) {
  if (original.source) return optimize::MeasureCompression(original.source->bytes());
  ASSIGN_OR_RETURN(auto bytes, SerializeModel(original));
  return optimize::MeasureCompression(bytes);
}

namespace {

std::string Ratio(size_t before, size_t after) {
  if (before == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", static_cast<double>(after) / static_cast<double>(before));
  return buf;
}

std::string Db(double db) {
  if (std::isinf(db)) return db > 0 ? "identical" : "-inf dB";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f dB", db);
  return buf;
}

}  // namespace

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string ShapeText(const std::vector<int32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string SizeTable(const optimize::CompressedSizes& b, const optimize::CompressedSizes& a, const std::string& indent) {
  TextTable t({"file size", "before", "after", "after/before"});
  t.AlignRight(1);
  t.AlignRight(2);
  t.AlignRight(3);
  auto row = [&](const char* name, size_t x, size_t y) {
    t.AddRow({name, GroupDigits(static_cast<int64_t>(x)), GroupDigits(static_cast<int64_t>(y)), Ratio(x, y)});
  };
  row("raw", b.raw, a.raw);
  row("gzip -9", b.gzip, a.gzip);
  row("zstd -19", b.zstd, a.zstd);
  return t.Render(indent);
}

nlohmann::ordered_json SizesJson(const optimize::CompressedSizes& b, const optimize::CompressedSizes& a) {
  nlohmann::ordered_json j;
  auto one = [](size_t x, size_t y) {
    nlohmann::ordered_json o;
    o["before"] = x;
    o["after"] = y;
    o["ratio"] = x ? static_cast<double>(y) / static_cast<double>(x) : 0.0;
    return o;
  };
  j["raw"] = one(b.raw, a.raw);
  j["gzip"] = one(b.gzip, a.gzip);
  j["zstd"] = one(b.zstd, a.zstd);
  return j;
}

std::string AgreementText(const Agreement& a, const std::string& indent) {
  const eval::AgreementReport& r = a.report;
  std::string s = indent + "on " + a.inputs + "\n";
  for (const auto& o : r.outputs) {
    s += indent + "output '" + Printable(o.name) + "': SNR " + Db(o.snr_db);
    char buf[96];
    std::snprintf(buf, sizeof buf, ", max |error| %.3g", o.max_abs_error);
    s += buf;
    if (o.classifier && o.samples > 0) {
      std::snprintf(buf, sizeof buf, ", top-1 agreement %lld/%lld (%.1f%%)", static_cast<long long>(o.top1_agree),
                    static_cast<long long>(o.samples), 100.0 * static_cast<double>(o.top1_agree) / o.samples);
      s += buf;
    }
    s += "\n";
  }
  return s;
}

nlohmann::ordered_json AgreementJson(const Agreement& a) {
  const eval::AgreementReport& r = a.report;
  nlohmann::ordered_json j;
  j["samples"] = r.samples;
  j["inputs"] = a.inputs;
  j["outputs"] = nlohmann::ordered_json::array();
  for (const auto& o : r.outputs) {
    nlohmann::ordered_json x;
    x["name"] = o.name;
    // JSON has no infinity: identical outputs give null.
    if (std::isfinite(o.snr_db)) x["snr_db"] = o.snr_db;
    else x["snr_db"] = nullptr;
    x["max_abs_error"] = o.max_abs_error;
    x["classifier"] = o.classifier;
    if (o.classifier) {
      x["top1_agree"] = o.top1_agree;
      x["top1_total"] = o.samples;
    }
    j["outputs"].push_back(x);
  }
  return j;
}

Status WriteJson(const std::string& path, const nlohmann::ordered_json& j) {
  const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (path == "-") {
    std::cout << text << std::flush;
    return Status::Ok();
  }
  return WriteFileAtomically(path, text.data(), text.size());
}

void PrintShrinkReport(const TextTable& summary, const WrittenModel& written, const TextTable& layers,
                       const std::vector<std::string>& skipped) {
  std::cout << summary.Render("  ") << "\n" << SizeTable(written.before, written.after, "  ") << "\n";
  std::cout << "  agreement with the original (edgeopt runtime)\n";
  if (written.agreement.ok()) {
    std::cout << AgreementText(*written.agreement, "    ");
  } else {
    std::cout << "    not measured: " << Printable(written.agreement.status().message()) << "\n";
  }
  std::cout << "\n" << layers.Render("  ");
  if (!skipped.empty()) {
    std::cout << "\n  left out:\n";
    for (const auto& s : skipped) std::cout << "    " << Printable(s) << "\n";
  }
}

}  // namespace edgeopt::cli
