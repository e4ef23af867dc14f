// Known datasets and image folders behind one call for train, eval and predict; a folder run's
// settings travel in config.json (and so in every checkpoint's manifest).
#include "ember/train/run_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "ember/train/image_check.h"
#include "ember/core/error.h"
#include "ember/data/photo_cache.h"
#include "ember/train/dataset.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::train {
namespace fs = std::filesystem;
namespace {

bool is_known(const std::string& v) {
  auto names = data::known_dataset_names();
  return std::find(names.begin(), names.end(), v) != names.end();
}

bool is_directory(const std::string& v) {
  std::error_code ec;
  return !v.empty() && fs::is_directory(v, ec);
}

std::string join(const std::vector<std::string>& v, size_t max_shown) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max_shown; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max_shown) s += fmt::format(", ... ({} more)", v.size() - max_shown);
  return s;
}

}  // namespace

void normalise_data_arg(std::string& data, std::string& data_dir) {
  data = expand_user(data);
  data_dir = expand_user(data_dir);
  std::string folder;
  if (data == kImageFolder) folder = data_dir;               // --data image-folder --data-dir PATH
  else if (!is_known(data) && is_directory(data)) folder = data;  // --data PATH
  else if (!is_known(data) && !data.empty() && data::is_photo_cache(data)) folder = data;  // --data photos.ember
  if (folder.empty()) return;
  std::error_code ec;
  if (folder == data && !data_dir.empty() && !fs::equivalent(data, data_dir, ec))
    warn(fmt::format("--data-dir {} is ignored: --data {} names the image folder itself", data_dir, data));
  // Absolute, so eval and predict find it from any directory.
  data_dir = fs::absolute(folder).lexically_normal().string();
  if (data_dir.size() > 1 && data_dir.back() == '/') data_dir.pop_back();
  data = kImageFolder;
}

std::string data_label(const std::string& data, const std::string& data_dir) {
  if (data != kImageFolder || data_dir.empty()) return data;
  std::string name = fs::path(data_dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(data_dir).lexically_normal().parent_path().filename().string();
  return name.empty() ? data : name;
}

RunData load_run_data(const std::string& data, const fs::path& dir, const FolderFlags& flags, uint64_t seed,
                      int64_t limit_train, int64_t limit_test) {
  RunData r;
  nlohmann::json config;
  if (data != kImageFolder) {
    r.train = train::load_split(data, dir, true, limit_train, seed);
    r.test = train::load_split(data, dir, false, limit_test, seed);
    return r;
  }
  data::ImageFolderSplitOptions o;
  o.size = flags.image_size, o.channels = flags.channels, o.test_fraction = flags.test_fraction, o.seed = seed;
  o.max_pixels = flags.max_pixels;
  o.photos = flags.photos, o.photo_size = flags.photo_size, o.augment = flags.augment, o.jitter = flags.jitter;
  data::ImageFolderSplits s = data::load_image_folder_splits(dir, o);
  r.train = train::limit_split(s.train, limit_train, seed, true);
  r.test = train::limit_split(s.test, limit_test, seed, false);
  r.val = std::move(s.val);
  config = {{"image_size", r.train.height()}, {"channels", r.train.channels()}, {"test_fraction", flags.test_fraction},
              {"layout", s.layout}, {"classes", r.train.classes}, {"mean", r.train.mean}, {"std", r.train.std}};
  if (flags.photos) {
    // eval and predict rebuild the evaluation transforms from these.
    config["photos"] = true;
    config["augment"] = data::augment_name(flags.augment);
    if (flags.jitter.any()) config["color_jitter"] = flags.jitter.describe();
  } else {
    // What predict compares a user's image with, kept so it never has to read the folder again.
    const ImageLook look = look_of(r.train.images.slice(0, 0, std::min<int64_t>(r.train.size(), 2000)));
    config["look"] = {{"mean", std::round(look.mean * 100) / 100}, {"border", std::round(look.border * 100) / 100}};
  }
  r.details = fmt::format("{}\n{}{}\nclasses {}", s.layout,
                          s.size_source.empty() ? std::string("size given") : s.size_source,
                          r.val.size() ? fmt::format("\n{} val images (evaluated each epoch; test/ at the end)", r.val.size())
                                       : "",
                          join(r.train.classes, 8));
  r.config_json = config.dump();
  return r;
}

std::string few_validation_warning(int64_t val_samples, bool from_folder, double val_split) {
  if (val_samples <= 0 || val_samples >= kFewValidationSamples) return "";
  return fmt::format("the best epoch is chosen on {} (fewer than {}: one sample moves the accuracy by {:.1f}%), so "
                     "which epoch eval, predict and export take is largely chance; {}, or compare with `ember eval "
                     "RUN --checkpoint last`",
                     plural(val_samples, "validation sample"), kFewValidationSamples, 100.0 / double(val_samples),
                     from_folder ? "put more images in val/"
                                 : fmt::format("hold out more with --val-split (now {:g})", val_split));
}

data::Dataset load_run_test_data(const std::string& data, const fs::path& dir, const std::string& run_config_json,
                                 int64_t limit_test, const train::StoredInput& input, int64_t max_pixels) {
  const nlohmann::json cfg = run_config_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(run_config_json);
  const uint64_t seed = cfg.is_object() ? cfg.value("seed", uint64_t(0)) : 0;
  // A quick look (`eval --limit-test 1`) may hold one class: only training refuses that.
  if (data != kImageFolder)
    return train::limit_split(train::load_split(data, dir, false, 0, seed), limit_test, seed, false, true);
  nlohmann::json f = cfg.is_object() ? cfg.value("image_folder", nlohmann::json()) : nlohmann::json();
  const bool described = f.is_object() && f.contains("classes") && f.contains("mean") && f.contains("std");
  if (!described) {  // an export from before exports carried the run's config: its input description
    f = {{"image_size", input.input_shape.at(1)}, {"channels", input.input_shape.at(0)}, {"classes", input.classes},
         {"mean", input.mean}, {"std", input.std}};
  }
  if (dir.empty())
    throw SettingError("the run was trained on an image folder, but no folder is known",
                     "pass the folder with --data-dir PATH");
  data::ImageFolderSplitOptions o;
  o.size = f.value("image_size", int64_t(0));
  o.channels = f.value("channels", int64_t(0));
  o.test_fraction = f.value("test_fraction", 0.2);
  o.seed = seed;
  o.load_train = false;
  o.classes = f["classes"].get<std::vector<std::string>>();
  o.mean = f["mean"].get<std::vector<float>>();
  o.std = f["std"].get<std::vector<float>>();
  o.max_pixels = max_pixels;
  o.photos = f.value("photos", false);
  const bool split_layout = fs::is_directory(dir / "train") || fs::is_directory(dir / "test");
  if (!described && !split_layout && !(cfg.is_object() && cfg.contains("seed")))
    warn(fmt::format("the weights file does not say which seed split '{}' into train and test: the images held out "
                     "with seed 0 ({:g}% per class) may include images the model was trained on",
                     dir.string(), 100 * o.test_fraction));
  data::Dataset test;
  try {
    test = data::load_image_folder_splits(dir, o).test;
  } catch (const IOError& e) {
    throw IOError(e.what(), "the run was trained on that folder; pass its new place with --data-dir PATH");
  }
  return train::limit_split(test, limit_test, seed, false, true);
}

}  // namespace ember::train
