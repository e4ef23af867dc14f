// Optimizers: SGD, Adam, AdamW, Adagrad, Adadelta, RMSprop with PyTorch's update formulas (torch.optim's
// single-tensor path, the one PyTorch takes for CPU tensors; maximize as PyTorch's: the update
// follows -grad). step() runs under NoGradGuard; parameters whose .grad is undefined are skipped.
// Each step() calls its update function of optim/functional.h once per parameter group.
//
// Two paths, same numbers: by default (options.fused) a parameter that is a contiguous float32 or
// float64 tensor, with a contiguous gradient of its dtype and contiguous state buffers, is updated by
// one fused kernel (one pass on the CPU, one launch on CUDA: src/kernels/optim_kernels.h); every other
// parameter, and every parameter when fused = false, goes through the reference path of in-place
// tensor ops, which works on any device. Both round at the same places, so they agree bit for bit.
//
// Parameter groups: pass a list of ParamGroupSpec to give groups their own lr / weight decay
// (e.g. no decay on biases); the other settings are shared. LR schedulers change group.lr.
//
// zero_grad(): by default sets every .grad to undefined (PyTorch 2's set_to_none=True), so the
// next backward() writes fresh gradients; zero_grad(false) zeroes them in place instead. Without
// it, backward() ADDS into .grad.
//
// state_dict(): everything needed to resume exactly — per-group lr / weight_decay / initial_lr,
// the shared settings, and per-parameter step counts and buffers (momentum_buffer, exp_avg,
// exp_avg_sq, max_exp_avg_sq). Keys: "param_groups.<g>.<name>", "options.<name>",
// "state.<i>.<name>" with <i> the parameter's index counted across groups (as PyTorch).
// Scalars are 0-d float64 tensors, counts 0-d int64; buffers are live tensors (clone to keep).
// Per-group settings are lr and weight_decay; the others (momentum, betas, eps, ...) are shared by
// every group (PyTorch lets a group override any of them).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/nn/state_dict.h"

namespace ember::optim {

struct ParamGroupSpec {
  std::vector<Tensor> params{};
  std::optional<double> lr{};            // unset: the optimizer's lr
  std::optional<double> weight_decay{};  // unset: the optimizer's weight_decay
};

struct ParamGroup {
  std::vector<Tensor> params;
  double lr = 0.0;
  double weight_decay = 0.0;
  std::optional<double> initial_lr;  // set by the first LR scheduler attached (as PyTorch)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  void zero_grad(bool set_to_none = true);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  double lr() const { return groups_.at(0).lr; }  // the first group's
  void set_lr(double lr);                          // every group's
  const std::string& name() const { return name_; }

  StateDict state_dict() const;
  // The shared settings by name ("momentum", "beta1", "alpha", ...; booleans as 0 / 1), and a
  // change of one (OneCycleLR cycles "momentum" or "beta1"). set_option throws ValueError naming an
  // unknown setting.
  std::vector<std::pair<std::string, double>> option_values() const { return options_list(); }
  void set_option_value(const std::string& name, double value);
  bool has_option(const std::string& name) const;

  // Restores a state_dict() of the same optimizer type over the same parameter layout. Throws
  // ValueError when the group count, a group's parameter count or a required key differs (a
  // parameter with a step count must have every buffer state_buffer_names() lists),
  // ShapeError when a buffer's shape differs from its parameter's. Buffers are copied onto each
  // parameter's device and dtype. Nothing is modified when it throws.
  void load_state_dict(const StateDict& dict);

 protected:
  Optimizer(std::string name, std::vector<ParamGroupSpec> groups, double lr, double weight_decay);

  struct ParamState {
    int64_t step = 0;
    std::map<std::string, Tensor> buffers;
  };
  ParamState& state(size_t group, size_t index) { return state_[group][index]; }

  // The constructors' one-group form: every parameter in one group with the optimizer's settings.
  static std::vector<ParamGroupSpec> single_group(std::vector<Tensor> params);
  // What one group's update needs (optim/functional.h's lists): the group's parameters that have a
  // gradient, their gradients and their states, in the group's order.
  struct GroupStep {
    const ParamGroup& group;
    std::vector<Tensor> params, grads;
    std::vector<ParamState*> states;
    // Each parameter's buffer `name`; an absent one is created as full_like(p, fill) and kept in
    // the state when fill is given, else left undefined.
    std::vector<Tensor> buffers(const std::string& name, std::optional<double> fill = std::nullopt) const;
    // Keeps bufs[i] (where defined) as parameter i's buffer `name` (sgd_step's new momentum buffers).
    void store(const std::string& name, const std::vector<Tensor>& bufs) const;
    std::vector<int64_t> steps() const;
  };
  // One step of every group, under NoGradGuard: for each group, the step count of each parameter
  // with a gradient goes up by one, then `update` runs once on them (not for a group without one).
  void step_groups(const std::function<void(const GroupStep&)>& update);
  // Shared settings as (name, value), saved under "options.<name>" and restored by set_option.
  virtual std::vector<std::pair<std::string, double>> options_list() const = 0;
  virtual void set_option(const std::string& name, double value) = 0;
  // The buffers every stepped parameter's state holds with the current settings ("exp_avg", ...);
  // load_state_dict refuses a state without them. Default: none required.
  virtual std::vector<std::string> state_buffer_names() const { return {}; }
  void check_lr_wd(double lr, double weight_decay) const;

