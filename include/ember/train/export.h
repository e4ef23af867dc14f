// `ember export`: a trained run's model leaves ember as an ONNX graph or as a PyTorch-style
// safetensors state dict, each carrying what a user needs to feed it (input shape, normalisation,
// class names). docs/export.md shows the commands and the Python that loads the files.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/io/onnx.h"
#include "ember/io/safetensors.h"
#include "ember/nn/module.h"
#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"
#include "ember/train/wording.h"

namespace ember::train {

// The files an export writes.
enum class ExportFormat {
  Onnx,         // an ONNX graph (opset 17) with the normalisation inside
  Safetensors,  // a PyTorch-keyed state dict with ember's __metadata__ (input, classes, data settings)
  Torch,        // the file torch.save(model.state_dict()) writes (a zip of a pickle): torch.load reads it
};
// "onnx", "safetensors", "torch": the names --format and Model.export(format=) take.
std::vector<std::string> export_format_names();

// Which format an export writes: `format` when given (one of export_format_names(); "pt" and "pth"
// name torch too), else from the output file's extension (.onnx; .safetensors; .pt, .pth as
// torch.save names them). SettingError when neither says, with the choices in front_end's words
// (--format / format=).
ExportFormat export_format(const std::string& format, const std::filesystem::path& output, FrontEnd front_end);

// A checkpoint's model with its weights loaded, in eval mode on the CPU, and what its input is.
struct ExportSource {
  std::shared_ptr<nn::Module> model;
  std::string model_name;              // zoo name, or the spec's file name ("my_net.toml")
  std::string model_spec;              // the spec's TOML text; "" for zoo models
  std::string dataset;                 // "fashion-mnist", "image-folder", ...
  std::vector<int64_t> input_shape;    // (C, H, W)
  std::vector<float> mean, std;        // per channel, [0, 1] scale: x = (pixel / 255 - mean) / std
  std::vector<std::string> classes;    // label i is classes[i]
  std::string config_json;             // the run's data settings (data, data_dir, seed, image_folder); may be ""
  CheckpointManifest manifest;
  std::filesystem::path weights;       // the safetensors file the weights came from
  std::vector<std::string> notes;      // what opening it had to say (inference.h), for the user
  ChosenCheckpoint chosen;             // which of a run's checkpoints was opened (open_weights.h)
};

struct ExportOverrides {
  std::string model;  // --model: a zoo name or spec file, when the checkpoint does not say
  std::string data;   // --data: a known dataset name, when the checkpoint does not say
  std::string checkpoint;  // --checkpoint: a run's "best" or "last" ("": best)
};

// Opens `path` as `ember eval` and `predict` do (train::open_for_inference, on the CPU): a run
// directory (its best checkpoint), its checkpoints/ directory, a manifest, a step-N.safetensors
// inside a run, a weights file with ember's __metadata__, or bare torchvision weights given the
// --model. The model comes from the manifest (a spec model from the run's copy of the spec) or the
// file's metadata; the input from the dataset's known geometry and statistics, or, for image-folder
// runs, from the run's config (image_folder: image_size, channels, classes, mean, std). No dataset
// file is read. Throws IOError / FormatError as load_checkpoint, SettingError when the model or
// data is unknown (the hint names --model / --data), FormatError when the weights do not fit.
ExportSource load_export_source(const std::filesystem::path& path, const ExportOverrides& overrides = {});

// The `__metadata__` of an exported file (and the ONNX metadata_props): ember_version, model,
// model_spec (spec models), dataset, input_shape, mean, std, classes (lists as JSON text),
// input ("float32 (N, C, H, W), pixel / 255; normalised inside the graph" or the state dict note).
std::map<std::string, std::string> export_metadata(const ExportSource& source);

// The ONNX graph (nn::to_onnx) with the normalisation folded in as Sub/Div nodes; with
// fold_batch_norm, each convolution's batch norm folded into its weights (`ember export --fold-bn`).
io::OnnxModel export_onnx(const ExportSource& source, bool fold_batch_norm = false);

// The model's state_dict under PyTorch's key names (no "model/" prefix, no optimizer or scheduler
// state), float tensors as float32, num_batches_tracked as int64, plus export_metadata() and the
// run's data settings as "config" (train/weights_info.h), so ember eval finds its test set again.
io::StFile export_state_dict(const ExportSource& source);

// The same state dict (export_state_dict's tensors, under the same names) as the bytes
// torch.save(model.state_dict(), "model.pt") writes (io::pth_serialize): PyTorch loads it with
// torch.load(path, weights_only=True) and model.load_state_dict(strict=True). A torch.save file has
// no place for ember's metadata: the input shape, normalisation and classes are in the other two.
std::vector<uint8_t> export_torch(const ExportSource& source);

}  // namespace ember::train
