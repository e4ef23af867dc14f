// Photo augmentations with torchvision's semantics on PIL images (transforms.v2): ColorJitter and
// TrivialAugmentWide, and the operations they are made of, each tested against torchvision on the
// same input (tests/unit/test_data_photo_augment.cpp, tests/golden/make_golden_augment.py):
//
//   adjust_brightness/contrast/saturation()  Pillow's ImageEnhance: a blend of the picture with a
//                          black one / its mean grey / its greyscale, in float, truncated to 8 bits
//   adjust_hue()           torchvision's PIL path: to Pillow's HSV, the hue byte shifted (wrapping),
//                          back to RGB
//   adjust_sharpness()     ImageEnhance.Sharpness: a blend with Pillow's 3x3 SMOOTH filter
//   posterize(), solarize(), autocontrast(), equalize()   ImageOps' lookup tables
//   affine(), rotate()     torchvision's inverse affine matrix through Pillow's nearest-neighbour
//                          transform (16.16 fixed point), black outside the picture
//
// ColorJitter draws the order of its four operations and their factors, TrivialAugmentWide one
// operation and a magnitude bin (and a sign), statelessly from (seed, epoch, index) through Philox,
// as the crop and the flip are (photo_transforms.h), so resumed runs and any worker count see the
// same pictures. The draws follow torchvision's distributions; they are not torch's random stream.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ember/data/image.h"

namespace ember::data {

// ---- the operations (1- or 3-channel pictures) -----------------------------------------------
Image adjust_brightness(const Image& src, double factor);   // 0: black, 1: unchanged
Image adjust_contrast(const Image& src, double factor);     // 0: the mean grey, 1: unchanged
Image adjust_saturation(const Image& src, double factor);   // 0: greyscale, 1: unchanged
Image adjust_hue(const Image& src, double hue_factor);      // in [-0.5, 0.5]; grey pictures unchanged
Image adjust_sharpness(const Image& src, double factor);    // 0: smoothed, 1: unchanged, 2: sharpened
Image posterize(const Image& src, int bits);                // keep the top `bits` (1..8) of each sample
Image solarize(const Image& src, double threshold);         // samples >= threshold inverted
Image autocontrast(const Image& src);                       // each channel stretched to 0..255
Image equalize(const Image& src);                           // each channel's histogram equalised

// torchvision's F.affine on a PIL image with nearest-neighbour sampling and black fill: rotation
// `angle` (degrees, counter-clockwise), translation in pixels, scale, shear (degrees, x and y),
// about `center` (default the picture's centre, (width / 2, height / 2)).
Image affine(const Image& src, double angle, std::array<double, 2> translate, double scale,
             std::array<double, 2> shear, std::optional<std::array<double, 2>> center = std::nullopt);
// F.rotate (PIL's Image.rotate, expand=False): counter-clockwise by `angle` degrees, nearest, black fill.
Image rotate(const Image& src, double angle);

// ---- ColorJitter -----------------------------------------------------------------------------
// torchvision's ColorJitter(brightness, contrast, saturation, hue): factors drawn uniformly from
// [max(0, 1 - b), 1 + b] (the same for contrast and saturation) and the hue shift from [-h, h]
// (h <= 0.5); a zero leaves that operation out.
struct ColorJitter {
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;
  bool any() const { return brightness > 0 || contrast > 0 || saturation > 0 || hue > 0; }
  std::string describe() const;  // "ColorJitter(0.4, 0.4, 0.4, 0.1)"
};
// "B", "B,C,S" or "B,C,S,H" (`--color-jitter`): ValueError naming the form and the bounds.
ColorJitter parse_color_jitter(const std::string& text);

struct ColorJitterDraw {
  std::array<int, 4> order{0, 1, 2, 3};  // 0 brightness, 1 contrast, 2 saturation, 3 hue
  double brightness = 1, contrast = 1, saturation = 1, hue = 0;
};
ColorJitterDraw draw_color_jitter(const ColorJitter& jitter, uint64_t seed, int64_t epoch, int64_t index);
Image apply_color_jitter(const Image& src, const ColorJitter& jitter, const ColorJitterDraw& draw);

// ---- TrivialAugmentWide ----------------------------------------------------------------------
// The 14 operations in torchvision's order; one is drawn uniformly per sample.
enum class TrivialOp {
  Identity, ShearX, ShearY, TranslateX, TranslateY, Rotate, Brightness, Color, Contrast, Sharpness,
  Posterize, Solarize, AutoContrast, Equalize
};
inline constexpr int kTrivialOps = 14;
inline constexpr int kTrivialBins = 31;  // torchvision's num_magnitude_bins
const char* trivial_op_name(TrivialOp op);

// The magnitude of `bin` (0..30) as torchvision's tables hold it (float32 linspace values, read
// back as double): shear and the enhancements 0..0.99, translation 0..32 pixels, rotation 0..135
// degrees, posterize 8..2 bits, solarize 1..0 (times 255 when applied); 0 for the others.
double trivial_magnitude(TrivialOp op, int bin);
bool trivial_signed(TrivialOp op);  // shear, translate, rotate and the enhancements: negated half the time

struct TrivialDraw {
  TrivialOp op = TrivialOp::Identity;
  double magnitude = 0;  // signed
};
TrivialDraw draw_trivial_augment(uint64_t seed, int64_t epoch, int64_t index);
Image apply_trivial_augment(const Image& src, const TrivialDraw& draw);

}  // namespace ember::data
