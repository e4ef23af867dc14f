// Model spec files: a user's own architecture as a small TOML file, so `ember train --model
// my_net.toml` trains it without writing C++. Any valid TOML (read by toml++); every key is
// documented in docs/model-spec.md. One [[layer]] table per layer, in order (or
// `layer = [{ type = "relu" }, ...]`; sizes may be `kernel_size = [3, 3]`):
//
//   # my_net.toml
//   [[layer]]
//   type = "conv2d"        # conv2d, linear, batchnorm2d, relu, relu6, gelu, silu, hardswish, hardsigmoid,
//   out_channels = 32      # dropout, maxpool2d, avgpool2d, adaptiveavgpool2d, flatten, residual
//   kernel_size = 3
//   padding = 1
//   [[layer]]
//   type = "relu"
//   ...
//   [[layer]]
//   type = "linear"
//   out_features = "classes"   # the dataset's number of classes (a number works too)
//
// Input channels and features are inferred from the layer before; the shapes are checked while
// building. Errors (SpecError) name the file, the line and the layer: an unknown type or key, a
// value of the wrong kind or out of its range (docs/model-spec.md), a linear layer on an
// unflattened input, a kernel larger than its input, a last layer that does not output one value
// per class. Out of memory while allocating a layer's parameters stays an OutOfMemoryError, its
// message prefixed with the file, the line and the layer.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/nn/module.h"

namespace ember::nn {

// A model spec that describes no model ember can build. A FormatError (a malformed file); the CLI
// exits 2 on it, as on a bad --config file: the user's input to fix, not a failed run.
class SpecError : public FormatError {
 public:
  using FormatError::FormatError;
};

// True when `name` names a spec file rather than a zoo model (it ends in .toml).
bool is_spec_file(const std::string& name);
// Builds the model described by the TOML text (`source` names it in messages) for inputs of
// (in_channels, image_size, image_size) and `num_classes` outputs.
std::shared_ptr<Module> model_from_spec(const std::string& text, const std::string& source, int64_t num_classes,
                                        int64_t in_channels, int64_t image_size, Generator* gen = nullptr);
std::shared_ptr<Module> load_model_spec(const std::filesystem::path& path, int64_t num_classes, int64_t in_channels,
                                        int64_t image_size, Generator* gen = nullptr);

}  // namespace ember::nn
