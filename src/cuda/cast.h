// Contiguous float32 <-> bfloat16 / float16 casts on CUDA: the conversions autocast makes on every
// lowered op (inputs and weights to half, cuDNN's half outputs back to float32). The generic copy
// kernel (elementwise.cu) calls this first; same rounding (half_convert.cuh).
#pragma once

#include "ember/core/tensor.h"

namespace ember::cuda {

// dst = src converted, when both are contiguous CUDA tensors of one shape and the pair is
// float32 -> bfloat16/float16 or bfloat16/float16 -> float32; returns false (writing nothing)
// for anything else. Queued on the device's stream.
bool cast_contiguous(const Tensor& src, const Tensor& dst);

// A contiguous copy of t (float32 or already `half`) in `half` (bfloat16 or float16), on t's device.
Tensor to_half(const Tensor& t, DType half);

}  // namespace ember::cuda
