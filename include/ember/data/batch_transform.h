// A SampleTransform (transforms.h) run over selected rows of a uint8 image batch in one call: what
// ember.vision.transforms.batch_plan's run() does for the DataLoader. Each sample is one fused pass
// (channels-last rows read in place), its random choices drawn statelessly from
// (seed, epoch, index), so the output is the same whatever the thread count.
#pragma once

#include <array>
#include <cstdint>
#include <string>

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
  // Resize(int) on images of any size (transform_files): the shorter side to resize_shorter, the
  // longer int(resize_shorter * long / short), capped by resize_max_size when > 0
  // (shorter_side_size); an image already that size is left untouched, as torchvision does.
  // Used instead of resize_height/resize_width when > 0.
  int64_t resize_shorter = 0, resize_max_size = 0;
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

// transform_rows over picture files (what the DataLoader does for ImageFolder): out[b] =
// transform(photo(decode(paths[b]))) for b in [0, count), float32 (count, C, H, W) into out_float,
// where indices[b] is the sample's index in its dataset (the random draws come from (seed, epoch,
// indices[b])). Each file is decoded by decode_image (decode.h) to RGB as Pillow's
// Image.open(f).convert("RGB") gives it, without EXIF rotation (torchvision's ImageFolder applies
// none), under Pillow's pixel budget (kMaxImagePixels), at full size (no DCT scaling: the Python
// path's PIL decodes whole); then `photo`, which must end in the transform's fixed size
// (RandomResizedCrop, Resize((h, w)), or a Resize followed by CenterCrop). The transform must have 3
// channels. Throws ValueError for a plan that does not end in its size; IOError (unreadable file) or
// DataError (not a picture, truncated, over the budget) naming the file — of the lowest position b
// that failed, whatever the thread count — after every thread has stopped.
void transform_files(const SampleTransform& transform, const PhotoSteps& photo, const std::string* paths,
                     const int64_t* indices, int64_t count, uint64_t seed, int64_t epoch, int threads,
                     float* out_float);

}  // namespace ember::data
