// Pooling on CUDA, the twin of src/cpu/nn_pool.cpp (and src/cpu/reference/nn_pool.cpp):
// max (with indices), average and adaptive average, forward and backward, float32 and float64.
// Our own kernels rather than cuDNN's: cuDNN returns no argmax indices and has no ceil mode, and
// the slots need PyTorch's first-maximum rule and divisors exactly.
//
// Forward: one thread per output, the window scanned in the CPU's order, sums in double.
// Backward of avg / adaptive avg: one thread per input element gathers the outputs whose windows
// cover it, in increasing output order, adding in T as the CPU's scatter does: bit-identical.
// Backward of max: the slot has no window geometry, only the indices, so outputs scatter with
// atomicAdd (routing equals the CPU's; where windows overlap, the order of the additions varies),
// or, under ember::deterministic(), one thread per (n, c) plane scatters in the CPU's order.
#include <algorithm>

#include "cuda/loops.cuh"
#include "ember/core/settings.h"
#include "kernels/nn_kernels.h"

namespace ember::cuda {

using kernels::Pool2dParams;

namespace {

// Geometry passed by value to the kernels.
struct PoolGeom {
  int64_t NC, H, W, OH, OW;
  int64_t kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
};
PoolGeom pool_geom(const Shape& in, const Shape& out, const Pool2dParams& p) {
  return {in[0] * in[1], in[2], in[3], out[2], out[3], p.kernel_h, p.kernel_w, p.stride_h, p.stride_w,
          p.pad_h,       p.pad_w, p.count_include_pad};
}

// ---- max pool ----------------------------------------------------------------------------------
// The window clipped to the input (it always holds at least one element: the front-end keeps
// padding <= kernel/2 and ceil-mode windows starting inside the input); the first maximum wins and
// the first NaN ends the scan, as in the CPU kernels.
template <class T>
__global__ void max_pool2d_forward_kernel(const T* x, PoolGeom g, T* out, int64_t* indices) {
  const int64_t n = g.NC * g.OH * g.OW;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, nc = o / (g.OW * g.OH);
    const T* plane = x + nc * g.H * g.W;
    const int64_t h0 = max(oh * g.sh - g.ph, int64_t(0)), h1 = min(oh * g.sh - g.ph + g.kh, g.H);
    const int64_t w0 = max(ow * g.sw - g.pw, int64_t(0)), w1 = min(ow * g.sw - g.pw + g.kw, g.W);
    T best = plane[h0 * g.W + w0];
    int64_t arg = h0 * g.W + w0;
    for (int64_t h = h0; h < h1 && !isnan(best); ++h)
      for (int64_t w = w0; w < w1; ++w) {
        const T v = plane[h * g.W + w];
        if (v > best || isnan(v)) {
          best = v;
          arg = h * g.W + w;
          if (isnan(v)) break;
        }
      }
    out[o] = best;
    indices[o] = arg;
  }
}

template <class T>
__global__ void zero_kernel(T* p, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = T(0);
}

// Any order: one thread per output, atomicAdd into its recorded input.
template <class T>
__global__ void max_pool2d_backward_atomic_kernel(const T* grad_out, const int64_t* indices, int64_t NC,
                                                  int64_t OHW, int64_t HW, T* grad_x) {
  const int64_t n = NC * OHW;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t idx = indices[o];
    if (idx >= 0) atomicAdd(grad_x + (o / OHW) * HW + idx, grad_out[o]);
  }
}

// The CPU's order: one thread per plane, zeroing then adding output by output.
template <class T>
__global__ void max_pool2d_backward_planes_kernel(const T* grad_out, const int64_t* indices, int64_t NC,
                                                  int64_t OHW, int64_t HW, T* grad_x) {
  for (int64_t nc = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; nc < NC; nc += int64_t(gridDim.x) * blockDim.x) {
    T* gx = grad_x + nc * HW;
    for (int64_t i = 0; i < HW; ++i) gx[i] = T(0);
    const T* go = grad_out + nc * OHW;
    const int64_t* id = indices + nc * OHW;
    for (int64_t k = 0; k < OHW; ++k)
      if (id[k] >= 0) gx[id[k]] += go[k];
  }
}

