// classify MODEL IMAGE LABELS [--threads N]
//
// Runs an image classifier (.tflite, one [1,H,W,3] input, one [1,classes] output) on one image
// and prints the five best labels. Uses nothing but the public C++ API.
#include <edgeopt/edgeopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace {

int Fail(const std::string& what, const edgeopt::Status& status) {
  std::fprintf(stderr, "classify: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// Output scores as real numbers (dequantized for 8-bit outputs).
std::vector<float> Scores(const edgeopt::TensorView& out) {
  std::vector<float> scores;
  const float scale = out.scale() != 0 ? out.scale() : 1.0f;
  if (auto f = out.data_as<const float>(); !f.empty()) scores.assign(f.begin(), f.end());
  for (uint8_t q : out.data_as<const uint8_t>()) scores.push_back(scale * (q - out.zero_point()));
  for (int8_t q : out.data_as<const int8_t>()) scores.push_back(scale * (q - out.zero_point()));
  return scores;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int threads = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--threads" && i + 1 < args.size()) {
      char* end = nullptr;
      threads = static_cast<int>(std::strtol(args[i + 1].c_str(), &end, 10));
      if (*end != '\0' || args[i + 1].empty()) {
        std::fprintf(stderr, "classify: --threads wants a number, got '%s'\n", args[i + 1].c_str());
        return 2;
      }
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  if (args.size() != 3) {
    std::fprintf(stderr, "usage: classify MODEL IMAGE LABELS [--threads N]\n");
    return 2;
  }
  const std::string &model_path = args[0], &image_path = args[1], &labels_path = args[2];

  auto model = edgeopt::Model::FromFile(model_path);
  if (!model) return Fail("cannot load model", model.status());
  edgeopt::InterpreterOptions options;
  options.num_threads = threads;
  auto interpreter = edgeopt::Interpreter::Create(*model, options);
  if (!interpreter) return Fail("cannot run model", interpreter.status());
  edgeopt::Interpreter& it = **interpreter;

  edgeopt::TensorView input = it.input(0);
  auto pixels = edgeopt::LoadImageAsInput(image_path, input);
  if (!pixels) return Fail("cannot read image", pixels.status());
  if (auto st = input.CopyFrom(pixels->data(), pixels->size()); !st.ok()) return Fail("input", st);

  const auto start = std::chrono::steady_clock::now();
  if (auto st = it.Invoke(); !st.ok()) return Fail("invoke failed", st);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const std::vector<float> scores = Scores(it.output(0));
  if (scores.empty()) {
    std::fprintf(stderr, "classify: output 0 is %s; expected float32, uint8 or int8 scores\n",
                 std::string(edgeopt::DTypeName(it.output(0).type())).c_str());
    return 1;
  }
  const std::vector<std::string> labels = ReadLines(labels_path);
  if (labels.empty()) std::fprintf(stderr, "classify: no labels in '%s'; printing indices\n", labels_path.c_str());
  // Label files sometimes list a "background" class the model does not output.
  const size_t offset = labels.size() == scores.size() + 1 ? 1 : 0;

  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t k = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::printf("%s: %.2f ms, %d thread(s)\n", image_path.c_str(), ms, it.num_threads());
  for (size_t i = 0; i < k; ++i) {
    const size_t c = order[i];
    const std::string label = c + offset < labels.size() ? labels[c + offset] : "#" + std::to_string(c);
    std::printf("%8.4f  %4zu  %s\n", scores[c], c, label.c_str());
  }
  return 0;
}
