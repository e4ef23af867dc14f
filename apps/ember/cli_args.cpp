// Command-line helpers shared by every subcommand: numeric flag checks with plain-words errors,
// "did you mean --X?" for mistyped flags and subcommands, plurals, and hints that name only flags
// the chosen subcommand has.
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "cli.h"

namespace ember::cli {
namespace {

// 1, 0.5, 1e-08, 18446744073709551615: integers in full, reals in the shortest form.
std::string show(long double v, bool whole) {
  if (std::isinf(v)) return v > 0 ? "infinity" : "-infinity";
  if (whole) {
    if (v < 0) return fmt::format("{}", static_cast<long long>(v));
    return fmt::format("{}", static_cast<unsigned long long>(v));
  }
  return fmt::format("{:g}", static_cast<double>(v));
}

bool is_digits(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// What the value must be, for messages: "at least 1", "between 0 and 1", "greater than 0".
std::string bounds_text(const NumberRule& r, bool whole) {
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  if (has_min && has_max && !r.min_exclusive)
    return fmt::format("between {} and {}", show(r.min, whole), show(r.max, whole));
  std::string s;
  if (has_min) s = fmt::format("{} {}", r.min_exclusive ? "greater than" : "at least", show(r.min, whole));
  if (has_max) s += fmt::format("{}at most {}", s.empty() ? "" : " and ", show(r.max, whole));
  return s;
}

// The word CLI11 shows after the type in --help ("INT:POSITIVE=15").
std::string help_text(const NumberRule& r, bool whole) {
  const bool has_max = std::isfinite(r.max);
  if (!has_max && r.min == 0) return r.min_exclusive ? "POSITIVE" : "NONNEGATIVE";
  if (!has_max && r.min == 1 && whole && !r.min_exclusive) return "POSITIVE";
  if (!std::isfinite(r.min) && !has_max) return "";
  if (std::isfinite(r.min) && has_max && !r.min_exclusive)
    return fmt::format("in [{}, {}]", show(r.min, whole), show(r.max, whole));
  return bounds_text(r, whole);
}

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

CLI::Option* check_number(CLI::Option* opt, NumberRule rule, bool whole) {
  const std::string name = opt->get_name();
  auto fn = [name, rule, whole](std::string& value) -> std::string {
    const std::string must = bounds_text(rule, whole);
    const std::string kind = whole ? "a whole number" : "a number";
    errno = 0;
    char* end = nullptr;
    const long double v = value.empty() ? 0.0L : std::strtold(value.c_str(), &end);
    const bool parsed = !value.empty() && end == value.c_str() + value.size() &&
                        !std::isspace(static_cast<unsigned char>(value[0]));
    if (!parsed)
      return fmt::format("{} must be {}{} (got '{}')", name, kind, must.empty() ? "" : ", " + must, value);
    if (!std::isfinite(v))
      return fmt::format("{} must be a finite number{} (got '{}')", name, must.empty() ? "" : ", " + must, value);
    const bool below = rule.min_exclusive ? !(v > rule.min) : v < rule.min;
    if (below || v > rule.max) {
      std::string s = fmt::format("{} must be {} (got {})", name, must, value);
      if (v > rule.max && !rule.max_why.empty()) s += ": " + rule.max_why;
      return s;
    }
    if (v < rule.type_min) return fmt::format("{} must be at least {} (got {})", name, show(rule.type_min, whole), value);
    if (v > rule.type_max) return fmt::format("{} must be at most {} (got {})", name, show(rule.type_max, whole), value);
    // Inside the bounds but not written as a whole number ("2.5", "1e3", "0x10"): CLI11 would
    // either refuse it with a conversion error or read it differently.
    if (whole && !is_digits(value))
      return fmt::format("{} must be a whole number written in digits (got '{}')", name, value);
    return "";
  };
  return opt->check(CLI::Validator(fn, help_text(rule, whole)));
}

// Why 1024: more compute threads than hardware threads only slow compute (they time-share the
// cores), so the useful maximum is the largest machine's hardware thread count (768 on a
// 2 x 192-core server today). A resumed run may ask for the thread count it was trained with on a
// smaller machine (bitwise-identical resume needs it), so the cap is fixed rather than a multiple
// of this machine's cores. Far beyond it, libgomp cannot create the threads (50000 exits 1 with
// its own message, 100000 segfaults: the kernel's pid_max is 32768 on common systems).
NumberRule thread_count_rule() {
  return between(0, kMaxThreads,
                 fmt::format("more threads than the largest machines' hardware threads only slow compute "
                             "(this machine has {}; 0 uses all of them)",
                             plural(std::max(1u, std::thread::hardware_concurrency()), "hardware thread")));
}

void warn_if_oversubscribed(int threads) {
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0 && threads > int(hw))
    warn(fmt::format("--threads {} is more than this machine's {}: compute will be slower than with --threads {}",
                     threads, plural(hw, "hardware thread"), hw));
}

std::string plural(int64_t n, const std::string& singular, const std::string& plural_form) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural_form.empty() ? singular + "s" : plural_form);
}

