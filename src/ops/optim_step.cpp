// Fused optimizer update front-ends: the layout check that decides fused vs reference, and the
// dispatch of one update. Kernels: src/cpu/optim.cpp, src/cuda/optim.cu.
#include "ops/optim_step.h"

namespace ember::fused {
namespace {
template <class Slot>
bool can_fuse(const Slot& slot, const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  auto same_layout = [&](const Tensor& t) {
    return t.dtype() == p.dtype() && t.device() == p.device() && t.sizes() == p.sizes() && t.is_contiguous();
  };
  if (p.dtype() != DType::Float32 && p.dtype() != DType::Float64) return false;
  if (!p.is_contiguous() || !same_layout(grad)) return false;
  for (const Tensor* b : buffers)
    if (b->defined() && !same_layout(*b)) return false;
  return slot.has(p.device().type);
}
}  // namespace

bool can_sgd_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  return can_fuse(kernels::sgd_step, p, grad, buffers);
}
bool can_adam_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  return can_fuse(kernels::adam_step, p, grad, buffers);
}

bool can_adagrad_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  return can_fuse(kernels::adagrad_step, p, grad, buffers);
}
bool can_adadelta_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  return can_fuse(kernels::adadelta_step, p, grad, buffers);
}
bool can_rmsprop_step(const Tensor& p, const Tensor& grad, std::initializer_list<const Tensor*> buffers) {
  return can_fuse(kernels::rmsprop_step, p, grad, buffers);
}

namespace {
void bump(std::initializer_list<const Tensor*> written) {
  for (const Tensor* t : written)
    if (t->defined()) t->storage()->bump_version();
}
}  // namespace

void sgd_step(const Tensor& p, const Tensor& grad, const Tensor& momentum_buf, const SgdStepParams& params) {
  kernels::sgd_step(p.device())(p, grad, momentum_buf, params);
  p.storage()->bump_version();
  if (momentum_buf.defined()) momentum_buf.storage()->bump_version();
}

void adam_step(const Tensor& p, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
               const Tensor& max_exp_avg_sq, const AdamStepParams& params) {
  kernels::adam_step(p.device())(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, params);
  for (const Tensor* t : {&p, &exp_avg, &exp_avg_sq, &max_exp_avg_sq})
    if (t->defined()) t->storage()->bump_version();
}

}  // namespace ember::fused

namespace ember::fused {

void adagrad_step(const Tensor& p, const Tensor& grad, const Tensor& sum, const AdagradStepParams& params) {
  kernels::adagrad_step(p.device())(p, grad, sum, params);
  bump({&p, &sum});
}

void adadelta_step(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                   const AdadeltaStepParams& params) {
  kernels::adadelta_step(p.device())(p, grad, square_avg, acc_delta, params);
  bump({&p, &square_avg, &acc_delta});
}

void rmsprop_step(const Tensor& p, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                  const Tensor& momentum_buf, const RmspropStepParams& params) {
  kernels::rmsprop_step(p.device())(p, grad, square_avg, grad_avg, momentum_buf, params);
  bump({&p, &square_avg, &grad_avg, &momentum_buf});
}

}  // namespace ember::fused
