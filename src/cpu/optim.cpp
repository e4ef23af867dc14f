// Fused optimizer updates on the CPU (kernels/optim_kernels.h: SGD, Adam/AdamW, Adagrad, Adadelta,
// RMSprop): one pass over each parameter with the
// element arithmetic of kernels/optim_update.h, so the result equals the reference path's in-place ops
// bit for bit while reading and writing each buffer once instead of several times.
#include "kernels/optim_kernels.h"
#include "kernels/optim_update.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace ember::cpu {

namespace {

// Large parameters are split across OpenMP threads; small ones (biases) are not worth the fork.
constexpr int64_t kParallelThreshold = int64_t(1) << 15;

// The element loops are specialised on the update's switches (weight decay, momentum, ...), so
// each loop body is branch-free and the compiler vectorises it; float32 gets AVX-512 / AVX2 clones
// picked at load time. Vector adds, multiplies, divides and square roots round like the scalar
// ones (no FMA contraction in ISO C++ mode), so the result stays equal to the reference path's
// bit for bit. Before: the generic loop, not vectorised, 0.092 ms of mlp's 0.46 ms SGD step.
template <class T, bool kWd, bool kMom, bool kNesterov, bool kFirst>
[[gnu::always_inline]] inline void sgd_loop(const optim_math::SgdScalars<T>& s, T* __restrict x,
                                            const T* __restrict g, T* __restrict buf, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    T d = s.maximize ? -g[i] : g[i];
    if constexpr (kWd) d = d + s.weight_decay * x[i];
    if constexpr (kMom) {
      T b = d;
      if constexpr (!kFirst) b = buf[i] * s.momentum + s.one_minus_dampening * d;
      buf[i] = b;
      if constexpr (kNesterov) d = d + s.momentum * b;
      else d = b;
    }
    x[i] = x[i] + s.neg_lr * d;
  }
}

template <class T>
[[gnu::always_inline]] inline void sgd_chunk(const optim_math::SgdScalars<T>& s, T* x, const T* g, T* buf, int64_t n) {
  if (!s.has_momentum) {
    if (s.has_weight_decay) sgd_loop<T, true, false, false, false>(s, x, g, buf, n);
    else sgd_loop<T, false, false, false, false>(s, x, g, buf, n);
    return;
  }
  // Momentum: weight decay, Nesterov and the first step as runtime-selected instances.
  const int key = (s.has_weight_decay ? 4 : 0) | (s.nesterov ? 2 : 0) | (s.first_step ? 1 : 0);
  switch (key) {
    case 0: sgd_loop<T, false, true, false, false>(s, x, g, buf, n); break;
    case 1: sgd_loop<T, false, true, false, true>(s, x, g, buf, n); break;
    case 2: sgd_loop<T, false, true, true, false>(s, x, g, buf, n); break;
    case 3: sgd_loop<T, false, true, true, true>(s, x, g, buf, n); break;
    case 4: sgd_loop<T, true, true, false, false>(s, x, g, buf, n); break;
    case 5: sgd_loop<T, true, true, false, true>(s, x, g, buf, n); break;
    case 6: sgd_loop<T, true, true, true, false>(s, x, g, buf, n); break;
    default: sgd_loop<T, true, true, true, true>(s, x, g, buf, n); break;
  }
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void sgd_chunk_f32(const optim_math::SgdScalars<float>& s, float* x, const float* g, float* buf, int64_t n) {
  sgd_chunk<float>(s, x, g, buf, n);
}
void sgd_chunk_any(const optim_math::SgdScalars<float>& s, float* x, const float* g, float* buf, int64_t n) {
  sgd_chunk_f32(s, x, g, buf, n);
}
void sgd_chunk_any(const optim_math::SgdScalars<double>& s, double* x, const double* g, double* buf, int64_t n) {
  sgd_chunk<double>(s, x, g, buf, n);
}

// Adam / AdamW without amsgrad (the common case), specialised like SGD; amsgrad takes the generic
// per-element function (its NaN-propagating max does not vectorise as written).
template <class T, bool kDecoupled, bool kWd>
[[gnu::always_inline]] inline void adam_loop(const optim_math::AdamScalars<T>& s, T* __restrict x, const T* __restrict g,
                                             T* __restrict m, T* __restrict v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    T xi = x[i], d = s.maximize ? -g[i] : g[i];
    if constexpr (kDecoupled) xi = xi * s.decay;
    else if constexpr (kWd) d = d + s.weight_decay * xi;
    const T mi = m[i] * s.beta1 + s.one_minus_beta1 * d;
    const T vi = v[i] * s.beta2 + s.one_minus_beta2 * (d * d);
    m[i] = mi;
    v[i] = vi;
    const T denom = std::sqrt(vi) / s.bias_correction2_sqrt + s.eps;
    x[i] = xi + s.neg_step_size * (mi / denom);
  }
}
template <class T>
[[gnu::always_inline]] inline void adam_chunk(const optim_math::AdamScalars<T>& s, T* x, const T* g, T* m, T* v, T* vmax,
                                              int64_t n) {
  if (s.amsgrad) {
    for (int64_t i = 0; i < n; ++i) optim_math::adam_update<T>(s, x[i], g[i], m[i], v[i], vmax[i]);
  } else if (s.decoupled) {
    adam_loop<T, true, false>(s, x, g, m, v, n);
  } else if (s.has_weight_decay) {
    adam_loop<T, false, true>(s, x, g, m, v, n);
  } else {
    adam_loop<T, false, false>(s, x, g, m, v, n);
  }
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void adam_chunk_f32(const optim_math::AdamScalars<float>& s, float* x, const float* g, float* m, float* v, float* vmax,
                    int64_t n) {
  adam_chunk<float>(s, x, g, m, v, vmax, n);
}
void adam_chunk_any(const optim_math::AdamScalars<float>& s, float* x, const float* g, float* m, float* v, float* vmax,
                    int64_t n) {
  adam_chunk_f32(s, x, g, m, v, vmax, n);
}
void adam_chunk_any(const optim_math::AdamScalars<double>& s, double* x, const double* g, double* m, double* v,
                    double* vmax, int64_t n) {
  adam_chunk<double>(s, x, g, m, v, vmax, n);
}

// Runs fn(begin, count) over [0, n): one call, or one contiguous chunk per OpenMP thread (chunks
// rounded to 16 elements so vector loops start aligned with the buffer).
template <class Fn>
void for_chunks(int64_t n, Fn fn) {
  if (n <= kParallelThreshold) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (e > b) fn(b, e - b);
  }
}

