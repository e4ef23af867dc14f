// The kernel contract of the data loader (src/data/loader.cpp): a device's batch transfer engine
// and its device-resident batch gather. Optional slots: a backend that leaves them empty gets the
// loader's plain synchronous .to(device) copy and per-sample host path.
#pragma once

#include <memory>
#include <vector>

#include "core/dispatch.h"
#include "ember/core/tensor.h"

namespace ember::kernels {

// Moves host batches to one device: host buffers to assemble batches into (pinned on CUDA, called
// from the loader's worker threads) and an upload of a batch's tensors (on the consumer's thread)
// that returns them on the device, ordered before any later work on that device's compute stream
// without blocking the host. Keeps the buffers of `ring_batches` batches for reuse.
class TensorStager {
 public:
  virtual ~TensorStager() = default;
  virtual Tensor host_buffer(const Shape& shape, DType dtype) = 0;
  virtual std::vector<Tensor> upload(const std::vector<Tensor>& host) = 0;
};
using TensorStagerFactory = std::unique_ptr<TensorStager> (*)(Device device, int ring_batches);

// out_x[i] = lut[c][images[indices[i]][c][h][w]] and out_y[i] = labels[indices[i]], with images
// uint8 (N, C, H, W), labels int64 (N), indices int64 (B), lut float32 (C, 256), out_x float32
// (B, C, H, W), out_y int64 (B), all contiguous on the backend's device. The lookup table is
// SampleTransform::lookup_table(): scaling and normalising without augmentation, so the result
// equals the CPU's bit for bit.
using ResidentGatherFn = void (*)(const Tensor& images, const Tensor& labels, const Tensor& indices,
                                  const Tensor& lut, const Tensor& out_x, const Tensor& out_y);

inline KernelSlot<TensorStagerFactory> tensor_stager("tensor_stager");
inline KernelSlot<ResidentGatherFn> resident_gather("resident_gather");

}  // namespace ember::kernels
