// Transform tests: exact values on small integer images against a plain reference (pad, crop,
// flip, scale, normalise written out step by step), random erasing, option checks, and the
// (seed, epoch, index) derivation of the random choices.
#include <gtest/gtest.h>

#include <set>

#include "support/files.h"
#include "ember/core/error.h"
#include "ember/data/transforms.h"

using namespace ember::data;
using ember::test::Bytes;

namespace {

// (C, H, W) image with distinct values.
Bytes test_image(int64_t c, int64_t h, int64_t w) {
  Bytes b(size_t(c * h * w));
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(7 + 13 * i);
  return b;
}

// The step-by-step oracle: pad the whole image, crop at (dy, dx), flip, then map each value.
std::vector<float> reference(const Bytes& src, int64_t c, int64_t h, int64_t w, const TransformOptions& o,
                             const SampleParams& p, const std::vector<float>& mean, const std::vector<float>& sd) {
  const int64_t pad = o.crop_padding, ph = h + 2 * pad, pw = w + 2 * pad;
  std::vector<int> padded(size_t(c * ph * pw), 0);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t y = 0; y < ph; ++y) {
      for (int64_t x = 0; x < pw; ++x) {
        int64_t sy = y - pad, sx = x - pad;
        bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        if (!inside && o.pad_mode == PadMode::Zero) continue;
        if (sy < 0) sy = -sy;
        if (sy >= h) sy = 2 * (h - 1) - sy;
        if (sx < 0) sx = -sx;
        if (sx >= w) sx = 2 * (w - 1) - sx;
        padded[size_t((ch * ph + y) * pw + x)] = src[size_t((ch * h + sy) * w + sx)];
      }
    }
  }
  std::vector<float> out(size_t(c * h * w));
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const int64_t cx = p.flip ? w - 1 - x : x;
        const int v = padded[size_t((ch * ph + y + p.crop_dy) * pw + cx + p.crop_dx)];
        float f = o.scale ? float(v) / 255.0f : float(v);
        if (o.normalize) f = (f - mean[size_t(ch)]) / sd[size_t(ch)];
        const bool erased = p.erase && y >= p.erase_top && y < p.erase_top + p.erase_h && x >= p.erase_left &&
                            x < p.erase_left + p.erase_w;
        out[size_t((ch * h + y) * w + x)] = erased ? 0.0f : f;
      }
    }
  }
  return out;
}

std::vector<float> run(const Bytes& src, int64_t c, int64_t h, int64_t w, const TransformOptions& o,
                       const SampleParams& p, const std::vector<float>& mean, const std::vector<float>& sd) {
  SampleTransform t(o, c, h, w, mean, sd);
  std::vector<float> out(size_t(c * h * w), -999.0f);  // sentinel: every element must be written
  t.apply(src.data(), p, out.data());
  return out;
}

// run() on the same image stored (H, W, C): apply(..., channels_last = true) must give the same
// floats as on the (C, H, W) planes.
std::vector<float> run_channels_last(const Bytes& src, int64_t c, int64_t h, int64_t w, const TransformOptions& o,
                                     const SampleParams& p, const std::vector<float>& mean,
                                     const std::vector<float>& sd) {
  Bytes hwc(src.size());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < h * w; ++i) hwc[size_t(i * c + ch)] = src[size_t(ch * h * w + i)];
  SampleTransform t(o, c, h, w, mean, sd);
  std::vector<float> out(size_t(c * h * w), -999.0f);
  t.apply(hwc.data(), p, out.data(), /*channels_last=*/true);
  return out;
}

}  // namespace

TEST(DataTransforms, ScaleAndNormaliseExact) {
  const Bytes img = {0, 1, 127, 128, 254, 255};
  TransformOptions o;  // scale + normalise with the dataset's mean/std
  const std::vector<float> mean = {0.25f}, sd = {0.5f};
  auto out = run(img, 1, 2, 3, o, {}, mean, sd);
  for (size_t i = 0; i < img.size(); ++i) EXPECT_EQ(out[i], (float(img[i]) / 255.0f - 0.25f) / 0.5f) << i;

  o.normalize = false;
  out = run(img, 1, 2, 3, o, {}, mean, sd);
  for (size_t i = 0; i < img.size(); ++i) EXPECT_EQ(out[i], float(img[i]) / 255.0f);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[5], 1.0f);

  // An explicit mean/std overrides the dataset's, per channel.
  TransformOptions o3;
  o3.mean = {0.1f, 0.2f};
  o3.std = {2.0f, 4.0f};
  const Bytes two = {10, 20, 30, 40};
  out = run(two, 2, 1, 2, o3, {}, {0.f, 0.f}, {1.f, 1.f});
  EXPECT_EQ(out[1], (20.0f / 255.0f - 0.1f) / 2.0f);
  EXPECT_EQ(out[2], (30.0f / 255.0f - 0.2f) / 4.0f);
}

