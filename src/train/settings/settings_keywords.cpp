// Settings given by name from a program (ember.fit's keyword arguments): the same table, kind
// checks and flag sentences as --config files (settings_file.cpp) and the command line.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ember/train/settings.h"
#include "settings_json.h"

namespace ember::train {
namespace {

std::vector<std::string> all_keys() {
  std::vector<std::string> out;
  for (const Setting& s : train_settings()) out.push_back(s.key);
  return out;
}

}  // namespace

std::vector<const Setting*> apply_settings_values(TrainSettings& v, const std::string& values_json) {
  const nlohmann::json values = nlohmann::json::parse(values_json);
  if (!values.is_object()) throw SettingError("settings must be given as name = value pairs");
  std::vector<const Setting*> set;
  for (const auto& [name, value] : values.items()) {
    const Setting* s = find_setting(name);
    if (!s) {
      std::string msg = fmt::format("unknown setting '{}'", name);
      if (const std::string guess = closest_name(name, all_keys()); !guess.empty())
        msg += fmt::format("; did you mean {}?", guess);
      throw SettingError(msg, "the settings are `ember train`'s flags, with '_' for '-' (batch_size=128)");
    }
    nlohmann::json v_in = value;
    if (v_in.is_string()) v_in = canonical_setting_text(*s, v_in.get<std::string>());  // model="ResNet18"
    // A keyword's error in Python's terms: its name where the flag's sentence says --flag, and a hint
    // (issue 48, item 17: `ember.fit(epochs=0)` had none).
    const std::string hint = fmt::format("{} takes the values of `ember train {}` (`ember train --help` lists them)",
                                         name, s->flag());
    if (v_in.is_null() || !detail::kind_fits(*s, v_in))
      throw SettingError(fmt::format("{} must be {}, it is {}", name, detail::expected_type(*s), v_in.dump()), hint);
    if (std::string err = check_given_setting_text(*s, detail::flag_text(v_in)); !err.empty()) {
      for (size_t at = err.find(s->flag()); at != std::string::npos; at = err.find(s->flag(), at + name.size()))
        err.replace(at, s->flag().size(), name);
      throw SettingError(fmt::format("{}={}: {}", name, detail::flag_text(v_in), err), hint);
    }
    detail::assign(*s, v, v_in);
    set.push_back(s);
  }
  return set;
}

}  // namespace ember::train
