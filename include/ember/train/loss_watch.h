// A warning when the training loss explodes (issue 48): alexnet at AdamW's lr 6e-3 went to a loss of
// 5622 with no word. A classifier that guesses at random has a cross-entropy of ln(classes); an
// interval's mean loss far above that means the steps overshoot, almost always a learning rate too
// high for the model, so the warning names --lr and a value to try. Said once per run; the run
// goes on (a loss that becomes inf/NaN is NanGuard's, and stops it).
#pragma once

#include <cstdint>
#include <string>

#include "ember/train/callbacks.h"

namespace ember::train {

class LossWatch final : public Callback {
 public:
  // classes: the model's outputs; lr: the run's peak --lr; model: its name, for the message.
  LossWatch(int64_t classes, double lr, std::string model);
  void on_sync(FitContext& ctx, const IntervalStats& s) override;
  // The loss above which a run counts as exploding: three times ln(classes) (2.08 for two classes,
  // 6.9 for ten), so a run that merely starts badly or learns slowly is never named.
  static double threshold(int64_t classes);
  // The warning for a loss of `loss` at `step` (what on_sync says).
  std::string message(double loss, int64_t step) const;

 private:
  int64_t classes_;
  double lr_;
  std::string model_;
  bool said_ = false;
};

}  // namespace ember::train