void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf, const kernels::SgdStepParams& p) {
  dispatch_floating(param.dtype(), "sgd_step", [&]<class T>() {
    const auto s = optim_math::sgd_scalars<T>(p);
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* buf = s.has_momentum ? momentum_buf.data_ptr<T>() : nullptr;
    for_chunks(param.numel(), [&](int64_t b, int64_t n) { sgd_chunk_any(s, x + b, g + b, buf ? buf + b : nullptr, n); });
  });
}

void adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const kernels::AdamStepParams& p) {
  dispatch_floating(param.dtype(), "adam_step", [&]<class T>() {
    const auto s = optim_math::adam_scalars<T>(p);
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* m = exp_avg.data_ptr<T>();
    T* v = exp_avg_sq.data_ptr<T>();
    T* vmax = s.amsgrad ? max_exp_avg_sq.data_ptr<T>() : nullptr;
    for_chunks(param.numel(), [&](int64_t b, int64_t n) {
      adam_chunk_any(s, x + b, g + b, m + b, v + b, vmax ? vmax + b : nullptr, n);
    });
  });
}

// Adagrad, Adadelta, RMSprop: one loop over optim_math's element functions (their switches are
// loop-invariant, so the compiler unswitches and vectorises the float32 clones), split across
// threads as the others.
template <class T, class Scalars, class Update>
[[gnu::always_inline]] inline void update_loop(const Scalars& s, int64_t n, Update update) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) update(s, i);
}

