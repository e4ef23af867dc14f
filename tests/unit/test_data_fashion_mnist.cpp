// Real-data smoke test: the Debian Fashion-MNIST files load by name, hold their uint8 once, and a
// full augmented epoch through the loader sees every sample once with sane statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ember/data/loader.h"

using namespace ember;
using namespace ember::data;

TEST(DataFashionMnist, LoadsByNameAndRunsAnEpoch) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  }
  Dataset ds = load_dataset("fashion-mnist");
  ASSERT_EQ(ds.images.sizes(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(ds.labels.to_vector<int64_t>()[0], 9);
  EXPECT_EQ(ds.labels.to_vector<int64_t>()[3], 3);
  EXPECT_EQ(ds.classes[9], "Ankle boot");
  // The table `ember export` reads the input shape from, without loading the data.
  EXPECT_EQ((Shape{known_dataset("fashion-mnist").channels, known_dataset("fashion-mnist").size}), (Shape{ds.channels(), ds.height()}));
  EXPECT_EQ(ds.height(), ds.width());
  EXPECT_LE(double(ds.nbytes()), 1.1 * (47040000.0 + 60000 * 8));  // uint8 once + int64 labels

  // The known mean/std match the pixels.
  std::vector<float> mean, sd;
  compute_mean_std(ds.images, mean, sd);
  EXPECT_NEAR(mean[0], 0.2860, 5e-4);
  EXPECT_NEAR(sd[0], 0.3530, 5e-4);

  LoaderOptions o;
  o.batch_size = 64;
  o.workers = 1;
  o.seed = 1;
  o.transforms.crop_padding = 2;
  o.transforms.hflip_p = 0.5;
  DataLoader loader(ds, o);
  EXPECT_EQ(loader.steps_per_epoch(), 938);
  loader.begin_epoch(0);
  int64_t batches = 0, samples = 0;
  double sum = 0;
  std::vector<int64_t> per_class(10, 0);
  while (auto b = loader.next()) {
    ++batches;
    samples += b->y.numel();
    for (float v : b->x.to_vector<float>()) sum += v;
    for (int64_t y : b->y.to_vector<int64_t>()) ++per_class[size_t(y)];
  }
  EXPECT_EQ(batches, 938);
  EXPECT_EQ(samples, 60000);
  for (int64_t c : per_class) EXPECT_EQ(c, 6000);
  // Normalised with the dataset's mean/std: the mean is near 0 (slightly below, from the zero padding).
  const double m = sum / (60000.0 * 784);
  EXPECT_LT(std::abs(m), 0.1) << m;
  EXPECT_EQ(loader.stats().batches, 938);
}
