#include "eval/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>

#include "eval/audio.h"
#include "eval/npy.h"
#include "graph/builder.h"
#include "runtime/interpreter.h"

namespace edgeopt::eval {

InputSpec SpecOf(const rt::RtTensor& t) { return InputSpec{t.name(), t.type, t.shape, t.quant}; }

std::vector<InputSpec> InputSpecsOf(rt::Interpreter& interp) {
  std::vector<InputSpec> specs;
  for (int i = 0; i < interp.num_inputs(); ++i) specs.push_back(SpecOf(*interp.input(i)));
  return specs;
}

std::vector<InputSpec> InputSpecsOf(const Graph& graph) {
  std::vector<InputSpec> specs;
  const Subgraph& sg = graph.main();
  for (int32_t t : sg.inputs) {
    if (t < 0 || static_cast<size_t>(t) >= sg.tensors.size()) continue;
    const Tensor& def = sg.tensors[t];
    specs.push_back(InputSpec{def.name, def.type, def.shape, def.quant ? &*def.quant : nullptr});
  }
  return specs;
}

std::string DescribeSpec(const InputSpec& s) {
  return "input '" + s.name + "' " + std::string(DTypeName(s.type)) + rt::ShapeToString(s.shape);
}

std::pair<std::string, std::string> ParseInputFlag(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) return {"", flag};
  return {flag.substr(0, eq), flag.substr(eq + 1)};
}

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool Is8Or16BitQuantized(const InputSpec& s) {
  return (s.type == DType::kInt8 || s.type == DType::kUInt8 || s.type == DType::kInt16) && s.quant &&
         !s.quant->scale.empty();
}

bool IsPlainInteger(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16: case DType::kInt32:
    case DType::kUInt32: case DType::kInt64: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

// Range of an integer dtype, as doubles (exact for everything up to 2^53).
void IntegerRange(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kInt8: *lo = -128; *hi = 127; break;
    case DType::kUInt8: *lo = 0; *hi = 255; break;
    case DType::kInt16: *lo = -32768; *hi = 32767; break;
    case DType::kUInt16: *lo = 0; *hi = 65535; break;
    case DType::kInt32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    case DType::kUInt32: *lo = 0; *hi = 4294967295.0; break;
    case DType::kInt64: *lo = -9.2e18; *hi = 9.2e18; break;
    default: *lo = 0; *hi = 1.8e19; break;
  }
}

void StoreInteger(DType t, uint8_t* p, double v) {
  switch (t) {
    case DType::kInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case DType::kUInt8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case DType::kInt16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case DType::kUInt16: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
    case DType::kInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case DType::kUInt32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case DType::kInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case DType::kUInt64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    default: break;
  }
}

