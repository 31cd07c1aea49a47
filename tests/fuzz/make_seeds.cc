// Writes generated models into a folder as seeds for the reader fuzzer (scripts/fuzz_reader.sh):
// small networks from the model zoo and the every-feature model, in both buffer layouts.
//   edgeopt_fuzz_seeds OUT_DIR
#include <cstdio>
#include <string>

#include "format/writer.h"
#include "graph/model_zoo.h"
#include "support/core/feature_models.h"

int main(int argc, char** argv) {
  using namespace edgeopt;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const ZooOptions small{.seed = 5, .input_size = 32, .width_multiplier = 0.35f, .num_classes = 10};
  struct Seed {
    const char* name;
    Graph graph;
  };
  Seed seeds[] = {
      {"tiny_cnn", TinyCnn()},
      {"tiny_mlp", TinyMlp()},
      {"mobilenet_v2_like_small", MobileNetV2Like(small)},
      {"mobilenet_v2_like_int8_small", MobileNetV2LikeInt8(small)},
      {"every_feature", testing::EveryFeatureModel()},
  };
  int written = 0;
  for (const Seed& s : seeds) {
    for (bool external : {false, true}) {
      WriteOptions wo;
      if (external) wo.external_buffers_threshold = 0;  // data after the flatbuffer
      const std::string path = dir + "/" + s.name + (external ? "_external" : "") + ".tflite";
      Status st = WriteModelFile(s.graph, path, wo);
      if (!st.ok()) {
        std::fprintf(stderr, "edgeopt_fuzz_seeds: %s\n", st.ToString().c_str());
        return 1;
      }
      ++written;
    }
  }
  std::printf("edgeopt_fuzz_seeds: wrote %d models to %s\n", written, dir.c_str());
  return 0;
}
