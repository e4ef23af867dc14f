// The rules every setting's value passes, wherever it comes from (a flag, a config file, a resumed
// manifest): numbers checked as written with one sentence when they are not allowed, the thread
// bound, and "did you mean" for mistyped names.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/edit_distance.h"
#include "ember/train/settings.h"

namespace ember::train {
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

// What the value must be, for messages: "at least 1", "between 0 and 1", "greater than 0",
// "at least 0 and less than 1".
std::string bounds_text(const NumberRule& r, bool whole) {
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  if (has_min && has_max && !r.min_exclusive && !r.max_exclusive)
    return fmt::format("between {} and {}", show(r.min, whole), show(r.max, whole));
  std::string s;
  if (has_min) s = fmt::format("{} {}", r.min_exclusive ? "greater than" : "at least", show(r.min, whole));
  if (has_max)
    s += fmt::format("{}{} {}", s.empty() ? "" : " and ", r.max_exclusive ? "less than" : "at most", show(r.max, whole));
  return s;
}


// "--Batch_Size=3" -> "batch-size": what a name is compared as.
std::string bare(const std::string& s) {
  std::string out = s.substr(0, s.find('='));
  const size_t start = out.find_first_not_of('-');
  out = start == std::string::npos ? out : out.substr(start);
  for (auto& ch : out) ch = ch == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::string number_error(const std::string& name, const std::string& value, const NumberRule& rule, bool whole) {
  const std::string must = bounds_text(rule, whole);
  const std::string kind = whole ? "a whole number" : "a number";
  errno = 0;
  char* end = nullptr;
  const long double v = value.empty() ? 0.0L : std::strtold(value.c_str(), &end);
  const bool parsed =
      !value.empty() && end == value.c_str() + value.size() && !std::isspace(static_cast<unsigned char>(value[0]));
  if (!parsed) return fmt::format("{} must be {}{} (got '{}')", name, kind, must.empty() ? "" : ", " + must, value);
  if (!std::isfinite(v))
    return fmt::format("{} must be a finite number{} (got '{}')", name, must.empty() ? "" : ", " + must, value);
  const bool below = rule.min_exclusive ? !(v > rule.min) : v < rule.min;
  const bool beyond = rule.max_exclusive ? !(v < rule.max) : v > rule.max;
  if (below || beyond) {
    std::string s = fmt::format("{} must be {} (got {})", name, must, value);
    if (beyond && !rule.max_why.empty()) s += ": " + rule.max_why;
    return s;
  }
  if (v < rule.type_min) return fmt::format("{} must be at least {} (got {})", name, show(rule.type_min, whole), value);
  if (v > rule.type_max) return fmt::format("{} must be at most {} (got {})", name, show(rule.type_max, whole), value);
  // Inside the bounds but not written as a whole number ("2.5", "1e3", "0x10"): CLI11 would
  // either refuse it with a conversion error or read it differently.
  if (whole && !is_digits(value)) return fmt::format("{} must be a whole number written in digits (got '{}')", name, value);
  return "";
}

std::string number_rule_word(const NumberRule& r, bool whole) {
  const bool has_min = std::isfinite(r.min), has_max = std::isfinite(r.max);
  if (!has_max && r.min == 0) return r.min_exclusive ? "POSITIVE" : "NONNEGATIVE";
  if (!has_max && r.min == 1 && whole && !r.min_exclusive) return "POSITIVE";
  if (!has_min && !has_max) return "";
  if (has_min && has_max && !r.min_exclusive)
    return fmt::format("in [{}, {}{}", show(r.min, whole), show(r.max, whole), r.max_exclusive ? ")" : "]");
  return bounds_text(r, whole);
}

// Why 1024: more compute threads than hardware threads only slow compute (they time-share the
// cores), so the useful maximum is the largest machine's hardware thread count (768 on a
// 2 x 192-core server today). A resumed run may ask for the thread count it was trained with on a
// smaller machine (bitwise-identical resume needs it), so the cap is fixed rather than a multiple
// of this machine's cores. Far beyond it, libgomp cannot create the threads (50000 exits 1 with
// its own message, 100000 segfaults: the kernel's pid_max is 32768 on common systems).
NumberRule thread_count_rule(const std::string& zero_means) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return between(0, kMaxThreads,
                 fmt::format("more threads than the largest machines' hardware threads only slow compute "
                             "(this machine has {} hardware thread{}; {})",
                             hw, hw == 1 ? "" : "s", zero_means));
}

std::string closest_name(const std::string& typed_in, const std::vector<std::string>& candidates) {
  const std::string typed = bare(typed_in);
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

}  // namespace ember::train
