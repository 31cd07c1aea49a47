#include "eval/dataset.h"

#include <algorithm>
#include <random>
#include <numeric>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "eval/npy.h"

namespace edgeopt::eval {

namespace fs = std::filesystem;

struct Dataset::Source {
  enum class Kind { kFiles, kNpyBatch };
  Kind kind = Kind::kFiles;
  std::string given;               // the path as the user gave it
  std::vector<std::string> files;  // kFiles: one sample per file
  std::vector<std::string> display_names;
  HostTensor batch;                // kNpyBatch: [N, ...sample]
  std::string batch_name;
  size_t count = 0;
  std::vector<int> labels;         // per sample, -1 unknown (empty: none at all)
  std::string label_source;
};

bool ParseResizeMode(const std::string& text, ResizeMode* out) {
  if (text == "stretch" || text == "bilinear") *out = ResizeMode::kStretch;
  else if (text == "center-crop" || text == "crop") *out = ResizeMode::kCenterCrop;
  else return false;
  return true;
}

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string NormalizeClassName(std::string s) {
  s = Lower(std::move(s));
  for (char& c : s)
    if (c == '_' || c == '-') c = ' ';
  // Trim.
  const size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool IsNpy(const std::string& path) {
  const std::string l = Lower(path);
  return l.size() > 4 && l.compare(l.size() - 4, 4, ".npy") == 0;
}

std::string ShapeText(const std::vector<int32_t>& s) { return rt::ShapeToString(s); }

int64_t Elements(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t d : s) n *= d;
  return n;
}

// Whether a stored shape can feed an input: equal, equal after adding a leading 1, or the same
// number of elements.
bool ShapeFits(const std::vector<int32_t>& stored, const std::vector<int32_t>& input) {
  if (stored == input) return true;
  std::vector<int32_t> with_batch = stored;
  with_batch.insert(with_batch.begin(), 1);
  if (with_batch == input) return true;
  return Elements(stored) == Elements(input);
}

// Whether a .npy of `shape` is a batch of samples for `input` (its first dimension is the batch).
bool IsBatchFor(const std::vector<int32_t>& shape, const std::vector<int32_t>& input) {
  if (shape.empty()) return false;
  if (shape == input) return false;
  std::vector<int32_t> with_batch = shape;
  with_batch.insert(with_batch.begin(), 1);
  if (with_batch == input) return false;
  const std::vector<int32_t> sample(shape.begin() + 1, shape.end());
  if (sample == input) return true;
  std::vector<int32_t> sample_batch = sample;
  sample_batch.insert(sample_batch.begin(), 1);
  if (sample_batch == input) return true;
  // Same element count per sample, different layout: a batch only if the whole does not fit.
  return Elements(shape) != Elements(input) && Elements(sample) == Elements(input);
}

Expected<std::vector<int>> ReadIntegerNpy(const std::string& path, size_t expect) {
  ASSIGN_OR_RETURN(HostTensor t, ReadNpy(path));
  if (IsFloatType(t.type) || t.type == DType::kBool)
    return InvalidArgument("labels '" + path + "' hold " + std::string(DTypeName(t.type)) + " values; expected integers");
  if (static_cast<size_t>(t.num_elements()) != expect)
    return InvalidArgument("labels '" + path + "' hold " + std::to_string(t.num_elements()) + " values for " +
                           std::to_string(expect) + " samples");
  std::vector<int> out(expect);
  for (size_t i = 0; i < expect; ++i) out[i] = static_cast<int>(t.At(static_cast<int64_t>(i)));
  return out;
}

// FILE,LABEL rows. Returns key (as written, and its base name) -> label text.
Expected<std::map<std::string, std::string>> ReadLabelCsv(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot open labels CSV '" + path + "'");
  std::map<std::string, std::string> out;
  std::string line;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t comma = line.find(',');
    if (comma == std::string::npos)
      return InvalidArgument("labels CSV '" + path + "' line " + std::to_string(line_no) + ": expected FILE,LABEL");
    std::string file = line.substr(0, comma), label = line.substr(comma + 1);
    auto trim = [](std::string& s) {
      while (!s.empty() && (s.back() == ' ' || s.back() == '"')) s.pop_back();
      while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.erase(s.begin());
    };
    trim(file);
    trim(label);
    if (line_no == 1 && (Lower(file) == "file" || Lower(file) == "filename" || Lower(file) == "path" ||
                         Lower(file) == "image"))
      continue;  // header
    out[file] = label;
    out.emplace(fs::path(file).filename().string(), label);
  }
  return out;
}

}  // namespace

