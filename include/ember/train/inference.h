// A trained model opened for inference, by one set of rules for every reader: `ember eval`,
// `ember predict`, `ember export` and the Python package's ember.load (and, for which file a path
// names, `ember train --init-from`). The path is a run directory (its best or
// last checkpoint), a checkpoint manifest or weights file inside a run, or a weights file on its
// own (ember's, with its __metadata__; PyTorch's or torchvision's, given --model). The model comes
// from the manifest, the file's metadata or the options; its input (shape, normalisation, classes)
// from what the checkpoint stores; the test set is read only when asked for.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/device.h"
#include "ember/data/dataset.h"
#include "ember/nn/module.h"
#include "ember/train/checkpoint.h"
#include "ember/train/image_check.h"
#include "ember/train/open_weights.h"
#include "ember/train/resume.h"
#include "ember/train/weights_info.h"
#include "ember/train/wording.h"

namespace ember::train {

// What the caller knows beyond the file (eval's and predict's flags). Empty strings: from the file.
struct InferenceOptions {
  std::string path;        // run directory, manifest, or weights file
  std::string checkpoint;  // a run's "best" or "last" ("": best)
  std::string model, data, data_dir;  // overrides: a zoo name or spec file, a dataset or image folder
  // The device ("": this default, which `ember eval`/`predict`/`export` and ember.load share) and the
  // precision (precision_choice.h's names), chosen by device_choice.h and precision_choice.h.
  std::string device = "auto", precision = "fp32";
  int64_t limit_test = 0;  // a seeded, stratified subset of the test set (0: all of it)
  int64_t max_pixels = data::kMaxImagePixels;  // images larger than this are refused before decoding
  // Bare torchvision weights: the class names (one per line) and the crop (0: 224).
  std::string classes_file;
  int64_t image_size = 0;
  // Read a little of a known dataset's test set, when installed, for `look` (predict's check).
  bool read_look = true;
  FrontEnd front_end = FrontEnd::Cli;  // whose words the hints use (`ember predict RUN` or ember.load)
};

struct InferenceModel {
  std::shared_ptr<nn::Module> model;
  std::string model_name;  // as shown: the zoo name or the spec's file name
  std::string recorded_model;  // what the file records ("net.toml" for a spec run; "" when nothing)
  std::string model_spec;  // a spec model's TOML text ("" for zoo models)
  std::string config_json; // the run's settings (the manifest's config, or the file's __metadata__)
  std::filesystem::path weights;  // the weights file read
  // What the model takes and gives, from what the checkpoint stores (no dataset file is read).
  StoredInput input;
  std::string data;        // the run's dataset name ("image-folder" for a folder run)
  std::string data_label;  // as shown: "fashion-mnist", "image-folder:/path/to/folder"
  data::Dataset test;      // eval and predict --index only (size 0 otherwise)
  std::optional<ImageLook> look;  // the training images' look, when known (predict's check)
  std::vector<std::string> classes;  // names of the model's outputs
  Device device;
  std::string precision = "fp32";  // --precision, as chosen for the device (precision_choice.h)
  CheckpointManifest manifest;
  ChosenCheckpoint chosen;  // which of a run's checkpoints (--checkpoint)
  // Bare weights of a torchvision architecture (a .pth from torchvision, or any file that says
  // nothing of its training data): images go through torchvision's evaluation transforms (resize
  // the shorter side to crop * 256 / 224, centre crop, ImageNet mean and std) instead of a dataset's.
  bool photo = false;
  // What loading had to say (a weights file's casts, keys it read through a prefix), for the user.
  std::vector<std::string> notes;
};

// A path given as the model that names no model ember opens: an image (`ember predict shirt.png`,
// the run forgotten: the hint names the latest run under runs/ when there is one) or an ONNX graph
// (it runs in onnxruntime; ember predicts with its own runs, checkpoints and safetensors exports).
// Throws SettingError saying which, with the call that works in front_end's words; returns for any
// other path (missing ones included: open_for_inference says what is wrong with those).
void refuse_non_model_path(const std::string& path, FrontEnd front_end);

// Opens `o.path`: the model built and its weights loaded (strict: every tensor by name), on its
// device in eval mode. need_test: also read the run's test set (eval, predict --index), checked to
// fit the model. SettingError for options that cannot apply (exit 2 in the CLI), FormatError for
// weights that do not fit (naming the model), IOError/DataError from the readers.
InferenceModel open_for_inference(const InferenceOptions& o, bool need_test);

}  // namespace ember::train
