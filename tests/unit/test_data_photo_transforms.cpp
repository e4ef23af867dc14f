// ember's photo transforms against torchvision 0.14 on Pillow 9.4 (tests/golden/photo_v1.bin, written
// by tests/golden/make_golden_photo.py): resize, shorter-side resize, resized crop, centre crop,
// the evaluation recipe and the flip byte for byte; ToTensor + Normalize bit for bit; the
// RandomResizedCrop boxes' distribution over 10,000 draws.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "core/isa.h"
#include "ember/data/photo_transforms.h"
#include "golden/golden_file.h"
#include "golden/golden_picture.h"
#include "support/test_data.h"

namespace {

using ember::data::Box;
using ember::data::Image;
using ember::test::GoldenFile;

#define PHOTO_GOLDEN ember::test::data_path("golden/photo_v1.bin")

const GoldenFile& golden() {
  static const GoldenFile file(PHOTO_GOLDEN);
  return file;
}

Image picture(const std::string& name) { return ember::test::hashed_picture(name); }
Image expected(const std::string& name) { return ember::test::golden_picture(golden(), name); }
void expect_same(const Image& want, const Image& got, const std::string& what) {
  ember::test::expect_same_picture(want, got, what);
}
std::vector<std::string> split(const std::string& s, char sep) { return ember::test::split_name(s, sep); }
std::vector<std::string> cases(const std::string& kind) { return ember::test::golden_pictures(golden(), kind); }

TEST(PhotoTransforms, ResizeIsPillowsAntialiasedBilinearByteForByte) {
  for (const auto& name : cases("resize")) {
    const auto p = split(name, '/');
    int h = 0, w = 0;
    ASSERT_EQ(std::sscanf(p[2].c_str(), "%dx%d", &h, &w), 2);
    expect_same(expected(name), ember::data::resize(picture(p[1]), h, w), name);
  }
}

TEST(PhotoTransforms, ShorterSideResizeAsTorchvision) {
  for (const auto& name : cases("short")) {
    const auto p = split(name, '/');
    const Image src = picture(p[1]);
    const auto [h, w] = ember::data::shorter_side_size(src.height, src.width, std::stoi(p[2]));
    expect_same(expected(name), ember::data::resize(src, h, w), name);
  }
}

TEST(PhotoTransforms, ResizedCropReadsOnlyItsBox) {
  for (const auto& name : cases("rcrop")) {
    const auto p = split(name, '/');
    const auto b = split(p[2], '_');
    const Box box{std::stoi(b[0]), std::stoi(b[1]), std::stoi(b[2]), std::stoi(b[3])};
    const int s = std::stoi(p[3]);
    expect_same(expected(name), ember::data::resize(picture(p[1]), s, s, box), name);
  }
}

TEST(PhotoTransforms, CenterCropRoundsHalfToEvenAndPadsWithZeros) {
  for (const auto& name : cases("ccrop")) {
    const auto p = split(name, '/');
    int h = 0, w = 0;
    ASSERT_EQ(std::sscanf(p[2].c_str(), "%dx%d", &h, &w), 2);
    expect_same(expected(name), ember::data::center_crop(picture(p[1]), h, w), name);
  }
}

TEST(PhotoTransforms, EvaluationRecipeIsResizeThenCenterCrop) {
  EXPECT_EQ(ember::data::resize_for_crop(224), 256);
  for (const auto& name : cases("eval")) {
    const auto p = split(name, '/');
    expect_same(expected(name), ember::data::eval_resize_crop(picture(p[1]), std::stoi(p[2])), name);
  }
}

TEST(PhotoTransforms, HorizontalFlip) {
  for (const auto& name : cases("hflip")) expect_same(expected(name), ember::data::hflip(picture(split(name, '/')[1])), name);
}

TEST(PhotoTransforms, PlanesAreToTensorThenNormalizeBitForBit) {
  const std::string name = "planes/noise97x61x3";
  const auto want = golden().get(name).as_float();
  const Image src = picture("noise97x61x3");
  std::vector<float> got(size_t(src.width * src.height * 3));
  ember::data::to_planes(src, ember::data::kImageNetMean, ember::data::kImageNetStd, got.data());
  ASSERT_EQ(got.size(), want.size());
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], 4) != 0;
  EXPECT_EQ(differ, 0) << differ << " floats differ from torchvision's ToTensor + Normalize";
}