int ClassIndex(const std::vector<std::string>& class_names, const std::string& name) {
  if (AllDigits(name)) return std::stoi(name);
  const std::string want = NormalizeClassName(name);
  if (want.empty()) return -1;
  for (size_t i = 0; i < class_names.size(); ++i)
    if (NormalizeClassName(class_names[i]) == want) return static_cast<int>(i);
  return -1;
}

namespace {

// Labels for a list of files under `root` (see dataset.h for the rules).
Status LabelFiles(Dataset::Source& src, const std::string& root, const std::vector<std::string>& class_names,
                  const std::string& label_csv, std::vector<std::string>* discovered_classes) {
  const size_t n = src.files.size();
  std::vector<int> labels(n, -1);
  std::string csv = label_csv;
  if (csv.empty() && !root.empty() && fs::exists(fs::path(root) / "labels.csv")) csv = (fs::path(root) / "labels.csv").string();
  if (!csv.empty()) {
    ASSIGN_OR_RETURN(auto rows, ReadLabelCsv(csv));
    int found = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string rel = root.empty() ? src.files[i] : fs::relative(src.files[i], root).string();
      auto it = rows.find(rel);
      if (it == rows.end()) it = rows.find(fs::path(src.files[i]).filename().string());
      if (it == rows.end()) continue;
      labels[i] = ClassIndex(class_names, it->second);
      if (labels[i] < 0)
        return InvalidArgument("labels CSV '" + csv + "': label '" + it->second + "' of '" + it->first +
                               "' is neither a class index nor a class name" +
                               (class_names.empty() ? " (give the class names with --labels)" : " in the labels file"));
      ++found;
    }
    if (found > 0) {
      src.labels = std::move(labels);
      src.label_source = fs::path(csv).filename().string();
      return Status::Ok();
    }
  }
  // Subfolder names.
  if (!root.empty()) {
    std::vector<std::string> folder(n);
    bool all_in_folders = n > 0;
    std::set<std::string> names;
    for (size_t i = 0; i < n; ++i) {
      const fs::path rel = fs::relative(src.files[i], root);
      auto it = rel.begin();
      if (std::distance(rel.begin(), rel.end()) < 2) {
        all_in_folders = false;
        break;
      }
      folder[i] = it->string();
      names.insert(folder[i]);
    }
    if (all_in_folders) {
      const std::vector<std::string> sorted(names.begin(), names.end());
      bool numeric = std::all_of(sorted.begin(), sorted.end(), AllDigits);
      for (size_t i = 0; i < n; ++i) {
        if (numeric) {
          labels[i] = std::stoi(folder[i]);
        } else if (!class_names.empty()) {
          labels[i] = ClassIndex(class_names, folder[i]);
          if (labels[i] < 0)
            return InvalidArgument("folder '" + folder[i] + "' under '" + root + "' is not a class in the labels file");
        } else {
          labels[i] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), folder[i]) - sorted.begin());
        }
      }
      if (!numeric && class_names.empty() && discovered_classes) *discovered_classes = sorted;
      src.labels = std::move(labels);
      src.label_source = "folder names";
      return Status::Ok();
    }
  }
  // File names.
  int found = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string stem = fs::path(src.files[i]).stem().string();
    int label = -1;
    if (!class_names.empty()) label = ClassIndex(class_names, stem);
    if (label < 0) {
      const size_t cut = stem.find_first_of("_- .");
      const std::string word = stem.substr(0, cut);
      if (AllDigits(word)) label = std::stoi(word);
      else if (!class_names.empty()) label = ClassIndex(class_names, word);
    }
    labels[i] = label;
    found += label >= 0;
  }
  if (found == static_cast<int>(n) && n > 0) {
    src.labels = std::move(labels);
    src.label_source = "file names";
  }
  return Status::Ok();
}

Expected<std::shared_ptr<Dataset::Source>> OpenBatchNpy(const std::string& path, HostTensor t, const std::string& given) {
  auto src = std::make_shared<Dataset::Source>();
  src->kind = Dataset::Source::Kind::kNpyBatch;
  src->given = given;
  src->count = static_cast<size_t>(t.shape[0]);
  src->batch = std::move(t);
  src->batch_name = fs::path(path).filename().string();
  const fs::path labels = fs::path(path).parent_path() / "labels.npy";
  if (fs::exists(labels) && fs::path(path).filename() != "labels.npy") {
    ASSIGN_OR_RETURN(src->labels, ReadIntegerNpy(labels.string(), src->count));
    src->label_source = "labels.npy";
  }
  return src;
}

