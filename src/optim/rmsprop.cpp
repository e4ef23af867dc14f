// RMSprop: torch.optim.RMSprop's single-tensor formulas (centered with ATen's lerp, momentum
// applied to g / avg, eps outside the square root), fused or as in-place ops.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/functional.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"
#include "optim/step_lists.h"

namespace ember::optim {

void rmsprop_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& grad_avgs,
                  const std::vector<Tensor>& momentum_buffers, const RmspropSettings& s) {
  const size_t n = params.size();
  check_step_lists("rmsprop_step", n, {{"grads", grads.size()}, {"square_avgs", square_avgs.size()}});
  if (s.centered) check_step_lists("rmsprop_step", n, {{"grad_avgs (centered)", grad_avgs.size()}});
  if (s.momentum > 0.0) check_step_lists("rmsprop_step", n, {{"momentum_buffers (momentum > 0)", momentum_buffers.size()}});
  for (size_t i = 0; i < n; ++i) {
    Tensor p = params[i], sq = square_avgs[i];
    Tensor ga = s.centered ? grad_avgs[i] : Tensor(), buf = s.momentum > 0.0 ? momentum_buffers[i] : Tensor();
    EMBER_CHECK(sq.defined() && (!s.centered || ga.defined()) && (s.momentum <= 0.0 || buf.defined()), ValueError,
                "rmsprop_step: parameter ", i, " has an undefined state buffer (create them as zeros_like(param))");
    const kernels::RmspropStepParams k{.lr = s.lr, .alpha = s.alpha, .eps = s.eps, .weight_decay = s.weight_decay,
                                       .momentum = s.momentum, .centered = s.centered, .maximize = s.maximize};
    if (s.fused && fused::can_rmsprop_step(p, grads[i], {&sq, &ga, &buf})) {
      fused::rmsprop_step(p, grads[i], sq, ga, buf, k);
      continue;
    }
    // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
    Tensor g = s.maximize ? neg(grads[i]) : grads[i];
    if (k.weight_decay != 0.0) g = add(g, p, k.weight_decay);
    sq.mul_(s.alpha).add_(mul(mul(g, 1.0 - s.alpha), g));
    Tensor avg;
    if (s.centered) {
      // ATen's lerp(grad_avg, g, w), w = 1 - alpha, with 1 - w rounded in the element type.
      const double w = 1.0 - s.alpha;
      const bool f32 = p.dtype() == DType::Float32;
      const double wt = f32 ? double(float(w)) : w;
      Tensor diff = sub(g, ga);
      if ((wt < 0 ? -wt : wt) < 0.5) ga.add_(diff, w);
      else ga.copy_(sub(g, mul(diff, f32 ? double(1.0f - float(w)) : 1.0 - w)));
      avg = sqrt(sub(sq, mul(ga, ga)));
    } else {
      avg = sqrt(sq);
    }
    avg = add(avg, s.eps);
    if (s.momentum > 0.0) {
      buf.mul_(s.momentum).add_(div(g, avg));
      p.add_(buf, -s.lr);
    } else {
      p.add_(div(g, avg), -s.lr);
    }
  }
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions opt) : RMSprop(single_group(std::move(params)), opt) {}
RMSprop::RMSprop(std::vector<ParamGroupSpec> groups, RMSpropOptions opt)
    : Optimizer("RMSprop", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "RMSprop: invalid eps: ", opt.eps, " (must be >= 0)");
  EMBER_CHECK(opt.momentum >= 0.0, ValueError, "RMSprop: invalid momentum: ", opt.momentum, " (must be >= 0)");
  EMBER_CHECK(opt.alpha >= 0.0, ValueError, "RMSprop: invalid alpha: ", opt.alpha, " (must be >= 0)");
}

void RMSprop::step() {
  step_groups([&](const GroupStep& b) {
    const std::vector<Tensor> sq = b.buffers("square_avg", 0.0);
    const std::vector<Tensor> bufs = opt_.momentum > 0.0 ? b.buffers("momentum_buffer", 0.0) : std::vector<Tensor>{};
    const std::vector<Tensor> ga = opt_.centered ? b.buffers("grad_avg", 0.0) : std::vector<Tensor>{};
    rmsprop_step(b.params, b.grads, sq, ga, bufs,
                 {.lr = b.group.lr, .alpha = opt_.alpha, .eps = opt_.eps, .weight_decay = b.group.weight_decay,
                  .momentum = opt_.momentum, .centered = opt_.centered, .maximize = opt_.maximize, .fused = opt_.fused});
  });
}

std::vector<std::string> RMSprop::state_buffer_names() const {
  std::vector<std::string> names = {"square_avg"};
  if (opt_.momentum > 0.0) names.push_back("momentum_buffer");
  if (opt_.centered) names.push_back("grad_avg");
  return names;
}

std::vector<std::pair<std::string, double>> RMSprop::options_list() const {
  return {{"alpha", opt_.alpha}, {"eps", opt_.eps}, {"momentum", opt_.momentum}, {"centered", opt_.centered ? 1.0 : 0.0},
          {"maximize", opt_.maximize ? 1.0 : 0.0}};
}
void RMSprop::set_option(const std::string& name, double v) {
  if (name == "alpha") opt_.alpha = v;
  else if (name == "eps") opt_.eps = v;
  else if (name == "momentum") opt_.momentum = v;
  else if (name == "centered") opt_.centered = v != 0.0;
  else if (name == "maximize") opt_.maximize = v != 0.0;
}

}  // namespace ember::optim
