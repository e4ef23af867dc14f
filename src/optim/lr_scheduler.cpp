// LR schedules as closed forms of the epoch, matching torch.optim.lr_scheduler.
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/ops.h"

namespace ember::optim {

// ---- the closed forms ---------------------------------------------------------------------------
namespace schedule {
double step_lr(int64_t e, double base, int64_t step_size, double gamma) {
  return base * std::pow(gamma, double(e / step_size));
}
double multistep_lr(int64_t e, double base, const std::vector<int64_t>& milestones, double gamma) {
  auto passed = std::upper_bound(milestones.begin(), milestones.end(), e) - milestones.begin();
  return base * std::pow(gamma, double(passed));
}
double exponential_lr(int64_t e, double base, double gamma) { return base * std::pow(gamma, double(e)); }
double cosine_annealing_lr(double t, double t_max, double base, double eta_min) {
  return eta_min + (base - eta_min) * (1.0 + std::cos(std::numbers::pi * t / t_max)) / 2.0;
}
double constant_lr(int64_t e, double base, double factor, int64_t total_iters) {
  return base * (factor + (e >= total_iters ? 1.0 : 0.0) * (1.0 - factor));
}
double linear_lr(int64_t e, double base, double start, double end, int64_t total_iters) {
  return base * (start + (end - start) * double(std::min(total_iters, e)) / double(total_iters));
}
double polynomial_lr(int64_t e, double base, int64_t total_iters, double power) {
  return base * std::pow(1.0 - double(std::min(total_iters, e)) / double(total_iters), power);
}
std::vector<OneCyclePhase> one_cycle_phases(int64_t total_steps, double pct_start, bool three_phase) {
  // PyTorch's phase ends, computed as it does (pct_start * total_steps in double, then - 1 or - 2).
  const double up = pct_start * double(total_steps);
  if (three_phase)
    return {{up - 1.0, 0, 1}, {2.0 * pct_start * double(total_steps) - 2.0, 1, 0}, {double(total_steps) - 1.0, 0, 2}};
  return {{up - 1.0, 0, 1}, {double(total_steps) - 1.0, 1, 2}};
}

double one_cycle(int64_t step, int64_t total_steps, const std::vector<OneCyclePhase>& phases,
                 const std::string& anneal_strategy, const std::array<double, 3>& levels) {
  EMBER_CHECK(anneal_strategy == "cos" || anneal_strategy == "linear", ValueError,
              "OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"", anneal_strategy, "\"");
  EMBER_CHECK(step <= total_steps, ValueError, "OneCycleLR: tried to step ", step,
              " times, more than total_steps = ", total_steps);
  EMBER_CHECK(!phases.empty(), ValueError, "OneCycleLR: no phases");
  double start_step = 0.0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const OneCyclePhase& ph = phases[i];
    EMBER_CHECK(ph.start >= 0 && ph.start < 3 && ph.end >= 0 && ph.end < 3, ValueError,
                "OneCycleLR: phase ", i, " names level ", ph.start, " -> ", ph.end, " (levels are 0, 1, 2)");
    if (double(step) <= ph.end_step || i + 1 == phases.size()) {
      const double pct = (double(step) - start_step) / (ph.end_step - start_step);
      const double from = levels[size_t(ph.start)], to = levels[size_t(ph.end)];
      if (anneal_strategy == "linear") return (to - from) * pct + from;
      return to + (from - to) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
    }
    start_step = ph.end_step;
  }
  return levels[2];  // not reached: the last phase takes every step
}
}  // namespace schedule

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
  for (size_t i = 0; i < groups.size(); ++i) groups[i].lr = group_lr_at(i, last_epoch_, base_lrs_[i]);
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
double StepLR::lr_at(int64_t e, double base) const { return schedule::step_lr(e, base, step_size_, gamma_); }

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
              "MultiStepLR: milestones must be increasing");
  initial_step();
}
double MultiStepLR::lr_at(int64_t e, double base) const { return schedule::multistep_lr(e, base, milestones_, gamma_); }

