// Builds model inputs from what a user points at: .npy, raw binary, images, or seeded random
// values. Shared by `run`, `bench`, `quantize --calibration`, `eval` and `compare`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "runtime/tensor.h"

namespace edgeopt::eval {

// What the runtime says one input wants.
struct InputSpec {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  const QuantParams* quant = nullptr;
};
InputSpec SpecOf(const rt::RtTensor& t);

// Parses "NAME=FILE" or "FILE" (applies to the input at that position). Returns {name, file}.
std::pair<std::string, std::string> ParseInputFlag(const std::string& flag);

// Loads one input from a file: .npy (dtype must match, except float data for a quantized
// input, which is quantized with the input's parameters; a leading batch dim of 1 may be
// missing), images (see ImageToTensor), anything else as raw bytes of exactly the input's size.
Expected<HostTensor> LoadInput(const std::string& path, const InputSpec& spec, const PixelNormalization& norm);

// Seeded random values: floats uniform in [lo, hi], integers over their whole range (quantized
// inputs over their range too), bool 0/1.
HostTensor RandomInput(const InputSpec& spec, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// Resolves a list of --input flags against the model's inputs (by name, else by position).
// Inputs without a flag get seeded random values and their names are returned in *randomized.
Expected<std::vector<HostTensor>> ResolveInputs(const std::vector<std::string>& flags, const std::vector<InputSpec>& specs,
                                                const PixelNormalization& norm, uint64_t seed,
                                                std::vector<std::string>* randomized);

// Reads a labels file: one label per line (blank lines kept as empty labels).
Expected<std::vector<std::string>> ReadLabels(const std::string& path);

struct TopK {
  int index = 0;
  double score = 0;  // real value (dequantized)
};
std::vector<TopK> TopKOf(const HostTensor& t, int k);

}  // namespace edgeopt::eval
