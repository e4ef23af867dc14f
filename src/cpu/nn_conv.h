// The CPU conv2d kernels, declared so that the parity tests can run each one against the reference
// (the dispatch table holds only the one registered). All follow kernels/nn_kernels.h: contiguous
// inputs, outputs overwritten; float64 goes to the reference kernels.
//   *_im2col: im2col + OpenBLAS sgemm, OpenMP over images (nn_conv.cpp).
//   *_dnnl:   oneDNN 2.6 direct convolution with cached primitive descriptors, the layout oneDNN
//             prefers inside and NCHW outside (nn_conv_dnnl.cpp); falls back to *_im2col for a
//             geometry oneDNN cannot build a primitive for.
#pragma once

#include "kernels/nn_kernels.h"

namespace ember::cpu {

void conv2d_forward_im2col(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const kernels::Conv2dParams& p, const Tensor& out);
void conv2d_backward_data_im2col(const Tensor& grad_out, const Tensor& weight,
                                 const kernels::Conv2dParams& p, const Tensor& grad_x);
void conv2d_backward_weight_im2col(const Tensor& grad_out, const Tensor& x,
                                   const kernels::Conv2dParams& p, const Tensor& grad_weight);

void conv2d_forward_dnnl(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const kernels::Conv2dParams& p, const Tensor& out);
void conv2d_backward_data_dnnl(const Tensor& grad_out, const Tensor& weight,
                               const kernels::Conv2dParams& p, const Tensor& grad_x);
void conv2d_backward_weight_dnnl(const Tensor& grad_out, const Tensor& x,
                                 const kernels::Conv2dParams& p, const Tensor& grad_weight);

}  // namespace ember::cpu
