// The batch-norm kernels of the CPU, twin of src/cuda/nn_norm.cu: batch statistics, forward and
// backward, registered from the reference loops (reference/nn_norm.cpp).
#include "cpu/reference/nn.h"

namespace ember::cpu {

void register_nn_norm_kernels() {
  kernels::batch_norm_stats.set(DeviceType::CPU, &reference::batch_norm_stats);
  kernels::batch_norm_forward.set(DeviceType::CPU, &reference::batch_norm_forward);
  kernels::batch_norm_backward.set(DeviceType::CPU, &reference::batch_norm_backward);
}

}  // namespace ember::cpu