Expected<LoadedInput> LoadNpyInput(const std::string& path, const InputSpec& spec) {
  ASSIGN_OR_RETURN(HostTensor t, ReadNpy(path));
  std::vector<int32_t> shape = t.shape;
  if (shape.size() + 1 == spec.shape.size() && !spec.shape.empty() && spec.shape[0] == 1) shape.insert(shape.begin(), 1);
  if (shape != spec.shape)
    return InvalidArgument(DescribeSpec(spec) + " expects shape " + rt::ShapeToString(spec.shape) + ", but '" + path +
                           "' holds shape " + rt::ShapeToString(t.shape) + " (" + std::string(DTypeName(t.type)) + ")");
  LoadedInput in;
  in.source = path + " (.npy " + std::string(DTypeName(t.type)) + rt::ShapeToString(t.shape) + ")";
  const DType given = t.type;
  t.shape = spec.shape;
  t.name = spec.name;
  if (given == spec.type) {
    if (spec.quant && !spec.quant->scale.empty()) {
      t.scale = spec.quant->scale[0];
      t.zero_point = static_cast<int32_t>(spec.quant->zero_point.empty() ? 0 : spec.quant->zero_point[0]);
    }
    in.tensor = std::move(t);
    return in;
  }
  // Real values for a quantized or float input: quantize / convert.
  if (IsFloatType(given) && (Is8Or16BitQuantized(spec) || IsFloatType(spec.type))) {
    in.tensor = RealToTensor(t.ToFloat(), spec.shape, spec.type, spec.quant);
    in.tensor.name = spec.name;
    if (Is8Or16BitQuantized(spec)) {
      in.source += ", quantized to " + std::string(DTypeName(spec.type));
      in.notes.push_back("'" + path + "' holds real values; quantized them with the scale/zero point of " +
                         DescribeSpec(spec));
    } else {
      in.source += ", converted to " + std::string(DTypeName(spec.type));
    }
    return in;
  }
  if (IsFloatType(spec.type) && (IsPlainInteger(given) || given == DType::kBool)) {
    in.tensor = RealToTensor(t.ToFloat(), spec.shape, spec.type, nullptr);
    in.tensor.name = spec.name;
    in.source += ", converted to " + std::string(DTypeName(spec.type));
    return in;
  }
  // Integer data for a plain integer input of another width (numpy's default int64 for int32 ids).
  if (IsPlainInteger(given) && IsPlainInteger(spec.type) && !Is8Or16BitQuantized(spec)) {
    double lo = 0, hi = 0;
    IntegerRange(spec.type, &lo, &hi);
    HostTensor out;
    out.name = spec.name;
    out.type = spec.type;
    out.shape = spec.shape;
    const int64_t n = t.num_elements();
    out.data.resize(DTypeBytes(spec.type, static_cast<size_t>(n)));
    const size_t width = DTypeSize(spec.type);
    for (int64_t i = 0; i < n; ++i) {
      const double v = t.At(i);
      if (v < lo || v > hi)
        return InvalidArgument("'" + path + "' holds " + std::string(DTypeName(given)) + " value " +
                               std::to_string(static_cast<long long>(v)) + " at element " + std::to_string(i) +
                               ", out of range for " + DescribeSpec(spec));
      StoreInteger(spec.type, out.data.data() + i * width, v);
    }
    in.tensor = std::move(out);
    in.source += ", converted to " + std::string(DTypeName(spec.type));
    return in;
  }
  return InvalidArgument(DescribeSpec(spec) + " expects " + std::string(DTypeName(spec.type)) + " data, but '" + path +
                         "' holds " + std::string(DTypeName(given)) +
                         (Is8Or16BitQuantized(spec) ? " (give the raw quantized values as " +
                                                          std::string(DTypeName(spec.type)) + ", or real values as float32)"
                                                    : ""));
}

Expected<LoadedInput> LoadImageInput(const std::string& path, const InputSpec& spec, const PixelNormalization& norm) {
  const int channels = spec.shape.empty() ? 3 : (spec.shape.back() == 1 ? 1 : 3);
  ASSIGN_OR_RETURN(Image img, LoadImage(path, channels));
  auto t = ImageToTensor(img, spec.shape, spec.type, spec.quant, norm);
  if (!t.ok()) return t.status().WithContext("'" + path + "' for " + DescribeSpec(spec));
  LoadedInput in;
  in.tensor = std::move(*t);
  in.tensor.name = spec.name;
  bool is_default = false;
  const std::string conversion = DescribePixelConversion(spec.type, norm, &is_default);
  const int h = spec.shape[spec.shape.size() - 3], w = spec.shape[spec.shape.size() - 2];
  std::string size = std::to_string(img.width) + "x" + std::to_string(img.height) + " image";
  if (img.width != w || img.height != h) size += " resized to " + std::to_string(w) + "x" + std::to_string(h);
  in.source = path + " (" + size + ", " + conversion + ")";
  if (is_default && IsFloatType(spec.type))
    in.notes.push_back(DescribeSpec(spec) + ": no --mean/--std or --range given; " + conversion +
                       " (default). Pass the model's own preprocessing, e.g. --range 0,1 or --mean 127.5 --std 127.5");
  return in;
}

Expected<LoadedInput> LoadAudioInput(const std::string& path, const InputSpec& spec) {
  int64_t n = 0;
  if (spec.shape.size() == 1) n = spec.shape[0];
  if (spec.shape.size() == 2 && spec.shape[0] == 1) n = spec.shape[1];
  if (n <= 0)
    return InvalidArgument("'" + path + "': a WAV file can feed a 1-D waveform input ([N] or [1,N]); " + DescribeSpec(spec) +
                           " is not one");
  if (!IsFloatType(spec.type) && !Is8Or16BitQuantized(spec))
    return InvalidArgument("'" + path + "': a WAV file needs a float or quantized waveform input; " + DescribeSpec(spec) +
                           " is neither");
  ASSIGN_OR_RETURN(Audio audio, LoadWav(path));
  std::vector<float> samples(static_cast<size_t>(n), 0.0f);
  const size_t have = audio.samples.size();
  std::copy_n(audio.samples.begin(), std::min(have, samples.size()), samples.begin());
  LoadedInput in;
  in.tensor = RealToTensor(samples, spec.shape, spec.type, spec.quant);
  in.tensor.name = spec.name;
  auto secs = [&](size_t k) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f s", audio.sample_rate > 0 ? static_cast<double>(k) / audio.sample_rate : 0.0);
    return std::string(buf);
  };
  std::string what = path + " (" + std::to_string(audio.sample_rate) + " Hz, " + std::to_string(have) + " samples = " +
                     secs(have);
  if (have > samples.size()) {
    what += ", truncated to the first " + std::to_string(n) + " = " + secs(samples.size());
    in.notes.push_back("'" + path + "' has " + std::to_string(have) + " samples; " + DescribeSpec(spec) + " takes " +
                       std::to_string(n) + ": used the first " + std::to_string(n) + " (" + secs(samples.size()) + " at " +
                       std::to_string(audio.sample_rate) + " Hz, not resampled)");
  } else if (have < samples.size()) {
    what += ", zero-padded to " + std::to_string(n);
    in.notes.push_back("'" + path + "' has " + std::to_string(have) + " samples; " + DescribeSpec(spec) + " takes " +
                       std::to_string(n) + ": padded with " + std::to_string(samples.size() - have) +
                       " zeros at the end (not resampled)");
  }
  in.source = what + ", mono, not resampled)";
  return in;
}

}  // namespace

