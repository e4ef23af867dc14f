// Shared pieces of the ember command: the exit codes, the usage-error type, and the registration
// hook each subcommand file provides.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/core/error.h"
#include "ember/train/device_choice.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::cli {

// Documented exit codes (ember --help prints them).
inline constexpr int kExitOk = 0;           // success
inline constexpr int kExitFailed = 1;       // the run failed (bad data, I/O, non-finite loss, no device)
inline constexpr int kExitUsage = 2;        // usage error: unknown subcommand/flag, a value out of range,
                                            // a --config file or model spec that cannot be used
inline constexpr int kExitInternal = 3;     // a bug in ember (a failed EMBER_ASSERT, an unexpected exception)
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
void register_export(CLI::App& root, Runner& run);  // export.cpp
void register_weights(CLI::App& root, Runner& run);  // weights.cpp: weights info

// Prints "ember: warning: ..." on stderr.
void warn(const std::string& msg);

// `-b=64` as `-b 64`, as argparse reads it (CLI11 would take "=64" as the value). Arguments after
// "--" are left alone.
void split_short_option_values(std::vector<std::string>& args);

// ---- numeric flags (cli_args.cpp) ----------------------------------------------------------------
// CLI11's own Range/PositiveNumber print 309-digit bounds, let NaN and inf through, and let "-1" or
// "1e23" wrap into an unsigned seed. Every numeric flag goes through add_number instead: the value
// is checked as written (digits only for whole numbers, finite for reals, inside the bounds) and
// refused with "--epochs must be at least 1 (got 0)" (exit 2). The rules live with the training
// settings (ember/train/settings.h), so config files and resumed manifests get the same messages.
using train::above;
using train::any_number;
using train::at_least;
using train::at_least_below;
using train::between;
using train::NumberRule;

// Attaches the check to an option already added; whole = the field is an integer type.
CLI::Option* check_number(CLI::Option* opt, NumberRule rule, bool whole);

// add_option + check_number, with the bounds narrowed to what the field's type can hold.
template <class T>
CLI::Option* add_number(CLI::App* app, const std::string& names, T& field, const std::string& help, NumberRule rule) {
  static_assert(std::is_arithmetic_v<T>, "add_number is for numeric flags");
  if constexpr (std::is_integral_v<T>) {
    rule.type_min = static_cast<long double>(std::numeric_limits<T>::min());
    rule.type_max = static_cast<long double>(std::numeric_limits<T>::max());
  }
  return check_number(app->add_option(names, field, help), std::move(rule), std::is_integral_v<T>);
}

// The largest --threads / --workers ember accepts (see src/train/settings_rules.cpp for why 1024).
using train::kMaxThreads;
using train::thread_count_rule;
// --threads and --workers: the library's (ember/train/device_choice.h).
using train::set_compute_threads;
using train::warn_if_oversubscribed;

// ---- text that fits a terminal (cli_text.cpp) ------------------------------------------------------
// Help, banners and tables stay within 80 columns (the terminal of issues 15 and 22).
inline constexpr int kHelpColumns = 80;

// Columns `text` (UTF-8) takes on a terminal: wide CJK characters and emoji 2, combining marks 0.
int display_width(std::string_view text);
// `text` cut to at most `width` columns, ending in "..." when cut (whole code points only).
std::string truncate_to_width(const std::string& text, int width);
// `text` padded with spaces to `width` columns (by display width, not bytes); as is when wider.
std::string pad_right(const std::string& text, int width);
// Word-wraps each line of `text` to `width` columns; a continuation line gets the line's own
// leading spaces plus `indent`. Words wider than `width` are not broken. kKeepTogether between two
// words is a space that is never broken (printed as a space): a phrase that must stay on one line.
inline constexpr char kKeepTogether = '\x1f';
std::string wrap_text(const std::string& text, int width, const std::string& indent = "");
// The "Exit codes: ..." footer of --help, with every documented code (cli.h's kExit*), each code's
// phrase kept on one line when wrapped; zero: what success is called for the command ("success",
// "done").
std::string exit_codes_footer(const std::string& zero = "success");
// A banner block ("device     cpu — why\n           more\n"): each line wrapped to kHelpColumns,
// continuation lines under the value column (11). Keeps the trailing newline.
std::string wrap_banner(const std::string& text);
// The --help formatter of every subcommand: CLI11's layout with descriptions, the footer and the
// subcommand list wrapped to kHelpColumns. Set it on the root App before adding subcommands.
std::shared_ptr<CLI::Formatter> help_formatter();

// ---- messages ------------------------------------------------------------------------------------
// 1794 -> "1,794", "1 epoch", "2 epochs": the library's words (ember/train/wording.h).
using train::plural;
using train::thousands;

// The closest of `candidates` to `typed` (edit distance, transpositions count as one), or "" when
// none is close enough to be the intended one.
using train::closest_name;

// The most specific subcommand the command line chose (`ember bench matmul` -> matmul), or root.
const CLI::App* chosen_subcommand(const CLI::App& root);

// "ember bench matmul" for the matmul subcommand.
std::string command_path(const CLI::App& sub);

// Every flag name of a subcommand ("--lr", "--learning-rate", "-b", ...).
std::vector<std::string> flag_names(const CLI::App& sub);

// For a flag other tools have and ember spells differently or does otherwise (--gpus, --log-dir,
// --pretrained): what ember does instead, naming only flags in `flags` (the subcommand's); "" for
// other names. Flags that mean the same as ember's are aliases of them instead (--bs, --patience).
std::string foreign_flag_hint(const std::string& typed, const std::vector<std::string>& flags);

// The usage error for arguments CLI11 did not expect, in the order typed (CLI11 2.1's ExtrasError
// joins them backwards), with "did you mean --X?" for a mistyped flag or subcommand. Prints it.
void print_unexpected_arguments(const CLI::App& root);

// The hint after an out-of-memory error: names only flags the chosen subcommand has.
std::string memory_hint(const CLI::App& root);

}  // namespace ember::cli
