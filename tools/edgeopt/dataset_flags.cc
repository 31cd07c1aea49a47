#include "dataset_flags.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

namespace edgeopt::cli {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* const kDataHelp = R"(Data (--data, repeatable; NAME=PATH targets one input, PATH the next one):
  IMAGE / FILE.npy         one sample (images are resized to the input; see --range/--mean/--std)
  BATCH.npy                [N, ...] holds N samples; labels.npy beside it labels them
  FOLDER                   its images / sample .npy files (sorted, subfolders too), or its one batch .npy
  random, random:N         N seeded random samples (default 8; floats uniform in --random-range)
Labels: labels.npy beside a batch; labels.csv in the folder (FILE,LABEL); the subfolder name
(FOLDER/<class>/x.jpg); or the file name's first word ("7_0001.png"). A LABEL that is a name is
looked up in --labels (class names, one per line).)";

void AddPreprocessOptions(CLI::App* sub, PreprocessFlags* f) {
  sub->add_option("--range", f->range, "Map pixel values 0..255 onto LO,HI (e.g. 0,1 or -1,1)")->type_name("LO,HI");
  sub->add_option("--mean", f->mean, "Per-channel mean subtracted from pixels (one value or one per channel)")
      ->type_name("M[,M,M]");
  sub->add_option("--std", f->stddev, "Per-channel standard deviation pixels are divided by")->type_name("S[,S,S]");
  sub->add_option("--resize", f->resize, "How images fit the input: stretch (default) or center-crop")
      ->type_name("stretch|center-crop");
  sub->add_option("--random-range", f->random_range, "Range of random float inputs (default -1,1)")->type_name("LO,HI");
}

Expected<eval::Preprocess> ParsePreprocess(const PreprocessFlags& f) {
  eval::Preprocess pp;
  if (!f.range.empty() && (!f.mean.empty() || !f.stddev.empty()))
    return InvalidArgument("--range and --mean/--std are alternatives; give one of them");
  if (!f.range.empty()) {
    ASSIGN_OR_RETURN(pp.norm, eval::ParseRange(f.range));
  } else if (!f.mean.empty() || !f.stddev.empty()) {
    pp.norm.kind = eval::PixelNormalization::Kind::kMeanStd;
    if (!f.mean.empty()) {
      auto m = eval::ParseFloatList(f.mean);
      if (!m.ok()) return InvalidArgument("--mean: " + m.status().message());
      pp.norm.mean = *m;
    }
    if (!f.stddev.empty()) {
      auto s = eval::ParseFloatList(f.stddev);
      if (!s.ok()) return InvalidArgument("--std: " + s.status().message());
      for (float v : *s)
        if (!(v > 0)) return InvalidArgument("--std values must be positive");
      pp.norm.stddev = *s;
    }
  }
  if (!eval::ParseResizeMode(f.resize, &pp.resize))
    return InvalidArgument("--resize expects stretch or center-crop, got '" + f.resize + "'");
  auto rr = eval::ParseRange(f.random_range);
  if (!rr.ok()) return InvalidArgument("--random-range expects LO,HI with LO < HI, got '" + f.random_range + "'");
  pp.random_lo = rr->lo;
  pp.random_hi = rr->hi;
  return pp;
}

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), tty_(isatty(2) != 0), start_(NowSeconds()) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(size_t done, size_t total) {
  if (!tty_ || total == 0) return;
  const int width = 30;
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) bar += '>';
  bar.resize(width, ' ');
  const double elapsed = NowSeconds() - start_;
  char rate[64] = "";
  if (elapsed > 0 && done > 0) std::snprintf(rate, sizeof(rate), "  %.0f/s", static_cast<double>(done) / elapsed);
  std::fprintf(stderr, "\r%s [%s] %zu/%zu%s ", label_.c_str(), bar.c_str(), done, total, rate);
  std::fflush(stderr);
  shown_ = true;
}

void ProgressBar::Finish() {
  if (tty_ && shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  shown_ = false;
}

eval::Dataset LimitSamples(const eval::Dataset& d, int n) {
  if (n <= 0 || static_cast<size_t>(n) >= d.size()) return d;
  return d.Spread(static_cast<size_t>(n));
}

nlohmann::ordered_json JsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return nullptr;
  return v;
}

}  // namespace edgeopt::cli
