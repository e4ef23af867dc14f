// Transfer learning: fine-tuning a model that starts from another task's weights (`ember train
// --init-from FILE --freeze-backbone --unfreeze-after N --lr-backbone X`).
//
// The model's head is its classifier: the module that holds its last parameter ("fc" in a ResNet,
// "classifier.6" in AlexNet, "fc3" in LeNet-5); everything else is the backbone. Freezing the
// backbone (nn::Module::freeze) stops its gradients and keeps its batch norms in evaluation mode,
// so a step computes the head's gradients only; unfreezing trains everything again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/train/callbacks.h"

namespace ember::train {

// The head's module path with a trailing dot ("fc.", "classifier.6."); "" when the model has no
// parameters, or its last parameter is its own (then the whole model is the head).
std::string head_prefix(const nn::Module& model);

struct FreezeCounts {
  std::string head;                // head_prefix() without the dot: "fc"
  int64_t head_params = 0;         // parameter elements of the head
  int64_t backbone_params = 0;     // parameter elements of everything else
};

// What freeze_backbone() would split, without changing the model.
FreezeCounts count_backbone(const nn::Module& model);

// Freezes every module but the head (and the head's own ancestors' direct parameters, if any, are
// frozen too). ValueError when the model has no separate head. `training`: the run's mode.
FreezeCounts freeze_backbone(nn::Module& model, bool training = true);

// Two parameter groups for the optimizer: the backbone's parameters at `lr_backbone`, then the
// head's at the optimizer's own lr. The order of parameters within each is the model's.
std::vector<optim::ParamGroupSpec> backbone_and_head_groups(const nn::Module& model, double lr_backbone);

// Unfreezes the whole model at the start of epoch `after` (0-based: after `after` epochs) and
// calls `said(epoch, trainable)` with that epoch (1-based) and the parameter elements that now train;
// a resumed run past that epoch is unfrozen at its first epoch.
class UnfreezeAfter final : public Callback {
 public:
  using Said = std::function<void(int64_t epoch, int64_t trainable)>;
  UnfreezeAfter(int64_t after, Said said) : after_(after), said_(std::move(said)) {}
  void on_epoch_begin(FitContext& ctx) override;

 private:
  int64_t after_;
  Said said_;
};

}  // namespace ember::train
