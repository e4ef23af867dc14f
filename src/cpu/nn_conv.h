// The CPU conv2d kernels, declared so that the parity tests can run each one against the reference
// (the dispatch table holds only the one registered). All follow kernels/nn_kernels.h: contiguous
// inputs, outputs overwritten; float64 goes to the reference kernels.
//   *_im2col: im2col + OpenBLAS sgemm, OpenMP over images (nn_conv.cpp).
//   *_dnnl:   oneDNN 2.6 direct convolution with cached primitive descriptors, the layout oneDNN
//             prefers inside and NCHW outside (nn_conv_dnnl.cpp); falls back to *_im2col for a
//             geometry oneDNN cannot build a primitive for.
#pragma once

#include "core/tensor_raw.h"
#include "kernels/nn_kernels.h"

namespace ember::cpu {

// A float32 copy of t holding t's values rounded to bfloat16: what the im2col kernels multiply for
// p.compute == BFloat16 (the same products a bf16 kernel forms, summed in float32).
inline Tensor bf16_rounded(const Tensor& t) {
  return t.dtype() == DType::BFloat16 ? core::to(t, DType::Float32)
                                      : core::to(core::to(t, DType::BFloat16), DType::Float32);
}
inline kernels::Conv2dParams as_f32(kernels::Conv2dParams p) {
  p.compute = DType::Float32;
  return p;
}

void conv2d_forward_im2col(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const kernels::Conv2dParams& p, const Tensor& out);
void conv2d_backward_data_im2col(const Tensor& grad_out, const Tensor& weight,
                                 const kernels::Conv2dParams& p, const Tensor& grad_x);
void conv2d_backward_weight_im2col(const Tensor& grad_out, const Tensor& x,
                                   const kernels::Conv2dParams& p, const Tensor& grad_weight);

void conv2d_forward_dnnl(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const kernels::Conv2dParams& p, const Tensor& out);
// conv2d_forward_dnnl with `act` as a oneDNN post-op (the conv2d_forward_fused slot): false,
// writing nothing, for float64 and for a geometry oneDNN has no primitive for.
bool conv2d_forward_fused_dnnl(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const kernels::Conv2dParams& p, kernels::ConvEpilogue act, const Tensor& out);
void conv2d_backward_data_dnnl(const Tensor& grad_out, const Tensor& weight,
                               const kernels::Conv2dParams& p, const Tensor& grad_x);
void conv2d_backward_weight_dnnl(const Tensor& grad_out, const Tensor& x,
                                 const kernels::Conv2dParams& p, const Tensor& grad_weight);
// The weight and bias gradients in one oneDNN primitive (the conv2d_backward_weight_bias slot):
// false, writing nothing, under ember::deterministic(), for float64 and where oneDNN has no primitive.
bool conv2d_backward_weight_bias_dnnl(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                                      const Tensor& grad_weight, const Tensor& grad_bias);

// The bf16 weight gradient of a convolution with small output planes as one bf16 GEMM over an
// im2col matrix (nn_conv_wgrad.cpp): false, writing nothing, outside the shapes it is for (groups
// 1, output planes of at most 64 pixels, 64+ channels each side) or where oneDNN has no matmul.
bool conv2d_backward_weight_gemm_bf16(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                                      const Tensor& grad_weight);

// Registers conv_act_grad.cpp's kernels::conv_activation_grad_bf16 (from register_nn_conv_kernels).
void register_conv_activation_grad_kernel();

}  // namespace ember::cpu
