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
  EXPECT_EQ(s.size_source, "size 10x10 and colour as all 8 images") << s.size_source;
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

// ---- what a folder leaves out, and folders that make no classifier (issue 22) ----------------------

TEST(DataImageFolderSplits, EmptyClassFoldersAndASingleClassAreRefusedByName) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path(), {"cat", "dog"}, 3, 8, 8);
  fs::create_directories(dir.path() / "eel");                         // empty
  ember::test::write_text(dir.path() / "fox" / "readme.txt", "notes");  // only a text file
  const std::string msg = ember::test::expect_error<DataError>(
      [&] { load_image_folder_splits(dir.path(), {}); }, "2 of its 4 class folders hold no image files (eel, fox)");
  EXPECT_TRUE(ember::test::contains(msg, "fox/readme.txt")) << msg;
  fs::remove_all(dir.path() / "eel");
  fs::remove_all(dir.path() / "fox");
  fs::remove_all(dir.path() / "dog");
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(dir.path(), {}); },
                                       "has one class folder ('cat', 3 images): a classifier needs at least two classes");
  // The same in a train/ folder; an empty class in test/ is only a warning.
  ember::test::TempDir split("splits");
  write_classes(split.path() / "train", {"a", "b"}, 3, 8, 8);
  write_classes(split.path() / "test", {"a"}, 1, 8, 8);
  fs::create_directories(split.path() / "test" / "b");
  ImageFolderSplits s = load_image_folder_splits(split.path(), {});
  EXPECT_EQ(s.test.size(), 1);
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_TRUE(ember::test::contains(s.warnings[0], "test/ has no images of class 'b'")) << s.warnings[0];
}

TEST(DataImageFolderSplits, EntriesLeftOutAreListedWithTheReason) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path(), {"cat", "dog"}, 2, 8, 8);
  ember::test::write_text(dir.path() / "cat" / "notes.txt", "x");
  ember::test::write_text(dir.path() / "cat" / ".DS_Store", "x");  // hidden: left out in silence
  write_classes(dir.path() / "cat", {"more"}, 1, 8, 8);            // cat/more/img0.png: one level only
  fs::create_symlink(dir.path() / "gone.png", dir.path() / "dog" / "link.png");
  ember::test::write_bytes(dir.path() / "loose.png", ember::test::make_png(8, 8, 3, solid(8, 8, 3, 1)));
  fs::create_directories(dir.path() / ".ipynb_checkpoints");  // hidden: not a class
  const ImageFolderListing l = list_image_folder(dir.path());
  EXPECT_EQ(l.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(l.files.size(), 4u);
  EXPECT_EQ(l.not_read, (std::vector<std::string>{"loose.png (a file outside the class folders)",
                                                  "cat/more/ (a folder inside a class folder)",
                                                  "cat/notes.txt (not an image file)",
                                                  "dog/link.png (a dangling symlink)"}));
  const std::string d = describe_not_read(l.not_read);
  EXPECT_TRUE(ember::test::contains(d, "4 entries not read: 1 file that is not an image: cat/notes.txt; 1 dangling "
                                       "symlink: dog/link.png; 1 folder inside a class folder"))
      << d;
  testing::internal::CaptureStderr();
  ImageFolderReport rep;
  Dataset all = load_image_folder(dir.path(), {.height = 8, .width = 8}, &rep);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(all.size(), 4);
  EXPECT_EQ(rep.not_read, l.not_read);
  EXPECT_TRUE(ember::test::contains(err, "4 entries not read")) << err;
}

TEST(DataImageFolderSplits, ValidationFolderIsTheValSplitAndOtherFoldersAreNamed) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path() / "train", {"a", "b"}, 3, 8, 8);
  write_classes(dir.path() / "validation", {"a", "b"}, 2, 8, 8);
  write_classes(dir.path() / "test", {"a", "b"}, 1, 8, 8);
  write_classes(dir.path() / "extra", {"a", "b"}, 1, 8, 8);
  testing::internal::CaptureStderr();
  ImageFolderSplits s = load_image_folder_splits(dir.path(), {});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(s.layout, "train/, validation/ and test/ folders");
  EXPECT_EQ(s.val.size(), 4);
  EXPECT_TRUE(ember::test::contains(err, "not read: extra/")) << err;
  write_classes(dir.path() / "val", {"a", "b"}, 1, 8, 8);
  ember::test::expect_error<DataError>([&] { load_image_folder_splits(dir.path(), {}); },
                                       "has both val/ and validation/");
}

TEST(DataImageFolderSplits, SizeAndChannelsComeFromMostImagesNotTheFirst) {
  ember::test::TempDir dir("splits");
  write_classes(dir.path(), {"b", "c"}, 6, 24, 24, 3);
  // Sorted first: a grey 1x1 image in class "b" (it would have decided both before).
  ember::test::write_bytes(dir.path() / "b" / "a0.png", ember::test::make_png(1, 1, 1, solid(1, 1, 1, 7)));
  ImageFolderSplits s = load_image_folder_splits(dir.path(), {});
  EXPECT_EQ(s.train.channels(), 3);
  EXPECT_EQ(s.train.height(), 24);
  EXPECT_TRUE(ember::test::contains(s.size_source, "size 24x24: the median shorter side of all 13 images (1x1 to 24x24; --image-size to change)"))
      << s.size_source;
  EXPECT_TRUE(ember::test::contains(s.size_source, "; colour as 12 of them (1 grey, converted: a0.png)"))
      << s.size_source;
}
