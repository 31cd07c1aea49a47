#include "eval/agreement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstring>

#include "eval/accuracy.h"
#include "eval/image.h"
#include "eval/inputs.h"
#include "eval/metrics.h"

namespace edgeopt::eval {

Expected<AgreementReport> CompareModels(std::shared_ptr<const rt::Model> reference, std::shared_ptr<const rt::Model> candidate,
                                        const std::vector<std::vector<HostTensor>>& samples, int threads) {
  rt::InterpreterOptions io;
  io.num_threads = threads;
  ASSIGN_OR_RETURN(auto ref, rt::Interpreter::Create(reference, io));
  ASSIGN_OR_RETURN(auto cand, rt::Interpreter::Create(candidate, io));
  if (ref->num_inputs() != cand->num_inputs() || ref->num_outputs() != cand->num_outputs())
    return InvalidArgument("the models have different numbers of inputs or outputs");
  AgreementReport report;
  const int no = ref->num_outputs();
  std::vector<ErrorAccumulator> errors(static_cast<size_t>(no));
  std::vector<AgreementAccumulator> agreement(static_cast<size_t>(no));
  report.outputs.resize(no);
  for (const auto& sample : samples) {
    if (static_cast<int>(sample.size()) != ref->num_inputs())
      return InvalidArgument("a sample has " + std::to_string(sample.size()) + " inputs; the model has " +
                             std::to_string(ref->num_inputs()));
    for (size_t i = 0; i < sample.size(); ++i) {
      rt::RtTensor* a = ref->input(static_cast<int>(i));
      if (sample[i].data.size() != a->bytes || sample[i].type != a->type)
        return InvalidArgument("sample input " + std::to_string(i) + " does not match the model input " +
                               rt::ShapeToString(a->shape));
      std::memcpy(a->data, sample[i].data.data(), a->bytes);
      rt::RtTensor* b = cand->input(static_cast<int>(i));
      if (b->type == a->type) {
        std::memcpy(b->data, sample[i].data.data(), b->bytes);
      } else {
        const std::vector<float> real = sample[i].ToFloat();
        HostTensor conv = RealToTensor(real, b->shape, b->type, b->quant);
        if (conv.data.size() != b->bytes) return InvalidArgument("cannot convert a sample to the candidate's input");
        std::memcpy(b->data, conv.data.data(), b->bytes);
      }
    }
    ref->ResetVariables();
    cand->ResetVariables();
    RETURN_IF_ERROR_CTX(ref->Invoke(), "reference model");
    RETURN_IF_ERROR_CTX(cand->Invoke(), "transformed model");
    for (int k = 0; k < no; ++k) {
      const rt::RtTensor* a = ref->output(k);
      const std::vector<float> va = TensorAsFloats(*a), vb = TensorAsFloats(*cand->output(k));
      if (va.size() != vb.size()) return InvalidArgument("output " + std::to_string(k) + " sizes differ");
      OutputAgreement& o = report.outputs[k];
      o.name = a->name();
      o.classifier = IsClassifierOutput(a->shape);
      errors[k].Add(va, vb);
      if (o.classifier) agreement[k].Add(va, vb);
      ++o.samples;
    }
    ++report.samples;
  }
  for (int k = 0; k < no; ++k) {
    OutputAgreement& o = report.outputs[k];
    const ErrorStats e = errors[k].Finish();
    o.snr_db = e.snr_db;
    o.max_abs_error = e.max_abs;
    o.top1_agree = agreement[k].top1_count();
  }
  return report;
}

// --- sample inputs (edgeopt prune / cluster) ---

namespace {

Expected<std::unique_ptr<rt::Interpreter>> MakeInterpreter(const Graph& g, int threads) {
  ASSIGN_OR_RETURN(auto model, rt::Model::FromGraph(g));
  rt::InterpreterOptions o;
  o.num_threads = threads;
  return rt::Interpreter::Create(model, o);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Expected<std::vector<Sample>> MakeSamples(const Graph& g, const SampleOptions& o, std::string* description) {
  ASSIGN_OR_RETURN(auto it, MakeInterpreter(g, 1));
  std::vector<InputSpec> specs;
  for (int i = 0; i < it->num_inputs(); ++i) specs.push_back(SpecOf(*it->input(i)));
  if (specs.empty()) return InvalidArgument("the model has no inputs");
  std::vector<std::string> files;
  std::string folder;
  namespace fs = std::filesystem;
  for (const std::string& p : o.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const std::string name = e.path().string();
        if (e.is_regular_file() && (IsImageFile(Lower(name)) || Lower(name).ends_with(".npy"))) found.push_back(name);
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) return InvalidArgument("--samples: no image or .npy files in '" + p + "'");
      files.insert(files.end(), found.begin(), found.end());
      folder = p;
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      return NotFound("--samples: '" + p + "' does not exist");
    }
  }
  std::vector<Sample> samples;
  auto random_input = [&](size_t input, uint64_t k) {
    return RandomInput(specs[input], o.seed * 1000003 + k * 31 + input, o.random_lo, o.random_hi);
  };
  if (!files.empty()) {
    for (size_t f = 0; f < files.size(); ++f) {
      Sample s;
      auto first = LoadInput(files[f], specs[0], o.norm);
      if (!first.ok()) return first.status().WithContext("--samples");
      s.push_back(std::move(*first));
      for (size_t i = 1; i < specs.size(); ++i) s.push_back(random_input(i, f));
      samples.push_back(std::move(s));
    }
    if (description)
      *description = std::to_string(files.size()) + " file(s)" +
                     (folder.empty() || o.paths.size() != 1 ? "" : " from " + folder) +
                     (IsImageFile(Lower(files[0])) ? ", " + o.norm.Describe() : "");
  } else {
    for (int k = 0; k < o.random_count; ++k) {
      Sample s;
      for (size_t i = 0; i < specs.size(); ++i) s.push_back(random_input(i, static_cast<uint64_t>(k)));
      samples.push_back(std::move(s));
    }
    if (description) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%d seeded random input(s), floats in [%g, %g]", o.random_count, o.random_lo,
                    o.random_hi);
      *description = buf;
    }
  }
  return samples;
}

}  // namespace edgeopt::eval
