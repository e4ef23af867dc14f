// The CUDA runtime beyond per-op numerics (those run in the op harness, Ops/*.Parity_CUDA):
// CUDA_VISIBLE_DEVICES parsing, device choice and the errors for a device that is not there (pure,
// every build); transfers of every dtype, the caching allocator, TF32, errors raised by kernels,
// the generator's offset, mixed devices (named *_CUDA: they need a GPU and skip, saying why).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "support/compare.h"
#include "support/errors.h"
#include "support/gpu.h"

#include "backends/runtime.h"
#include "core/visible_devices.h"
#ifdef EMBER_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace ember;
using ember::test::close;
using ember::test::message_of;

namespace {
const Device kGpu = Device::cuda(0);
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Int64, DType::Int32,
                                 DType::UInt8,   DType::Bool,    DType::BFloat16, DType::Float16};

// A (rows, cols) tensor of dtype dt with small values (ints in [lo, hi)), as a transposed view
// of a contiguous (cols, rows) tensor: non-contiguous on purpose.
Tensor sample(DType dt, int64_t rows, int64_t cols, Generator& g, double lo = -3, double hi = 4) {
  Tensor base;
  if (is_floating(dt)) base = rand({cols, rows}, {.dtype = DType::Float64}, &g).mul_(hi - lo).add_(lo).to(dt);
  else if (dt == DType::Bool) base = randint(0, 2, {cols, rows}, {.dtype = DType::Int64}, &g).to(dt);
  else base = randint(int64_t(std::max(lo, dt == DType::UInt8 ? 0.0 : lo)), int64_t(hi), {cols, rows}, {.dtype = DType::Int64}, &g).to(dt);
  return base.t();
}
}  // namespace

