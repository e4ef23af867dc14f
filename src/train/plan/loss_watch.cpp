// The exploding-loss warning (loss_watch.h).
#include "ember/train/loss_watch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ember/train/wording.h"

namespace ember::train {

LossWatch::LossWatch(int64_t classes, double lr, std::string model)
    : classes_(std::max<int64_t>(2, classes)), lr_(lr), model_(std::move(model)) {}

double LossWatch::threshold(int64_t classes) { return 3.0 * std::log(double(std::max<int64_t>(2, classes))); }

std::string LossWatch::message(double loss, int64_t step) const {
  return fmt::format("the training loss is {:.4g} at step {}, far above ln({}) = {:.2f}, the loss of guessing at "
                     "random: the learning rate ({:g}) is likely too high for {}; try --lr {:g} (a tenth)",
                     loss, step, classes_, std::log(double(classes_)), lr_, model_, lr_ / 10);
}

void LossWatch::on_sync(FitContext& ctx, const IntervalStats& s) {
  (void)ctx;
  if (said_ || !std::isfinite(s.loss) || s.samples == 0 || s.loss <= threshold(classes_)) return;
  said_ = true;
  warn(message(s.loss, s.last_step));
}

}  // namespace ember::train
