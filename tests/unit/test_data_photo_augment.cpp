// ember's photo augmentations against torchvision on PIL images (tests/golden/augment_v1.bin,
// written by tests/golden/make_golden_augment.py with torchvision 0.29's transforms.v2 on Pillow 13;
// torchvision 0.14 on Pillow 9.4 gives the same bytes, `make_golden_augment.py --check`): every
// operation ColorJitter and TrivialAugmentWide are made of, byte for byte, TrivialAugmentWide's
// magnitude tables bit for bit, and the distributions of the random draws.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ember/data/photo_augment.h"
#include "golden/golden_file.h"
#include "golden/golden_picture.h"
#include "support/test_data.h"

namespace {

namespace data = ember::data;
using data::Image;
using data::TrivialOp;
using ember::test::GoldenFile;

const GoldenFile& golden() {
  static const GoldenFile file(ember::test::data_path("golden/augment_v1.bin"));
  return file;
}

// Each record "<op>/<input>/<argument>" through ember's operation of that name.
Image apply(const std::string& op, const Image& src, double arg) {
  if (op == "brightness") return data::adjust_brightness(src, arg);
  if (op == "contrast") return data::adjust_contrast(src, arg);
  if (op == "saturation") return data::adjust_saturation(src, arg);
  if (op == "sharpness") return data::adjust_sharpness(src, arg);
  if (op == "hue") return data::adjust_hue(src, arg);
  if (op == "posterize") return data::posterize(src, int(arg));
  if (op == "solarize") return data::solarize(src, arg);
  if (op == "autocontrast") return data::autocontrast(src);
  if (op == "equalize") return data::equalize(src);
  // TrivialAugmentWide's geometric operations take the table's magnitude, as it applies them.
  if (op == "shearx") return data::apply_trivial_augment(src, {TrivialOp::ShearX, arg});
  if (op == "sheary") return data::apply_trivial_augment(src, {TrivialOp::ShearY, arg});
  if (op == "translatex") return data::apply_trivial_augment(src, {TrivialOp::TranslateX, arg});
  if (op == "translatey") return data::apply_trivial_augment(src, {TrivialOp::TranslateY, arg});
  if (op == "rotate") return data::apply_trivial_augment(src, {TrivialOp::Rotate, arg});
  ADD_FAILURE() << "no operation " << op;
  return src;
}

void expect_operation_matches(const std::string& op) {
  for (const auto& name : ember::test::golden_pictures(golden(), op)) {
    const auto p = ember::test::split_name(name, '/');
    ASSERT_EQ(p.size(), 3u) << name;
    const double arg = p[2] == "-" ? 0.0 : std::stod(p[2]);
    ember::test::expect_same_picture(ember::test::golden_picture(golden(), name),
                                     apply(op, ember::test::hashed_picture(p[1]), arg), name);
  }
}

TEST(PhotoAugment, ColourEnhancementsArePillowsBlendsByteForByte) {
  for (const char* op : {"brightness", "contrast", "saturation", "sharpness"}) expect_operation_matches(op);
}

TEST(PhotoAugment, HueShiftsThroughPillowsHsvByteForByte) { expect_operation_matches("hue"); }

TEST(PhotoAugment, LookupTableOperationsMatchImageOps) {
  for (const char* op : {"posterize", "solarize", "autocontrast", "equalize"}) expect_operation_matches(op);
}

TEST(PhotoAugment, ShearTranslateAndRotateArePillowsNearestTransform) {
  for (const char* op : {"shearx", "sheary", "translatex", "translatey", "rotate"}) expect_operation_matches(op);
}

TEST(PhotoAugment, MagnitudeTablesAreTorchvisionsFloat32Values) {
  const std::map<std::string, TrivialOp> ops{
      {"ShearX", TrivialOp::ShearX},         {"ShearY", TrivialOp::ShearY},     {"TranslateX", TrivialOp::TranslateX},
      {"TranslateY", TrivialOp::TranslateY}, {"Rotate", TrivialOp::Rotate},     {"Brightness", TrivialOp::Brightness},
      {"Color", TrivialOp::Color},           {"Contrast", TrivialOp::Contrast}, {"Sharpness", TrivialOp::Sharpness},
      {"Posterize", TrivialOp::Posterize},   {"Solarize", TrivialOp::Solarize}};
  for (const auto& [name, op] : ops) {
    const auto want = golden().get("ta/" + name + "/magnitudes").as_double();
    ASSERT_EQ(want.size(), size_t(data::kTrivialBins)) << name;
    for (int b = 0; b < data::kTrivialBins; ++b)
      EXPECT_EQ(data::trivial_magnitude(op, b), want[size_t(b)]) << name << " bin " << b;
  }
  EXPECT_EQ(data::trivial_magnitude(TrivialOp::Identity, 5), 0.0);
}

TEST(PhotoAugment, OperationsKeepTheShapeOfTinyAndGreyPictures) {
  const Image one = ember::test::hashed_picture("noise1x1x3");
  const Image grey = ember::test::hashed_picture("noise5x3x1");
  for (int op = 0; op < data::kTrivialOps; ++op)
    for (const Image* src : {&one, &grey}) {
      const data::TrivialDraw d{TrivialOp(op), data::trivial_magnitude(TrivialOp(op), 17)};
      const Image out = data::apply_trivial_augment(*src, d);
      EXPECT_EQ(out.width, src->width) << data::trivial_op_name(TrivialOp(op));
      EXPECT_EQ(out.height, src->height);
      EXPECT_EQ(out.channels, src->channels);
    }
  EXPECT_EQ(data::adjust_hue(grey, 0.3).pixels, grey.pixels);  // torchvision returns grey pictures as they are
  EXPECT_THROW(data::adjust_hue(one, 0.6), ember::ValueError);
  EXPECT_THROW(data::posterize(one, 0), ember::ValueError);
  EXPECT_THROW(data::adjust_brightness(Image{}, 1.0), ember::ValueError);
}

TEST(PhotoAugment, TrivialAugmentDrawsEachOperationAndBinUniformly) {
  constexpr int kDraws = 28000;
  std::map<int, int> ops, bins_of_rotate;
  int negative = 0, signed_draws = 0;
  for (int i = 0; i < kDraws; ++i) {
    const auto d = data::draw_trivial_augment(7, 2, i);
    ++ops[int(d.op)];
    if (data::trivial_signed(d.op)) {
      ++signed_draws;
      negative += d.magnitude < 0;
    }
    if (d.op == TrivialOp::Rotate)
      for (int b = 0; b < data::kTrivialBins; ++b)
        if (std::fabs(d.magnitude) == data::trivial_magnitude(TrivialOp::Rotate, b)) ++bins_of_rotate[b];
  }
  ASSERT_EQ(ops.size(), size_t(data::kTrivialOps));
  for (const auto& [op, n] : ops) EXPECT_NEAR(n, kDraws / data::kTrivialOps, 200) << data::trivial_op_name(TrivialOp(op));
  EXPECT_EQ(bins_of_rotate.size(), size_t(data::kTrivialBins));
  // Bin 0 has magnitude 0 whose sign cannot be seen: about 1/31 of the signed draws read as positive.
  EXPECT_NEAR(double(negative) / signed_draws, 0.5 * 30.0 / 31.0, 0.015);
  const auto a = data::draw_trivial_augment(7, 2, 11), b = data::draw_trivial_augment(7, 2, 11);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.magnitude, b.magnitude);
}

