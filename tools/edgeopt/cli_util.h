// Helpers shared by the edgeopt subcommands: exit codes, error reporting, JSON output, and
// (re-exported from core/text_format.h) byte sizes and aligned tables.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/text_format.h"
#include "graph/graph.h"

namespace edgeopt::cli {

// Exit codes of every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;  // the model or a file could not be read/written, verification failed
constexpr int kExitUsage = 2;  // bad command line: unknown command/flag, missing argument, bad value

// Prints "edgeopt <command>: error: <message>" to stderr and returns kExitError.
int Fail(const std::string& command, const std::string& message);
// Same for a library Status (its message already names the file and element).
int Fail(const std::string& command, const Status& status);
// Prints the error plus "Run 'edgeopt <command> --help' for usage." and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);
// Prints a warning line "edgeopt <command>: warning: <message>" to stderr.
void Warn(const std::string& command, const std::string& message);

// Prints an informational line "edgeopt <command>: <message>" to stderr (defaults applied,
// where values came from): things the user should know that are not problems.
void Note(const std::string& command, const std::string& message);

// Writes `j` to stdout, indented, followed by a newline; invalid UTF-8 is replaced, not thrown.
void PrintJson(const nlohmann::ordered_json& j);

// Parses a non-negative count or one of the given words ("all" -> -1, "none" -> 0).
bool ParseCountOrAll(const std::string& text, int* out);

// True if both paths name the same existing file (also through links).
bool SameFile(const std::string& a, const std::string& b);
// Checks that `path` can be created: its folder exists, is a folder, is writable, and `path`
// itself is not a folder. Returns "" or the problem.
std::string OutputProblem(const std::string& path);

// The start of every command that rewrites a model (IN -o OUT): refuses an -o naming the input,
// reads the input model, and checks that `output` and `json_path` (when not "" or "-") can be
// written, so that no work is done for a result that cannot be saved. On failure prints the
// error, sets *exit_code (kExitUsage or kExitError) and returns nothing.
std::optional<Graph> ReadModelToRewrite(const std::string& command, const std::string& input, const std::string& output,
                                        const std::string& json_path, int* exit_code);

}  // namespace edgeopt::cli
