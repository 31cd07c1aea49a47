// Datasets for evaluation, comparison and calibration: many samples (each one value per model
// input), optionally labelled, read lazily from what the user points at.
//
// Sources (one per --data flag; "NAME=PATH" targets an input by name, "PATH" the next input):
//   - an image file, a .npy file, or a raw file of exactly the input's bytes: one sample;
//   - a .npy file whose first dimension is a batch ([N, ...sample shape]): N samples, labelled by
//     a `labels.npy` (N integers) beside it, e.g. ../shared/data/mnist/images_uint8.npy;
//   - a folder: its images and sample .npy files (sorted by path, subfolders included), or the
//     single batch .npy it holds (plus labels.npy);
//   - "random" or "random:N": N (default 8) seeded random samples.
// Several sources must have the same number of samples (a one-sample source is reused for every
// sample); inputs without a source get seeded random values.
//
// Labels of files, first rule that applies:
//   1. a labels CSV (DatasetOptions::label_csv, or labels.csv in the folder): "FILE,LABEL" rows,
//      FILE relative to the folder (or its base name), LABEL a class index or a class name;
//   2. the subfolder the file is in (FOLDER/<class>/x.jpg): a class index, a class name from the
//      class-names file, or else the position of the subfolder name among all subfolders sorted;
//   3. the file name's first word (before '_', '-', ' ' or '.'): "7_0042.png" is class 7, and
//      with a class-names file "tabby_01.jpg" is the class named "tabby".
// Class names match case-insensitively with '_' read as a space.
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

enum class ResizeMode {
  kStretch,     // resize the whole image to the input's height and width
  kCenterCrop,  // crop the largest central region with the input's aspect ratio, then resize
};
bool ParseResizeMode(const std::string& text, ResizeMode* out);

// How a sample's stored values become model input values.
struct Preprocess {
  // Images: as in LoadInput/ImageToTensor (automatic: raw pixels for 8-bit quantized inputs, [-1,1]
  // for float inputs). uint8 .npy data is treated as pixels when a range or mean/std is given;
  // otherwise .npy values are used as they are (quantized with the input's parameters when the
  // input is integer and the data float).
  PixelNormalization norm;
  ResizeMode resize = ResizeMode::kStretch;
  // Random samples for float inputs: uniform in [lo, hi].
  float random_lo = -1.0f, random_hi = 1.0f;
};

struct DatasetOptions {
  std::string class_names;  // a labels file: one class name per line, line k = class k
  std::string label_csv;    // FILE,LABEL rows (see above)
  uint64_t seed = 1;        // random sources and random inputs
  std::string flag_name = "--data";  // the command-line flag the sources came from, for errors
};

class Dataset {
 public:
  // Opens the sources for a model with inputs `specs`.
  static Expected<Dataset> Open(const std::vector<std::string>& data_flags, const std::vector<InputSpec>& specs,
                                const DatasetOptions& options = {});
  // `count` seeded random samples for every input.
  static Dataset Random(size_t count, size_t num_inputs, uint64_t seed);

  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  // Whether every sample has a label.
  bool labelled() const;
  int label(size_t i) const;             // class index, -1 when unknown
  std::string sample_name(size_t i) const;  // "cat.bmp", "images_uint8.npy[42]", "random #3"
  const std::vector<std::string>& class_names() const { return class_names_; }
  // What was read, e.g. "10000 samples from images_uint8.npy, labels from labels.npy".
  std::string Describe() const;
  // Where labels came from ("labels.npy", "folder names", ...); empty when unlabelled.
  const std::string& label_source() const { return label_source_; }

  // The model inputs of sample i, each converted to specs[k]'s dtype and shape.
  Expected<std::vector<HostTensor>> Load(size_t i, const std::vector<InputSpec>& specs, const Preprocess& pp) const;

  // A dataset of the samples at `indices` (in that order).
  Dataset Subset(const std::vector<size_t>& indices) const;
  // `count` samples spread evenly over the dataset (all when count >= size), and the rest.
  // Spreading matters for sorted data such as the shared MNIST set.
  std::pair<Dataset, Dataset> SplitEvenly(size_t count) const;
  // At most `count` samples spread evenly over the dataset.
  Dataset Spread(size_t count) const { return SplitEvenly(count).first; }

  struct Source;

 private:
  std::vector<std::shared_ptr<const Source>> sources_;  // one per model input (null: random)
  std::vector<size_t> order_;                           // sample i -> underlying sample index
  std::vector<int> labels_;                             // per underlying sample (empty: none)
  std::vector<std::string> class_names_;
  std::string label_source_;
  std::string description_;
  uint64_t seed_ = 1;
};

// Disjoint index sets from `total` samples, spread over the whole set (a seeded shuffle), so
// sorted datasets (MNIST is sorted by label) still give every class: the first `calibration`
// indices calibrate, the next `evaluation` evaluate (fewer if the set runs out).
struct SampleSplit {
  std::vector<size_t> calibration;
  std::vector<size_t> evaluation;
};
SampleSplit SplitSamples(size_t total, size_t calibration, size_t evaluation, uint64_t seed = 1);

// Converts one stored sample (from a .npy or raw file) to a model input: shape check (a leading
// batch dimension of 1 may be missing), then dtype conversion per `pp` (see Preprocess). `what`
// names the data in errors.
Expected<HostTensor> ConvertToInput(const HostTensor& value, const InputSpec& spec, const Preprocess& pp,
                                    const std::string& what);

// Converts an input prepared for one model to what another model's input wants: same bytes when
// dtype and quantization agree, else real values re-encoded (quantized with `spec`'s parameters).
HostTensor ConvertForSpec(const HostTensor& value, const InputSpec& spec);

// Reads a class-names file and finds the class of a name (index, or -1): an integer is taken as
// the index, a name matches case-insensitively with '_' read as a space.
int ClassIndex(const std::vector<std::string>& class_names, const std::string& name);

}  // namespace edgeopt::eval