TEST(PhotoAugment, ColorJitterDrawsUniformOrdersAndFactorsInTorchvisionsRanges) {
  const data::ColorJitter j = data::parse_color_jitter("0.4,0.3,0.6,0.1");
  std::map<std::array<int, 4>, int> orders;
  double sum_b = 0;
  constexpr int kDraws = 24000;
  for (int i = 0; i < kDraws; ++i) {
    const auto d = data::draw_color_jitter(j, 3, 0, i);
    ++orders[d.order];
    sum_b += d.brightness;
    ASSERT_GE(d.brightness, 0.6);
    ASSERT_LE(d.brightness, 1.4);
    ASSERT_GE(d.contrast, 0.7);
    ASSERT_LE(d.contrast, 1.3);
    ASSERT_GE(d.saturation, 0.4);
    ASSERT_LE(d.saturation, 1.6);
    ASSERT_GE(d.hue, -0.1);
    ASSERT_LE(d.hue, 0.1);
  }
  ASSERT_EQ(orders.size(), 24u);  // every permutation of the four operations
  for (const auto& [order, n] : orders) EXPECT_NEAR(n, kDraws / 24, 150);
  EXPECT_NEAR(sum_b / kDraws, 1.0, 0.01);
  // A zero factor leaves its operation out; a jitter of nothing changes nothing.
  const Image src = ember::test::hashed_picture("ramp9x7x3");
  const data::ColorJitter none{};
  EXPECT_FALSE(none.any());
  EXPECT_EQ(data::apply_color_jitter(src, none, data::draw_color_jitter(none, 1, 0, 0)).pixels, src.pixels);
  // The draw applied is the operations in the drawn order.
  const auto d = data::draw_color_jitter(j, 3, 0, 5);
  Image want = src;
  for (int op : d.order) {
    if (op == 0) want = data::adjust_brightness(want, d.brightness);
    if (op == 1) want = data::adjust_contrast(want, d.contrast);
    if (op == 2) want = data::adjust_saturation(want, d.saturation);
    if (op == 3) want = data::adjust_hue(want, d.hue);
  }
  EXPECT_EQ(data::apply_color_jitter(src, j, d).pixels, want.pixels);
}

TEST(PhotoAugment, ColorJitterFlagIsParsedOrRefusedWithTheForm) {
  const auto one = data::parse_color_jitter("0.4");
  EXPECT_EQ(one.brightness, 0.4);
  EXPECT_EQ(one.contrast, 0.4);
  EXPECT_EQ(one.saturation, 0.4);
  EXPECT_EQ(one.hue, 0.0);
  for (const char* bad : {"", "x", "0.4,0.4", "-1", "0.1,0.1,0.1,0.7", "1,2,3,4,5", "nan"}) {
    try {
      data::parse_color_jitter(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ember::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("--color-jitter"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
