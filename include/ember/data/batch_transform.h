// A SampleTransform (transforms.h) run over selected rows of a uint8 image batch in one call: what
// ember.vision.transforms.batch_plan's run() does for the DataLoader. Each sample is one fused pass
// (channels-last rows transposed to planes first), its random choices drawn statelessly from
// (seed, epoch, index), so the output is the same whatever the thread count.
#pragma once

#include <cstdint>

#include "ember/data/transforms.h"

namespace ember::data {

// The batch the rows come from: n images of channels x height x width uint8 pixels, stored
// (n, height, width, channels) when channels_last, else (n, channels, height, width).
struct ImageBatch {
  const uint8_t* pixels = nullptr;
  int64_t n = 0, channels = 0, height = 0, width = 0;
  bool channels_last = true;
};

// out[b] = transform(images[indices[b]]) with the parameters draw_sample_params(seed, epoch,
// indices[b]) for b in [0, count): float32 (count, C, H, W) into out_float, or, when out_uint8 is
// given instead, the same values (which must be whole numbers: a transform without scale or
// normalise) as uint8. The transform's geometry must equal the batch's. Spread over `threads`
// std::threads (at most one per sample; 1 runs on this thread). Throws ValueError for an index
// outside [0, n), a geometry that differs or no output.
void transform_rows(const SampleTransform& transform, const ImageBatch& images, const int64_t* indices,
                    int64_t count, uint64_t seed, int64_t epoch, int threads, float* out_float,
                    uint8_t* out_uint8 = nullptr);

}  // namespace ember::data
