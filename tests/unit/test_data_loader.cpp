// DataLoader tests: every sample once per epoch, drop_last, shuffle orders (different per epoch,
// reproducible), exact resume at (epoch, step), identical batches for 0/1/2 workers and the
// resident path, the uint8 data held once, accounting, and bad options.
#include <gtest/gtest.h>

#include "ember/core/threads.h"

#include <set>

#include "support/files.h"
#include "ember/core/error.h"
#include "ember/data/loader.h"

using namespace ember;
using namespace ember::data;

namespace {

// n images of (c, h, w); every pixel of image i is i (so a batch reveals which samples it holds),
// label i % 10.
Dataset index_dataset(int64_t n, int64_t c = 1, int64_t h = 4, int64_t w = 4) {
  std::vector<uint8_t> px(size_t(n * c * h * w));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < c * h * w; ++k) px[size_t(i * c * h * w + k)] = uint8_t(i);
  }
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = i % 10;
  return dataset_from_tensors(from_blob_copy(px.data(), {n, c, h, w}, DType::UInt8), tensor(labels), 10);
}

// A dataset with varied pixels, for augmentation comparisons.
Dataset textured_dataset(int64_t n) {
  std::vector<uint8_t> px(size_t(n * 3 * 8 * 8));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 2654435761u) >> 13);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = (i * 7) % 10;
  return dataset_from_tensors(from_blob_copy(px.data(), {n, 3, 8, 8}, DType::UInt8), tensor(labels), 10);
}

LoaderOptions raw_options(int64_t batch, bool shuffle, int workers) {
  LoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.workers = workers;
  o.seed = 7;
  o.transforms.scale = false;
  o.transforms.normalize = false;
  return o;
}

// Sample ids (pixel 0 of each image) of every batch of one epoch.
std::vector<std::vector<int64_t>> epoch_ids(DataLoader& loader, int64_t epoch, int64_t start = 0) {
  std::vector<std::vector<int64_t>> out;
  loader.begin_epoch(epoch, start);
  while (auto b = loader.next()) {
    EXPECT_EQ(b->epoch, epoch);
    EXPECT_EQ(b->step, start + int64_t(out.size()));
    const auto x = b->x.to_vector<float>();
    const auto y = b->y.to_vector<int64_t>();
    const int64_t per = b->x.numel() / b->x.size(0);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < b->x.size(0); ++i) {
      ids.push_back(int64_t(x[size_t(i * per)]));
      EXPECT_EQ(y[size_t(i)], ids.back() % 10);  // labels travel with their images
    }
    out.push_back(ids);
  }
  return out;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& v) {
  std::vector<int64_t> f;
  for (const auto& b : v) f.insert(f.end(), b.begin(), b.end());
  return f;
}

void expect_same_batches(const Batch& a, const Batch& b) {
  ASSERT_EQ(a.x.sizes(), b.x.sizes());
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.x.to_vector<float>(), b.x.to_vector<float>());
  EXPECT_EQ(a.y.to_vector<int64_t>(), b.y.to_vector<int64_t>());
}

}  // namespace

// --workers when not given: photos get the cores the compute threads leave, tensor sets one.
TEST(DataLoader, DefaultWorkersAreTheCoresTheComputeThreadsLeaveForPhotos) {
  using ember::data::default_loader_workers;
  EXPECT_EQ(default_loader_workers(false, true, 1, 16), 1);   // tensors: a gather needs one
  EXPECT_EQ(default_loader_workers(true, true, 16, 16), 15);  // CUDA: all but the thread driving the GPU
  EXPECT_EQ(default_loader_workers(true, false, 12, 16), 4);  // CPU: what --threads 12 leaves
  EXPECT_EQ(default_loader_workers(true, false, 2, 2), 1);    // at least one
  EXPECT_EQ(default_loader_workers(true, true, 1, 1), 1);
  EXPECT_GE(ember::usable_cores(), 1);
}

TEST(DataLoader, EverySampleExactlyOncePerEpoch) {
  for (int workers : {0, 1, 2}) {
    DataLoader loader(index_dataset(103), raw_options(10, true, workers));
    EXPECT_EQ(loader.steps_per_epoch(), 11);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      auto batches = epoch_ids(loader, epoch);
      ASSERT_EQ(batches.size(), 11u);
      EXPECT_EQ(batches.back().size(), 3u);  // the partial last batch is kept
      auto ids = flat(batches);
      std::set<int64_t> unique(ids.begin(), ids.end());
      EXPECT_EQ(ids.size(), 103u);
      EXPECT_EQ(unique.size(), 103u);
      EXPECT_EQ(*unique.begin(), 0);
      EXPECT_EQ(*unique.rbegin(), 102);
    }
  }
}

