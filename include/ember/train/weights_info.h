// What a weights file says about itself: the `__metadata__` ember writes into every safetensors
// file (checkpoints and exports), so a file copied out of its run is enough for eval and predict.
//
// Keys (all values are strings, as the safetensors format requires; lists are JSON text):
//   ember_version  "0.1.0"
//   model          zoo name ("lenet5"), or the spec's file name ("my_net.toml")
//   model_spec     the spec's TOML text itself (only for spec models)
//   dataset        "fashion-mnist", "image-folder", ...
//   input_shape    "[1,28,28]"   (C, H, W) of one sample
//   mean, std      "[0.286]"     per channel, on the [0, 1] scale: x = (pixel / 255 - mean) / std
//   classes        "[\"T-shirt/top\",...]"  label i is classes[i]
//   config         the run's data settings (config.json's data, data_dir, seed, image_folder), so
//                  eval finds the same test set; in checkpoints and in
//                  `ember export --format safetensors` files
//   epoch, step    "3", "1407": how far training had got (checkpoints)
// Files without metadata (older checkpoints, other tools) read as an empty WeightsInfo.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::train {

struct WeightsInfo {
  std::string ember_version, model, model_spec, dataset;
  std::vector<int64_t> input_shape;  // (C, H, W); empty when unknown
  std::vector<float> mean, std;
  std::vector<std::string> classes;
  std::string config_json;  // "" when absent
  bool empty() const { return model.empty() && dataset.empty() && input_shape.empty(); }
};

// The string map written as `__metadata__` (absent fields are left out).
std::map<std::string, std::string> to_metadata(const WeightsInfo& info);
// Reads it back. Unknown keys are ignored (other tools add their own, e.g. {"format": "pt"});
// a known key whose value is not what ember writes is a FormatError naming `source` and the key.
WeightsInfo weights_info_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& source);

// The description of a training run's weights: model and dataset names, the training set's geometry,
// normalisation and class names, the data settings of `config_json`, and the model spec's text
// when `model` is a spec file whose copy is in `run_dir` (ember train keeps one there).
WeightsInfo describe_run_weights(const std::string& model, const std::string& dataset, const data::Dataset& train,
                                 const std::filesystem::path& run_dir, const std::string& config_json);

// What a checkpoint's model takes and gives, from what the checkpoint stores and nothing else (no
// dataset file is read, so `ember predict` works with the weights file alone): the weights file's
// __metadata__ (input_shape, mean, std, classes) first, then an image-folder run's config
// ("image_folder": image_size, channels, classes, mean, std), then the known dataset's table.
struct StoredInput {
  std::string dataset;               // "fashion-mnist", "image-folder", ...
  std::vector<int64_t> input_shape;  // (C, H, W)
  std::vector<float> mean, std;      // per channel, [0, 1] scale
  std::vector<std::string> classes;
};
// `dataset`: the run's dataset name (its manifest, the metadata or --data); `source` names the file in
// messages. Throws FormatError (incomplete image_folder settings; an image-folder run that stores no
// description) or ValueError (no dataset known: the hint names --data).
StoredInput stored_input(const WeightsInfo& info, const std::string& config_json, const std::string& dataset,
                         const std::string& source);

}  // namespace ember::train
