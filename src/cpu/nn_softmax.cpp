// The softmax kernels of the CPU, twin of src/cuda/nn_softmax.cu: softmax and log_softmax along one
// dim, forward and backward, registered from the reference loops (reference/nn_softmax.cpp).
#include "cpu/reference/nn.h"

namespace ember::cpu {

void register_nn_softmax_kernels() {
  kernels::softmax_forward.set(DeviceType::CPU, &reference::softmax_forward);
  kernels::softmax_backward.set(DeviceType::CPU, &reference::softmax_backward);
}

}  // namespace ember::cpu
