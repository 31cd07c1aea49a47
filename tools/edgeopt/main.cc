// edgeopt: command-line entry point. Parses the command line with CLI11 and runs the chosen
// subcommand (see commands.h for how subcommands are registered).
#include <cctype>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "commands.h"

#ifndef EDGEOPT_VERSION
#define EDGEOPT_VERSION "unknown"
#endif

namespace edgeopt::cli {
namespace {

constexpr const char* kFooter = R"(Exit codes: 0 success, 1 the model or a file could not be processed, 2 usage error.

Examples:
  edgeopt inspect model.tflite               summary: I/O, ops, quantization, sizes
  edgeopt inspect model.tflite --json        the same as JSON
  edgeopt convert in.tflite -o out.tflite --strip-unused --dedupe --verify

Run 'edgeopt <command> --help' for the options of a command.)";

std::string CommandNames(const CommandSet& commands) {
  std::string r;
  for (const auto& e : commands.entries()) {
    if (!r.empty()) r += ", ";
    r += e.app->get_name();
  }
  return r;
}

int Main(int argc, char** argv) {
  CLI::App app("edgeopt " EDGEOPT_VERSION ": inspect, convert and optimize LiteRT (.tflite) models.", "edgeopt");
  app.set_version_flag("--version", "edgeopt " EDGEOPT_VERSION);
  app.footer(kFooter);
  app.require_subcommand(0, 1);
  app.get_formatter()->column_width(34);

  CommandSet commands(app);
#define EDGEOPT_CALL_REGISTER(Name) Register##Name(commands);
  EDGEOPT_CLI_COMMANDS(EDGEOPT_CALL_REGISTER)
#undef EDGEOPT_CALL_REGISTER
  for (const auto& e : commands.entries()) e.app->get_formatter()->column_width(34);

  // A first word that is neither an option nor a command: say so plainly (CLI11 would report an
  // "unexpected argument").
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto& e : commands.entries()) known = known || e.app->check_name(argv[1]);
    if (!known)
      return UsageError("", std::string("unknown command '") + argv[1] + "' (commands: " + CommandNames(commands) + ")");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string command;
    for (const CLI::App* sub : app.get_subcommands()) command = sub->get_name();
    std::string message = e.what();  // CLI11 capitalizes ("The following argument was not expected")
    if (!message.empty()) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
    return UsageError(command, message);
  }

  for (const auto& e : commands.entries()) {
    if (e.app->parsed()) return e.run();
  }
  std::cerr << app.help() << "\nedgeopt: error: no command given (commands: " << CommandNames(commands) << ")\n";
  return kExitUsage;
}

}  // namespace
}  // namespace edgeopt::cli

int main(int argc, char** argv) {
  // Library code reports errors as values; this is the last line of defence against a bug (or an
  // allocation failure on a hostile model) turning into a crash without a message.
  try {
    return edgeopt::cli::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    return edgeopt::cli::Fail("", "out of memory");
  } catch (const std::exception& e) {
    return edgeopt::cli::Fail("", std::string("internal error: ") + e.what());
  }
}
