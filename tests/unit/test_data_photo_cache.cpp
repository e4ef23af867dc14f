// The one-file photo cache (data/photo_cache.h): a folder written once and read back (raw: the
// exact pixels of decode + resize; JPEG: within re-encoding's error), resumed after an
// interruption to the same bytes, and every damaged or foreign file named before anything is
// decoded; training reads it as a photo set split like a folder.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ember/data/dataset.h"
#include "ember/data/decode.h"
#include "ember/data/loader.h"
#include "ember/data/photo_cache.h"
#include "ember/data/photo_transforms.h"
#include "support/files.h"

namespace {
namespace fs = std::filesystem;
using namespace ember;

class PhotoCacheTest : public ::testing::Test {
 protected:
  fs::path dir, folder;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_photo_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    folder = dir / "photos";
    // 2 classes x 5 RGB pictures of 90x60 (larger than the 64 max side below) and one 30x20.
    for (int c = 0; c < 2; ++c) {
      fs::create_directories(folder / ("c" + std::to_string(c)));
      for (int i = 0; i < 5; ++i) {
        const int w = i == 4 ? 30 : 90, h = i == 4 ? 20 : 60;
        test::Bytes px(size_t(w * h * 3));
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x)
            for (int k = 0; k < 3; ++k) px[size_t((y * w + x) * 3 + k)] = uint8_t((x * 3 + y * 5 * (k + 1) + i * 30 + c * 70) % 256);
        test::write_bytes(folder / ("c" + std::to_string(c)) / ("p" + std::to_string(i) + ".png"), test::make_png(w, h, 3, px));
      }
    }
  }
  void TearDown() override { fs::remove_all(dir); }
  data::PhotoCacheOptions options(bool raw) const {
    data::PhotoCacheOptions o;
    o.max_side = 64, o.raw = raw, o.workers = 2;
    return o;
  }
};

