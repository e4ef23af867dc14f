// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD's formulas.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

namespace {
std::vector<ParamGroupSpec> one_group(std::vector<Tensor> params) {
  return {ParamGroupSpec{.params = std::move(params)}};
}
void check_sgd(const SGDOptions& o) {
  EMBER_CHECK(o.momentum >= 0.0, ValueError, "SGD: invalid momentum: ", o.momentum, " (must be >= 0)");
  EMBER_CHECK(o.dampening >= 0.0, ValueError, "SGD: invalid dampening: ", o.dampening, " (must be >= 0)");
  EMBER_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), ValueError,
              "SGD: nesterov needs momentum > 0 and dampening = 0, got momentum ", o.momentum,
              " and dampening ", o.dampening);
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions opt) : SGD(one_group(std::move(params)), opt) {}
SGD::SGD(std::vector<ParamGroupSpec> groups, SGDOptions opt)
    : Optimizer("SGD", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  check_sgd(opt_);
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      Tensor& p = group.params[pi];
      Tensor d_p = p.grad();
      if (!d_p.defined()) continue;
      if (group.weight_decay != 0.0) d_p = add(d_p, p, group.weight_decay);
      ParamState& st = state(gi, pi);
      st.step += 1;
      if (opt_.momentum != 0.0) {
        auto it = st.buffers.find("momentum_buffer");
        if (it == st.buffers.end()) {
          // PyTorch: the first step's buffer is the gradient itself (no dampening).
          it = st.buffers.emplace("momentum_buffer", d_p.detach().clone()).first;
        } else {
          it->second.mul_(opt_.momentum).add_(d_p, 1.0 - opt_.dampening);
        }
        d_p = opt_.nesterov ? add(d_p, it->second, opt_.momentum) : it->second;
      }
      p.add_(d_p, -group.lr);
    }
  }
}

std::vector<std::pair<std::string, double>> SGD::options_list() const {
  return {{"momentum", opt_.momentum}, {"dampening", opt_.dampening}, {"nesterov", opt_.nesterov ? 1.0 : 0.0}};
}
void SGD::set_option(const std::string& name, double v) {
  if (name == "momentum") opt_.momentum = v;
  else if (name == "dampening") opt_.dampening = v;
  else if (name == "nesterov") opt_.nesterov = v != 0.0;
}

}  // namespace ember::optim
