// The GPU smoke test (env/gpu_smoke.h). Without a usable GPU (this machine, CI) it must run nothing
// and say why; the *_CUDA test runs it for real where a GPU is (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "ember/cuda.h"
#include "ember/env/gpu_smoke.h"

using namespace ember::env;

TEST(GpuSmoke, SkipsWithTheReasonWithoutAGpu) {
  if (ember::cuda::is_available()) GTEST_SKIP() << "a GPU is usable here: GpuSmoke.PassesOnTheGpu_CUDA covers it";
  const GpuSmokeResult r = gpu_smoke_test(0);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(r.steps.empty()) << "nothing may run without a GPU";
  EXPECT_NE(r.skipped.find("no usable GPU"), std::string::npos) << r.skipped;
  EXPECT_EQ(format_smoke(r).rfind("SKIP  gpu smoke test: no usable GPU", 0), 0u) << format_smoke(r);
  const auto j = nlohmann::json::parse(smoke_json(r));
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["skipped"], r.skipped);
}

// The text of a run (made up here): one line per step within 80 columns, then the verdict.
TEST(GpuSmoke, FormatsStepsWithin80Columns) {
  GpuSmokeResult r;
  r.device_name = "NVIDIA H200";
  r.steps = {{"context", true, "cuda:0 NVIDIA H200", 0.4},
             {"copy 64 MiB", true, "byte-exact round trip; host->device 12.3 GB/s, device->host 11.9 GB/s (pageable)", 0.1},
             {"cudnn conv", false, "a 3x3 convolution differs from the CPU by 0.5 (relative), which is far too much to pass", 0.2}};
  const std::string text = format_smoke(r);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_NE(text.find("FAIL  cudnn conv"), std::string::npos) << text;
  EXPECT_NE(text.find("smoke: FAIL"), std::string::npos) << text;
  r.steps.pop_back();
  EXPECT_TRUE(r.passed());
}

TEST(GpuSmoke, PassesOnTheGpu_CUDA) {
  if (!ember::cuda::is_available()) GTEST_SKIP() << "no usable GPU: " << ember::cuda::unavailable_reason();
  const GpuSmokeResult r = gpu_smoke_test(0);
  EXPECT_TRUE(r.passed()) << format_smoke(r);
  EXPECT_EQ(r.steps.size(), 5u);
  EXPECT_GT(r.h2d_gbps, 0.5);
  EXPECT_GT(r.d2h_gbps, 0.5);
}
