// ember._core._nn: the C++ ops behind ember.nn.functional, ember.nn.init and ember.nn.utils
// (python/ember/nn/). Conversion only: each function takes the C++ op's own arguments (fixed-size
// tuples, reduction strings, None for an undefined tensor) and calls it with the GIL released; the
// Python side turns PyTorch's int-or-tuple arguments and defaults into these.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/core/tensor.h"
#include "ember/nn/clip_grad.h"
#include "ember/nn/init.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"

namespace ember::python {

using namespace nb::literals;

namespace {

namespace F = ember::nn::functional;
using Release = nb::call_guard<nb::gil_scoped_release>;
using OptTensor = std::optional<Tensor>;
using Pair = std::array<int64_t, 2>;

Tensor or_undefined(const OptTensor& t) { return t.value_or(Tensor()); }

F::ConvActivation activation_from_string(const std::string& name) {
  if (name == "none") return F::ConvActivation::None;
  if (name == "relu") return F::ConvActivation::Relu;
  if (name == "relu6") return F::ConvActivation::Relu6;
  if (name == "silu") return F::ConvActivation::Silu;
  if (name == "hardswish") return F::ConvActivation::Hardswish;
  throw ValueError("conv2d_activation: unknown activation '" + name + "'",
                   "use 'none', 'relu', 'relu6', 'silu' or 'hardswish'");
}

F::CrossEntropyOptions class_loss_options(const std::string& reduction, int64_t ignore_index, double label_smoothing,
                                          const OptTensor& weight) {
  return {.reduction = F::reduction_from_string(reduction),
          .ignore_index = ignore_index,
          .label_smoothing = label_smoothing,
          .weight = or_undefined(weight)};
}

// A Python subclass instance (nn.Parameter) holding `t`'s TensorImpl: the same C++ tensor, so the
// subclass object and every other wrapper of it see one storage and one autograd identity.
nb::object make_subclass(nb::handle cls, const Tensor& t, bool requires_grad) {
  if (!nb::isinstance<nb::type_object>(cls) || !PyType_IsSubtype((PyTypeObject*)cls.ptr(), (PyTypeObject*)nb::type<Tensor>().ptr()))
    throw nb::type_error("_make_subclass: cls must be a subclass of ember.Tensor");
  nb::object inst = nb::inst_alloc(cls);
  Tensor* slot = nb::inst_ptr<Tensor>(inst);
  new (slot) Tensor(t);
  nb::inst_mark_ready(inst);
  slot->requires_grad_(requires_grad);
  return inst;
}

}  // namespace

void register_functional(nb::module_& m) {
  nb::module_ f = m.def_submodule("_nn", "The C++ ops of ember.nn.functional, ember.nn.init and ember.nn.utils.");
  f.def("_make_subclass", &make_subclass, "cls"_a, "data"_a, "requires_grad"_a = false,
        "torch.Tensor._make_subclass: an instance of cls (a Python subclass of ember.Tensor) sharing data's tensor.");

  // ---- activations ------------------------------------------------------------------------------------
  f.def("relu", [](const Tensor& x) { return relu(x); }, "input"_a, Release());
  f.def("relu6", [](const Tensor& x) { return relu6(x); }, "input"_a, Release());
  f.def("sigmoid", [](const Tensor& x) { return sigmoid(x); }, "input"_a, Release());
  f.def("tanh", [](const Tensor& x) { return tanh(x); }, "input"_a, Release());
  f.def("silu", [](const Tensor& x) { return silu(x); }, "input"_a, Release());
  f.def("hardswish", [](const Tensor& x) { return hardswish(x); }, "input"_a, Release());
  f.def("hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, "input"_a, Release());
  f.def("gelu", [](const Tensor& x, const std::string& approximate) { return F::gelu(x, approximate); }, "input"_a,
        "approximate"_a, Release());
  f.def("leaky_relu", &F::leaky_relu, "input"_a, "negative_slope"_a, Release());
  f.def("elu", &F::elu, "input"_a, "alpha"_a, Release());
  f.def("selu", &F::selu, "input"_a, Release());
  f.def("celu", &F::celu, "input"_a, "alpha"_a, Release());
  f.def("softplus", &F::softplus, "input"_a, "beta"_a, "threshold"_a, Release());
  f.def("hardtanh", &F::hardtanh, "input"_a, "min_val"_a, "max_val"_a, Release());
  f.def("logsigmoid", &F::logsigmoid, "input"_a, Release());
  f.def("mish", &F::mish, "input"_a, Release());
  f.def("softsign", &F::softsign, "input"_a, Release());
  f.def("glu", &F::glu, "input"_a, "dim"_a, Release());
  f.def("prelu", &F::prelu, "input"_a, "weight"_a, Release());
  f.def("softmax", &F::softmax, "input"_a, "dim"_a, Release());
  f.def("log_softmax", &F::log_softmax, "input"_a, "dim"_a, Release());

  // ---- linear and convolutions --------------------------------------------------------------------------
  f.def("linear", [](const Tensor& x, const Tensor& w, const OptTensor& b) { return linear(x, w, or_undefined(b)); },
        "input"_a, "weight"_a, "bias"_a = nb::none(), Release());
  f.def("conv2d", [](const Tensor& x, const Tensor& w, const OptTensor& b, Pair stride, Pair padding, Pair dilation,
                     int64_t groups) {
        return F::conv2d(x, w, or_undefined(b), {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups});
      }, "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "dilation"_a, "groups"_a, Release());
  f.def("conv2d_padding", [](const Tensor& x, const Tensor& w, const OptTensor& b, const std::string& padding,
                             Pair stride, Pair dilation, int64_t groups) {
        return F::conv2d_padding(x, w, or_undefined(b), padding, stride, dilation, groups);
      }, "input"_a, "weight"_a, "bias"_a.none(), "padding"_a, "stride"_a, "dilation"_a, "groups"_a, Release());
  f.def("conv2d_activation", [](const Tensor& x, const Tensor& w, const OptTensor& b, Pair stride, Pair padding,
                                Pair dilation, int64_t groups, const std::string& activation) {
        return F::conv2d_activation(x, w, or_undefined(b),
                                    {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups},
                                    activation_from_string(activation));
      }, "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "dilation"_a, "groups"_a, "activation"_a,
      Release());
  f.def("conv1d", [](const Tensor& x, const Tensor& w, const OptTensor& b, int64_t stride, int64_t padding,
                     int64_t dilation, int64_t groups) {
        return F::conv1d(x, w, or_undefined(b), {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups});
      }, "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "dilation"_a, "groups"_a, Release());
  f.def("conv1d_padding", [](const Tensor& x, const Tensor& w, const OptTensor& b, const std::string& padding,
                             int64_t stride, int64_t dilation, int64_t groups) {
        return F::conv1d_padding(x, w, or_undefined(b), padding, stride, dilation, groups);
      }, "input"_a, "weight"_a, "bias"_a.none(), "padding"_a, "stride"_a, "dilation"_a, "groups"_a, Release());
  f.def("conv_transpose2d", [](const Tensor& x, const Tensor& w, const OptTensor& b, Pair stride, Pair padding,
                               Pair output_padding, int64_t groups, Pair dilation) {
        return F::conv_transpose2d(x, w, or_undefined(b),
                                   {.stride = stride, .padding = padding, .output_padding = output_padding,
                                    .groups = groups, .dilation = dilation});
      }, "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "output_padding"_a, "groups"_a, "dilation"_a,
      Release());
  f.def("conv_transpose1d", [](const Tensor& x, const Tensor& w, const OptTensor& b, int64_t stride, int64_t padding,
                               int64_t output_padding, int64_t groups, int64_t dilation) {
        return F::conv_transpose1d(x, w, or_undefined(b),
                                   {.stride = stride, .padding = padding, .output_padding = output_padding,
                                    .groups = groups, .dilation = dilation});
      }, "input"_a, "weight"_a, "bias"_a.none(), "stride"_a, "padding"_a, "output_padding"_a, "groups"_a, "dilation"_a,
      Release());

  // ---- pooling ------------------------------------------------------------------------------------------
  f.def("max_pool2d", [](const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode) {
        return F::max_pool2d(x, {.kernel = kernel, .stride = stride, .padding = padding, .ceil_mode = ceil_mode});
      }, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a, Release());
  f.def("avg_pool2d", [](const Tensor& x, Pair kernel, Pair stride, Pair padding, bool ceil_mode, bool count_include_pad) {
        return F::avg_pool2d(x, {.kernel = kernel, .stride = stride, .padding = padding, .ceil_mode = ceil_mode,
                                 .count_include_pad = count_include_pad});
      }, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a, "count_include_pad"_a, Release());
  f.def("adaptive_avg_pool2d", &F::adaptive_avg_pool2d, "input"_a, "output_size"_a, Release());
  f.def("max_pool1d", [](const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode) {
        return F::max_pool1d(x, {.kernel = kernel, .stride = stride, .padding = padding, .ceil_mode = ceil_mode});
      }, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a, Release());
  f.def("avg_pool1d", [](const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode,
                         bool count_include_pad) {
        return F::avg_pool1d(x, {.kernel = kernel, .stride = stride, .padding = padding, .ceil_mode = ceil_mode,
                                 .count_include_pad = count_include_pad});
      }, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a, "count_include_pad"_a, Release());
  f.def("adaptive_avg_pool1d", &F::adaptive_avg_pool1d, "input"_a, "output_size"_a, Release());

  // ---- normalisation, dropout, embedding ------------------------------------------------------------------
  f.def("batch_norm", [](const Tensor& x, const OptTensor& running_mean, const OptTensor& running_var,
                         const OptTensor& weight, const OptTensor& bias, bool training, double momentum, double eps) {
        return F::batch_norm(x, or_undefined(running_mean), or_undefined(running_var), or_undefined(weight),
                             or_undefined(bias), training, momentum, eps);
      }, "input"_a, "running_mean"_a.none(), "running_var"_a.none(), "weight"_a.none(), "bias"_a.none(), "training"_a,
      "momentum"_a, "eps"_a, Release());
  f.def("layer_norm", [](const Tensor& x, const std::vector<int64_t>& shape, const OptTensor& w, const OptTensor& b,
                         double eps) { return F::layer_norm(x, Shape(shape.begin(), shape.end()), or_undefined(w), or_undefined(b), eps); },
        "input"_a, "normalized_shape"_a, "weight"_a.none(), "bias"_a.none(), "eps"_a, Release());
  f.def("group_norm", [](const Tensor& x, int64_t groups, const OptTensor& w, const OptTensor& b, double eps) {
        return F::group_norm(x, groups, or_undefined(w), or_undefined(b), eps);
      }, "input"_a, "num_groups"_a, "weight"_a.none(), "bias"_a.none(), "eps"_a, Release());
  f.def("normalize", &F::normalize, "input"_a, "p"_a, "dim"_a, "eps"_a, Release());
  f.def("dropout", [](const Tensor& x, double p, bool training) { return F::dropout(x, p, training); }, "input"_a, "p"_a,
        "training"_a, Release());
  f.def("dropout1d", [](const Tensor& x, double p, bool training) { return F::dropout1d(x, p, training); }, "input"_a,
        "p"_a, "training"_a, Release());
  f.def("dropout2d", [](const Tensor& x, double p, bool training) { return F::dropout2d(x, p, training); }, "input"_a,
        "p"_a, "training"_a, Release());
  f.def("dropout3d", [](const Tensor& x, double p, bool training) { return F::dropout3d(x, p, training); }, "input"_a,
        "p"_a, "training"_a, Release());
  f.def("stochastic_depth", [](const Tensor& x, double p, const std::string& mode, bool training) {
        return F::stochastic_depth(x, p, mode, training);
      }, "input"_a, "p"_a, "mode"_a, "training"_a, Release());
  f.def("embedding", &F::embedding, "input"_a, "weight"_a, "padding_idx"_a.none(), Release());
  f.def("one_hot", &one_hot, "input"_a, "num_classes"_a, Release());

  // ---- resampling, padding, distances ----------------------------------------------------------------------
  f.def("interpolate", [](const Tensor& x, const std::vector<int64_t>& size, const std::vector<double>& scale_factor,
                          const std::string& mode, std::optional<bool> align_corners,
                          std::optional<bool> recompute_scale_factor) {
        return F::interpolate(x, {.size = size, .scale_factor = scale_factor, .mode = mode, .align_corners = align_corners,
                                  .recompute_scale_factor = recompute_scale_factor});
      }, "input"_a, "size"_a, "scale_factor"_a, "mode"_a, "align_corners"_a.none(), "recompute_scale_factor"_a.none(),
      Release());
  f.def("pad", [](const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
        return F::pad(x, pads, mode, value);
      }, "input"_a, "pad"_a, "mode"_a, "value"_a, Release());
  f.def("cosine_similarity", &F::cosine_similarity, "x1"_a, "x2"_a, "dim"_a, "eps"_a, Release());
  f.def("pairwise_distance", &F::pairwise_distance, "x1"_a, "x2"_a, "p"_a, "eps"_a, "keepdim"_a, Release());

  // ---- losses (reduction: "none", "mean", "sum"; "batchmean" for kl_div) --------------------------------------
  f.def("cross_entropy", [](const Tensor& input, const Tensor& target, const OptTensor& weight, int64_t ignore_index,
                            const std::string& reduction, double label_smoothing) {
        return F::cross_entropy(input, target, class_loss_options(reduction, ignore_index, label_smoothing, weight));
      }, "input"_a, "target"_a, "weight"_a.none(), "ignore_index"_a, "reduction"_a, "label_smoothing"_a, Release());
  f.def("nll_loss", [](const Tensor& input, const Tensor& target, const OptTensor& weight, int64_t ignore_index,
                       const std::string& reduction) {
        return F::nll_loss(input, target, class_loss_options(reduction, ignore_index, 0.0, weight));
      }, "input"_a, "target"_a, "weight"_a.none(), "ignore_index"_a, "reduction"_a, Release());
  f.def("mse_loss", [](const Tensor& input, const Tensor& target, const std::string& reduction) {
        return F::mse_loss(input, target, F::reduction_from_string(reduction));
      }, "input"_a, "target"_a, "reduction"_a, Release());
  f.def("l1_loss", [](const Tensor& input, const Tensor& target, const std::string& reduction) {
        return F::l1_loss(input, target, F::reduction_from_string(reduction));
      }, "input"_a, "target"_a, "reduction"_a, Release());
  f.def("smooth_l1_loss", [](const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
        return F::smooth_l1_loss(input, target, F::reduction_from_string(reduction), beta);
      }, "input"_a, "target"_a, "reduction"_a, "beta"_a, Release());
  f.def("huber_loss", [](const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
        return F::huber_loss(input, target, F::reduction_from_string(reduction), delta);
      }, "input"_a, "target"_a, "reduction"_a, "delta"_a, Release());
  f.def("binary_cross_entropy", [](const Tensor& input, const Tensor& target, const OptTensor& weight,
                                   const std::string& reduction) {
        return F::binary_cross_entropy(input, target, or_undefined(weight), F::reduction_from_string(reduction));
      }, "input"_a, "target"_a, "weight"_a.none(), "reduction"_a, Release());
  f.def("binary_cross_entropy_with_logits", [](const Tensor& input, const Tensor& target, const OptTensor& weight,
                                               const std::string& reduction, const OptTensor& pos_weight) {
        return F::binary_cross_entropy_with_logits(input, target, or_undefined(weight), F::reduction_from_string(reduction),
                                                   or_undefined(pos_weight));
      }, "input"_a, "target"_a, "weight"_a.none(), "reduction"_a, "pos_weight"_a.none(), Release());
  f.def("kl_div", [](const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
        return F::kl_div(input, target, F::reduction_from_string(reduction), log_target);
      }, "input"_a, "target"_a, "reduction"_a, "log_target"_a, Release());

  // ---- ember.nn.init: in place, without autograd history, from ember's default generator --------------------
  nb::module_ i = f.def_submodule("init", "torch.nn.init's fills (ember/nn/init.h).");
  i.def("calculate_fan_in_and_fan_out", &nn::init::calculate_fan_in_and_fan_out, "tensor"_a);
  i.def("calculate_gain", &nn::init::calculate_gain, "nonlinearity"_a, "param"_a);
  i.def("uniform_", [](Tensor t, double a, double b) { nn::init::uniform_(t, a, b); }, "tensor"_a, "a"_a, "b"_a, Release());
  i.def("normal_", [](Tensor t, double mean, double std) { nn::init::normal_(t, mean, std); }, "tensor"_a, "mean"_a,
        "std"_a, Release());
  i.def("constant_", [](Tensor t, double v) { nn::init::constant_(t, v); }, "tensor"_a, "val"_a, Release());
  i.def("zeros_", [](Tensor t) { nn::init::zeros_(t); }, "tensor"_a, Release());
  i.def("ones_", [](Tensor t) { nn::init::ones_(t); }, "tensor"_a, Release());
  i.def("eye_", [](Tensor t) { nn::init::eye_(t); }, "tensor"_a, Release());
  i.def("kaiming_uniform_", [](Tensor t, double a, const std::string& mode, const std::string& nonlinearity) {
        nn::init::kaiming_uniform_(t, a, mode, nonlinearity);
      }, "tensor"_a, "a"_a, "mode"_a, "nonlinearity"_a, Release());
  i.def("kaiming_normal_", [](Tensor t, double a, const std::string& mode, const std::string& nonlinearity) {
        nn::init::kaiming_normal_(t, a, mode, nonlinearity);
      }, "tensor"_a, "a"_a, "mode"_a, "nonlinearity"_a, Release());
  i.def("xavier_uniform_", [](Tensor t, double gain) { nn::init::xavier_uniform_(t, gain); }, "tensor"_a, "gain"_a,
        Release());
  i.def("xavier_normal_", [](Tensor t, double gain) { nn::init::xavier_normal_(t, gain); }, "tensor"_a, "gain"_a,
        Release());
  i.def("trunc_normal_", [](Tensor t, double mean, double std, double a, double b) {
        nn::init::trunc_normal_(t, mean, std, a, b);
      }, "tensor"_a, "mean"_a, "std"_a, "a"_a, "b"_a, Release());
  i.def("orthogonal_", [](Tensor t, double gain) { nn::init::orthogonal_(t, gain); }, "tensor"_a, "gain"_a, Release());
  i.def("reset_weight_and_bias_", [](Tensor weight, OptTensor bias) {
        Tensor b = or_undefined(bias);
        nn::init::reset_weight_and_bias_(weight, b);
      }, "weight"_a, "bias"_a.none(), Release());
  i.def("reset_embedding_", [](Tensor weight, std::optional<int64_t> padding_idx) {
        nn::init::reset_embedding_(weight, padding_idx);
      }, "weight"_a, "padding_idx"_a.none(), Release());

  // ---- ember.nn.utils ----------------------------------------------------------------------------------------
  f.def("clip_grad_norm_", &nn::utils::clip_grad_norm_, "parameters"_a, "max_norm"_a, "norm_type"_a,
        "error_if_nonfinite"_a, Release());
  f.def("clip_grad_value_", &nn::utils::clip_grad_value_, "parameters"_a, "clip_value"_a, Release());
}

}  // namespace ember::python
