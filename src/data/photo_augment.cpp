// ColorJitter, TrivialAugmentWide and their operations; see photo_augment.h.
//
// Written here rather than taken from a library for the reason resize() is (photo_transforms.cpp):
// the point is the pixels torchvision's augmentations give on the PIL images its users feed them,
// and those are Pillow's arithmetic — ImageEnhance's blends in float truncated to 8 bits (Blend.c),
// RGB->L with 16-bit fixed-point weights (Convert.c's L24), the float/double mix of its HSV code,
// the 3x3 SMOOTH kernel in float with the border copied (Filter.c), and the affine transform's
// 16.16 fixed-point nearest neighbour (Geometry.c). OpenCV and the tensor paths round differently.
// The file is built with -ffp-contract=off (CMakeLists.txt): an FMA would round once where Pillow
// rounds twice.
#include "ember/data/photo_augment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "ember/core/error.h"
#include "ember/core/generator.h"

namespace ember::data {
namespace {

void check_image(const Image& src, const char* what) {
  EMBER_CHECK(src.width >= 1 && src.height >= 1 && (src.channels == 1 || src.channels == 3) &&
                  src.pixels.size() == size_t(src.width * src.height * src.channels),
              ValueError, what, ": needs a non-empty 1- or 3-channel picture, got ", src.width, "x", src.height, "x",
              src.channels);
}

uint8_t clip8(float v) {
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return uint8_t(v);
}

// Pillow's Image.blend(degenerate, src, alpha) (Blend.c): in float, truncated; clipped only when
// extrapolating. degenerate(i): the degenerate picture's byte i.
template <class Degenerate>
Image blend_with(Degenerate degenerate, const Image& src, double alpha_in) {
  const float alpha = float(alpha_in);
  if (alpha == 1.0f) return src;
  Image out(src.width, src.height, src.channels);
  const bool inside = alpha >= 0.0f && alpha <= 1.0f;
  for (size_t i = 0; i < src.pixels.size(); ++i) {
    const int a = degenerate(i), b = src.pixels[i];
    const float v = float(a) + alpha * float(b - a);  // alpha 0 gives a exactly, as Blend.c's copy
    out.pixels[i] = inside ? uint8_t(v) : clip8(v);
  }
  return out;
}
Image blend(const Image& degenerate, const Image& src, double alpha) {
  return blend_with([&](size_t i) { return int(degenerate.pixels[i]); }, src, alpha);
}
Image blend(int degenerate, const Image& src, double alpha) {  // a picture of one value
  return blend_with([degenerate](size_t) { return degenerate; }, src, alpha);
}

// Pillow's RGB -> L (Convert.c, L24): ITU-R 601-2 luma in 16-bit fixed point, rounded.
uint8_t luma(const uint8_t* rgb) {
  return uint8_t((uint32_t(rgb[0]) * 19595u + uint32_t(rgb[1]) * 38470u + uint32_t(rgb[2]) * 7471u + 0x8000u) >> 16);
}

Image grey_as_src(const Image& src) {  // convert("L").convert(src.mode)
  Image out(src.width, src.height, src.channels);
  if (src.channels == 1) return src;
  for (int64_t i = 0; i < src.width * src.height; ++i) {
    const uint8_t l = luma(&src.pixels[size_t(i * 3)]);
    out.pixels[size_t(i * 3)] = out.pixels[size_t(i * 3 + 1)] = out.pixels[size_t(i * 3 + 2)] = l;
  }
  return out;
}

Image with_lut(const Image& src, const std::vector<std::array<uint8_t, 256>>& luts) {
  Image out = src;
  const int64_t c = src.channels;
  for (size_t i = 0; i < out.pixels.size(); ++i) out.pixels[i] = luts[i % size_t(c)][out.pixels[i]];
  return out;
}

std::vector<std::array<int64_t, 256>> histograms(const Image& src) {
  std::vector<std::array<int64_t, 256>> h(size_t(src.channels));
  for (auto& a : h) a.fill(0);
  for (size_t i = 0; i < src.pixels.size(); ++i) ++h[i % size_t(src.channels)][src.pixels[i]];
  return h;
}

std::array<uint8_t, 256> identity_lut() {
  std::array<uint8_t, 256> l{};
  for (int i = 0; i < 256; ++i) l[size_t(i)] = uint8_t(i);
  return l;
}

// Pillow's HSV (Convert.c rgb2hsv_row / hsv2rgb, "following colorsys.py"), its float and double
// steps kept as they are there.
void rgb_to_hsv(const uint8_t* in, uint8_t* out) {
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
  uint8_t uh = 0, us = 0;
  if (minc != maxc) {
    const float cr = float(maxc - minc);
    const float s = cr / float(maxc);
    const float rc = float(maxc - r) / cr, gc = float(maxc - g) / cr, bc = float(maxc - b) / cr;
    float h;
    if (r == maxc) h = bc - gc;
    else if (g == maxc) h = float(2.0 + rc - bc);
    else h = float(4.0 + gc - rc);
    // fmod(h / 6 + 1, 1): the sum lies in [5/6, 11/6], where subtracting 1 is fmod, exactly.
    double wrapped = h / 6.0 + 1.0;
    if (wrapped >= 1.0) wrapped -= 1.0;
    h = float(wrapped);
    uh = uint8_t(std::clamp(int(h * 255.0), 0, 255));
    us = uint8_t(std::clamp(int(s * 255.0), 0, 255));
  }
  out[0] = uh, out[1] = us, out[2] = maxc;
}

void hsv_to_rgb(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = int(std::floor(float(h) * 6.0 / 255.0));
  const float f = float(float(h) * 6.0 / 255.0 - float(i));
  const float fs = float(float(s) / 255.0);
  const auto clip = [](double x) { return uint8_t(std::clamp(int(std::round(x)), 0, 255)); };
  const uint8_t p = clip(float(v) * (1.0 - fs));
  const uint8_t q = clip(float(v) * (1.0 - fs * f));
  const uint8_t t = clip(float(v) * (1.0 - fs * (1.0 - f)));
  switch (i % 6) {
    case 0: out[0] = v, out[1] = t, out[2] = p; break;
    case 1: out[0] = q, out[1] = v, out[2] = p; break;
    case 2: out[0] = p, out[1] = v, out[2] = t; break;
    case 3: out[0] = p, out[1] = q, out[2] = v; break;
    case 4: out[0] = t, out[1] = p, out[2] = v; break;
    default: out[0] = v, out[1] = p, out[2] = q; break;
  }
}

// Pillow's ImageFilter.SMOOTH (3x3, weights 1 1 1 / 1 5 1 / 1 1 1 over 13) as Filter.c applies it:
// weights divided in float, rows summed bottom to top from a half, the border copied unchanged.
Image smooth(const Image& src) {
  if (src.width < 3 || src.height < 3) return src;
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;  // _imaging.c divides the float weights by the float scale
  const float kernel[9] = {k1, k1, k1, k1, k5, k1, k1, k1, k1};
  Image out = src;
  const int64_t c = src.channels;
  for (int64_t y = 1; y < src.height - 1; ++y) {
    const uint8_t *up = src.row(y - 1), *mid = src.row(y), *down = src.row(y + 1);
    uint8_t* o = out.row(y);
    for (int64_t x = 1; x < src.width - 1; ++x) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t i = x * c + ch;
        const auto row3 = [&](const uint8_t* r, const float* k) {
          return float(r[i - c]) * k[0] + float(r[i]) * k[1] + float(r[i + c]) * k[2];
        };
        float ss = 0.5f;
        ss += row3(down, &kernel[0]);
        ss += row3(mid, &kernel[3]);
        ss += row3(up, &kernel[6]);
        o[i] = clip8(ss);
      }
    }
  }
  return out;
}

