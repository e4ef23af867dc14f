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
struct SgdStepParams {
  double lr = 0.0, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;
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
  int64_t step = 1;
  // The host-side scalars both backends use, computed once per call as the reference path does.
  double step_size() const { return lr / (1.0 - std::pow(beta1, double(step))); }
  double bias_correction2_sqrt() const { return std::sqrt(1.0 - std::pow(beta2, double(step))); }
};
using AdamStepFn = void (*)(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                            const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, const AdamStepParams& p);

inline KernelSlot<SgdStepFn> sgd_step("sgd_step");
inline KernelSlot<AdamStepFn> adam_step("adam_step");

}  // namespace ember::kernels
