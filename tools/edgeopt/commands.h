// The subcommands of `edgeopt`. Each lives in its own file, tools/edgeopt/<name>.cc, and defines
// one registration function `void Register<Name>(CommandSet&)` that adds its CLI11 parser and the
// function running it. To add a subcommand, write that file and add one X(<Name>) line below;
// main.cc declares and calls every Register<Name> from this list (in this order, which is also
// the order `edgeopt --help` lists them in).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#define EDGEOPT_CLI_COMMANDS(X) \
  X(Inspect)                    \
  X(Convert)                    \
  X(Quantize)                   \
  X(Dequantize)                 \
  X(Prune)                      \
  X(Cluster)                    \
  X(Run)                        \
  X(Bench)                      \
  X(Compare)                    \
  X(Eval)                       \
  X(Optimize)

namespace edgeopt::cli {

class CommandSet {
 public:
  explicit CommandSet(CLI::App& app) : app_(app) {}

  // Adds `edgeopt <name>`. Bind options to state owned by `run` (e.g. a shared_ptr captured by
  // the lambda); after a successful parse main() calls `run`, whose result is the exit code
  // (cli_util.h: kExitOk, kExitError, kExitUsage).
  CLI::App* Add(const std::string& name, const std::string& description, std::function<int()> run) {
    CLI::App* sub = app_.add_subcommand(name, description);
    entries_.push_back({sub, std::move(run)});
    return sub;
  }

  struct Entry {
    CLI::App* app;
    std::function<int()> run;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  CLI::App& app_;
  std::vector<Entry> entries_;
};

#define EDGEOPT_DECLARE_REGISTER(Name) void Register##Name(CommandSet& commands);
EDGEOPT_CLI_COMMANDS(EDGEOPT_DECLARE_REGISTER)
#undef EDGEOPT_DECLARE_REGISTER

}  // namespace edgeopt::cli
