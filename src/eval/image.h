// Images for model inputs: decoding (JPEG/PNG/BMP/GIF/TGA via stb_image), resizing, and
// conversion to a tensor of the model's dtype and quantization.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "graph/graph.h"

namespace edgeopt::eval {

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;             // 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;  // row-major HWC
};

// Decodes an image file with `channels` (1 or 3) channels.
Expected<Image> LoadImage(const std::string& path, int channels = 3);
// Bilinear resize with half-pixel centers (as tf.image.resize without antialiasing).
Image ResizeBilinear(const Image& img, int width, int height);
bool IsImageFile(const std::string& path);  // by extension

// How pixel values 0..255 become the model's input values.
struct PixelNormalization {
  enum class Kind {
    kAuto,     // 8-bit quantized inputs: raw pixels; float inputs: range [-1, 1] (reported)
    kRange,    // linear map of 0..255 onto [lo, hi]
    kMeanStd,  // (p - mean[c]) / std[c]
  };
  Kind kind = Kind::kAuto;
  float lo = -1.0f, hi = 1.0f;
  std::vector<float> mean, stddev;  // one value or one per channel
  std::string Describe() const;     // "range [-1,1]", "mean 127.5 std 127.5", "raw pixels"
};

// What ImageToTensor does to pixels for an input of `type` under `norm`, in words
// ("raw pixels", "raw pixels - 128", "range [-1,1]", "mean 127.5 std 127.5, then quantized");
// *is_default is set when no normalization was asked for and a default applies.
std::string DescribePixelConversion(DType type, const PixelNormalization& norm, bool* is_default = nullptr);

// Parses "-1,1" / "0,1" / "0,255" for --range, and "127.5" or "123.7,116.3,103.5" lists.
Expected<PixelNormalization> ParseRange(const std::string& text);
Expected<std::vector<float>> ParseFloatList(const std::string& text);
// The --mean/--std/--range flags of run and bench ("" = not given): --range LO,HI, or --mean and
// --std together (one value or one per channel; std must not be 0), or neither (kAuto).
Expected<PixelNormalization> NormalizationFromFlags(const std::string& mean, const std::string& stddev,
                                                    const std::string& range);

// Converts an image to a tensor of `shape` ([1,H,W,C] or [H,W,C]) and `type`, resizing as needed.
// Quantized types (int8/uint8/int16) use `quant`: normalized real value -> round(x/scale)+zp.
Expected<HostTensor> ImageToTensor(const Image& img, const std::vector<int32_t>& shape, DType type,
                                   const QuantParams* quant, const PixelNormalization& norm);

// Converts real values to a tensor of `type` (quantizing with `quant` if the type is integer).
HostTensor RealToTensor(const std::vector<float>& values, const std::vector<int32_t>& shape, DType type,
                        const QuantParams* quant);

}  // namespace edgeopt::eval
