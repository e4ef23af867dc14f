// Decoded pictures as the photo pipeline passes them between its stages: 8-bit samples,
// interleaved (height, width, channels) rows, as Pillow's and libjpeg-turbo's buffers are, so a
// decoder writes into one and a transform reads it without a reorder.
//
// decode_image() (src/data/decode.cpp) fills one from a file's bytes; the transforms of
// photo_transforms.h (Resize, CenterCrop, RandomResizedCrop, ...) take one and give another; the
// last step writes the float (C, H, W) planes a batch holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::data {

struct Image {
  int64_t width = 0, height = 0, channels = 0;  // channels: 1 (grey) or 3 (RGB)
  std::vector<uint8_t> pixels;                  // height * width * channels, row-major, interleaved

  Image() = default;
  Image(int64_t w, int64_t h, int64_t c) : width(w), height(h), channels(c), pixels(size_t(w * h * c)) {}
  bool empty() const { return pixels.empty(); }
  uint8_t* row(int64_t y) { return pixels.data() + size_t(y * width * channels); }
  const uint8_t* row(int64_t y) const { return pixels.data() + size_t(y * width * channels); }
};

}  // namespace ember::data
