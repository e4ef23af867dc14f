// nn::Module bookkeeping: registration, recursive traversal, device/dtype moves in place,
// state_dict save/load with strict checks, PyTorch-style printing and the layer summary table.
#include "ember/nn/module.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {
// Set while summary() runs: operator() appends (module, input shape, output shape) here.
struct CallRecord {
  const Module* module;
  Shape input, output;
};
thread_local std::vector<CallRecord>* g_call_log = nullptr;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// Converts t in place: its TensorImpl keeps its identity, its storage/strides/dtype are re-pointed.
void convert_in_place(Tensor& t, Device device, std::optional<DType> dtype) {
  DType dt = dtype && is_floating(t.dtype()) ? *dtype : t.dtype();
  if (t.device() == device && t.dtype() == dt) return;
  NoGradGuard no_grad;
  Tensor moved = t.detach().to(device, dt).contiguous();
  TensorImpl& impl = t.impl();
  impl.storage = moved.storage();
  impl.sizes = moved.sizes();
  impl.strides = moved.strides();
  impl.offset = moved.storage_offset();
  impl.dtype = dt;
  if (impl.grad) impl.grad = Tensor(impl.grad).detach().to(device, dt).contiguous().impl_ptr();
}
}  // namespace

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(detail::cat(type_name_, ": forward() is not implemented for this module"));
}

Tensor Module::operator()(const Tensor& x) {
  if (!g_call_log) return forward(x);
  return call_logged(x, [&] { return forward(x); });
}

bool Module::recording_calls() { return g_call_log != nullptr; }

Tensor Module::call_logged(const Tensor& x, const std::function<Tensor()>& run) {
  if (!g_call_log) return run();
  // Reserve the slot before running, so the log lists modules in the order they were entered.
  size_t slot = g_call_log->size();
  g_call_log->push_back({this, x.sizes(), {}});
  Tensor y = run();
  (*g_call_log)[slot].output = y.sizes();
  return y;
}

void Module::check_new_name(const std::string& name, const char* what) const {
  EMBER_CHECK(!name.empty(), ValueError, type_name_, ": ", what, " name must not be empty");
  EMBER_CHECK(name.find('.') == std::string::npos, ValueError, type_name_, ": ", what, " name '",
              name, "' must not contain '.'");
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& kv) { return kv.first == name; });
  };
  EMBER_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_), ValueError, type_name_,
              ": cannot register ", what, " '", name, "': the name is already used");
}

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name, "parameter");
  EMBER_CHECK(t.defined(), ValueError, type_name_, ": parameter '", name, "' is undefined");
  EMBER_CHECK(t.is_leaf(), ValueError, type_name_, ": parameter '", name,
              "' must be a leaf tensor (use detach())");
  t.requires_grad_(requires_grad);
  params_.emplace_back(name, std::move(t));
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  check_new_name(name, "buffer");
  EMBER_CHECK(t.defined(), ValueError, type_name_, ": buffer '", name, "' is undefined");
  buffers_.emplace_back(name, std::move(t));
  return buffers_.back().second;
}

void Module::register_module_impl(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  EMBER_CHECK(module != nullptr, ValueError, type_name_, ": module '", name, "' is null");
  module->train(training_);
  children_.emplace_back(name, std::move(module));
}

Tensor& Module::param(const std::string& name) {
  for (auto& [n, t] : params_)
    if (n == name) return t;
  throw IndexError(detail::cat(type_name_, ": no parameter named '", name, "'"));
}
Tensor& Module::buffer(const std::string& name) {
  for (auto& [n, t] : buffers_)
    if (n == name) return t;
  throw IndexError(detail::cat(type_name_, ": no buffer named '", name, "'"));
}

void Module::collect(const std::string& prefix, bool recurse, bool params,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, child] : children_) child->collect(prefix + n + ".", true, params, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, true, out);
  return out;
}
std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, false, out);
  return out;
}
std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}
std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}
std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, c] : children_) out.push_back(c);
  return out;
}
std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [n, c] : children_) {
    out.emplace_back(n, c);
    for (auto& [sub, m] : c->named_modules()) out.emplace_back(n + "." + sub, m);
  }
  return out;
}

void Module::train(bool on) {
  training_ = on && !frozen_;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::freeze(bool on, bool training) {
  frozen_ = on;
  for (auto& [n, p] : params_) p.requires_grad_(!on);
  for (auto& [n, c] : children_) c->freeze(on, training);
  training_ = training && !on;
}

void Module::apply_to(const std::function<void(Tensor&)>& fn) {
  for (auto& [n, t] : params_) fn(t);
  for (auto& [n, t] : buffers_) fn(t);
  for (auto& [n, c] : children_) c->apply_to(fn);
}
void Module::to(Device device) {
  apply_to([&](Tensor& t) { convert_in_place(t, device, std::nullopt); });
}
void Module::to(DType dtype) {
  EMBER_CHECK(is_floating(dtype), DTypeError, type_name_, ".to: modules convert to floating-point "
              "dtypes only, not ", dtype_name(dtype));
  apply_to([&](Tensor& t) { convert_in_place(t, t.device(), dtype); });
}
void Module::to(Device device, DType dtype) {
  EMBER_CHECK(is_floating(dtype), DTypeError, type_name_, ".to: modules convert to floating-point "
              "dtypes only, not ", dtype_name(dtype));
  apply_to([&](Tensor& t) { convert_in_place(t, device, dtype); });
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.set_grad({});
    } else {
      NoGradGuard g;
      p.grad().zero_();
    }
  }
}

