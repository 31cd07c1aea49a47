#include "cli_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "format/reader.h"

namespace edgeopt::cli {
namespace {

std::string Prefix(const std::string& command) { return command.empty() ? "edgeopt" : "edgeopt " + command; }

}  // namespace

int Fail(const std::string& command, const std::string& message) {
  std::cout.flush();
  std::cerr << Prefix(command) << ": error: " << Printable(message) << std::endl;
  return kExitError;
}

int Fail(const std::string& command, const Status& status) { return Fail(command, status.message()); }

int UsageError(const std::string& command, const std::string& message) {
  std::cout.flush();
  std::cerr << Prefix(command) << ": error: " << Printable(message) << "\n"
            << "Run '" << Prefix(command) << " --help' for usage." << std::endl;
  return kExitUsage;
}

void Warn(const std::string& command, const std::string& message) {
  std::cout.flush();
  std::cerr << Prefix(command) << ": warning: " << Printable(message) << std::endl;
}

void Note(const std::string& command, const std::string& message) {
  std::cout.flush();
  std::cerr << Prefix(command) << ": " << Printable(message) << std::endl;
}

void PrintJson(const nlohmann::ordered_json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << std::endl;
}

bool ParseCountOrAll(const std::string& text, int* out) {
  if (text == "all") {
    *out = -1;
    return true;
  }
  if (text == "none") {
    *out = 0;
    return true;
  }
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return false;
  *out = v;
  return true;
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string OutputProblem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "'" + path + "' is a directory; give a file name";
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec)) return "cannot write '" + path + "': directory '" + dir.string() + "' does not exist";
  if (!fs::is_directory(dir, ec)) return "cannot write '" + path + "': '" + dir.string() + "' is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot write '" + path + "': directory '" + dir.string() + "' is not writable (" + std::strerror(errno) + ")";
  return "";
}

std::optional<Graph> ReadModelToRewrite(const std::string& command, const std::string& input, const std::string& output,
                                        const std::string& json_path, int* exit_code) {
  if (SameFile(input, output)) {
    *exit_code = UsageError(command, "refusing to overwrite the input model '" + input +
                                         "' (-o names the same file); write to another path");
    return std::nullopt;
  }
  auto graph = ReadModelFile(input);
  if (!graph.ok()) {
    *exit_code = Fail(command, graph.status());
    return std::nullopt;
  }
  if (std::string problem = OutputProblem(output); !problem.empty()) {
    *exit_code = Fail(command, problem);
    return std::nullopt;
  }
  if (!json_path.empty() && json_path != "-") {
    if (std::string problem = OutputProblem(json_path); !problem.empty()) {
      *exit_code = Fail(command, "--json: " + problem);
      return std::nullopt;
    }
  }
  return std::move(*graph);
}

}  // namespace edgeopt::cli
