#include "eval/accuracy.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>

#include "core/half.h"
#include "eval/workers.h"

namespace edgeopt::eval {

std::vector<float> TensorAsFloats(const rt::RtTensor& t) {
  const int64_t n = t.num_elements();
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (!t.data || n <= 0) return out;
  const QuantParams* q = t.quant;
  const bool quantized = q && !q->scale.empty() && t.type != DType::kFloat32 && t.type != DType::kFloat16;
  // Per-axis: index of the channel of element i.
  int64_t inner = 1, axis_size = 1;
  if (quantized && q->scale.size() > 1) {
    const int axis = q->quantized_dimension;
    for (int d = axis + 1; d < t.rank(); ++d) inner *= t.shape[d];
    axis_size = axis < t.rank() ? t.shape[axis] : 1;
  }
  auto raw = [&](int64_t i) -> double {
    switch (t.type) {
      case DType::kFloat32: return t.data_as<float>()[i];
      case DType::kFloat16: return HalfToFloat(t.data_as<uint16_t>()[i]);
      case DType::kFloat64: return t.data_as<double>()[i];
      case DType::kInt8: return t.data_as<int8_t>()[i];
      case DType::kUInt8: return t.data_as<uint8_t>()[i];
      case DType::kInt16: return t.data_as<int16_t>()[i];
      case DType::kInt32: return t.data_as<int32_t>()[i];
      case DType::kInt64: return static_cast<double>(t.data_as<int64_t>()[i]);
      case DType::kBool: return t.data[i] != 0;
      default: return 0;
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    double v = raw(i);
    if (quantized) {
      const size_t c = q->scale.size() > 1 ? static_cast<size_t>((i / inner) % axis_size) : 0;
      v = (v - static_cast<double>(q->zp(c))) * q->sc(c);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(v);
  }
  return out;
}

bool IsClassifierOutput(const std::vector<int32_t>& shape) {
  if (shape.empty() || shape.back() < 2) return false;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    if (shape[d] != 1) return false;
  return true;
}

Expected<std::unique_ptr<ModelRunner>> ModelRunner::Create(std::shared_ptr<const rt::Model> model, int threads,
                                                           bool preserve_all_tensors) {
  auto r = std::unique_ptr<ModelRunner>(new ModelRunner());
  r->model_ = model;
  rt::InterpreterOptions io;
  io.num_threads = threads;
  io.preserve_all_tensors = preserve_all_tensors;
  ASSIGN_OR_RETURN(r->interp_, rt::Interpreter::Create(model, io));
  RETURN_IF_ERROR(r->interp_->AllocateTensors());
  for (int i = 0; i < r->interp_->num_inputs(); ++i) r->specs_.push_back(SpecOf(*r->interp_->input(i)));
  return r;
}

Status ModelRunner::Run(const std::vector<HostTensor>& inputs, bool keep_state) {
  if (inputs.size() != static_cast<size_t>(interp_->num_inputs()))
    return InvalidArgument("the model has " + std::to_string(interp_->num_inputs()) + " inputs, got " +
                           std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    rt::RtTensor* t = interp_->input(static_cast<int>(i));
    if (t->shape != inputs[i].shape && rt::NumElements(t->shape) != inputs[i].num_elements()) {
      RETURN_IF_ERROR(interp_->ResizeInput(static_cast<int>(i), inputs[i].shape));
      RETURN_IF_ERROR(interp_->AllocateTensors());
      t = interp_->input(static_cast<int>(i));
    }
    if (t->type != inputs[i].type)
      return InvalidArgument("input '" + t->name() + "' is " + std::string(DTypeName(t->type)) + ", got " +
                             std::string(DTypeName(inputs[i].type)) + " data");
    if (t->bytes < inputs[i].data.size() || !t->data) return Internal("input buffer of '" + t->name() + "' too small");
    std::memcpy(t->data, inputs[i].data.data(), inputs[i].data.size());
  }
  // By default every sample is independent: recurrent state (LSTM/RNN variable tensors) starts
  // from its initial value, as for a single inference. Carrying it over makes the result depend
  // on the sample order, which is why keeping it is a separate, explicit mode.
  if (!keep_state) interp_->ResetVariables();
  return interp_->Invoke();
}

Expected<std::vector<InputSpec>> InputSpecsOf(std::shared_ptr<const rt::Model> model) {
  ASSIGN_OR_RETURN(auto runner, ModelRunner::Create(model));
  // The specs point at quantization parameters owned by the model's Graph, which outlives the
  // interpreter.
  return runner->input_specs();
}

std::vector<size_t> SampleOrder(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (seed == 0) return order;
  std::mt19937_64 rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

Expected<DatasetOutputs> RunDataset(std::shared_ptr<const rt::Model> model, const Dataset& data, const RunOptions& o) {
  const size_t n = data.size();
  DatasetOutputs outputs(n);
  const std::vector<size_t> order = SampleOrder(n, o.shuffle_seed);
  // A kept state is one stream through one interpreter.
  const int threads = o.keep_state ? 1 : std::max(1, o.threads);
  const int workers = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(threads), 1, std::max<size_t>(n, 1)));
  std::atomic<size_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error = Status::Ok();
  auto last_report = std::chrono::steady_clock::now();
  auto report = [&](bool final) {
    if (!o.progress) return;
    std::lock_guard<std::mutex> lock(mu);
    const auto now = std::chrono::steady_clock::now();
    if (!final && now - last_report < std::chrono::milliseconds(100)) return;
    last_report = now;
    o.progress(done.load(), n);
  };
  auto work = [&](int w) {
    auto runner = ModelRunner::Create(model);
    if (!runner.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failed.exchange(true)) first_error = runner.status();
      return;
    }
    const std::vector<InputSpec>& specs = (*runner)->input_specs();
    for (size_t k = static_cast<size_t>(w); k < n && !failed.load(); k += static_cast<size_t>(workers)) {
      const size_t i = order[k];
      auto inputs = data.Load(i, o.feed_specs ? *o.feed_specs : specs, o.pp);
      Status st = inputs.status();
      if (st.ok()) {
        if (o.feed_specs)
          for (size_t k = 0; k < inputs->size() && k < specs.size(); ++k) (*inputs)[k] = ConvertForSpec((*inputs)[k], specs[k]);
        st = (*runner)->Run(*inputs, o.keep_state);
      }
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_error = st.WithContext("sample " + std::to_string(i) + " (" + data.sample_name(i) + ")");
        return;
      }
      auto& out = outputs[i];
      out.resize(static_cast<size_t>((*runner)->num_outputs()));
      for (int k = 0; k < (*runner)->num_outputs(); ++k) out[static_cast<size_t>(k)] = (*runner)->Output(k);
      ++done;
      if (w == 0) report(false);
    }
  };
  RunWorkers(workers, work);
  if (failed.load()) return first_error;
  report(true);
  return outputs;
}

