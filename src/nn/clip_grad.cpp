// clip_grad_norm_ / clip_grad_value_: PyTorch's arithmetic (per-gradient norms, their norm, one
// clamped coefficient multiplied into every gradient), so the clipped values match torch's.
#include "ember/nn/clip_grad.h"

#include <cmath>
#include <string>

#include "ember/autograd/node.h"
#include "ember/core/error.h"
#include "ember/ops.h"
#include "ops/util.h"

namespace ember::nn::utils {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

// ||g||_p over all elements, as torch.linalg.vector_norm: 0 counts the non-zeros, +-inf is the
// largest / smallest |g|.
Tensor vector_norm_all(const Tensor& g, double p) {
  if (p == 2.0) return sqrt(sum(mul(g, g)));
  if (p == 1.0) return sum(abs(g));
  if (std::isinf(p)) return p > 0 ? amax(abs(g)) : amin(abs(g));
  if (p == 0.0) return sum(ne(g, scalar_like(g, 0.0)).to(g.dtype()));
  return pow(sum(pow(abs(g), p)), 1.0 / p);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(max_norm >= 0.0, ValueError, "clip_grad_norm_: max_norm must be >= 0, got ", max_norm);
  EMBER_CHECK(!std::isnan(norm_type), ValueError, "clip_grad_norm_: norm_type is NaN");
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return scalar_tensor(0.0);
  const Device device = grads.front().device();
  DType dtype = grads.front().dtype();
  for (const Tensor& g : grads)
    if (g.dtype() == DType::Float64) dtype = DType::Float64;
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(vector_norm_all(g, norm_type).to(device, dtype));
  const Tensor total = vector_norm_all(stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double t = total.to(DType::Float64).item<double>();
    EMBER_CHECK(std::isfinite(t), ValueError, "clip_grad_norm_: the total norm of order ", norm_type,
                " of the gradients is ", t, ", so it cannot be clipped; pass error_if_nonfinite = false to scale the "
                "gradients by the non-finite norm anyway");
  }
  const Tensor coef = clamp(div(full_like(total, max_norm), add(total, 1e-6)), std::nullopt, 1.0);
  for (const Tensor& g : grads) {
    Tensor grad = g;
    grad.mul_(coef.to(g.device(), g.dtype()));
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  EMBER_CHECK(clip_value >= 0.0, ValueError, "clip_grad_value_: clip_value must be >= 0, got ", clip_value);
  NoGradGuard no_grad;
  for (const Tensor& g : grads_of(parameters)) {
    Tensor grad = g;
    grad.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ember::nn::utils
