// The loss kernels of the CPU, twin of src/cuda/nn_loss.cu: nll_loss forward and backward, the
// kernels of cross_entropy (log_softmax, nn_softmax.cpp, then these) and nll_loss. The plain
// reference loops (reference/nn_loss.cpp) are fast enough here: O(N) work per batch.
#include "cpu/reference/nn.h"

namespace ember::cpu {

void register_nn_loss_kernels() {
  kernels::nll_loss_forward.set(DeviceType::CPU, &reference::nll_loss_forward);
  kernels::nll_loss_backward.set(DeviceType::CPU, &reference::nll_loss_backward);
}

}  // namespace ember::cpu
