// Typed reads of JSON fields for files ember writes and reads back (checkpoint manifests, run
// configs): a value of the wrong type becomes a FormatError naming the file, the key, the type
// expected and what was found, instead of nlohmann's "[json.exception.type_error.302]".
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "ember/core/error.h"

namespace ember::io {

namespace detail_json {
// "the string \"abc\"", "the number 1.5", "null", "an array", ...
inline std::string describe(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (v.is_string()) return "the string " + text;
  if (v.is_boolean()) return "the boolean " + text;
  if (v.is_number()) return "the number " + text;
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return text;
}

template <class T>
const char* expected_name() {
  if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (std::is_same_v<T, bool>) return "true or false";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_unsigned_v<T>) return "a non-negative integer";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_same_v<T, nlohmann::json>) return "an object";
  else return "an object of numbers";
}

// True when `v` holds a T exactly (no float -> int truncation, no negative -> unsigned wrap,
// no out-of-range integer).
template <class T>
bool fits(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, std::string>) return v.is_string();
  else if constexpr (std::is_same_v<T, bool>) return v.is_boolean();
  else if constexpr (std::is_same_v<T, nlohmann::json>) return v.is_object();
  else if constexpr (std::is_floating_point_v<T>) return v.is_number();
  else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if constexpr (std::is_unsigned_v<T>) return x >= 0 && uint64_t(x) <= uint64_t(std::numeric_limits<T>::max());
      else return x >= int64_t(std::numeric_limits<T>::min()) && x <= int64_t(std::numeric_limits<T>::max());
    }
    return false;
  } else {  // std::map<std::string, double>
    if (!v.is_object()) return false;
    for (const auto& [k, x] : v.items())
      if (!x.is_number()) return false;
    return true;
  }
}
}  // namespace detail_json

// The value of obj[key] as T. `where` names the file ("checkpoint manifest 'runs/a/.../latest.json'");
// `key_path` is how the key is shown (e.g. "rng.seed"; default: key). Throws FormatError with
// `hint` when the key is missing or holds another type.
template <class T>
T json_get(const nlohmann::json& obj, const std::string& key, const std::string& where, const std::string& hint,
           const std::string& key_path = {}) {
  const std::string shown = key_path.empty() ? key : key_path;
  if (!obj.is_object() || !obj.contains(key))
    throw FormatError(where + ": the key \"" + shown + "\" is missing", hint);
  const nlohmann::json& v = obj[key];
  if (!detail_json::fits<T>(v))
    throw FormatError(where + ": \"" + shown + "\" must be " + detail_json::expected_name<T>() + ", it is " +
                          detail_json::describe(v),
                      hint);
  return v.get<T>();
}

// T may also be nlohmann::json (an object is expected) or std::map<std::string, double>.

// Like json_get, but `fallback` when the key is absent (a wrong type still throws).
template <class T>
T json_get_or(const nlohmann::json& obj, const std::string& key, T fallback, const std::string& where,
              const std::string& hint, const std::string& key_path = {}) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  return json_get<T>(obj, key, where, hint, key_path);
}

}  // namespace ember::io
