// A SampleTransform (transforms.h) run over selected rows of a uint8 image batch in one call: what
// ember.vision.transforms.batch_plan's run() does for the DataLoader. Each sample is one fused pass
// (channels-last rows transposed to planes first), its random choices drawn statelessly from
// (seed, epoch, index), so the output is the same whatever the thread count.
#pragma once

#include <array>
#include <cstdint>

#include "ember/data/photo_transforms.h"
#include "ember/data/transforms.h"

namespace ember::data {

// The photo steps before the per-sample pass, on the channels-last rows as Pillow would run them on
// the PIL image (photo_transforms.h: Pillow's bilinear resize bit for bit): Resize to
// (resize_height, resize_width) when resize_height > 0, then CenterCrop to (crop_height,
// crop_width) when crop_height > 0; or, with random_resized_crop, RandomResizedCrop's box
// (random_resized_crop_box from (seed, epoch, index), scale and ratio) resized to (out_height,
// out_width). The SampleTransform then runs on the result, whose size it must have.
struct PhotoSteps {
  int64_t resize_height = 0, resize_width = 0;
  int64_t crop_height = 0, crop_width = 0;
  bool random_resized_crop = false;
  int64_t out_height = 0, out_width = 0;
  std::array<double, 2> scale{0.08, 1.0}, ratio{3.0 / 4.0, 4.0 / 3.0};
};

// The photo steps on one (height, width, channels) row: the image the per-sample pass receives, and
// the crop box used (RandomResizedCrop's; the whole image otherwise).
Image apply_photo_steps(const PhotoSteps& steps, const Image& src, uint64_t seed, int64_t epoch, int64_t index,
                        Box* box = nullptr);

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
// outside [0, n), a geometry that differs or no output. With photo steps (channels-last rows
// only), each row goes through apply_photo_steps first and the transform is for their output size.
void transform_rows(const SampleTransform& transform, const ImageBatch& images, const int64_t* indices,
                    int64_t count, uint64_t seed, int64_t epoch, int threads, float* out_float,
                    uint8_t* out_uint8 = nullptr, const PhotoSteps* photo = nullptr);

}  // namespace ember::data