Expected<LoadedInput> LoadInputFile(const std::string& path, const InputSpec& spec, const PixelNormalization& norm) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return NotFound("input file '" + path + "' for " + DescribeSpec(spec) + ": no such file");
  if (std::filesystem::is_directory(status))
    return InvalidArgument("input file '" + path + "' for " + DescribeSpec(spec) + " is a directory");
  const std::string lower = Lower(path);
  if (EndsWith(lower, ".npy")) return LoadNpyInput(path, spec);
  if (IsImageFile(lower)) return LoadImageInput(path, spec, norm);
  if (IsAudioFile(lower)) return LoadAudioInput(path, spec);
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open input file '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  const size_t need = DTypeBytes(spec.type, static_cast<size_t>(rt::NumElements(spec.shape)));
  if (bytes.size() != need)
    return InvalidArgument("raw input '" + path + "' has " + std::to_string(bytes.size()) + " bytes but " + DescribeSpec(spec) +
                           " needs exactly " + std::to_string(need) + " (use .npy, an image or a .wav to get conversion)");
  LoadedInput in;
  in.tensor.name = spec.name;
  in.tensor.type = spec.type;
  in.tensor.shape = spec.shape;
  in.tensor.data = std::move(bytes);
  in.source = path + " (raw " + std::to_string(need) + " bytes)";
  return in;
}

LoadedInput RandomInputFor(const InputSpec& spec, uint64_t seed) {
  LoadedInput in;
  in.random = true;
  std::mt19937_64 rng(seed);
  HostTensor& t = in.tensor;
  t.name = spec.name;
  t.type = spec.type;
  t.shape = spec.shape;
  const size_t n = static_cast<size_t>(rt::NumElements(spec.shape));
  std::string range;
  if (IsFloatType(spec.type)) {
    t.data = RandomBytesOfType(rng, spec.type, n, -1.0, 1.0);
    range = "uniform in [-1,1]";
  } else if (Is8Or16BitQuantized(spec)) {
    t.data = RandomBytesOfType(rng, spec.type, n, -1e18, 1e18);
    range = "over the whole " + std::string(DTypeName(spec.type)) + " range";
  } else if (spec.type == DType::kBool) {
    t.data = RandomBytesOfType(rng, spec.type, n, 0, 1);
    range = "0/1";
  } else {
    t.data = RandomBytesOfType(rng, spec.type, n, 0, 9);
    range = "integers in [0,9]";
  }
  if (spec.quant && !spec.quant->scale.empty()) {
    t.scale = spec.quant->scale[0];
    t.zero_point = static_cast<int32_t>(spec.quant->zero_point.empty() ? 0 : spec.quant->zero_point[0]);
  }
  in.source = "random (seed " + std::to_string(seed) + ", " + range + ")";
  return in;
}

