// `ember doctor` on broken NVIDIA installs, simulated with fake libraries (tests/fakes/, built with
// the real sonames): a partial cuDNN, a library that aborts when loaded or called, a cuDNN or
// cuBLAS of another major version, a missing, too old or stub libcuda. Each must become a FAIL
// line with a fix, never the end of the process; every driver error code is named in words.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ember/env/doctor.h"
#include "env/probe_nvidia.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

const std::string kFakes = EMBER_FAKE_LIBS_DIR;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A CUDA 13 build with cuDNN 9 on a machine whose libraries are whatever the test probed.
EnvFacts cuda13_build() {
  EnvFacts f;
  f.built_with_cuda = true;
  f.cuda_compiled = Version{13, 0, 0};
  f.cuda_runtime = Version{13, 0, 0};
  f.cudnn_compiled_major = 9;
  f.cuda_sass_archs = {90};
  f.cuda_ptx_archs = {90};
  return f;
}

Check check(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  if (it == v.checks.end()) throw std::runtime_error("no check named " + name);
  return *it;
}

}  // namespace

TEST(DoctorProbe, PartialCudnnIsAFailLineAndIsNeverCalled) {
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {kFakes + "/partial_cudnn/libcudnn.so.9"});
  EXPECT_FALSE(f.cudnn);
  EXPECT_HAS(f.cudnn_error, "partial cuDNN install");
  EXPECT_HAS(f.cudnn_error, "libcudnn_graph.so.9");
  EXPECT_EQ(f.cudnn_error.find("crashed"), std::string::npos) << "the parts check comes before any call";
  const Check c = check(evaluate(f), "cudnn");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.fix, "nvidia-cudnn-cu13");
}

TEST(DoctorProbe, CudnnThatAbortsWhenAskedItsVersionIsAFailLine) {
  // All parts present (empty files), so the probe calls cudnnGetVersion, which aborts.
  const fs::path dir = fs::temp_directory_path() / ("ember-cudnn-abort-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFakes + "/partial_cudnn/libcudnn.so.9", dir / "libcudnn.so.9", fs::copy_options::overwrite_existing);
  for (const char* part : {"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_heuristic.so.9",
                           "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9"})
    std::ofstream(dir / part).put('\0');
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {(dir / "libcudnn.so.9").string()});
  fs::remove_all(dir);
  EXPECT_HAS(f.cudnn_error, "crashed (SIGABRT");
  EXPECT_HAS(f.cudnn_error, "Invalid handle. Cannot load symbol cudnnGetVersion");
  EXPECT_EQ(check(evaluate(f), "cudnn").level, Level::Fail);
}

TEST(DoctorProbe, LibraryWhoseConstructorAbortsIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {kFakes + "/ctor_abort_cudnn/libcudnn.so.9"});
  EXPECT_HAS(f.cudnn_error, "crashed (SIGABRT");
  EXPECT_HAS(f.cudnn_error, "constructor aborts");
  EXPECT_EQ(check(evaluate(f), "cudnn").level, Level::Fail);
}

TEST(DoctorProbe, CudnnOfAnotherMajorIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {"/nonexistent/libcudnn.so.9", kFakes + "/cudnn8/libcudnn.so.8"});
  ASSERT_TRUE(f.cudnn);
  EXPECT_EQ(f.cudnn->str(), "8.9.7");
  const Check c = check(evaluate(f), "cudnn");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "found cuDNN 8.9.7, but this ember loads cuDNN 9");
  EXPECT_HAS(c.fix, "cuDNN 9 for CUDA 13");
}

TEST(DoctorProbe, CublasOfAnotherMajorIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cublas(f, {"/nonexistent/libcublas.so.13", kFakes + "/cublas12/libcublas.so.12"});
  ASSERT_TRUE(f.cublas);
  EXPECT_EQ(f.cublas->major, 12);
  const Check c = check(evaluate(f), "cublas");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "belongs to CUDA 12");
}

TEST(DoctorProbe, MissingLibcudaIsAFailLineWithTheDriverInstall) {
  EnvFacts f = cuda13_build();
  detail::probe_driver(f, {"/nonexistent/libcuda.so.1"}, /*isolated=*/true);
  EXPECT_FALSE(f.driver_found);
  const Check c = check(evaluate(f), "driver");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "no NVIDIA driver found");
  EXPECT_HAS(c.fix, "580");  // the CUDA 13 driver branch
}

TEST(DoctorProbe, TooOldLibcudaIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_driver(f, {kFakes + "/old_driver/libcuda.so.1"}, /*isolated=*/true);
  ASSERT_TRUE(f.driver_found);
  ASSERT_TRUE(f.driver_cuda);
  EXPECT_EQ(f.driver_cuda->str(), "12.2");
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "Fake H200");
  const Check c = check(evaluate(f), "driver");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "too old for the CUDA 13.0 runtime");
  EXPECT_HAS(c.fix, "580");
}

TEST(DoctorProbe, ToolkitStubLibcudaIsNamedInWords) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!fs::exists(stub)) GTEST_SKIP() << stub << " not installed";
  for (bool isolated : {true, false}) {
    EnvFacts f = cuda13_build();
    detail::probe_driver(f, {stub}, isolated);
    EXPECT_HAS(f.driver_error, "CUDA_ERROR_STUB_LIBRARY (34)");
    EXPECT_HAS(f.driver_error, "stub library");
    EXPECT_EQ(f.driver_error.find("cuInit failed: 34"), std::string::npos);
    const Check c = check(evaluate(f), "driver");
    EXPECT_EQ(c.level, Level::Fail);
    EXPECT_HAS(c.fix, "--gpus all");
  }
}

TEST(DoctorProbe, EveryDriverErrorCodeIsNamedInWordsWithAFix) {
  for (int code = 1; code <= 1000; ++code) {
    detail::DriverErrorText t = detail::cuda_driver_error_text(code, nullptr, nullptr);
    EXPECT_FALSE(t.fix.empty()) << code;
    EXPECT_HAS(t.message, "(" + std::to_string(code) + "): ");
    EXPECT_GT(t.message.size(), std::to_string(code).size() + 20) << code;
  }
  // An unlisted code keeps the driver's own name and description.
  detail::DriverErrorText t = detail::cuda_driver_error_text(719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure");
  EXPECT_EQ(t.message, "CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure");
}

TEST(DoctorProbe, IsolatedProbeThatHangsIsCutOff) {
  detail::Isolated r = detail::run_isolated([] {
    sleep(30);
    return std::string("late");
  }, 300);
  EXPECT_FALSE(r.ok);
  EXPECT_HAS(r.failure, "did not answer");
  r = detail::run_isolated([] { return std::string("key\tvalue\n"); }, 5000);
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.payload, "key\tvalue\n");
}
