// Optimizer base: parameter groups, zero_grad, the groups x parameters walk of every step(), and the
// state_dict layout shared by all optimizers.
#include "ember/optim/optimizer.h"

#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "optim/step_lists.h"

namespace ember::optim {

Optimizer::Optimizer(std::string name, std::vector<ParamGroupSpec> specs, double lr, double wd)
    : name_(std::move(name)) {
  check_lr_wd(lr, wd);
  EMBER_CHECK(!specs.empty(), ValueError, name_, ": got an empty parameter list");
  for (auto& spec : specs) {
    ParamGroup g;
    g.params = std::move(spec.params);
    g.lr = spec.lr.value_or(lr);
    g.weight_decay = spec.weight_decay.value_or(wd);
    check_lr_wd(g.lr, g.weight_decay);
    for (size_t i = 0; i < g.params.size(); ++i) {
      const Tensor& p = g.params[i];
      EMBER_CHECK(p.defined(), ValueError, name_, ": parameter ", i, " of group ", groups_.size(),
                  " is undefined");
      EMBER_CHECK(is_floating(p.dtype()), DTypeError, name_, ": can only optimize floating-point "
                  "tensors, parameter ", i, " of group ", groups_.size(), " is ", dtype_name(p.dtype()));
      EMBER_CHECK(p.is_leaf(), ValueError, name_, ": can't optimize a non-leaf tensor (parameter ", i,
                  " of group ", groups_.size(), ")");
    }
    state_.emplace_back(g.params.size());
    groups_.push_back(std::move(g));
  }
}

void check_step_lists(const char* who, size_t n, std::initializer_list<std::pair<const char*, size_t>> lists) {
  for (const auto& [name, size] : lists)
    EMBER_CHECK(size == n, ValueError, who, ": ", n, " params but ", size, " ", name,
                " (one per parameter, in the same order)");
}

std::vector<ParamGroupSpec> Optimizer::single_group(std::vector<Tensor> params) {
  return {ParamGroupSpec{.params = std::move(params)}};
}

std::vector<Tensor> Optimizer::GroupStep::buffers(const std::string& name, std::optional<double> fill) const {
  std::vector<Tensor> out(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    auto& bufs = states[i]->buffers;
    auto it = bufs.find(name);
    if (it == bufs.end() && fill) it = bufs.emplace(name, full_like(params[i].detach(), *fill)).first;
    if (it != bufs.end()) out[i] = it->second;
  }
  return out;
}

void Optimizer::GroupStep::store(const std::string& name, const std::vector<Tensor>& bufs) const {
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].defined()) states[i]->buffers[name] = bufs[i];
}

std::vector<int64_t> Optimizer::GroupStep::steps() const {
  std::vector<int64_t> out;
  out.reserve(states.size());
  for (const ParamState* st : states) out.push_back(st->step);
  return out;
}

void Optimizer::step_groups(const std::function<void(const GroupStep&)>& update) {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    GroupStep batch{.group = groups_[gi], .params = {}, .grads = {}, .states = {}};
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const Tensor& p = groups_[gi].params[pi];
      if (!p.grad().defined()) continue;
      ParamState& st = state(gi, pi);
      st.step += 1;
      batch.params.push_back(p);
      batch.grads.push_back(p.grad());
      batch.states.push_back(&st);
    }
    if (!batch.params.empty()) update(batch);
  }
}

void Optimizer::check_lr_wd(double lr, double wd) const {
  EMBER_CHECK(lr >= 0.0 && std::isfinite(lr), ValueError, name_, ": invalid lr: ", lr, " (must be >= 0)");
  EMBER_CHECK(wd >= 0.0 && std::isfinite(wd), ValueError, name_, ": invalid weight_decay: ", wd,
              " (must be >= 0)");
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad({});
      } else {
        NoGradGuard ng;
        p.grad().zero_();
      }
    }
  }
}

bool Optimizer::has_option(const std::string& name) const {
  for (const auto& [k, v] : options_list())
    if (k == name) return true;
  return false;
}

void Optimizer::set_option_value(const std::string& name, double value) {
  if (!has_option(name)) {
    std::string known;
    for (const auto& [k, v] : options_list()) {
      if (!known.empty()) known += ", ";
      known += k;
    }
    throw ValueError(name_ + ": no setting '" + name + "' (its settings: " + known + ")");
  }
  set_option(name, value);
}

