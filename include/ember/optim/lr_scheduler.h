// Learning-rate schedules, as torch.optim.lr_scheduler. A scheduler holds a reference to its
// optimizer (which must outlive it) and sets every group's lr. Construction applies the epoch-0
// lr; each step() advances one epoch (or one batch, for OneCycleLR) and applies the new lr.
//
// Each schedule is a closed form lr(epoch, base_lr) — PyTorch's _get_closed_form_lr where it has
// one — so a scheduler restored from state_dict() continues exactly. base_lr is each group's
// initial_lr, which the first scheduler attached to an optimizer records (as PyTorch).
// state_dict(): "last_epoch" (0-d int64) and "base_lrs" (float64, one per group); load_state_dict
// restores both and re-applies the lr of that epoch. Two schedules on one optimizer do not chain
// as in PyTorch (each sets the lr it computes): combine them with ChainedScheduler or SequentialLR.
// ReduceLROnPlateau follows a metric, so it is no closed form and no LRScheduler.
#pragma once

#include <array>
#include <functional>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/state_dict.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

// The closed forms themselves, free of any optimizer: the classes below evaluate these, and the
// Python package's schedulers (python/ember/optim/lr_scheduler.py) call them where PyTorch computes a
// closed form (step(epoch), OneCycleLR, CosineAnnealingWarmRestarts). Arguments as the classes'.
namespace schedule {
double step_lr(int64_t epoch, double base, int64_t step_size, double gamma);
double multistep_lr(int64_t epoch, double base, const std::vector<int64_t>& sorted_milestones, double gamma);
double exponential_lr(int64_t epoch, double base, double gamma);
// eta_min + (base - eta_min) (1 + cos(pi t / t_max)) / 2; t may be fractional (SGDR's T_cur).
double cosine_annealing_lr(double t, double t_max, double base, double eta_min);
double constant_lr(int64_t epoch, double base, double factor, int64_t total_iters);
double linear_lr(int64_t epoch, double base, double start_factor, double end_factor, int64_t total_iters);
double polynomial_lr(int64_t epoch, double base, int64_t total_iters, double power);
// OneCycleLR's phases as PyTorch computes them: each ends at a step (pct_start * total_steps - 1, ...)
// and runs between two of three levels (0 initial, 1 peak, 2 final; the lr: max_lr / div_factor,
// max_lr, initial / final_div_factor; the momentum: max, base, max).
struct OneCyclePhase {
  double end_step;
  int start, end;
};
std::vector<OneCyclePhase> one_cycle_phases(int64_t total_steps, double pct_start, bool three_phase);
// The value at `step` (PyTorch's phase search and annealing). ValueError past total_steps or for an
// anneal_strategy other than "cos" / "linear".
double one_cycle(int64_t step, int64_t total_steps, const std::vector<OneCyclePhase>& phases,
                 const std::string& anneal_strategy, const std::array<double, 3>& levels);
}  // namespace schedule

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  void step();
  // The lr of each group now (PyTorch's get_last_lr()).
  std::vector<double> get_lr() const;
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const Optimizer& optimizer() const { return optimizer_; }
  StateDict state_dict() const;
  void load_state_dict(const StateDict& dict);
  // The schedule: lr of a group with base lr `base` at `epoch` (>= 0).
  virtual double lr_at(int64_t epoch, double base) const = 0;
  // The same for group `group` (LambdaLR's per-group functions); apply() calls this one.
  virtual double group_lr_at(size_t group, int64_t epoch, double base) const { (void)group; return lr_at(epoch, base); }

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Called by each concrete constructor once its settings are in place.
  void initial_step();
  // Sets every group's lr for last_epoch_ (OneCycleLR also sets the momentum it cycles).
  virtual void apply();

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

// One-cycle policy (Smith & Topin), per batch, as PyTorch's OneCycleLR. Two phases: from
// max_lr / div_factor up to max_lr over pct_start * total_steps - 1 steps, then down to
// max_lr / (div_factor * final_div_factor) at step total_steps - 1. three_phase: up, back down to
// max_lr / div_factor by step 2 pct_start total_steps - 2, then down to the minimum. anneal "cos" or
// "linear". Stepping past total_steps throws ValueError. Sets each group's initial_lr to
// max_lr / div_factor (ignores the optimizer's lr).
// cycle_momentum: the optimizer's "momentum" (SGD, RMSprop) or "beta1" (Adam) runs the other way,
// max_momentum -> base_momentum -> max_momentum (ValueError for an optimizer without either). Off
// by default here (PyTorch: on), so `ember train`'s one-cycle runs keep their numbers.
struct OneCycleOptions {
  double pct_start = 0.3;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  std::string anneal_strategy = "cos";
  bool three_phase = false;
  bool cycle_momentum = false;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleOptions opt = {});
  // One peak per parameter group, as PyTorch's max_lr list (a backbone with a smaller lr than its head).
  OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lrs, int64_t total_steps, OneCycleOptions opt = {});
  // `base` is the group's starting lr, max_lr / div_factor: it names the group's curve.
  double lr_at(int64_t epoch, double base) const override;
  // The cycled momentum at `epoch` (meaningful with cycle_momentum).
  double momentum_at(int64_t epoch) const;

 protected:
  void apply() override;

 private:
  double max_lr_for(double base) const;
  std::vector<double> max_lrs_;  // per group
  int64_t total_steps_;
  OneCycleOptions opt_;
  std::vector<schedule::OneCyclePhase> phases_;
  std::string momentum_name_;  // "momentum" or "beta1" with cycle_momentum, else empty
};

