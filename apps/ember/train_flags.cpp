// The settings table turned into CLI11 options for `ember train`: names, help, shown default, and
// the table's own check as the validator, so a flag, a config file and a resumed manifest refuse
// a value with the same sentence.
#include "train_flags.h"

#include <fmt/format.h>

#include <algorithm>

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
            if (!s.is_text() || s.choices || s.check || !s.refuse_empty.empty()) {
              const train::Setting* row = &s;  // the table is static
              // `--model ResNet18` is resnet18: the value as ember spells it (a transform: CLI11's
              // check() may not change it), then checked.
              o->transform(CLI::Validator(
                  [row](std::string& v) {
                    v = train::canonical_setting_text(*row, v);
                    return train::check_given_setting_text(*row, v);
                  },
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
  // Value-less spellings of a setting's value from Hugging Face's Trainer, Lightning and timm, where
  // they mean what ember's value means (--amp: mixed precision where the device runs it fast).
  shorthands_ = {
      {"--fp16", "precision", "fp16", "Same as --precision fp16"},
      {"--bf16", "precision", "bf16", "Same as --precision bf16"},
      {"--amp", "precision", "auto", "Same as --precision auto (bf16 where the device does it fast, else fp32)"},
  };
  for (Shorthand& h : shorthands_) h.option = app.add_flag(h.flag)->description(h.help);
}

bool TrainFlags::given(const train::Setting& s) const {
  auto it = options_.find(s.key);
  if (it != options_.end() && it->second->count() > 0) return true;
  return std::any_of(shorthands_.begin(), shorthands_.end(),
                     [&](const Shorthand& h) { return h.key == s.key && h.option->count() > 0; });
}

void TrainFlags::apply_shorthands(train::TrainSettings& values) const {
  for (const Shorthand& h : shorthands_) {
    if (h.option->count() == 0) continue;
    const train::Setting& s = train::setting(h.key);
    std::string& field = values.*std::get<std::string train::TrainSettings::*>(s.field);
    const CLI::Option* own = options_.at(s.key);
    // The first shorthand given, or the setting's own flag, decides; another value is a conflict.
    const Shorthand* other = nullptr;
    for (const Shorthand& o : shorthands_)
      if (&o != &h && o.key == h.key && o.option->count() > 0 && std::string(o.value) != h.value) other = &o;
    if (other)
      throw UsageError(fmt::format("{} and {} ask for different {} ({} and {})", h.flag, other->flag, s.flag(),
                                   h.value, other->value),
                       fmt::format("pass one of them, or {} VALUE", s.flag()));
    if (own->count() > 0 && field != h.value)
      throw UsageError(fmt::format("{} means {} {}, but {} {} is given too", h.flag, s.flag(), h.value, s.flag(),
                                   field),
                       fmt::format("pass only one of them"));
    field = h.value;
  }
}

}  // namespace ember::cli
