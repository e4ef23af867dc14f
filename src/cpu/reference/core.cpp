// Reference kernels of the core ops that have fast paths: batched_matmul (the oracle of cpu/gemm.cpp
// and cuda/gemm.cpp) and sum_dim (of the reduce kernels). The simplest correct loops, no BLAS, no threads.
#include "cpu/reference/core.h"

#include <algorithm>

#include "core/tensor_raw.h"

namespace ember::cpu::reference {

Tensor batched_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = core::contiguous(core::to(a_in, DType::Float64)), b = core::contiguous(core::to(b_in, DType::Float64));
  int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  Tensor out = core::empty({B, M, N}, DType::Float64, Device::cpu());
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  double* po = out.data_ptr<double>();
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += pa[(bb * M + i) * K + k] * pb[(bb * K + k) * N + j];
        po[(bb * M + i) * N + j] = acc;
      }
  return core::to(out, a_in.dtype());
}

Tensor sum_dim(const Tensor& a_in, int64_t dim) {
  Tensor a = core::contiguous(core::to(a_in, DType::Float64));
  Shape s = a.sizes();
  int64_t outer = 1, inner = 1, n = s[dim];
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < a.dim(); ++i) inner *= s[i];
  s[dim] = 1;
  Tensor out = core::empty(s, DType::Float64, Device::cpu());
  double* po = out.data_ptr<double>();
  std::fill(po, po + outer * inner, 0.0);
  const double* p = a.data_ptr<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i) po[o * inner + i] += p[(o * n + k) * inner + i];
  return core::to(out, a_in.dtype());
}

}  // namespace ember::cpu::reference
