// A setting's value arriving as data (a resumed manifest's JSON, a config file's TOML converted to
// JSON): is it of the setting's kind, how would the flag spell it, and storing it in the field.
// Shared by settings_resume.cpp and settings_file.cpp so both check values the same way.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ember/train/settings.h"

namespace ember::train::detail {

// "an integer", "a non-negative integer", "a number", "true or false", "a string".
inline std::string expected_type(const Setting& s) {
  if (s.is_text()) return "a string";
  if (s.is_bool()) return "true or false";
  if (!s.is_whole()) return "a number";
  return std::holds_alternative<uint64_t TrainSettings::*>(s.field) ? "a non-negative integer" : "an integer";
}

// The kind only: a string for text, a boolean for flags, a number for reals, an integer for whole
// numbers. Ranges (and what the field's type holds) are the flag's check, run on flag_text().
inline bool kind_fits(const Setting& s, const nlohmann::json& v) {
  if (s.is_text()) return v.is_string();
  if (s.is_bool()) return v.is_boolean();
  if (!s.is_whole()) return v.is_number();
  return v.is_number_integer();  // signed or unsigned JSON integers
}

// As typed on a command line: strings bare, numbers in the shortest form that reads back the same
// ("0.002", "nan"), booleans as true/false.
inline std::string flag_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

// Stores `v` (kind_fits and the flag's check passed, so it fits the field's type).
inline void assign(const Setting& s, TrainSettings& t, const nlohmann::json& v) {
  std::visit([&](auto m) { t.*m = v.get<std::remove_reference_t<decltype(t.*m)>>(); }, s.field);
}

}  // namespace ember::train::detail