TEST_F(PhotoCacheTest, RawRoundTripHoldsTheShrunkPicturesExactly) {
  const fs::path out = dir / "raw.ember";
  const auto rep = data::write_photo_cache(folder, out, options(true));
  EXPECT_EQ(rep.written, 10);
  EXPECT_TRUE(rep.skipped.empty());
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  ASSERT_TRUE(data::is_photo_cache(out));
  const data::PhotoCache cache(out);
  ASSERT_EQ(cache.size(), 10);
  EXPECT_EQ(cache.classes(), (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(cache.label(0), 0);
  EXPECT_EQ(cache.label(9), 1);
  // Picture 0: c0/p0.png, 90x60 shrunk to 64x43 (round(60 * 64 / 90) = 43) with Pillow's filter.
  const data::Image want = data::resize(data::read_rgb_image(folder / "c0" / "p0.png", 0), 43, 64);
  const data::Image got = cache.picture(0);
  ASSERT_EQ(got.width, 64);
  ASSERT_EQ(got.height, 43);
  EXPECT_EQ(got.pixels, want.pixels);
  // A small picture is kept as it is.
  const data::Image small = cache.picture(4);
  EXPECT_EQ(small.width, 30);
  EXPECT_EQ(small.pixels, data::read_rgb_image(folder / "c0" / "p4.png", 0).pixels);
}

TEST_F(PhotoCacheTest, JpegRoundTripIsCloseAndSmaller) {
  const fs::path raw = dir / "raw.ember", jpg = dir / "jpg.ember";
  data::write_photo_cache(folder, raw, options(true));
  data::write_photo_cache(folder, jpg, options(false));
  EXPECT_LT(fs::file_size(jpg), fs::file_size(raw));
  const data::PhotoCache a(raw), b(jpg);
  ASSERT_EQ(a.size(), b.size());
  const data::Image x = a.picture(1), y = b.picture(1);
  ASSERT_EQ(x.pixels.size(), y.pixels.size());
  double err = 0;
  for (size_t i = 0; i < x.pixels.size(); ++i) err += std::abs(int(x.pixels[i]) - int(y.pixels[i]));
  // The test pictures wrap around 255 -> 0 every few pixels (hard colour edges, what 4:2:0 chroma
  // subsampling blurs most); on photographs quality 90 is within ~2 levels.
  EXPECT_LT(err / double(x.pixels.size()), 16.0) << "mean absolute error of JPEG quality 90";
}

TEST_F(PhotoCacheTest, AnInterruptedWriteResumesToTheSameFile) {
  const fs::path whole = dir / "whole.ember", resumed = dir / "resumed.ember";
  data::write_photo_cache(folder, whole, options(true));
  // Interrupt after the first chunk's record: a partial file plus garbage an unrecorded chunk wrote.
  struct Stop {};
  EXPECT_THROW(data::write_photo_cache(folder, resumed, options(true), [](int64_t, int64_t) { throw Stop{}; }), Stop);
  ASSERT_TRUE(fs::exists(resumed.string() + ".partial"));
  { std::ofstream(resumed.string() + ".partial", std::ios::app) << "half-written chunk"; }
  const auto rep = data::write_photo_cache(folder, resumed, options(true));
  EXPECT_EQ(rep.resumed, 10);  // all 10 fit the first chunk
  EXPECT_EQ(test::read_bytes(resumed), test::read_bytes(whole));
}

TEST_F(PhotoCacheTest, DamagedAndForeignFilesAreNamed) {
  const fs::path out = dir / "c.ember";
  data::write_photo_cache(folder, out, options(false));
  const test::Bytes good = test::read_bytes(out);
  auto expect_refused = [&](const test::Bytes& b, const std::string& piece) {
    const fs::path f = dir / "bad.ember";
    test::write_bytes(f, b);
    try {
      data::PhotoCache c(f);
      ADD_FAILURE() << "accepted a damaged file (" << piece << ")";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
    }
  };
  test::Bytes flipped = good;
  flipped[100] ^= 0x40;
  expect_refused(flipped, "checksum does not match");
  expect_refused(test::Bytes(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2)), "truncated");
  expect_refused(test::Bytes(good.begin(), good.begin() + 20), "truncated");
  expect_refused(test::Bytes{'G', 'I', 'F', '8', '9', 'a', 0, 0, 0, 0}, "not an ember photo cache");
  EXPECT_FALSE(data::is_photo_cache(folder / "c0" / "p0.png"));
  // Every prefix: a named error, never a crash.
  for (size_t n = 0; n < good.size(); n += 97)
    EXPECT_THROW(data::check_photo_cache_bytes(std::span(good.data(), n), "prefix"), DataError) << n;
}

TEST_F(PhotoCacheTest, TrainingReadsItAsASplitPhotoSet) {
  const fs::path out = dir / "c.ember";
  data::write_photo_cache(folder, out, options(false));
  data::ImageFolderSplitOptions o;
  o.size = 32;
  o.test_fraction = 0.2;
  o.photos = true;
  const data::ImageFolderSplits s = data::load_image_folder_splits(out, o);
  EXPECT_TRUE(s.train.is_photos());
  EXPECT_EQ(s.train.size() + s.test.size(), 10);
  EXPECT_EQ(s.test.size(), 2);
  EXPECT_TRUE(s.train.recipe.train);
  EXPECT_FALSE(s.test.recipe.train);
  data::LoaderOptions lo;
  lo.batch_size = 4, lo.workers = 2;
  data::DataLoader loader(s.train, lo);
  loader.begin_epoch(0);
  int64_t seen = 0;
  for (data::Batch& b : loader) {
    EXPECT_EQ(b.x.size(2), 32);
    seen += b.x.size(0);
  }
  EXPECT_EQ(seen, 8);
}

// Issue 48, item 5: without `photos` (ember's small models) a cache is what its folder is: the same
// seeded split, the size and channels chosen by the folder's rule (from the index's sizes and the
// source files' channels), the pictures decoded once into a uint8 tensor, the training split's
// mean and std.
TEST_F(PhotoCacheTest, WithoutPhotosItLoadsAsTensorsWithItsFoldersGeometry) {
  const fs::path out = dir / "c.ember";
  data::write_photo_cache(folder, out, options(true));
  data::ImageFolderSplitOptions o;
  o.test_fraction = 0.2;
  const data::ImageFolderSplits cached = data::load_image_folder_splits(out, o);
  const data::ImageFolderSplits from_folder = data::load_image_folder_splits(folder, o);
  EXPECT_FALSE(cached.train.is_photos());
  EXPECT_EQ(cached.train.size(), from_folder.train.size());
  EXPECT_EQ(cached.test.size(), from_folder.test.size());
  // The cache's pictures are shrunk to 64 on the longer side (90x60 -> 64x43), the folder's are not:
  // the median shorter side is 43 for the one and 60 for the other, both under the cap of 64.
  EXPECT_EQ(cached.train.channels(), 3);
  EXPECT_EQ(cached.train.height(), 43);
  EXPECT_EQ(from_folder.train.height(), 60);
  EXPECT_NE(cached.size_source.find("size 43x43: the median shorter side of all 10 images"), std::string::npos)
      << cached.size_source;
  EXPECT_EQ(cached.train.labels.to_vector<int64_t>(), from_folder.train.labels.to_vector<int64_t>());
  ASSERT_EQ(cached.train.mean.size(), 3u);
  EXPECT_NEAR(cached.train.mean[0], from_folder.train.mean[0], 0.02);
}

TEST_F(PhotoCacheTest, ItRemembersWhichSourcesWereGrey) {
  fs::create_directories(folder / "c0");
  test::Bytes grey(size_t(40 * 30), 77);
  test::write_bytes(folder / "c0" / "q_grey.png", test::make_png(40, 30, 1, grey));
  const fs::path out = dir / "g.ember";
  data::write_photo_cache(folder, out, options(false));
  const data::PhotoCache cache(out);
  int64_t greys = 0;
  for (int64_t i = 0; i < cache.size(); ++i) greys += cache.source_grey(i);
  EXPECT_EQ(greys, 1);
  EXPECT_EQ(cache.picture(5).channels, 3);  // stored as RGB all the same
}

}  // namespace
