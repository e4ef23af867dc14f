// Image folders as training data (issue 15 item 18): train/ and test/ folders used as they are, a
// one-level folder split per class by a seeded shuffle, size and channels from the first image,
// every split normalised with the training split's statistics, and clear errors for bad layouts.
#include <gtest/gtest.h>

#include "support/files.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"

using namespace ember;
using namespace ember::data;
using ember::test::Bytes;
namespace fs = std::filesystem;

namespace {

Bytes solid(int w, int h, int c, uint8_t v) { return Bytes(size_t(w * h * c), v); }

// n images of w x h in each class folder under `dir`, pixel value = class base + index.
void write_classes(const fs::path& dir, const std::vector<std::string>& classes, int n, int w, int h, int c = 3) {
  for (size_t k = 0; k < classes.size(); ++k)
    for (int i = 0; i < n; ++i)
      ember::test::write_bytes(dir / classes[k] / ("img" + std::to_string(i) + ".png"),
                               ember::test::make_png(w, h, c, solid(w, h, c, uint8_t(40 * k + i))));
}

}  // namespace

TEST(DataImageFolderSplits, TrainAndTestFoldersWithSizeFromTheFirstImage) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path() / "train", {"blue", "red"}, 4, 10, 10);
  write_classes(dir.path() / "test", {"blue", "red"}, 2, 10, 10);
  ImageFolderSplits s = load_image_folder_splits(dir.path(), {});
  EXPECT_EQ(s.layout, "train/ and test/ folders");
  EXPECT_EQ(s.train.size(), 8);
  EXPECT_EQ(s.test.size(), 4);
  EXPECT_EQ(s.val.size(), 0);
  EXPECT_EQ(s.train.channels(), 3);
  EXPECT_EQ(s.train.height(), 10);
  EXPECT_EQ(s.test.width(), 10);
  EXPECT_EQ(s.train.classes, (std::vector<std::string>{"blue", "red"}));
  EXPECT_NE(s.size_source.find("img0.png"), std::string::npos) << s.size_source;
  // The test split is normalised with the training split's statistics, not its own.
  EXPECT_EQ(s.test.mean, s.train.mean);
  EXPECT_EQ(s.test.std, s.train.std);
  std::vector<float> own_mean, own_std;
  compute_mean_std(s.test.images, own_mean, own_std);
  EXPECT_NE(own_mean, s.train.mean);
}

TEST(DataImageFolderSplits, ValFolderIsLoadedWithTheTrainStatistics) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path() / "train", {"a", "b"}, 3, 8, 8);
  write_classes(dir.path() / "val", {"a", "b"}, 2, 8, 8);
  write_classes(dir.path() / "test", {"a", "b"}, 1, 8, 8);
  ImageFolderSplits s = load_image_folder_splits(dir.path(), {});
  EXPECT_EQ(s.layout, "train/, val/ and test/ folders");
  EXPECT_EQ(s.val.size(), 4);
  EXPECT_EQ(s.val.mean, s.train.mean);
  EXPECT_EQ(s.val.classes, s.train.classes);
  fs::remove_all(dir.path() / "val" / "b");
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(dir.path(), {}); },
                                       "val/ has the classes [a] but train/ has [a, b]");
}

TEST(DataImageFolderSplits, GivenSizeChannelsAndALargeFirstImageIsCapped) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path() / "train", {"a", "b"}, 2, 200, 100);
  write_classes(dir.path() / "test", {"a", "b"}, 1, 200, 100);
  ImageFolderSplits s = load_image_folder_splits(dir.path(), {});
  EXPECT_EQ(s.train.height(), 64);  // min(100, 200), capped at kAutoMaxSide
  EXPECT_EQ(s.train.width(), 64);
  s = load_image_folder_splits(dir.path(), {.size = 16, .channels = 1});
  EXPECT_EQ(s.train.channels(), 1);
  EXPECT_EQ(s.train.height(), 16);
  EXPECT_EQ(s.train.mean.size(), 1u);
}

TEST(DataImageFolderSplits, OneLevelFolderIsSplitPerClassBySeed) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path(), {"cat", "dog", "eel"}, 10, 8, 8, 1);
  ImageFolderSplits a = load_image_folder_splits(dir.path(), {.test_fraction = 0.2, .seed = 1});
  EXPECT_EQ(a.layout, "one folder of classes, seeded split (80/20)");
  EXPECT_EQ(a.train.size(), 24);
  EXPECT_EQ(a.test.size(), 6);
  EXPECT_EQ(a.train.channels(), 1);  // grey PNGs
  std::vector<int64_t> per_class(3, 0);
  for (int64_t y : a.test.labels.to_vector<int64_t>()) ++per_class[size_t(y)];
  EXPECT_EQ(per_class, (std::vector<int64_t>{2, 2, 2}));
  // Same seed: the same split; another seed: another one. No image is in both splits.
  ImageFolderSplits b = load_image_folder_splits(dir.path(), {.test_fraction = 0.2, .seed = 1});
  ImageFolderSplits c = load_image_folder_splits(dir.path(), {.test_fraction = 0.2, .seed = 2});
  auto pixels = [](const Dataset& d) { return d.images.to_vector<uint8_t>(); };
  EXPECT_EQ(pixels(a.test), pixels(b.test));
  EXPECT_NE(pixels(a.test), pixels(c.test));
  std::vector<uint8_t> tr = pixels(a.train), te = pixels(a.test);  // each image is one grey value
  for (size_t i = 0; i < te.size(); i += 64)
    for (size_t j = 0; j < tr.size(); j += 64) ASSERT_NE(te[i], tr[j]);
  // Eval's view: only the test split, with the run's classes and statistics.
  ImageFolderSplits only = load_image_folder_splits(
      dir.path(), {.test_fraction = 0.2, .seed = 1, .load_train = false, .classes = a.train.classes,
                   .mean = a.train.mean, .std = a.train.std});
  EXPECT_EQ(only.train.size(), 0);
  EXPECT_EQ(pixels(only.test), pixels(a.test));
  EXPECT_EQ(only.test.mean, a.train.mean);
}

TEST(DataImageFolderSplits, BadLayoutsSayWhatIsWrong) {
  ember::test::TempDir dir("splits");
  ember::test::expect_error<IOError>([&] { load_image_folder_splits(dir.path() / "nope", {}); }, "not a directory");
  write_classes(dir.path() / "train", {"a", "b"}, 2, 8, 8);
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(dir.path(), {}); }, "train/ but no test/");
  write_classes(dir.path() / "test", {"a", "c"}, 1, 8, 8);
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(dir.path(), {}); },
                                       "test/ has the classes [a, c] but train/ has [a, b]");
  fs::remove_all(dir.path() / "test");
  write_classes(dir.path() / "test", {"a", "b"}, 1, 8, 8);
  ember::test::expect_error<DataError>(
      [&] { load_image_folder_splits(dir.path(), {.load_train = false, .classes = {"x", "y"}, .mean = {0.5f, 0.5f, 0.5f},
                                                   .std = {0.2f, 0.2f, 0.2f}}); },
      "the trained run has [x, y]");
  ember::test::expect_error<ValueError>([&] { load_image_folder_splits(dir.path(), {.channels = 2}); },
                                        "channels must be 1 or 3");
  ember::test::TempDir one("splits");
  write_classes(one.path(), {"a", "b"}, 1, 8, 8);  // one image per class: nothing to hold out
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(one.path(), {}); }, "too few images");
}
