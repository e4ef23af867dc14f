// Copies between the host and a GPU, and between GPUs, for Tensor::to(Device) and copy_. Both
// sides are contiguous (Tensor::copy_ stages them). Each copy is queued on the stream of the GPU
// side (the source GPU for GPU -> GPU) after that stream's pending work, then synchronised, so the
// caller may read or free either buffer as soon as this returns.
#include "cuda/check.h"
#include "cuda/context.h"
#include "kernels/kernels.h"

namespace ember::cuda {

namespace {
void device_copy(const Tensor& src, const Tensor& dst) {
  EMBER_ASSERT(src.is_contiguous() && dst.is_contiguous() && src.nbytes() == dst.nbytes() && src.dtype() == dst.dtype());
  const size_t n = dst.nbytes();
  if (n == 0) return;
  const Device s = src.device(), d = dst.device();
  if (s.is_cpu() || d.is_cpu()) {
    const int dev = s.is_cpu() ? d.index : s.index;
    DeviceGuard g(dev);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), n,
                                     s.is_cpu() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream(dev)));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(dev)));
    return;
  }
  // GPU -> GPU: dst's block may still be read by queued work on its own stream (cache reuse).
  synchronize(d.index);
  DeviceGuard g(s.index);
  EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), d.index, src.raw_data(), s.index, n, stream(s.index)));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(s.index)));
}
}  // namespace

void register_copy_kernels() { kernels::device_copy.set(DeviceType::CUDA, &device_copy); }

}  // namespace ember::cuda
