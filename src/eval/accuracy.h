// Running a model over a dataset and scoring it: top-1/top-5 accuracy against labels (task
// "classify") and agreement with a reference model (any task: top-k agreement for classifier
// outputs, RMSE/SNR/cosine for every output). Samples are spread over worker threads, each with
// its own Interpreter sharing one Model.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/dataset.h"
#include "eval/metrics.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

// Real values of a runtime tensor: dequantized (per tensor or per axis) when it has a scale,
// float16 decoded, integers as numbers.
std::vector<float> TensorAsFloats(const rt::RtTensor& t);

// A classifier output: at least 2 values and every dimension but the last 1 ([1,K], [K], [1,1,K]).
bool IsClassifierOutput(const std::vector<int32_t>& shape);

// One interpreter plus helpers to feed HostTensors and read real-valued results.
class ModelRunner {
 public:
  static Expected<std::unique_ptr<ModelRunner>> Create(std::shared_ptr<const rt::Model> model, int threads = 1,
                                                       bool preserve_all_tensors = false);
  const std::vector<InputSpec>& input_specs() const { return specs_; }
  // Copies the inputs in (resizing an input whose shape differs) and invokes. Recurrent state
  // (variable tensors) starts from its initial value unless `keep_state`: then it carries over
  // from the previous Run, as in an app streaming samples through one interpreter.
  Status Run(const std::vector<HostTensor>& inputs, bool keep_state = false);
  int num_outputs() const { return interp_->num_outputs(); }
  std::vector<float> Output(int k) const { return TensorAsFloats(*interp_->output(k)); }
  // Any tensor of the main subgraph (needs preserve_all_tensors for intermediates).
  const rt::RtTensor& Tensor(int32_t index) const { return *interp_->main().tensor(index); }
  rt::Interpreter& interpreter() { return *interp_; }
  const rt::Model& model() const { return *model_; }

 private:
  std::shared_ptr<const rt::Model> model_;
  std::unique_ptr<rt::Interpreter> interp_;
  std::vector<InputSpec> specs_;
};

// Specs of a model's inputs (creates a throw-away interpreter).
Expected<std::vector<InputSpec>> InputSpecsOf(std::shared_ptr<const rt::Model> model);

struct RunOptions {
  Preprocess pp;
  int threads = 1;  // samples run in parallel, one single-threaded interpreter each
  // Inputs for this model are converted from the inputs prepared for `feed_specs` (when set),
  // so that two models with different input dtypes see the same real values.
  const std::vector<InputSpec>* feed_specs = nullptr;
  // (done, total), called from one thread at a time, at most every 100 ms and at the end.
  std::function<void(size_t, size_t)> progress;
  // Streaming models (LSTM/RNN state in variable tensors): carry the state from one sample to
  // the next instead of resetting it per sample. All samples then run as one stream, in order,
  // on one interpreter (`threads` is not used).
  bool keep_state = false;
  // Run the samples in a seeded random order (0: data order). Results stay indexed by sample;
  // only what a kept state carries over depends on the order.
  uint64_t shuffle_seed = 0;
};

// The order RunDataset visits n samples in: 0..n-1, or a permutation fixed by `seed` (the same
// on every platform: Fisher-Yates over std::mt19937_64).
std::vector<size_t> SampleOrder(size_t n, uint64_t seed);

// Outputs of every sample: outputs[sample][output] = real values.
using DatasetOutputs = std::vector<std::vector<std::vector<float>>>;

Expected<DatasetOutputs> RunDataset(std::shared_ptr<const rt::Model> model, const Dataset& data, const RunOptions& o);

struct EvalResult {
  size_t samples = 0;
  // Against labels (when the data is labelled).
  bool has_labels = false;
  ClassificationAccumulator classification;
  // Against a reference model's outputs (when given).
  bool has_reference = false;
  bool classifier = false;                  // agreement uses `output`
  AgreementAccumulator agreement;
  std::vector<ErrorStats> output_errors;    // per model output
  double seconds = 0;                       // wall time of the model's run (excluding the reference's)
};

struct EvalOptions {
  RunOptions run;
  int output = 0;        // output holding class scores
  int label_offset = 0;  // added to labels (1 for ImageNet models whose class 0 is "background")
};

// Scores precomputed outputs: labels from `data` when labelled, agreement with `reference` when
// non-null (same sample order).
EvalResult ScoreOutputs(const DatasetOutputs& outputs, const Dataset& data, const DatasetOutputs* reference,
                        const EvalOptions& o);

// Runs `model` (and `reference`, when given) over `data` and scores it.
Expected<EvalResult> Evaluate(std::shared_ptr<const rt::Model> model, const Dataset& data, const EvalOptions& o,
                              std::shared_ptr<const rt::Model> reference = nullptr, EvalResult* reference_result = nullptr);

}  // namespace edgeopt::eval