// lr = base * gamma ^ epoch. ValueError for gamma < 0.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(int64_t epoch, double base) const override;

 private:
  double gamma_;
};

// lr = base * factor for epoch < total_iters, then base. ValueError for factor outside [0, 1] or
// total_iters < 0.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3.0, int64_t total_iters = 5);
  double lr_at(int64_t epoch, double base) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

// lr = base * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) / total_iters).
// ValueError for start_factor outside (0, 1], end_factor outside [0, 1], total_iters < 1.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0, int64_t total_iters = 5);
  double lr_at(int64_t epoch, double base) const override;

 private:
  double start_, end_;
  int64_t total_iters_;
};

// lr = base * (1 - min(epoch, total_iters) / total_iters) ^ power. ValueError for total_iters < 1.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);
  double lr_at(int64_t epoch, double base) const override;

 private:
  int64_t total_iters_;
  double power_;
};

// lr = base * lambda(epoch): one function for every group, or one per group (ValueError when the
// count differs from the optimizer's groups). The functions are not saved by state_dict(): a
// restored scheduler is built with the same ones, as in PyTorch.
using LrLambda = std::function<double(int64_t epoch)>;
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, LrLambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);
  double lr_at(int64_t epoch, double base) const override { return group_lr_at(0, epoch, base); }
  double group_lr_at(size_t group, int64_t epoch, double base) const override;

 private:
  std::vector<LrLambda> lambdas_;
};

// lr(epoch) = lr(epoch - 1) * factor(epoch), lr(0) = base: PyTorch's products in PyTorch's order.
class MultiplicativeLR : public LRScheduler {
 public:
  MultiplicativeLR(Optimizer& optimizer, LrLambda lr_factor);
  double lr_at(int64_t epoch, double base) const override;

 private:
  LrLambda factor_;
  // The last product per base, so stepping costs one multiplication rather than `epoch`.
  mutable std::vector<std::tuple<double, int64_t, double>> memo_;  // (base, epoch, lr)
};

// SGDR (Loshchilov & Hutter): cosine from base to eta_min over T_i epochs, then a restart with
// T_i *= T_mult (T_0 first). ValueError for T_0 < 1 or T_mult < 1.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0);
  double lr_at(int64_t epoch, double base) const override;

 private:
  int64_t t0_, t_mult_;
  double eta_min_;
};

// schedulers[0] until milestones[0], then schedulers[1] counted from milestones[0], ... (PyTorch's
// SequentialLR, every part by its closed form). Build the parts on the same optimizer, then hand
// them over. ValueError unless milestones are increasing and one fewer than the schedulers.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::unique_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  double lr_at(int64_t epoch, double base) const override { return group_lr_at(0, epoch, base); }
  double group_lr_at(size_t group, int64_t epoch, double base) const override;

 private:
  std::vector<std::unique_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Several schedules stepped together, their factors multiplied: lr = base * prod(s.lr_at(e) / base)
// (PyTorch's ChainedScheduler of multiplicative schedules; a cosine with eta_min or past T_max is
// not a factor of base, and PyTorch's recursive form of it differs from this product).
class ChainedScheduler : public LRScheduler {
 public:
  ChainedScheduler(Optimizer& optimizer, std::vector<std::unique_ptr<LRScheduler>> schedulers);
  double lr_at(int64_t epoch, double base) const override { return group_lr_at(0, epoch, base); }
  double group_lr_at(size_t group, int64_t epoch, double base) const override;

 private:
  std::vector<std::unique_ptr<LRScheduler>> schedulers_;
};

// Reduces every group's lr by `factor` when a metric has stopped improving for `patience` epochs
// (PyTorch's ReduceLROnPlateau): step(metric) once per epoch. Improvement: mode "min" / "max",
// threshold_mode "rel" (beyond best * (1 -+ threshold)) or "abs" (beyond best -+ threshold). After
// a reduction, `cooldown` epochs count no bad epochs. A group's lr never goes below its min_lr,
// and a change smaller than eps is skipped.
struct PlateauOptions {
  std::string mode = "min";
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";
  int64_t cooldown = 0;
  std::vector<double> min_lrs = {0.0};  // one for every group, or one per group
  double eps = 1e-8;
};
class ReduceLROnPlateau {
 public:
  // ValueError for factor outside [0, 1), an unknown mode or threshold_mode, negative patience,
  // cooldown or threshold, or a min_lrs count that is neither 1 nor the optimizer's groups.
  explicit ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions opt = {});
  // ValueError for a NaN metric (PyTorch compares it and counts a bad epoch; a NaN loss is a
  // diverged run, not a plateau).
  void step(double metric);
  std::vector<double> get_lr() const;
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  // "last_epoch", "best", "num_bad_epochs", "cooldown_counter".
  StateDict state_dict() const;
  void load_state_dict(const StateDict& dict);

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  PlateauOptions opt_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

}  // namespace ember::optim
