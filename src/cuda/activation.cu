// CUDA kernels of the activation slots (relu6, hardsigmoid, hardswish, silu; kernels.h): the twins
// of src/cpu/activation.cpp, one strided elementwise launch each, with the per-element formulas of
// kernels/activation_math.h (exp from CUDA's math library), float32 and float64.
#include "cuda/loops.cuh"
#include "kernels/activation_math.h"
#include "kernels/kernels.h"

namespace ember::cuda {

using kernels::Activation;

namespace {

template <class T>
struct ActivationForwardFunctor {
  Activation f;
  T* out;
  const T* x;
  __device__ void operator()(const int64_t (&o)[2]) const { out[o[0]] = activation_math::forward(f, x[o[1]]); }
};

template <class T>
struct ActivationBackwardFunctor {
  Activation f;
  T* grad_x;
  const T* grad_out;
  const T* x;
  __device__ void operator()(const int64_t (&o)[3]) const {
    grad_x[o[0]] = activation_math::backward(f, grad_out[o[1]], x[o[2]]);
  }
};

void activation_forward(Activation f, const Tensor& x, const Tensor& out) {
  dispatch_floating(x.dtype(), "activation_forward", [&]<class T>() {
    launch_elementwise<2>(out.sizes(), {&out, &x}, ActivationForwardFunctor<T>{f, out.data_ptr<T>(), x.data_ptr<T>()});
  });
}

void activation_backward(Activation f, const Tensor& grad_out, const Tensor& x, const Tensor& grad_x) {
  dispatch_floating(x.dtype(), "activation_backward", [&]<class T>() {
    launch_elementwise<3>(grad_x.sizes(), {&grad_x, &grad_out, &x},
                          ActivationBackwardFunctor<T>{f, grad_x.data_ptr<T>(), grad_out.data_ptr<T>(), x.data_ptr<T>()});
  });
}

}  // namespace

void register_activation_kernels() {
  kernels::activation_forward.set(DeviceType::CUDA, &activation_forward);
  kernels::activation_backward.set(DeviceType::CUDA, &activation_backward);
}

}  // namespace ember::cuda
