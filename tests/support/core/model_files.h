// Locating test inputs: the shared real models (../shared beside the repo), the build folder,
// and temporary output folders. Tests that need ../shared skip with a printed reason if absent.
#pragma once

#include <string>
#include <vector>

namespace edgeopt::testing {

// Folder with the real .tflite models (env EDGEOPT_SHARED_DIR/models, else <repo>/../shared/models).
std::string SharedModelsDir();
// Folder with the shared labelled data (<shared>/data).
std::string SharedDataDir();
// Absolute path of a shared model, or "" if the folder or file is absent.
std::string SharedModel(const std::string& file_name);
// Every *.tflite in SharedModelsDir(), sorted; empty if absent.
std::vector<std::string> AllSharedModels();
// Extra real models fetched by scripts/setup.sh into .cache (MediaPipe npm packages); may be empty.
std::vector<std::string> AllCachedModels();
// Shared + cached models.
std::vector<std::string> AllRealModels();
// Source and build folders.
std::string SourceDir();
std::string BinaryDir();
// A fresh, empty temporary folder unique to this process and `tag`.
std::string MakeTempDir(const std::string& tag);
std::string Basename(const std::string& path);
std::vector<uint8_t> ReadFileBytes(const std::string& path);
bool FileExists(const std::string& path);

}  // namespace edgeopt::testing

// Skips the current test (printing why) when the shared models are not present.
#define EDGEOPT_REQUIRE_SHARED_MODELS()                                                    \
  do {                                                                                    \
    if (::edgeopt::testing::AllSharedModels().empty())                                    \
      GTEST_SKIP() << "no real models: " << ::edgeopt::testing::SharedModelsDir()         \
                   << " is absent (place the shared folder beside the repo)";             \
  } while (0)
