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
  const Check c = check(diagnose(f), "cudnn");
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
  EXPECT_EQ(check(diagnose(f), "cudnn").level, Level::Fail);
}

TEST(DoctorProbe, LibraryWhoseConstructorAbortsIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {kFakes + "/ctor_abort_cudnn/libcudnn.so.9"});
  EXPECT_HAS(f.cudnn_error, "crashed (SIGABRT");
  EXPECT_HAS(f.cudnn_error, "constructor aborts");
  EXPECT_EQ(check(diagnose(f), "cudnn").level, Level::Fail);
}

TEST(DoctorProbe, CudnnOfAnotherMajorIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cudnn(f, {"/nonexistent/libcudnn.so.9", kFakes + "/cudnn8/libcudnn.so.8"});
  ASSERT_TRUE(f.cudnn);
  EXPECT_EQ(f.cudnn->str(), "8.9.7");
  EXPECT_EQ(f.cudnn_path, kFakes + "/cudnn8/libcudnn.so.8");  // provenance: the file that answered
  const Check c = check(diagnose(f), "cudnn");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "found cuDNN 8.9.7, but this ember loads cuDNN 9");
  EXPECT_HAS(c.fix, "cuDNN 9 for CUDA 13");
}

TEST(DoctorProbe, CublasOfAnotherMajorIsAFailLine) {
  EnvFacts f = cuda13_build();
  detail::probe_cublas(f, {"/nonexistent/libcublas.so.13", kFakes + "/cublas12/libcublas.so.12"});
  ASSERT_TRUE(f.cublas);
  EXPECT_EQ(f.cublas->major, 12);
  EXPECT_EQ(f.cublas_path, kFakes + "/cublas12/libcublas.so.12");
  const Check c = check(diagnose(f), "cublas");
  EXPECT_EQ(c.level, Level::Fail);
  EXPECT_HAS(c.message, "belongs to CUDA 12");
}

