// Reference loss kernels: nll_loss per sample, forward and backward, float32 and float64. cross_entropy
// is log_softmax (reference/nn_softmax.cpp) followed by these. The CPU kernels (registered by
// src/cpu/nn_loss.cpp) and the oracle of the CUDA twin (src/cuda/nn_loss.cu).
#include "cpu/reference/nn.h"

#include <algorithm>

namespace ember::cpu::reference {

void nll_loss_forward(const Tensor& log_probs, const Tensor& target, int64_t ignore_index, const Tensor& out) {
  dispatch_floating(log_probs.dtype(), "nll_loss", [&]<class T>() {
    const int64_t N = log_probs.size(0), C = log_probs.size(1);
    const T* lp = log_probs.data_ptr<T>();
    const int64_t* tp = target.data_ptr<int64_t>();
    T* op = out.data_ptr<T>();
    for (int64_t i = 0; i < N; ++i) op[i] = tp[i] == ignore_index ? T(0) : -lp[i * C + tp[i]];
  });
}

void nll_loss_backward(const Tensor& grad_out, const Tensor& target, int64_t ignore_index,
                       const Tensor& grad_log_probs) {
  dispatch_floating(grad_log_probs.dtype(), "nll_loss_backward", [&]<class T>() {
    const int64_t N = grad_log_probs.size(0), C = grad_log_probs.size(1);
    const T* gp = grad_out.data_ptr<T>();
    const int64_t* tp = target.data_ptr<int64_t>();
    T* gl = grad_log_probs.data_ptr<T>();
    std::fill(gl, gl + N * C, T(0));
    for (int64_t i = 0; i < N; ++i)
      if (tp[i] != ignore_index) gl[i * C + tp[i]] = -gp[i];
  });
}

}  // namespace ember::cpu::reference
