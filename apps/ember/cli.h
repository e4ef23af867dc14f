// Shared pieces of the ember command: the exit codes, the usage-error type, and the registration
// hook each subcommand file provides.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "ember/core/error.h"

namespace ember::cli {

// Documented exit codes (ember --help prints them).
inline constexpr int kExitOk = 0;           // success
inline constexpr int kExitFailed = 1;       // the run failed (bad data, I/O, non-finite loss, no device)
inline constexpr int kExitUsage = 2;        // usage error: unknown subcommand/flag, a value out of range
inline constexpr int kExitSigint = 130;     // interrupted by SIGINT (Ctrl-C), checkpoint written
inline constexpr int kExitSigterm = 143;    // interrupted by SIGTERM, checkpoint written

// A command line that cannot work (unknown model, --batch-size larger than the dataset): exit 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Each subcommand file registers its CLI11 subcommand; when it is the one chosen, its callback
// stores the function main() runs after parsing.
using Runner = std::function<int()>;
void register_train(CLI::App& root, Runner& run);
void register_eval(CLI::App& root, Runner& run);  // eval and predict
void register_doctor(CLI::App& root, Runner& run);
void register_bench(CLI::App& root, Runner& run);
void register_data(CLI::App& root, Runner& run);

// Prints "ember: warning: ..." on stderr.
void warn(const std::string& msg);

}  // namespace ember::cli