TEST(DoctorProbe, MissingLibcudaIsAFailLineWithTheDriverInstall) {
  EnvFacts f = cuda13_build();
  detail::probe_driver(f, {"/nonexistent/libcuda.so.1"}, /*isolated=*/true);
  EXPECT_FALSE(f.driver_found);
  const Check c = check(diagnose(f), "driver");
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
  const Check c = check(diagnose(f), "driver");
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
    const Check c = check(diagnose(f), "driver");
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

namespace {

// A fake root: <tmp>/proc, /sys, /dev, /usr as the test writes them; removed when it ends.
struct FakeRoot {
  fs::path dir = fs::temp_directory_path() / ("ember-fake-root-" + std::to_string(getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  FakeRoot() { fs::create_directories(dir); }
  ~FakeRoot() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
  // The kernel module's files for `gpus` GPUs, driver `version`.
  void nvidia_module(const std::string& version, int gpus) const {
    write("proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version + "  Thu Oct  2 00:00:00 UTC 2025\n");
    for (int i = 0; i < gpus; ++i) write("proc/driver/nvidia/gpus/0000:0" + std::to_string(i) + ":00.0/information", "");
  }
};

// Sets the fake libcuda's environment for one test (the probe's child inherits it).
struct FakeCuda {
  FakeCuda(const char* init_rc, const char* driver, const char* devices) {
    setenv("FAKE_CUDA_INIT_RC", init_rc, 1);
    setenv("FAKE_CUDA_DRIVER", driver, 1);
    setenv("FAKE_CUDA_DEVICES", devices, 1);
  }
  ~FakeCuda() {
    unsetenv("FAKE_CUDA_INIT_RC");
    unsetenv("FAKE_CUDA_DRIVER");
    unsetenv("FAKE_CUDA_DEVICES");
  }
};

const std::string kFakeCuda = kFakes + "/libcuda/libcuda.so.1";

const Check* find_check(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
const Check* find_check(Verdict&&, const std::string&) = delete;

}  // namespace

// Defect (issue 28): libcuda installed, kernel module not loaded. cuInit says "no device"; the
// doctor knows why (no /proc/driver/nvidia) and says that, with modprobe, not "no CUDA device".
TEST(DoctorProbe, KernelModuleNotLoadedIsNamedNotNoDevice) {
  FakeRoot root;
  root.write("dev/null", "");  // /dev exists, /proc/driver/nvidia does not
  FakeCuda cuda("100", "13000", "");
  EnvFacts f = cuda13_build();
  detail::probe_kernel_module(f, root.dir.string());
  detail::probe_driver(f, {kFakeCuda}, /*isolated=*/true);
  EXPECT_EQ(f.kernel_module_loaded, false);
  EXPECT_EQ(f.physical_gpus, 0);
  ASSERT_TRUE(f.driver_found);
  const Verdict v = diagnose(f);
  const Check* d = find_check(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_HAS(d->message, "the NVIDIA kernel module is not loaded");
  EXPECT_HAS(d->fix, "sudo modprobe nvidia");
  EXPECT_HAS(d->fix, "Key was rejected");
  EXPECT_EQ(find_check(v, "devices"), nullptr) << "the module, not the devices, is the cause";
  EXPECT_FALSE(v.gpu_usable);
}

// With the module loaded and still no device, "no CUDA device" is the right words.
TEST(DoctorProbe, ModuleLoadedWithoutDevicesIsNoDevice) {
  FakeRoot root;
  root.nvidia_module("580.95.05", 0);
  FakeCuda cuda("100", "13000", "");
  EnvFacts f = cuda13_build();
  detail::probe_kernel_module(f, root.dir.string());
  // Loaded through a link, the provenance names the real file too.
  fs::create_symlink(kFakeCuda, root.dir / "libcuda.so.1");
  detail::probe_driver(f, {(root.dir / "libcuda.so.1").string()}, true);
  EXPECT_EQ(f.driver_path, (root.dir / "libcuda.so.1").string() + " -> " + fs::canonical(kFakeCuda).string());
  EXPECT_EQ(f.kernel_module_loaded, true);
  EXPECT_EQ(f.driver_version, "580.95.05");
  const Verdict v = diagnose(f);
  EXPECT_EQ(find_check(v, "driver")->level, Level::Pass);
  ASSERT_NE(find_check(v, "devices"), nullptr);
  EXPECT_HAS(find_check(v, "devices")->message, "shows no CUDA device");
}

// WSL2 has no kernel module of its own: never "not loaded" there.
TEST(DoctorProbe, WslIsNotAMissingModule) {
  FakeRoot root;
  root.write("usr/lib/wsl/lib/libcuda.so.1", "");
  EnvFacts f = cuda13_build();
  detail::probe_kernel_module(f, root.dir.string());
  EXPECT_TRUE(f.wsl);
  EXPECT_FALSE(f.kernel_module_loaded.has_value());
  EXPECT_EQ(f.physical_gpus, -1);
}

// Defect (issue 28): error 36 named "CUDA 13 needs 580" whatever ember was built with; the fix now
// names the driver of the CUDA this ember was built with, from the tables. (35 is the runtime's
// cudaErrorInsufficientDriver: CUresult has no 35, so it has no row; issue 45.)
TEST(DoctorProbe, InsufficientDriverNamesTheDriverOfTheBuiltCuda) {
  struct Row {
    std::optional<Version> cuda;
    std::string driver;
  };
  const Row rows[] = {{Version{11, 8, 0}, "520.61.05 or newer"}, {Version{12, 4, 1}, "550.54.14 or newer"},
                      {Version{13, 0, 0}, "580.65.06 or newer"}, {std::nullopt, "newest release for this GPU"}};
  for (int code : {36})
    for (const Row& r : rows) {
      const auto t = detail::cuda_driver_error_text(code, nullptr, nullptr, r.cuda);
      EXPECT_HAS(t.fix, r.driver);
      if (r.cuda && r.cuda->major != 13) EXPECT_EQ(t.fix.find("CUDA 13"), std::string::npos) << t.fix;
    }
  // 35 is not a CUresult: named in the driver's own words (or as unknown), with no driver number.
  EXPECT_EQ(detail::cuda_driver_error_text(35, nullptr, nullptr, Version{12, 4, 0}).fix.find("550.54.14"),
            std::string::npos);
  // Through the fake driver: cuInit answers 36 to a CUDA 12.4 build.
  FakeCuda cuda("36", "12020", "90:Fake H100");
  EnvFacts f = cuda13_build();
  f.cuda_compiled = f.cuda_runtime = Version{12, 4, 0};
  detail::probe_driver(f, {kFakeCuda}, true);
  EXPECT_HAS(f.driver_error, "(36)");
  EXPECT_HAS(f.driver_fix, "550.54.14 or newer (this ember was built with CUDA 12.4)");
}

// Defect (issue 28): a PTX-only GPU under a driver older than the toolkit, read through the fake
// driver: a FAIL, and the verdict is the CPU.
TEST(DoctorProbe, PtxOnlyGpuOnAnOlderDriverIsAFail) {
  FakeRoot root;
  root.nvidia_module("535.54.03", 1);
  FakeCuda cuda("0", "12020", "90:Fake H100");
  EnvFacts f = cuda13_build();
  f.cuda_compiled = f.cuda_runtime = Version{12, 8, 0};
  f.cuda_sass_archs = {80};
  f.cuda_ptx_archs = {80};
  f.cudnn = Version{9, 8, 0};
  f.cudnn_cuda_major = 12;
  f.cublas = Version{12, 8, 4};
  detail::probe_kernel_module(f, root.dir.string());
  detail::probe_driver(f, {kFakeCuda}, true);
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].cc_major, 9);
  const Verdict v = diagnose(f);
  EXPECT_EQ(find_check(v, "driver")->level, Level::Warn);
  EXPECT_EQ(find_check(v, "device 0")->level, Level::Fail);
  EXPECT_HAS(find_check(v, "device 0")->message, "the JIT fails");
  EXPECT_EQ(v.training_device, "cpu");
}

// NVML through a fake libnvidia-ml: memory held by another process, MIG, ECC and slowdowns each
// become a line naming the GPU by its nvidia-smi index, with the command that fixes it.
TEST(DoctorProbe, NvmlFindingsAreNamedPerGpu) {
  setenv("FAKE_NVML_GPUS",
         "Fake H200:141:135:0:0:0,Fake A100:40:1:1:0:0,Fake V100:16:1:0:3:0,Fake L4:24:1:0:0:64,Fake T4:16:2:0:0:0", 1);
  setenv("FAKE_NVML_PROCS", "4242:138240", 1);
  EnvFacts f = cuda13_build();
  detail::probe_nvml(f, {kFakes + "/nvml/libnvidia-ml.so.1"});
  unsetenv("FAKE_NVML_GPUS");
  unsetenv("FAKE_NVML_PROCS");
  EXPECT_TRUE(f.nvml_error.empty()) << f.nvml_error;
  EXPECT_EQ(f.nvml_path, kFakes + "/nvml/libnvidia-ml.so.1");
  ASSERT_EQ(f.nvml_gpus.size(), 5u);
  EXPECT_EQ(f.nvml_gpus[0].name, "Fake H200");
  ASSERT_EQ(f.nvml_gpus[0].processes.size(), 1u);
  EXPECT_EQ(f.nvml_gpus[0].processes[0].first, 4242u);
  const Verdict v = diagnose(f);
  struct Row {
    const char* name;
    Level level;
    const char* message;
    const char* fix;
  };
  const Row rows[] = {
      {"nvml gpu 0", Level::Warn, "135.0 of 141.0 GiB in use by pid 4242 (135.0 GiB): less than 10% free", "nvidia-smi"},
      {"nvml gpu 1", Level::Warn, "MIG mode is on", "CUDA_VISIBLE_DEVICES=MIG-<uuid>"},
      {"nvml gpu 2", Level::Fail, "3 uncorrected ECC error(s)", "sudo nvidia-smi -r -i 2"},
      {"nvml gpu 3", Level::Warn, "hardware thermal slowdown", "PERFORMANCE"},
      {"nvml gpu 4", Level::Pass, "Fake T4 (nvidia-smi index 4): 2.0 of 16.0 GiB in use", ""},
  };
  for (const Row& r : rows) {
    const Check* c = find_check(v, r.name);
    ASSERT_NE(c, nullptr) << r.name;
    EXPECT_EQ(c->level, r.level) << r.name << ": " << c->message;
    EXPECT_HAS(c->message, r.message);
    EXPECT_HAS(c->fix, r.fix);
  }
  // A MIG instance named in CUDA_VISIBLE_DEVICES is the user's choice: no MIG warning.
  f.cuda_visible_devices = "MIG-4f1c2a9e-0000-0000-0000-000000000000";
  const Verdict w = diagnose(f);
  EXPECT_EQ(find_check(w, "nvml gpu 1")->level, Level::Pass);
  // nvmlInit failing is a WARN, not the end of the doctor.
  setenv("FAKE_NVML_INIT_RC", "9", 1);
  EnvFacts g = cuda13_build();
  detail::probe_nvml(g, {kFakes + "/nvml/libnvidia-ml.so.1"});
  unsetenv("FAKE_NVML_INIT_RC");
  EXPECT_HAS(g.nvml_error, "nvmlInit failed with 9");
  const Verdict u = diagnose(g);
  EXPECT_EQ(find_check(u, "nvml")->level, Level::Warn);
}
