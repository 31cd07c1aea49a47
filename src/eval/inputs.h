// Builds model inputs from what a user points at: .npy, raw binary, images, WAV audio, or seeded
// random values. Shared by `run`, `bench`, `quantize --calibration`, `eval` and `compare`.
//
// Two steps, so callers can tell a bad command line from a bad file:
//   1. MatchInputFlags: which file feeds which input (errors are usage errors: unknown input
//      name, more files than inputs, an input given twice);
//   2. LoadInputs: read and convert each file (errors name the file and the input), seeded
//      random values for inputs without a file.
// Each loaded input says where its values came from and which defaults were applied, so the
// caller can tell the user (e.g. "pixels mapped to [-1,1] (default)").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/host_tensor.h"
#include "eval/image.h"
#include "runtime/tensor.h"

namespace edgeopt::rt {
class Interpreter;
}

namespace edgeopt::eval {

// What the runtime says one input wants.
struct InputSpec {
  std::string name;
  DType type = DType::kFloat32;
  std::vector<int32_t> shape;
  const QuantParams* quant = nullptr;
};
InputSpec SpecOf(const rt::RtTensor& t);
std::vector<InputSpec> InputSpecsOf(rt::Interpreter& interp);
// The main subgraph's inputs as the file declares them (for checking --input flags before an
// interpreter exists).
std::vector<InputSpec> InputSpecsOf(const Graph& graph);
// "input 'image' float32[1,224,224,3]"
std::string DescribeSpec(const InputSpec& spec);

// Parses "NAME=FILE" or "FILE" (applies to the input at that position). Returns {name, file}.
std::pair<std::string, std::string> ParseInputFlag(const std::string& flag);

// Step 1: files[i] is the file given for input i, "" when none. NAME may also be the input's
// position ("0=img.jpg"). Errors are usage errors (InvalidArgument).
Expected<std::vector<std::string>> MatchInputFlags(const std::vector<std::string>& flags,
                                                   const std::vector<InputSpec>& specs);

struct LoadedInput {
  HostTensor tensor;
  std::string source;              // "cat.bmp (640x480 image resized to 224x224, raw pixels 0..255)"
  bool random = false;             // seeded random values, no file
  std::vector<std::string> notes;  // defaults applied for the user, worth saying on stderr
};

// Loads one input from a file:
// - .npy: the shape must match (a missing leading batch dim of 1 is allowed); float data for an
//   8/16-bit quantized input is quantized with the input's parameters; integer data for a float
//   input is converted; integer data for a non-quantized integer input of another width is
//   converted when every value fits.
// - images (JPEG/PNG/BMP/GIF/TGA): decoded, resized, converted (see ImageToTensor); a float input
//   without --mean/--std or --range gets [-1,1] and a note saying so.
// - .wav: for 1-D waveform inputs ([N] or [1,N]): mono float samples in [-1,1], zero-padded or
//   truncated to N (noted), never resampled.
// - anything else: raw bytes, exactly the input's byte size.
Expected<LoadedInput> LoadInputFile(const std::string& path, const InputSpec& spec, const PixelNormalization& norm);

// Seeded random values: floats uniform in [-1, 1]; quantized (8/16-bit) inputs over their whole
// integer range; other integer inputs in [0, 9] (valid indices / token ids for typical models);
// bool 0/1.
LoadedInput RandomInputFor(const InputSpec& spec, uint64_t seed);

// Step 2: loads files[i] for input i, random values (seed + i) where files[i] is empty.
Expected<std::vector<LoadedInput>> LoadInputs(const std::vector<std::string>& files, const std::vector<InputSpec>& specs,
                                              const PixelNormalization& norm, uint64_t seed);

// Copies loaded inputs into the interpreter's input tensors (by position).
Status SetInterpreterInputs(rt::Interpreter& interp, const std::vector<LoadedInput>& inputs);

// --- Compact forms of the above (kept for callers that need no descriptions).
Expected<HostTensor> LoadInput(const std::string& path, const InputSpec& spec, const PixelNormalization& norm);
HostTensor RandomInput(const InputSpec& spec, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
// MatchInputFlags + LoadInputs; names of randomized inputs go to *randomized.
Expected<std::vector<HostTensor>> ResolveInputs(const std::vector<std::string>& flags, const std::vector<InputSpec>& specs,
                                                const PixelNormalization& norm, uint64_t seed,
                                                std::vector<std::string>* randomized);

// Reads a labels file: one label per line (blank lines kept as empty labels; a final newline
// does not add one).
Expected<std::vector<std::string>> ReadLabels(const std::string& path);

struct TopK {
  int index = 0;
  double score = 0;  // real value (dequantized)
  double raw = 0;    // the stored value (quantized integer for quantized tensors)
};
// The k largest elements, ties broken by the lower index (as a stable sort would).
std::vector<TopK> TopKOf(const HostTensor& t, int k);

}  // namespace edgeopt::eval