bool IsSampleFile(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name == "labels.npy" || name.empty() || name[0] == '.') return false;
  return IsImageFile(name) || IsNpy(name);
}

}  // namespace

Expected<Dataset> Dataset::Open(const std::vector<std::string>& data_flags, const std::vector<InputSpec>& specs,
                                const DatasetOptions& options) {
  const std::string& flag_name = options.flag_name;  // names the flag in errors
  Dataset d;
  d.seed_ = options.seed;
  d.sources_.assign(specs.size(), nullptr);
  if (!options.class_names.empty()) {
    ASSIGN_OR_RETURN(d.class_names_, ReadLabels(options.class_names));
  }
  size_t random_count = 0;
  size_t next_positional = 0;
  std::vector<std::string> described;
  for (const std::string& flag : data_flags) {
    auto [name, path] = ParseInputFlag(flag);
    // "random" / "random:N" for all inputs.
    if (name.empty() && (path == "random" || path.rfind("random:", 0) == 0)) {
      random_count = 8;
      if (path.size() > 7) {
        const std::string n = path.substr(7);
        if (!AllDigits(n) || std::stoi(n) < 1) return InvalidArgument(flag_name + " " + flag + ": expected random:N with N >= 1");
        random_count = static_cast<size_t>(std::stoi(n));
      }
      described.push_back(std::to_string(random_count) + " seeded random samples");
      continue;
    }
    size_t k = specs.size();
    if (!name.empty()) {
      for (size_t i = 0; i < specs.size(); ++i)
        if (specs[i].name == name) k = i;
      if (k == specs.size() && AllDigits(name) && static_cast<size_t>(std::stoi(name)) < specs.size())
        k = static_cast<size_t>(std::stoi(name));
      if (k == specs.size()) {
        std::string known;
        for (const auto& s : specs) known += (known.empty() ? "'" : ", '") + s.name + "'";
        return InvalidArgument(flag_name + " " + flag + ": the model has no input named '" + name + "' (inputs: " + known + ")");
      }
    } else {
      while (next_positional < specs.size() && d.sources_[next_positional]) ++next_positional;
      if (next_positional >= specs.size())
        return InvalidArgument(flag_name + " " + flag + ": more data sources than the model has inputs (" +
                               std::to_string(specs.size()) + ")");
      k = next_positional;
    }
    if (d.sources_[k]) return InvalidArgument(flag_name + ": input '" + specs[k].name + "' given twice");
    const InputSpec& spec = specs[k];
    std::error_code ec;
    if (!fs::exists(path, ec)) return NotFound(flag_name + ": '" + path + "' does not exist");
    std::shared_ptr<Source> src;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it->is_regular_file(ec) && IsSampleFile(it->path())) files.push_back(it->path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) return InvalidArgument(flag_name + ": folder '" + path + "' holds no images or .npy files");
      // One .npy that is a batch for this input: that is the dataset.
      if (files.size() == 1 && IsNpy(files[0])) {
        ASSIGN_OR_RETURN(HostTensor t, ReadNpy(files[0]));
        if (IsBatchFor(t.shape, spec.shape)) {
          ASSIGN_OR_RETURN(src, OpenBatchNpy(files[0], std::move(t), path));
        }
      }
      if (!src) {
        src = std::make_shared<Source>();
        src->given = path;
        src->files = std::move(files);
        src->count = src->files.size();
        std::vector<std::string> discovered;
        RETURN_IF_ERROR(LabelFiles(*src, path, d.class_names_, options.label_csv, &discovered));
        if (!discovered.empty() && d.class_names_.empty()) d.class_names_ = discovered;
      }
    } else if (IsNpy(path)) {
      ASSIGN_OR_RETURN(HostTensor t, ReadNpy(path));
      if (IsBatchFor(t.shape, spec.shape)) {
        ASSIGN_OR_RETURN(src, OpenBatchNpy(path, std::move(t), path));
      } else {
        if (!ShapeFits(t.shape, spec.shape))
          return InvalidArgument(flag_name + ": '" + path + "' holds " + ShapeText(t.shape) + ", which is neither one sample nor a batch of samples for input '" +
                                 spec.name + "' " + ShapeText(spec.shape));
        src = std::make_shared<Source>();
        src->given = path;
        src->files = {path};
        src->count = 1;
      }
    } else {
      src = std::make_shared<Source>();
      src->given = path;
      src->files = {path};
      src->count = 1;
      RETURN_IF_ERROR(LabelFiles(*src, "", d.class_names_, options.label_csv, nullptr));
    }
    std::string what = std::to_string(src->count) + (src->count == 1 ? " sample from '" : " samples from '") + path + "'";
    d.sources_[k] = std::move(src);
    described.push_back(what + (specs.size() > 1 ? " for input '" + spec.name + "'" : ""));
  }
  // Sample count: every multi-sample source must agree.
  size_t count = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    const auto& s = d.sources_[k];
    if (!s || s->count == 1) continue;
    if (count != 0 && s->count != count)
      return InvalidArgument(flag_name + " sources hold different numbers of samples (" + std::to_string(count) + " and " +
                             std::to_string(s->count) + " for input '" + specs[k].name + "')");
    count = s->count;
  }
  if (random_count > 0) {
    if (count != 0 && count != random_count)
      return InvalidArgument(flag_name + " random:" + std::to_string(random_count) + " disagrees with the " + std::to_string(count) +
                             " samples of the other sources");
    count = random_count;
  }
  if (count == 0) {
    bool any = false;
    for (const auto& s : d.sources_) any = any || s;
    count = any ? 1 : 0;
  }
  if (count == 0) return InvalidArgument(flag_name + ": no samples");
  d.order_.resize(count);
  for (size_t i = 0; i < count; ++i) d.order_[i] = i;
  for (const auto& s : d.sources_) {
    if (s && !s->labels.empty() && s->count == count) {
      d.labels_ = s->labels;
      d.label_source_ = s->label_source;
      break;
    }
  }
  for (const auto& w : described) d.description_ += (d.description_.empty() ? "" : "; ") + w;
  if (!d.label_source_.empty()) d.description_ += ", labels from " + d.label_source_;
  return d;
}

