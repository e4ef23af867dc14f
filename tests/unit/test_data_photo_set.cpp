// Photo datasets (data/photo_set.h): an image folder read as files decoded per sample, the
// training split through RandomResizedCrop + flip drawn from (seed, epoch, index), the test split
// through the evaluation transforms; batches identical for any worker count, other per epoch.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstring>
#include <filesystem>

#include "ember/data/dataset.h"
#include "ember/data/loader.h"
#include "ember/data/photo_transforms.h"
#include "support/files.h"

namespace {
namespace fs = std::filesystem;
using namespace ember;

class PhotoSet : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_photo_set_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    // Two classes of 6 RGB pictures, 40x30, a gradient each its own.
    for (int c = 0; c < 2; ++c) {
      fs::create_directories(dir / ("class" + std::to_string(c)));
      for (int i = 0; i < 6; ++i) {
        test::Bytes px(40 * 30 * 3);
        for (int y = 0; y < 30; ++y)
          for (int x = 0; x < 40; ++x)
            for (int k = 0; k < 3; ++k) px[size_t((y * 40 + x) * 3 + k)] = uint8_t((x * 6 + y * 3 * (k + 1) + i * 20 + c * 90) % 256);
        test::write_bytes(dir / ("class" + std::to_string(c)) / ("p" + std::to_string(i) + ".png"),
                          test::make_png(40, 30, 3, px));
      }
    }
  }
  void TearDown() override { fs::remove_all(dir); }

  data::ImageFolderSplits load(int64_t size = 16) const {
    data::ImageFolderSplitOptions o;
    o.photos = true;
    o.size = size;
    o.test_fraction = 0.34;
    return data::load_image_folder_splits(dir, o);
  }
};

std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

TEST_F(PhotoSet, FolderSplitsAreFilesWithTheirRecipes) {
  const auto s = load();
  EXPECT_TRUE(s.train.is_photos());
  EXPECT_TRUE(s.test.is_photos());
  EXPECT_EQ(s.train.size() + s.test.size(), 12);
  EXPECT_EQ(s.test.size(), 4);  // round(0.34 * 6) = 2 of each class
  EXPECT_TRUE(s.train.recipe.train);
  EXPECT_FALSE(s.test.recipe.train);
  EXPECT_EQ(s.train.channels(), 3);
  EXPECT_EQ(s.train.height(), 16);
  EXPECT_EQ(s.train.mean, data::kImageNetMean);  // torchvision's normalisation for photos
  EXPECT_NE(s.size_source.find("decoded per sample"), std::string::npos) << s.size_source;
}

TEST_F(PhotoSet, TestSamplesAreTheEvaluationTransforms) {
  const auto s = load();
  data::LoaderOptions lo;
  lo.batch_size = 4, lo.shuffle = false, lo.workers = 0;
  data::DataLoader loader(s.test, lo);
  const data::Batch b = loader.make_batch(0, 0);
  ASSERT_EQ(b.x.sizes(), (Shape{4, 3, 16, 16}));
  // Sample 0 by hand: decode, resize 18 (16 * 256 / 224), centre crop 16, normalise.
  const data::Image pic = data::read_rgb_image(s.test.photos->file(0), 0);
  std::vector<float> want(3 * 16 * 16);
  data::to_planes(data::eval_resize_crop(pic, 16), data::kImageNetMean, data::kImageNetStd, want.data());
  const auto got = values(b.x.narrow(0, 0, 1));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
  // The same in every epoch.
  EXPECT_EQ(values(loader.make_batch(3, 0).x), values(b.x));
}

TEST_F(PhotoSet, TrainingBatchesAreTheSameForAnyWorkerCountAndNewEachEpoch) {
  const auto s = load();
  auto batches = [&](int workers, int64_t epoch) {
    data::LoaderOptions lo;
    lo.batch_size = 3, lo.workers = workers, lo.seed = 7;
    data::DataLoader loader(s.train, lo);
    loader.begin_epoch(epoch);
    std::vector<std::vector<float>> out;
    for (data::Batch& b : loader) out.push_back(values(b.x));
    return out;
  };
  const auto a = batches(0, 0);
  EXPECT_EQ(a.size(), 3u);  // 8 samples, batches of 3
  EXPECT_EQ(batches(2, 0), a);
  EXPECT_NE(batches(0, 1), a);
}

TEST_F(PhotoSet, AnUnreadableFileIsLeftOutWithAWarning) {
  test::write_text(dir / "class0" / "broken.png", "not a png");
  const auto s = load();
  EXPECT_EQ(s.train.size() + s.test.size(), 12);
  bool named = false;
  for (const auto& w : s.warnings) named |= w.find("broken.png") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(PhotoRecipe, AugmentNamesAndDescriptions) {
  EXPECT_EQ(data::parse_augment("light"), data::Augment::Light);
  EXPECT_THROW(data::parse_augment("heavy"), ValueError);
  data::PhotoRecipe r;
  r.train = true;
  EXPECT_EQ(r.describe(), "RandomResizedCrop(224, scale 0.08-1) + horizontal flip");
  r.train = false;
  EXPECT_EQ(r.describe(), "resize 256, centre crop 224");
}

}  // namespace