  std::string name_;
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<ParamState>> state_;
};

// ---- SGD ----------------------------------------------------------------------------------------
// g = grad + weight_decay * p
// momentum != 0: buf = g on the first step, else buf = momentum * buf + (1 - dampening) * g;
//                g = nesterov ? g + momentum * buf : buf
// p -= lr * g
struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool fused = true;  // false: always the in-place-op reference path (see the top of this file)
  bool maximize = false;
};
class SGD : public Optimizer {
 public:
  // ValueError (naming the setting and its value) for lr < 0, momentum < 0, dampening < 0,
  // weight_decay < 0, or nesterov without momentum / with dampening.
  SGD(std::vector<Tensor> params, SGDOptions opt = {});
  SGD(std::vector<ParamGroupSpec> groups, SGDOptions opt = {});
  void step() override;
  const SGDOptions& options() const { return opt_; }

 protected:
  std::vector<std::pair<std::string, double>> options_list() const override;
  void set_option(const std::string& name, double value) override;
  std::vector<std::string> state_buffer_names() const override;

 private:
  SGDOptions opt_;
};

// ---- Adam / AdamW -------------------------------------------------------------------------------
// t += 1; Adam: g = grad + weight_decay * p; AdamW: p *= 1 - lr * weight_decay, g = grad
// m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  amsgrad: v_max = max(v_max, v), used for v
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)      (eps outside the sqrt)
struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.999};
  double eps = 1e-8;
  std::optional<double> weight_decay{};  // unset: 0 for Adam, 1e-2 for AdamW (PyTorch's defaults)
  bool amsgrad = false;
  bool fused = true;  // false: always the in-place-op reference path (see the top of this file)
  bool maximize = false;
};
class Adam : public Optimizer {
 public:
  // ValueError for lr < 0, eps < 0, betas outside [0, 1), weight_decay < 0.
  Adam(std::vector<Tensor> params, AdamOptions opt = {});
  Adam(std::vector<ParamGroupSpec> groups, AdamOptions opt = {});
  void step() override;
  const AdamOptions& options() const { return opt_; }  // weight_decay resolved

 protected:
  Adam(std::string name, std::vector<ParamGroupSpec> groups, AdamOptions opt, bool decoupled);
  std::vector<std::pair<std::string, double>> options_list() const override;
  void set_option(const std::string& name, double value) override;
  std::vector<std::string> state_buffer_names() const override;

 private:
  AdamOptions opt_;
  bool decoupled_;
};

// Adam with decoupled weight decay (Loshchilov & Hutter); weight_decay defaults to 1e-2.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions opt = {});
  AdamW(std::vector<ParamGroupSpec> groups, AdamOptions opt = {});
};

// ---- Adagrad ------------------------------------------------------------------------------------
// step t += 1; g = (maximize ? -grad : grad) + weight_decay * p
// sum += g^2 (sum starts at initial_accumulator_value);  p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps)
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
  bool maximize = false;
  bool fused = true;
};
class Adagrad : public Optimizer {
 public:
  // ValueError for lr, lr_decay, weight_decay, initial_accumulator_value or eps < 0.
  Adagrad(std::vector<Tensor> params, AdagradOptions opt = {});
  Adagrad(std::vector<ParamGroupSpec> groups, AdagradOptions opt = {});
  void step() override;
  const AdagradOptions& options() const { return opt_; }

 protected:
  std::vector<std::pair<std::string, double>> options_list() const override;
  void set_option(const std::string& name, double value) override;
  std::vector<std::string> state_buffer_names() const override { return {"sum"}; }

 private:
  AdagradOptions opt_;
};

// ---- Adadelta -----------------------------------------------------------------------------------
// g as Adagrad's; square_avg = rho square_avg + (1 - rho) g^2
// delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g;  acc_delta = rho acc_delta + (1 - rho) delta^2
// p -= lr * delta
struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0.0;
  bool maximize = false;
  bool fused = true;
};
class Adadelta : public Optimizer {
 public:
  // ValueError for lr, eps or weight_decay < 0, rho outside [0, 1].
  Adadelta(std::vector<Tensor> params, AdadeltaOptions opt = {});
  Adadelta(std::vector<ParamGroupSpec> groups, AdadeltaOptions opt = {});
  void step() override;
  const AdadeltaOptions& options() const { return opt_; }

 protected:
  std::vector<std::pair<std::string, double>> options_list() const override;
  void set_option(const std::string& name, double value) override;
  std::vector<std::string> state_buffer_names() const override { return {"square_avg", "acc_delta"}; }

 private:
  AdadeltaOptions opt_;
};

// ---- RMSprop ------------------------------------------------------------------------------------
// g as Adagrad's; square_avg = alpha square_avg + (1 - alpha) g^2
// centered: grad_avg = lerp(grad_avg, g, 1 - alpha), avg = sqrt(square_avg - grad_avg^2) + eps;
// else avg = sqrt(square_avg) + eps
// momentum > 0: buf = momentum buf + g / avg, p -= lr buf;  else p -= lr g / avg
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
  bool maximize = false;
  bool fused = true;
};
class RMSprop : public Optimizer {
 public:
  // ValueError for lr, eps, momentum, weight_decay or alpha < 0.
  RMSprop(std::vector<Tensor> params, RMSpropOptions opt = {});
  RMSprop(std::vector<ParamGroupSpec> groups, RMSpropOptions opt = {});
  void step() override;
  const RMSpropOptions& options() const { return opt_; }

 protected:
  std::vector<std::pair<std::string, double>> options_list() const override;
  void set_option(const std::string& name, double value) override;
  std::vector<std::string> state_buffer_names() const override;

 private:
  RMSpropOptions opt_;
};

}  // namespace ember::optim
