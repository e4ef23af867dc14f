// Dynamic loss scaling in the training engine: the step seam (step.h: LossScalePolicy, TrainStep::set_loss_scaler)
// backed by optim::LossScaler (ember/optim/loss_scaler.h). `ember train --precision fp16` installs it
// with the defaults: scale 2^16, x2 after 2000 good steps in a row, x0.5 on an overflow, whose
// optimizer step is skipped. The engine counts the skipped steps (FitResult::skipped_steps,
// metrics.jsonl "skipped_steps" and "loss_scale" in step and epoch records, report.html) and
// checkpoints the scale and counters, so a resumed run continues the schedule.
#pragma once

#include "ember/optim/loss_scaler.h"
#include "ember/train/step.h"

namespace ember::train {

class DynamicLossScaler final : public LossScalePolicy {
 public:
  explicit DynamicLossScaler(optim::LossScalerOptions o = {}) : s_(o) {}
  Tensor scale(const Tensor& loss) override { return s_.scale(loss); }
  // Every parameter of every group: gradients divided by the scale, one device->host read.
  bool unscale_and_check(optim::Optimizer& opt) override;
  void update(bool finite) override { s_.update(finite); }
  bool scaling() const override { return s_.enabled(); }
  double current_scale() const override { return s_.current_scale(); }
  // "loss_scale", "loss_scale_tracker", "loss_scale_skipped", "loss_scale_good",
  // "loss_scale_growths", "loss_scale_backoffs".
  std::map<std::string, double> state() const override;
  void load_state(const std::map<std::string, double>& state) override;
  const optim::LossScaler& scaler() const { return s_; }

 private:
  optim::LossScaler s_;
};

}  // namespace ember::train
