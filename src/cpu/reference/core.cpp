// Reference kernels of the core ops that have fast paths: batched_matmul (the oracle of cpu/gemm.cpp
// and cuda/gemm.cpp) and sum_dim (of the reduce kernels). The simplest correct loops, no BLAS, no threads.
#include "cpu/reference/core.h"

#include <vector>

namespace ember::cpu::reference {

Tensor batched_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in.to(DType::Float64).contiguous(), b = b_in.to(DType::Float64).contiguous();
  int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  std::vector<double> out(size_t(B * M * N), 0.0);
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += pa[(bb * M + i) * K + k] * pb[(bb * K + k) * N + j];
        out[size_t((bb * M + i) * N + j)] = acc;
      }
  return tensor(out, {B, M, N}).to(a_in.dtype());
}

Tensor sum_dim(const Tensor& a_in, int64_t dim) {
  Tensor a = a_in.to(DType::Float64).contiguous();
  Shape s = a.sizes();
  int64_t outer = 1, inner = 1, n = s[dim];
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < a.dim(); ++i) inner *= s[i];
  std::vector<double> out(size_t(outer * inner), 0.0);
  const double* p = a.data_ptr<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i) out[size_t(o * inner + i)] += p[(o * n + k) * inner + i];
  s[dim] = 1;
  return tensor(out, s).to(a_in.dtype());
}

}  // namespace ember::cpu::reference
