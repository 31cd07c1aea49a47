#include "eval/inputs.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>

#include "eval/npy.h"
#include "graph/builder.h"

namespace edgeopt::eval {

InputSpec SpecOf(const rt::RtTensor& t) { return InputSpec{t.name(), t.type, t.shape, t.quant}; }

std::pair<std::string, std::string> ParseInputFlag(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) return {"", flag};
  return {flag.substr(0, eq), flag.substr(eq + 1)};
}

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Describe(const InputSpec& s) {
  return "input '" + s.name + "' " + rt::ShapeToString(s.shape) + " " + std::string(DTypeName(s.type));
}

}  // namespace

Expected<HostTensor> LoadInput(const std::string& path, const InputSpec& spec, const PixelNormalization& norm) {
  const std::string lower = Lower(path);
  if (EndsWith(lower, ".npy")) {
    ASSIGN_OR_RETURN(HostTensor t, ReadNpy(path));
    std::vector<int32_t> shape = t.shape;
    if (shape.size() + 1 == spec.shape.size() && !spec.shape.empty() && spec.shape[0] == 1) shape.insert(shape.begin(), 1);
    if (shape != spec.shape)
      return InvalidArgument("'" + path + "' holds " + rt::ShapeToString(t.shape) + " but " + Describe(spec) + " needs " +
                             rt::ShapeToString(spec.shape));
    t.shape = spec.shape;
    t.name = spec.name;
    if (t.type == spec.type) return t;
    const bool quantized_input = spec.type == DType::kInt8 || spec.type == DType::kUInt8 || spec.type == DType::kInt16;
    if (IsFloatType(t.type) && (quantized_input || IsFloatType(spec.type))) {
      HostTensor q = RealToTensor(t.ToFloat(), spec.shape, spec.type, spec.quant);
      q.name = spec.name;
      return q;
    }
    if (spec.type == DType::kFloat32 && (t.type == DType::kUInt8 || t.type == DType::kInt8 || t.type == DType::kInt32)) {
      HostTensor f = RealToTensor(t.ToFloat(), spec.shape, spec.type, nullptr);
      f.name = spec.name;
      return f;
    }
    return InvalidArgument("'" + path + "' holds " + std::string(DTypeName(t.type)) + " data but " + Describe(spec) +
                           " needs " + std::string(DTypeName(spec.type)));
  }
  if (IsImageFile(lower)) {
    const int channels = spec.shape.empty() ? 3 : (spec.shape.back() == 1 ? 1 : 3);
    ASSIGN_OR_RETURN(Image img, LoadImage(path, channels));
    auto t = ImageToTensor(img, spec.shape, spec.type, spec.quant, norm);
    if (!t.ok()) return t.status().WithContext("'" + path + "' for " + Describe(spec));
    t->name = spec.name;
    return t;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open input file '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  const size_t need = DTypeBytes(spec.type, static_cast<size_t>(rt::NumElements(spec.shape)));
  if (bytes.size() != need)
    return InvalidArgument("raw input '" + path + "' has " + std::to_string(bytes.size()) + " bytes but " + Describe(spec) +
                           " needs exactly " + std::to_string(need) + " (use .npy or an image to get conversion)");
  HostTensor t;
  t.name = spec.name;
  t.type = spec.type;
  t.shape = spec.shape;
  t.data = std::move(bytes);
  return t;
}

HostTensor RandomInput(const InputSpec& spec, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  HostTensor t;
  t.name = spec.name;
  t.type = spec.type;
  t.shape = spec.shape;
  const size_t n = static_cast<size_t>(rt::NumElements(spec.shape));
  const bool is_float = IsFloatType(spec.type);
  t.data = RandomBytesOfType(rng, spec.type, n, is_float ? lo : -1e18, is_float ? hi : 1e18);
  if (spec.quant && !spec.quant->scale.empty()) {
    t.scale = spec.quant->scale[0];
    t.zero_point = static_cast<int32_t>(spec.quant->zero_point.empty() ? 0 : spec.quant->zero_point[0]);
  }
  return t;
}

Expected<std::vector<HostTensor>> ResolveInputs(const std::vector<std::string>& flags, const std::vector<InputSpec>& specs,
                                                const PixelNormalization& norm, uint64_t seed,
                                                std::vector<std::string>* randomized) {
  std::vector<std::string> files(specs.size());
  size_t next_positional = 0;
  for (const std::string& flag : flags) {
    auto [name, file] = ParseInputFlag(flag);
    size_t index = specs.size();
    if (!name.empty()) {
      for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].name == name) index = i;
      if (index == specs.size()) {
        // A position given as a number is accepted too ("0=img.jpg").
        bool numeric = !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
        if (numeric && std::stoul(name) < specs.size()) index = std::stoul(name);
      }
      if (index == specs.size()) {
        std::string known;
        for (const auto& s : specs) known += (known.empty() ? "" : ", ") + ("'" + s.name + "'");
        return InvalidArgument("--input " + flag + ": the model has no input named '" + name + "' (inputs: " + known + ")");
      }
    } else {
      while (next_positional < specs.size() && !files[next_positional].empty()) ++next_positional;
      if (next_positional >= specs.size())
        return InvalidArgument("--input " + flag + ": more inputs given than the model has (" + std::to_string(specs.size()) + ")");
      index = next_positional;
    }
    if (!files[index].empty()) return InvalidArgument("input '" + specs[index].name + "' given twice");
    files[index] = file;
  }
  std::vector<HostTensor> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (files[i].empty()) {
      out.push_back(RandomInput(specs[i], seed + i));
      if (randomized) randomized->push_back(specs[i].name);
      continue;
    }
    ASSIGN_OR_RETURN(HostTensor t, LoadInput(files[i], specs[i], norm));
    out.push_back(std::move(t));
  }
  return out;
}

Expected<std::vector<std::string>> ReadLabels(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot open labels file '" + path + "'");
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  if (labels.empty()) return InvalidArgument("labels file '" + path + "' is empty");
  return labels;
}

std::vector<TopK> TopKOf(const HostTensor& t, int k) {
  const int64_t n = t.num_elements();
  std::vector<int> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  k = static_cast<int>(std::min<int64_t>(k, n));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    const double va = t.At(a), vb = t.At(b);
    return va != vb ? va > vb : a < b;
  });
  std::vector<TopK> out;
  for (int i = 0; i < k; ++i) out.push_back({idx[i], t.Real(idx[i])});
  return out;
}

}  // namespace edgeopt::eval
