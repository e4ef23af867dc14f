// Defects a read of the CUDA backend found before any GPU run (issue 23), one test each; all need a
// GPU and skip here with the reason:
//   - polling an unfinished event (cuda::event_done, used by the stager and the NCCL group) must not
//     leave cudaErrorNotReady behind for the next launch check to blame on an unrelated kernel;
//   - float64 convolutions find a cuDNN algorithm (each candidate's math type set on the descriptor);
//   - the loader's pinned pool waits for its copies before it frees the pinned memory.
// The NCCL barrier buffer's clearing on the group's stream runs in DistNccl.WorldOfOne_CUDA (its
// barrier right after the group is made).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backends/runtime.h"
#include "ember/data/loader.h"
#include "support/compare.h"
#ifdef EMBER_WITH_CUDA
#include <cuda_runtime_api.h>

#include "cuda/check.h"
#endif

using namespace ember;

namespace {

const Device kGpu = Device::cuda(0);

#define SKIP_WITHOUT_GPU() \
  if (ember::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device: " << ember::cuda_unavailable_reason()

}  // namespace

#ifdef EMBER_WITH_CUDA
namespace {
// A host function that holds its stream until *flag is set: everything queued after it stays unfinished.
void CUDART_CB hold_until_set(void* flag) {
  auto* f = static_cast<std::atomic<bool>*>(flag);
  while (!f->load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
}
}  // namespace

// The test binary's own CUDA runtime (cudart_static, linked for this test) holds the stream and makes
// the event; libember's runtime (a separate copy) polls it through event_done, which is the state
// whose last error matters: the ember op after the poll runs its launch check there.
TEST(CudaEvents, PollingAnUnfinishedEventLeavesNoErrorForTheNextLaunch_CUDA) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s = nullptr;
  cudaEvent_t ev = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
  // Under CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer the launch of the host function returns only once
  // it has run, so it would wait for a release this thread has not yet given (the H200 run of
  // 2026-12-04 hung here in both): a watchdog releases it after 5 s, and the test then skips.
  std::atomic<bool> release{false}, watchdog_released{false};
  std::jthread watchdog([&] {  // joined on every return, an ASSERT's too
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!release.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!release.exchange(true)) watchdog_released = true;
  });
  ASSERT_EQ(cudaLaunchHostFunc(s, hold_until_set, &release), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(ev, s), cudaSuccess);
  if (watchdog_released.load()) {
    watchdog.join();
    cudaStreamSynchronize(s);
    cudaEventDestroy(ev);
    cudaStreamDestroy(s);
    GTEST_SKIP() << "launches are serialised here (CUDA_LAUNCH_BLOCKING=1 or a sanitizer): a stream cannot be "
                    "held while this thread goes on";
  }

  EXPECT_FALSE(cuda::event_done(ev)) << "the event cannot have completed: its stream is held";
  // A kernel launch with its launch check on this thread: it must not throw cudaErrorNotReady.
  Tensor y;
  EXPECT_NO_THROW(y = ones({1024}, {.device = kGpu}) * 3.0);
  release = true;
  watchdog.join();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(cuda::event_done(ev));
  EXPECT_EQ(y.to(Device::cpu()).to_vector<float>(), std::vector<float>(1024, 3.0f));
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
}
#endif

// float64 convolutions: forward and both gradients on cuDNN against the CPU, with groups, stride,
// padding and dilation. The descriptor used to be fixed to FMA math, so a candidate cuDNN offered
// under another math type was rejected and float64 could end with "cuDNN offers no algorithm".
TEST(CudaConv, Float64FindsAnAlgorithmAndMatchesTheCpu_CUDA) {
  SKIP_WITHOUT_GPU();
  namespace F = nn::functional;
  Generator g(23);
  const Tensor x = randn({2, 4, 11, 9}, {.dtype = DType::Float64}, &g);
  const Tensor w = randn({6, 2, 3, 3}, {.dtype = DType::Float64}, &g);
  const Tensor b = randn({6}, {.dtype = DType::Float64}, &g);
  const F::Conv2dOptions opt{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}, .groups = 2};
  auto run = [&](Device d, Tensor* gx, Tensor* gw) {
    Tensor xd = x.to(d).detach().clone(), wd = w.to(d).detach().clone();  // fresh leaves on each device
    xd.requires_grad_();
    wd.requires_grad_();
    Tensor y = F::conv2d(xd, wd, b.to(d), opt);
    (y * y).sum().backward();
    *gx = xd.grad().to(Device::cpu());
    *gw = wd.grad().to(Device::cpu());
    return y.to(Device::cpu());
  };
  Tensor cgx, cgw, ggx, ggw;
  const Tensor cy = run(Device::cpu(), &cgx, &cgw);
  Tensor gy;
  ASSERT_NO_THROW(gy = run(kGpu, &ggx, &ggw));
  EXPECT_TRUE(test::close(cy, gy, 1e-12)) << "forward";
  EXPECT_TRUE(test::close(cgx, ggx, 1e-12)) << "input gradient";
  EXPECT_TRUE(test::close(cgw, ggw, 1e-12)) << "weight gradient";
}

// The loader made, one large batch staged and the loader destroyed at once, twenty times: the
// pinned pool's destructor runs while the upload may still read its blocks. It must wait for those
// copies (the batch must arrive whole; compute-sanitizer's memcheck in scripts/gpu-check.sh would
// report a read of freed host memory), and no CUDA error may be left for the next launch.
TEST(CudaLoader, DestroyedWithCopiesInFlight_CUDA) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 8, c = 3, hw = 256;  // 1.5 MiB of float32 per batch: a copy that takes a while
  std::vector<uint8_t> px(size_t(n * c * hw * hw));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 2654435761u) >> 11);
  std::vector<int64_t> labels(size_t(n), 1);
  const data::Dataset ds =
      data::dataset_from_tensors(from_blob_copy(px.data(), {n, c, hw, hw}, DType::UInt8), tensor(labels), 10);
  data::LoaderOptions o;
  o.batch_size = n;
  data::DataLoader cpu(ds, o);
  cpu.begin_epoch(0);
  const std::vector<float> want = cpu.next()->x.to_vector<float>();
  o.device = kGpu;
  for (int round = 0; round < 20; ++round) {
    Tensor x;
    {
      data::DataLoader gpu(ds, o);
      gpu.begin_epoch(0);
      x = gpu.next()->x;
    }  // the loader (and its pinned pool) goes here, the upload perhaps still running
    ASSERT_EQ(x.to(Device::cpu()).to_vector<float>(), want) << "round " << round;
  }
}
