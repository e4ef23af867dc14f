// `ember train --config FILE`: settings from a TOML file (toml++), at the top level or in a
// [train] table, named by their config key or any of their flags' long names. Every entry is
// checked before any is used — unknown keys (with "did you mean"), wrong types, values the flag
// would refuse, a setting given twice — and each error names the file and the line.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ember/io/user_file.h"
#include "ember/train/settings.h"
#include "settings_json.h"

namespace ember::train {
namespace {

constexpr const char* kSection = "train";  // the table `ember train` reads besides the top level

struct Entry {
  const Setting* setting;
  std::string key;  // as written, with its table: "train.batch-size"
  uint32_t line;
  nlohmann::json value;
};

std::string where(const std::filesystem::path& file, uint32_t line) {
  return fmt::format("config file '{}', line {}", file.string(), line);
}

// `the string "3"`, `the integer 3`, `an array`: what a TOML value is, for messages.
std::string describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "the string " + nlohmann::json(std::string(n.as_string()->get())).dump();
    case toml::node_type::integer: return fmt::format("the integer {}", n.as_integer()->get());
    case toml::node_type::floating_point: return fmt::format("the number {}", n.as_floating_point()->get());
    case toml::node_type::boolean: return n.as_boolean()->get() ? "the boolean true" : "the boolean false";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

// The JSON twin of a scalar TOML value (null for arrays, tables and dates: never of a setting's kind).
nlohmann::json to_json(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return std::string(n.as_string()->get());
    case toml::node_type::integer: return n.as_integer()->get();
    case toml::node_type::floating_point: return n.as_floating_point()->get();
    case toml::node_type::boolean: return n.as_boolean()->get();
    default: return nullptr;
  }
}

std::vector<std::string> all_names() {
  std::vector<std::string> out;
  for (const Setting& s : train_settings()) {
    out.push_back(s.key);
    for (const auto& l : s.long_names()) out.push_back(l);  // after the key: a tie names the key
  }
  return out;
}

const char* kHint = "keys are the settings' names (batch_size or batch-size, as the flag without its dashes), at the "
                    "top level or in a [train] table; `ember train --help` lists them";

// Checks one `key = value` and adds it to `out`.
void read_entry(const std::filesystem::path& file, const std::string& table, const std::string& key,
                const toml::node& node, std::vector<Entry>& out) {
  const uint32_t line = node.source().begin.line;
  const std::string shown = table.empty() ? key : table + "." + key;
  if (key == "resume" || key == "config")
    throw SettingError(fmt::format("{}: \"{}\" cannot be set in a config file", where(file, line), shown),
                       fmt::format("pass --{} on the command line", key));
  const Setting* s = find_setting(key);
  if (!s) {
    std::string msg = fmt::format("{}: unknown setting \"{}\"", where(file, line), shown);
    if (node.is_table() && table.empty())
      msg += fmt::format(" (settings go at the top level or in a [{}] table)", kSection);
    const std::string guess = closest_name(key, node.is_table() ? std::vector<std::string>{kSection} : all_names());
    if (!guess.empty()) msg += fmt::format("; did you mean {}?", node.is_table() ? "[" + guess + "]" : guess);
    throw SettingError(msg, kHint);
  }
  nlohmann::json value = to_json(node);
  if (value.is_string()) value = canonical_setting_text(*s, value.get<std::string>());  // "SGD" is sgd
  if (value.is_null() || !detail::kind_fits(*s, value))
    throw SettingError(fmt::format("{}: \"{}\" must be {}, it is {}", where(file, line), shown,
                                   detail::expected_type(*s), describe(node)),
                       s->is_text() ? "TOML strings are quoted: model = \"lenet5\"" : kHint);
  const std::string err = check_given_setting_text(*s, detail::flag_text(value));
  if (!err.empty())
    throw SettingError(fmt::format("{}: {} = {}: {}", where(file, line), shown, detail::flag_text(value), err),
                       fmt::format("run 'ember train --help' for the valid values of {}", s->flag()));
  for (const Entry& e : out)
    if (e.setting == s)
      throw SettingError(fmt::format("{}: \"{}\" sets {} again (line {} set it as \"{}\")", where(file, line), shown,
                                     s->key, e.line, e.key),
                         "keep one of them");
  out.push_back({s, shown, line, value});
}

}  // namespace

std::vector<const Setting*> apply_settings_file(TrainSettings& v, const std::filesystem::path& file,
                                                const GivenFn& given) {
  const std::string text = io::read_user_text(file, io::kConfigFile);
  toml::table root;
  try {
    root = toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    throw SettingError(fmt::format("{}, column {}: not valid TOML: {}", where(file, e.source().begin.line),
                                   e.source().begin.column, e.description()),
                       "see https://toml.io; e.g. epochs = 3, model = \"lenet5\", and [train] before a table's keys");
  }
  // Every entry is checked, and every bad one named at once (a file with two mistakes is fixed in
  // one round, not two).
  std::vector<Entry> entries;
  std::vector<std::pair<uint32_t, SettingError>> bad;  // in the file's line order
  auto read = [&](const std::string& table, const std::string& key, const toml::node& node) {
    try {
      read_entry(file, table, key, node, entries);
    } catch (const SettingError& e) {
      bad.emplace_back(node.source().begin.line, e);
    }
  };
  for (auto&& [k, node] : root) {
    const std::string key(k.str());
    if (key == kSection && node.is_table()) {
      for (auto&& [k2, inner] : *node.as_table()) read(kSection, std::string(k2.str()), inner);
    } else {
      read("", key, node);
    }
  }
  std::stable_sort(bad.begin(), bad.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (bad.size() == 1) throw bad.front().second;
  if (!bad.empty()) {
    std::string msg = fmt::format("{} settings in config file '{}' cannot be used:", bad.size(), file.string());
    for (const auto& [line, e] : bad) msg += std::string("\n  ") + e.what();
    throw SettingError(msg, "run 'ember train --help' for each setting's name and valid values");
  }
  std::vector<const Setting*> set;
  for (const Entry& e : entries) {
    if (given(*e.setting)) continue;  // a flag on the command line wins
    detail::assign(*e.setting, v, e.value);
    set.push_back(e.setting);
  }
  return set;
}

}  // namespace ember::train
