// Registers the CPU kernels of the neural-network ops: the fast paths where we have them
// (conv2d: im2col + OpenBLAS; max-pool: plane-parallel loops), the reference kernels elsewhere.
#include "cpu/nn_reference.h"

namespace ember::cpu {
void register_nn_conv_kernels();
void register_nn_pool_kernels();

void register_nn_kernels() {
  using namespace kernels;
  constexpr DeviceType kCpu = DeviceType::CPU;
  avg_pool2d_forward.set(kCpu, &reference::avg_pool2d_forward);
  avg_pool2d_backward.set(kCpu, &reference::avg_pool2d_backward);
  adaptive_avg_pool2d_forward.set(kCpu, &reference::adaptive_avg_pool2d_forward);
  adaptive_avg_pool2d_backward.set(kCpu, &reference::adaptive_avg_pool2d_backward);
  batch_norm_stats.set(kCpu, &reference::batch_norm_stats);
  batch_norm_forward.set(kCpu, &reference::batch_norm_forward);
  batch_norm_backward.set(kCpu, &reference::batch_norm_backward);
  softmax_forward.set(kCpu, &reference::softmax_forward);
  softmax_backward.set(kCpu, &reference::softmax_backward);
  nll_loss_forward.set(kCpu, &reference::nll_loss_forward);
  nll_loss_backward.set(kCpu, &reference::nll_loss_backward);
  register_nn_conv_kernels();
  register_nn_pool_kernels();
}
}  // namespace ember::cpu
