// Learning-rate schedules, as torch.optim.lr_scheduler. A scheduler holds a reference to its
// optimizer (which must outlive it) and sets every group's lr. Construction applies the epoch-0
// lr; each step() advances one epoch (or one batch, for OneCycleLR) and applies the new lr.
//
// Each schedule is a closed form lr(epoch, base_lr) — PyTorch's _get_closed_form_lr where it has
// one — so a scheduler restored from state_dict() continues exactly. base_lr is each group's
// initial_lr, which the first scheduler attached to an optimizer records (as PyTorch).
// state_dict(): "last_epoch" (0-d int64) and "base_lrs" (float64, one per group); load_state_dict
// restores both and re-applies the lr of that epoch.
#pragma once

#include <memory>
#include <vector>

#include "ember/nn/state_dict.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  void step();
  // The lr of each group now (PyTorch's get_last_lr()).
  std::vector<double> get_lr() const;
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  StateDict state_dict() const;
  void load_state_dict(const StateDict& dict);
  // The schedule: lr of a group with base lr `base` at `epoch` (>= 0).
  virtual double lr_at(int64_t epoch, double base) const = 0;

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Called by each concrete constructor once its settings are in place.
  void initial_step();
  void apply();

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;
};

// lr = base * gamma ^ floor(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch, double base) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base * gamma ^ (number of milestones <= epoch); milestones must be increasing.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t epoch, double base) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  double lr_at(int64_t epoch, double base) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Linear warm-up over `warmup_steps`: lr = base * (start_factor + (1 - start_factor) * e / W) for
// e < W; afterwards `after`'s schedule counted from the end of the warm-up (after->lr_at(e - W)),
// or the constant base lr when `after` is null. Equals PyTorch's
// SequentialLR([LinearLR(opt, start_factor, total_iters=W), after], milestones=[W]).
// Build `after` on the same optimizer first, then hand it over: LinearWarmup owns it and is the
// only one to step.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor = 1.0 / 3.0,
               std::unique_ptr<LRScheduler> after = nullptr);
  double lr_at(int64_t epoch, double base) const override;

 private:
  int64_t warmup_;
  double start_factor_;
  std::unique_ptr<LRScheduler> after_;
};

// A schedule past the length it was planned for: `inner`'s lr for steps 0 .. planned_steps - 1,
// then its lr at planned_steps - 1 (the last one the plan used) for every later step, as Keras's
// decay schedules hold their final value. What `ember train --resume RUN --epochs N` builds when N
// exceeds the epochs the run's schedule was planned over: the run goes on at the lr it ended
// with instead of jumping to where a longer plan would be (a one-cycle run from 3e-8 to 2.8e-3).
// Build `inner` on the same optimizer first and hand it over; HoldAfterPlan owns it and is the
// only one to step. Its state_dict() is the inner schedule's (last_epoch counts every step).
class HoldAfterPlan : public LRScheduler {
 public:
  HoldAfterPlan(Optimizer& optimizer, std::unique_ptr<LRScheduler> inner, int64_t planned_steps);
  double lr_at(int64_t epoch, double base) const override;
  int64_t planned_steps() const { return planned_; }

 private:
  std::unique_ptr<LRScheduler> inner_;
  int64_t planned_;
};

// One-cycle policy (Smith & Topin), two phases, cosine annealing, per batch: from
// max_lr / div_factor up to max_lr over pct_start * total_steps - 1 steps, then down to
// max_lr / (div_factor * final_div_factor) at step total_steps - 1. Stepping past total_steps
// throws ValueError. Sets each group's initial_lr to max_lr / div_factor (ignores the
// optimizer's lr). Momentum cycling (PyTorch's cycle_momentum) is not implemented: the
// optimizer's momentum / betas stay as they are.
struct OneCycleOptions {
  double pct_start = 0.3;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleOptions opt = {});
  // One peak per parameter group, as PyTorch's max_lr list (a backbone with a smaller lr than its head).
  OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lrs, int64_t total_steps, OneCycleOptions opt = {});
  // `base` is the group's starting lr, max_lr / div_factor: it names the group's curve.
  double lr_at(int64_t epoch, double base) const override;

 private:
  double max_lr_for(double base) const;
  std::vector<double> max_lrs_;  // per group
  int64_t total_steps_;
  OneCycleOptions opt_;
};

}  // namespace ember::optim
