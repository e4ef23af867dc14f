// Loading weights into a model from a file ember did not necessarily write: `ember train
// --init-from FILE` (a new run that starts from these weights), and eval/predict of a bare file.
//
// Accepted: safetensors files from ember (a checkpoint, whose model is under "model/" next to
// "optim/*" and "sched/*" state, or an export without prefix), from PyTorch
// (`safetensors.torch.save_file(model.state_dict(), ...)`: keys like "conv1.weight", the zoo's
// names), with or without a common prefix ("model.", "module.", "model/", ...; found by matching
// the file's keys against the model's), and a run directory or manifest (its latest checkpoint).
// Float16, bfloat16 and float64 tensors are cast to the model's dtype (and said so in the notes).
// BatchNorm's num_batches_tracked may be missing (kept at its fresh value, as PyTorch does) or
// float (`{k: v.float()}`: cast back to int64 when it holds whole numbers); both are noted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/train/checkpoint.h"

namespace ember::train {

struct WeightLoadOptions {
  // Fine-tuning: the model may have keys the file lacks (a new head: they keep their fresh
  // initialisation), and the head (the model's last layer with parameters) may differ in shape
  // (reinitialised). Keys the model does not have are ignored. Without it, any of these is an error.
  bool partial = false;
  // Fine-tuning to another class count: when the file fits the model everywhere but the head's
  // shape, the head is reinitialised (as with `partial`) and a note says so; any other difference
  // is still an error. `ember train --init-from` sets it; eval and predict do not.
  bool replace_head = false;
};

struct WeightLoadReport {
  std::string prefix;                   // stripped from the file's keys ("" when none)
  std::vector<std::string> loaded;      // model keys that received the file's values
  std::vector<std::string> missing;     // model keys the file lacks (partial: kept as initialised)
  std::vector<std::string> unexpected;  // file keys (prefix stripped) the model does not have
  std::vector<std::string> mismatched;  // "fc3.weight: file [5, 84], model [10, 84]"
  std::vector<std::string> notes;       // "cast 10 tensors from float16 to float32"
  int64_t checkpoint_state = 0;         // "optim/*", "sched/*" tensors of an ember checkpoint, not used
  // Lines for the user: what was loaded, cast, skipped and reinitialised, by name.
  std::string summary() const;
};

// Copies `tensors` into `model` by name (see the file comment). Throws FormatError naming
// `source` and listing every missing, unexpected and mis-shaped key by name (all of them, not the
// first), with a hint (--init-from-partial, or the --model that fits), when they are not allowed.
WeightLoadReport load_weights(nn::Module& model, const NamedTensors& tensors, const std::string& source,
                              const WeightLoadOptions& options = {});

// For weights that do not fit a run's model: which zoo model and input geometry they would fit,
// as a hint for the user ("these weights fit --model lenet5"; a Fashion-MNIST run's weights for a
// photo folder: "they were trained on 1x28x28 inputs: pass --channels 1 --image-size 28"), with
// --init-from-partial when only the head differs. `model` is the run's model (a zoo name or a spec),
// the rest its data's geometry; the file's metadata (input_shape) adds the geometry it was trained
// at. Tries each zoo model at each geometry (built and discarded); "" when none fits.
struct RunGeometry {
  int64_t num_classes = 10, channels = 1, image_size = 28;
  bool image_folder = false;  // --channels/--image-size can change the geometry
};
std::string weights_fit_hint(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& model, const RunGeometry& run);

// Every zoo model that takes all of `tensors` exactly, with the input geometry and class count it
// takes them at (`ember weights info`). Geometries tried: the metadata's input_shape, the channels
// of the first conv weight (or the flattened input of a first linear layer, for the MLP), and the
// usual 1x28x28 and 3x32x32; the class count is read from the head's weight. torchvision's ImageNet
// architectures (built for 224x224) are tried only at the metadata's geometry or else at 224: their
// weights take photos of any size (and, with the stem summed over RGB when loaded, grey ones), so a
// guessed 28 or 32 would only mislead. Each candidate is built and discarded. Empty when none fits.
struct WeightsFit {
  std::string model;
  int64_t channels = 0, image_size = 0, num_classes = 0;
  // One of torchvision's ImageNet classifiers in a file that does not say what it was trained on:
  // image_size is the 224 it is built for.
  bool imagenet_architecture = false;
};
std::vector<WeightsFit> zoo_fits(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata);

// open_weights(path) (open_weights.h: a .safetensors or PyTorch .pth file, a manifest, or a run
// directory, whose best checkpoint is read; other files are named, with how to convert them) +
// load_weights.
WeightLoadReport init_from_file(nn::Module& model, const std::filesystem::path& path,
                                const WeightLoadOptions& options = {});

}  // namespace ember::train
