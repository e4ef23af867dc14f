// ember._core.optim: the optimizers' group updates (ember/optim/functional.h) and the schedules' closed
// forms (ember/optim/lr_scheduler.h) for python/ember/optim. Python keeps PyTorch's object model
// (param_groups dicts, per-parameter state); each step() hands one group's lists to one call here.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "ember/autograd/node.h"
#include "ember/optim/functional.h"
#include "ember/optim/lr_scheduler.h"

namespace ember::python {
namespace {

using namespace nb::literals;

// PyTorch's state["step"]: a 0-d tensor (float32 as PyTorch's default) that the update increments
// in place, as torch.optim's functional forms do (`step_t += 1`). Returns the new counts.
std::vector<int64_t> increment_steps(const std::vector<Tensor>& steps) {
  std::vector<int64_t> out;
  out.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    Tensor t = steps[i];
    EMBER_CHECK(t.defined() && t.numel() == 1, ValueError, "optimizer state: step ", i,
                " must be a one-element tensor (PyTorch's state['step'])");
    const double next = (t.dtype() == DType::Float32 ? double(t.item<float>()) : t.to(DType::Float64).item<double>()) + 1.0;
    t.fill_(next);
    out.push_back(int64_t(next));
  }
  return out;
}

std::vector<Tensor> sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                        const std::vector<std::optional<Tensor>>& momentum_buffers, double lr, double momentum,
                        double dampening, double weight_decay, bool nesterov, bool maximize) {
  std::vector<Tensor> bufs;
  bufs.reserve(momentum_buffers.size());
  for (const auto& b : momentum_buffers) bufs.push_back(b.value_or(Tensor()));
  NoGradGuard no_grad;
  optim::sgd_step(params, grads, bufs,
                  {.lr = lr, .momentum = momentum, .dampening = dampening, .weight_decay = weight_decay,
                   .nesterov = nesterov, .maximize = maximize});
  return bufs;
}

void adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
          const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
          const std::vector<Tensor>& state_steps, double lr, double beta1, double beta2, double eps,
          double weight_decay, bool amsgrad, bool maximize, bool decoupled) {
  NoGradGuard no_grad;
  EMBER_CHECK(state_steps.size() == params.size(), ValueError, "adam_step: ", params.size(), " params but ",
              state_steps.size(), " state_steps");
  const std::vector<int64_t> steps = increment_steps(state_steps);
  optim::adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                   {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                    .amsgrad = amsgrad, .maximize = maximize, .decoupled = decoupled});
}

void adagrad(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& state_sums,
             const std::vector<Tensor>& state_steps, double lr, double lr_decay, double weight_decay, double eps,
             bool maximize) {
  NoGradGuard no_grad;
  EMBER_CHECK(state_steps.size() == params.size(), ValueError, "adagrad_step: ", params.size(), " params but ",
              state_steps.size(), " state_steps");
  const std::vector<int64_t> steps = increment_steps(state_steps);
  optim::adagrad_step(params, grads, state_sums, steps,
                      {.lr = lr, .lr_decay = lr_decay, .weight_decay = weight_decay, .eps = eps, .maximize = maximize});
}

void adadelta(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& square_avgs,
              const std::vector<Tensor>& acc_deltas, const std::vector<Tensor>& state_steps, double lr, double rho,
              double eps, double weight_decay, bool maximize) {
  NoGradGuard no_grad;
  increment_steps(state_steps);  // kept for PyTorch's state format; the update does not use it
  optim::adadelta_step(params, grads, square_avgs, acc_deltas,
                       {.lr = lr, .rho = rho, .eps = eps, .weight_decay = weight_decay, .maximize = maximize});
}

void rmsprop(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& square_avgs,
             const std::vector<Tensor>& grad_avgs, const std::vector<Tensor>& momentum_buffers,
             const std::vector<Tensor>& state_steps, double lr, double alpha, double eps, double weight_decay,
             double momentum, bool centered, bool maximize) {
  NoGradGuard no_grad;
  increment_steps(state_steps);  // kept for PyTorch's state format; the update does not use it
  optim::rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers,
                      {.lr = lr, .alpha = alpha, .eps = eps, .weight_decay = weight_decay, .momentum = momentum,
                       .centered = centered, .maximize = maximize});
}

}  // namespace

