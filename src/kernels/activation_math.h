// The per-element formulas of the activation slots (kernels.h: Activation), shared by the CPU
// reference (src/cpu/reference/activation.cpp), the CPU loops (src/cpu/activation.cpp) and the CUDA
// kernels (src/cuda/activation.cu) so the twins cannot drift. They follow PyTorch 1.13's vectorised
// CPU kernels operation by operation (divide by 6, not multiply by 1/6; the same comparisons at the
// kinks), and let NaN through every select: a comparison with NaN is false. `exp` is the caller's
// (std::exp, CUDA's ::exp, or a vectorisable polynomial).
#pragma once

#include <cmath>

#include "kernels/kernels.h"

#ifdef __CUDACC__
#define EMBER_ACT_FN __host__ __device__ __forceinline__
#else
#define EMBER_ACT_FN inline
#endif

namespace ember::activation_math {

// min(max(x, 0), 6) with NaN kept (x < 0 and r > 6 are false for NaN).
template <class T>
EMBER_ACT_FN T relu6(T x) {
  T r = x < T(0) ? T(0) : x;
  return r > T(6) ? T(6) : r;
}
template <class T>
EMBER_ACT_FN T hardsigmoid(T x) { return relu6(x + T(3)) / T(6); }
template <class T>
EMBER_ACT_FN T hardswish(T x) { return x * relu6(x + T(3)) / T(6); }
// x / (1 + exp(-x)), e = exp(-x).
template <class T>
EMBER_ACT_FN T silu_from_exp(T x, T e) { return x / (T(1) + e); }

// Gradients grad_x from grad_out g and the forward input x; the kinks as PyTorch's vector path.
template <class T>
EMBER_ACT_FN T relu6_grad(T g, T x) { return x > T(0) && x < T(6) ? g : T(0); }
template <class T>
EMBER_ACT_FN T hardsigmoid_grad(T g, T x) { return x > T(-3) && x < T(3) ? g * (T(1) / T(6)) : T(0); }
// 0 below -3, 1 from 3 on, x/3 + 1/2 between (-0.5 at -3); NaN gives NaN.
template <class T>
EMBER_ACT_FN T hardswish_grad(T g, T x) {
  return x < T(-3) ? T(0) : x >= T(3) ? g : g * (x / T(3) + T(0.5));
}
// g * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)), e = exp(-x).
template <class T>
EMBER_ACT_FN T silu_grad_from_exp(T g, T x, T e) {
  const T s = T(1) / (T(1) + e);
  return g * s * (T(1) + x * (T(1) - s));
}

template <class T>
EMBER_ACT_FN T exp_of(T x) {
#ifdef __CUDA_ARCH__
  return ::exp(x);
#else
  return std::exp(x);
#endif
}

// One element of the forward and of the backward for activation f, with exp from the standard
// library (host) or CUDA's math library (device).
template <class T>
EMBER_ACT_FN T forward(kernels::Activation f, T x) {
  switch (f) {
    case kernels::Activation::Relu6: return relu6(x);
    case kernels::Activation::Hardsigmoid: return hardsigmoid(x);
    case kernels::Activation::Hardswish: return hardswish(x);
    case kernels::Activation::Silu: return silu_from_exp(x, exp_of(-x));
  }
  return x;
}
template <class T>
EMBER_ACT_FN T backward(kernels::Activation f, T g, T x) {
  switch (f) {
    case kernels::Activation::Relu6: return relu6_grad(g, x);
    case kernels::Activation::Hardsigmoid: return hardsigmoid_grad(g, x);
    case kernels::Activation::Hardswish: return hardswish_grad(g, x);
    case kernels::Activation::Silu: return silu_grad_from_exp(g, x, exp_of(-x));
  }
  return g;
}

}  // namespace ember::activation_math
