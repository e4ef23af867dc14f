// Adam and AdamW: torch.optim.Adam / AdamW's single-tensor formulas (bias correction, eps
// outside the square root, AdamW's decoupled decay p *= 1 - lr * weight_decay), optional AMSGrad.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/functional.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"
#include "optim/step_lists.h"

namespace ember::optim {

namespace {
AdamOptions resolved(AdamOptions o, bool decoupled) {
  if (!o.weight_decay) o.weight_decay = decoupled ? 1e-2 : 0.0;
  return o;
}

// The reference path: the kernel's arithmetic as in-place ops.
void adam_reference(const Tensor& p_in, const Tensor& grad_in, const Tensor& exp_avg_in, const Tensor& exp_avg_sq_in,
                    const Tensor& max_sq_in, int64_t step, const AdamSettings& s) {
  Tensor p = p_in, exp_avg = exp_avg_in, exp_avg_sq = exp_avg_sq_in, max_sq = max_sq_in;
  const double b1 = s.beta1, b2 = s.beta2;
  Tensor grad = s.maximize ? neg(grad_in) : grad_in;
  if (s.decoupled) {
    p.mul_(1.0 - s.lr * s.weight_decay);
  } else if (s.weight_decay != 0.0) {
    grad = add(grad, p, s.weight_decay);
  }
  exp_avg.mul_(b1).add_(grad, 1.0 - b1);
  exp_avg_sq.mul_(b2).add_(mul(grad, grad), 1.0 - b2);
  const double bias_correction1 = 1.0 - std::pow(b1, double(step));
  const double bias_correction2 = 1.0 - std::pow(b2, double(step));
  const double step_size = s.lr / bias_correction1;
  Tensor second = exp_avg_sq;
  if (s.amsgrad) {
    max_sq.copy_(maximum(max_sq, exp_avg_sq));
    second = max_sq;
  }
  Tensor bc2_sqrt = scalar_tensor(std::sqrt(bias_correction2), {.dtype = p.dtype(), .device = p.device()});
  Tensor denom = add(div(sqrt(second), bc2_sqrt), s.eps);
  p.add_(div(exp_avg, denom), -step_size);
}
}  // namespace

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamSettings& s) {
  const size_t n = params.size();
  check_step_lists("adam_step", n,
                   {{"grads", grads.size()}, {"exp_avgs", exp_avgs.size()}, {"exp_avg_sqs", exp_avg_sqs.size()},
                    {"steps", steps.size()}});
  if (s.amsgrad) check_step_lists("adam_step", n, {{"max_exp_avg_sqs (amsgrad)", max_exp_avg_sqs.size()}});
  Tensor none;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& max_sq = s.amsgrad ? max_exp_avg_sqs[i] : none;
    EMBER_CHECK(steps[i] >= 1, ValueError, "adam_step: parameter ", i, "'s step is ", steps[i],
                " (counts start at 1: increment before the update)");
    EMBER_CHECK(exp_avgs[i].defined() && exp_avg_sqs[i].defined() && (!s.amsgrad || max_sq.defined()), ValueError,
                "adam_step: parameter ", i, " has an undefined state buffer (create them as zeros_like(param))");
    if (s.fused && fused::can_adam_step(params[i], grads[i], {&exp_avgs[i], &exp_avg_sqs[i], &max_sq})) {
      fused::adam_step(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], max_sq,
                       {.lr = s.lr, .beta1 = s.beta1, .beta2 = s.beta2, .eps = s.eps, .weight_decay = s.weight_decay,
                        .decoupled = s.decoupled, .amsgrad = s.amsgrad, .maximize = s.maximize, .step = steps[i]});
    } else {
      adam_reference(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], max_sq, steps[i], s);
    }
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions opt)
    : Adam("Adam", single_group(std::move(params)), opt, false) {}
Adam::Adam(std::vector<ParamGroupSpec> groups, AdamOptions opt)
    : Adam("Adam", std::move(groups), opt, false) {}
Adam::Adam(std::string name, std::vector<ParamGroupSpec> groups, AdamOptions opt, bool decoupled)
    : Optimizer(std::move(name), std::move(groups), opt.lr, *resolved(opt, decoupled).weight_decay),
      opt_(resolved(opt, decoupled)), decoupled_(decoupled) {
  EMBER_CHECK(opt_.eps >= 0.0, ValueError, name_, ": invalid eps: ", opt_.eps, " (must be >= 0)");
  for (int i = 0; i < 2; ++i)
    EMBER_CHECK(opt_.betas[i] >= 0.0 && opt_.betas[i] < 1.0, ValueError, name_, ": invalid beta",
                i + 1, ": ", opt_.betas[i], " (must be in [0, 1))");
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions opt)
    : Adam("AdamW", single_group(std::move(params)), opt, true) {}
AdamW::AdamW(std::vector<ParamGroupSpec> groups, AdamOptions opt)
    : Adam("AdamW", std::move(groups), opt, true) {}

void Adam::step() {
  step_groups([&](const GroupStep& b) {
    adam_step(b.params, b.grads, b.buffers("exp_avg", 0.0), b.buffers("exp_avg_sq", 0.0),
              opt_.amsgrad ? b.buffers("max_exp_avg_sq", 0.0) : std::vector<Tensor>{}, b.steps(),
              {.lr = b.group.lr, .beta1 = opt_.betas[0], .beta2 = opt_.betas[1], .eps = opt_.eps,
               .weight_decay = b.group.weight_decay, .amsgrad = opt_.amsgrad, .maximize = opt_.maximize,
               .decoupled = decoupled_, .fused = opt_.fused});
  });
}

std::vector<std::string> Adam::state_buffer_names() const {
  if (opt_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

// maximize is listed only when set: the states saved before it existed stay loadable.
std::vector<std::pair<std::string, double>> Adam::options_list() const {
  std::vector<std::pair<std::string, double>> o = {
      {"beta1", opt_.betas[0]}, {"beta2", opt_.betas[1]}, {"eps", opt_.eps}, {"amsgrad", opt_.amsgrad ? 1.0 : 0.0}};
  if (opt_.maximize) o.emplace_back("maximize", 1.0);
  return o;
}
void Adam::set_option(const std::string& name, double v) {
  if (name == "beta1") opt_.betas[0] = v;
  else if (name == "beta2") opt_.betas[1] = v;
  else if (name == "eps") opt_.eps = v;
  else if (name == "amsgrad") opt_.amsgrad = v != 0.0;
  else if (name == "maximize") opt_.maximize = v != 0.0;
}

}  // namespace ember::optim