// ---- CosineAnnealingLR --------------------------------------------------------------------------
CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  EMBER_CHECK(t_max > 0, ValueError, "CosineAnnealingLR: T_max must be > 0, got ", t_max);
  initial_step();
}
double CosineAnnealingLR::lr_at(int64_t e, double base) const {
  return schedule::cosine_annealing_lr(double(e), double(t_max_), base, eta_min_);
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
  EMBER_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear", ValueError,
              "OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"", o.anneal_strategy, "\"");
  phases_ = schedule::one_cycle_phases(total_steps, o.pct_start, o.three_phase);
  if (o.cycle_momentum) {
    if (optimizer_.has_option("momentum")) momentum_name_ = "momentum";
    else if (optimizer_.has_option("beta1")) momentum_name_ = "beta1";
    EMBER_CHECK(!momentum_name_.empty(), ValueError, "OneCycleLR: cycle_momentum needs an optimizer with momentum or beta1; ",
                optimizer_.name(), " has neither (pass cycle_momentum = false)");
  }
  for (size_t i = 0; i < max_lrs.size(); ++i) {
    optimizer_.param_groups()[i].initial_lr = max_lrs[i] / o.div_factor;
    base_lrs_[i] = max_lrs[i] / o.div_factor;
  }
  initial_step();
}
// The peak of the group that starts at `base` (max_lr / div_factor, as set above or restored from a
// checkpoint): looked up rather than recomputed as base * div_factor, which can differ from max_lr in
// the last bit and would move every lr of a run by a rounding. With one peak for every group (the
// single max_lr form) `base` is not needed, and lr_at(step, anything) is that curve, as before.
double OneCycleLR::max_lr_for(double base) const {
  if (!max_lrs_.empty() &&
      std::all_of(max_lrs_.begin(), max_lrs_.end(), [&](double m) { return m == max_lrs_.front(); }))
    return max_lrs_.front();
  for (double m : max_lrs_)
    if (m / opt_.div_factor == base) return m;
  return base * opt_.div_factor;
}
double OneCycleLR::lr_at(int64_t step, double base) const {
  const double max_lr = max_lr_for(base), initial = max_lr / opt_.div_factor;
  return schedule::one_cycle(step, total_steps_, phases_, opt_.anneal_strategy,
                             {initial, max_lr, initial / opt_.final_div_factor});
}
double OneCycleLR::momentum_at(int64_t step) const {
  // Momentum runs against the lr: the lr's levels initial, peak, final map to max, base, max.
  return schedule::one_cycle(step, total_steps_, phases_, opt_.anneal_strategy,
                             {opt_.max_momentum, opt_.base_momentum, opt_.max_momentum});
}
void OneCycleLR::apply() {
  LRScheduler::apply();
  if (!momentum_name_.empty()) optimizer_.set_option_value(momentum_name_, momentum_at(last_epoch_));
}

// ---- ExponentialLR / ConstantLR / LinearLR / PolynomialLR ----------------------------------------
ExponentialLR::ExponentialLR(Optimizer& opt, double gamma) : LRScheduler(opt), gamma_(gamma) {
  EMBER_CHECK(gamma >= 0, ValueError, "ExponentialLR: gamma must be >= 0, got ", gamma);
  initial_step();
}
double ExponentialLR::lr_at(int64_t e, double base) const { return schedule::exponential_lr(e, base, gamma_); }

ConstantLR::ConstantLR(Optimizer& opt, double factor, int64_t total_iters)
    : LRScheduler(opt), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK(factor >= 0 && factor <= 1, ValueError, "ConstantLR: factor must be in [0, 1], got ", factor);
  EMBER_CHECK(total_iters >= 0, ValueError, "ConstantLR: total_iters must be >= 0, got ", total_iters);
  initial_step();
}
double ConstantLR::lr_at(int64_t e, double base) const { return schedule::constant_lr(e, base, factor_, total_iters_); }

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(opt), start_(start_factor), end_(end_factor), total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, ValueError, "LinearLR: start_factor must be in (0, 1], got ",
              start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, ValueError, "LinearLR: end_factor must be in [0, 1], got ", end_factor);
  EMBER_CHECK(total_iters >= 1, ValueError, "LinearLR: total_iters must be >= 1, got ", total_iters);
  initial_step();
}
double LinearLR::lr_at(int64_t e, double base) const { return schedule::linear_lr(e, base, start_, end_, total_iters_); }

