#include "cli_util.h"

#include <charconv>
#include <cstdio>
#include <iostream>

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

}  // namespace edgeopt::cli
