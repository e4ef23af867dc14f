// Adagrad: torch.optim.Adagrad's single-tensor formulas (lr decay by step, the accumulator started
// at initial_accumulator_value, eps outside the square root), fused or as in-place ops.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/functional.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"
#include "optim/step_lists.h"

namespace ember::optim {

void adagrad_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& sums,
                  const std::vector<int64_t>& steps, const AdagradSettings& s) {
  check_step_lists("adagrad_step", params.size(), {{"grads", grads.size()}, {"sums", sums.size()}, {"steps", steps.size()}});
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i], sum = sums[i];
    EMBER_CHECK(sum.defined(), ValueError, "adagrad_step: parameter ", i, "'s sum is undefined (create it as "
                "full_like(param, initial_accumulator_value))");
    EMBER_CHECK(steps[i] >= 1, ValueError, "adagrad_step: parameter ", i, "'s step is ", steps[i],
                " (counts start at 1: increment before the update)");
    const kernels::AdagradStepParams k{.lr = s.lr, .lr_decay = s.lr_decay, .weight_decay = s.weight_decay,
                                       .eps = s.eps, .maximize = s.maximize, .step = steps[i]};
    if (s.fused && fused::can_adagrad_step(p, grads[i], {&sum})) {
      fused::adagrad_step(p, grads[i], sum, k);
      continue;
    }
    // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
    Tensor g = s.maximize ? neg(grads[i]) : grads[i];
    if (k.weight_decay != 0.0) g = add(g, p, k.weight_decay);
    sum.add_(mul(g, g));
    p.add_(div(g, add(sqrt(sum), s.eps)), -k.clr());
  }
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions opt) : Adagrad(single_group(std::move(params)), opt) {}
Adagrad::Adagrad(std::vector<ParamGroupSpec> groups, AdagradOptions opt)
    : Optimizer("Adagrad", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.lr_decay >= 0.0, ValueError, "Adagrad: invalid lr_decay: ", opt.lr_decay, " (must be >= 0)");
  EMBER_CHECK(opt.initial_accumulator_value >= 0.0, ValueError, "Adagrad: invalid initial_accumulator_value: ",
              opt.initial_accumulator_value, " (must be >= 0)");
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "Adagrad: invalid eps: ", opt.eps, " (must be >= 0)");
}

void Adagrad::step() {
  step_groups([&](const GroupStep& b) {
    adagrad_step(b.params, b.grads, b.buffers("sum", opt_.initial_accumulator_value), b.steps(),
                 {.lr = b.group.lr, .lr_decay = opt_.lr_decay, .weight_decay = b.group.weight_decay, .eps = opt_.eps,
                  .maximize = opt_.maximize, .fused = opt_.fused});
  });
}

std::vector<std::pair<std::string, double>> Adagrad::options_list() const {
  return {{"lr_decay", opt_.lr_decay}, {"initial_accumulator_value", opt_.initial_accumulator_value}, {"eps", opt_.eps},
          {"maximize", opt_.maximize ? 1.0 : 0.0}};
}
void Adagrad::set_option(const std::string& name, double v) {
  if (name == "lr_decay") opt_.lr_decay = v;
  else if (name == "initial_accumulator_value") opt_.initial_accumulator_value = v;
  else if (name == "eps") opt_.eps = v;
  else if (name == "maximize") opt_.maximize = v != 0.0;
}

}  // namespace ember::optim
