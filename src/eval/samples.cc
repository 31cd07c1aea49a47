#include "eval/samples.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "eval/npy.h"

namespace edgeopt::eval {
namespace {

namespace fs = std::filesystem;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool IsNpy(const std::string& path) {
  const std::string l = Lower(path);
  return l.size() > 4 && l.compare(l.size() - 4, 4, ".npy") == 0;
}

// Shape of the input without a leading batch dimension of 1.
std::vector<int32_t> Unbatched(const std::vector<int32_t>& s) {
  if (!s.empty() && s[0] == 1) return {s.begin() + 1, s.end()};
  return s;
}

bool IsIntegerData(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kUInt16;
}

}  // namespace

Expected<SampleSet> SampleSet::Open(const std::string& path, const InputSpec& spec, const PixelNormalization& norm) {
  SampleSet set;
  set.spec_ = spec;
  set.shape_ = spec.shape;
  if (spec.quant) {
    set.quant_ = std::make_shared<QuantParams>(*spec.quant);
    set.spec_.quant = set.quant_.get();
  }
  set.norm_ = norm;
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("calibration data '" + path + "' does not exist");
  const std::vector<int32_t> sample_shape = spec.shape;
  const std::vector<int32_t> unbatched = Unbatched(spec.shape);
  const int64_t sample_elems = rt::NumElements(sample_shape);

  // A .npy either holds one sample or N stacked samples.
  auto add_npy = [&](const std::string& file, bool only_candidate) -> Status {
    auto data = ReadNpy(file);
    if (!data.ok()) {
      if (only_candidate) return data.status();
      set.skipped_.push_back(file + ": " + data.status().message());
      return Status::Ok();
    }
    const std::vector<int32_t> shape = data->shape;  // a copy: data is moved below
    if (shape == sample_shape || shape == unbatched) {
      set.items_.push_back({file, -1, 0});
      return Status::Ok();
    }
    std::vector<int32_t> rest;
    if (!shape.empty()) rest.assign(shape.begin() + 1, shape.end());
    if (!shape.empty() && (rest == unbatched || rest == sample_shape)) {
      auto st = std::make_shared<Stacked>();
      st->path = file;
      st->data = std::move(*data);
      st->sample_elems = sample_elems;
      set.stacked_.push_back(st);
      for (int32_t r = 0; r < shape[0]; ++r) set.items_.push_back({"", static_cast<int>(set.stacked_.size() - 1), r});
      return Status::Ok();
    }
    const std::string msg = "'" + file + "' holds " + rt::ShapeToString(shape) + " " + std::string(DTypeName(data->type)) +
                            ", which is neither one sample nor N samples of the model input " +
                            rt::ShapeToString(sample_shape);
    if (only_candidate) return InvalidArgument(msg);
    set.skipped_.push_back(msg);
    return Status::Ok();
  };

  if (fs::is_directory(path, ec)) {
    std::vector<std::string> images, npys;
    fs::directory_iterator it(path, ec);
    if (ec) return InvalidArgument("cannot read calibration folder '" + path + "': " + ec.message());
    for (const auto& e : it) {
      if (!e.is_regular_file(ec)) continue;
      const std::string f = e.path().string();
      if (IsImageFile(Lower(f))) images.push_back(f);
      else if (IsNpy(f)) npys.push_back(f);
    }
    std::sort(images.begin(), images.end());
    std::sort(npys.begin(), npys.end());
    if (images.empty() && npys.empty())
      return InvalidArgument("calibration folder '" + path + "' has no images (.jpg .png .bmp ...) or .npy files");
    if (!images.empty()) {
      const bool image_input = spec.shape.size() == 4 || spec.shape.size() == 3;
      if (!image_input)
        return InvalidArgument("calibration folder '" + path + "' holds images but the model input is " +
                               rt::ShapeToString(spec.shape) + ", not an image ([1,H,W,C])");
      for (const auto& f : images) set.items_.push_back({f, -1, 0});
      for (const auto& f : npys) set.skipped_.push_back(f + ": the folder's images are used");
      set.description_ = std::to_string(images.size()) + " images in " + path;
    } else {
      for (const auto& f : npys) RETURN_IF_ERROR(add_npy(f, false));
      if (set.items_.empty()) {
        std::string why;
        for (const auto& s : set.skipped_) why += "\n  " + s;
        return InvalidArgument("no .npy file in '" + path + "' fits the model input " + rt::ShapeToString(sample_shape) +
                               ":" + why);
      }
      set.description_ = std::to_string(set.items_.size()) + " samples from .npy files in " + path;
    }
  } else if (IsNpy(path)) {
    RETURN_IF_ERROR(add_npy(path, true));
    set.description_ = std::to_string(set.items_.size()) + (set.items_.size() == 1 ? " sample in " : " samples of ") + path;
  } else if (IsImageFile(Lower(path))) {
    set.items_.push_back({path, -1, 0});
    set.description_ = "1 image " + path;
  } else {
    return InvalidArgument("calibration data '" + path + "' is not a folder, an image or a .npy file");
  }
  if (set.items_.empty()) return InvalidArgument("calibration data '" + path + "' holds no samples");
  return set;
}

Expected<HostTensor> SampleSet::FromValues(const HostTensor& src, int64_t offset, int64_t count,
                                           const std::string& what) const {
  std::vector<float> v(static_cast<size_t>(count));
  const bool normalize = IsIntegerData(src.type) && norm_.kind != PixelNormalization::Kind::kAuto;
  const int channels = shape_.empty() ? 1 : shape_.back();
  for (int64_t i = 0; i < count; ++i) {
    double x = src.At(offset + i);
    if (normalize) {
      if (norm_.kind == PixelNormalization::Kind::kRange) {
        x = norm_.lo + x / 255.0 * (norm_.hi - norm_.lo);
      } else {
        const size_t c = static_cast<size_t>(i % channels);
        const double m = norm_.mean.empty() ? 0.0 : norm_.mean[norm_.mean.size() == 1 ? 0 : c % norm_.mean.size()];
        const double s = norm_.stddev.empty() ? 1.0 : norm_.stddev[norm_.stddev.size() == 1 ? 0 : c % norm_.stddev.size()];
        x = (x - m) / s;
      }
    }
    v[static_cast<size_t>(i)] = static_cast<float>(x);
  }
  if (IsIntegerData(src.type) && src.type == spec_.type && !normalize) {
    // Integer data for an integer input of the same type: the values as they are.
    HostTensor t;
    t.name = spec_.name;
    t.type = spec_.type;
    t.shape = shape_;
    const size_t bytes = DTypeBytes(src.type, static_cast<size_t>(count));
    const size_t start = DTypeBytes(src.type, static_cast<size_t>(offset));
    t.data.assign(src.data.begin() + start, src.data.begin() + start + bytes);
    return t;
  }
  if (spec_.type != DType::kFloat32 && spec_.type != DType::kInt8 && spec_.type != DType::kUInt8 &&
      spec_.type != DType::kInt16 && spec_.type != DType::kFloat16)
    return InvalidArgument(what + ": cannot convert " + std::string(DTypeName(src.type)) + " data to the model's " +
                           std::string(DTypeName(spec_.type)) + " input");
  HostTensor t = RealToTensor(v, shape_, spec_.type, spec_.quant);
  t.name = spec_.name;
  return t;
}

Expected<HostTensor> SampleSet::Load(int64_t i) const {
  if (i < 0 || i >= size()) return InvalidArgument("sample " + std::to_string(i) + " out of range");
  const Item& item = items_[static_cast<size_t>(i)];
  if (item.stacked >= 0) {
    const Stacked& st = *stacked_[static_cast<size_t>(item.stacked)];
    return FromValues(st.data, item.row * st.sample_elems, st.sample_elems,
                      "sample " + std::to_string(item.row) + " of '" + st.path + "'");
  }
  if (IsNpy(item.file)) {
    ASSIGN_OR_RETURN(HostTensor t, ReadNpy(item.file));
    if (t.num_elements() != rt::NumElements(shape_))
      return InvalidArgument("'" + item.file + "' holds " + rt::ShapeToString(t.shape) + ", the model input is " +
                             rt::ShapeToString(shape_));
    return FromValues(t, 0, t.num_elements(), "'" + item.file + "'");
  }
  return LoadInput(item.file, spec_, norm_);
}

SampleSplit SplitSamples(int64_t total, int64_t calibration, int64_t evaluation, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(total, 0)));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  SampleSplit s;
  const int64_t nc = std::min<int64_t>(calibration, total);
  const int64_t ne = std::min<int64_t>(evaluation, total - nc);
  s.calibration.assign(order.begin(), order.begin() + nc);
  s.evaluation.assign(order.begin() + nc, order.begin() + nc + ne);
  return s;
}

}  // namespace edgeopt::eval
