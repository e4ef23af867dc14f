// Adagrad: torch.optim.Adagrad's single-tensor formulas (lr decay by step, the accumulator started
// at initial_accumulator_value, eps outside the square root), fused or as in-place ops.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"

namespace ember::optim {

namespace {
std::vector<ParamGroupSpec> one_group(std::vector<Tensor> params) { return {ParamGroupSpec{.params = std::move(params)}}; }
}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions opt) : Adagrad(one_group(std::move(params)), opt) {}
Adagrad::Adagrad(std::vector<ParamGroupSpec> groups, AdagradOptions opt)
    : Optimizer("Adagrad", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.lr_decay >= 0.0, ValueError, "Adagrad: invalid lr_decay: ", opt.lr_decay, " (must be >= 0)");
  EMBER_CHECK(opt.initial_accumulator_value >= 0.0, ValueError, "Adagrad: invalid initial_accumulator_value: ",
              opt.initial_accumulator_value, " (must be >= 0)");
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "Adagrad: invalid eps: ", opt.eps, " (must be >= 0)");
}

void Adagrad::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      Tensor& p = group.params[pi];
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      if (!st.buffers.count("sum")) st.buffers["sum"] = full_like(p.detach(), opt_.initial_accumulator_value);
      Tensor& sum = st.buffers.at("sum");
      st.step += 1;
      const kernels::AdagradStepParams params{.lr = group.lr, .lr_decay = opt_.lr_decay, .weight_decay = group.weight_decay,
                                              .eps = opt_.eps, .maximize = opt_.maximize, .step = st.step};
      if (opt_.fused && fused::can_adagrad_step(p, p.grad(), {&sum})) {
        fused::adagrad_step(p, p.grad(), sum, params);
        continue;
      }
      // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
      Tensor g = opt_.maximize ? neg(p.grad()) : p.grad();
      if (params.weight_decay != 0.0) g = add(g, p, params.weight_decay);
      sum.add_(mul(g, g));
      p.add_(div(g, add(sqrt(sum), opt_.eps)), -params.clr());
    }
  }
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
