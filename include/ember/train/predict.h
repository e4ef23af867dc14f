// Running a trained model the one way every reader runs it: `ember eval`, `ember predict`,
// ember.load's Model (logits, predict) and the final evaluation at the end of a run. An image file
// becomes the model's input as the run's test images did; the forward runs in evaluation mode
// without autograd, under the model's precision (autocast for bf16 / fp16) with each batch norm
// folded into its convolution (nn::FoldBatchNorm), so the CLI and Python give the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/data/decode.h"
#include "ember/nn/module.h"
#include "ember/train/evaluate.h"
#include "ember/train/inference.h"

namespace ember::train {

// The images `ember predict RUN PATH...` classifies: a file as given (the decoder says when it is
// not an image), a folder's image files (image_extensions(), any case; a symlink followed) sorted
// by name, one level deep. What a folder holds besides is skipped with a note naming it: a file
// that is not an image, a sub-folder; hidden entries (".name") in silence. DataError when a folder
// holds no image at all; IOError when it cannot be listed.
struct PredictFiles {
  std::vector<std::string> images;
  std::vector<std::string> notes;  // "skipping photos/notes.txt: not an image (...)"
};
PredictFiles predict_files(const std::vector<std::string>& paths);

struct ImageInputOptions {
  int64_t max_pixels = data::kMaxImagePixels;  // refused above this before decoding (0: no limit)
  bool invert = false;                         // 255 - v first (dark-on-light pictures; --invert)
};

// One image file as the model's input.
struct ImageInput {
  Tensor x;                  // (1, C, H, W) float32, normalised with the training mean and std
  std::string description;   // "shirt.png (1x28x28 as fashion-mnist)", for a line of output
  // The image looks unlike the training data (image_check.h): "shirt.png looks ...", for the user.
  std::vector<std::string> warnings;
};

// A photo run (InferenceModel::photo): decoded as RGB, resized and centre-cropped as torchvision's
// evaluation transforms; otherwise decoded (EXIF upright) and resized to the dataset's geometry
// (an image-folder run: centre-cropped to the aspect ratio first, as in training), then
// normalised by the same loader code as the test set. DataError / IOError from the decoder.
ImageInput image_input(const InferenceModel& m, const std::string& file, const ImageInputOptions& o = {});

// uint8 pixels (N, C, H, W) at the model's size, normalised as the loader normalises a test batch.
// ShapeError when they are not of the model's input shape.
Tensor pixels_input(const InferenceModel& m, const Tensor& pixels_u8);

// The logits (N, classes), float32 on the CPU, of model inputs (N, C, H, W) (any device and
// floating dtype: moved and cast to the model's).
Tensor inference_logits(const InferenceModel& m, const Tensor& x);
// softmax(logits, 1): the class probabilities (N, classes), float32 on the CPU.
Tensor class_probabilities(const InferenceModel& m, const Tensor& x);

// The evaluation of `model` on `test` as `ember eval` runs it: train::evaluate under `precision`
// ("fp32", "bf16", "fp16") with batch norms folded. The end of a run evaluates its selected model so.
EvalResult evaluate_inference(nn::Module& model, const std::string& precision, const data::Dataset& test,
                              const EvalOptions& o);

}  // namespace ember::train
