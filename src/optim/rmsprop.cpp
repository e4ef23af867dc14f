// RMSprop: torch.optim.RMSprop's single-tensor formulas (centered with ATen's lerp, momentum
// applied to g / avg, eps outside the square root), fused or as in-place ops.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ops/optim_step.h"

namespace ember::optim {

namespace {
std::vector<ParamGroupSpec> one_group(std::vector<Tensor> params) { return {ParamGroupSpec{.params = std::move(params)}}; }
}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions opt) : RMSprop(one_group(std::move(params)), opt) {}
RMSprop::RMSprop(std::vector<ParamGroupSpec> groups, RMSpropOptions opt)
    : Optimizer("RMSprop", std::move(groups), opt.lr, opt.weight_decay), opt_(opt) {
  EMBER_CHECK(opt.eps >= 0.0, ValueError, "RMSprop: invalid eps: ", opt.eps, " (must be >= 0)");
  EMBER_CHECK(opt.momentum >= 0.0, ValueError, "RMSprop: invalid momentum: ", opt.momentum, " (must be >= 0)");
  EMBER_CHECK(opt.alpha >= 0.0, ValueError, "RMSprop: invalid alpha: ", opt.alpha, " (must be >= 0)");
}

void RMSprop::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    ParamGroup& group = groups_[gi];
    for (size_t pi = 0; pi < group.params.size(); ++pi) {
      Tensor& p = group.params[pi];
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      if (!st.buffers.count("square_avg")) st.buffers["square_avg"] = zeros_like(p.detach());
      if (opt_.momentum > 0.0 && !st.buffers.count("momentum_buffer")) st.buffers["momentum_buffer"] = zeros_like(p.detach());
      if (opt_.centered && !st.buffers.count("grad_avg")) st.buffers["grad_avg"] = zeros_like(p.detach());
      Tensor none;
      Tensor& sq = st.buffers.at("square_avg");
      Tensor& ga = opt_.centered ? st.buffers.at("grad_avg") : none;
      Tensor& buf = opt_.momentum > 0.0 ? st.buffers.at("momentum_buffer") : none;
      st.step += 1;
      const kernels::RmspropStepParams params{.lr = group.lr, .alpha = opt_.alpha, .eps = opt_.eps,
                                              .weight_decay = group.weight_decay, .momentum = opt_.momentum,
                                              .centered = opt_.centered, .maximize = opt_.maximize};
      if (opt_.fused && fused::can_rmsprop_step(p, p.grad(), {&sq, &ga, &buf})) {
        fused::rmsprop_step(p, p.grad(), sq, ga, buf, params);
        continue;
      }
      // The reference path: the kernel's arithmetic (kernels/optim_update.h) as in-place ops.
      Tensor g = opt_.maximize ? neg(p.grad()) : p.grad();
      if (params.weight_decay != 0.0) g = add(g, p, params.weight_decay);
      sq.mul_(opt_.alpha).add_(mul(mul(g, 1.0 - opt_.alpha), g));
      Tensor avg;
      if (opt_.centered) {
        // ATen's lerp(grad_avg, g, w), w = 1 - alpha, with 1 - w rounded in the element type.
        const double w = 1.0 - opt_.alpha;
        const bool f32 = p.dtype() == DType::Float32;
        const double wt = f32 ? double(float(w)) : w;
        Tensor diff = sub(g, ga);
        if ((wt < 0 ? -wt : wt) < 0.5) ga.add_(diff, w);
        else ga.copy_(sub(g, mul(diff, f32 ? double(1.0f - float(w)) : 1.0 - w)));
        avg = sqrt(sub(sq, mul(ga, ga)));
      } else {
        avg = sqrt(sq);
      }
      avg = add(avg, opt_.eps);
      if (opt_.momentum > 0.0) {
        buf.mul_(opt_.momentum).add_(div(g, avg));
        p.add_(buf, -group.lr);
      } else {
        p.add_(div(g, avg), -group.lr);
      }
    }
  }
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
