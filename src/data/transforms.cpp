// Per-sample transforms: Philox-derived random choices and the fused uint8 -> float gather
// (crop + flip + scale + normalise through a per-channel lookup table), then random erasing.
#include "ember/data/transforms.h"

#include <algorithm>
#include <cmath>

#include "ember/core/error.h"
#include "ember/core/generator.h"

namespace ember::data {
namespace {

constexpr uint32_t kAugmentTag = 0x7E000000u;
constexpr int kEraseAttempts = 10;

std::array<uint32_t, 4> block(uint64_t seed, int64_t epoch, int64_t index, uint32_t b) {
  const uint64_t i = uint64_t(index);
  return philox4x32_10({uint32_t(i), uint32_t(i >> 32), uint32_t(uint64_t(epoch)), kAugmentTag | b},
                       {uint32_t(seed), uint32_t(seed >> 32)});
}
double unit(uint32_t w) { return double(w >> 8) * (1.0 / 16777216.0); }
// True with probability p (exact for p = 0 and p = 1).
bool bernoulli(uint32_t w, double p) {
  if (p <= 0) return false;
  if (p >= 1) return true;
  return double(w) < p * 4294967296.0;
}

// Reflect without repeating the edge (numpy "reflect", torch "reflect"): -1 -> 1, n -> n - 2.
// Valid for -n < i < 2n - 1, which padding < n guarantees.
inline int64_t reflect(int64_t i, int64_t n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

}  // namespace

SampleParams draw_sample_params(const TransformOptions& opt, uint64_t seed, int64_t epoch, int64_t index,
                                int64_t height, int64_t width) {
  SampleParams p;
  const bool any = opt.crop_padding > 0 || opt.hflip_p > 0 || opt.erase_p > 0;
  if (!any) return p;
  const auto w = block(seed, epoch, index, 0);
  if (opt.crop_padding > 0) {
    const uint32_t span = uint32_t(2 * opt.crop_padding + 1);
    p.crop_dy = w[0] % span;
    p.crop_dx = w[1] % span;
  } else {
    p.crop_dy = p.crop_dx = 0;
  }
  p.flip = bernoulli(w[2], opt.hflip_p);
  if (bernoulli(w[3], opt.erase_p)) {
    const double area = double(height * width);
    const double log_lo = std::log(opt.erase_ratio[0]), log_hi = std::log(opt.erase_ratio[1]);
    for (int a = 1; a <= kEraseAttempts; ++a) {
      const auto e = block(seed, epoch, index, uint32_t(a));
      const double target = area * (opt.erase_scale[0] + unit(e[0]) * (opt.erase_scale[1] - opt.erase_scale[0]));
      const double ratio = std::exp(log_lo + unit(e[1]) * (log_hi - log_lo));
      const int64_t h = std::llround(std::sqrt(target * ratio));
      const int64_t wd = std::llround(std::sqrt(target / ratio));
      // torchvision's RandomErasing.get_params takes a rectangle only when h < H and w < W.
      if (h < 1 || wd < 1 || h >= height || wd >= width) continue;
      p.erase = true;
      p.erase_h = h;
      p.erase_w = wd;
      p.erase_top = e[2] % uint32_t(height - h + 1);
      p.erase_left = e[3] % uint32_t(width - wd + 1);
      break;
    }
  }
  // The crop offset is relative to the padded image: subtracting the padding later makes
  // dy = pad the identity crop.
  return p;
}

SampleTransform::SampleTransform(TransformOptions opt, int64_t channels, int64_t height, int64_t width,
                                 const std::vector<float>& dataset_mean, const std::vector<float>& dataset_std)
    : opt_(std::move(opt)), c_(channels), h_(height), w_(width) {
  EMBER_CHECK(c_ >= 1 && h_ >= 1 && w_ >= 1, ValueError, "transforms: bad image size (C, H, W) = (", c_,
              ", ", h_, ", ", w_, ")");
  EMBER_CHECK(opt_.crop_padding >= 0, ValueError, "transforms: crop_padding must be >= 0, got ",
              opt_.crop_padding);
  EMBER_CHECK(opt_.pad_mode != PadMode::Reflect || (opt_.crop_padding < h_ && opt_.crop_padding < w_),
              ValueError, "transforms: reflect padding ", opt_.crop_padding, " must be smaller than the image (",
              h_, " x ", w_, ")");
  EMBER_CHECK(opt_.hflip_p >= 0 && opt_.hflip_p <= 1, ValueError, "transforms: hflip_p must be in [0, 1], got ",
              opt_.hflip_p);
  EMBER_CHECK(opt_.erase_p >= 0 && opt_.erase_p <= 1, ValueError, "transforms: erase_p must be in [0, 1], got ",
              opt_.erase_p);
  EMBER_CHECK(opt_.erase_scale[0] > 0 && opt_.erase_scale[0] <= opt_.erase_scale[1] && opt_.erase_scale[1] <= 1,
              ValueError, "transforms: erase_scale must satisfy 0 < lo <= hi <= 1");
  EMBER_CHECK(opt_.erase_ratio[0] > 0 && opt_.erase_ratio[0] <= opt_.erase_ratio[1], ValueError,
              "transforms: erase_ratio must satisfy 0 < lo <= hi");

  std::vector<float> mean = opt_.mean.empty() ? dataset_mean : opt_.mean;
  std::vector<float> sd = opt_.std.empty() ? dataset_std : opt_.std;
  if (opt_.normalize) {
    EMBER_CHECK(int64_t(mean.size()) == c_ && int64_t(sd.size()) == c_, ValueError,
                "transforms: normalise needs one mean and one std per channel (", c_, "), got ", mean.size(),
                " and ", sd.size());
    for (float s : sd) EMBER_CHECK(s > 0 && std::isfinite(s), ValueError, "transforms: std must be > 0, got ", s);
    opt_.mean = mean;
    opt_.std = sd;
  }
  lut_.resize(size_t(c_) * 256);
  for (int64_t c = 0; c < c_; ++c) {
    for (int v = 0; v < 256; ++v) {
      // Computed in float the same way a plain (v / 255 - mean) / std would be.
      float x = !opt_.scale ? float(v) : opt_.scale_by_reciprocal ? float(v) * float(1.0 / 255.0) : float(v) / 255.0f;
      if (opt_.normalize) x = (x - mean[c]) / sd[c];
      lut_[size_t(c) * 256 + size_t(v)] = x;
    }
  }
}

bool SampleTransform::deterministic() const {
  return opt_.crop_padding == 0 && opt_.hflip_p <= 0 && opt_.erase_p <= 0;
}

void SampleTransform::apply(const uint8_t* src, const SampleParams& p, float* dst, bool channels_last) const {
  const int64_t pad = opt_.crop_padding;
  const int64_t oy = p.crop_dy - pad, ox = p.crop_dx - pad;  // source = output + offset
  const bool reflect_mode = opt_.pad_mode == PadMode::Reflect;
  // Where channel c's pixel (y, x) is: plane c + y * row_step + x * step.
  const int64_t step = channels_last ? c_ : 1, row_step = w_ * step, plane_step = channels_last ? 1 : h_ * w_;
  for (int64_t c = 0; c < c_; ++c) {
    const float* lut = lut_.data() + c * 256;
    const uint8_t* plane = src + c * plane_step;
    float* out = dst + c * h_ * w_;
    for (int64_t y = 0; y < h_; ++y) {
      int64_t sy = y + oy;
      float* orow = out + y * w_;
      if (sy < 0 || sy >= h_) {
        if (!reflect_mode) {
          std::fill(orow, orow + w_, lut[0]);
          continue;
        }
        sy = reflect(sy, h_);
      }
      const uint8_t* row = plane + sy * row_step;
      const auto at = [&](int64_t sx) { return lut[row[sx * step]]; };
      // Output column x reads crop column (flip ? W-1-x : x), i.e. source column that + ox.
      // Columns whose source lies inside the image form one contiguous run; the rest is padding.
      if (!p.flip) {
        const int64_t x0 = std::clamp<int64_t>(-ox, 0, w_), x1 = std::clamp<int64_t>(w_ - ox, 0, w_);
        for (int64_t x = 0; x < x0; ++x) orow[x] = reflect_mode ? at(reflect(x + ox, w_)) : lut[0];
        if (step == 1) {
          for (int64_t x = x0; x < x1; ++x) orow[x] = lut[row[x + ox]];
        } else {
          for (int64_t x = x0; x < x1; ++x) orow[x] = at(x + ox);
        }
        for (int64_t x = x1; x < w_; ++x) orow[x] = reflect_mode ? at(reflect(x + ox, w_)) : lut[0];
      } else {
        for (int64_t x = 0; x < w_; ++x) {
          int64_t sx = (w_ - 1 - x) + ox;
          if (sx < 0 || sx >= w_) {
            orow[x] = reflect_mode ? at(reflect(sx, w_)) : lut[0];
          } else {
            orow[x] = at(sx);
          }
        }
      }
    }
  }
  if (p.erase) {
    for (int64_t c = 0; c < c_; ++c) {
      for (int64_t y = p.erase_top; y < p.erase_top + p.erase_h; ++y) {
        float* orow = dst + (c * h_ + y) * w_ + p.erase_left;
        std::fill(orow, orow + p.erase_w, 0.0f);
      }
    }
  }
}

void SampleTransform::apply(const uint8_t* src, uint64_t seed, int64_t epoch, int64_t index, float* dst,
                            bool channels_last) const {
  apply(src, draw_sample_params(opt_, seed, epoch, index, h_, w_), dst, channels_last);
}

}  // namespace ember::data
