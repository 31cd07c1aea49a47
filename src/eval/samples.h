// Sample sets for calibration and evaluation: a folder of images, a folder of .npy files, or
// one .npy holding N stacked samples (a "dataset" such as ../shared/data/mnist/images_uint8.npy).
// Samples are addressed by index; SplitSamples picks disjoint calibration and evaluation sets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "eval/inputs.h"

namespace edgeopt::eval {

class SampleSet {
 public:
  // Opens `path` for a model with one input described by `spec`. Errors: missing or unreadable
  // path, a folder with no images or .npy files, .npy data whose shape fits no sample of the
  // input (the message gives both shapes).
  static Expected<SampleSet> Open(const std::string& path, const InputSpec& spec, const PixelNormalization& norm);

  int64_t size() const { return static_cast<int64_t>(items_.size()); }
  // Sample i as the model input (float inputs get real values; integer .npy data and images are
  // normalized with `norm`; quantized inputs are quantized with the input's parameters).
  Expected<HostTensor> Load(int64_t i) const;
  // "24 images in ../data/images", "10000 samples of ../data/mnist/images_uint8.npy".
  const std::string& description() const { return description_; }
  // Files in the folder that were not used (e.g. labels.npy), with the reason.
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  struct Stacked {
    std::string path;
    HostTensor data;           // [N, ...sample shape]
    int64_t sample_elems = 0;  // elements per sample
  };
  struct Item {
    std::string file;    // image or single-sample .npy
    int stacked = -1;    // index into stacked_, or -1
    int64_t row = 0;     // sample within the stacked array
  };
  Expected<HostTensor> FromValues(const HostTensor& src, int64_t offset, int64_t count, const std::string& what) const;

  InputSpec spec_;
  std::vector<int32_t> shape_;  // owned copy of the input shape (spec_.shape points here)
  std::shared_ptr<QuantParams> quant_;
  PixelNormalization norm_;
  std::vector<Item> items_;
  std::vector<std::shared_ptr<Stacked>> stacked_;
  std::string description_;
  std::vector<std::string> skipped_;
};

// Disjoint index sets from `total` samples, spread over the whole set (a seeded shuffle), so
// sorted datasets (MNIST is sorted by label) still give every class: the first `calibration`
// indices calibrate, the next `evaluation` evaluate (fewer if the set runs out).
struct SampleSplit {
  std::vector<int64_t> calibration;
  std::vector<int64_t> evaluation;
};
SampleSplit SplitSamples(int64_t total, int64_t calibration, int64_t evaluation, uint64_t seed = 1);

}  // namespace edgeopt::eval
