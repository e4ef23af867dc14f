// The data of a run for `ember train`, `eval` and `predict`: a known dataset by name, or a folder
// of the user's own images (`--data path/to/images`), whose settings (size, channels, split,
// class names, normalisation) are written into config.json so eval, predict and resume see the
// same data the run was trained on.
#pragma once

#include <filesystem>
#include <string>

#include "ember/data/dataset.h"
#include "ember/train/data_path.h"
#include "ember/train/weights_info.h"

namespace ember::train {

inline constexpr const char* kImageFolder = "image-folder";  // the "data" value of a folder run

// Turns `--data PATH` (an existing directory that is not a known name) into data = "image-folder",
// data_dir = the absolute path; with data = "image-folder", makes data_dir absolute. Other values
// are left as they are. A --data-dir beside `--data PATH` is ignored, with a warning.
void normalise_data_arg(std::string& data, std::string& data_dir);
// A short label for run names: the dataset name, or the folder's own name.
std::string data_label(const std::string& data, const std::string& data_dir);

// Image-folder settings given on the command line (0: from the data).
struct FolderFlags {
  int64_t image_size = 0, channels = 0;
  double test_fraction = 0.2;
  int64_t max_pixels = data::kMaxImagePixels;  // --max-image-pixels (0: no limit)
  // The photo pipeline (data/photo_set.h): decoded per sample at image_size, augmented.
  bool photos = false;
  int64_t photo_size = 224;  // photos without --image-size: the model's input size
  data::Augment augment = data::Augment::Standard;
  data::ColorJitter jitter;  // --color-jitter
};

struct RunData {
  data::Dataset train, test;
  data::Dataset val;          // size 0 unless the folder has val/
  std::string details;        // extra banner lines for folders, '\n' between them ("" for known datasets)
  std::string config_json;    // for folders, a JSON object: image_size, channels, test_fraction, layout, classes,
                              // mean, std, look (the training images' brightness, for predict's check); "" else
};

// Below this many validation samples the best epoch is warned to be chosen on too few (one sample
// moves the accuracy by 2% or more, more than epochs of a converging run usually differ).
inline constexpr int64_t kFewValidationSamples = 50;
// The warning when a run's best epoch is chosen on `val_samples` (< kFewValidationSamples; "" else):
// from_folder: they are the image folder's val/; val_split: the share held out otherwise.
std::string few_validation_warning(int64_t val_samples, bool from_folder, double val_split);

// Loads train and test (and val) for `ember train`; limits > 0 keep a seeded, stratified subset of N
// samples (train::limit_split; a subset left with one class is a SettingError).
RunData load_run_data(const std::string& data, const std::filesystem::path& dir, const FolderFlags& flags,
                      uint64_t seed, int64_t limit_train, int64_t limit_test);
// The test split of a trained run for eval/predict, from its config.json ("data", "data_dir",
// "seed" and, for folders, "image_folder"), or for a folder run whose file stores only its input
// description (an older export: classes, mean, std, input shape), from that. dir: --data-dir (or
// --data PATH), else the run's.
data::Dataset load_run_test_data(const std::string& data, const std::filesystem::path& dir,
                                 const std::string& run_config_json, int64_t limit_test, const train::StoredInput& input,
                                 int64_t max_pixels);

}  // namespace ember::train
