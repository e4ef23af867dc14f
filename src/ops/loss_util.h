// Helpers shared by the loss front-ends (nn_loss.cpp, nn_loss_pointwise.cpp).
#pragma once

#include "ember/ops.h"

namespace ember::nn::functional {
// None: the loss as it is; Sum / Mean: over every element. BatchMean throws ValueError naming `op`
// (kl_div handles it before calling).
Tensor reduce_loss(const Tensor& loss, Reduction reduction, const char* op);
}  // namespace ember::nn::functional
