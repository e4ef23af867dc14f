// Dynamic loss scaling for float16 training (as torch.cuda.amp.GradScaler): the loss is multiplied
// by `scale` before backward so small float16 gradients do not flush to zero; the gradients are
// divided by it again before the optimizer step, and a step whose gradients overflowed (inf/NaN) is
// skipped and the scale halved. After `growth_interval` good steps in a row the scale doubles.
//
//   Tensor loss = ...;  scaler.scale(loss).backward();
//   bool ok = scaler.unscale_and_check(model->parameters());
//   if (ok) opt.step();                    // skipped (and counted) otherwise
//   scaler.update(ok);
//
// bfloat16 has float32's exponent range and needs no scaling: construct with enabled = false and
// every call is a no-op (scale 1, always finite), so the training step is the same code.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::optim {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // good steps in a row before the scale grows
  bool enabled = true;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions opt = {});

  // loss * scale (loss itself when disabled); differentiable, so backward() sees the scale.
  Tensor scale(const Tensor& loss) const;
  // Divides every defined .grad of params by the scale, in place, and returns whether all of them
  // are finite. Call once per step, after backward() (and any gradient accumulation).
  bool unscale_and_check(const std::vector<Tensor>& params);
  // Ends the step with what unscale_and_check returned: finite = true is a good step, growing the
  // scale after growth_interval of them in a row; false counts a skipped step and backs the scale
  // off. (The training step's seam, train::LossScalePolicy::update, takes the same boolean.)
  void update(bool finite);

  double current_scale() const { return enabled_ ? scale_ : 1.0; }
  bool enabled() const { return enabled_; }
  int64_t skipped_steps() const { return skipped_; }   // steps with inf/NaN gradients
  int64_t good_steps() const { return good_; }         // finite steps in total
  int64_t growth_tracker() const { return tracker_; }  // finite steps since the last change
  int64_t growths() const { return growths_; }
  int64_t backoffs() const { return backoffs_; }

  // For checkpoints: scale and counters, and their restoration (resume continues the schedule).
  struct State {
    double scale = 65536.0;
    int64_t tracker = 0, skipped = 0, good = 0, growths = 0, backoffs = 0;
  };
  State state() const { return {scale_, tracker_, skipped_, good_, growths_, backoffs_}; }
  void load_state(const State& s);

 private:
  LossScalerOptions opt_;
  bool enabled_;
  double scale_;
  int64_t tracker_ = 0, skipped_ = 0, good_ = 0, growths_ = 0, backoffs_ = 0;
};

}  // namespace ember::optim