Dataset Dataset::Random(size_t count, size_t num_inputs, uint64_t seed) {
  Dataset d;
  d.seed_ = seed;
  d.sources_.assign(num_inputs, nullptr);
  d.order_.resize(count);
  for (size_t i = 0; i < count; ++i) d.order_[i] = i;
  d.description_ = std::to_string(count) + " seeded random samples (seed " + std::to_string(seed) + ")";
  return d;
}

bool Dataset::labelled() const {
  if (labels_.empty() || order_.empty()) return false;
  for (size_t u : order_)
    if (labels_[u] < 0) return false;
  return true;
}

int Dataset::label(size_t i) const { return labels_.empty() ? -1 : labels_[order_[i]]; }

std::string Dataset::sample_name(size_t i) const {
  const size_t u = order_[i];
  for (const auto& s : sources_) {
    if (!s) continue;
    if (s->kind == Source::Kind::kNpyBatch) return s->batch_name + "[" + std::to_string(s->count == 1 ? 0 : u) + "]";
    return fs::path(s->files[s->count == 1 ? 0 : u]).filename().string();
  }
  return "random #" + std::to_string(u);
}

std::string Dataset::Describe() const {
  if (order_.size() == 0) return "no samples";
  return description_;
}

Dataset Dataset::Subset(const std::vector<size_t>& indices) const {
  Dataset d = *this;
  d.order_.clear();
  for (size_t i : indices) d.order_.push_back(order_.at(i));
  d.description_ = std::to_string(d.order_.size()) + " of " + description_;
  return d;
}

std::pair<Dataset, Dataset> Dataset::SplitEvenly(size_t count) const {
  const size_t n = order_.size();
  std::vector<char> pick(n, 0);
  if (count >= n) {
    std::fill(pick.begin(), pick.end(), 1);
  } else {
    for (size_t i = 0; i < count; ++i) pick[static_cast<size_t>((static_cast<double>(i) + 0.5) * n / count)] = 1;
  }
  std::vector<size_t> a, b;
  for (size_t i = 0; i < n; ++i) (pick[i] ? a : b).push_back(i);
  return {Subset(a), Subset(b)};
}