void register_optim(nb::module_& m) {
  nb::module_ o = m.def_submodule("optim", "ember's optimizer updates and schedules (python/ember/optim calls these).");
  const auto unlocked = nb::call_guard<nb::gil_scoped_release>();
  o.def("sgd_step", &sgd, "params"_a, "grads"_a, "momentum_buffers"_a, nb::kw_only(), "lr"_a, "momentum"_a,
        "dampening"_a, "weight_decay"_a, "nesterov"_a, "maximize"_a, unlocked,
        "One SGD update of a group; momentum_buffers may hold None (created here): returns them all.");
  o.def("adam_step", &adam, "params"_a, "grads"_a, "exp_avgs"_a, "exp_avg_sqs"_a, "max_exp_avg_sqs"_a,
        "state_steps"_a, nb::kw_only(), "lr"_a, "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a, "amsgrad"_a,
        "maximize"_a, "decoupled"_a, unlocked,
        "One Adam (decoupled=False) or AdamW update of a group; increments each state_steps tensor.");
  o.def("adagrad_step", &adagrad, "params"_a, "grads"_a, "state_sums"_a, "state_steps"_a, nb::kw_only(), "lr"_a,
        "lr_decay"_a, "weight_decay"_a, "eps"_a, "maximize"_a, unlocked,
        "One Adagrad update of a group; increments each state_steps tensor.");
  o.def("adadelta_step", &adadelta, "params"_a, "grads"_a, "square_avgs"_a, "acc_deltas"_a, "state_steps"_a,
        nb::kw_only(), "lr"_a, "rho"_a, "eps"_a, "weight_decay"_a, "maximize"_a, unlocked,
        "One Adadelta update of a group; increments each state_steps tensor.");
  o.def("rmsprop_step", &rmsprop, "params"_a, "grads"_a, "square_avgs"_a, "grad_avgs"_a, "momentum_buffers"_a,
        "state_steps"_a, nb::kw_only(), "lr"_a, "alpha"_a, "eps"_a, "weight_decay"_a, "momentum"_a, "centered"_a,
        "maximize"_a, unlocked, "One RMSprop update of a group; increments each state_steps tensor.");

  namespace s = optim::schedule;
  o.def("step_lr", &s::step_lr, "epoch"_a, "base"_a, "step_size"_a, "gamma"_a);
  o.def("multistep_lr", &s::multistep_lr, "epoch"_a, "base"_a, "milestones"_a, "gamma"_a);
  o.def("exponential_lr", &s::exponential_lr, "epoch"_a, "base"_a, "gamma"_a);
  o.def("cosine_annealing_lr", &s::cosine_annealing_lr, "t"_a, "t_max"_a, "base"_a, "eta_min"_a);
  o.def("constant_lr", &s::constant_lr, "epoch"_a, "base"_a, "factor"_a, "total_iters"_a);
  o.def("linear_lr", &s::linear_lr, "epoch"_a, "base"_a, "start_factor"_a, "end_factor"_a, "total_iters"_a);
  o.def("polynomial_lr", &s::polynomial_lr, "epoch"_a, "base"_a, "total_iters"_a, "power"_a);
  o.def("one_cycle_phases", [](int64_t total_steps, double pct_start, bool three_phase) {
          std::vector<std::tuple<double, int, int>> out;
          for (const auto& ph : s::one_cycle_phases(total_steps, pct_start, three_phase)) out.emplace_back(ph.end_step, ph.start, ph.end);
          return out;
        }, "total_steps"_a, "pct_start"_a, "three_phase"_a, "OneCycleLR's phases: (end_step, start level, end level).");
  // phases: (end_step, start level, end level) triples, as OneCycleLR's _schedule_phases say them.
  o.def("one_cycle", [](int64_t step, int64_t total_steps, const std::vector<std::tuple<double, int, int>>& phases,
                        const std::string& anneal_strategy, const std::array<double, 3>& levels) {
          std::vector<s::OneCyclePhase> ph;
          for (const auto& [end, from, to] : phases) ph.push_back({end, from, to});
          return s::one_cycle(step, total_steps, ph, anneal_strategy, levels);
        }, "step"_a, "total_steps"_a, "phases"_a, "anneal_strategy"_a, "levels"_a);
}

}  // namespace ember::python
