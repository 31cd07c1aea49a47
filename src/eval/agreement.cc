#include "eval/agreement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "eval/image.h"
#include "eval/inputs.h"

namespace edgeopt::eval {

std::vector<double> RealValues(const rt::RtTensor& t) {
  const int64_t n = t.num_elements();
  std::vector<double> v(static_cast<size_t>(n), 0.0);
  if (!t.data) return v;
  const bool q = t.quant && !t.quant->scale.empty();
  const double scale = q ? t.scale() : 1.0, zp = q ? t.zero_point() : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double x = 0;
    switch (t.type) {
      case DType::kFloat32: x = t.data_as<float>()[i]; break;
      case DType::kFloat16: x = HalfToFloat(t.data_as<uint16_t>()[i]); break;
      case DType::kInt8: x = t.data_as<int8_t>()[i]; break;
      case DType::kUInt8: x = t.data_as<uint8_t>()[i]; break;
      case DType::kInt16: x = t.data_as<int16_t>()[i]; break;
      case DType::kInt32: x = t.data_as<int32_t>()[i]; break;
      case DType::kInt64: x = static_cast<double>(t.data_as<int64_t>()[i]); break;
      default: break;
    }
    v[static_cast<size_t>(i)] = q ? (x - zp) * scale : x;
  }
  return v;
}

namespace {

bool ClassifierShaped(const rt::Shape& s) {
  int non_unit = 0;
  int32_t classes = 0;
  for (int32_t d : s)
    if (d != 1) {
      ++non_unit;
      classes = d;
    }
  return non_unit == 1 && classes >= 2;
}

int64_t ArgMax(const std::vector<double>& v) {
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
  return best;
}

}  // namespace

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
  std::vector<double> signal(no, 0.0), noise(no, 0.0);
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
      const rt::RtTensor* b = cand->output(k);
      const std::vector<double> va = RealValues(*a), vb = RealValues(*b);
      if (va.size() != vb.size()) return InvalidArgument("output " + std::to_string(k) + " sizes differ");
      OutputAgreement& o = report.outputs[k];
      o.name = a->name();
      o.classifier = ClassifierShaped(a->shape);
      for (size_t i = 0; i < va.size(); ++i) {
        signal[k] += va[i] * va[i];
        noise[k] += (va[i] - vb[i]) * (va[i] - vb[i]);
        o.max_abs_error = std::max(o.max_abs_error, std::fabs(va[i] - vb[i]));
      }
      if (o.classifier && ArgMax(va) == ArgMax(vb)) ++o.top1_agree;
      ++o.samples;
    }
    ++report.samples;
  }
  for (int k = 0; k < no; ++k) {
    OutputAgreement& o = report.outputs[k];
    o.snr_db = noise[k] > 0 ? 10.0 * std::log10(std::max(signal[k], 1e-30) / noise[k]) : std::numeric_limits<double>::infinity();
  }
  return report;
}

// --- sample inputs and plain runs (edgeopt prune / cluster) ---

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

}  // namespace edgeopt::eval
