#include "eval/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/half.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_HDR
#define STBI_NO_PSD
#define STBI_NO_PIC
#define STBI_NO_PNM
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace edgeopt::eval {

bool IsImageFile(const std::string& path) {
  std::string ext = path.substr(path.find_last_of('.') + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "bmp" || ext == "gif" || ext == "tga";
}

Expected<Image> LoadImage(const std::string& path, int channels) {
  if (channels != 1 && channels != 3) return InvalidArgument("images can be loaded with 1 or 3 channels, not " + std::to_string(channels));
  int w = 0, h = 0, n = 0;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return NotFound("cannot open image '" + path + "'");
  unsigned char* data = stbi_load_from_file(f, &w, &h, &n, channels);
  std::fclose(f);
  if (!data) return InvalidArgument("cannot decode image '" + path + "': " + stbi_failure_reason());
  Image img;
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.pixels.assign(data, data + static_cast<size_t>(w) * h * channels);
  stbi_image_free(data);
  return img;
}

Image ResizeBilinear(const Image& src, int width, int height) {
  if (src.width == width && src.height == height) return src;
  Image dst;
  dst.width = width;
  dst.height = height;
  dst.channels = src.channels;
  dst.pixels.resize(static_cast<size_t>(width) * height * src.channels);
  const float sy = static_cast<float>(src.height) / height, sx = static_cast<float>(src.width) / width;
  for (int y = 0; y < height; ++y) {
    const float fy = std::clamp((y + 0.5f) * sy - 0.5f, 0.0f, static_cast<float>(src.height - 1));
    const int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, src.height - 1);
    const float wy = fy - y0;
    for (int x = 0; x < width; ++x) {
      const float fx = std::clamp((x + 0.5f) * sx - 0.5f, 0.0f, static_cast<float>(src.width - 1));
      const int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, src.width - 1);
      const float wx = fx - x0;
      for (int c = 0; c < src.channels; ++c) {
        auto at = [&](int yy, int xx) { return static_cast<float>(src.pixels[(static_cast<size_t>(yy) * src.width + xx) * src.channels + c]); };
        const float v = (at(y0, x0) * (1 - wx) + at(y0, x1) * wx) * (1 - wy) + (at(y1, x0) * (1 - wx) + at(y1, x1) * wx) * wy;
        dst.pixels[(static_cast<size_t>(y) * width + x) * src.channels + c] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return dst;
}

std::string PixelNormalization::Describe() const {
  std::ostringstream s;
  auto list = [&](const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  };
  switch (kind) {
    case Kind::kAuto: s << "automatic"; break;
    case Kind::kRange: s << "range [" << lo << "," << hi << "]"; break;
    case Kind::kMeanStd:
      s << "mean ";
      list(mean);
      s << " std ";
      list(stddev);
      break;
  }
  return s.str();
}

std::string DescribePixelConversion(DType type, const PixelNormalization& norm, bool* is_default) {
  const bool auto_norm = norm.kind == PixelNormalization::Kind::kAuto;
  if (is_default) *is_default = auto_norm;
  if (auto_norm && type == DType::kUInt8) return "raw pixels 0..255";
  if (auto_norm && type == DType::kInt8) return "raw pixels - 128 (-128..127)";
  PixelNormalization n = norm;
  if (auto_norm) n.kind = PixelNormalization::Kind::kRange;  // lo/hi default to [-1, 1]
  std::string s = n.kind == PixelNormalization::Kind::kRange ? "pixels mapped to " + n.Describe() : n.Describe();
  if (type == DType::kUInt8 || type == DType::kInt8 || type == DType::kInt16) s += ", then quantized with the input's scale";
  return s;
}

Expected<std::vector<float>> ParseFloatList(const std::string& text) {
  std::vector<float> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      out.push_back(std::stof(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (...) {
      return InvalidArgument("'" + text + "' is not a comma-separated list of numbers");
    }
  }
  if (out.empty()) return InvalidArgument("empty number list");
  return out;
}

Expected<PixelNormalization> ParseRange(const std::string& text) {
  ASSIGN_OR_RETURN(auto v, ParseFloatList(text));
  if (v.size() != 2 || !(v[0] < v[1])) return InvalidArgument("--range wants LO,HI with LO < HI (e.g. -1,1 or 0,1), got '" + text + "'");
  PixelNormalization n;
  n.kind = PixelNormalization::Kind::kRange;
  n.lo = v[0];
  n.hi = v[1];
  return n;
}

Expected<PixelNormalization> NormalizationFromFlags(const std::string& mean, const std::string& stddev,
                                                    const std::string& range) {
  if (!range.empty() && (!mean.empty() || !stddev.empty()))
    return InvalidArgument("give either --range or --mean/--std, not both");
  if (!range.empty()) return ParseRange(range);
  PixelNormalization n;
  if (mean.empty() && stddev.empty()) return n;
  if (mean.empty() || stddev.empty()) return InvalidArgument("--mean and --std go together");
  n.kind = PixelNormalization::Kind::kMeanStd;
  auto m = ParseFloatList(mean);
  if (!m.ok()) return m.status().WithContext("--mean");
  auto s = ParseFloatList(stddev);
  if (!s.ok()) return s.status().WithContext("--std");
  for (float v : *s)
    if (v == 0) return InvalidArgument("--std must not be 0");
  n.mean = *m;
  n.stddev = *s;
  return n;
}

HostTensor RealToTensor(const std::vector<float>& values, const std::vector<int32_t>& shape, DType type,
                        const QuantParams* quant) {
  HostTensor t;
  t.type = type;
  t.shape = shape;
  const size_t n = values.size();
  t.data.resize(DTypeBytes(type, n));
  const float scale = quant && !quant->scale.empty() ? quant->scale[0] : 1.0f;
  const int64_t zp = quant && !quant->zero_point.empty() ? quant->zero_point[0] : 0;
  t.scale = quant && !quant->scale.empty() ? scale : 0;
  t.zero_point = static_cast<int32_t>(zp);
  auto q = [&](float x, long lo, long hi) { return std::clamp(std::lround(x / scale) + static_cast<long>(zp), lo, hi); };
  for (size_t i = 0; i < n; ++i) {
    switch (type) {
      case DType::kFloat32: std::memcpy(t.data.data() + 4 * i, &values[i], 4); break;
      case DType::kFloat16: { uint16_t h = FloatToHalf(values[i]); std::memcpy(t.data.data() + 2 * i, &h, 2); break; }
      case DType::kUInt8: t.data[i] = static_cast<uint8_t>(q(values[i], 0, 255)); break;
      case DType::kInt8: t.data[i] = static_cast<uint8_t>(static_cast<int8_t>(q(values[i], -128, 127))); break;
      case DType::kInt16: { int16_t v = static_cast<int16_t>(q(values[i], -32768, 32767)); std::memcpy(t.data.data() + 2 * i, &v, 2); break; }
      case DType::kInt32: { int32_t v = static_cast<int32_t>(std::lround(values[i])); std::memcpy(t.data.data() + 4 * i, &v, 4); break; }
      default: break;
    }
  }
  return t;
}

Expected<HostTensor> ImageToTensor(const Image& img_in, const std::vector<int32_t>& shape, DType type,
                                   const QuantParams* quant, const PixelNormalization& norm) {
  if (shape.size() != 4 && shape.size() != 3)
    return InvalidArgument("an image input needs a [1,H,W,C] or [H,W,C] tensor; this input is rank " + std::to_string(shape.size()));
  const int off = shape.size() == 4 ? 1 : 0;
  if (off && shape[0] != 1) return InvalidArgument("image inputs need batch 1, the input has batch " + std::to_string(shape[0]));
  const int h = shape[off], w = shape[off + 1], c = shape[off + 2];
  if (c != 1 && c != 3) return InvalidArgument("image inputs need 1 or 3 channels, the input has " + std::to_string(c));
  if (type != DType::kFloat32 && type != DType::kUInt8 && type != DType::kInt8 && type != DType::kInt16 && type != DType::kFloat16)
    return Unsupported("cannot feed an image to a " + std::string(DTypeName(type)) + " input");
  Image img = img_in;
  if (img.channels != c) {
    Image conv;
    conv.width = img.width;
    conv.height = img.height;
    conv.channels = c;
    conv.pixels.resize(static_cast<size_t>(img.width) * img.height * c);
    for (size_t p = 0; p < static_cast<size_t>(img.width) * img.height; ++p) {
      if (c == 1) {
        const uint8_t* s = &img.pixels[p * 3];
        conv.pixels[p] = static_cast<uint8_t>((77 * s[0] + 150 * s[1] + 29 * s[2]) >> 8);
      } else {
        for (int k = 0; k < 3; ++k) conv.pixels[p * 3 + k] = img.pixels[p];
      }
    }
    img = std::move(conv);
  }
  if (norm.kind == PixelNormalization::Kind::kMeanStd) {
    for (const auto* list : {&norm.mean, &norm.stddev}) {
      if (list->size() > 1 && list->size() != static_cast<size_t>(c))
        return InvalidArgument(std::string(list == &norm.mean ? "--mean" : "--std") + " has " + std::to_string(list->size()) +
                               " values; give one value or one per channel (the input has " + std::to_string(c) + ")");
    }
    for (float s : norm.stddev)
      if (s == 0.0f) return InvalidArgument("--std must not be 0");
  }
  img = ResizeBilinear(img, w, h);
  const bool quantized = type == DType::kUInt8 || type == DType::kInt8 || type == DType::kInt16;
  if (quantized && norm.kind == PixelNormalization::Kind::kAuto && type != DType::kInt16) {
    // Raw pixels shifted into the type's range: what LiteRT's image examples feed 8-bit models.
    HostTensor t;
    t.type = type;
    t.shape = shape;
    t.data = img.pixels;
    if (type == DType::kInt8)
      for (auto& b : t.data) b = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(b) - 128));
    if (quant && !quant->scale.empty()) {
      t.scale = quant->scale[0];
      t.zero_point = static_cast<int32_t>(quant->zero_point.empty() ? 0 : quant->zero_point[0]);
    }
    return t;
  }
  if (quantized && (!quant || quant->scale.empty()))
    return InvalidArgument("the " + std::string(DTypeName(type)) + " input has no quantization parameters to convert pixels with");
  PixelNormalization n = norm;
  if (n.kind == PixelNormalization::Kind::kAuto) {
    n.kind = PixelNormalization::Kind::kRange;
    n.lo = -1.0f;
    n.hi = 1.0f;
  }
  std::vector<float> values(img.pixels.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const float p = img.pixels[i];
    const size_t ch = i % static_cast<size_t>(c);
    if (n.kind == PixelNormalization::Kind::kRange) {
      values[i] = n.lo + p / 255.0f * (n.hi - n.lo);
    } else {
      const float m = n.mean.empty() ? 0.0f : n.mean[n.mean.size() == 1 ? 0 : ch];
      const float s = n.stddev.empty() ? 1.0f : n.stddev[n.stddev.size() == 1 ? 0 : ch];
      values[i] = (p - m) / s;
    }
  }
  return RealToTensor(values, shape, type, quant);
}

}  // namespace edgeopt::eval