// Python's round(x, 15): the double nearest the decimal rounded to 15 places (printf rounds the
// exact binary value, as CPython's dtoa does).
double round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

constexpr double kDegToRad = std::numbers::pi / 180.0;  // CPython's math.radians
constexpr double kRadToDeg = 180.0 / std::numbers::pi;  // math.degrees

// Pillow's FLOOR and COORD macros (Geometry.c).
int floor_int(double x) { return x < 0.0 ? int(std::floor(x)) : int(x); }
int coord(double v) { return v < 0.0 ? -1 : int(v); }

// Pillow's Image.transform(size, AFFINE, a, NEAREST, fillcolor=black) (Geometry.c,
// ImagingTransformAffine): output pixel (x, y) reads input (a0 x' + a1 y' + a2, a3 x' + a4 y' + a5)
// at its centre (x' = x + 0.5); pixels that map outside the picture stay black.
Image transform_affine(const Image& src, const std::array<double, 6>& a) {
  const int64_t w = src.width, h = src.height, c = src.channels;
  Image out(w, h, c);  // black
  const auto copy = [&](int64_t x, int64_t y, int64_t xin, int64_t yin) {
    std::copy_n(src.row(yin) + xin * c, c, out.row(y) + x * c);
  };
  if (a[1] == 0 && a[3] == 0) {  // ImagingScaleAffine: a scale and a shift
    std::vector<int64_t> xin(size_t(w), -1);
    double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
    for (int64_t x = 0; x < w; ++x, xo += a[0]) {
      const int xi = coord(xo);
      if (xi >= 0 && xi < w) xin[size_t(x)] = xi;
    }
    for (int64_t y = 0; y < h; ++y, yo += a[4]) {
      const int yi = coord(yo);
      if (yi < 0 || yi >= h) continue;
      for (int64_t x = 0; x < w; ++x)
        if (xin[size_t(x)] >= 0) copy(x, y, xin[size_t(x)], yi);
    }
    return out;
  }
  const auto fits = [&](double x, double y) {
    return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
  };
  if (fits(0, 0) && fits(double(w), double(h)) && fits(0, double(h)) && fits(double(w), 0)) {
    // affine_fixed: 16.16 fixed point, stepped per pixel and per row
    const auto fix = [](double v) { return floor_int(v * 65536.0 + 0.5); };
    const int a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
    int a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5), a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int64_t y = 0; y < h; ++y, a2 += a1, a5 += a4) {
      int xx = a2, yy = a5;
      for (int64_t x = 0; x < w; ++x, xx += a0, yy += a3) {
        const int xi = xx >> 16, yi = yy >> 16;  // arithmetic shifts: floor
        if (xi >= 0 && xi < w && yi >= 0 && yi < h) copy(x, y, xi, yi);
      }
    }
    return out;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int64_t y = 0; y < h; ++y, xo += a[1], yo += a[4]) {
    double xx = xo, yy = yo;
    for (int64_t x = 0; x < w; ++x, xx += a[0], yy += a[3]) {
      const int xi = coord(xx), yi = coord(yy);
      if (xi >= 0 && xi < w && yi >= 0 && yi < h) copy(x, y, xi, yi);
    }
  }
  return out;
}