// ---- pure: every build, GPU or not ----------------------------------------------------------------
TEST(VisibleDevices, ParsesLikeTheCudaRuntime) {
  EXPECT_TRUE(parse_visible_devices(std::nullopt).all);
  EXPECT_EQ(parse_visible_devices(std::nullopt).count(), -1);
  EXPECT_EQ(visible_device_ordinals(std::string("0,3")), (std::vector<int>{0, 3}));
  EXPECT_EQ(visible_device_ordinals(std::string(" 2 , 0 ")), (std::vector<int>{2, 0}));
  EXPECT_EQ(parse_visible_devices(std::string("")).count(), 0);
  EXPECT_FALSE(parse_visible_devices(std::string("")).all);
  EXPECT_EQ(parse_visible_devices(std::string("-1")).count(), 0);
  EXPECT_EQ(parse_visible_devices(std::string("-1")).stopped_at, "-1");
  EXPECT_EQ(visible_device_ordinals(std::string("0,-1,2")), (std::vector<int>{0}));
  EXPECT_EQ(visible_device_ordinals(std::string("1,x,2")), (std::vector<int>{1}));
  EXPECT_EQ(visible_device_ordinals(std::string("0,,1")), (std::vector<int>{0}));
  EXPECT_EQ(visible_device_ordinals(std::string("1,1,2")), (std::vector<int>{1}));
  EXPECT_EQ(visible_device_ordinals(std::string("3a")), (std::vector<int>{}));
  VisibleDevices u = parse_visible_devices(std::string("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,MIG-1"));
  EXPECT_EQ(u.uuids, (std::vector<std::string>{"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "MIG-1"}));
  EXPECT_EQ(u.count(), 2);
  VisibleDevices mixed = parse_visible_devices(std::string("0,GPU-abc"));
  EXPECT_EQ(mixed.ordinals, (std::vector<int>{0}));
  EXPECT_EQ(mixed.stopped_at, "GPU-abc");
}

TEST(CudaRuntime, WithoutAGpuTheCpuIsChosenAndTheReasonSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(Device::best(), Device::cpu());
  std::string why = cuda_unavailable_reason();
  ASSERT_FALSE(why.empty());
#ifdef EMBER_WITH_CUDA
  EXPECT_TRUE(why.find("driver") != std::string::npos || why.find("device") != std::string::npos) << why;
#else
  EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
#endif
}

// The public API of include/ember/cuda.h (what apps/ember uses instead of core/runtime.h).
TEST(CudaRuntime, ThePublicApiAnswersLikeTheRuntime) {
  EXPECT_EQ(ember::cuda::device_count(), cuda_device_count());
  EXPECT_EQ(ember::cuda::is_available(), cuda_device_count() > 0);
  EXPECT_EQ(ember::cuda::unavailable_reason(), cuda_unavailable_reason());
  if (ember::cuda::is_available()) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_FALSE(ember::cuda::unavailable_reason().empty());
  EXPECT_THROW(ember::cuda::time_ms(0, [] {}, 1), DeviceError);
  EXPECT_THROW(ember::cuda::copy_bandwidth(0, 1 << 20, TimingPlan{}), DeviceError);
}

TEST(CudaRuntime, CreatingATensorOnAMissingDeviceIsADeviceError) {
  const int n = cuda_device_count();
  const Device missing = Device::cuda(n);
  EXPECT_THROW(empty({2}, {.device = missing}), DeviceError);
  std::string msg = message_of([&] { zeros({2}, {.device = missing}); });
#ifdef EMBER_WITH_CUDA
  EXPECT_NE(msg.find(missing.str() + " is not available"), std::string::npos) << msg;
  if (n == 0) {
    EXPECT_NE(msg.find(cuda_unavailable_reason()), std::string::npos) << msg;
  } else {
    EXPECT_NE(msg.find("sees " + std::to_string(n) + " CUDA device"), std::string::npos) << msg;
  }
#else
  EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
#endif
  if (n == 0) EXPECT_THROW(ones({3}).to(kGpu), DeviceError);
}

#ifdef EMBER_WITH_CUDA
TEST(CudaAllocator, SizeClassesBoundTheWaste) {
  EXPECT_EQ(cuda::size_class(0), 512u);
  EXPECT_EQ(cuda::size_class(1), 512u);
  EXPECT_EQ(cuda::size_class(513), 1024u);
  EXPECT_EQ(cuda::size_class(size_t(1) << 20), size_t(1) << 20);
  EXPECT_EQ(cuda::size_class((size_t(1) << 20) + 1), size_t(5) << 18);  // 1.25 MiB
  for (size_t n : {size_t(3) << 20, size_t(1000000007), size_t(1) << 33}) {
    EXPECT_GE(cuda::size_class(n), n);
    EXPECT_LE(double(cuda::size_class(n)), 1.25 * double(n) + 1);
  }
}
#endif

// ---- GPU parity ----------------------------------------------------------------------------------
// TF32 rounds the inputs to a 10-bit mantissa: with K = 512 products of N(0, 1) values the error
// grows to ~1e-3 relative, far beyond the float32 tolerance above, and vanishes when switched off.
TEST(CudaKernels, GemmUsesTf32OnlyWhenAllowed_CUDA) {
  EMBER_REQUIRE_GPU();
  struct Tf32Scope {
    ~Tf32Scope() { set_allow_tf32(false); }
  } scope;
  Generator g(17);
  Tensor a = randn({256, 512}, {}, &g), b = randn({512, 256}, {}, &g);
  Tensor ref = matmul(a.to(DType::Float64), b.to(DType::Float64));
  auto max_err = [&](const Tensor& out) { return amax(abs(sub(out.to(Device::cpu()).to(DType::Float64), ref))).item<double>(); };
  const double fp32_err = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  set_allow_tf32(true);
  const double tf32_err = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  set_allow_tf32(false);
  const double fp32_again = max_err(matmul(a.to(kGpu), b.to(kGpu)));
  EXPECT_LT(fp32_err, 1e-3) << "full float32";
  EXPECT_GT(tf32_err, 4 * fp32_err) << "TF32 on: the error should grow (H100/A100 tensor cores)";
  EXPECT_LT(tf32_err, 0.5) << "TF32 still approximates the product";
  EXPECT_EQ(fp32_again, fp32_err) << "switching TF32 off restores full float32";
}

TEST(CudaCopies, ToDeviceRoundTripsEveryDtype_CUDA) {
  EMBER_REQUIRE_GPU();
  Generator g(17);
  for (DType dt : kAll) {
    Tensor src = sample(is_floating(dt) ? DType::Float32 : dt, 13, 21, g, -100, 100).contiguous().to(dt);
    Tensor back = src.to(kGpu).to(Device::cpu());
    ASSERT_EQ(back.dtype(), dt);
    EXPECT_EQ(std::memcmp(back.raw_data(), src.raw_data(), src.nbytes()), 0) << dtype_name(dt);
    // non-contiguous source, dtype change on the way, copy_ into a strided destination
    Tensor nc = src.t();
    EXPECT_TRUE(close(nc.to(DType::Float64), nc.to(kGpu, DType::Float64))) << dtype_name(dt);
    Tensor dst = zeros({21, 26}, {.dtype = dt, .device = kGpu}).narrow(1, 3, 13);
    dst.copy_(nc);
    EXPECT_TRUE(close(nc, dst)) << dtype_name(dt);
    Tensor host = zeros({13, 21}, {.dtype = dt}).t();
    host.copy_(dst);
    EXPECT_TRUE(close(nc, host)) << dtype_name(dt);
  }
  EXPECT_EQ(empty({0, 3}, {.device = kGpu}).to(Device::cpu()).numel(), 0);
  EXPECT_FLOAT_EQ(scalar_tensor(2.5, {.device = kGpu}).item<float>(), 2.5f);
  if (cuda_device_count() >= 2) {
    Tensor a = arange(10, {.device = Device::cuda(0)});
    Tensor b = a.to(Device::cuda(1));
    EXPECT_EQ(b.device(), Device::cuda(1));
    EXPECT_TRUE(close(a, b));
  }
}

TEST(CudaKernels, ErrorsRaisedOnTheDeviceLeaveItUsable_CUDA) {
  EMBER_REQUIRE_GPU();
  // Integer division by zero raises like the CPU; the device computes afterwards.
  Tensor i = tensor(std::vector<int64_t>{4, 5}), z = tensor(std::vector<int64_t>{1, 0});
  EXPECT_THROW(div(i.to(kGpu), z.to(kGpu)), ValueError);
  EXPECT_TRUE(close(add(i, i), add(i.to(kGpu), i.to(kGpu))));
  EXPECT_THROW(relu(ones({2}, {.dtype = DType::Bool, .device = kGpu})), DTypeError);
}

TEST(CudaRandom, OneSeedAdvancesTheGeneratorAlikeOnEveryDevice_CUDA) {
  EMBER_REQUIRE_GPU();
  Generator gc(99), gg(99);
  EXPECT_TRUE(close(rand({7, 9}, {}, &gc), rand({7, 9}, {.device = kGpu}, &gg)));
  EXPECT_TRUE(close(randint(-5, 5, {33}, {.dtype = DType::Int64}, &gc), randint(-5, 5, {33}, {.dtype = DType::Int64, .device = kGpu}, &gg)));
  EXPECT_EQ(gc.offset(), gg.offset());
}

TEST(CudaNnFunctional, MixingDevicesIsADeviceError_CUDA) {
  EMBER_REQUIRE_GPU();
  namespace F = ember::nn::functional;
  Generator g(1);
  Tensor x = randn({1, 2, 5, 5}, {.device = kGpu}, &g), w = randn({3, 2, 3, 3}, {}, &g);
  EXPECT_THROW(F::conv2d(x, w), DeviceError);
  Tensor lp = randn({4, 3}, {.device = kGpu}, &g);
  Tensor target = tensor<int64_t>({0, 1, 2, 0}, {4});
  EXPECT_THROW(F::nll_loss(lp, target), DeviceError);
}

#ifdef EMBER_WITH_CUDA
TEST(CudaAllocator, ReusesBlocksAndKeepsStatistics_CUDA) {
  EMBER_REQUIRE_GPU();
  cuda::empty_cache();
  const cuda::MemoryStats s0 = cuda::memory_stats(0);
  const size_t bytes = size_t(3) << 20;
  void* first = nullptr;
  {
    Tensor t = empty({int64_t(bytes / 4)}, {.device = kGpu});
    first = t.raw_data();
    cuda::MemoryStats s1 = cuda::memory_stats(0);
    EXPECT_EQ(s1.allocated, s0.allocated + cuda::size_class(bytes));
    EXPECT_GE(s1.reserved, s1.allocated);
    EXPECT_GE(s1.peak_allocated, s1.allocated);
  }
  cuda::MemoryStats s2 = cuda::memory_stats(0);
  EXPECT_EQ(s2.allocated, s0.allocated);
  EXPECT_EQ(s2.reserved, s0.reserved + cuda::size_class(bytes));  // cached, not returned
  Tensor again = empty({int64_t(bytes / 4)}, {.device = kGpu});
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(cuda::memory_stats(0).num_cache_hits, s2.num_cache_hits + 1);
  again = Tensor();
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats(0).reserved, cuda::memory_stats(0).allocated);
}

TEST(CudaAllocator, OutOfMemoryIsAnErrorWithNumbersAndTheDeviceStaysUsable_CUDA) {
  EMBER_REQUIRE_GPU();
  const cuda::DeviceMemory mem = cuda::device_memory(0);
  const int64_t too_many = int64_t(mem.total / 4) * 10;  // 10x the device, in floats
  std::string msg = message_of([&] { empty({too_many}, {.device = kGpu}); });
  EXPECT_NE(msg.find("CUDA out of memory on cuda:0"), std::string::npos) << msg;
  for (const char* part : {"requested", "allocated", "reserved", "free", "total"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  // 2^50 floats (4 PiB): its bytes fit int64, so the allocator is asked (2^61 floats overflow the byte
  // count and are a ShapeError before any allocation, as the H200 run of 2026-12-04 showed).
  EXPECT_THROW(empty({int64_t(1) << 50}, {.device = kGpu}), OutOfMemoryError);
  EXPECT_GE(cuda::memory_stats(0).num_ooms, 1u);
  Tensor x = arange(100, {.device = kGpu});
  EXPECT_EQ(sum(x).item<float>(), 4950.0f);  // the device still computes

  // Flush-and-retry: 40 % cached, then 70 % succeeds because the cache is released first.
  cuda::empty_cache();
  const cuda::DeviceMemory now = cuda::device_memory(0);
  { Tensor big = empty({int64_t(now.free / 4 * 4 / 10)}, {.device = kGpu}); }
  EXPECT_GT(cuda::memory_stats(0).reserved, cuda::memory_stats(0).allocated);
  Tensor bigger;
  EXPECT_NO_THROW(bigger = empty({int64_t(now.free / 4 * 7 / 10)}, {.device = kGpu}));
  bigger = Tensor();
  cuda::empty_cache();
}
#endif
