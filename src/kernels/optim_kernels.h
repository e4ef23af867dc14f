// The kernel contract for fused optimizer updates: one call updates one parameter tensor and its
// state buffers in place, in one pass (one launch on CUDA) instead of the 5-10 in-place tensor ops
// of the reference path in src/optim. Same slot pattern as kernels/kernels.h.
//
// The caller (src/optim) guarantees: param, grad and every buffer passed are contiguous, of one
// floating dtype (float32 or float64), of one shape, on one device. Kernels never check.
//
// Numerics: each step is computed in the element type and rounded exactly where the reference
// path rounds (every in-place op writes a T), with the scalar factors converted to T as the
// elementwise kernels convert them; so on the CPU the fused result equals the reference path's
// bit for bit, and the CUDA kernel (explicitly rounded adds and multiplies, no FMA contraction)
// should too.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

// torch.optim.SGD for one parameter:
//   d = grad + weight_decay * p                       (when weight_decay != 0)
//   momentum != 0: buf = first_step ? d : momentum * buf + (1 - dampening) * d
//                  d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
// momentum_buf is undefined when momentum == 0; on first_step its contents are ignored.
// grad is read only.
// maximize: the update follows -grad (PyTorch's maximize=True; negation is exact, so the rest rounds
// as without it).
struct SgdStepParams {
  double lr = 0.0, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;
  bool maximize = false;
};
using SgdStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
                           const SgdStepParams& p);

// torch.optim.Adam / AdamW for one parameter at step `step` (>= 1, already incremented):
//   decoupled (AdamW): p = p * (1 - lr * weight_decay);  else d = grad + weight_decay * p (wd != 0)
//   m = beta1 m + (1 - beta1) d;  v = beta2 v + (1 - beta2) d^2
//   amsgrad: v_max = max(v_max, v) (NaN if either is), used for v below
//   p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// max_exp_avg_sq is undefined unless amsgrad. grad is read only.
struct AdamStepParams {
  double lr = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled = false;
  bool amsgrad = false;
  bool maximize = false;
  int64_t step = 1;
  // The host-side scalars both backends use, computed once per call as the reference path does.
  double step_size() const { return lr / (1.0 - std::pow(beta1, double(step))); }
  double bias_correction2_sqrt() const { return std::sqrt(1.0 - std::pow(beta2, double(step))); }
};
using AdamStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                            const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamStepParams& p);

// torch.optim.Adagrad for one parameter at step `step` (>= 1, already incremented); d = -grad when
// maximize, + weight_decay * p when weight_decay != 0:
//   sum = sum + d * d;  p = p - clr * d / (sqrt(sum) + eps),  clr = lr / (1 + (step - 1) lr_decay)
struct AdagradStepParams {
  double lr = 0.0, lr_decay = 0.0, weight_decay = 0.0, eps = 1e-10;
  bool maximize = false;
  int64_t step = 1;
  double clr() const { return lr / (1.0 + double(step - 1) * lr_decay); }
};
using AdagradStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& sum, const AdagradStepParams& p);

// torch.optim.Adadelta for one parameter (d as Adagrad's):
//   sq = rho sq + (1 - rho) d^2;  delta = sqrt(acc + eps) / sqrt(sq + eps) * d
//   acc = rho acc + (1 - rho) delta^2;  p = p - lr * delta
struct AdadeltaStepParams {
  double lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0.0;
  bool maximize = false;
};
using AdadeltaStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                                const AdadeltaStepParams& p);

// torch.optim.RMSprop for one parameter (d as Adagrad's):
//   sq = alpha sq + (1 - alpha) d^2
//   centered: ga = lerp(ga, d, 1 - alpha) (ATen's two-sided lerp), avg = sqrt(sq - ga^2) + eps; else sqrt(sq) + eps
//   momentum > 0: buf = momentum buf + d / avg, p = p - lr buf;  else p = p - lr d / avg
// grad_avg is undefined unless centered, momentum_buf unless momentum > 0.
struct RmspropStepParams {
  double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
  bool centered = false;
  bool maximize = false;
};
using RmspropStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                               const Tensor& momentum_buf, const RmspropStepParams& p);

inline KernelSlot<SgdStepFn> sgd_step("sgd_step");
inline KernelSlot<AdamStepFn> adam_step("adam_step");
inline KernelSlot<AdagradStepFn> adagrad_step("adagrad_step");
inline KernelSlot<AdadeltaStepFn> adadelta_step("adadelta_step");
inline KernelSlot<RmspropStepFn> rmsprop_step("rmsprop_step");

}  // namespace ember::kernels