namespace {

Image CenterCrop(const Image& img, int out_w, int out_h) {
  const double want = static_cast<double>(out_w) / out_h;
  int w = img.width, h = img.height;
  if (static_cast<double>(w) / h > want) w = std::max(1, static_cast<int>(h * want + 0.5));
  else h = std::max(1, static_cast<int>(w / want + 0.5));
  if (w == img.width && h == img.height) return img;
  const int x0 = (img.width - w) / 2, y0 = (img.height - h) / 2;
  Image out;
  out.width = w;
  out.height = h;
  out.channels = img.channels;
  out.pixels.resize(static_cast<size_t>(w) * h * img.channels);
  for (int y = 0; y < h; ++y) {
    const uint8_t* src = &img.pixels[(static_cast<size_t>(y0 + y) * img.width + x0) * img.channels];
    std::copy(src, src + static_cast<size_t>(w) * img.channels, &out.pixels[static_cast<size_t>(y) * w * img.channels]);
  }
  return out;
}

Expected<HostTensor> LoadImageInput(const std::string& path, const InputSpec& spec, const Preprocess& pp) {
  const int channels = spec.shape.empty() ? 3 : (spec.shape.back() == 1 ? 1 : 3);
  ASSIGN_OR_RETURN(Image img, LoadImage(path, channels));
  if (pp.resize == ResizeMode::kCenterCrop && spec.shape.size() >= 3) {
    const size_t r = spec.shape.size();
    img = CenterCrop(img, spec.shape[r - 2], spec.shape[r - 3]);
  }
  auto t = ImageToTensor(img, spec.shape, spec.type, spec.quant, pp.norm);
  if (!t.ok()) return t.status().WithContext("'" + path + "' for input '" + spec.name + "'");
  return t;
}

bool IsQuantizedType(DType t) { return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16; }

}  // namespace

Expected<HostTensor> ConvertToInput(const HostTensor& value, const InputSpec& spec, const Preprocess& pp,
                                    const std::string& what) {
  if (!ShapeFits(value.shape, spec.shape))
    return InvalidArgument(what + " holds " + ShapeText(value.shape) + " but input '" + spec.name + "' needs " +
                           ShapeText(spec.shape));
  const bool pixels = value.type == DType::kUInt8 && pp.norm.kind != PixelNormalization::Kind::kAuto;
  if (pixels) {
    const PixelNormalization& n = pp.norm;
    const int channels = spec.shape.empty() ? 1 : std::max(1, spec.shape.back());
    std::vector<float> real(static_cast<size_t>(value.num_elements()));
    for (size_t i = 0; i < real.size(); ++i) {
      const float p = value.data[i];
      if (n.kind == PixelNormalization::Kind::kRange) {
        real[i] = n.lo + p / 255.0f * (n.hi - n.lo);
      } else {
        const size_t ch = i % static_cast<size_t>(channels);
        const float m = n.mean.empty() ? 0.0f : n.mean[n.mean.size() == 1 ? 0 : ch % n.mean.size()];
        const float s = n.stddev.empty() ? 1.0f : n.stddev[n.stddev.size() == 1 ? 0 : ch % n.stddev.size()];
        real[i] = (p - m) / s;
      }
    }
    if (IsQuantizedType(spec.type) && (!spec.quant || spec.quant->scale.empty()))
      return InvalidArgument("input '" + spec.name + "' is " + std::string(DTypeName(spec.type)) +
                             " without quantization parameters to convert " + what + " with");
    HostTensor t = RealToTensor(real, spec.shape, spec.type, spec.quant);
    t.name = spec.name;
    return t;
  }
  if (value.type == spec.type) {
    HostTensor t = value;
    t.shape = spec.shape;
    t.name = spec.name;
    return t;
  }
  // uint8 data for an int8 input without a normalization: the LiteRT raw-pixel convention.
  if (value.type == DType::kUInt8 && spec.type == DType::kInt8) {
    HostTensor t = value;
    t.type = DType::kInt8;
    t.shape = spec.shape;
    t.name = spec.name;
    for (auto& b : t.data) b = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(b) - 128));
    return t;
  }
  const bool value_numeric = IsFloatType(value.type) || value.type == DType::kInt8 || value.type == DType::kUInt8 ||
                             value.type == DType::kInt16 || value.type == DType::kInt32 || value.type == DType::kInt64 ||
                             value.type == DType::kUInt16 || value.type == DType::kUInt32;
  const bool spec_numeric = IsFloatType(spec.type) || IsQuantizedType(spec.type) || spec.type == DType::kInt32;
  if (value_numeric && spec_numeric) {
    if (IsQuantizedType(spec.type) && (!spec.quant || spec.quant->scale.empty()) && IsFloatType(value.type))
      return InvalidArgument("input '" + spec.name + "' is " + std::string(DTypeName(spec.type)) +
                             " without quantization parameters to convert the float values of " + what + " with");
    HostTensor t = RealToTensor(value.ToFloat(), spec.shape, spec.type, IsQuantizedType(spec.type) ? spec.quant : nullptr);
    t.name = spec.name;
    return t;
  }
  return InvalidArgument(what + " holds " + std::string(DTypeName(value.type)) + " data but input '" + spec.name + "' needs " +
                         std::string(DTypeName(spec.type)));
}

