// Text that fits a terminal: the display width of UTF-8 text (wide CJK and emoji count 2,
// combining marks 0), padding by that width, word wrapping, and the --help formatter that wraps
// every description, footer and subcommand list to 80 columns.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "cli.h"

namespace ember::cli {
namespace {

// One code point from UTF-8 at s[i] (advancing i); a malformed byte reads as itself.
uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 1;
  if (len == 1 || i + size_t(len) > s.size()) return ++i, b0;
  uint32_t cp = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
    if ((b >> 6) != 0x2) return ++i, b0;
    cp = (cp << 6) | (b & 0x3F);
  }
  i += size_t(len);
  return cp;
}

// wcwidth's ranges for the characters class names and messages use: combining marks take no
// column, East Asian wide and fullwidth characters and emoji take two.
int code_point_width(uint32_t c) {
  if (c == 0 || c == 0x200B || c == 0x200D || c == 0xFEFF) return 0;
  if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x0483 && c <= 0x0489) || (c >= 0x0591 && c <= 0x05BD) ||
      (c >= 0x0610 && c <= 0x061A) || (c >= 0x064B && c <= 0x065F) || (c >= 0x0E31 && c <= 0x0E3A && c != 0x0E32 && c != 0x0E33) ||
      (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
      (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xFE20 && c <= 0xFE2F))
    return 0;
  if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
      (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
      (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
      (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
      (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD))
    return 2;
  return 1;
}

// The help formatter: CLI11's layout (names in a left column of column_width), every description
// wrapped to the 80 columns beside or under it.
class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return row(make_option_name(opt, is_positional) + make_option_opts(opt), make_option_desc(opt));
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    return row(sub->get_display_name(true), sub->get_description());
  }
  std::string make_description(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_description(app), kHelpColumns);
  }
  std::string make_footer(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_footer(app), kHelpColumns);
  }

 private:
  // "  NAME   description" with the description wrapped in the right column (under the name when
  // the name fills the left column), as CLI11's detail::format_help lays it out.
  std::string row(const std::string& name, const std::string& description) const {
    std::ostringstream out;
    const size_t wid = get_column_width();
    CLI::detail::format_help(out, name, wrap_text(description, kHelpColumns - int(wid)), wid);
    return out.str();
  }
};

}  // namespace

int display_width(std::string_view text) {
  int w = 0;
  for (size_t i = 0; i < text.size();) w += code_point_width(next_code_point(text, i));
  return w;
}

std::string truncate_to_width(const std::string& text, int width) {
  if (display_width(text) <= width) return text;
  int w = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t next = i;
    const int cw = code_point_width(next_code_point(text, next));
    if (w + cw > width - 3) break;
    w += cw, i = next;
  }
  return text.substr(0, i) + "...";
}

std::string pad_right(const std::string& text, int width) {
  return text + std::string(size_t(std::max(0, width - display_width(text))), ' ');
}

std::string wrap_text(const std::string& text, int width, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string line = text.substr(start, end - start);
    // Each line keeps its leading spaces and the spaces between its words (aligned columns);
    // a break replaces the spaces it falls on, and the continuation line starts with the line's
    // leading spaces plus `indent`.
    const size_t lead = std::min(line.find_first_not_of(' '), line.size());
    const std::string cont = line.substr(0, lead) + indent;
    std::string cur = line.substr(0, lead);
    int cur_w = display_width(cur);
    bool fresh = true;  // nothing but the indent on `cur` yet
    for (size_t i = lead; i < line.size();) {
      const size_t word_end = std::min(line.find(' ', i), line.size());
      const size_t next = std::min(line.find_first_not_of(' ', word_end), line.size());
      const std::string word = line.substr(i, word_end - i);
      const int ww = display_width(word);
      if (!fresh && cur_w + ww > width) {
        while (!cur.empty() && cur.back() == ' ') cur.pop_back();
        out += cur + "\n";
        cur = cont, cur_w = display_width(cont);
      }
      cur += word, cur_w += ww, fresh = false;
      if (next < line.size()) {
        const std::string gap = line.substr(word_end, next - word_end);
        cur += gap, cur_w += int(gap.size());
      }
      i = next;
    }
    out += cur;
    if (last) break;
    out += '\n';
    start = end + 1;
  }
  std::replace(out.begin(), out.end(), kKeepTogether, ' ');
  return out;
}

std::string exit_codes_footer(const std::string& zero) {
  const std::pair<int, std::string> codes[] = {
      {kExitOk, zero},
      {kExitFailed, "the run failed"},
      {kExitUsage, "usage error (flags, --config file, model spec)"},
      {kExitInternal, "internal error (a bug in ember)"},
      {kExitSigint, "interrupted (SIGINT)"},
      {kExitSigterm, "terminated (SIGTERM)"},
  };
  std::string s = "Exit codes:";
  for (size_t i = 0; i < std::size(codes); ++i) {
    std::string phrase = std::to_string(codes[i].first) + " " + codes[i].second;
    std::replace(phrase.begin(), phrase.end(), ' ', kKeepTogether);
    s += (i ? ", " : " ") + phrase;
  }
  return s + ".";
}

std::string wrap_banner(const std::string& text) {
  std::string out;
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = std::min(text.find('\n', a), text.size());
    const std::string line = text.substr(a, b - a);
    // "device     cpu — ...": continuation lines start under the value, 11 columns in.
    out += wrap_text(line, kHelpColumns, line.starts_with(" ") ? "" : std::string(11, ' '));
    if (b < text.size()) out += '\n';
  }
  return out;
}

std::shared_ptr<CLI::Formatter> help_formatter() { return std::make_shared<WrappingFormatter>(); }

}  // namespace ember::cli
