#include "support/core/model_files.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

namespace fs = std::filesystem;

namespace edgeopt::testing {

std::string SourceDir() { return EDGEOPT_SOURCE_DIR; }
std::string BinaryDir() { return EDGEOPT_BINARY_DIR; }

static std::string SharedDir() {
  if (const char* e = std::getenv("EDGEOPT_SHARED_DIR")) return e;
  return (fs::path(SourceDir()) / ".." / "shared").lexically_normal().string();
}

std::string SharedModelsDir() { return SharedDir() + "/models"; }
std::string SharedDataDir() { return SharedDir() + "/data"; }

std::string SharedModel(const std::string& file_name) {
  std::string p = SharedModelsDir() + "/" + file_name;
  return fs::exists(p) ? p : std::string();
}

static std::vector<std::string> TfliteFilesUnder(const std::string& dir, bool recursive) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  auto add = [&](const fs::directory_entry& e) {
    if (e.is_regular_file() && e.path().extension() == ".tflite") out.push_back(e.path().string());
  };
  if (recursive) {
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) add(e);
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) add(e);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> AllSharedModels() { return TfliteFilesUnder(SharedModelsDir(), false); }
std::vector<std::string> AllCachedModels() { return TfliteFilesUnder(SourceDir() + "/.cache/models", true); }

std::vector<std::string> AllRealModels() {
  auto a = AllSharedModels();
  auto b = AllCachedModels();
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string MakeTempDir(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("edgeopt_test_" + tag + "_" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p);
  return p.string();
}

std::string Basename(const std::string& path) { return fs::path(path).filename().string(); }

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

bool FileExists(const std::string& path) { return fs::exists(path); }

}  // namespace edgeopt::testing
