// LR schedules as closed forms of the epoch, matching torch.optim.lr_scheduler.
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/ops.h"

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (auto& g : optimizer_.param_groups()) {
    if (!g.initial_lr) g.initial_lr = g.lr;
    base_lrs_.push_back(*g.initial_lr);
  }
}

void LRScheduler::initial_step() {
  last_epoch_ = 0;
  apply();
}

void LRScheduler::apply() {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].lr = lr_at(last_epoch_, base_lrs_[i]);
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

std::vector<double> LRScheduler::get_lr() const {
  std::vector<double> out;
  for (const auto& g : optimizer_.param_groups()) out.push_back(g.lr);
  return out;
}

StateDict LRScheduler::state_dict() const {
  StateDict d;
  d.set_int("last_epoch", last_epoch_);
  d.set("base_lrs", tensor(base_lrs_, Shape{int64_t(base_lrs_.size())}));
  return d;
}

void LRScheduler::load_state_dict(const StateDict& d) {
  int64_t epoch = d.integer("last_epoch");
  const Tensor& b = d.at("base_lrs");
  EMBER_CHECK(b.numel() == int64_t(base_lrs_.size()), ValueError, "LRScheduler.load_state_dict: ",
              b.numel(), " base lrs for an optimizer with ", base_lrs_.size(), " groups");
  base_lrs_ = b.to(DType::Float64).to_vector<double>();
  last_epoch_ = epoch;
  apply();
}

// ---- StepLR / MultiStepLR -----------------------------------------------------------------------
StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, ValueError, "StepLR: step_size must be > 0, got ", step_size);
  initial_step();
}
double StepLR::lr_at(int64_t e, double base) const {
  return base * std::pow(gamma_, double(e / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
              "MultiStepLR: milestones must be increasing");
  initial_step();
}
double MultiStepLR::lr_at(int64_t e, double base) const {
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin();
  return base * std::pow(gamma_, double(passed));
}

// ---- CosineAnnealingLR --------------------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  EMBER_CHECK(t_max > 0, ValueError, "CosineAnnealingLR: T_max must be > 0, got ", t_max);
  initial_step();
}
double CosineAnnealingLR::lr_at(int64_t e, double base) const {
  return eta_min_ + (base - eta_min_) * (1.0 + std::cos(std::numbers::pi * double(e) / double(t_max_))) / 2.0;
}

// ---- LinearWarmup -------------------------------------------------------------------------------
LinearWarmup::LinearWarmup(Optimizer& opt, int64_t warmup, double start_factor,
                           std::unique_ptr<LRScheduler> after)
    : LRScheduler(opt), warmup_(warmup), start_factor_(start_factor), after_(std::move(after)) {
  EMBER_CHECK(warmup > 0, ValueError, "LinearWarmup: warmup_steps must be > 0, got ", warmup);
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, ValueError,
              "LinearWarmup: start_factor must be in (0, 1], got ", start_factor);
  initial_step();
}
double LinearWarmup::lr_at(int64_t e, double base) const {
  if (e < warmup_) return base * (start_factor_ + (1.0 - start_factor_) * double(e) / double(warmup_));
  return after_ ? after_->lr_at(e - warmup_, base) : base;
}

// ---- HoldAfterPlan ------------------------------------------------------------------------------
HoldAfterPlan::HoldAfterPlan(Optimizer& opt, std::unique_ptr<LRScheduler> inner, int64_t planned_steps)
    : LRScheduler(opt), inner_(std::move(inner)), planned_(planned_steps) {
  EMBER_CHECK(inner_ != nullptr, ValueError, "HoldAfterPlan: no schedule to hold");
  EMBER_CHECK(planned_steps > 0, ValueError, "HoldAfterPlan: planned_steps must be > 0, got ", planned_steps);
  initial_step();
}
double HoldAfterPlan::lr_at(int64_t e, double base) const { return inner_->lr_at(std::min(e, planned_ - 1), base); }

// ---- OneCycleLR ---------------------------------------------------------------------------------
OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, OneCycleOptions o)
    : OneCycleLR(opt, std::vector<double>(opt.param_groups().size(), max_lr), total_steps, o) {}

OneCycleLR::OneCycleLR(Optimizer& opt, const std::vector<double>& max_lrs, int64_t total_steps, OneCycleOptions o)
    : LRScheduler(opt), max_lrs_(max_lrs), total_steps_(total_steps), opt_(o) {
  EMBER_CHECK(total_steps > 0, ValueError, "OneCycleLR: total_steps must be > 0, got ", total_steps);
  EMBER_CHECK(max_lrs.size() == optimizer_.param_groups().size(), ValueError, "OneCycleLR: ", max_lrs.size(),
              " max_lr values for an optimizer with ", optimizer_.param_groups().size(), " parameter groups");
  for (double m : max_lrs) EMBER_CHECK(m > 0, ValueError, "OneCycleLR: max_lr must be > 0, got ", m);
  EMBER_CHECK(o.pct_start >= 0 && o.pct_start <= 1, ValueError,
              "OneCycleLR: pct_start must be in [0, 1], got ", o.pct_start);
  EMBER_CHECK(o.div_factor > 0 && o.final_div_factor > 0, ValueError,
              "OneCycleLR: div_factor and final_div_factor must be > 0, got ", o.div_factor, " and ",
              o.final_div_factor);
  for (size_t i = 0; i < max_lrs.size(); ++i) {
    optimizer_.param_groups()[i].initial_lr = max_lrs[i] / o.div_factor;
    base_lrs_[i] = max_lrs[i] / o.div_factor;
  }
  initial_step();
}
// The peak of the group that starts at `base` (max_lr / div_factor, as set above or restored from a
// checkpoint): looked up rather than recomputed as base * div_factor, which can differ from max_lr in
// the last bit and would move every lr of a run by a rounding.
double OneCycleLR::max_lr_for(double base) const {
  for (double m : max_lrs_)
    if (m / opt_.div_factor == base) return m;
  return base * opt_.div_factor;
}
double OneCycleLR::lr_at(int64_t step, double base) const {
  EMBER_CHECK(step <= total_steps_, ValueError, "OneCycleLR: tried to step ", step,
              " times, more than total_steps = ", total_steps_);
  auto anneal_cos = [](double start, double end, double pct) {
    return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
  };
  const double max_lr = max_lr_for(base), initial = max_lr / opt_.div_factor;
  const double min_lr = initial / opt_.final_div_factor;
  const double end1 = opt_.pct_start * double(total_steps_) - 1.0;
  const double end2 = double(total_steps_) - 1.0;
  if (double(step) <= end1) return anneal_cos(initial, max_lr, double(step) / end1);
  return anneal_cos(max_lr, min_lr, (double(step) - end1) / (end2 - end1));
}

}  // namespace ember::optim