PolynomialLR::PolynomialLR(Optimizer& opt, int64_t total_iters, double power)
    : LRScheduler(opt), total_iters_(total_iters), power_(power) {
  EMBER_CHECK(total_iters >= 1, ValueError, "PolynomialLR: total_iters must be >= 1, got ", total_iters);
  initial_step();
}
double PolynomialLR::lr_at(int64_t e, double base) const { return schedule::polynomial_lr(e, base, total_iters_, power_); }

// ---- LambdaLR / MultiplicativeLR ----------------------------------------------------------------
LambdaLR::LambdaLR(Optimizer& opt, LrLambda lr_lambda)
    : LambdaLR(opt, std::vector<LrLambda>(opt.param_groups().size(), lr_lambda)) {}
LambdaLR::LambdaLR(Optimizer& opt, std::vector<LrLambda> lr_lambdas) : LRScheduler(opt), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(lambdas_.size() == optimizer_.param_groups().size(), ValueError, "LambdaLR: ", lambdas_.size(),
              " lr functions for an optimizer with ", optimizer_.param_groups().size(), " parameter groups");
  for (const auto& f : lambdas_) EMBER_CHECK(bool(f), ValueError, "LambdaLR: an lr function is empty");
  initial_step();
}
double LambdaLR::group_lr_at(size_t group, int64_t e, double base) const { return base * lambdas_.at(group)(e); }

MultiplicativeLR::MultiplicativeLR(Optimizer& opt, LrLambda lr_factor) : LRScheduler(opt), factor_(std::move(lr_factor)) {
  EMBER_CHECK(bool(factor_), ValueError, "MultiplicativeLR: the factor function is empty");
  initial_step();
}
double MultiplicativeLR::lr_at(int64_t e, double base) const {
  int64_t from = 0;
  double lr = base;
  auto it = std::find_if(memo_.begin(), memo_.end(), [&](const auto& m) { return std::get<0>(m) == base; });
  if (it != memo_.end() && std::get<1>(*it) <= e) {
    from = std::get<1>(*it);
    lr = std::get<2>(*it);
  }
  for (int64_t i = from + 1; i <= e; ++i) lr = lr * factor_(i);
  if (it != memo_.end()) *it = {base, e, lr};
  else memo_.emplace_back(base, e, lr);
  return lr;
}

// ---- CosineAnnealingWarmRestarts ----------------------------------------------------------------
CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt, int64_t t0, int64_t t_mult, double eta_min)
    : LRScheduler(opt), t0_(t0), t_mult_(t_mult), eta_min_(eta_min) {
  EMBER_CHECK(t0 >= 1, ValueError, "CosineAnnealingWarmRestarts: T_0 must be >= 1, got ", t0);
  EMBER_CHECK(t_mult >= 1, ValueError, "CosineAnnealingWarmRestarts: T_mult must be >= 1, got ", t_mult);
  initial_step();
}
double CosineAnnealingWarmRestarts::lr_at(int64_t e, double base) const {
  // The position in the current cycle, by PyTorch's step-by-step rule in integers (exact).
  int64_t t_cur = e, t_i = t0_;
  if (t_mult_ == 1) {
    t_cur = e % t0_;
  } else {
    while (t_cur >= t_i) {
      t_cur -= t_i;
      t_i *= t_mult_;
    }
  }
  return schedule::cosine_annealing_lr(double(t_cur), double(t_i), base, eta_min_);
}

// ---- SequentialLR / ChainedScheduler ------------------------------------------------------------
namespace {
void check_parts(const char* who, const Optimizer& opt, const std::vector<std::unique_ptr<LRScheduler>>& parts) {
  EMBER_CHECK(!parts.empty(), ValueError, who, ": no schedulers");
  for (size_t i = 0; i < parts.size(); ++i) {
    EMBER_CHECK(parts[i] != nullptr, ValueError, who, ": scheduler ", i, " is null");
    EMBER_CHECK(&parts[i]->optimizer() == &opt, ValueError, who, ": scheduler ", i,
                " drives another optimizer (build every part on the optimizer passed here)");
  }
}
}  // namespace

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::unique_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(opt), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  check_parts("SequentialLR", optimizer_, schedulers_);
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError, "SequentialLR: ", schedulers_.size(),
              " schedulers need ", schedulers_.size() - 1, " milestones, got ", milestones_.size());
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
              "SequentialLR: milestones must be increasing");
  initial_step();
}
double SequentialLR::group_lr_at(size_t group, int64_t e, double base) const {
  const size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin());
  const int64_t local = idx == 0 ? e : e - milestones_[idx - 1];
  return schedulers_[idx]->group_lr_at(group, local, base);
}

