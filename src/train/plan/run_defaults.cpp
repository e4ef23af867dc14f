// Defaults of a new run that depend on its model and data (run_defaults.h): the image-folder model
// and the per-model recipes, with where each recipe comes from.
#include "ember/train/run_defaults.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "ember/nn/models.h"
#include "ember/train/caller_model.h"
#include "ember/train/inference.h"
#include "ember/train/run_data.h"

namespace ember::train {
namespace {

bool is_zoo_name(const std::string& m) {
  const auto names = models::names();
  return std::find(names.begin(), names.end(), m) != names.end();
}

// The zoo model (or caller's model) the weights of --init-from record, "" when they name none (a torchvision .pth) or
// cannot be read (their own error comes when they are loaded).
std::string recorded_model(const std::string& init_from) {
  try {
    const OpenedWeights w = open_weights(init_from);
    std::string m = w.info.model;
    if (m.empty()) {
      const nlohmann::json cfg = nlohmann::json::parse(w.checkpoint.manifest.config_json, nullptr, false);
      if (cfg.is_object() && cfg.contains("model") && cfg["model"].is_string()) m = cfg["model"].get<std::string>();
    }
    // A caller's model ("python:Net") is named too: the plan then says only its class builds it.
    return is_zoo_name(m) || is_caller_model(m) ? m : "";
  } catch (const Error&) {
    return "";
  }
}

// torchvision's train.py default, for SGD on its architectures without a recipe of their own.
constexpr double kTorchvisionLr = 0.1, kTorchvisionWeightDecay = 1e-4;
constexpr int64_t kTorchvisionBatch = 256;  // 8 GPUs x --batch-size 32
// PyTorch's defaults for torch.optim.Adam / AdamW (lr 1e-3; AdamW's weight_decay 1e-2).
constexpr double kPyTorchAdamLr = 1e-3, kPyTorchAdamWeightDecay = 1e-2;

}  // namespace

ModelRecipe model_recipe(const std::string& model) {
  const TrainSettings d;
  // torchvision's reference recipes: github.com/pytorch/vision, references/classification/README.md,
  // on 8 GPUs with train.py's defaults (SGD, momentum 0.9, --batch-size 32 per GPU, so 256 per step,
  // lr 0.1, weight decay 1e-4) unless the section says otherwise. The lr is for 256 samples per step;
  // a run of another batch scales it linearly (Goyal et al. 2017, "Accurate, Large Minibatch SGD").
  if (model == "resnet18" || model == "resnet34" || model == "resnet50")
    return {"sgd", kTorchvisionLr, kTorchvisionBatch, kTorchvisionWeightDecay,
            "torchvision's ResNet recipe (references/classification: SGD, lr 0.1 at batch 256, weight decay 1e-4)"};
  if (model == "alexnet")  // "AlexNet and VGG": no batch norm, so lr 0.1 is too high: --lr 1e-2
    return {"sgd", 0.01, kTorchvisionBatch, kTorchvisionWeightDecay,
            "torchvision's AlexNet recipe (references/classification: SGD, lr 0.01 at batch 256 — no batch norm — "
            "weight decay 1e-4)"};
  if (model == "mobilenet_v2")  // "MobileNetV2": --lr 0.045 --wd 0.00004
    return {"sgd", 0.045, kTorchvisionBatch, 4e-5,
            "torchvision's MobileNetV2 recipe (references/classification: SGD, lr 0.045 at batch 256, weight decay "
            "4e-5)"};
  // MobileNetV3 was trained with RMSprop (lr 0.064 at 8 x 128, weight decay 1e-5), which ember does
  // not have, and torchvision ports EfficientNet-B0's weights from timm: no recipe of theirs to
  // follow, so PyTorch's defaults for AdamW.
  if (model == "mobilenet_v3_small" || model == "efficientnet_b0")
    return {"adamw", kPyTorchAdamLr, 0, kPyTorchAdamWeightDecay,
            fmt::format("PyTorch's AdamW defaults (lr 1e-3, weight decay 1e-2): torchvision {}",
                        model == "efficientnet_b0" ? "ports these weights from timm, with no recipe of its own"
                                                   : "trains it with RMSprop, which ember does not have")};
  // ember's own models and spec files: the recipe measured on Fashion-MNIST (settings.h).
  return {d.optimizer, d.lr, 0, d.weight_decay, ""};
}

std::string apply_model_default(TrainSettings& c, const GivenFn& given) {
  if (given(setting("model"))) return "";
  if (!c.init_from.empty()) {
    if (const std::string m = recorded_model(c.init_from); !m.empty()) {
      c.model = m;
      return fmt::format("--model {}: the model --init-from's weights were trained as", m);
    }
    return "";  // weights that name no model (a torchvision .pth): --model says which, as before
  }
  if (c.data != kImageFolder) return "";
  c.model = kImageFolderModel;
  return fmt::format("--model {} for an image folder: it pools globally, so it takes any image size",
                     kImageFolderModel);
}

std::string apply_recipe_defaults(TrainSettings& c, const GivenFn& given, int64_t samples_per_step) {
  const ModelRecipe r = model_recipe(c.model);
  if (r.source.empty()) return "";  // ember's own model: its defaults, whatever the optimizer
  const int64_t batch = std::max<int64_t>(1, samples_per_step);
  std::vector<std::string> taken;  // what the recipe set, in the banner's words
  if (!given(setting("optimizer"))) c.optimizer = r.optimizer, taken.push_back("optimizer");
  const bool follows = c.optimizer == r.optimizer;  // the recipe's optimizer, given or not
  std::string other;  // an optimizer given that is not the recipe's: where its lr and decay come from
  if (!given(setting("lr"))) {
    taken.push_back("lr");
    if (follows) {
      c.lr = r.reference_batch ? r.lr * double(batch) / double(r.reference_batch) : r.lr;
    } else if (c.optimizer == "sgd") {
      c.lr = kTorchvisionLr * double(batch) / double(kTorchvisionBatch);
      other = fmt::format("torchvision's train.py default for SGD (lr 0.1 at batch 256, scaled linearly to {})", batch);
    } else {
      c.lr = kPyTorchAdamLr;
      other = fmt::format("PyTorch's default for {} (lr 1e-3)", c.optimizer);
    }
  }
  if (!given(setting("weight_decay"))) {
    taken.push_back("weight decay");
    c.weight_decay = follows ? r.weight_decay : c.optimizer == "sgd" ? kTorchvisionWeightDecay : kPyTorchAdamWeightDecay;
  }
  if (taken.empty()) return "";
  std::string what;
  for (size_t i = 0; i < taken.size(); ++i) what += (i == 0 ? "" : i + 1 == taken.size() ? " and " : ", ") + taken[i];
  const bool scaled = follows && r.reference_batch && std::find(taken.begin(), taken.end(), "lr") != taken.end();
  const std::string from = follows ? r.source + (scaled ? fmt::format(", the lr scaled linearly to batch {}", batch) : "")
                           : !other.empty() ? other
                                            : "the defaults for " + c.optimizer;
  return fmt::format("{} of {}: {}", what, c.model, from);
}

std::string defaults_banner(const std::vector<std::string>& chosen) {
  std::string out;
  for (const std::string& c : chosen)
    if (!c.empty()) out += (out.empty() ? "defaults   " : "           ") + c + "\n";
  if (!out.empty()) out += "           (--model, --optimizer, --lr and --weight-decay set them)\n";
  return out;
}

}  // namespace ember::train
