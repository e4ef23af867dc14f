// The lowered linear layer on CUDA (ember::autocast: bfloat16 or float16 operands), the twin of the
// CPU's oneDNN inner product (src/cpu/linear_dnnl.cpp): the three linear slots of kernels.h, each a
// cuBLAS GEMM with half operands and float32 accumulation and output (gemm.h), so the forward's
// output and every gradient are float32 without a separate widening pass. float32 / float64
// operands return false: the front-end's batched_gemm path handles them.
#include "core/tensor_raw.h"
#include "cuda/cast.h"
#include "cuda/gemm.h"
#include "kernels/kernels.h"

namespace ember::cuda {

namespace {

// (r, c) -> (1, r, c): the batched GEMM's view of a matrix, strides kept.
Tensor batch1(const Tensor& m) { return core::unsqueeze(m, 0); }

// out (N, O) f32 = x (N, I) @ w (O, I)^T + b (O), x and w in one half dtype.
bool linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
  if (!is_half(x.dtype()) || w.dtype() != x.dtype() || out.dtype() != DType::Float32 ||
      (b.defined() && b.dtype() != DType::Float32) || !out.is_contiguous())
    return false;
  const Device d = out.device();
  if (b.defined()) {
    // out = b broadcast, then the GEMM adds into it (beta = 1): no separate bias pass over out.
    kernels::copy(d)(core::expand(core::unsqueeze(b, 0), out.sizes()), out);
    gemm_half(batch1(x), batch1(core::transpose(w, 0, 1)), core::view(out, {1, out.size(0), out.size(1)}), 1.0f);
  } else {
    gemm_half(batch1(x), batch1(core::transpose(w, 0, 1)), core::view(out, {1, out.size(0), out.size(1)}));
  }
  return true;
}

// grad_w (O, I) f32 = grad_out (N, O)^T @ x (N, I), x half; grad_out f32 is rounded to x's dtype
// (as PyTorch's autocast backward multiplies in half). grad_b (O) = sum over N of grad_out, in f32.
bool linear_backward_weights(const Tensor& go, const Tensor& x, const Tensor& gw, const Tensor& gb) {
  if (!is_half(x.dtype()) || go.dtype() != DType::Float32 || gw.dtype() != DType::Float32 || !gw.is_contiguous())
    return false;
  const Device d = gw.device();
  const Tensor goh = to_half(go, x.dtype());
  gemm_half(batch1(core::transpose(goh, 0, 1)), batch1(x), core::view(gw, {1, gw.size(0), gw.size(1)}));
  if (gb.defined()) kernels::reduce(d)(kernels::ReduceOp::Sum, go, {0}, core::view(gb, {1, gb.size(0)}));
  return true;
}

// grad_x (N, I) f32 = grad_out (N, O) @ w (O, I), w half, grad_out rounded to w's dtype.
bool linear_backward_data(const Tensor& go, const Tensor& w, const Tensor& gx) {
  if (!is_half(w.dtype()) || go.dtype() != DType::Float32 || gx.dtype() != DType::Float32 || !gx.is_contiguous())
    return false;
  const Tensor goh = to_half(go, w.dtype());
  gemm_half(batch1(goh), batch1(w), core::view(gx, {1, gx.size(0), gx.size(1)}));
  return true;
}

}  // namespace

void register_linear_half_kernels() {
  kernels::linear_inference.set(DeviceType::CUDA, &linear_forward);
  kernels::linear_backward_weights.set(DeviceType::CUDA, &linear_backward_weights);
  kernels::linear_backward_data.set(DeviceType::CUDA, &linear_backward_data);
}

}  // namespace ember::cuda
