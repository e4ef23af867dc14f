// The CPU batch-norm kernels, declared so that the parity tests can run them against the reference
// (tests/unit/test_cpu_batch_norm.cpp). All follow kernels/nn_kernels.h: contiguous (N, C, S) inputs,
// outputs overwritten; float64 goes to the reference kernels (reference/nn_norm.cpp).
//   *_channels: float32, OpenMP over channels (statistics, backward) or over (n, c) rows (forward),
//               vectorised row loops with AVX-512 / AVX2 clones, sums per block of a row in float
//               and across blocks in double (nn_norm.cpp says why it is not oneDNN's primitive).
#pragma once

#include "kernels/nn_kernels.h"

namespace ember::cpu {

// Chan, Golub and LeVeque's merge of two sets' (count, mean, M2): how the batch-norm kernels
// (nn_norm.cpp, nn_norm_held.cpp) combine their blocks' statistics.
struct Moments {
  double count = 0.0, mean = 0.0, m2 = 0.0;
  void merge(double n, double block_mean, double block_m2) {
    const double total = count + n;
    const double delta = block_mean - mean;
    mean += delta * (n / total);
    m2 += block_m2 + delta * delta * (count * n / total);
    count = total;
  }
};

void batch_norm_stats_channels(const Tensor& x, const Tensor& mean, const Tensor& var);
void batch_norm_forward_channels(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                 const Tensor& bias, const Tensor& out);
void batch_norm_backward_channels(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                                  const Tensor& weight, bool training, const Tensor& grad_x,
                                  const Tensor& grad_weight, const Tensor& grad_bias);
void batch_norm_forward_act_channels(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                     const Tensor& bias, const Tensor& residual, kernels::ConvEpilogue act,
                                     const Tensor& out);
void batch_norm_backward_act_channels(const Tensor& grad_out, const Tensor& x, const Tensor& residual,
                                      const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                                      const Tensor& bias, bool training, kernels::ConvEpilogue act,
                                      const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                      const Tensor& grad_residual);

// The same on activations held channel-blocked (NHWC / nChw16c float32, nn_norm_held.cpp), the
// outputs held in that layout too; false, nothing written, unless every large operand (x, grad_out,
// the residual) is held in one such layout. The *_channels kernels try these first.
bool batch_norm_stats_held(const Tensor& x, const Tensor& mean, const Tensor& var);
bool batch_norm_forward_held(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             const Tensor& bias, const Tensor& residual, kernels::ConvEpilogue act, const Tensor& out);
bool batch_norm_backward_held(const Tensor& grad_out, const Tensor& x, const Tensor& residual, const Tensor& mean,
                              const Tensor& invstd, const Tensor& weight, const Tensor& bias, bool training,
                              kernels::ConvEpilogue act, const Tensor& grad_x, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_residual);

}  // namespace ember::cpu
