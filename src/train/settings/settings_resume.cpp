// A resumed run's settings read back from its checkpoint manifest: each value type-checked and
// passed through its flag's own check before it is used, so an edited or damaged manifest
// ("batch_size": 0, "threads": 100000, "lr": "fast") is refused with the flag's message instead of
// crashing the run (SIGFPE, SIGSEGV) or printing a JSON library exception.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ember/train/resume.h"
#include "ember/train/settings.h"
#include "io/json_fields.h"
#include "settings_json.h"

namespace ember::train {

std::vector<std::string> adopt_run_settings(TrainSettings& v, const std::string& config_json,
                                            const std::string& manifest, const GivenFn& given) {
  const RunSettings rs(config_json, manifest);  // FormatError when the manifest has no run config
  const nlohmann::json j = nlohmann::json::parse(config_json);
  std::vector<std::string> warnings;
  for (const Setting& s : train_settings()) {
    if (s.resume == ResumeRule::Invocation) continue;
    const nlohmann::json* obj = &j;
    std::string shown = s.key;
    if (!s.section.empty()) {
      // Recorded inside another object (an image folder's settings): only runs that have it.
      if (!j.contains(s.section) || !j[s.section].is_object()) continue;
      obj = &j[s.section];
      shown = s.section + "." + s.key;
    }
    const bool recorded = obj->contains(s.key);
    if (s.resume == ResumeRule::Extend && (given(s) || !recorded)) continue;
    nlohmann::json value;
    if (recorded) {
      value = (*obj)[s.key];
      if (!detail::kind_fits(s, value))
        throw SettingError(fmt::format("{}: \"config.{}\" must be {}, it is {}", rs.where(), shown,
                                       detail::expected_type(s), io::detail_json::describe(value)),
                           rs.hint());
      const std::string text = detail::flag_text(value);
      const std::string err = check_setting_text(s, text);
      if (!err.empty())
        throw SettingError(
            fmt::format("{}: the run's {} = {} is not a valid {}: {}", rs.where(), shown, text, s.flag(), err),
            rs.hint());
    } else if (!s.section.empty()) {
      value = nlohmann::json::parse(setting_json(s, TrainSettings{}));  // the section's own default
    } else if (!s.absent.empty()) {
      value = nlohmann::json::parse(s.absent);  // a run from before the setting existed
    } else {
      throw FormatError(fmt::format("{}: the run config has no \"{}\"", rs.where(), shown), rs.hint());
    }
    const std::string before = setting_json(s, v);
    detail::assign(s, v, value);
    if (s.resume == ResumeRule::Identity && given(s) && setting_json(s, v) != before)
      warnings.push_back(fmt::format("{} is ignored with --resume: the run was started with {} = {}", s.flag(), s.key,
                                     setting_json(s, v)));
  }
  return warnings;
}

}  // namespace ember::train