// Pillow's transposes for rotate()'s fast paths.
Image quarter_turns(const Image& src, int turns) {  // counter-clockwise
  const int64_t w = src.width, h = src.height, c = src.channels;
  const bool swap = turns % 2 == 1;
  Image out(swap ? h : w, swap ? w : h, c);
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sx = x, sy = y;
      if (turns == 1) sx = w - 1 - y, sy = x;
      if (turns == 2) sx = w - 1 - x, sy = h - 1 - y;
      if (turns == 3) sx = y, sy = h - 1 - x;
      std::copy_n(src.row(sy) + sx * c, c, out.row(y) + x * c);
    }
  return out;
}

// torch.linspace(start, end, steps)[i] in float32 as ATen's CPU kernel computes it on AVX2 and
// AVX-512 machines (RangeFactoriesKernel.cpp: start + step * i for the first half, end - step *
// (steps - 1 - i) for the second, element by element, in a file built with -mfma, so each is one
// fused multiply-add). Built without SIMD (ATEN_CPU_CAPABILITY=default) torch rounds twice and a few
// entries differ in the last bit: 16.0 there for TranslateX's bin 15, 15.999999 here and on AVX.
double linspace_f32(float start, float end, int steps, int i) {
  const float step = (end - start) / float(steps - 1);
  return i < steps / 2 ? double(std::fma(step, float(i), start)) : double(std::fma(-step, float(steps - i - 1), end));
}

double python_mod(double a, double b) {  // Python's float %: the sign of b
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}

// Philox words of (seed, epoch, index) under a tag of this file's (0x7A TrivialAugment, 0x7B
// ColorJitter), apart from the crop's 0x7C, the flip's 0x7D and transforms.h's 0x7E.
std::array<uint32_t, 4> words(uint32_t tag, uint64_t seed, int64_t epoch, int64_t index) {
  const uint64_t i = uint64_t(index);
  return philox4x32_10({uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), tag},
                       {uint32_t(seed), uint32_t(seed >> 32)});
}
double unit53(uint32_t hi, uint32_t lo) {
  return double((uint64_t(hi) << 21) ^ (uint64_t(lo) >> 11)) * (1.0 / 9007199254740992.0);
}
int below(uint32_t hi, uint32_t lo, int n) { return int(((uint64_t(hi) << 32) | lo) % uint64_t(n)); }

}  // namespace

