#include "eval/agreement.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "eval/inputs.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {
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

Status SetInputs(rt::Interpreter& it, const Sample& sample) {
  if (static_cast<int>(sample.size()) != it.num_inputs())
    return InvalidArgument("a sample has " + std::to_string(sample.size()) + " inputs, the model " +
                           std::to_string(it.num_inputs()));
  for (int i = 0; i < it.num_inputs(); ++i) {
    rt::RtTensor* t = it.input(i);
    if (sample[i].shape != t->shape) RETURN_IF_ERROR(it.ResizeInput(i, sample[i].shape));
  }
  RETURN_IF_ERROR(it.AllocateTensors());
  for (int i = 0; i < it.num_inputs(); ++i) {
    rt::RtTensor* t = it.input(i);
    const size_t need = rt::TensorBytes(t->type, t->shape);
    if (sample[i].type != t->type || sample[i].data.size() != need)
      return InvalidArgument("sample input " + std::to_string(i) + " does not match the model input '" + t->name() + "'");
    std::memcpy(t->data, sample[i].data.data(), need);
  }
  return Status::Ok();
}

HostTensor CopyOut(const rt::RtTensor& t) {
  HostTensor h;
  h.name = t.name();
  h.type = t.type;
  h.shape = t.shape;
  h.data.assign(t.data, t.data + rt::TensorBytes(t.type, t.shape));
  h.scale = t.scale();
  h.zero_point = t.zero_point();
  return h;
}

}  // namespace

bool IsClassifierOutput(const Graph& g, int output_index) {
  const Subgraph& sg = g.main();
  if (output_index < 0 || static_cast<size_t>(output_index) >= sg.outputs.size()) return false;
  int32_t t = sg.outputs[output_index];
  if (sg.tensors[t].num_elements() < 2) return false;
  for (int hops = 0; hops < 4; ++hops) {
    const int p = sg.FindProducer(t);
    if (p < 0) return false;
    const Operator& op = sg.ops[p];
    switch (op.code) {
      case tflite::BuiltinOperator_SOFTMAX:
      case tflite::BuiltinOperator_LOG_SOFTMAX:
        return true;
      case tflite::BuiltinOperator_DEQUANTIZE:
      case tflite::BuiltinOperator_QUANTIZE:
      case tflite::BuiltinOperator_RESHAPE:
      case tflite::BuiltinOperator_SQUEEZE:
        if (op.inputs.empty() || op.inputs[0] < 0) return false;
        t = op.inputs[0];
        break;
      default:
        return false;
    }
  }
  return false;
}

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

Expected<std::vector<std::vector<HostTensor>>> RunSamples(const Graph& g, const std::vector<Sample>& samples, int threads) {
  ASSIGN_OR_RETURN(auto it, MakeInterpreter(g, threads));
  std::vector<std::vector<HostTensor>> out;
  out.reserve(samples.size());
  for (const Sample& s : samples) {
    RETURN_IF_ERROR(SetInputs(*it, s));
    RETURN_IF_ERROR(it->Invoke());
    std::vector<HostTensor> o;
    for (int i = 0; i < it->num_outputs(); ++i) o.push_back(CopyOut(*it->output(i)));
    out.push_back(std::move(o));
  }
  return out;
}

Expected<AgreementReport> CompareModelOutputs(const Graph& original, const Graph& optimized,
                                              const std::vector<Sample>& samples, int threads) {
  if (original.subgraphs.empty() || optimized.subgraphs.empty()) return InvalidArgument("a model has no subgraphs");
  if (original.main().outputs.size() != optimized.main().outputs.size())
    return InvalidArgument("the models have different numbers of outputs");
  auto ref = RunSamples(original, samples, threads);
  if (!ref.ok()) return ref.status().WithContext("running the original model");
  auto opt = RunSamples(optimized, samples, threads);
  if (!opt.ok()) return opt.status().WithContext("running the optimized model");
  AgreementReport r;
  r.samples = static_cast<int>(samples.size());
  const size_t outputs = original.main().outputs.size();
  for (size_t oi = 0; oi < outputs; ++oi) {
    OutputAgreement a;
    a.name = original.main().tensors[original.main().outputs[oi]].name;
    a.classifier = IsClassifierOutput(original, static_cast<int>(oi));
    double signal = 0, noise = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
      const HostTensor& x = (*ref)[s][oi];
      const HostTensor& y = (*opt)[s][oi];
      if (x.num_elements() != y.num_elements())
        return InvalidArgument("output '" + a.name + "' has " + std::to_string(x.num_elements()) + " elements in the original, " +
                               std::to_string(y.num_elements()) + " in the optimized model");
      const std::vector<float> fx = x.ToFloat(), fy = y.ToFloat();
      for (size_t i = 0; i < fx.size(); ++i) {
        const double d = static_cast<double>(fy[i]) - fx[i];
        signal += static_cast<double>(fx[i]) * fx[i];
        noise += d * d;
        a.max_abs_error = std::max(a.max_abs_error, std::fabs(d));
      }
      if (a.classifier && !x.shape.empty()) {
        const int64_t classes = x.shape.back();
        for (int64_t row = 0; classes > 1 && (row + 1) * classes <= static_cast<int64_t>(fx.size()); ++row) {
          auto bx = fx.begin() + row * classes, by = fy.begin() + row * classes;
          const auto ax = std::max_element(bx, bx + classes) - bx;
          const auto ay = std::max_element(by, by + classes) - by;
          a.top1_agree += ax == ay;
          ++a.top1_total;
        }
      }
    }
    a.snr_db = noise == 0 ? std::numeric_limits<double>::infinity()
               : signal == 0 ? -std::numeric_limits<double>::infinity()
                             : 10.0 * std::log10(signal / noise);
    r.outputs.push_back(a);
  }
  return r;
}

}  // namespace edgeopt::eval
