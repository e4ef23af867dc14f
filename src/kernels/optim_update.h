// The per-element arithmetic of the fused optimizer kernels (kernels/optim_kernels.h), shared by the
// CPU loop (src/cpu/optim.cpp) and the CUDA kernel (src/cuda/optim.cu) so the twins cannot drift.
// Every operation is rounded to T where the reference path's in-place ops round; on the device the
// adds/multiplies/divides/square roots are the explicitly rounded intrinsics, so nvcc cannot
// contract a * b + c into an FMA and the GPU's bits equal the CPU's.
#pragma once

#include <cmath>

#include "kernels/optim_kernels.h"

#ifdef __CUDACC__
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif

namespace ember::optim_math {

#ifdef __CUDA_ARCH__
EMBER_HOST_DEVICE float add_rn(float a, float b) { return __fadd_rn(a, b); }
EMBER_HOST_DEVICE double add_rn(double a, double b) { return __dadd_rn(a, b); }
EMBER_HOST_DEVICE float mul_rn(float a, float b) { return __fmul_rn(a, b); }
EMBER_HOST_DEVICE double mul_rn(double a, double b) { return __dmul_rn(a, b); }
EMBER_HOST_DEVICE float div_rn(float a, float b) { return __fdiv_rn(a, b); }
EMBER_HOST_DEVICE double div_rn(double a, double b) { return __ddiv_rn(a, b); }
EMBER_HOST_DEVICE float sqrt_rn(float a) { return __fsqrt_rn(a); }
EMBER_HOST_DEVICE double sqrt_rn(double a) { return __dsqrt_rn(a); }
#else
// Host: the library is compiled with -ffp-contract=off (CMakeLists.txt; g++ 12 would otherwise
// contract into FMAs in the AVX2 / AVX-512 clones), and every operand is already T.
template <class T> EMBER_HOST_DEVICE T add_rn(T a, T b) { return a + b; }
template <class T> EMBER_HOST_DEVICE T mul_rn(T a, T b) { return a * b; }
template <class T> EMBER_HOST_DEVICE T div_rn(T a, T b) { return a / b; }
template <class T> EMBER_HOST_DEVICE T sqrt_rn(T a) { return std::sqrt(a); }
#endif

// The SGD scalars converted to T once, as the elementwise kernels convert their double arguments.
template <class T>
struct SgdScalars {
  T weight_decay, momentum, one_minus_dampening, neg_lr;
  bool has_weight_decay, has_momentum, nesterov, first_step, maximize;
};
template <class T>
SgdScalars<T> sgd_scalars(const kernels::SgdStepParams& p) {
  return {T(p.weight_decay), T(p.momentum), T(1.0 - p.dampening), T(-p.lr),
          p.weight_decay != 0.0, p.momentum != 0.0, p.nesterov, p.first_step, p.maximize};
}

// One element: x is the parameter, g the gradient, buf the momentum buffer (unused without momentum).
template <class T>
EMBER_HOST_DEVICE void sgd_update(const SgdScalars<T>& s, T& x, T g, T& buf) {
  T d = s.maximize ? -g : g;
  if (s.has_weight_decay) d = add_rn(d, mul_rn(s.weight_decay, x));
  if (s.has_momentum) {
    T b = d;
    if (!s.first_step) b = add_rn(mul_rn(buf, s.momentum), mul_rn(s.one_minus_dampening, d));
    buf = b;
    d = s.nesterov ? add_rn(d, mul_rn(s.momentum, b)) : b;
  }
  x = add_rn(x, mul_rn(s.neg_lr, d));
}

template <class T>
struct AdamScalars {
  T decay;  // AdamW: 1 - lr * weight_decay
  T weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
  bool decoupled, has_weight_decay, amsgrad, maximize;
};
template <class T>
AdamScalars<T> adam_scalars(const kernels::AdamStepParams& p) {
  return {T(1.0 - p.lr * p.weight_decay), T(p.weight_decay), T(p.beta1), T(1.0 - p.beta1), T(p.beta2),
          T(1.0 - p.beta2), T(p.bias_correction2_sqrt()), T(p.eps), T(-p.step_size()),
          p.decoupled, p.weight_decay != 0.0, p.amsgrad, p.maximize};
}

// One element: x parameter, g gradient, m exp_avg, v exp_avg_sq, vmax max_exp_avg_sq (amsgrad only).
template <class T>
EMBER_HOST_DEVICE void adam_update(const AdamScalars<T>& s, T& x, T g, T& m, T& v, T& vmax) {
  T xi = x, d = s.maximize ? -g : g;
  if (s.decoupled) {
    xi = mul_rn(xi, s.decay);
  } else if (s.has_weight_decay) {
    d = add_rn(d, mul_rn(s.weight_decay, xi));
  }
  const T mi = add_rn(mul_rn(m, s.beta1), mul_rn(s.one_minus_beta1, d));
  const T vi = add_rn(mul_rn(v, s.beta2), mul_rn(s.one_minus_beta2, mul_rn(d, d)));
  m = mi;
  v = vi;
  T second = vi;
  if (s.amsgrad) {
    const T old = vmax;
    // maximum(): NaN if either operand is NaN, as the CPU's binary Max.
    second = (old != old || vi != vi) ? T(NAN) : (old > vi ? old : vi);
    vmax = second;
  }
  const T denom = add_rn(div_rn(sqrt_rn(second), s.bias_correction2_sqrt), s.eps);
  x = add_rn(xi, mul_rn(s.neg_step_size, div_rn(mi, denom)));
}

// ---- Adagrad, Adadelta, RMSprop: the order of ATen's in-place ops (addcmul: self + (value * a) * b;
// addcdiv: self + value * (a / b)), which the reference paths in src/optim repeat op for op.

// The gradient every update starts from: negated when maximizing, plus weight_decay * x.
template <class T>
EMBER_HOST_DEVICE T decayed_grad(T g, T x, bool maximize, bool has_weight_decay, T weight_decay) {
  T d = maximize ? -g : g;
  if (has_weight_decay) d = add_rn(d, mul_rn(weight_decay, x));
  return d;
}

template <class T>
struct AdagradScalars {
  T weight_decay, eps, neg_clr;
  bool has_weight_decay, maximize;
};
template <class T>
AdagradScalars<T> adagrad_scalars(const kernels::AdagradStepParams& p) {
  return {T(p.weight_decay), T(p.eps), T(-p.clr()), p.weight_decay != 0.0, p.maximize};
}
template <class T>
EMBER_HOST_DEVICE void adagrad_update(const AdagradScalars<T>& s, T& x, T g, T& sum) {
  const T d = decayed_grad(g, x, s.maximize, s.has_weight_decay, s.weight_decay);
  const T si = add_rn(sum, mul_rn(d, d));
  sum = si;
  const T std_ = add_rn(sqrt_rn(si), s.eps);
  x = add_rn(x, mul_rn(s.neg_clr, div_rn(d, std_)));
}

template <class T>
struct AdadeltaScalars {
  T weight_decay, rho, one_minus_rho, eps, neg_lr;
  bool has_weight_decay, maximize;
};
template <class T>
AdadeltaScalars<T> adadelta_scalars(const kernels::AdadeltaStepParams& p) {
  return {T(p.weight_decay), T(p.rho), T(1.0 - p.rho), T(p.eps), T(-p.lr), p.weight_decay != 0.0, p.maximize};
}
template <class T>
EMBER_HOST_DEVICE void adadelta_update(const AdadeltaScalars<T>& s, T& x, T g, T& sq, T& acc) {
  const T d = decayed_grad(g, x, s.maximize, s.has_weight_decay, s.weight_decay);
  const T sqi = add_rn(mul_rn(sq, s.rho), mul_rn(mul_rn(s.one_minus_rho, d), d));
  sq = sqi;
  const T std_ = sqrt_rn(add_rn(sqi, s.eps));
  const T delta = mul_rn(div_rn(sqrt_rn(add_rn(acc, s.eps)), std_), d);
  acc = add_rn(mul_rn(acc, s.rho), mul_rn(mul_rn(s.one_minus_rho, delta), delta));
  x = add_rn(x, mul_rn(s.neg_lr, delta));
}

template <class T>
struct RmspropScalars {
  T weight_decay, alpha, one_minus_alpha, lerp_weight, lerp_complement, eps, momentum, neg_lr;
  bool has_weight_decay, maximize, centered, has_momentum, lerp_from_start;
};
template <class T>
RmspropScalars<T> rmsprop_scalars(const kernels::RmspropStepParams& p) {
  const T w = T(1.0 - p.alpha);
  // ATen's lerp: start + w (end - start) for |w| < 0.5, else end - (end - start) (1 - w), 1 - w in T.
  return {T(p.weight_decay), T(p.alpha), w, w, T(T(1) - w), T(p.eps), T(p.momentum), T(-p.lr),
          p.weight_decay != 0.0, p.maximize, p.centered, p.momentum > 0.0, (w < T(0) ? -w : w) < T(0.5)};
}
template <class T>
EMBER_HOST_DEVICE void rmsprop_update(const RmspropScalars<T>& s, T& x, T g, T& sq, T& ga, T& buf) {
  const T d = decayed_grad(g, x, s.maximize, s.has_weight_decay, s.weight_decay);
  const T sqi = add_rn(mul_rn(sq, s.alpha), mul_rn(mul_rn(s.one_minus_alpha, d), d));
  sq = sqi;
  T avg;
  if (s.centered) {
    const T diff = add_rn(d, -ga);
    const T gai = s.lerp_from_start ? add_rn(ga, mul_rn(s.lerp_weight, diff)) : add_rn(d, -mul_rn(diff, s.lerp_complement));
    ga = gai;
    avg = sqrt_rn(add_rn(sqi, -mul_rn(gai, gai)));
  } else {
    avg = sqrt_rn(sqi);
  }
  avg = add_rn(avg, s.eps);
  if (s.has_momentum) {
    const T b = add_rn(mul_rn(buf, s.momentum), div_rn(d, avg));
    buf = b;
    x = add_rn(x, mul_rn(s.neg_lr, b));
  } else {
    x = add_rn(x, mul_rn(s.neg_lr, div_rn(d, avg)));
  }
}

}  // namespace ember::optim_math