EvalResult ScoreOutputs(const DatasetOutputs& outputs, const Dataset& data, const DatasetOutputs* reference,
                        const EvalOptions& o) {
  EvalResult r;
  r.samples = outputs.size();
  r.has_labels = data.labelled() || [&] {
    for (size_t i = 0; i < data.size(); ++i)
      if (data.label(i) >= 0) return true;
    return false;
  }();
  r.has_reference = reference != nullptr;
  std::vector<ErrorAccumulator> errors;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& out = outputs[i];
    if (static_cast<size_t>(o.output) < out.size()) {
      const auto& scores = out[static_cast<size_t>(o.output)];
      if (r.has_labels && data.label(i) >= 0) r.classification.Add(scores, data.label(i) + o.label_offset);
    }
    if (!reference) continue;
    const auto& ref = (*reference)[i];
    if (errors.size() < out.size()) errors.resize(out.size());
    for (size_t k = 0; k < out.size() && k < ref.size(); ++k) errors[k].Add(ref[k], out[k]);
    if (static_cast<size_t>(o.output) < out.size() && static_cast<size_t>(o.output) < ref.size() &&
        ref[static_cast<size_t>(o.output)].size() >= 2) {
      r.classifier = true;
      r.agreement.Add(ref[static_cast<size_t>(o.output)], out[static_cast<size_t>(o.output)]);
    }
  }
  for (const auto& e : errors) r.output_errors.push_back(e.Finish());
  return r;
}

Expected<EvalResult> Evaluate(std::shared_ptr<const rt::Model> model, const Dataset& data, const EvalOptions& o,
                              std::shared_ptr<const rt::Model> reference, EvalResult* reference_result) {
  RunOptions run = o.run;
  std::vector<InputSpec> ref_specs;
  DatasetOutputs ref_out;
  if (reference) {
    ASSIGN_OR_RETURN(ref_specs, InputSpecsOf(reference));
    run.feed_specs = &ref_specs;
    RunOptions ref_run = run;
    ref_run.progress = nullptr;
    ASSIGN_OR_RETURN(ref_out, RunDataset(reference, data, ref_run));
    if (reference_result) *reference_result = ScoreOutputs(ref_out, data, nullptr, o);
  }
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(DatasetOutputs out, RunDataset(model, data, run));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EvalResult r = ScoreOutputs(out, data, reference ? &ref_out : nullptr, o);
  r.seconds = secs;
  return r;
}

}  // namespace edgeopt::eval
