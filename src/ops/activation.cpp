// Front-ends of the MobileNet / EfficientNet activations (relu6, hardsigmoid, hardswish, silu):
// dtype check, allocation, the activation_forward slot, and a backward node that saves the input
// and calls the one-pass activation_backward slot through activation_backward() below.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"

namespace ember {

using kernels::Activation;

namespace {

// Backward front-end: grad_x = grad_out * f'(x) in one kernel.
Tensor activation_backward(Activation f, const Tensor& grad_out, const Tensor& x) {
  Tensor g = grad_out.dtype() == x.dtype() ? grad_out : grad_out.to(x.dtype());
  Tensor gx = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  kernels::activation_backward(x.device())(f, g.expand(x.sizes()), x.contiguous(), gx);
  return gx;
}

Tensor activation(Activation f, const char* name, const char* node_name, const Tensor& a) {
  EMBER_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, DTypeError, name,
              ": input must be float32 or float64, got ", dtype_name(a.dtype()),
              " (under autocast, activations run on the float32 outputs of conv2d and linear)");
  Tensor out = empty(a.sizes(), {.dtype = a.dtype(), .device = a.device()});
  kernels::activation_forward(a.device())(f, a, out);
  if (autograd::any_requires_grad({&a})) {
    autograd::SavedTensor sa(a);
    std::string node(node_name);
    autograd::record(autograd::make_node(node_name, [f, sa, node](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{activation_backward(f, g[0], sa.unpack(node))};
                     }),
                     {a}, {out});
  }
  return out;
}

}  // namespace

Tensor relu6(const Tensor& a) { return activation(Activation::Relu6, "relu6", "Relu6Backward", a); }
Tensor hardsigmoid(const Tensor& a) { return activation(Activation::Hardsigmoid, "hardsigmoid", "HardsigmoidBackward", a); }
Tensor hardswish(const Tensor& a) { return activation(Activation::Hardswish, "hardswish", "HardswishBackward", a); }
Tensor silu(const Tensor& a) { return activation(Activation::Silu, "silu", "SiluBackward", a); }

}  // namespace ember
