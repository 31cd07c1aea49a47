// What the model-shrinking commands (prune, cluster) report in common: file sizes raw / gzip -9 /
// zstd -19 before and after, and agreement with the original on sample inputs; plus the shared
// flags that choose those samples and the --json FILE output.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/text_format.h"
#include "eval/agreement.h"
#include "graph/graph.h"
#include "optimize/compression.h"

namespace edgeopt::cli {

struct AgreementFlags {
  std::vector<std::string> samples;  // files or folders; empty: seeded random inputs
  int count = 8;                     // random samples
  std::string range;                 // pixel range for images ("-1,1"), float range of random inputs
  int threads = 1;
};
void AddAgreementFlags(CLI::App* sub, AgreementFlags& flags);
// Checks the flag values (usage errors): "" or the problem.
std::string AgreementFlagsProblem(const AgreementFlags& flags);

// The agreement report and where its samples came from.
struct Agreement {
  eval::AgreementReport report;
  std::string inputs;  // "8 seeded random input(s), floats in [-1, 1]", "24 file(s) from DIR, ..."
};

// Runs both graphs on the samples. Failures are returned, not fatal: the caller reports them.
Expected<Agreement> MeasureAgreement(const Graph& original, const Graph& optimized, const AgreementFlags& flags);

// The usage problem ("" when none) of the weight-selection flags prune and cluster share:
// --scope REGEX, --skip-op TYPE (an op with weights), --min-params N, and the agreement flags.
std::string WeightSelectionProblem(const std::string& scope, const std::vector<std::string>& skip_ops,
                                   int64_t min_params, const AgreementFlags& agreement);

// What follows a transformation of `original` into `optimized`: serialize, measure the file sizes
// before and after, read the bytes back (what is compared is what is written), measure agreement
// with the original on them, then write `output` atomically. Errors name `what` ("pruned") and
// leave no file; an agreement that could not be measured is reported, not fatal.
struct WrittenModel {
  optimize::CompressedSizes before, after;
  Expected<Agreement> agreement;
};
Expected<WrittenModel> WriteOptimizedModel(const Graph& original, const Graph& optimized, const std::string& output,
                                           const AgreementFlags& flags, const std::string& what);

// Sizes of the model file as read (its mapped bytes; re-serialized when it has none).
Expected<optimize::CompressedSizes> InputSizes(const Graph& original);

// Table rows "raw / gzip -9 / zstd -19: before, after, ratio".
std::string SizeTable(const optimize::CompressedSizes& before, const optimize::CompressedSizes& after,
                      const std::string& indent);
nlohmann::ordered_json SizesJson(const optimize::CompressedSizes& before, const optimize::CompressedSizes& after);

// "8 seeded random inputs: 'scores' SNR 24.1 dB, top-1 8/8 (100%)" (one line per output).
std::string AgreementText(const Agreement& a, const std::string& indent);

// The text report prune and cluster print after "wrote FILE": their summary table, the file
// sizes, the agreement (or why it was not measured), the per-layer table and the tensors left out.
void PrintShrinkReport(const TextTable& summary, const WrittenModel& written, const TextTable& layers,
                       const std::vector<std::string>& skipped);
nlohmann::ordered_json AgreementJson(const Agreement& a);

// Writes `j` to FILE atomically ("-": stdout).
Status WriteJson(const std::string& path, const nlohmann::ordered_json& j);

// "50.0%"
std::string Pct(double fraction);
// "[64,3,3,32]"
std::string ShapeText(const std::vector<int32_t>& shape);

}  // namespace edgeopt::cli
