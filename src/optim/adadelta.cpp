// Adadelta: torch.optim.Adadelta's single-tensor formulas (eps inside both square roots), fused or
// as in-place ops.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/functional.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"
#include "optim/step_lists.h"

namespace ember::optim {

void adadelta_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& acc_deltas,
                   const AdadeltaSettings& s) {
  check_step_lists("adadelta_step", params.size(),
                   {{"grads", grads.size()}, {"square_avgs", square_avgs.size()}, {"acc_deltas", acc_deltas.size()}});
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i], sq = square_avgs[i], acc = acc_deltas[i];
    EMBER_CHECK(sq.defined() && acc.defined(), ValueError, "adadelta_step: parameter ", i,
                " has an undefined state buffer (create them as zeros_like(param))");
    const kernels::AdadeltaStepParams k{.lr = s.lr, .rho = s.rho, .eps = s.eps, .weight_decay = s.weight_decay,
                                        .maximize = s.maximize};
    if (s.fused && fused::can_adadelta_step(p, grads[i], {&sq, &acc})) {
      fused::adadelta_step(p, grads[i], sq, acc, k);
      continue;
    }
    // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
    Tensor g = s.maximize ? neg(grads[i]) : grads[i];
    if (k.weight_decay != 0.0) g = add(g, p, k.weight_decay);
    sq.mul_(s.rho).add_(mul(mul(g, 1.0 - s.rho), g));
    Tensor delta = mul(div(sqrt(add(acc, s.eps)), sqrt(add(sq, s.eps))), g);
    acc.mul_(s.rho).add_(mul(mul(delta, 1.0 - s.rho), delta));
    p.add_(delta, -s.lr);
  }
}

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions opt) : Adadelta(single_group(std::move(params)), opt) {}
Adadelta::Adadelta(std::vector<ParamGroupSpec> groups, AdadeltaOptions opt)
    : Optimizer("Adadelta", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.rho >= 0.0 && opt.rho <= 1.0, ValueError, "Adadelta: invalid rho: ", opt.rho, " (must be in [0, 1])");
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "Adadelta: invalid eps: ", opt.eps, " (must be >= 0)");
}

void Adadelta::step() {
  step_groups([&](const GroupStep& b) {
    adadelta_step(b.params, b.grads, b.buffers("square_avg", 0.0), b.buffers("acc_delta", 0.0),
                  {.lr = b.group.lr, .rho = opt_.rho, .eps = opt_.eps, .weight_decay = b.group.weight_decay,
                   .maximize = opt_.maximize, .fused = opt_.fused});
  });
}

std::vector<std::pair<std::string, double>> Adadelta::options_list() const {
  return {{"rho", opt_.rho}, {"eps", opt_.eps}, {"maximize", opt_.maximize ? 1.0 : 0.0}};
}
void Adadelta::set_option(const std::string& name, double v) {
  if (name == "rho") opt_.rho = v;
  else if (name == "eps") opt_.eps = v;
  else if (name == "maximize") opt_.maximize = v != 0.0;
}

}  // namespace ember::optim