TEST(DataTransforms, CropZeroPaddingExact) {
  const Bytes img = test_image(1, 3, 4);
  TransformOptions o;
  o.scale = o.normalize = false;
  o.crop_padding = 1;
  SampleParams p;  // dy = dx = 0: the crop starts at the padded image's corner (shift down-right)
  auto out = run(img, 1, 3, 4, o, p, {}, {});
  EXPECT_EQ(out[0], 0.0f);                  // padding
  EXPECT_EQ(out[1 * 4 + 1], float(img[0]));  // (1,1) <- (0,0)
  EXPECT_EQ(out[2 * 4 + 3], float(img[1 * 4 + 2]));
  for (int dy = 0; dy <= 2; ++dy) {
    for (int dx = 0; dx <= 2; ++dx) {
      p.crop_dy = dy;
      p.crop_dx = dx;
      EXPECT_EQ(run(img, 1, 3, 4, o, p, {}, {}), reference(img, 1, 3, 4, o, p, {}, {})) << dy << "," << dx;
    }
  }
  // dy = dx = pad is the identity.
  p.crop_dy = p.crop_dx = 1;
  auto id = run(img, 1, 3, 4, o, p, {}, {});
  for (size_t i = 0; i < img.size(); ++i) EXPECT_EQ(id[i], float(img[i]));
}

TEST(DataTransforms, ZeroPaddingIsPixelZeroBeforeNormalising) {
  const Bytes img(4, 200);
  TransformOptions o;
  o.crop_padding = 1;
  SampleParams p;  // dy = dx = 0: the first row and column are padding
  auto out = run(img, 1, 2, 2, o, p, {0.5f}, {0.25f});
  EXPECT_EQ(out[0], (0.0f - 0.5f) / 0.25f);
  EXPECT_EQ(out[3], (200.0f / 255.0f - 0.5f) / 0.25f);
}

TEST(DataTransforms, CropReflectFlipAndEraseMatchReference) {
  const Bytes img = test_image(3, 5, 6);
  const std::vector<float> mean = {0.4f, 0.5f, 0.6f}, sd = {0.2f, 0.25f, 0.3f};
  for (PadMode mode : {PadMode::Zero, PadMode::Reflect}) {
    TransformOptions o;
    o.crop_padding = 2;
    o.pad_mode = mode;
    for (int dy = 0; dy <= 4; ++dy) {
      for (int dx = 0; dx <= 4; ++dx) {
        for (bool flip : {false, true}) {
          SampleParams p;
          p.crop_dy = dy;
          p.crop_dx = dx;
          p.flip = flip;
          p.erase = (dx % 2) == 1;
          p.erase_top = 1;
          p.erase_left = 2;
          p.erase_h = 3;
          p.erase_w = 2;
          const std::vector<float> want = reference(img, 3, 5, 6, o, p, mean, sd);
          ASSERT_EQ(run(img, 3, 5, 6, o, p, mean, sd), want)
              << "mode " << int(mode) << " dy " << dy << " dx " << dx << " flip " << flip;
          ASSERT_EQ(run_channels_last(img, 3, 5, 6, o, p, mean, sd), want)
              << "channels last, mode " << int(mode) << " dy " << dy << " dx " << dx << " flip " << flip;
        }
      }
    }
  }
  // Reflect does not repeat the edge: with pad 1 and dy = dx = 0, (0, 0) reads source (1, 1).
  TransformOptions o;
  o.scale = o.normalize = false;
  o.crop_padding = 1;
  o.pad_mode = PadMode::Reflect;
  const Bytes small = test_image(1, 3, 3);
  EXPECT_EQ(run(small, 1, 3, 3, o, {}, {}, {})[0], float(small[1 * 3 + 1]));
}

