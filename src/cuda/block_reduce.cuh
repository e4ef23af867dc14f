// Block-wide reductions for the CUDA nn kernels (batch-norm statistics, softmax): every thread
// passes its partial value and gets the block's result back. blockDim.x must be a power of two no
// larger than kBlockSize; `buf` is shared memory of kBlockSize elements.
#pragma once

#include <cstdint>

#include "cuda/loops.cuh"

namespace ember::cuda {

template <class Acc>
__device__ Acc block_sum(Acc v, Acc* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  const Acc r = buf[0];
  __syncthreads();  // buf is reused by the caller's next reduction
  return r;
}

// max as std::max(a, b) computes it on the CPU: a NaN operand never replaces the running value.
template <class Acc>
__device__ Acc block_max(Acc v, Acc* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && buf[threadIdx.x] < buf[threadIdx.x + s]) buf[threadIdx.x] = buf[threadIdx.x + s];
    __syncthreads();
  }
  const Acc r = buf[0];
  __syncthreads();
  return r;
}

// A power of two in [32, kBlockSize]: enough threads for `n` elements, no more.
inline unsigned block_for_length(int64_t n) {
  unsigned b = 32;
  while (b < unsigned(kBlockSize) && int64_t(b) < n) b *= 2;
  return b;
}

// Blocks for `rows` independent rows, one block each, walked with a grid-stride loop.
inline unsigned grid_for_rows(int64_t rows) { return unsigned(rows < 65535 ? (rows < 1 ? 1 : rows) : 65535); }

}  // namespace ember::cuda