void Module::collect_state(const std::string& prefix,
                           std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : params_) out.emplace_back(prefix + n, t);
  for (const auto& [n, t] : buffers_) out.emplace_back(prefix + n, t);
  for (const auto& [n, c] : children_) c->collect_state(prefix + n + ".", out);
}

StateDict Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> items;
  collect_state("", items);
  StateDict d;
  for (auto& [k, t] : items) d.insert(k, t);
  return d;
}

void Module::load_state_dict(const StateDict& dict, bool strict) {
  std::vector<std::pair<std::string, Tensor>> own;
  collect_state("", own);
  std::vector<std::string> missing, unexpected;
  std::map<std::string, bool> own_keys;
  for (auto& [k, t] : own) own_keys[k] = true;
  for (auto& [k, t] : own) {
    const Tensor* src = dict.find(k);
    if (!src) {
      missing.push_back(k);
      continue;
    }
    EMBER_CHECK(src->defined(), ValueError, "load_state_dict: '", k, "' is an undefined tensor");
    EMBER_CHECK(src->sizes() == t.sizes(), ShapeError, "load_state_dict: size mismatch for '", k,
                "': copying a tensor of shape ", shape_str(src->sizes()),
                ", the shape in the current model is ", shape_str(t.sizes()));
    EMBER_CHECK(src->dtype() == t.dtype(), DTypeError, "load_state_dict: dtype mismatch for '", k,
                "': the state dict has ", dtype_name(src->dtype()), ", the current model has ",
                dtype_name(t.dtype()));
  }
  for (const auto& [k, t] : dict)
    if (!own_keys.count(k)) unexpected.push_back(k);
  if (strict && (!missing.empty() || !unexpected.empty())) {
    std::string msg = "load_state_dict: error(s) in loading the state dict for " + type_name_ + ":";
    if (!missing.empty()) msg += " missing key(s): " + join(missing) + ".";
    if (!unexpected.empty()) msg += " unexpected key(s): " + join(unexpected) + ".";
    throw ValueError(msg, "pass strict=false to load only the keys both sides have");
  }
  NoGradGuard g;
  for (auto& [k, t] : own) {
    const Tensor* src = dict.find(k);
    if (src && !src->is_same(t)) t.copy_(*src);
  }
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const auto& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

void Module::repr_into(std::ostream& os, int indent) const {
  os << type_name_ << "(";
  std::string extra = extra_repr();
  if (children_.empty()) {
    os << extra << ")";
    return;
  }
  std::string pad(size_t(indent + 2), ' ');
  if (!extra.empty()) os << "\n" << pad << extra;
  for (const auto& [n, c] : children_) {
    os << "\n" << pad << "(" << n << "): ";
    c->repr_into(os, indent + 2);
  }
  os << "\n" << std::string(size_t(indent), ' ') << ")";
}

std::string Module::repr() const {
  std::ostringstream os;
  repr_into(os, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

std::string Module::summary(Shape input_shape) {
  std::map<const Module*, std::pair<std::string, int>> names;  // module -> (dotted name, depth)
  for (auto& [n, m] : named_modules())
    names[m.get()] = {n, int(std::count(n.begin(), n.end(), '.'))};
  std::vector<Tensor> ps = parameters();
  TensorOptions opt;
  if (!ps.empty()) opt = {.dtype = ps[0].dtype(), .device = ps[0].device()};
  Tensor x = zeros(input_shape, opt);

  std::vector<CallRecord> log;
  bool was_training = training_;
  eval();
  Tensor y;
  {
    NoGradGuard g;
    std::vector<CallRecord>* prev = g_call_log;
    g_call_log = &log;
    try {
      y = forward(x);
    } catch (...) {
      g_call_log = prev;
      train(was_training);
      throw;
    }
    g_call_log = prev;
  }
  train(was_training);

  std::ostringstream os;
  // 79 columns in all, so the table fits an 80-column terminal without wrapping.
  os << std::left << std::setw(32) << "Layer (type)" << std::setw(20) << "Output shape"
     << std::right << std::setw(12) << "Param #" << std::setw(15) << "FLOPs" << "\n";
  os << std::string(79, '=') << "\n";
  int64_t total_flops = 0;
  std::vector<const CallRecord*> order;  // call order (a module appears once per call)
  for (const auto& r : log)
    if (r.module != this && names.count(r.module)) order.push_back(&r);
  for (const CallRecord* r : order) {
    const auto& [name, depth] = names[r->module];
    std::string label = std::string(size_t(depth) * 2, ' ') + name + " (" + r->module->type_name() + ")";
    int64_t flops = r->module->forward_flops(r->input, r->output);
    if (flops > 0 && r->module->children().empty()) total_flops += flops;
    if (label.size() >= 32) os << label << "\n" << std::string(32, ' ');  // a deep name gets its own line
    else os << std::left << std::setw(32) << label;
    os << std::left << std::setw(20) << shape_str(r->output) << std::right
       << std::setw(12) << with_commas(r->module->num_parameters()) << std::setw(15)
       << (flops >= 0 ? with_commas(flops) : std::string("-")) << "\n";
  }
  os << std::string(79, '=') << "\n";
  os << "Input shape: " << shape_str(input_shape) << ", output shape: " << shape_str(y.sizes()) << "\n";
  os << "Total params: " << with_commas(num_parameters()) << "\n";
  os << "Trainable params: " << with_commas(num_parameters(true)) << "\n";
  os << "Forward FLOPs (Linear + Conv2d): " << with_commas(total_flops) << "\n";
  return os.str();
}

}  // namespace ember::nn
