// The `__metadata__` of ember's safetensors files (see weights_info.h): built from a run's model,
// dataset and training set, and read back with every value type-checked.
#include "ember/train/weights_info.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "ember/core/tensor.h"
#include "ember/data/dataset.h"
#include "ember/io/user_file.h"
#include "ember/nn/spec.h"

namespace ember::train {
namespace fs = std::filesystem;
using nlohmann::json;

std::map<std::string, std::string> to_metadata(const WeightsInfo& w) {
  std::map<std::string, std::string> m;
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) m[key] = v;
  };
  put("ember_version", w.ember_version);
  put("model", w.model);
  put("model_spec", w.model_spec);
  put("dataset", w.dataset);
  if (!w.input_shape.empty()) m["input_shape"] = json(w.input_shape).dump();
  if (!w.mean.empty()) m["mean"] = json(w.mean).dump();
  if (!w.std.empty()) m["std"] = json(w.std).dump();
  if (!w.classes.empty()) m["classes"] = json(w.classes).dump();
  put("config", w.config_json);
  return m;
}

WeightsInfo weights_info_from_metadata(const std::map<std::string, std::string>& m, const std::string& source) {
  WeightsInfo w;
  auto str = [&](const char* key) {
    auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  // A JSON list of T: anything else names the file and the key.
  auto list = [&]<class T>(const char* key, std::vector<T>& out, const char* what) {
    auto it = m.find(key);
    if (it == m.end()) return;
    json j = json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    bool ok = j.is_array();
    if (ok)
      for (const json& v : j) {
        if constexpr (std::is_same_v<T, std::string>) ok = ok && v.is_string();
        else if constexpr (std::is_integral_v<T>) ok = ok && v.is_number_unsigned() && v.get<uint64_t>() > 0;
        else ok = ok && v.is_number();
      }
    if (!ok)
      throw FormatError(fmt::format("'{}': __metadata__ \"{}\" must be a JSON list of {}, it is '{}'", source, key,
                                    what, it->second.substr(0, 60)),
                        "the file was changed by another tool; remove the key or pass --model/--data explicitly");
    out = j.get<std::vector<T>>();
  };
  w.ember_version = str("ember_version");
  w.model = str("model");
  w.model_spec = str("model_spec");
  w.dataset = str("dataset");
  list.operator()<int64_t>("input_shape", w.input_shape, "positive integers");
  list.operator()<float>("mean", w.mean, "numbers");
  list.operator()<float>("std", w.std, "numbers");
  list.operator()<std::string>("classes", w.classes, "strings");
  w.config_json = str("config");
  if (!w.config_json.empty() && !json::parse(w.config_json, nullptr, false).is_object())
    throw FormatError(fmt::format("'{}': __metadata__ \"config\" is not a JSON object", source),
                      "the file was changed by another tool; remove the key");
  return w;
}

WeightsInfo describe_run_weights(const std::string& model, const std::string& dataset, const data::Dataset& train,
                                 const fs::path& run_dir, const std::string& config_json) {
  WeightsInfo w;
  w.ember_version = version();
  w.model = model;
  w.dataset = dataset;
  w.input_shape = {train.channels(), train.height(), train.width()};
  w.mean = train.mean;
  w.std = train.std;
  w.classes = train.classes;
  // Only what finds the data again: the run's name and directory would make two runs' otherwise
  // identical weights files differ (a resumed run must end bitwise equal to an uninterrupted one).
  const json cfg = json::parse(config_json.empty() ? "{}" : config_json, nullptr, false);
  if (cfg.is_object()) {
    json data = json::object();
    for (const char* key : {"data", "data_dir", "seed", "image_folder"})
      if (cfg.contains(key)) data[key] = cfg[key];
    if (!data.empty()) w.config_json = data.dump();
  }
  // A spec model travels as its text: a weights file without its run can still be rebuilt.
  if (nn::is_spec_file(model)) {
    fs::path copy = run_dir / fs::path(model).filename();
    if (io::path_type(copy) == io::PathType::regular) w.model_spec = io::read_user_text(copy, io::kModelSpecFile);
    else if (io::path_type(model) == io::PathType::regular) w.model_spec = io::read_user_text(model, io::kModelSpecFile);
  }
  return w;
}

StoredInput stored_input(const WeightsInfo& info, const std::string& config_json, const std::string& dataset,
                         const std::string& source) {
  StoredInput s;
  s.dataset = dataset;
  if (info.input_shape.size() == 3 && !info.mean.empty() && !info.std.empty() && !info.classes.empty()) {
    s.input_shape = info.input_shape, s.mean = info.mean, s.std = info.std, s.classes = info.classes;
    return s;
  }
  const json cfg = json::parse(config_json.empty() ? "{}" : config_json, nullptr, false);
  const json folder = cfg.is_object() ? cfg.value("image_folder", json()) : json();
  if (folder.is_object()) {
    auto list = [&]<class T>(const char* key) -> std::optional<std::vector<T>> {
      const json v = folder.value(key, json());
      if (!v.is_array()) return std::nullopt;
      try {
        return v.get<std::vector<T>>();
      } catch (const json::exception&) {
        return std::nullopt;
      }
    };
    auto c = list.operator()<std::string>("classes");
    auto m = list.operator()<float>("mean"), d = list.operator()<float>("std");
    const json size = folder.value("image_size", json()), ch = folder.value("channels", json());
    if (!c || !m || !d || !size.is_number_unsigned() || !ch.is_number_unsigned())
      throw FormatError(fmt::format("'{}': the run's config has incomplete image_folder settings (image_size, channels, "
                                    "classes, mean, std)",
                                    source),
                        "train the run again with this version of ember");
    s.input_shape = {ch.get<int64_t>(), size.get<int64_t>(), size.get<int64_t>()};
    s.mean = *m, s.std = *d, s.classes = *c;
    return s;
  }
  if (s.dataset == "image-folder")
    throw FormatError(fmt::format("'{}' is from an image-folder run but stores neither the run's image_folder settings "
                                  "nor __metadata__ input_shape, mean, std and classes",
                                  source),
                      "export it again from its run (ember export RUN -o FILE.safetensors), or train the run again");
  if (s.dataset.empty())
    throw ValueError(fmt::format("'{}' does not say which dataset it was trained on", source),
                     "pass --data NAME (" + fmt::format("{}", fmt::join(data::known_dataset_names(), ", ")) + ")");
  const data::KnownDataset& k = data::known_dataset(s.dataset);
  s.input_shape = {k.channels, k.size, k.size};
  s.mean = k.mean, s.std = k.std, s.classes = k.classes;
  return s;
}

}  // namespace ember::train
