// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD's formulas, as the
// group update sgd_step (optim/functional.h) and the class that calls it.
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/functional.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"
#include "optim/step_lists.h"

namespace ember::optim {

namespace {
void check_sgd(const SGDOptions& o) {
  EMBER_CHECK(o.momentum >= 0.0, ValueError, "SGD: invalid momentum: ", o.momentum, " (must be >= 0)");
  EMBER_CHECK(o.dampening >= 0.0, ValueError, "SGD: invalid dampening: ", o.dampening, " (must be >= 0)");
  EMBER_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), ValueError,
              "SGD: nesterov needs momentum > 0 and dampening = 0, got momentum ", o.momentum,
              " and dampening ", o.dampening);
}

// The reference path: the kernel's arithmetic as in-place ops. The first step's buffer is the
// gradient itself (PyTorch's rule, no dampening).
void sgd_reference(const Tensor& p, const Tensor& grad, Tensor& buf, const SgdSettings& s) {
  Tensor d_p = s.maximize ? neg(grad) : grad;
  if (s.weight_decay != 0.0) d_p = add(d_p, p, s.weight_decay);
  if (s.momentum != 0.0) {
    if (!buf.defined()) {
      buf = d_p.detach().clone();
    } else {
      buf.mul_(s.momentum).add_(d_p, 1.0 - s.dampening);
    }
    d_p = s.nesterov ? add(d_p, buf, s.momentum) : buf;
  }
  Tensor(p).add_(d_p, -s.lr);
}
}  // namespace

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& momentum_buffers,
              const SgdSettings& s) {
  check_step_lists("sgd_step", params.size(), {{"grads", grads.size()}});
  if (s.momentum != 0.0) check_step_lists("sgd_step", params.size(), {{"momentum_buffers", momentum_buffers.size()}});
  Tensor none;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    Tensor& buf = s.momentum != 0.0 ? momentum_buffers[i] : none;
    if (!s.fused || !fused::can_sgd_step(p, grads[i], {&buf})) {
      sgd_reference(p, grads[i], buf, s);
      continue;
    }
    // One kernel call: a new momentum buffer is allocated uninitialised and the kernel writes the
    // gradient into it (the first step's rule).
    const bool first_step = s.momentum != 0.0 && !buf.defined();
    if (first_step) buf = empty_like(p.detach());
    fused::sgd_step(p, grads[i], buf,
                    {.lr = s.lr, .momentum = s.momentum, .dampening = s.dampening, .weight_decay = s.weight_decay,
                     .nesterov = s.nesterov, .first_step = first_step, .maximize = s.maximize});
  }
}

SGD::SGD(std::vector<Tensor> params, SGDOptions opt) : SGD(single_group(std::move(params)), opt) {}
SGD::SGD(std::vector<ParamGroupSpec> groups, SGDOptions opt)
    : Optimizer("SGD", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  check_sgd(opt_);
}

void SGD::step() {
  step_groups([&](const GroupStep& b) {
    std::vector<Tensor> bufs = b.buffers("momentum_buffer");
    sgd_step(b.params, b.grads, bufs,
             {.lr = b.group.lr, .momentum = opt_.momentum, .dampening = opt_.dampening,
              .weight_decay = b.group.weight_decay, .nesterov = opt_.nesterov, .maximize = opt_.maximize,
              .fused = opt_.fused});
    if (opt_.momentum != 0.0) b.store("momentum_buffer", bufs);
  });
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
