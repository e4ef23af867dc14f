// Plain-loop reference kernels for the neural-network ops (float32 and float64), one per slot of
// kernels/nn_kernels.h and with the same signature, one file per op family beside this header
// (nn_conv.cpp, nn_pool.cpp, nn_norm.cpp, nn_softmax.cpp, nn_loss.cpp). They are the test oracle for
// every fast path and the CPU path for float64. Single-threaded, direct formulas, no cleverness.
#pragma once

#include "kernels/nn_kernels.h"

namespace ember::cpu::reference {

// nn_conv.cpp
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const kernels::Conv2dParams& p, const Tensor& out);
void conv2d_backward_data(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dParams& p,
                          const Tensor& grad_x);
void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dParams& p,
                            const Tensor& grad_weight);
// nn_pool.cpp
void max_pool2d_forward(const Tensor& x, const kernels::Pool2dParams& p, const Tensor& out,
                        const Tensor& indices);
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x);
void avg_pool2d_forward(const Tensor& x, const kernels::Pool2dParams& p, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const kernels::Pool2dParams& p, const Tensor& grad_x);
void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x);
// nn_norm.cpp
void batch_norm_stats(const Tensor& x, const Tensor& mean, const Tensor& var);
void batch_norm_forward(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                        const Tensor& bias, const Tensor& out);
void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                         const Tensor& weight, bool training, const Tensor& grad_x,
                         const Tensor& grad_weight, const Tensor& grad_bias);
// nn_softmax.cpp
void softmax_forward(const Tensor& x, int64_t dim, bool log, const Tensor& out);
void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, bool log, const Tensor& grad_x);
// nn_loss.cpp (cross_entropy = log_softmax + these)
void nll_loss_forward(const Tensor& log_probs, const Tensor& target, int64_t ignore_index, const Tensor& out);
void nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index,
                       const Tensor& grad_log_probs);

}  // namespace ember::cpu::reference
