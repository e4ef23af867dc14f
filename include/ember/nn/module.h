// nn::Module: the base of every layer and model, used through std::shared_ptr as libtorch's.
//
// A module owns named parameters (tensors that require grad), named buffers (state that is saved
// but not trained: BatchNorm's running statistics) and named child modules, each kept in
// registration order. Dotted names follow PyTorch ("conv1.weight", "features.0.bias",
// "bn1.running_mean"), so state_dict() keys match a PyTorch model built the same way.
//
// Gradients: backward() ADDS into each parameter's .grad (never overwrites); call zero_grad() on
// the module or the optimizer between steps.
//
// Parameter identity: to(Device)/to(DType) and load_state_dict() change parameters IN PLACE. The
// TensorImpl of each parameter stays the same object; to() re-points its storage, dtype and
// strides at the converted data (and converts .grad alongside), load_state_dict() copies values
// into the existing storage. So a Tensor handle taken earlier (an optimizer's parameter list, a
// layer's `weight` member) keeps referring to the live parameter.
//
// Forward hooks: calling a module as `(*m)(x)` runs forward() and lets summary() record the
// output shape; calling m->forward(x) directly skips that bookkeeping (as PyTorch's
// module.forward(x) skips hooks). Built-in containers and the zoo models call children with
// operator().
//
// Thread safety: none; a module is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"
#include "ember/nn/state_dict.h"

namespace ember::nn {

class Module : public std::enable_shared_from_this<Module> {
 public:
  // `type_name` is what printing shows ("Linear", "Conv2d", "MnistNet").
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The computation. The default throws NotImplementedError naming the module type.
  virtual Tensor forward(const Tensor& x);
  // forward() plus the summary() bookkeeping; prefer this to call a child.
  Tensor operator()(const Tensor& x);
  // run() (a variant of this module's forward: Conv2d::forward_then, a folded batch norm) with
  // operator()'s summary() bookkeeping.
  Tensor call_logged(const Tensor& x, const std::function<Tensor()>& run);
  // True while summary() records calls on this thread: a fused forward that would enter its
  // children in another order than their own forwards (a residual block's tail) runs them unfused.
  static bool recording_calls();

  // Registration. Names must be non-empty, contain no '.', and be unique among this module's
  // parameters, buffers and children (ValueError otherwise). register_parameter sets
  // requires_grad on `t` (a leaf, floating point) and returns the stored handle.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }

  // Recursive by default, in registration order, this module's own entries first, then each
  // child's (depth first) — the order PyTorch uses.
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  // Every module below (not this one), with dotted names, depth first in registration order.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;

  // Training mode (recursive). Affects Dropout and BatchNorm2d. A frozen module stays in
  // evaluation mode whatever `on` says (its children follow their own frozen flags).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Freezing, for fine-tuning (recursive): a frozen module's parameters stop requiring grad (so
  // backward computes no gradient for them and optimizers skip them) and it stays in evaluation
  // mode (BatchNorm normalises with, and keeps, its running statistics; Dropout is off), as the
  // torchvision fine-tuning recipes do by hand. freeze(false) undoes both; the training mode
  // becomes `training` (the mode the run is in).
  void freeze(bool on = true, bool training = true);
  bool is_frozen() const { return frozen_; }

  // Converts every parameter and buffer in place (see "Parameter identity" above). to(DType)
  // converts only floating-point tensors (num_batches_tracked stays int64), as PyTorch.
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);

  // set_to_none (the default): every parameter's .grad becomes undefined, so the next backward
  // writes a fresh gradient. false: existing gradients are zeroed in place.
  void zero_grad(bool set_to_none = true);

  // Per module as PyTorch: this module's own parameters, then its own buffers, then each child's
  // entries (depth first), e.g. "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
  // "bn1.num_batches_tracked".
  // The tensors are the live ones (not copies): clone them to keep a snapshot.
  StateDict state_dict() const;
  // Copies values into the existing parameters and buffers (no autograd history). strict: every
  // key of the module must be present and no other key may be (else ValueError listing the
  // missing and unexpected keys). Shape (ShapeError) and dtype (DTypeError) mismatches always
  // throw, naming the key and both shapes / dtypes. Nothing is modified when it throws.
  void load_state_dict(const StateDict& dict, bool strict = true);

  // Number of parameter elements (recursive); trainable_only counts those requiring grad.
  int64_t num_parameters(bool trainable_only = false) const;

  // A table of every module called during one forward pass with a zeros input of `input_shape`
  // (batch dim included, e.g. {1, 1, 28, 28}), run in eval mode without autograd: name, type,
  // output shape, parameters (recursive), forward FLOPs (2 per multiply-add, Linear and Conv2d
  // only; "-" elsewhere); then the totals. The training flag is restored afterwards.
  std::string summary(Shape input_shape);

  const std::string& type_name() const { return type_name_; }
  // The text inside the parentheses of this module's one-line repr ("in_features=4, ...").
  virtual std::string extra_repr() const { return {}; }
  // FLOPs of one forward call given its input and output shapes; -1 when not counted.
  virtual int64_t forward_flops(const Shape& /*input*/, const Shape& /*output*/) const { return -1; }
  // PyTorch-style multi-line repr (what operator<< prints).
  std::string repr() const;

 protected:
  // Looks up a registered parameter/buffer of this module (not recursive); IndexError if absent.
  Tensor& param(const std::string& name);
  Tensor& buffer(const std::string& name);

 private:
  void register_module_impl(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, bool recurse, bool params,
               std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_state(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void repr_into(std::ostream& os, int indent) const;
  void apply_to(const std::function<void(Tensor&)>& fn);

  std::string type_name_;
  bool training_ = true;
  bool frozen_ = false;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ember::nn
