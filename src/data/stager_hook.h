// How a device backend provides its BatchStager without src/data including its headers: the
// backend registers a factory for its device type while it registers its kernels
// (ensure_backends()), and make_batch_stager() uses it when present.
#pragma once

#include <memory>

#include "ember/data/loader.h"

namespace ember::data::detail {

// ring_batches: how many batches' buffers the stager should keep for reuse (the loader passes
// prefetch + 2: the batches assembled ahead, the one being copied and the one the consumer holds).
using BatchStagerFactory = std::unique_ptr<BatchStager> (*)(Device device, int ring_batches);
void set_batch_stager_factory(DeviceType type, BatchStagerFactory factory);

// The device-resident batch kernel of a backend: out_x[i] = lut[c][images[indices[i]][c][h][w]]
// and out_y[i] = labels[indices[i]], with images uint8 (N, C, H, W), labels int64 (N), indices
// int64 (B), lut float32 (C, 256), out_x float32 (B, C, H, W), out_y int64 (B), all contiguous
// on the backend's device. The lookup table is SampleTransform::lookup_table(): scaling and
// normalising without augmentation, so the result equals the CPU's bit for bit.
using ResidentGatherFn = void (*)(const Tensor& images, const Tensor& labels, const Tensor& indices,
                                  const Tensor& lut, const Tensor& out_x, const Tensor& out_y);
void set_resident_gather(DeviceType type, ResidentGatherFn fn);

}  // namespace ember::data::detail