template <class T>
[[gnu::always_inline]] inline void adagrad_chunk(const optim_math::AdagradScalars<T>& s, T* __restrict x,
                                                 const T* __restrict g, T* __restrict sum, int64_t n) {
  update_loop<T>(s, n, [&](const auto& sc, int64_t i) { optim_math::adagrad_update<T>(sc, x[i], g[i], sum[i]); });
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void adagrad_chunk_f32(const optim_math::AdagradScalars<float>& s, float* x, const float* g, float* sum, int64_t n) {
  adagrad_chunk<float>(s, x, g, sum, n);
}
void adagrad_chunk_any(const optim_math::AdagradScalars<float>& s, float* x, const float* g, float* sum, int64_t n) {
  adagrad_chunk_f32(s, x, g, sum, n);
}
void adagrad_chunk_any(const optim_math::AdagradScalars<double>& s, double* x, const double* g, double* sum, int64_t n) {
  adagrad_chunk<double>(s, x, g, sum, n);
}

template <class T>
[[gnu::always_inline]] inline void adadelta_chunk(const optim_math::AdadeltaScalars<T>& s, T* __restrict x,
                                                  const T* __restrict g, T* __restrict sq, T* __restrict acc, int64_t n) {
  update_loop<T>(s, n, [&](const auto& sc, int64_t i) { optim_math::adadelta_update<T>(sc, x[i], g[i], sq[i], acc[i]); });
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void adadelta_chunk_f32(const optim_math::AdadeltaScalars<float>& s, float* x, const float* g, float* sq, float* acc,
                        int64_t n) {
  adadelta_chunk<float>(s, x, g, sq, acc, n);
}
void adadelta_chunk_any(const optim_math::AdadeltaScalars<float>& s, float* x, const float* g, float* sq, float* acc,
                        int64_t n) {
  adadelta_chunk_f32(s, x, g, sq, acc, n);
}
void adadelta_chunk_any(const optim_math::AdadeltaScalars<double>& s, double* x, const double* g, double* sq, double* acc,
                        int64_t n) {
  adadelta_chunk<double>(s, x, g, sq, acc, n);
}

// grad_avg and buf may be null (not centered, no momentum): a scratch element stands in.
template <class T>
[[gnu::always_inline]] inline void rmsprop_chunk(const optim_math::RmspropScalars<T>& s, T* __restrict x,
                                                 const T* __restrict g, T* __restrict sq, T* ga, T* buf, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T ga_unused = T(0), buf_unused = T(0);
    optim_math::rmsprop_update<T>(s, x[i], g[i], sq[i], ga ? ga[i] : ga_unused, buf ? buf[i] : buf_unused);
  }
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void rmsprop_chunk_f32(const optim_math::RmspropScalars<float>& s, float* x, const float* g, float* sq, float* ga,
                       float* buf, int64_t n) {
  rmsprop_chunk<float>(s, x, g, sq, ga, buf, n);
}
void rmsprop_chunk_any(const optim_math::RmspropScalars<float>& s, float* x, const float* g, float* sq, float* ga,
                       float* buf, int64_t n) {
  rmsprop_chunk_f32(s, x, g, sq, ga, buf, n);
}
void rmsprop_chunk_any(const optim_math::RmspropScalars<double>& s, double* x, const double* g, double* sq, double* ga,
                       double* buf, int64_t n) {
  rmsprop_chunk<double>(s, x, g, sq, ga, buf, n);
}

void adagrad_step(const Tensor& param, const Tensor& grad, const Tensor& sum, const kernels::AdagradStepParams& p) {
  dispatch_floating(param.dtype(), "adagrad_step", [&]<class T>() {
    const auto s = optim_math::adagrad_scalars<T>(p);
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* acc = sum.data_ptr<T>();
    for_chunks(param.numel(), [&](int64_t b, int64_t n) { adagrad_chunk_any(s, x + b, g + b, acc + b, n); });
  });
}

void adadelta_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                   const kernels::AdadeltaStepParams& p) {
  dispatch_floating(param.dtype(), "adadelta_step", [&]<class T>() {
    const auto s = optim_math::adadelta_scalars<T>(p);
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* sq = square_avg.data_ptr<T>();
    T* acc = acc_delta.data_ptr<T>();
    for_chunks(param.numel(), [&](int64_t b, int64_t n) { adadelta_chunk_any(s, x + b, g + b, sq + b, acc + b, n); });
  });
}

void rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                  const Tensor& momentum_buf, const kernels::RmspropStepParams& p) {
  dispatch_floating(param.dtype(), "rmsprop_step", [&]<class T>() {
    const auto s = optim_math::rmsprop_scalars<T>(p);
    T* x = param.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* sq = square_avg.data_ptr<T>();
    T* ga = s.centered ? grad_avg.data_ptr<T>() : nullptr;
    T* buf = s.has_momentum ? momentum_buf.data_ptr<T>() : nullptr;
    for_chunks(param.numel(), [&](int64_t b, int64_t n) {
      rmsprop_chunk_any(s, x + b, g + b, sq + b, ga ? ga + b : nullptr, buf ? buf + b : nullptr, n);
    });
  });
}

}  // namespace

void register_optim_kernels() {
  kernels::sgd_step.set(DeviceType::CPU, &sgd_step);
  kernels::adam_step.set(DeviceType::CPU, &adam_step);
  kernels::adagrad_step.set(DeviceType::CPU, &adagrad_step);
  kernels::adadelta_step.set(DeviceType::CPU, &adadelta_step);
  kernels::rmsprop_step.set(DeviceType::CPU, &rmsprop_step);
}

}  // namespace ember::cpu