Expected<std::vector<std::string>> MatchInputFlags(const std::vector<std::string>& flags,
                                                   const std::vector<InputSpec>& specs) {
  std::vector<std::string> files(specs.size());
  size_t next_positional = 0;
  auto known = [&] {
    std::string s;
    for (const auto& spec : specs) s += (s.empty() ? "" : ", ") + ("'" + spec.name + "'");
    return s.empty() ? std::string("none") : s;
  };
  for (const std::string& flag : flags) {
    auto [name, file] = ParseInputFlag(flag);
    if (file.empty()) return InvalidArgument("--input " + flag + ": no file given (use --input NAME=FILE or --input FILE)");
    size_t index = specs.size();
    if (!name.empty()) {
      for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].name == name) index = i;
      if (index == specs.size()) {
        // A position given as a number is accepted too ("0=img.jpg").
        const bool numeric = name.size() < 9 && std::all_of(name.begin(), name.end(), ::isdigit);
        if (numeric && std::stoul(name) < specs.size()) index = std::stoul(name);
      }
      if (index == specs.size())
        return InvalidArgument("--input " + flag + ": the model has no input named '" + name + "' (inputs: " + known() + ")");
    } else {
      while (next_positional < specs.size() && !files[next_positional].empty()) ++next_positional;
      if (next_positional >= specs.size())
        return InvalidArgument("--input " + flag + ": more inputs given than the model has (" +
                               std::to_string(specs.size()) + ": " + known() + ")");
      index = next_positional;
    }
    if (!files[index].empty()) return InvalidArgument("input '" + specs[index].name + "' given twice");
    files[index] = file;
  }
  return files;
}

Expected<std::vector<LoadedInput>> LoadInputs(const std::vector<std::string>& files, const std::vector<InputSpec>& specs,
                                              const PixelNormalization& norm, uint64_t seed) {
  std::vector<LoadedInput> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i >= files.size() || files[i].empty()) {
      out.push_back(RandomInputFor(specs[i], seed + i));
      continue;
    }
    ASSIGN_OR_RETURN(LoadedInput in, LoadInputFile(files[i], specs[i], norm));
    out.push_back(std::move(in));
  }
  return out;
}

Status SetInterpreterInputs(rt::Interpreter& interp, const std::vector<LoadedInput>& inputs) {
  if (static_cast<int>(inputs.size()) != interp.num_inputs())
    return Internal("got " + std::to_string(inputs.size()) + " inputs for a model with " +
                    std::to_string(interp.num_inputs()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    rt::RtTensor* t = interp.input(static_cast<int>(i));
    const HostTensor& h = inputs[i].tensor;
    if (h.data.size() != t->bytes || h.type != t->type)
      return Internal("input '" + t->name() + "' needs " + std::to_string(t->bytes) + " bytes of " +
                      std::string(DTypeName(t->type)) + ", the loaded value has " + std::to_string(h.data.size()) +
                      " bytes of " + std::string(DTypeName(h.type)));
    if (!h.data.empty()) std::memcpy(t->data, h.data.data(), h.data.size());
  }
  return Status::Ok();
}

Expected<HostTensor> LoadInput(const std::string& path, const InputSpec& spec, const PixelNormalization& norm) {
  ASSIGN_OR_RETURN(LoadedInput in, LoadInputFile(path, spec, norm));
  return std::move(in.tensor);
}

HostTensor RandomInput(const InputSpec& spec, uint64_t seed, float lo, float hi) {
  if (!IsFloatType(spec.type) || (lo == -1.0f && hi == 1.0f)) return RandomInputFor(spec, seed).tensor;
  std::mt19937_64 rng(seed);
  HostTensor t;
  t.name = spec.name;
  t.type = spec.type;
  t.shape = spec.shape;
  t.data = RandomBytesOfType(rng, spec.type, static_cast<size_t>(rt::NumElements(spec.shape)), lo, hi);
  return t;
}

Expected<std::vector<HostTensor>> ResolveInputs(const std::vector<std::string>& flags, const std::vector<InputSpec>& specs,
                                                const PixelNormalization& norm, uint64_t seed,
                                                std::vector<std::string>* randomized) {
  ASSIGN_OR_RETURN(auto files, MatchInputFlags(flags, specs));
  ASSIGN_OR_RETURN(auto loaded, LoadInputs(files, specs, norm, seed));
  std::vector<HostTensor> out;
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i].random && randomized) randomized->push_back(specs[i].name);
    out.push_back(std::move(loaded[i].tensor));
  }
  return out;
}

Expected<std::vector<std::string>> ReadLabels(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFound("labels file '" + path + "': no such file");
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument("labels file '" + path + "' is a directory");
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
  k = static_cast<int>(std::clamp<int64_t>(k, 0, n));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    const double va = t.Real(a), vb = t.Real(b);
    // NaN sorts last.
    if (std::isnan(va) != std::isnan(vb)) return std::isnan(vb);
    return va != vb ? va > vb : a < b;
  });
  std::vector<TopK> out;
  for (int i = 0; i < k; ++i) out.push_back({idx[i], t.Real(idx[i]), t.At(idx[i])});
  return out;
}

}  // namespace edgeopt::eval