void max_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out, const Tensor& indices) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  const PoolGeom g = pool_geom(x.sizes(), out.sizes(), p);
  dispatch_floating(x.dtype(), "max_pool2d", [&]<class T>() {
    max_pool2d_forward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(x.data_ptr<T>(), g, out.data_ptr<T>(),
                                                                             indices.data_ptr<int64_t>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  if (grad_x.numel() == 0) return;
  const int dev = grad_x.device().index;
  DeviceGuard guard(dev);
  const int64_t NC = grad_x.size(0) * grad_x.size(1), HW = grad_x.size(2) * grad_x.size(3);
  const int64_t OHW = grad_out.size(2) * grad_out.size(3);
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward", [&]<class T>() {
    if (deterministic()) {
      max_pool2d_backward_planes_kernel<T><<<grid_for(NC), kBlockSize, 0, stream(dev)>>>(
          grad_out.data_ptr<T>(), indices.data_ptr<int64_t>(), NC, OHW, HW, grad_x.data_ptr<T>());
      EMBER_CUDA_LAUNCH_CHECK();
      return;
    }
    zero_kernel<T><<<grid_for(grad_x.numel()), kBlockSize, 0, stream(dev)>>>(grad_x.data_ptr<T>(), grad_x.numel());
    EMBER_CUDA_LAUNCH_CHECK();
    if (NC * OHW == 0) return;
    max_pool2d_backward_atomic_kernel<T><<<grid_for(NC * OHW), kBlockSize, 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), indices.data_ptr<int64_t>(), NC, OHW, HW, grad_x.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

// ---- avg pool ----------------------------------------------------------------------------------
// PyTorch's window, as avg_window() in cpu/reference/nn_pool.cpp: clipped to the padded input for the
// divisor, to the input for the sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};
__device__ AvgWindow avg_window(const PoolGeom& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
  const int64_t pool_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t(0));
  w0 = max(w0, int64_t(0));
  h1 = min(h1, g.H);
  w1 = min(w1, g.W);
  const int64_t inside = (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, double(g.count_include_pad ? pool_size : inside)};
}

template <class T>
__global__ void avg_pool2d_forward_kernel(const T* x, PoolGeom g, T* out) {
  const int64_t n = g.NC * g.OH * g.OW;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, nc = o / (g.OW * g.OH);
    const T* plane = x + nc * g.H * g.W;
    const AvgWindow win = avg_window(g, oh, ow);
    double acc = 0.0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) acc += double(plane[h * g.W + w]);
    out[o] = T(acc / win.divisor);
  }
}

// Outputs i (of n, stride s, padding pad, kernel k) whose window [i*s - pad, i*s - pad + k) holds
// position x: lo <= i <= hi (empty when lo > hi).
__device__ void covering_range(int64_t x, int64_t k, int64_t s, int64_t pad, int64_t n, int64_t* lo, int64_t* hi) {
  const int64_t t = x + pad - k + 1;  // smallest window start that still reaches x
  *lo = t <= 0 ? 0 : (t + s - 1) / s;
  *hi = min((x + pad) / s, n - 1);
}

template <class T>
__global__ void avg_pool2d_backward_kernel(const T* grad_out, PoolGeom g, T* grad_x) {
  const int64_t n = g.NC * g.H * g.W;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, nc = i / (g.W * g.H);
    const T* go = grad_out + nc * g.OH * g.OW;
    int64_t oh0, oh1, ow0, ow1;
    covering_range(h, g.kh, g.sh, g.ph, g.OH, &oh0, &oh1);
    covering_range(w, g.kw, g.sw, g.pw, g.OW, &ow0, &ow1);
    T acc = T(0);
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const AvgWindow win = avg_window(g, oh, ow);
        if (h < win.h0 || h >= win.h1 || w < win.w0 || w >= win.w1) continue;
        acc += T(double(go[oh * g.OW + ow]) / win.divisor);
      }
    grad_x[i] = acc;
  }
}

