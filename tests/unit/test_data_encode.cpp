// The PNG encoder (data/encode.h) round trip: what encode_png writes, ember's decoder (libspng)
// reads back with the same pixels and its header with the same channel count, for every channel
// count PNG and save_image use, odd sizes included; bad shapes are ValueErrors naming what is wrong.
// (Alpha's values are checked by tests/python/pkg/test_vision_utils.py through Pillow, since ember's
// decoder drops alpha as convert("RGB") does.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "support/errors.h"
#include "ember/core/error.h"
#include "ember/data/decode.h"
#include "ember/data/encode.h"

using namespace ember;
using namespace ember::data;

namespace {

std::vector<uint8_t> pattern(int64_t h, int64_t w, int64_t c) {
  std::vector<uint8_t> px(size_t(h * w * c));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 37 + i / 7) & 0xff);  // every byte value, no runs
  return px;
}

// The pixels ember's decoder gives (RGB) for what encode_png wrote.
std::vector<uint8_t> rgb_of(const std::vector<uint8_t>& png) { return decode_image(png, {}, "round-trip.png").pixels; }

}  // namespace

TEST(DataEncode, PngRoundTripKeepsEveryPixelForEachChannelCount) {
  for (int64_t c = 1; c <= 4; ++c) {
    for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {7, 13}, {34, 66}}) {
      const auto px = pattern(h, w, c);
      const auto png = encode_png(px, h, w, c);
      ASSERT_GT(png.size(), 8u);
      EXPECT_EQ(std::vector<uint8_t>(png.begin(), png.begin() + 8),
                (std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}));
      const ImageInfo info = probe_image(png, "round-trip.png");
      EXPECT_EQ(info.format, "PNG");
      EXPECT_EQ(info.width, w);
      EXPECT_EQ(info.height, h);
      EXPECT_EQ(info.channels_in_file, c);
      // ember's own decoder gives RGB (alpha dropped, grey repeated), as Pillow's convert("RGB")
      const Image rgb = decode_image(png, {}, "round-trip.png");
      ASSERT_EQ(rgb.width, w);
      ASSERT_EQ(rgb.height, h);
      for (int64_t i = 0; i < h * w; ++i) {
        for (int64_t k = 0; k < 3; ++k) {
          const uint8_t want = px[size_t(i * c + (c >= 3 ? k : 0))];
          ASSERT_EQ(rgb.pixels[size_t(i * 3 + k)], want) << c << " channels, pixel " << i << ", channel " << k;
        }
      }
    }
  }
}

TEST(DataEncode, CompressionLevelChangesTheSizeNotThePixels) {
  std::vector<uint8_t> flat(size_t(64 * 64 * 3), 200);
  const auto stored = encode_png(flat, 64, 64, 3, 0);
  const auto packed = encode_png(flat, 64, 64, 3, 9);
  EXPECT_LT(packed.size(), stored.size());
  EXPECT_EQ(rgb_of(stored), flat);
  EXPECT_EQ(rgb_of(packed), flat);
}

TEST(DataEncode, BadShapesAreValueErrors) {
  const auto px = pattern(2, 3, 3);
  test::expect_error<ValueError>([&] { encode_png(px, 2, 3, 5); }, "5 channels");
  test::expect_error<ValueError>([&] { encode_png(px, 0, 3, 3); }, "0x3");
  test::expect_error<ValueError>([&] { encode_png(px, 2, 2, 3); }, "18 bytes of pixels");
  test::expect_error<ValueError>([&] { encode_png(px, 2, 3, 3, 10); }, "compression level 10");
}

TEST(DataEncode, JpegRoundTripIsCloseAndKeepsTheShape) {
  for (int64_t c : {1, 3}) {
    const int64_t h = 37, w = 50;
    std::vector<uint8_t> px(size_t(h * w * c));
    for (int64_t y = 0; y < h; ++y)  // a smooth picture: JPEG's error on it is a few levels
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k) px[size_t((y * w + x) * c + k)] = uint8_t(40 + 3 * x + 2 * y + 20 * k);
    const auto jpeg = encode_jpeg(px, h, w, c, 95);
    const ImageInfo info = probe_image(jpeg, "round-trip.jpg");
    EXPECT_EQ(info.format, "JPEG");
    EXPECT_EQ(info.width, w);
    EXPECT_EQ(info.height, h);
    EXPECT_EQ(info.channels_in_file, c);
    DecodeOptions opt;
    opt.channels = int(c);
    const Image back = decode_image(jpeg, opt, "round-trip.jpg");
    ASSERT_EQ(back.pixels.size(), px.size());
    double err = 0;
    for (size_t i = 0; i < px.size(); ++i) err += std::abs(int(back.pixels[i]) - int(px[i]));
    EXPECT_LT(err / double(px.size()), 4.0) << c << " channels";  // 4:2:0 chroma costs most of it
    EXPECT_LT(encode_jpeg(px, h, w, c, 10).size(), jpeg.size());  // quality reaches the quantiser
  }
}

TEST(DataEncode, JpegRefusesAlphaAndBadQuality) {
  const auto px = pattern(2, 3, 4);
  test::expect_error<ValueError>([&] { encode_jpeg(px, 2, 3, 4); }, "4 channels");
  test::expect_error<ValueError>([&] { encode_jpeg(pattern(2, 3, 3), 2, 3, 3, 0); }, "quality 0");
  test::expect_error<ValueError>([&] { encode_jpeg(pattern(2, 3, 3), 70000, 1, 3); }, "70000x1");
}
