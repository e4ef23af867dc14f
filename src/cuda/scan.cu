// CUDA scans along a dim (cumsum, cumprod and their reverse forms), the twin of src/cpu/scan.cpp.
// Short lines (the common cumsum over a small dim of many rows): one thread walks each line. Long
// lines (nonzero's cumsum over a whole flattened mask): one block per line, in tiles of the block's
// width, each tile scanned in shared memory (Hillis-Steele) and added to the carry of the tiles
// before it. Floats accumulate in double, integers in int64, as on the CPU; only the order of a
// long line's additions differs (a tree within a tile).
#include <type_traits>

#include "cuda/loops.cuh"
#include "kernels/tensor_kernels.h"

namespace ember::cuda {

using kernels::ScanOp;

namespace {

constexpr int kScanBlock = 256;
constexpr int64_t kLongLine = 256;  // lines at least this long get a block each

template <class Acc>
__device__ __forceinline__ Acc combine(Acc a, Acc b, bool prod) { return prod ? a * b : a + b; }

// Line l starts at offsets off[0] (in) and off[1] (out); elements along the dim are si / so apart.
template <class T, class Acc>
__global__ void scan_lines_kernel(OffsetCalc<2> oc, int64_t lines, const T* in, T* out, int64_t n, int64_t si,
                                  int64_t so, bool prod, bool reverse) {
  for (int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; l < lines; l += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    oc.get(l, off);
    Acc acc = prod ? Acc(1) : Acc(0);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = reverse ? n - 1 - k : k;
      acc = combine(acc, Acc(in[off[0] + i * si]), prod);
      out[off[1] + i * so] = T(acc);
    }
  }
}

template <class T, class Acc>
__global__ void scan_long_lines_kernel(OffsetCalc<2> oc, int64_t lines, const T* in, T* out, int64_t n, int64_t si,
                                       int64_t so, bool prod, bool reverse) {
  __shared__ Acc buf[kScanBlock];
  const Acc identity = prod ? Acc(1) : Acc(0);
  const int tid = threadIdx.x;
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
    int64_t off[2];
    oc.get(l, off);
    Acc carry = identity;
    for (int64_t start = 0; start < n; start += kScanBlock) {
      const int64_t k = start + tid;
      const int64_t i = reverse ? n - 1 - k : k;
      buf[tid] = k < n ? Acc(in[off[0] + i * si]) : identity;
      __syncthreads();
      for (int step = 1; step < kScanBlock; step <<= 1) {
        const Acc before = tid >= step ? buf[tid - step] : identity;
        __syncthreads();
        buf[tid] = combine(before, buf[tid], prod);
        __syncthreads();
      }
      if (k < n) out[off[1] + i * so] = T(combine(carry, buf[tid], prod));
      carry = combine(carry, buf[kScanBlock - 1], prod);
      __syncthreads();  // every thread has read buf before the next tile overwrites it
    }
  }
}

void scan(ScanOp op, const Tensor& in, int64_t dim, bool reverse, const Tensor& out) {
  if (in.numel() == 0) return;
  const int64_t n = in.dim() == 0 ? 1 : in.sizes()[dim];
  const int64_t si = in.dim() == 0 ? 0 : in.strides()[dim], so = out.dim() == 0 ? 0 : out.strides()[dim];
  Shape line_shape = in.sizes();
  if (in.dim() > 0) line_shape[dim] = 1;
  const int64_t lines = shape_numel(line_shape);
  const OffsetCalc<2> oc = make_offset_calc<2>(line_shape, {&in, &out});
  const bool prod = op == ScanOp::Prod;
  const int dev = in.device().index;
  DeviceGuard g(dev);
  dispatch_numeric(in.dtype(), "scan", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int32_t>) {
      throw DTypeError("scan: expected float32, float64 or int64 (the front-end converts)");
    } else {
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      if (n >= kLongLine) {
        const unsigned grid = unsigned(std::min<int64_t>(lines, 65535));
        scan_long_lines_kernel<T, Acc><<<grid, kScanBlock, 0, stream(dev)>>>(oc, lines, in.data_ptr<T>(),
                                                                              out.data_ptr<T>(), n, si, so, prod, reverse);
      } else {
        scan_lines_kernel<T, Acc><<<grid_for(lines), kBlockSize, 0, stream(dev)>>>(oc, lines, in.data_ptr<T>(),
                                                                                   out.data_ptr<T>(), n, si, so, prod, reverse);
      }
      EMBER_CUDA_LAUNCH_CHECK();
    }
  });
}

}  // namespace

void register_scan_kernels() { kernels::scan.set(DeviceType::CUDA, &scan); }

}  // namespace ember::cuda