void avg_pool2d_forward(const Tensor& x, const Pool2dParams& p, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  const PoolGeom g = pool_geom(x.sizes(), out.sizes(), p);
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
    avg_pool2d_forward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(x.data_ptr<T>(), g, out.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2dParams& p, const Tensor& grad_x) {
  const int64_t n = grad_x.numel();
  if (n == 0) return;
  const int dev = grad_x.device().index;
  DeviceGuard guard(dev);
  const PoolGeom g = pool_geom(grad_x.sizes(), grad_out.sizes(), p);
  dispatch_floating(grad_x.dtype(), "avg_pool2d_backward", [&]<class T>() {
    avg_pool2d_backward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(grad_out.data_ptr<T>(), g,
                                                                              grad_x.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

// ---- adaptive avg pool -------------------------------------------------------------------------
// Window i of n over a length L: [floor(i*L/n), ceil((i+1)*L/n)).
__device__ int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
__device__ int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

template <class T>
__global__ void adaptive_avg_pool2d_forward_kernel(const T* x, int64_t NC, int64_t H, int64_t W, int64_t OH,
                                                   int64_t OW, T* out) {
  const int64_t n = NC * OH * OW;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ow = o % OW, oh = (o / OW) % OH, nc = o / (OW * OH);
    const T* plane = x + nc * H * W;
    const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
    const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
    double acc = 0.0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) acc += double(plane[h * W + w]);
    out[o] = T(acc / double((h1 - h0) * (w1 - w0)));
  }
}

// Outputs whose adaptive window holds position x: floor(x*n/L) <= i <= ceil((x+1)*n/L) - 1.
__device__ void adaptive_covering_range(int64_t x, int64_t in, int64_t out, int64_t* lo, int64_t* hi) {
  *lo = (x * out) / in;
  *hi = min(((x + 1) * out + in - 1) / in - 1, out - 1);
}

template <class T>
__global__ void adaptive_avg_pool2d_backward_kernel(const T* grad_out, int64_t NC, int64_t H, int64_t W, int64_t OH,
                                                    int64_t OW, T* grad_x) {
  const int64_t n = NC * H * W;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % W, h = (i / W) % H, nc = i / (W * H);
    const T* go = grad_out + nc * OH * OW;
    int64_t oh0, oh1, ow0, ow1;
    adaptive_covering_range(h, H, OH, &oh0, &oh1);
    adaptive_covering_range(w, W, OW, &ow0, &ow1);
    T acc = T(0);
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
      if (h < h0 || h >= h1) continue;
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
        if (w < w0 || w >= w1) continue;
        acc += T(double(go[oh * OW + ow]) / double((h1 - h0) * (w1 - w0)));
      }
    }
    grad_x[i] = acc;
  }
}

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    adaptive_avg_pool2d_forward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        x.data_ptr<T>(), x.size(0) * x.size(1), x.size(2), x.size(3), out.size(2), out.size(3), out.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  const int64_t n = grad_x.numel();
  if (n == 0) return;
  const int dev = grad_x.device().index;
  DeviceGuard guard(dev);
  dispatch_floating(grad_x.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
    adaptive_avg_pool2d_backward_kernel<T><<<grid_for(n), kBlockSize, 0, stream(dev)>>>(
        grad_out.data_ptr<T>(), grad_x.size(0) * grad_x.size(1), grad_x.size(2), grad_x.size(3), grad_out.size(2),
        grad_out.size(3), grad_x.data_ptr<T>());
    EMBER_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace

void register_nn_pool_kernels() {
  constexpr DeviceType kCuda = DeviceType::CUDA;
  kernels::max_pool2d_forward.set(kCuda, &max_pool2d_forward);
  kernels::max_pool2d_backward.set(kCuda, &max_pool2d_backward);
  kernels::avg_pool2d_forward.set(kCuda, &avg_pool2d_forward);
  kernels::avg_pool2d_backward.set(kCuda, &avg_pool2d_backward);
  kernels::adaptive_avg_pool2d_forward.set(kCuda, &adaptive_avg_pool2d_forward);
  kernels::adaptive_avg_pool2d_backward.set(kCuda, &adaptive_avg_pool2d_backward);
}

}  // namespace ember::cuda
