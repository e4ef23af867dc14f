// Image folder and known-dataset tests: PNG/PPM decoding into (N, C, H, W), class order, resize
// and centre crop, a corrupt file (warning naming it, or DataError under strict), and loading
// MNIST-named IDX files from a data_dir, plus the message for a missing dataset.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/files.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"

using namespace ember;
using namespace ember::data;
using ember::test::Bytes;
namespace fs = std::filesystem;

namespace {

// A 4x4 RGB image whose every pixel is (r, g, b).
Bytes solid_rgb(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  Bytes px;
  for (int i = 0; i < w * h; ++i) px.insert(px.end(), {r, g, b});
  return px;
}

void write_folder(const fs::path& root) {
  ember::test::write_bytes(root / "cat" / "a.png", ember::test::make_png(4, 4, 3, solid_rgb(4, 4, 10, 20, 30)));
  ember::test::write_bytes(root / "cat" / "b.png", ember::test::make_png(4, 4, 3, solid_rgb(4, 4, 40, 50, 60)));
  ember::test::write_bytes(root / "ant" / "z.png", ember::test::make_png(4, 4, 3, solid_rgb(4, 4, 1, 2, 3)));
  std::string ppm = "P6\n4 4\n255\n";  // stb reads PNM too
  Bytes px = solid_rgb(4, 4, 7, 8, 9);
  ppm.append(px.begin(), px.end());
  ember::test::write_text(root / "dog" / "p.ppm", ppm);
  ember::test::write_text(root / "dog" / "notes.txt", "not an image, ignored by extension");
}

}  // namespace

TEST(DataImageFolder, ClassesSortedAndPixelsPlanar) {
  ember::test::TempDir dir("imgfolder");
  write_folder(dir.path());
  ImageFolderOptions o;
  o.height = o.width = 4;
  ImageFolderReport rep;
  Dataset ds = load_image_folder(dir.path(), o, &rep);
  EXPECT_EQ(rep.loaded, 4);
  EXPECT_TRUE(rep.warnings.empty());
  EXPECT_EQ(ds.classes, (std::vector<std::string>{"ant", "cat", "dog"}));
  EXPECT_EQ(ds.images.sizes(), (Shape{4, 3, 4, 4}));
  EXPECT_EQ(ds.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2}));
  const uint8_t* p = ds.images.data_ptr<uint8_t>();
  // sample 1 = cat/a.png: R plane all 10, G plane all 20, B plane all 30
  EXPECT_EQ(p[48 + 0], 10);
  EXPECT_EQ(p[48 + 16 + 5], 20);
  EXPECT_EQ(p[48 + 32 + 15], 30);
  EXPECT_EQ(p[3 * 48 + 16], 8);  // dog/p.ppm green
  ASSERT_EQ(ds.mean.size(), 3u);  // computed from the pixels
}

TEST(DataImageFolder, ResizeCenterCropAndGrey) {
  ember::test::TempDir dir("imgfolder");
  // 8 wide x 4 high: left half 0, right half 200, grey.
  Bytes px(32);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 8; ++x) px[size_t(y * 8 + x)] = x < 4 ? 0 : 200;
  }
  ember::test::write_bytes(dir.path() / "only" / "wide.png", ember::test::make_png(8, 4, 1, px));
  ImageFolderOptions o;
  o.channels = 1;
  o.height = 2;
  o.width = 2;
  o.resize = ResizeMode::CenterCrop;  // scale to 4x2 then take the centre 2x2: straddles the edge
  Dataset crop = load_image_folder(dir.path(), o);
  EXPECT_EQ(crop.images.sizes(), (Shape{1, 1, 2, 2}));
  auto c = crop.images.to_vector<uint8_t>();
  EXPECT_LT(c[0], c[1]);  // dark on the left, bright on the right
  o.resize = ResizeMode::Resize;
  o.height = 4;
  o.width = 8;
  Dataset same = load_image_folder(dir.path(), o);
  EXPECT_EQ(same.images.to_vector<uint8_t>(), std::vector<uint8_t>(px.begin(), px.end()));  // no-op size
}

