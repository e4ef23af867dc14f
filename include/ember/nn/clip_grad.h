// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_: in place on each
// parameter's .grad (parameters without one are skipped), without autograd history.
#pragma once

#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn::utils {

// The norm of order norm_type (2, 1, inf, -inf, 0, any p > 0) of all gradients together, the norm of
// the per-gradient norms as PyTorch computes it (each in its gradient's dtype, gathered on the first
// gradient's device). When it exceeds max_norm every gradient is scaled by
// max_norm / (total + 1e-6); gradients are always multiplied by min(1, that), as PyTorch does.
// Returns the total norm before clipping (0-d; 0.0 float32 when no parameter has a gradient).
// error_if_nonfinite: a NaN or infinite total throws ValueError instead of scaling by it.
// ValueError for max_norm < 0 or NaN, or a NaN norm_type (PyTorch accepts a negative max_norm and
// flips the gradients' sign).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient to [-clip_value, clip_value]. ValueError for clip_value < 0 or NaN.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ember::nn::utils
