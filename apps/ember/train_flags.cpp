// The settings table turned into CLI11 options for `ember train`: names, help, shown default, and
// the table's own check as the validator, so a flag, a config file and a resumed manifest refuse
// a value with the same sentence.
#include "train_flags.h"

namespace ember::cli {
namespace {

// The word --help shows after the type: "{sgd,adam,adamw}", "in [0, 1]", "NAME or FOLDER".
std::string value_word(const train::Setting& s) {
  if (!s.value_word.empty()) return s.value_word;
  if (s.choices) {
    std::string w;
    for (const auto& c : s.choices()) w += (w.empty() ? "" : ",") + c;
    return "{" + w + "}";
  }
  return s.is_text() ? "" : train::number_rule_word(s.rule, s.is_whole());
}

}  // namespace

TrainFlags::TrainFlags(CLI::App& app, train::TrainSettings& values) {
  for (const train::Setting& s : train::train_settings()) {
    CLI::Option* opt = std::visit(
        [&](auto m) -> CLI::Option* {
          auto& field = values.*m;
          if constexpr (std::is_same_v<std::remove_reference_t<decltype(field)>, bool>) {
            return app.add_flag(s.flags, field, s.help);
          } else {
            CLI::Option* o = app.add_option(s.flags, field, s.help);
            if (!s.is_text() || s.choices || s.check) {
              const train::Setting* row = &s;  // the table is static
              o->check(CLI::Validator([row](std::string& v) { return train::check_setting_text(*row, v); },
                                      value_word(s)));
            }
            if (s.show_default) o->capture_default_str();
            return o;
          }
        },
        s.field);
    if (s.hidden) opt->group("");
    options_[s.key] = opt;
  }
}

bool TrainFlags::given(const train::Setting& s) const {
  auto it = options_.find(s.key);
  return it != options_.end() && it->second->count() > 0;
}

}  // namespace ember::cli
