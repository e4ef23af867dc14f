// The data loader on CUDA: the pinned-memory, copy-stream stager (src/cuda/stager.cpp) and the
// device-resident gather kernel (src/cuda/data.cu) must deliver exactly the CPU loader's batches,
// for every worker count and prefetch depth, whether the consumer drops each batch at once (the
// buffers are reused) or keeps them all (the pools grow). Tests named *_CUDA skip without a GPU.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <vector>

#include "backends/runtime.h"
#include "ember/data/loader.h"
#ifdef EMBER_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace ember;
using namespace ember::data;

namespace {

const Device kGpu = Device::cuda(0);

Dataset textured_dataset(int64_t n) {
  std::vector<uint8_t> px(size_t(n * 3 * 8 * 8));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 2654435761u) >> 13);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = (i * 7) % 10;
  return dataset_from_tensors(from_blob_copy(px.data(), {n, 3, 8, 8}, DType::UInt8), tensor(labels), 10);
}

LoaderOptions base_options(bool augment) {
  LoaderOptions o;
  o.batch_size = 6;  // 45 samples: 7 full batches and one of 3
  o.seed = 123;
  o.transforms.mean = {0.5f, 0.4f, 0.3f};
  o.transforms.std = {0.2f, 0.25f, 0.3f};
  if (augment) {
    o.transforms.crop_padding = 3;
    o.transforms.pad_mode = PadMode::Reflect;
    o.transforms.hflip_p = 0.5;
    o.transforms.erase_p = 0.3;
  }
  return o;
}

void expect_same_batch(const Batch& cpu, const Batch& gpu, const char* what) {
  ASSERT_EQ(gpu.x.device(), kGpu) << what;
  ASSERT_EQ(gpu.y.device(), kGpu) << what;
  ASSERT_EQ(cpu.x.sizes(), gpu.x.sizes()) << what;
  EXPECT_EQ(cpu.epoch, gpu.epoch) << what;
  EXPECT_EQ(cpu.step, gpu.step) << what;
  EXPECT_EQ(cpu.x.to_vector<float>(), gpu.x.to(Device::cpu()).to_vector<float>()) << what << " step " << cpu.step;
  EXPECT_EQ(cpu.y.to_vector<int64_t>(), gpu.y.to(Device::cpu()).to_vector<int64_t>()) << what << " step " << cpu.step;
}

// Two epochs of the CPU loader and of the same loader on cuda:0, batch by batch. keep: hold every
// GPU batch until the end (the stager must not reuse their buffers).
void compare_epochs(const LoaderOptions& o, bool keep, const char* what) {
  Dataset ds = textured_dataset(45);
  DataLoader cpu(ds, o);
  LoaderOptions g = o;
  g.device = kGpu;
  DataLoader gpu(ds, g);
  std::vector<Batch> kept_cpu, kept_gpu;
  for (int64_t epoch : {0, 1}) {
    cpu.begin_epoch(epoch);
    gpu.begin_epoch(epoch);
    for (;;) {
      auto c = cpu.next();
      auto x = gpu.next();
      ASSERT_EQ(c.has_value(), x.has_value()) << what;
      if (!c) break;
      if (keep) {
        kept_cpu.push_back(*c);
        kept_gpu.push_back(*x);
      } else {
        expect_same_batch(*c, *x, what);
      }
    }
  }
  for (size_t i = 0; i < kept_cpu.size(); ++i) expect_same_batch(kept_cpu[i], kept_gpu[i], what);
}

}  // namespace

TEST(CudaLoader, StagedBatchesEqualTheCpuBatches_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  for (int workers : {0, 1, 2})
    for (int prefetch : {1, 3})
      for (bool keep : {false, true}) {
        LoaderOptions o = base_options(true);
        o.workers = workers;
        o.prefetch = prefetch;
        compare_epochs(o, keep, keep ? "staged, batches kept" : "staged, batches dropped");
      }
}

#ifdef EMBER_WITH_CUDA
// Dropping each batch at once, later epochs reuse the first one's device blocks: no growth.
TEST(CudaLoader, StagerReusesItsDeviceBuffers_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  LoaderOptions o = base_options(false);
  o.device = kGpu;
  DataLoader loader(textured_dataset(45), o);
  uint64_t after_first = 0;
  for (int64_t epoch : {0, 1, 2}) {
    loader.begin_epoch(epoch);
    while (auto b = loader.next()) {
    }
    if (epoch == 0) after_first = cuda::memory_stats(0).allocated;
  }
  EXPECT_EQ(cuda::memory_stats(0).allocated, after_first);
}
#endif

TEST(CudaLoader, DeviceResidentBatchesEqualTheCpuBatches_CUDA) {
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason();
  for (bool normalize : {false, true}) {
    LoaderOptions o = base_options(false);
    o.transforms.normalize = normalize;
    o.device_resident = true;
    LoaderOptions g = o;
    g.device = kGpu;
    EXPECT_TRUE(DataLoader(textured_dataset(45), g).resident());
    compare_epochs(o, false, normalize ? "resident, normalised" : "resident, scaled");
  }
  // With augmentation the device path does not apply: the loader stages instead, same batches.
  LoaderOptions aug = base_options(true);
  aug.device_resident = true;
  LoaderOptions g = aug;
  g.device = kGpu;
  EXPECT_FALSE(DataLoader(textured_dataset(45), g).resident());
  compare_epochs(aug, false, "resident requested with augmentation");
}