// ---- the operations ----------------------------------------------------------------------------

Image adjust_brightness(const Image& src, double factor) {
  check_image(src, "adjust_brightness");
  return blend(0, src, factor);
}

Image adjust_contrast(const Image& src, double factor) {
  check_image(src, "adjust_contrast");
  // ImageStat's mean of the greyscale picture, rounded half up (ImageEnhance.Contrast).
  int64_t sum = 0;
  const int64_t n = src.width * src.height;
  for (int64_t i = 0; i < n; ++i) sum += src.channels == 1 ? src.pixels[size_t(i)] : luma(&src.pixels[size_t(i * 3)]);
  const int mean = int(double(sum) / double(n) + 0.5);
  return blend(mean, src, factor);
}

Image adjust_saturation(const Image& src, double factor) {
  check_image(src, "adjust_saturation");
  return blend(grey_as_src(src), src, factor);
}

Image adjust_hue(const Image& src, double hue_factor) {
  check_image(src, "adjust_hue");
  EMBER_CHECK(hue_factor >= -0.5 && hue_factor <= 0.5, ValueError, "adjust_hue: the hue factor must be in [-0.5, 0.5], got ",
              hue_factor);
  if (src.channels == 1) return src;
  // np.int32(hue_factor * 255).astype(np.uint8): truncated toward zero, then wrapped.
  const uint8_t shift = uint8_t(int32_t(hue_factor * 255.0));
  Image out(src.width, src.height, 3);
  for (size_t i = 0; i < src.pixels.size(); i += 3) {
    uint8_t hsv[3];
    rgb_to_hsv(&src.pixels[i], hsv);
    hsv[0] = uint8_t(hsv[0] + shift);
    hsv_to_rgb(hsv, &out.pixels[i]);
  }
  return out;
}

Image adjust_sharpness(const Image& src, double factor) {
  check_image(src, "adjust_sharpness");
  return blend(smooth(src), src, factor);
}

Image posterize(const Image& src, int bits) {
  check_image(src, "posterize");
  EMBER_CHECK(bits >= 1 && bits <= 8, ValueError, "posterize: bits must be 1..8, got ", bits);
  std::array<uint8_t, 256> lut{};
  const int mask = ~((1 << (8 - bits)) - 1);
  for (int i = 0; i < 256; ++i) lut[size_t(i)] = uint8_t(i & mask);
  return with_lut(src, std::vector<std::array<uint8_t, 256>>(size_t(src.channels), lut));
}

Image solarize(const Image& src, double threshold) {
  check_image(src, "solarize");
  std::array<uint8_t, 256> lut{};
  for (int i = 0; i < 256; ++i) lut[size_t(i)] = uint8_t(double(i) < threshold ? i : 255 - i);
  return with_lut(src, std::vector<std::array<uint8_t, 256>>(size_t(src.channels), lut));
}

Image autocontrast(const Image& src) {
  check_image(src, "autocontrast");
  std::vector<std::array<uint8_t, 256>> luts;
  for (const auto& h : histograms(src)) {
    int lo = 0, hi = 255;
    while (lo < 255 && h[size_t(lo)] == 0) ++lo;
    while (hi > 0 && h[size_t(hi)] == 0) --hi;
    if (hi <= lo) {
      luts.push_back(identity_lut());
      continue;
    }
    const double scale = 255.0 / double(hi - lo), offset = -double(lo) * scale;
    std::array<uint8_t, 256> lut{};
    for (int i = 0; i < 256; ++i) lut[size_t(i)] = uint8_t(std::clamp(int(double(i) * scale + offset), 0, 255));
    luts.push_back(lut);
  }
  return with_lut(src, luts);
}

Image equalize(const Image& src) {
  check_image(src, "equalize");
  std::vector<std::array<uint8_t, 256>> luts;
  for (const auto& h : histograms(src)) {
    int64_t used = 0, total = 0, last = 0;
    for (int64_t v : h)
      if (v != 0) ++used, total += v, last = v;
    const int64_t step = used <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      luts.push_back(identity_lut());
      continue;
    }
    std::array<uint8_t, 256> lut{};
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      lut[size_t(i)] = uint8_t(std::min<int64_t>(n / step, 255));
      n += h[size_t(i)];
    }
    luts.push_back(lut);
  }
  return with_lut(src, luts);
}