TEST(DataTransforms, FlipExact) {
  const Bytes img = {1, 2, 3, 4, 5, 6};
  TransformOptions o;
  o.scale = o.normalize = false;
  SampleParams p;
  p.flip = true;
  EXPECT_EQ(run(img, 1, 2, 3, o, p, {}, {}), (std::vector<float>{3, 2, 1, 6, 5, 4}));
}

TEST(DataTransforms, SameSeedEpochIndexSameChoicesOtherEpochsDiffer) {
  TransformOptions o;
  o.crop_padding = 4;
  o.hflip_p = 0.5;
  o.erase_p = 0.5;
  int differ_epoch = 0, differ_seed = 0, flips = 0, erases = 0;
  std::set<int64_t> dys;
  for (int64_t i = 0; i < 1000; ++i) {
    SampleParams a = draw_sample_params(o, 42, 3, i, 32, 32);
    SampleParams b = draw_sample_params(o, 42, 3, i, 32, 32);
    EXPECT_EQ(a.crop_dy, b.crop_dy);
    EXPECT_EQ(a.crop_dx, b.crop_dx);
    EXPECT_EQ(a.flip, b.flip);
    EXPECT_EQ(a.erase, b.erase);
    EXPECT_EQ(a.erase_top, b.erase_top);
    EXPECT_EQ(a.erase_w, b.erase_w);
    ASSERT_GE(a.crop_dy, 0);
    ASSERT_LE(a.crop_dy, 8);
    if (a.erase) {
      ASSERT_GE(a.erase_h, 1);
      ASSERT_LE(a.erase_top + a.erase_h, 32);
      ASSERT_LE(a.erase_left + a.erase_w, 32);
      const double frac = double(a.erase_h * a.erase_w) / (32 * 32);
      EXPECT_GT(frac, 0.01);
      EXPECT_LT(frac, 0.4);
    }
    dys.insert(a.crop_dy);
    flips += a.flip;
    erases += a.erase;
    SampleParams c = draw_sample_params(o, 42, 4, i, 32, 32);
    SampleParams d = draw_sample_params(o, 43, 3, i, 32, 32);
    differ_epoch += (c.crop_dy != a.crop_dy || c.crop_dx != a.crop_dx || c.flip != a.flip);
    differ_seed += (d.crop_dy != a.crop_dy || d.crop_dx != a.crop_dx || d.flip != a.flip);
  }
  EXPECT_GT(differ_epoch, 900);
  EXPECT_GT(differ_seed, 900);
  EXPECT_EQ(dys.size(), 9u);  // every offset in [0, 8] occurs
  EXPECT_NEAR(flips, 500, 80);
  EXPECT_GT(erases, 400);  // p 0.5, and a rectangle nearly always fits within 10 attempts
  EXPECT_LT(erases, 600);

  // Probabilities 0 and 1 are exact.
  TransformOptions never;
  never.hflip_p = 0;
  TransformOptions always;
  always.hflip_p = 1;
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_FALSE(draw_sample_params(never, 1, 0, i, 8, 8).flip);
    EXPECT_TRUE(draw_sample_params(always, 1, 0, i, 8, 8).flip);
  }
}

TEST(DataTransforms, BadOptionsAreValueErrors) {
  TransformOptions o;
  o.crop_padding = 3;
  o.pad_mode = PadMode::Reflect;
  ember::test::expect_error<ember::ValueError>([&] { SampleTransform(o, 1, 3, 3, {0.5f}, {0.5f}); },
                                               "reflect padding 3");
  TransformOptions s;
  ember::test::expect_error<ember::ValueError>([&] { SampleTransform(s, 1, 3, 3, {0.5f}, {0.0f}); },
                                               "std must be > 0");
  ember::test::expect_error<ember::ValueError>([&] { SampleTransform(s, 3, 3, 3, {0.5f}, {0.5f}); },
                                               "one mean and one std per channel (3)");
  TransformOptions f;
  f.hflip_p = 1.5;
  ember::test::expect_error<ember::ValueError>([&] { SampleTransform(f, 1, 3, 3, {0.5f}, {0.5f}); }, "hflip_p");
}
