// LoadImageAsInput: the image helpers of src/eval behind a small public function.
#include "api/access.h"
#include "eval/image.h"

namespace edgeopt {

Expected<std::vector<uint8_t>> LoadImageAsInput(const std::string& path, const TensorView& input,
                                                const ImageOptions& options) {
  const rt::RtTensor* t = api_internal::Access::Tensor(input);
  if (!t) return InvalidArgument("LoadImageAsInput: empty tensor view (the input was not found)");
  eval::PixelNormalization norm;
  switch (options.normalization) {
    case ImageOptions::Normalization::kAuto: norm.kind = eval::PixelNormalization::Kind::kAuto; break;
    case ImageOptions::Normalization::kRange:
      if (!(options.range_min < options.range_max))
        return InvalidArgument("LoadImageAsInput: range_min must be below range_max");
      norm.kind = eval::PixelNormalization::Kind::kRange;
      norm.lo = options.range_min;
      norm.hi = options.range_max;
      break;
    case ImageOptions::Normalization::kMeanStd:
      for (float s : options.stddev)
        if (s == 0) return InvalidArgument("LoadImageAsInput: a stddev of 0");
      norm.kind = eval::PixelNormalization::Kind::kMeanStd;
      norm.mean = options.mean;
      norm.stddev = options.stddev;
      break;
  }
  const int channels = !t->shape.empty() && t->shape.back() == 1 ? 1 : 3;
  ASSIGN_OR_RETURN(eval::Image image, eval::LoadImage(path, channels));
  auto tensor = eval::ImageToTensor(image, t->shape, t->type, t->quant, norm);
  if (!tensor.ok()) return tensor.status().WithContext("input '" + t->name() + "'");
  if (tensor->data.size() != input.bytes())
    return Internal("LoadImageAsInput: converted " + std::to_string(tensor->data.size()) + " bytes for an input of " +
                    std::to_string(input.bytes()));
  return std::move(tensor->data);
}

const char* Version() { return "0.1.0"; }

}  // namespace edgeopt
