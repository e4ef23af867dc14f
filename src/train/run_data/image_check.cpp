// Compares an image given to `ember predict` with the dataset the model was trained on: background
// (border) brightness, overall brightness and colour, so a mismatched input is named instead of
// silently classified.
#include "ember/train/image_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ember::train {

ImageLook look_of(const Tensor& images_u8) {
  const Tensor t = images_u8.contiguous();
  const int64_t n = t.size(0), c = t.size(1), h = t.size(2), w = t.size(3);
  // The ring is 1/14 of the side (2 pixels of a 28x28 image), at least one pixel.
  const int64_t ring = std::max<int64_t>(1, std::min(h, w) / 14);
  const uint8_t* p = t.data_ptr<uint8_t>();
  double all = 0, border = 0;
  int64_t n_border = 0;
  for (int64_t i = 0; i < n * c; ++i, p += h * w)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const double v = p[y * w + x];
        all += v;
        if (y < ring || y >= h - ring || x < ring || x >= w - ring) border += v, ++n_border;
      }
  return {all / double(std::max<int64_t>(1, n * c * h * w)), border / double(std::max<int64_t>(1, n_border))};
}

bool has_colour(const Tensor& rgb_u8) {
  const Tensor t = rgb_u8.contiguous();
  const int64_t hw = t.size(2) * t.size(3);
  const uint8_t* r = t.data_ptr<uint8_t>();
  const uint8_t *g = r + hw, *b = g + hw;
  double spread = 0;
  for (int64_t i = 0; i < hw; ++i)
    spread += std::max({std::abs(r[i] - g[i]), std::abs(g[i] - b[i]), std::abs(r[i] - b[i])});
  // JPEG chroma noise on a grey picture stays within a few levels; a colour photo averages tens.
  return spread / double(std::max<int64_t>(1, hw)) > 16.0;
}

void invert_u8(Tensor& images_u8) {
  uint8_t* p = images_u8.data_ptr<uint8_t>();
  for (int64_t i = 0, n = images_u8.numel(); i < n; ++i) p[i] = uint8_t(255 - p[i]);
}

std::string unlike_training_data(const Tensor& image_u8, const ImageLook& want, int64_t channels,
                                 const std::string& name, bool colour, bool inverted) {
  const ImageLook got = look_of(image_u8);
  std::vector<std::string> why;
  // 80 of 255 levels: far beyond the spread between one dataset's images' backgrounds (Fashion-MNIST
  // and MNIST borders average under 5; CIFAR's photos vary, hence the wide margin).
  const double diff = std::abs(got.border - want.border);
  const bool background_off = diff > 80;
  const bool invert_helps = std::abs((255 - got.border) - want.border) < diff;
  if (background_off)
    why.push_back(fmt::format("its background is {} (border mean {:.0f} of 255) where {}'s is {} ({:.0f})",
                              got.border > want.border ? "light" : "dark", got.border, name,
                              want.border > got.border ? "light" : "dark", want.border));
  if (colour && channels == 1)
    why.push_back(fmt::format("it is a colour image and {} is greyscale (it was converted to grey)", name));
  if (why.empty()) return "";
  std::string s = "looks unlike the images the model was trained on: " + why[0];
  for (size_t i = 1; i < why.size(); ++i) s += "; " + why[i];
  s += "; the prediction is likely wrong";
  if (background_off && invert_helps)
    s += inverted ? " (it was inverted with --invert: try without it)"
                  : fmt::format(" (try --invert: {}'s images have {} backgrounds)", name,
                                want.border < 128 ? "dark" : "light");
  return s;
}

}  // namespace ember::train
