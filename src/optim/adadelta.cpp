// Adadelta: torch.optim.Adadelta's single-tensor formulas (eps inside both square roots), fused or
// as in-place ops.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"

namespace ember::optim {

namespace {
std::vector<ParamGroupSpec> one_group(std::vector<Tensor> params) { return {ParamGroupSpec{.params = std::move(params)}}; }
}  // namespace

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions opt) : Adadelta(one_group(std::move(params)), opt) {}
Adadelta::Adadelta(std::vector<ParamGroupSpec> groups, AdadeltaOptions opt)
    : Optimizer("Adadelta", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.rho >= 0.0 && opt.rho <= 1.0, ValueError, "Adadelta: invalid rho: ", opt.rho, " (must be in [0, 1])");
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "Adadelta: invalid eps: ", opt.eps, " (must be >= 0)");
}

void Adadelta::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      Tensor& p = group.params[pi];
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      if (st.buffers.empty()) {
        st.buffers["square_avg"] = zeros_like(p.detach());
        st.buffers["acc_delta"] = zeros_like(p.detach());
      }
      Tensor& sq = st.buffers.at("square_avg");
      Tensor& acc = st.buffers.at("acc_delta");
      st.step += 1;
      const kernels::AdadeltaStepParams params{.lr = group.lr, .rho = opt_.rho, .eps = opt_.eps,
                                               .weight_decay = group.weight_decay, .maximize = opt_.maximize};
      if (opt_.fused && fused::can_adadelta_step(p, p.grad(), {&sq, &acc})) {
        fused::adadelta_step(p, p.grad(), sq, acc, params);
        continue;
      }
      // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
      Tensor g = opt_.maximize ? neg(p.grad()) : p.grad();
      if (params.weight_decay != 0.0) g = add(g, p, params.weight_decay);
      sq.mul_(opt_.rho).add_(mul(mul(g, 1.0 - opt_.rho), g));
      Tensor delta = mul(div(sqrt(add(acc, opt_.eps)), sqrt(add(sq, opt_.eps))), g);
      acc.mul_(opt_.rho).add_(mul(mul(delta, 1.0 - opt_.rho), delta));
      p.add_(delta, -group.lr);
    }
  }
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