// 10,000 boxes from ember's Philox draws against the mean and standard deviation of 10,000 of
// torchvision's: each mean within 5 standard errors of the two samples' difference, each standard
// deviation within 5%; the centre fallback's share within 5 standard errors.
TEST(PhotoTransforms, RandomResizedCropBoxesHaveTorchvisionsDistribution) {
  for (auto [h, w] : {std::pair{375, 500}, std::pair{100, 20}}) {
    const std::string tag = "rrc/" + std::to_string(h) + "x" + std::to_string(w);
    const auto stats = golden().get(tag + "/stats").as_double();  // (4, 2): mean, std of top, left, height, width
    const double want_fallback = golden().get(tag + "/fallback").as_double()[0];
    constexpr int kDraws = 10000;
    double sum[4] = {}, sq[4] = {};
    int fallback = 0;
    const int64_t fallback_h = double(w) / h < 0.75 ? std::min<int64_t>(h, std::llround(w / 0.75)) : h;
    for (int i = 0; i < kDraws; ++i) {
      const Box b = ember::data::random_resized_crop_box(h, w, /*seed=*/42, /*epoch=*/3, i);
      ASSERT_TRUE(b.top >= 0 && b.left >= 0 && b.height >= 1 && b.width >= 1 && b.top + b.height <= h &&
                  b.left + b.width <= w)
          << tag << " draw " << i;
      const double v[4] = {double(b.top), double(b.left), double(b.height), double(b.width)};
      for (int k = 0; k < 4; ++k) sum[k] += v[k], sq[k] += v[k] * v[k];
      fallback += b.height == fallback_h && b.top == (h - b.height) / 2 && b.left == (w - b.width) / 2;
    }
    const char* what[4] = {"top", "left", "height", "width"};
    for (int k = 0; k < 4; ++k) {
      const double mean = sum[k] / kDraws, sd = std::sqrt(std::max(0.0, sq[k] / kDraws - mean * mean));
      const double want_mean = stats[size_t(k) * 2], want_sd = stats[size_t(k) * 2 + 1];
      const double se = std::sqrt((sd * sd + want_sd * want_sd) / kDraws);
      EXPECT_NEAR(mean, want_mean, 5 * se + 1e-9) << tag << " " << what[k] << " mean";
      EXPECT_NEAR(sd, want_sd, 0.05 * want_sd + 1e-9) << tag << " " << what[k] << " standard deviation";
    }
    const double share_se = std::sqrt(2 * want_fallback * (1 - want_fallback) / kDraws);
    EXPECT_NEAR(double(fallback) / kDraws, want_fallback, 5 * share_se + 0.001) << tag << " centre fallback share";
  }
}

TEST(PhotoTransforms, SameDrawForTheSameSeedEpochAndIndex) {
  const Box a = ember::data::random_resized_crop_box(375, 500, 7, 1, 123);
  EXPECT_EQ(a, ember::data::random_resized_crop_box(375, 500, 7, 1, 123));
  int same = 0;
  for (int i = 0; i < 100; ++i)
    same += ember::data::random_resized_crop_box(375, 500, 7, 1, i) == ember::data::random_resized_crop_box(375, 500, 7, 2, i);
  EXPECT_LT(same, 5) << "another epoch draws other boxes";
}

// The AVX2 passes against the plain loops (cpu::allow_avx2(false)), byte for byte, on sizes and
// boxes that reach every edge: the last row and column of the image, widths not a multiple of 8,
// 1-pixel boxes, strong shrinking (many taps) and enlarging, grey and RGB. On a CPU without AVX2
// both sides are the plain loops.
TEST(PhotoTransforms, VectorResizeEqualsThePlainLoops) {
  struct Plain {
    Plain() { ember::cpu::allow_avx2(false); }
    ~Plain() { ember::cpu::allow_avx2(true); }
  };
  uint64_t state = 12345;
  const auto next = [&](int64_t n) {  // in [0, n)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((state >> 33) % uint64_t(n));
  };
  for (int t = 0; t < 300; ++t) {
    const int64_t ch = t % 5 == 0 ? 1 : 3;
    const int64_t h = 1 + next(t < 100 ? 40 : 400), w = 1 + next(t < 100 ? 40 : 500);
    Image src(w, h, ch);
    for (auto& p : src.pixels) p = uint8_t(next(256));
    for (int64_t i = 0; i < 8 && t % 7 == 0; ++i) src.pixels[size_t(next(int64_t(src.pixels.size())))] = 255;
    Box box{next(h), next(w), 0, 0};
    box.height = 1 + next(h - box.top), box.width = 1 + next(w - box.left);
    if (t % 3 == 0) box = {h - box.height, w - box.width, box.height, box.width};  // at the bottom-right corner
    const int64_t oh = 1 + next(t % 4 == 0 ? 8 : 300), ow = 1 + next(t % 4 == 1 ? 8 : 300);
    const Image vec = ember::data::resize(src, oh, ow, box);
    Image plain;
    {
      Plain off;
      plain = ember::data::resize(src, oh, ow, box);
    }
    std::ostringstream what;
    what << w << "x" << h << "x" << ch << " box " << box.top << "," << box.left << " " << box.width << "x" << box.height
         << " -> " << ow << "x" << oh;
    expect_same(plain, vec, what.str());
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(PhotoTransforms, BadArgumentsAreNamed) {
  const Image img = picture("noise97x61x3");
  EXPECT_THROW(ember::data::resize(img, 0, 10), ember::ValueError);
  EXPECT_THROW(ember::data::resize(img, 10, 10, Box{50, 0, 20, 20}), ember::ValueError);
  EXPECT_THROW(ember::data::resize(Image{}, 10, 10), ember::ValueError);
  EXPECT_THROW(ember::data::center_crop(img, 0, 5), ember::ValueError);
  EXPECT_THROW(ember::data::random_resized_crop_box(0, 5, 1, 0, 0), ember::ValueError);
  EXPECT_THROW(ember::data::shorter_side_size(10, 10, 20, 15), ember::ValueError);
  EXPECT_EQ(ember::data::shorter_side_size(375, 500, 256), (std::pair<int64_t, int64_t>{256, 341}));
  EXPECT_EQ(ember::data::shorter_side_size(500, 375, 256, 300), (std::pair<int64_t, int64_t>{300, 225}));
}

}  // namespace
