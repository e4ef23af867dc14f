// Adam and AdamW: torch.optim.Adam / AdamW's single-tensor formulas (bias correction, eps
// outside the square root, AdamW's decoupled decay p *= 1 - lr * weight_decay), optional AMSGrad.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"

namespace ember::optim {

namespace {
std::vector<ParamGroupSpec> one_group(std::vector<Tensor> params) {
  return {ParamGroupSpec{.params = std::move(params)}};
}
AdamOptions resolved(AdamOptions o, bool decoupled) {
  if (!o.weight_decay) o.weight_decay = decoupled ? 1e-2 : 0.0;
  return o;
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions opt)
    : Adam("Adam", one_group(std::move(params)), opt, false) {}
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
    : Adam("AdamW", one_group(std::move(params)), opt, true) {}
AdamW::AdamW(std::vector<ParamGroupSpec> groups, AdamOptions opt)
    : Adam("AdamW", std::move(groups), opt, true) {}

void Adam::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      Tensor& p = group.params[pi];
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      if (st.buffers.empty()) {
        st.buffers["exp_avg"] = zeros_like(p.detach());
        st.buffers["exp_avg_sq"] = zeros_like(p.detach());
        if (opt_.amsgrad) st.buffers["max_exp_avg_sq"] = zeros_like(p.detach());
      }
      Tensor none;
      auto max_it = st.buffers.find("max_exp_avg_sq");
      const Tensor* max_sq = opt_.amsgrad && max_it != st.buffers.end() ? &max_it->second : &none;
      if (opt_.fused && fused::can_adam_step(p, p.grad(),
                                     {&st.buffers.at("exp_avg"), &st.buffers.at("exp_avg_sq"), max_sq})) {
        step_fused(p, st, group.lr, group.weight_decay);
      } else {
        step_reference(p, st, group.lr, group.weight_decay);
      }
    }
  }
}

void Adam::step_fused(Tensor& p, ParamState& st, double lr, double wd) {
  st.step += 1;
  Tensor& exp_avg = st.buffers.at("exp_avg");
  Tensor& exp_avg_sq = st.buffers.at("exp_avg_sq");
  Tensor max_sq = opt_.amsgrad ? st.buffers.at("max_exp_avg_sq") : Tensor();
  fused::adam_step(p, p.grad(), exp_avg, exp_avg_sq, max_sq,
                   {.lr = lr, .beta1 = opt_.betas[0], .beta2 = opt_.betas[1], .eps = opt_.eps,
                    .weight_decay = wd, .decoupled = decoupled_, .amsgrad = opt_.amsgrad, .maximize = opt_.maximize,
                    .step = st.step});
}

void Adam::step_reference(Tensor& p, ParamState& st, double lr, double wd) {
  const double b1 = opt_.betas[0], b2 = opt_.betas[1];
  Tensor grad = opt_.maximize ? neg(p.grad()) : p.grad();
  Tensor& exp_avg = st.buffers.at("exp_avg");
  Tensor& exp_avg_sq = st.buffers.at("exp_avg_sq");
  st.step += 1;
  if (decoupled_) {
    p.mul_(1.0 - lr * wd);
  } else if (wd != 0.0) {
    grad = add(grad, p, wd);
  }
  exp_avg.mul_(b1).add_(grad, 1.0 - b1);
  exp_avg_sq.mul_(b2).add_(mul(grad, grad), 1.0 - b2);
  const double bias_correction1 = 1.0 - std::pow(b1, double(st.step));
  const double bias_correction2 = 1.0 - std::pow(b2, double(st.step));
  const double step_size = lr / bias_correction1;
  Tensor second = exp_avg_sq;
  if (opt_.amsgrad) {
    Tensor& max_sq = st.buffers.at("max_exp_avg_sq");
    max_sq.copy_(maximum(max_sq, exp_avg_sq));
    second = max_sq;
  }
  Tensor bc2_sqrt = scalar_tensor(std::sqrt(bias_correction2), {.dtype = p.dtype(), .device = p.device()});
  Tensor denom = add(div(sqrt(second), bc2_sqrt), opt_.eps);
  p.add_(div(exp_avg, denom), -step_size);
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
