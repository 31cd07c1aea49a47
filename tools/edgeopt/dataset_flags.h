// Options shared by the commands that read datasets (compare, eval, optimize): where the samples
// come from (--data), how stored values become input values (--range, --mean/--std, --resize),
// labels, and a progress bar on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "eval/dataset.h"

namespace edgeopt::cli {

struct PreprocessFlags {
  std::string range;  // "-1,1"
  std::string mean;   // "127.5" or "123.7,116.3,103.5"
  std::string stddev;
  std::string resize = "stretch";
  std::string random_range = "-1,1";
};

// Adds --range, --mean, --std, --resize, --random-range.
void AddPreprocessOptions(CLI::App* sub, PreprocessFlags* f);
Expected<eval::Preprocess> ParsePreprocess(const PreprocessFlags& f);

// Help text describing --data sources (for command footers).
extern const char* const kDataHelp;

// A one-line progress bar on stderr (only when stderr is a terminal): "label [=====>    ] 42/100".
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void Update(size_t done, size_t total);
  void Finish();

 private:
  std::string label_;
  bool tty_ = false;
  bool shown_ = false;
  double start_ = 0;
};

// Limits a dataset to `n` samples spread evenly over it (n <= 0: all).
eval::Dataset LimitSamples(const eval::Dataset& d, int n);

// JSON number or null for infinities/NaN.
nlohmann::ordered_json JsonNumber(double v);

}  // namespace edgeopt::cli