Image affine(const Image& src, double angle, std::array<double, 2> translate, double scale, std::array<double, 2> shear,
             std::optional<std::array<double, 2>> center) {
  check_image(src, "affine");
  EMBER_CHECK(scale > 0, ValueError, "affine: the scale must be positive, got ", scale);
  const auto [cx, cy] = center.value_or(std::array<double, 2>{double(src.width) * 0.5, double(src.height) * 0.5});
  const auto [tx, ty] = translate;
  // torchvision's _get_inverse_affine_matrix, term by term.
  const double rot = angle * kDegToRad, sx = shear[0] * kDegToRad, sy = shear[1] * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return transform_affine(src, m);
}

Image rotate(const Image& src, double angle_in) {
  check_image(src, "rotate");
  const double angle = python_mod(angle_in, 360.0);
  if (angle == 0) return src;
  if (angle == 180) return quarter_turns(src, 2);
  if ((angle == 90 || angle == 270) && src.width == src.height) return quarter_turns(src, angle == 90 ? 1 : 3);
  const double cx = double(src.width) / 2.0, cy = double(src.height) / 2.0;
  const double r = -(angle * kDegToRad);
  std::array<double, 6> m{round15(std::cos(r)), round15(std::sin(r)), 0.0, round15(-std::sin(r)), round15(std::cos(r)), 0.0};
  const double x = -cx - 0.0, y = -cy - 0.0;
  const double m2 = m[0] * x + m[1] * y + m[2], m5 = m[3] * x + m[4] * y + m[5];
  m[2] = m2 + cx;
  m[5] = m5 + cy;
  return transform_affine(src, m);
}

// ---- ColorJitter -------------------------------------------------------------------------------

std::string ColorJitter::describe() const {
  return fmt::format("ColorJitter({:g}, {:g}, {:g}, {:g})", brightness, contrast, saturation, hue);
}

ColorJitter parse_color_jitter(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return ValueError(fmt::format("--color-jitter '{}': {}", text, why),
                      "give B, B,C,S or B,C,S,H: brightness, contrast and saturation >= 0 (0.4 is torchvision's "
                      "common choice), hue in [0, 0.5]; e.g. --color-jitter 0.4 or --color-jitter 0.4,0.4,0.4,0.1");
  };
  std::vector<double> v;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    char* end = nullptr;
    const double x = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(x)) throw bad("'" + part + "' is not a number");
    if (x < 0) throw bad("the factors cannot be negative");
    v.push_back(x);
  }
  if (v.size() != 1 && v.size() != 3 && v.size() != 4) throw bad(fmt::format("{} values", v.size()));
  ColorJitter j;
  j.brightness = v[0];
  j.contrast = v.size() > 1 ? v[1] : v[0];
  j.saturation = v.size() > 1 ? v[2] : v[0];
  j.hue = v.size() == 4 ? v[3] : 0.0;
  if (j.hue > 0.5) throw bad("the hue cannot exceed 0.5");
  return j;
}

ColorJitterDraw draw_color_jitter(const ColorJitter& j, uint64_t seed, int64_t epoch, int64_t index) {
  const auto order = words(0x7B000000u, seed, epoch, index);
  const auto f1 = words(0x7B000001u, seed, epoch, index);
  const auto f2 = words(0x7B000002u, seed, epoch, index);
  ColorJitterDraw d;
  // torch.randperm(4): a uniform permutation (Fisher-Yates).
  for (int k = 3; k > 0; --k)
    std::swap(d.order[size_t(k)], d.order[size_t(below(order[size_t(k)], order[size_t(k - 1)], k + 1))]);
  const auto factor = [](double b, double u) { const double lo = std::max(0.0, 1.0 - b); return lo + u * (1.0 + b - lo); };
  d.brightness = factor(j.brightness, unit53(f1[0], f1[1]));
  d.contrast = factor(j.contrast, unit53(f1[2], f1[3]));
  d.saturation = factor(j.saturation, unit53(f2[0], f2[1]));
  d.hue = -j.hue + unit53(f2[2], f2[3]) * 2.0 * j.hue;
  return d;
}

Image apply_color_jitter(const Image& src, const ColorJitter& j, const ColorJitterDraw& d) {
  Image out = src;
  for (int op : d.order) {
    if (op == 0 && j.brightness > 0) out = adjust_brightness(out, d.brightness);
    if (op == 1 && j.contrast > 0) out = adjust_contrast(out, d.contrast);
    if (op == 2 && j.saturation > 0) out = adjust_saturation(out, d.saturation);
    if (op == 3 && j.hue > 0) out = adjust_hue(out, d.hue);
  }
  return out;
}

