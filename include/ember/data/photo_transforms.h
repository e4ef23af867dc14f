// Transforms on decoded photographs with torchvision's semantics (transforms.v2 on PIL images),
// each tested against torchvision on the same input (tests/unit/test_data_photo_transforms.cpp):
//
//   resize()               Resize((h, w)) with antialias: Pillow's bilinear resampling, bit for bit
//                          (the filter widened by the scale factor when shrinking, fixed-point
//                          coefficients of 22 fraction bits, the horizontal pass first, each pass
//                          rounded to 8 bits)
//   shorter_side_size()    the size Resize(int) asks for: the shorter side to `size`, the longer
//                          int(size * long / short), both capped by max_size
//   center_crop()          CenterCrop: top = round((H - h) / 2) with Python's round-half-even,
//                          zero padding where the crop is larger than the image
//   random_resized_crop_box() RandomResizedCrop's box: ten tries of an area in scale x H x W and a
//                          log-uniform aspect ratio, then the centre fallback, as get_params draws
//   resize(src, h, w, box) resized_crop: the box cut out first, then resized (a box reads no
//                          pixel outside itself, as torchvision's crop-then-resize does)
//   hflip()                RandomHorizontalFlip's flip
//   to_planes()            ToImage + ToDtype(float32, scale=True) + Normalize: (v / 255 - mean) / std
//                          in float32, written as (C, H, W) planes
//
// The random draws are stateless, from (seed, epoch, index) through Philox as transforms.h's are,
// so a resumed run or another worker count sees the same crops.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <filesystem>

#include "ember/data/image.h"

namespace ember::data {

struct Box {
  int64_t top = 0, left = 0, height = 0, width = 0;
  bool operator==(const Box&) const = default;
};

// (height, width) of Resize(size) on an image of height x width: the shorter side becomes `size`,
// the longer int(size * long / short); with max_size > 0 the longer side is capped at max_size
// and the shorter scaled down to int(max_size * short / long), as torchvision does.
std::pair<int64_t, int64_t> shorter_side_size(int64_t height, int64_t width, int64_t size, int64_t max_size = 0);

// Pillow's antialiased bilinear resize of `box` of `src` (the whole image when box is empty) to
// out_height x out_width. Throws ValueError for an empty image, a box outside it or a size < 1.
Image resize(const Image& src, int64_t out_height, int64_t out_width, Box box = {});

// torchvision's CenterCrop to out_height x out_width.
Image center_crop(const Image& src, int64_t out_height, int64_t out_width);

// The image mirrored left to right.
Image hflip(const Image& src);

// RandomResizedCrop.get_params for an image of height x width, drawn from (seed, epoch, index).
// scale: area fraction range, ratio: width / height range (torchvision's defaults (0.08, 1) and
// (3/4, 4/3)).
Box random_resized_crop_box(int64_t height, int64_t width, uint64_t seed, int64_t epoch, int64_t index,
                            std::array<double, 2> scale = {0.08, 1.0},
                            std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});

// The evaluation recipe of torchvision's classification weights for a crop of `crop` pixels:
// Resize(resize_for_crop(crop)) then CenterCrop(crop); resize_for_crop(224) = 256.
int64_t resize_for_crop(int64_t crop);
Image eval_resize_crop(const Image& src, int64_t crop);

// ImageNet's statistics, torchvision's Normalize defaults for its pretrained weights.
inline const std::vector<float> kImageNetMean{0.485f, 0.456f, 0.406f};
inline const std::vector<float> kImageNetStd{0.229f, 0.224f, 0.225f};

// (v / 255 - mean[c]) / std[c] in float32 for every pixel, as (C, H, W) planes into dst
// (channels * height * width floats). mean/std: one per channel.
void to_planes(const Image& src, const std::vector<float>& mean, const std::vector<float>& std, float* dst);

// A picture file decoded to RGB by decode_image (decode.h: the pixels of Pillow's convert("RGB"),
// the EXIF orientation applied), its header checked against the pixel budget (--max-image-pixels;
// 0: none) before any pixel is decoded. Throws IOError (unreadable file) or DataError (not a picture, truncated, over budget).
Image read_rgb_image(const std::filesystem::path& file, int64_t max_pixels);

}  // namespace ember::data
