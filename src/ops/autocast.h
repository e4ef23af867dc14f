// What the op front-ends ask of ember::autocast (include/ember/autocast.h): whether an op runs
// lowered here, the cached half copy of a weight, and float32 for the ops that must stay there.
#pragma once

#include "ember/autocast.h"
#include "ember/core/tensor.h"

namespace ember::autocast_detail {

// The dtype `op` multiplies in for a float32 input on x's device: the autocast dtype when
// autocast is on there and the policy lowers the op, else x's own dtype.
DType compute_dtype(AutocastOp op, const Tensor& x);
// conv2d's: compute_dtype's answer, except float32 on the CPU for an x of fewer than
// conv2d_min_lowered_channels() channels when `weight_grad` (the weight gradient will be computed).
DType conv2d_compute_dtype(const Tensor& x, const Tensor& weight, bool weight_grad);
// Below this many input channels a CPU conv whose weight gradient is wanted stays float32 under
// autocast: 4 where oneDNN runs AMX, 2 otherwise (autocast.cpp).
int64_t conv2d_min_lowered_channels();
// linear's: compute_dtype's answer, except float32 on the CPU without autograd for a weight of
// fewer than 65,536 elements (see autocast.cpp).
DType linear_compute_dtype(const Tensor& x, const Tensor& weight);
// t (float32, detached) as `dt`: from this thread's cast cache for a parameter (a leaf that
// requires grad; cast once per autocast scope and storage version), a fresh cast otherwise.
Tensor cast(const Tensor& t, DType dt);
// Under autocast on t's device: a half t converted to float32 (differentiably), for the ops the
// policy keeps in float32. Otherwise t itself.
Tensor to_float32(AutocastOp op, const Tensor& t);

}  // namespace ember::autocast_detail