std::string closest_name(const std::string& typed_in, const std::vector<std::string>& candidates) {
  auto bare = [](const std::string& s) { return lower(s.substr(s.find_first_not_of('-') == std::string::npos ? 0 : s.find_first_not_of('-'))); };
  std::string typed = bare(typed_in.substr(0, typed_in.find('=')));
  for (auto& ch : typed)
    if (ch == '_') ch = '-';  // --batch_size
  if (typed.empty()) return "";
  std::string best, prefix_of;
  size_t best_d = std::string::npos;
  int prefix_count = 0;
  for (const auto& c : candidates) {
    const std::string b = bare(c);
    if (b.size() <= 1) continue;  // short flags (-b) are too short to guess
    const size_t d = edit_distance(typed, b);
    if (d < best_d) best_d = d, best = c;
    if (b.starts_with(typed) && typed.size() >= 3) ++prefix_count, prefix_of = c;
  }
  const size_t allowed = typed.size() <= 4 ? 1 : typed.size() <= 8 ? 2 : 3;
  if (best_d <= allowed && best_d < typed.size()) return best;
  if (prefix_count == 1) return prefix_of;  // --batch -> --batch-size
  return "";
}

const CLI::App* chosen_subcommand(const CLI::App& root) {
  const CLI::App* sub = &root;
  while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
  return sub;
}

std::string command_path(const CLI::App& sub) {
  std::string path;
  for (const CLI::App* a = &sub; a; a = a->get_parent()) path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

std::vector<std::string> flag_names(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* o : sub.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

void print_unexpected_arguments(const CLI::App& root) {
  const CLI::App& sub = *chosen_subcommand(root);
  const std::vector<std::string> extras = root.remaining(true);
  std::string list;
  for (const auto& e : extras) list += (list.empty() ? "" : " ") + e;
  const std::string where = command_path(sub);
  fmt::print(stderr, "ember: usage error: {} {} {}\n", where,
             extras.size() == 1 ? "does not take the argument" : "does not take the arguments", list);
  std::vector<std::string> subcommand_names;
  for (const CLI::App* s : sub.get_subcommands([](const CLI::App*) { return true; })) subcommand_names.push_back(s->get_name());
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& e = extras[i];
    const bool is_flag = e.starts_with("-") && e.size() > 1 && !std::isdigit(static_cast<unsigned char>(e[1])) && e[1] != '.';
    std::string guess;
    if (is_flag) guess = closest_name(e, flag_names(sub));
    else if (i == 0 && !subcommand_names.empty()) guess = closest_name(e, subcommand_names);
    if (guess.empty()) continue;
    fmt::print(stderr, "  hint: {}: did you mean {}?\n", e.substr(0, e.find('=')),
               is_flag ? guess : fmt::format("'{} {}'", where, guess));
  }
  fmt::print(stderr, "  hint: run '{} --help' for its {}\n", where,
             subcommand_names.empty() ? "flags" : "commands and flags");
}

std::string memory_hint(const CLI::App& root) {
  const std::vector<std::string> names = flag_names(*chosen_subcommand(root));
  auto has = [&](const char* f) { return std::find(names.begin(), names.end(), f) != names.end(); };
  if (has("--sizes")) return "use smaller --sizes (one n x n float32 matrix takes 4 n^2 bytes; A, B and C are held at once)";
  if (has("--batch-sizes")) return "use smaller --batch-sizes or a smaller --model";
  if (has("--batch-size") && has("--model")) return "use a smaller --batch-size or --model";
  if (has("--batch-size")) return "use a smaller --batch-size";
  return "free some memory (close other programs) and run the command again";
}

}  // namespace ember::cli