void Optimizer::set_lr(double lr) {
  check_lr_wd(lr, 0.0);
  for (auto& g : groups_) g.lr = lr;
}

StateDict Optimizer::state_dict() const {
  StateDict d;
  d.set_int("num_param_groups", int64_t(groups_.size()));
  for (auto& [k, v] : options_list()) d.set_scalar("options." + k, v);
  int64_t flat = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& g = groups_[gi];
    std::string gp = "param_groups." + std::to_string(gi) + ".";
    d.set_int(gp + "num_params", int64_t(g.params.size()));
    d.set_scalar(gp + "lr", g.lr);
    d.set_scalar(gp + "weight_decay", g.weight_decay);
    if (g.initial_lr) d.set_scalar(gp + "initial_lr", *g.initial_lr);
    for (size_t pi = 0; pi < g.params.size(); ++pi, ++flat) {
      const ParamState& st = state_[gi][pi];
      if (st.step == 0 && st.buffers.empty()) continue;
      std::string sp = "state." + std::to_string(flat) + ".";
      d.set_int(sp + "step", st.step);
      for (const auto& [name, buf] : st.buffers) d.set(sp + name, buf);
    }
  }
  return d;
}

void Optimizer::load_state_dict(const StateDict& d) {
  // Validate everything first so a bad dict leaves the optimizer untouched.
  int64_t ngroups = d.integer("num_param_groups");
  EMBER_CHECK(ngroups == int64_t(groups_.size()), ValueError, name_, ".load_state_dict: the state has ",
              ngroups, " parameter groups, this optimizer has ", groups_.size());
  // maximize may be absent: SGD and Adam list it only when set (their states from before it existed).
  for (auto& [k, v] : options_list())
    EMBER_CHECK(k == "maximize" || d.contains("options." + k), ValueError, name_, ".load_state_dict: missing key 'options.",
                k, "' (a state dict of another optimizer type?)");
  std::vector<std::vector<ParamState>> new_state(groups_.size());
  int64_t flat = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const ParamGroup& g = groups_[gi];
    std::string gp = "param_groups." + std::to_string(gi) + ".";
    int64_t n = d.integer(gp + "num_params");
    EMBER_CHECK(n == int64_t(g.params.size()), ValueError, name_, ".load_state_dict: group ", gi,
                " of the state has ", n, " parameters, this optimizer's has ", g.params.size());
    new_state[gi].resize(g.params.size());
    for (size_t pi = 0; pi < g.params.size(); ++pi, ++flat) {
      std::string sp = "state." + std::to_string(flat) + ".";
      if (!d.contains(sp + "step")) continue;
      ParamState& st = new_state[gi][pi];
      st.step = d.integer(sp + "step");
      const Tensor& p = g.params[pi];
      for (const std::string& buf : state_buffer_names())
        EMBER_CHECK(d.contains(sp + buf), ValueError, name_, ".load_state_dict: missing '", sp, buf,
                    "' (parameter ", flat, " has a step count, so its ", buf, " must be saved too)");
      for (const auto& [key, t] : d) {
        if (key.compare(0, sp.size(), sp) != 0 || key == sp + "step") continue;
        EMBER_CHECK(t.sizes() == p.sizes(), ShapeError, name_, ".load_state_dict: '", key, "' has shape ",
                    shape_str(t.sizes()), " but parameter ", flat, " has shape ", shape_str(p.sizes()));
        st.buffers[key.substr(sp.size())] = t.detach().to(p.device(), p.dtype()).clone();
      }
    }
  }
  // Every saved setting, also those this optimizer lists only when set (maximize: absent means off).
  if (!d.contains("options.maximize")) set_option("maximize", 0.0);
  for (const auto& [key, t] : d)
    if (key.compare(0, 8, "options.") == 0) set_option(key.substr(8), d.scalar(key));
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    std::string gp = "param_groups." + std::to_string(gi) + ".";
    groups_[gi].lr = d.scalar(gp + "lr");
    groups_[gi].weight_decay = d.scalar(gp + "weight_decay");
    if (d.contains(gp + "initial_lr")) groups_[gi].initial_lr = d.scalar(gp + "initial_lr");
  }
  state_ = std::move(new_state);
}

}  // namespace ember::optim
