// The data loader's device-resident batch kernel on CUDA (kernels/data_kernels.h): gathers a batch of
// uint8 images and their labels from the dataset held on the GPU and maps every pixel through the
// transform's (C, 256) float lookup table, the same table the CPU's SampleTransform::apply reads,
// so the batch equals the CPU's bit for bit. One thread per output element.
#include "cuda/loops.cuh"
#include "kernels/data_kernels.h"

namespace ember::cuda {

namespace {

// images (N, C, HW) uint8, indices (B), lut (C, 256) -> out (B, C, HW)
__global__ void resident_gather_kernel(const uint8_t* images, const int64_t* indices, const float* lut, int64_t B,
                                       int64_t C, int64_t HW, float* out) {
  const int64_t n = B * C * HW;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / (C * HW), chw = k % (C * HW), c = chw / HW;
    out[k] = lut[c * 256 + images[indices[i] * C * HW + chw]];
  }
}

__global__ void gather_labels_kernel(const int64_t* labels, const int64_t* indices, int64_t B, int64_t* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < B; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = labels[indices[i]];
}

void resident_gather(const Tensor& images, const Tensor& labels, const Tensor& indices, const Tensor& lut,
                     const Tensor& out_x, const Tensor& out_y) {
  const int64_t B = indices.numel(), C = images.size(1), HW = images.size(2) * images.size(3);
  if (B == 0) return;
  const int dev = images.device().index;
  DeviceGuard guard(dev);
  resident_gather_kernel<<<grid_for(B * C * HW), kBlockSize, 0, stream(dev)>>>(
      images.data_ptr<uint8_t>(), indices.data_ptr<int64_t>(), lut.data_ptr<float>(), B, C, HW,
      out_x.data_ptr<float>());
  EMBER_CUDA_LAUNCH_CHECK();
  gather_labels_kernel<<<grid_for(B), kBlockSize, 0, stream(dev)>>>(labels.data_ptr<int64_t>(),
                                                                     indices.data_ptr<int64_t>(), B,
                                                                     out_y.data_ptr<int64_t>());
  EMBER_CUDA_LAUNCH_CHECK();
}

}  // namespace

void register_resident_gather() { kernels::resident_gather.set(DeviceType::CUDA, &resident_gather); }

}  // namespace ember::cuda