TEST(DataImageFolder, CorruptImageIsSkippedWithAWarningOrAnErrorUnderStrict) {
  ember::test::TempDir dir("imgfolder");
  write_folder(dir.path());
  ember::test::write_text(dir.path() / "cat" / "broken.png", "this is not a PNG at all");
  ImageFolderOptions o;
  o.height = o.width = 4;
  ImageFolderReport rep;
  testing::internal::CaptureStderr();
  Dataset ds = load_image_folder(dir.path(), o, &rep);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(ds.size(), 4);
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_TRUE(ember::test::contains(rep.warnings[0], "broken.png")) << rep.warnings[0];
  EXPECT_TRUE(ember::test::contains(rep.warnings[0], "expected a PNG")) << rep.warnings[0];
  EXPECT_TRUE(ember::test::contains(rep.warnings[0], "74 68 69 73")) << rep.warnings[0];  // "this"
  EXPECT_TRUE(ember::test::contains(err, "warning: skipping")) << err;
  EXPECT_TRUE(ember::test::contains(err, "broken.png")) << err;

  o.strict = true;
  ember::test::expect_error<DataError>([&] { load_image_folder(dir.path(), o); }, "broken.png: cannot decode image");

  // A PNG cut short is also named.
  Bytes good = ember::test::make_png(4, 4, 3, solid_rgb(4, 4, 1, 1, 1));
  good.resize(good.size() / 2);
  ember::test::write_bytes(dir.path() / "ant" / "cut.png", good);
  ember::test::expect_error<DataError>([&] { load_image_folder(dir.path(), o); }, "cut.png");
}

TEST(DataImageFolder, BadFolders) {
  ember::test::TempDir dir("imgfolder");
  ember::test::expect_error<IOError>([&] { load_image_folder(dir.path() / "nope"); }, "not a directory");
  ember::test::expect_error<DataError>([&] { load_image_folder(dir.path()); }, "one sub-directory per class");
  ember::test::write_text(dir.path() / "a" / "x.txt", "x");
  ember::test::expect_error<DataError>([&] { load_image_folder(dir.path()); }, "no image files");
}

TEST(DataKnownDatasets, MnistFromDataDir) {
  ember::test::TempDir dir("mnistdir");
  Bytes px(size_t(5 * 28 * 28));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i);
  ember::test::write_bytes(dir.path() / "t10k-images-idx3-ubyte.gz",
                           ember::test::gzip_bytes(ember::test::make_idx({5, 28, 28}, px)));
  ember::test::write_bytes(dir.path() / "t10k-labels-idx1-ubyte", ember::test::make_idx({5}, {3, 1, 4, 1, 5}));
  Dataset ds = load_dataset("mnist", {.data_dir = dir.path(), .train = false});
  EXPECT_EQ(ds.name, "mnist");
  EXPECT_EQ(ds.images.sizes(), (Shape{5, 1, 28, 28}));
  EXPECT_EQ(ds.labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 4, 1, 5}));
  EXPECT_FLOAT_EQ(ds.mean[0], 0.1307f);  // the known statistics, not this tiny set's
  EXPECT_FLOAT_EQ(ds.std[0], 0.3081f);
  EXPECT_EQ(ds.images.to_vector<uint8_t>()[100], uint8_t(100));

  const std::string msg =
      ember::test::expect_error<IOError>([&] { load_dataset("mnist", {.data_dir = dir.path(), .train = true}); },
                                         "train-images-idx3-ubyte");
  try {
    load_dataset("mnist", {.data_dir = dir.path() / "absent"});
  } catch (const IOError& e) {
    EXPECT_TRUE(ember::test::contains(e.what(), "dataset 'mnist' not found")) << e.what();
    EXPECT_TRUE(ember::test::contains(e.hint(), "ember data fetch mnist")) << e.hint();
  }
  ember::test::expect_error<ValueError>([&] { load_dataset("imagenet"); }, "known datasets: fashion-mnist, mnist");
}

TEST(DataKnownDatasets, DefaultDirectories) {
  const char* old = std::getenv("EMBER_DATA_DIR");
  const std::string saved = old ? old : "";
  ::setenv("EMBER_DATA_DIR", "/tmp/ember-data-xyz", 1);
  EXPECT_EQ(default_data_dir("cifar10"), fs::path("/tmp/ember-data-xyz/cifar10"));
  ::unsetenv("EMBER_DATA_DIR");
  EXPECT_TRUE(ember::test::contains(default_data_dir("mnist").string(), ".cache/ember/datasets/mnist"));
  if (fs::is_directory("/usr/share/datasets/fashion-mnist")) {
    EXPECT_EQ(default_data_dir("fashion-mnist"), fs::path("/usr/share/datasets/fashion-mnist"));
  }
  if (old) ::setenv("EMBER_DATA_DIR", saved.c_str(), 1);
  EXPECT_EQ(known_dataset("cifar10").mean.size(), 3u);
  EXPECT_EQ(known_dataset("fashion-mnist").classes[9], "Ankle boot");
}