TEST(DataLoader, DropLast) {
  auto o = raw_options(10, true, 1);
  o.drop_last = true;
  DataLoader loader(index_dataset(103), o);
  EXPECT_EQ(loader.steps_per_epoch(), 10);
  auto batches = epoch_ids(loader, 0);
  ASSERT_EQ(batches.size(), 10u);
  for (const auto& b : batches) EXPECT_EQ(b.size(), 10u);
  std::set<int64_t> unique;
  for (auto id : flat(batches)) unique.insert(id);
  EXPECT_EQ(unique.size(), 100u);
}

TEST(DataLoader, NoShuffleIsInOrder) {
  DataLoader loader(index_dataset(25), raw_options(8, false, 1));
  auto ids = flat(epoch_ids(loader, 5));
  for (int64_t i = 0; i < 25; ++i) EXPECT_EQ(ids[size_t(i)], i);
}

TEST(DataLoader, EpochOrdersDifferAndAreReproducible) {
  DataLoader a(index_dataset(200), raw_options(16, true, 1));
  DataLoader b(index_dataset(200), raw_options(16, true, 2));
  const auto a0 = flat(epoch_ids(a, 0)), a1 = flat(epoch_ids(a, 1));
  EXPECT_NE(a0, a1);
  EXPECT_EQ(flat(epoch_ids(b, 1)), a1);  // another loader, other worker count, same (seed, epoch)
  EXPECT_EQ(flat(epoch_ids(b, 0)), a0);
  EXPECT_EQ(flat(epoch_ids(a, 0)), a0);  // going back to an epoch repeats it
  EXPECT_EQ(a.epoch_order(1), a1);
  std::vector<int64_t> identity(200);
  for (int64_t i = 0; i < 200; ++i) identity[size_t(i)] = i;
  EXPECT_NE(a0, identity);

  auto other_seed = raw_options(16, true, 1);
  other_seed.seed = 8;
  DataLoader c(index_dataset(200), other_seed);
  EXPECT_NE(flat(epoch_ids(c, 0)), a0);
}

TEST(DataLoader, ResumeYieldsExactlyTheRemainingBatches) {
  auto o = raw_options(8, true, 2);
  o.transforms.crop_padding = 2;
  o.transforms.hflip_p = 0.5;
  o.transforms.erase_p = 0.5;
  o.transforms.scale = o.transforms.normalize = true;
  Dataset ds = textured_dataset(70);
  DataLoader straight(ds, o);
  straight.begin_epoch(0);
  while (straight.next()) {
  }
  std::vector<Batch> rest;
  straight.begin_epoch(1);
  while (auto b = straight.next()) rest.push_back(*b);
  ASSERT_EQ(rest.size(), 9u);

  DataLoader resumed(ds, o);  // a fresh process, resuming at (epoch 1, step 4)
  resumed.begin_epoch(1, 4);
  std::vector<Batch> got;
  while (auto b = resumed.next()) got.push_back(*b);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) expect_same_batches(got[i], rest[4 + i]);

  // start_step == steps_per_epoch is an empty remainder; beyond it is an error.
  resumed.begin_epoch(1, 9);
  EXPECT_FALSE(resumed.next().has_value());
  ember::test::expect_error<IndexError>([&] { resumed.begin_epoch(1, 10); }, "start_step 10");
}

TEST(DataLoader, WorkerCountsAndResidentModeGiveIdenticalBatches) {
  Dataset ds = textured_dataset(45);
  LoaderOptions o;
  o.batch_size = 6;
  o.seed = 123;
  o.transforms.crop_padding = 3;
  o.transforms.pad_mode = PadMode::Reflect;
  o.transforms.hflip_p = 0.5;
  o.transforms.erase_p = 0.3;
  std::vector<std::vector<Batch>> runs;
  for (int mode = 0; mode < 5; ++mode) {
    LoaderOptions m = o;
    m.workers = mode < 3 ? mode : 1;
    m.prefetch = mode == 3 ? 1 : 3;
    m.device_resident = mode == 4;
    DataLoader loader(ds, m);
    EXPECT_EQ(loader.resident(), mode == 4);
    std::vector<Batch> batches;
    loader.begin_epoch(2);
    for (Batch& b : loader) batches.push_back(b);
    runs.push_back(batches);
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].size(), runs[0].size()) << "run " << r;
    for (size_t i = 0; i < runs[0].size(); ++i) expect_same_batches(runs[r][i], runs[0][i]);
  }
  // make_batch is the same reference path.
  DataLoader ref(ds, o);
  expect_same_batches(ref.make_batch(2, 3), runs[0][3]);
}

