// Reference kernels of the activation slots (relu6, hardsigmoid, hardswish, silu): the oracle of
// cpu/activation.cpp and cuda/activation.cu. Every element in double through the shared formulas
// of kernels/activation_math.h, rounded once to the tensor's dtype; single-threaded, one
// multi-index walk for any input strides.
#include "cpu/reference/core.h"
#include "kernels/activation_math.h"

namespace ember::cpu::reference {

namespace {

// Element offset of row-major element i of t's shape under t's strides.
int64_t offset_of(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (i % t.size(d)) * t.strides()[size_t(d)];
    i /= t.size(d);
  }
  return off;
}

}  // namespace

void activation_forward(kernels::Activation f, const Tensor& x, const Tensor& out) {
  dispatch_floating(x.dtype(), "activation_forward", [&]<class T>() {
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) op[i] = T(activation_math::forward(f, double(xp[offset_of(x, i)])));
  });
}

void activation_backward(kernels::Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x) {
  dispatch_floating(x.dtype(), "activation_backward", [&]<class T>() {
    const T* gp = grad_out.data_ptr<T>();
    const T* xp = x.data_ptr<T>();
    T* gxp = grad_x.data_ptr<T>();
    for (int64_t i = 0; i < grad_x.numel(); ++i)
      gxp[i] = T(activation_math::backward(f, double(gp[offset_of(grad_out, i)]), double(xp[i])));
  });
}

}  // namespace ember::cpu::reference