ChainedScheduler::ChainedScheduler(Optimizer& opt, std::vector<std::unique_ptr<LRScheduler>> schedulers)
    : LRScheduler(opt), schedulers_(std::move(schedulers)) {
  check_parts("ChainedScheduler", optimizer_, schedulers_);
  initial_step();
}
double ChainedScheduler::group_lr_at(size_t group, int64_t e, double base) const {
  if (base == 0.0) return 0.0;
  double lr = base;
  for (const auto& s : schedulers_) lr *= s->group_lr_at(group, e, base) / base;
  return lr;
}

// ---- ReduceLROnPlateau --------------------------------------------------------------------------
ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions o) : optimizer_(optimizer), opt_(std::move(o)) {
  EMBER_CHECK(opt_.mode == "min" || opt_.mode == "max", ValueError, "ReduceLROnPlateau: mode must be \"min\" or \"max\", got \"",
              opt_.mode, "\"");
  EMBER_CHECK(opt_.threshold_mode == "rel" || opt_.threshold_mode == "abs", ValueError,
              "ReduceLROnPlateau: threshold_mode must be \"rel\" or \"abs\", got \"", opt_.threshold_mode, "\"");
  EMBER_CHECK(opt_.factor >= 0 && opt_.factor < 1, ValueError, "ReduceLROnPlateau: factor must be in [0, 1), got ", opt_.factor);
  EMBER_CHECK(opt_.patience >= 0, ValueError, "ReduceLROnPlateau: patience must be >= 0, got ", opt_.patience);
  EMBER_CHECK(opt_.cooldown >= 0, ValueError, "ReduceLROnPlateau: cooldown must be >= 0, got ", opt_.cooldown);
  EMBER_CHECK(opt_.threshold >= 0, ValueError, "ReduceLROnPlateau: threshold must be >= 0, got ", opt_.threshold);
  const size_t groups = optimizer_.param_groups().size();
  if (opt_.min_lrs.size() == 1) opt_.min_lrs.assign(groups, opt_.min_lrs[0]);
  EMBER_CHECK(opt_.min_lrs.size() == groups, ValueError, "ReduceLROnPlateau: ", opt_.min_lrs.size(),
              " min_lrs for an optimizer with ", groups, " parameter groups (give one, or one per group)");
  best_ = opt_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a) const {
  const bool rel = opt_.threshold_mode == "rel";
  if (opt_.mode == "min") return rel ? a < best_ * (1.0 - opt_.threshold) : a < best_ - opt_.threshold;
  return rel ? a > best_ * (opt_.threshold + 1.0) : a > best_ + opt_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  EMBER_CHECK(!std::isnan(metric), ValueError, "ReduceLROnPlateau.step: the metric is NaN (a diverged run?) at epoch ",
              last_epoch_ + 1);
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > opt_.patience) {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr, new_lr = std::max(old_lr * opt_.factor, opt_.min_lrs[i]);
      if (old_lr - new_lr > opt_.eps) groups[i].lr = new_lr;
    }
    cooldown_counter_ = opt_.cooldown;
    num_bad_epochs_ = 0;
  }
}

std::vector<double> ReduceLROnPlateau::get_lr() const {
  std::vector<double> out;
  for (const auto& g : optimizer_.param_groups()) out.push_back(g.lr);
  return out;
}

StateDict ReduceLROnPlateau::state_dict() const {
  StateDict d;
  d.set_int("last_epoch", last_epoch_);
  d.set_scalar("best", best_);
  d.set_int("num_bad_epochs", num_bad_epochs_);
  d.set_int("cooldown_counter", cooldown_counter_);
  return d;
}

void ReduceLROnPlateau::load_state_dict(const StateDict& d) {
  const int64_t epoch = d.integer("last_epoch"), bad = d.integer("num_bad_epochs"), cool = d.integer("cooldown_counter");
  const double best = d.scalar("best");
  last_epoch_ = epoch;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cool;
  best_ = best;
}

}  // namespace ember::optim