TEST(DataLoader, BatchesAreNormalisedFloatOnTheDevice) {
  Dataset ds = textured_dataset(10);
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  DataLoader loader(ds, o);
  loader.begin_epoch(0);
  auto b = loader.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->x.dtype(), DType::Float32);
  EXPECT_EQ(b->x.sizes(), (Shape{4, 3, 8, 8}));
  EXPECT_EQ(b->y.dtype(), DType::Int64);
  EXPECT_TRUE(b->x.device() == Device::cpu());
  const uint8_t v = ds.images.data_ptr<uint8_t>()[64 + 5];  // image 0, channel 1, pixel 5
  EXPECT_EQ(b->x.to_vector<float>()[64 + 5], (float(v) / 255.0f - ds.mean[1]) / ds.std[1]);
}

TEST(DataLoader, HoldsTheUint8DataOnce) {
  // The reader's buffer is adopted, not copied.
  LabeledImages li;
  li.n = 50;
  li.c = 1;
  li.h = li.w = 28;
  li.num_classes = 10;
  li.images.assign(size_t(50 * 28 * 28), 3);
  li.labels.assign(50, 1);
  const void* buffer = li.images.data();
  Dataset ds = dataset_from_labeled_images(std::move(li), "t");
  EXPECT_EQ(ds.images.raw_data(), buffer);
  EXPECT_EQ(ds.images.nbytes(), size_t(50 * 28 * 28));
  EXPECT_LE(double(ds.nbytes()), 1.1 * double(50 * 28 * 28 + 50 * 8));

  // The loader shares the dataset's tensor and holds no float copy of it.
  DataLoader loader(ds, raw_options(8, true, 2));
  EXPECT_EQ(loader.dataset().images.raw_data(), buffer);
  EXPECT_EQ(loader.dataset().images.storage().get(), ds.images.storage().get());
  loader.begin_epoch(0);
  while (loader.next()) {
  }
  EXPECT_EQ(loader.dataset().images.raw_data(), buffer);
}

TEST(DataLoader, StatsAccountWaitAgainstTotal) {
  DataLoader loader(textured_dataset(40), raw_options(8, true, 1));
  loader.begin_epoch(0);
  int n = 0;
  while (loader.next()) ++n;
  const LoaderStats& s = loader.stats();
  EXPECT_EQ(s.batches, 5);
  EXPECT_EQ(s.samples, 40);
  EXPECT_GE(s.wait_seconds, 0.0);
  EXPECT_LE(s.wait_seconds, s.total_seconds);
  EXPECT_GE(s.wait_fraction(), 0.0);
  EXPECT_LE(s.wait_fraction(), 1.0);
  loader.begin_epoch(1);
  ASSERT_EQ(loader.history().size(), 1u);
  EXPECT_EQ(loader.history()[0].epoch, 0);
  EXPECT_EQ(loader.stats().batches, 0);
}

TEST(DataLoader, BadOptionsAndDatasets) {
  Dataset ds = index_dataset(10);
  auto o = raw_options(0, true, 1);
  ember::test::expect_error<ValueError>([&] { DataLoader l(ds, o); }, "batch_size must be >= 1");
  o = raw_options(4, true, -1);
  ember::test::expect_error<ValueError>([&] { DataLoader l(ds, o); }, "workers must be >= 0");
  o = raw_options(4, true, 1);
  o.prefetch = 0;
  ember::test::expect_error<ValueError>([&] { DataLoader l(ds, o); }, "prefetch must be >= 1");
  ember::test::expect_error<DTypeError>(
      [&] { dataset_from_tensors(zeros({2, 1, 2, 2}), tensor(std::vector<int64_t>{0, 1})); }, "must be uint8");
  ember::test::expect_error<ShapeError>(
      [&] { dataset_from_tensors(zeros({2, 1, 2, 2}, {.dtype = DType::UInt8}), tensor(std::vector<int64_t>{0})); },
      "do not match 2 images");
  ember::test::expect_error<ValueError>(
      [&] {
        dataset_from_tensors(zeros({2, 2, 2}, {.dtype = DType::UInt8}), tensor(std::vector<int64_t>{0, 5}), 3);
      },
      "label 5 is not below 3 classes");
}

TEST(DataLoader, TensorsDatasetComputesMeanStd) {
  std::vector<uint8_t> px = {0, 255, 0, 255};
  Dataset ds = dataset_from_tensors(from_blob_copy(px.data(), {2, 2, 1}, DType::UInt8),
                                    tensor(std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ds.channels(), 1);
  EXPECT_EQ(ds.num_classes(), 2);
  EXPECT_FLOAT_EQ(ds.mean[0], 0.5f);
  EXPECT_FLOAT_EQ(ds.std[0], 0.5f);
}
