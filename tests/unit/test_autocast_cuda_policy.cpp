// Mixed precision on CUDA, the parts that run without a GPU: the autocast guard takes bfloat16 and
// float16 for CUDA (the CPU bfloat16 only), the policy table is the same object for both devices,
// and the sm_80 / sm_70 rules behind `--precision auto|bf16|fp16` (cuda_bf16_support,
// cuda_fp16_support), and what bf16_support / fp16_support say for a CUDA device here. The
// kernels themselves are checked on a GPU by test_cuda_half.cpp (*_CUDA, label gpu).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "backends/runtime.h"

using namespace ember;

TEST(AutocastCuda, GuardTakesBf16AndFp16OnCudaAndBf16OnlyOnTheCpu) {
  {
    autocast ac(DeviceType::CUDA, DType::Float16);
    EXPECT_TRUE(autocast::is_enabled(DeviceType::CUDA));
    EXPECT_EQ(autocast::dtype(DeviceType::CUDA), DType::Float16);
    EXPECT_FALSE(autocast::is_enabled(DeviceType::CPU)) << "the CUDA scope leaked to the CPU";
    {
      autocast inner(DeviceType::CUDA, DType::BFloat16);
      EXPECT_EQ(autocast::dtype(DeviceType::CUDA), DType::BFloat16);
    }
    EXPECT_EQ(autocast::dtype(DeviceType::CUDA), DType::Float16);
  }
  EXPECT_FALSE(autocast::is_enabled(DeviceType::CUDA));
  try {
    autocast ac(DeviceType::CPU, DType::Float16);
    ADD_FAILURE() << "float16 autocast on the CPU was accepted";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("float16 autocast is for CUDA devices"), std::string::npos) << e.what();
  }
}

// A CPU tensor under a CUDA autocast scope is not lowered: the scope belongs to the device type.
TEST(AutocastCuda, CudaScopeLeavesCpuOpsInFloat32) {
  Generator g(1);
  Tensor x = randn({4, 8}, {}, &g), w = randn({3, 8}, {}, &g);
  Tensor want = linear(x, w, Tensor());
  autocast ac(DeviceType::CUDA, DType::Float16);
  Tensor got = linear(x, w, Tensor());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
}

TEST(PrecisionSupportCuda, Bf16FromSm80Fp16FromSm70) {
  const PrecisionSupport h200 = cuda_bf16_support(9, 0, "NVIDIA H200");
  EXPECT_TRUE(h200.fast);
  EXPECT_NE(h200.reason.find("sm_90 (NVIDIA H200)"), std::string::npos) << h200.reason;
  EXPECT_NE(h200.reason.find("bf16 tensor cores"), std::string::npos) << h200.reason;
  EXPECT_TRUE(cuda_bf16_support(8, 0, "NVIDIA A100-SXM4-80GB").fast);
  EXPECT_TRUE(cuda_bf16_support(8, 9, "NVIDIA L4").fast);
  const PrecisionSupport t4 = cuda_bf16_support(7, 5, "Tesla T4");
  EXPECT_FALSE(t4.fast);
  EXPECT_NE(t4.reason.find("sm_75 (Tesla T4) has no bfloat16 tensor cores"), std::string::npos) << t4.reason;
  EXPECT_NE(t4.reason.find("sm_80"), std::string::npos) << t4.reason;
  EXPECT_TRUE(cuda_fp16_support(7, 5, "Tesla T4").fast);
  EXPECT_TRUE(cuda_fp16_support(7, 0, "Tesla V100").fast);
  const PrecisionSupport p100 = cuda_fp16_support(6, 0, "Tesla P100");
  EXPECT_FALSE(p100.fast);
  EXPECT_NE(p100.reason.find("sm_70"), std::string::npos) << p100.reason;
}

// What this machine's cuda:0 gets: without a GPU (or in a CPU-only build) neither half mode, with
// the reason the device is unusable; with one, the sm rules above on its compute capability.
TEST(PrecisionSupportCuda, AnswersFromTheDeviceOrSaysWhyNot) {
  const Device d = Device::cuda(0);
  const PrecisionSupport bf16 = bf16_support(d), fp16 = fp16_support(d);
  std::printf("bf16_support(cuda:0): %s — %s\nfp16_support(cuda:0): %s — %s\n", bf16.fast ? "fast" : "not fast",
              bf16.reason.c_str(), fp16.fast ? "fast" : "not fast", fp16.reason.c_str());
  if (cuda_device_count() == 0) {
    EXPECT_FALSE(bf16.fast);
    EXPECT_FALSE(fp16.fast);
    EXPECT_NE(bf16.reason.find("cuda:0 is not available"), std::string::npos) << bf16.reason;
    EXPECT_NE(fp16.reason.find("cuda:0 is not available"), std::string::npos) << fp16.reason;
  } else {
    const CudaDeviceArch a = cuda_device_arch(0);
    EXPECT_GT(a.major, 0);
    EXPECT_EQ(bf16.fast, a.major >= 8) << bf16.reason;
    EXPECT_EQ(fp16.fast, a.major >= 7) << fp16.reason;
  }
  EXPECT_FALSE(fp16_support(Device::cpu()).fast);
  EXPECT_NE(fp16_support(Device::cpu()).reason.find("GPU mode"), std::string::npos);
}
