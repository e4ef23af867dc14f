// Strided elementwise launches for CUDA kernels, the twin of src/cpu/loops.h. Operands share one
// shape and have their own strides (0 for broadcast dims); size-1 dims are dropped and dims that
// are contiguous for every operand merged, so the common cases index with one multiply.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/context.h"
#include "ember/core/tensor.h"

namespace ember::cuda {

inline constexpr int kMaxDims = 10;   // after merging; more throws NotImplementedError
inline constexpr int kBlockSize = 256;

// Element offsets of N operands for a linear index over the (merged) shape.
template <int N>
struct OffsetCalc {
  int ndim = 1;
  int64_t sizes[kMaxDims] = {1};           // outermost first
  int64_t strides[kMaxDims][N] = {};       // in elements

  __device__ __forceinline__ void get(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t sz = sizes[d];
      const int64_t i = d == 0 ? linear : linear % sz;
      linear = d == 0 ? 0 : linear / sz;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * strides[d][k];
    }
  }
};

template <int N>
OffsetCalc<N> make_offset_calc(const Shape& shape, std::array<const Tensor*, N> ops) {
  OffsetCalc<N> oc;
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = oc.strides[nd - 1][k] == ops[k]->strides()[d] * shape[d];
    if (merge) {
      oc.sizes[nd - 1] *= shape[d];
      for (int k = 0; k < N; ++k) oc.strides[nd - 1][k] = ops[k]->strides()[d];
      continue;
    }
    EMBER_CHECK(nd < kMaxDims, NotImplementedError, "CUDA elementwise kernels support at most ", kMaxDims,
                " non-mergeable dims; this layout has more (shape ", shape_str(shape), ")");
    oc.sizes[nd] = shape[d];
    for (int k = 0; k < N; ++k) oc.strides[nd][k] = ops[k]->strides()[d];
    ++nd;
  }
  if (nd == 0) {
    oc.sizes[0] = 1;
    for (int k = 0; k < N; ++k) oc.strides[0][k] = 0;
    nd = 1;
  }
  oc.ndim = nd;
  return oc;
}

// f(off) for every element; f is a functor with `__device__ void operator()(const int64_t (&)[N])`.
template <int N, class F>
__global__ void elementwise_kernel(int64_t n, OffsetCalc<N> oc, F f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[N];
    oc.get(i, off);
    f(off);
  }
}

inline unsigned grid_for(int64_t n) {
  return unsigned(std::clamp<int64_t>((n + kBlockSize - 1) / kBlockSize, 1, int64_t(1) << 20));
}

// Launches f over `shape` on the device of ops[0] (its stream), with a launch check.
template <int N, class F>
void launch_elementwise(const Shape& shape, std::array<const Tensor*, N> ops, F f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const int dev = ops[0]->device().index;
  DeviceGuard g(dev);
  OffsetCalc<N> oc = make_offset_calc<N>(shape, ops);
  elementwise_kernel<N, F><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(n, oc, f);
  EMBER_CUDA_LAUNCH_CHECK();
}

}  // namespace ember::cuda