HostTensor ConvertForSpec(const HostTensor& value, const InputSpec& spec) {
  const float spec_scale = spec.quant && !spec.quant->scale.empty() ? spec.quant->scale[0] : 0.0f;
  const int32_t spec_zp = spec.quant && !spec.quant->zero_point.empty() ? static_cast<int32_t>(spec.quant->zero_point[0]) : 0;
  const bool spec_q = IsQuantizedType(spec.type) && spec_scale != 0;
  const bool same = value.type == spec.type && (!spec_q || (value.scale == spec_scale && value.zero_point == spec_zp));
  if (same || !(IsFloatType(spec.type) || spec_q)) {
    HostTensor t = value;
    t.shape = spec.shape;
    t.name = spec.name;
    return t;
  }
  HostTensor t = RealToTensor(value.ToFloat(), spec.shape, spec.type, spec_q ? spec.quant : nullptr);
  t.name = spec.name;
  return t;
}

Expected<std::vector<HostTensor>> Dataset::Load(size_t i, const std::vector<InputSpec>& specs, const Preprocess& pp) const {
  if (i >= order_.size()) return InvalidArgument("sample " + std::to_string(i) + " out of range");
  if (specs.size() != sources_.size())
    return InvalidArgument("the dataset was opened for " + std::to_string(sources_.size()) + " inputs, the model has " +
                           std::to_string(specs.size()));
  const size_t u = order_[i];
  std::vector<HostTensor> out;
  out.reserve(specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    const InputSpec& spec = specs[k];
    const auto& s = sources_[k];
    HostTensor t;
    if (!s) {
      t = RandomInput(spec, seed_ + u * 7919 + k, pp.random_lo, pp.random_hi);
    } else if (s->kind == Source::Kind::kNpyBatch) {
      const size_t j = s->count == 1 ? 0 : u;
      HostTensor one;
      one.type = s->batch.type;
      one.shape.assign(s->batch.shape.begin() + 1, s->batch.shape.end());
      const size_t bytes = DTypeBytes(one.type, static_cast<size_t>(one.num_elements()));
      one.data.assign(s->batch.data.begin() + j * bytes, s->batch.data.begin() + (j + 1) * bytes);
      ASSIGN_OR_RETURN(t, ConvertToInput(one, spec, pp, "'" + s->batch_name + "' sample " + std::to_string(j)));
    } else {
      const std::string& file = s->files[s->count == 1 ? 0 : u];
      if (IsImageFile(file)) {
        ASSIGN_OR_RETURN(t, LoadImageInput(file, spec, pp));
      } else if (IsNpy(file)) {
        ASSIGN_OR_RETURN(HostTensor v, ReadNpy(file));
        ASSIGN_OR_RETURN(t, ConvertToInput(v, spec, pp, "'" + file + "'"));
      } else {
        ASSIGN_OR_RETURN(t, LoadInput(file, spec, pp.norm));
      }
    }
    t.name = spec.name;
    if (spec.quant && !spec.quant->scale.empty() && IsQuantizedType(spec.type)) {
      t.scale = spec.quant->scale[0];
      t.zero_point = spec.quant->zero_point.empty() ? 0 : static_cast<int32_t>(spec.quant->zero_point[0]);
    }
    out.push_back(std::move(t));
  }
  return out;
}

SampleSplit SplitSamples(size_t total, size_t calibration, size_t evaluation, uint64_t seed) {
  std::vector<size_t> order(total);
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  SampleSplit s;
  const size_t nc = std::min(calibration, total);
  const size_t ne = std::min(evaluation, total - nc);
  s.calibration.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(nc));
  s.evaluation.assign(order.begin() + static_cast<std::ptrdiff_t>(nc), order.begin() + static_cast<std::ptrdiff_t>(nc + ne));
  return s;
}

}  // namespace edgeopt::eval
