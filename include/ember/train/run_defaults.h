// A new run's defaults that depend on what it trains (issue 48): the model an image folder gets,
// and each model's optimizer, learning rate and weight decay from its reference recipe. They fill
// only the settings the user left unset (no flag, no --config key, no Python keyword); a resumed
// run keeps its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/train/settings.h"

namespace ember::train {

// The model a new image-folder run trains without --model (or --init-from weights that name one):
// ember's small ResNet, which pools globally, so it fits the size the folder's images are read at
// (their median shorter side, up to 64) where the Fashion-MNIST default, built for 28x28, grows
// with the image and warns.
inline constexpr const char* kImageFolderModel = "resnet_small";

// How a model is trained when the user sets no --optimizer, --lr or --weight-decay.
struct ModelRecipe {
  std::string optimizer;         // an optimizer registry name
  double lr = 0;                 // at reference_batch samples per optimizer step
  int64_t reference_batch = 0;   // 0: the lr whatever the batch; else scaled to the run's linearly
  double weight_decay = 0;
  std::string source;            // where it comes from, for the banner; "" for ember's own recipe
};
// The recipe of a zoo model (ember's default recipe for ember's own models and spec files; the
// table in run_defaults.cpp says where each torchvision architecture's comes from).
ModelRecipe model_recipe(const std::string& model);

// --model when it was not given, for a new run: the zoo model --init-from's weights record (a run
// directory, an ember checkpoint or export), else kImageFolderModel for an image folder, else the
// general default. Returns what it chose, in words ("" when the general default stands).
std::string apply_model_default(TrainSettings& c, const GivenFn& given);

// --optimizer, --lr and --weight-decay not given, for a new run: the model's recipe, its lr scaled
// to `samples_per_step` (batch x accumulate x ranks); an optimizer given without --lr gets the lr
// the model's recipe has for it (torchvision's train.py default for SGD, PyTorch's default for
// Adam/AdamW on torchvision's architectures; ember's models keep theirs). Returns what it chose and
// where from, in words ("" when nothing was taken from a recipe other than ember's own).
std::string apply_recipe_defaults(TrainSettings& c, const GivenFn& given, int64_t samples_per_step);
// The banner's lines for those words: "defaults   ..." and, under it, what changes them.
std::string defaults_banner(const std::vector<std::string>& chosen);

}  // namespace ember::train
