// Known datasets and image folders behind one call for train, eval and predict; a folder run's
// settings travel in config.json (and so in every checkpoint's manifest).
#include "data_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli.h"
#include "ember/core/error.h"
#include "ember/train/dataset.h"

namespace ember::cli {
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

void limit(data::Dataset& ds, int64_t n) {
  if (n > 0 && n < ds.size()) {
    ds.images = ds.images.narrow(0, 0, n);  // contiguous: a prefix of a contiguous tensor
    ds.labels = ds.labels.narrow(0, 0, n);
  }
}

std::string join(const std::vector<std::string>& v, size_t max_shown) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max_shown; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > max_shown) s += fmt::format(", ... ({} more)", v.size() - max_shown);
  return s;
}

}  // namespace

void normalise_data_arg(std::string& data, std::string& data_dir) {
  std::string folder;
  if (data == kImageFolder) folder = data_dir;               // --data image-folder --data-dir PATH
  else if (!is_known(data) && is_directory(data)) folder = data;  // --data PATH
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
  if (data != kImageFolder) {
    r.train = train::load_split(data, dir, true, limit_train);
    r.test = train::load_split(data, dir, false, limit_test);
    return r;
  }
  data::ImageFolderSplitOptions o;
  o.size = flags.image_size, o.channels = flags.channels, o.test_fraction = flags.test_fraction, o.seed = seed;
  data::ImageFolderSplits s = data::load_image_folder_splits(dir, o);
  r.train = std::move(s.train), r.test = std::move(s.test), r.val = std::move(s.val);
  limit(r.train, limit_train);
  limit(r.test, limit_test);
  r.config = {{"image_size", r.train.height()}, {"channels", r.train.channels()}, {"test_fraction", flags.test_fraction},
              {"layout", s.layout}, {"classes", r.train.classes}, {"mean", r.train.mean}, {"std", r.train.std}};
  r.details = fmt::format("{}\n{}{}\nclasses {}", s.layout, s.size_source.empty() ? "size given" : s.size_source,
                          r.val.size() ? fmt::format("\n{} val images (evaluated each epoch; test/ at the end)", r.val.size())
                                       : "",
                          join(r.train.classes, 8));
  return r;
}

data::Dataset load_run_test_data(const std::string& data, const fs::path& dir, const nlohmann::json& cfg,
                                 int64_t limit_test) {
  if (data != kImageFolder) return train::load_split(data, dir, false, limit_test);
  const nlohmann::json f = cfg.is_object() ? cfg.value("image_folder", nlohmann::json::object()) : nlohmann::json::object();
  if (!f.is_object() || !f.contains("classes") || !f.contains("mean") || !f.contains("std"))
    throw FormatError("the run's config has no image_folder settings (classes, mean, std)",
                      "train the run again with this version of ember");
  if (dir.empty())
    throw UsageError("the run was trained on an image folder, but no folder is known",
                     "pass the folder with --data-dir PATH");
  data::ImageFolderSplitOptions o;
  o.size = f.value("image_size", int64_t(0));
  o.channels = f.value("channels", int64_t(0));
  o.test_fraction = f.value("test_fraction", 0.2);
  o.seed = cfg.value("seed", uint64_t(0));
  o.load_train = false;
  o.classes = f["classes"].get<std::vector<std::string>>();
  o.mean = f["mean"].get<std::vector<float>>();
  o.std = f["std"].get<std::vector<float>>();
  data::Dataset test;
  try {
    test = data::load_image_folder_splits(dir, o).test;
  } catch (const IOError& e) {
    throw IOError(e.what(), "the run was trained on that folder; pass its new place with --data-dir PATH");
  }
  limit(test, limit_test);
  return test;
}

}  // namespace ember::cli
