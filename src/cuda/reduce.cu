// CUDA reductions, the twin of src/cpu/reduce.cpp: the reduced dims are moved innermost (a copy
// only when the layout needs it) and one thread block reduces each contiguous row with a shared
// memory tree. Float sums accumulate in double (as the CPU does), so float32 results match the
// CPU's to within the final rounding; integer sums accumulate in int64. max/min/argmax/argmin
// keep (value, index) pairs: NaN wins, and ties go to the lowest index, so the result does not
// depend on the reduction order and equals the CPU's exactly.
#include <algorithm>
#include <type_traits>

#include "core/tensor_raw.h"
#include "cuda/loops.cuh"
#include "kernels/kernels.h"

namespace ember::cuda {

using kernels::ReduceOp;

namespace {

template <class T> using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
template <class T> using SumOut = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

template <class T>
__global__ void sum_rows_kernel(const T* in, SumOut<T>* out, int64_t outer, int64_t inner) {
  __shared__ SumAcc<T> buf[kBlockSize];
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* r = in + row * inner;
    SumAcc<T> acc = 0;
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) acc += SumAcc<T>(r[i]);
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = SumOut<T>(buf[0]);
    __syncthreads();
  }
}

template <class T>
struct ValIdx {
  T v;
  int64_t i;  // -1: empty
};

template <class T>
__device__ ValIdx<T> pick(ValIdx<T> a, ValIdx<T> b, bool is_max) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  if constexpr (std::is_floating_point_v<T>) {
    const bool an = ::isnan(a.v), bn = ::isnan(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
  }
  if (is_max ? b.v > a.v : b.v < a.v) return b;
  if (is_max ? a.v > b.v : a.v < b.v) return a;
  return a.i < b.i ? a : b;
}

// out_val (may be null) gets the extreme value, out_idx (may be null) its index in the row.
template <class T>
__global__ void extreme_rows_kernel(const T* in, T* out_val, int64_t* out_idx, int64_t outer, int64_t inner, bool is_max) {
  __shared__ ValIdx<T> buf[kBlockSize];
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* r = in + row * inner;
    ValIdx<T> acc{T{}, -1};
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) acc = pick(acc, ValIdx<T>{r[i], i}, is_max);
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) buf[threadIdx.x] = pick(buf[threadIdx.x], buf[threadIdx.x + s], is_max);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (out_val) out_val[row] = buf[0].v;
      if (out_idx) out_idx[row] = buf[0].i;
    }
    __syncthreads();
  }
}

// A power of two in [32, kBlockSize], enough threads for one row.
unsigned block_for(int64_t inner) {
  unsigned b = 32;
  while (b < unsigned(kBlockSize) && int64_t(b) < inner) b *= 2;
  return b;
}

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < in.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) perm.push_back(i);
  int64_t inner = 1;
  for (int64_t d : dims) {
    perm.push_back(d);
    inner *= in.sizes()[d];
  }
  const Tensor src = in.dim() == 0 ? core::reshape(in, {1}) : core::contiguous(core::permute(in, perm));
  const Tensor dst = out.is_contiguous() ? out : core::empty_like(out);
  const int64_t outer = dst.numel();
  if (outer == 0) return;
  if (inner == 0) {
    EMBER_ASSERT(op == ReduceOp::Sum, "an empty max/min reduction reached the kernel");
    kernels::fill(out.device())(out, 0.0);
    return;
  }
  const int dev = in.device().index;
  DeviceGuard g(dev);
  const unsigned grid = unsigned(std::min<int64_t>(outer, 65535));
  const unsigned block = block_for(inner);
  dispatch_numeric(in.dtype(), "reduce", [&]<class T>() {
    const T* s = src.data_ptr<T>();
    switch (op) {
      case ReduceOp::Sum:
        sum_rows_kernel<T><<<grid, block, 0, stream(dev)>>>(s, dst.data_ptr<SumOut<T>>(), outer, inner);
        break;
      case ReduceOp::Max:
      case ReduceOp::Min:
        extreme_rows_kernel<T><<<grid, block, 0, stream(dev)>>>(s, dst.data_ptr<T>(), nullptr, outer, inner,
                                                                op == ReduceOp::Max);
        break;
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin:
        extreme_rows_kernel<T><<<grid, block, 0, stream(dev)>>>(s, nullptr, dst.data_ptr<int64_t>(), outer, inner,
                                                                op == ReduceOp::ArgMax);
        break;
    }
    EMBER_CUDA_LAUNCH_CHECK();
  });
  if (!dst.is_same(out)) kernels::copy(out.device())(dst, out);
}

}  // namespace

void register_reduce_kernels() { kernels::reduce.set(DeviceType::CUDA, &reduce); }

}  // namespace ember::cuda
