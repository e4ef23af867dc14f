// Op front-ends of the fused optimizer updates (kernels/optim_kernels.h) for src/optim: whether the
// fused kernel may take one parameter, and the call itself. The optimizers never touch a kernel
// slot; their reference path (in-place tensor ops) stays in src/optim as the oracle.
#pragma once

#include <initializer_list>

#include "ember/core/tensor.h"
#include "kernels/optim_kernels.h"

namespace ember::fused {

using kernels::AdadeltaStepParams;
using kernels::AdagradStepParams;
using kernels::AdamStepParams;
using kernels::RmspropStepParams;
using kernels::SgdStepParams;

// The kernels assume contiguous float32/float64 tensors of p's dtype, shape and device (undefined
// buffers are skipped), and the device's backend must have the kernel.
bool can_sgd_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers);
bool can_adam_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers);
bool can_adagrad_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers);
bool can_adadelta_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers);
bool can_rmsprop_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers);

// One update of p (and its state buffers) in place; bumps the versions of what it wrote.
void sgd_step(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, const SgdStepParams& params);
void adam_step(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const AdamStepParams& params);
void adagrad_step(const Tensor& p, const Tensor& grad, const Tensor& sum, const AdagradStepParams& params);
void adadelta_step(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                   const AdadeltaStepParams& params);
void rmsprop_step(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                  const Tensor& momentum_buf, const RmspropStepParams& params);

}  // namespace ember::fused
