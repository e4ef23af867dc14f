// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD's formulas.
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
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      auto it = st.buffers.find("momentum_buffer");
      const bool has_buf = it != st.buffers.end();
      Tensor none;
      if (opt_.fused && fused::can_sgd_step(p, p.grad(), {has_buf ? &it->second : &none})) {
        step_fused(p, st, group.lr, group.weight_decay);
      } else {
        step_reference(p, st, group.lr, group.weight_decay);
      }
    }
  }
}

// One kernel call: the momentum buffer is allocated uninitialised on the first step and the
// kernel writes the gradient into it (PyTorch's first-step rule).
void SGD::step_fused(Tensor& p, ParamState& st, double lr, double weight_decay) {
  st.step += 1;
  Tensor buf;
  bool first_step = false;
  if (opt_.momentum != 0.0) {
    auto it = st.buffers.find("momentum_buffer");
    if (it == st.buffers.end()) {
      it = st.buffers.emplace("momentum_buffer", empty_like(p.detach())).first;
      first_step = true;
    }
    buf = it->second;
  }
  fused::sgd_step(p, p.grad(), buf,
                  {.lr = lr, .momentum = opt_.momentum, .dampening = opt_.dampening,
                   .weight_decay = weight_decay, .nesterov = opt_.nesterov, .first_step = first_step,
                   .maximize = opt_.maximize});
}

void SGD::step_reference(Tensor& p, ParamState& st, double lr, double weight_decay) {
  Tensor d_p = opt_.maximize ? neg(p.grad()) : p.grad();
  if (weight_decay != 0.0) d_p = add(d_p, p, weight_decay);
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
  p.add_(d_p, -lr);
}

// maximize is listed only when set: the states saved before it existed stay loadable.
std::vector<std::pair<std::string, double>> SGD::options_list() const {
  std::vector<std::pair<std::string, double>> o = {
      {"momentum", opt_.momentum}, {"dampening", opt_.dampening}, {"nesterov", opt_.nesterov ? 1.0 : 0.0}};
  if (opt_.maximize) o.emplace_back("maximize", 1.0);
  return o;
}
std::vector<std::string> SGD::state_buffer_names() const {
  if (opt_.momentum == 0.0) return {};
  return {"momentum_buffer"};
}
void SGD::set_option(const std::string& name, double v) {
  if (name == "momentum") opt_.momentum = v;
  else if (name == "dampening") opt_.dampening = v;
  else if (name == "nesterov") opt_.nesterov = v != 0.0;
  else if (name == "maximize") opt_.maximize = v != 0.0;
}

}  // namespace ember::optim