// ---- TrivialAugmentWide ------------------------------------------------------------------------

const char* trivial_op_name(TrivialOp op) {
  static const char* names[kTrivialOps] = {"Identity", "ShearX",  "ShearY",    "TranslateX", "TranslateY",
                                           "Rotate",   "Brightness", "Color",  "Contrast",   "Sharpness",
                                           "Posterize", "Solarize", "AutoContrast", "Equalize"};
  return names[int(op)];
}

bool trivial_signed(TrivialOp op) {
  switch (op) {
    case TrivialOp::ShearX: case TrivialOp::ShearY: case TrivialOp::TranslateX: case TrivialOp::TranslateY:
    case TrivialOp::Rotate: case TrivialOp::Brightness: case TrivialOp::Color: case TrivialOp::Contrast:
    case TrivialOp::Sharpness:
      return true;
    default:
      return false;
  }
}

double trivial_magnitude(TrivialOp op, int bin) {
  EMBER_CHECK(bin >= 0 && bin < kTrivialBins, ValueError, "trivial_magnitude: bin ", bin, " is outside [0, ", kTrivialBins, ")");
  switch (op) {
    case TrivialOp::ShearX: case TrivialOp::ShearY: case TrivialOp::Brightness: case TrivialOp::Color:
    case TrivialOp::Contrast: case TrivialOp::Sharpness:
      return linspace_f32(0.0f, 0.99f, kTrivialBins, bin);
    case TrivialOp::TranslateX: case TrivialOp::TranslateY: return linspace_f32(0.0f, 32.0f, kTrivialBins, bin);
    case TrivialOp::Rotate: return linspace_f32(0.0f, 135.0f, kTrivialBins, bin);
    // (8 - (arange(31) / ((31 - 1) / 6))).round().int(): float32, rounded half to even
    case TrivialOp::Posterize: return std::nearbyint(8.0f - float(bin) / float((kTrivialBins - 1) / 6.0));
    case TrivialOp::Solarize: return linspace_f32(1.0f, 0.0f, kTrivialBins, bin);
    default: return 0.0;
  }
}

TrivialDraw draw_trivial_augment(uint64_t seed, int64_t epoch, int64_t index) {
  const auto w = words(0x7A000000u, seed, epoch, index);
  TrivialDraw d;
  d.op = TrivialOp(below(w[0], w[1], kTrivialOps));
  d.magnitude = trivial_magnitude(d.op, below(w[2], w[1] ^ 0x9E3779B9u, kTrivialBins));
  // torch.rand(()) <= 0.5: negated half the time
  if (trivial_signed(d.op) && (w[3] & 1u)) d.magnitude = -d.magnitude;
  return d;
}

Image apply_trivial_augment(const Image& src, const TrivialDraw& d) {
  const double m = d.magnitude;
  switch (d.op) {
    case TrivialOp::Identity: return src;
    case TrivialOp::ShearX: return affine(src, 0.0, {0, 0}, 1.0, {std::atan(m) * kRadToDeg, 0.0}, std::array<double, 2>{0, 0});
    case TrivialOp::ShearY: return affine(src, 0.0, {0, 0}, 1.0, {0.0, std::atan(m) * kRadToDeg}, std::array<double, 2>{0, 0});
    case TrivialOp::TranslateX: return affine(src, 0.0, {std::trunc(m), 0}, 1.0, {0.0, 0.0});
    case TrivialOp::TranslateY: return affine(src, 0.0, {0, std::trunc(m)}, 1.0, {0.0, 0.0});
    case TrivialOp::Rotate: return rotate(src, m);
    case TrivialOp::Brightness: return adjust_brightness(src, 1.0 + m);
    case TrivialOp::Color: return adjust_saturation(src, 1.0 + m);
    case TrivialOp::Contrast: return adjust_contrast(src, 1.0 + m);
    case TrivialOp::Sharpness: return adjust_sharpness(src, 1.0 + m);
    case TrivialOp::Posterize: return posterize(src, int(m));
    case TrivialOp::Solarize: return solarize(src, 255.0 * m);
    case TrivialOp::AutoContrast: return autocontrast(src);
    case TrivialOp::Equalize: return equalize(src);
  }
  return src;
}

}  // namespace ember::data
