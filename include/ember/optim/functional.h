// The optimizer updates as functions: one call updates one parameter group, given its tensors, its
// state buffers and its hyper-parameters (torch.optim's functional form, torch.optim.sgd / adam / ...).
// The optimizer classes (optimizer.h) and the Python package's optimizers (python/ember/optim, whose
// param_groups carry every hyper-parameter per group) both call these: one implementation per update.
//
// Each function walks the lists together (element i of every list belongs to parameter i) and runs,
// per parameter, the fused kernel when the layouts allow it (a contiguous float32 / float64
// parameter with a gradient and buffers of its dtype, shape and device; src/ops/optim_step.h) and
// otherwise the reference path of in-place tensor ops; both round alike, so they agree bit for bit.
// `fused = false` forces the reference path. Call under NoGradGuard; grads are read only; params and
// buffers are updated in place. The lists must be of equal length (ValueError otherwise); a buffer
// a setting does not use (max_exp_avg_sqs without amsgrad, ...) may be an empty list.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::optim {

// torch.optim.SGD: d = grad (-grad when maximize) + weight_decay * p; with momentum,
// buf = momentum * buf + (1 - dampening) * d (buf = d on the first step), d = nesterov ? d + momentum * buf : buf;
// p -= lr * d.
struct SgdSettings {
  double lr = 1e-3, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false, maximize = false, fused = true;
};
// momentum_buffers: one per parameter when momentum != 0, an undefined entry for a parameter without
// one yet; this step creates it (the first step's rule) and stores it there. Ignored when momentum == 0.
void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& momentum_buffers,
              const SgdSettings& s);

// torch.optim.Adam (decoupled = false) and AdamW (decoupled = true): see AdamStepParams in
// src/kernels/optim_kernels.h. steps[i]: parameter i's step count, already incremented (>= 1).
struct AdamSettings {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool amsgrad = false, maximize = false, decoupled = false, fused = true;
};
void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamSettings& s);

// torch.optim.Adagrad: sum += d^2; p -= lr / (1 + (step - 1) lr_decay) * d / (sqrt(sum) + eps).
// steps as adam_step's.
struct AdagradSettings {
  double lr = 1e-2, lr_decay = 0.0, weight_decay = 0.0, eps = 1e-10;
  bool maximize = false, fused = true;
};
void adagrad_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& sums,
                  const std::vector<int64_t>& steps, const AdagradSettings& s);

// torch.optim.Adadelta: sq = rho sq + (1 - rho) d^2, delta = sqrt(acc + eps) / sqrt(sq + eps) * d,
// acc = rho acc + (1 - rho) delta^2, p -= lr * delta.
struct AdadeltaSettings {
  double lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0.0;
  bool maximize = false, fused = true;
};
void adadelta_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& acc_deltas,
                   const AdadeltaSettings& s);

// torch.optim.RMSprop: see RmspropStepParams in src/kernels/optim_kernels.h. grad_avgs are used when
// centered, momentum_buffers when momentum > 0 (each may be empty otherwise).
struct RmspropSettings {
  double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
  bool centered = false, maximize = false, fused = true;
};
void rmsprop_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& grad_avgs,
                  const std::vector<Tensor>& momentum_buffers, const RmspropSettings& s);

}  // namespace ember::optim
