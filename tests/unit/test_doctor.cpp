// The doctor's verdict rules over tables of versions (a pure function: no probing here), plus a
// smoke test that probing this machine never throws and always finds a usable CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/env/doctor.h"

using namespace ember::env;

namespace {

// A healthy CUDA 12.4 machine with one sm_80 GPU.
EnvFacts healthy() {
  EnvFacts f;
  f.built_with_cuda = true;
  f.cuda_compiled = Version{12, 4, 0};
  f.cuda_sass_archs = {80, 90};
  f.cuda_ptx_archs = {90};
  f.cores = 8;
  f.driver_found = true;
  f.driver_version = "550.54.14";
  f.driver_cuda = Version{12, 4, 0};
  f.cuda_runtime = Version{12, 4, 0};
  f.cudnn = Version{9, 1, 0};
  f.cudnn_cuda_major = 12;
  f.cublas = Version{12, 4, 5};
  f.physical_gpus = 1;
  f.gpus = {GpuInfo{0, "NVIDIA A100", 8, 0, 40ull << 30}};
  return f;
}

const Check* find(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
// A pointer into a temporary verdict would dangle once the statement ends: name the verdict first.
const Check* find(Verdict&&, const std::string&) = delete;
Level level_of(const Verdict& v, const std::string& name) {
  const Check* c = find(v, name);
  EXPECT_NE(c, nullptr) << name;
  return c ? c->level : Level::Pass;
}

}  // namespace

TEST(Doctor, HealthyMachineTrainsOnGpu) {
  Verdict v = diagnose(healthy());
  EXPECT_TRUE(v.gpu_usable);
  EXPECT_EQ(v.training_device, "cuda:0");
  for (const auto& c : v.checks) EXPECT_EQ(c.level, Level::Pass) << c.name << ": " << c.message;
}

TEST(Doctor, NoDriverFallsBackToCpuAndNamesTheFix) {
  EnvFacts f = healthy();
  f.driver_found = false;
  f.driver_error = "libcuda.so.1 missing";
  f.driver_cuda.reset();
  f.gpus.clear();
  Verdict v = diagnose(f);
  EXPECT_FALSE(v.gpu_usable);
  EXPECT_TRUE(v.can_train());
  EXPECT_EQ(v.training_device, "cpu");
  const Check* d = find(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_NE(d->message.find("no NVIDIA driver found"), std::string::npos);
  EXPECT_NE(d->message.find("training will use the CPU"), std::string::npos);
  EXPECT_NE(d->fix.find("550.54.14"), std::string::npos) << d->fix;  // CUDA 12.4's driver (compat tables)
}

// WSL2 uses the Windows driver: the fix never says to install a Linux one.
TEST(Doctor, WslDriverFixPointsAtWindows) {
  EnvFacts f = healthy();
  f.driver_found = false;
  f.driver_cuda.reset();
  f.gpus.clear();
  f.wsl = true;
  const Verdict v = diagnose(f);
  const Check* d = find(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->fix.find("NVIDIA driver on Windows"), std::string::npos) << d->fix;
  EXPECT_EQ(d->fix.find("apt install"), std::string::npos) << d->fix;
}

TEST(Doctor, DriverVersusRuntimeTable) {
  struct Row {
    Version driver, runtime;
    Level expect;
    bool gpu;
  };
  const Row rows[] = {
      {{12, 4}, {12, 4}, Level::Pass, true},
      {{12, 8}, {12, 4}, Level::Pass, true},   // newer driver: fine
      {{12, 2}, {12, 4}, Level::Warn, true},   // minor-version compatibility within 12.x
      {{11, 8}, {12, 4}, Level::Fail, false},  // another major: too old
      {{13, 0}, {12, 4}, Level::Pass, true},
      {{10, 1}, {10, 2}, Level::Fail, false},  // no minor-version compatibility before CUDA 11
      {{11, 0}, {11, 8}, Level::Warn, true},
  };
  for (const Row& r : rows) {
    EnvFacts f = healthy();
    f.driver_cuda = r.driver;
    f.cuda_runtime = r.runtime;
    f.cuda_compiled = r.runtime;
    f.cudnn_cuda_major = r.runtime.major;
    f.cublas = Version{r.runtime.major, 0, 0};
    Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->level, r.expect) << r.driver.str() << " vs " << r.runtime.str() << ": " << d->message;
    EXPECT_EQ(v.gpu_usable, r.gpu) << r.driver.str() << " vs " << r.runtime.str();
    if (r.expect != Level::Pass) EXPECT_FALSE(d->fix.empty());
  }
}

TEST(Doctor, CudnnForAnotherCudaMajorFails) {
  struct Row {
    std::optional<int> cudnn_major;
    bool loadable;
    Level expect;
  };
  const Row rows[] = {{12, true, Level::Pass}, {11, true, Level::Fail}, {13, true, Level::Fail},
                      {std::nullopt, true, Level::Pass}, {12, false, Level::Warn}};
  for (const Row& r : rows) {
    EnvFacts f = healthy();
    f.os_release.id = "ubuntu";  // NVIDIA's repository has cudnn9-cuda-NN for it (distro.cpp)
    f.cudnn_cuda_major = r.cudnn_major;
    if (!r.loadable) f.cudnn.reset();
    Verdict v = diagnose(f);
    const Check* c = find(v, "cudnn");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->level, r.expect) << c->message;
    if (r.expect == Level::Fail) {
      EXPECT_FALSE(v.gpu_usable);
      EXPECT_NE(c->fix.find("nvidia-cudnn-cu12"), std::string::npos) << c->fix;
      EXPECT_NE(c->fix.find("cudnn9-cuda-12"), std::string::npos) << c->fix;
    }
  }
}

TEST(Doctor, CublasOfAnotherMajorOrMissingFails) {
  EnvFacts f = healthy();
  f.cublas = Version{11, 11, 3};
  EXPECT_EQ(level_of(diagnose(f), "cublas"), Level::Fail);
  f.cublas.reset();
  EXPECT_EQ(level_of(diagnose(f), "cublas"), Level::Fail);
  EXPECT_FALSE(diagnose(f).gpu_usable);
}

TEST(Doctor, ArchitectureTable) {
  struct Row {
    int major, minor;
    std::vector<int> sass, ptx;
    bool ok;
  };
  const Row rows[] = {
      {8, 0, {80}, {}, true},   {8, 6, {80}, {}, true},    // sm_80 SASS runs on 8.6
      {9, 0, {80}, {}, false},                             // not on another major
      {9, 0, {80}, {80}, true},                            // PTX 8.0 JIT-compiles for 9.0
      {7, 5, {80}, {80}, false},                           // PTX never runs on an older GPU
      {8, 0, {86}, {}, false},                             // SASS for a newer minor does not run
      {12, 0, {80, 90}, {90}, true}, {12, 0, {80, 90}, {}, false},
  };
  for (const Row& r : rows)
    EXPECT_EQ(arch_supported(r.major, r.minor, r.sass, r.ptx), r.ok) << r.major << "." << r.minor;

  EnvFacts f = healthy();
  f.cuda_sass_archs = {70};
  f.cuda_ptx_archs = {};
  Verdict v = diagnose(f);
  const Check* d = find(v, "device 0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  // The flag CMakeLists.txt reads (it overrides CMAKE_CUDA_ARCHITECTURES with it), keeping sm_70.
  EXPECT_NE(d->fix.find("-DEMBER_CUDA_ARCHS=\"70-real;80-real\""), std::string::npos) << d->fix;
  EXPECT_FALSE(v.gpu_usable);
  f.cuda_ptx_archs = {70};  // PTX only: works, slowly
  v = diagnose(f);
  EXPECT_EQ(find(v, "device 0")->level, Level::Warn);
  EXPECT_NE(find(v, "device 0")->fix.find("-DEMBER_CUDA_ARCHS=\"70-real;80-real;70-virtual\""), std::string::npos)
      << find(v, "device 0")->fix;
  EXPECT_TRUE(v.gpu_usable);
}

// A GPU CUDA 13 no longer builds for (sm_70) is never told to rebuild with CUDA 13: the fix names
// CUDA 12.9, the last toolkit for it, and its driver.
TEST(Doctor, DroppedArchitectureFixNamesTheLastToolkit) {
  EnvFacts f = healthy();
  f.cuda_compiled = f.cuda_runtime = f.driver_cuda = Version{13, 0, 0};
  f.cudnn_cuda_major = 13;
  f.cublas = Version{13, 0, 0};
  f.cuda_sass_archs = {80, 90};
  f.cuda_ptx_archs = {90};
  f.gpus = {GpuInfo{0, "Tesla V100", 7, 0, 16ull << 30}};
  const Verdict v = diagnose(f);
  const Check* d = find(v, "device 0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_NE(d->fix.find("CUDA 13.0 no longer builds for sm_70 (Volta)"), std::string::npos) << d->fix;
  EXPECT_NE(d->fix.find("rebuild ember with CUDA 12.9"), std::string::npos) << d->fix;
  EXPECT_NE(d->fix.find("575.51.03"), std::string::npos) << d->fix;
  EXPECT_NE(d->fix.find("\"80-real;90-real;70-real;90-virtual\""), std::string::npos) << d->fix;
}

// Defect (issue 28): a GPU that runs only from PTX needs a driver that knows that PTX; with a
// driver older than the toolkit that wrote it the JIT fails, so "training will use the GPU" would
// be false. It is a FAIL naming both ways out.
TEST(Doctor, PtxOnlyGpuWithADriverOlderThanTheToolkitFails) {
  EnvFacts f = healthy();
  f.cuda_compiled = f.cuda_runtime = Version{12, 8, 0};
  f.driver_cuda = Version{12, 2, 0};  // minor-version compatibility: the driver check only WARNs
  f.cuda_sass_archs = {80};
  f.cuda_ptx_archs = {80};
  f.gpus = {GpuInfo{0, "NVIDIA H100", 9, 0, 80ull << 30}};
  Verdict v = diagnose(f);
  EXPECT_EQ(level_of(v, "driver"), Level::Warn);
  const Check* d = find(v, "device 0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail) << d->message;
  EXPECT_NE(d->message.find("the JIT fails"), std::string::npos) << d->message;
  EXPECT_NE(d->fix.find("570.26 or newer"), std::string::npos) << d->fix;
  EXPECT_NE(d->fix.find("-DEMBER_CUDA_ARCHS=\"80-real;90-real;80-virtual\""), std::string::npos) << d->fix;
  EXPECT_FALSE(v.gpu_usable);
  EXPECT_EQ(v.training_device, "cpu");
  f.driver_cuda = Version{12, 8, 0};  // a driver that knows the PTX: works, slowly
  v = diagnose(f);
  EXPECT_EQ(level_of(v, "device 0"), Level::Warn);
  EXPECT_TRUE(v.gpu_usable);
}

// Defect (issue 28): with /proc/driver/nvidia/version unreadable the message said "driver supports
// CUDA 12.2 is too old": the missing version is said in words.
TEST(Doctor, UnknownDriverVersionIsSaidInWords) {
  EnvFacts f = healthy();
  f.driver_version.clear();
  f.driver_cuda = Version{11, 8, 0};
  const Verdict v = diagnose(f);
  const Check* d = find(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_EQ(d->message.find("driver supports"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("the NVIDIA driver (its version unknown"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("supports CUDA 11.8 at most, too old for the CUDA 12.4 runtime"), std::string::npos)
      << d->message;
}

// cuDNN drops Maxwell, Pascal and Volta after 9.10: a newer one on a V100 is named, with the release to install.
TEST(Doctor, CudnnPastTheGpusLastReleaseWarns) {
  EnvFacts f = healthy();
  f.cuda_sass_archs = {70, 80};
  f.gpus = {GpuInfo{0, "Tesla V100", 7, 0, 16ull << 30}};
  f.cudnn = Version{9, 12, 0};
  Verdict v = diagnose(f);
  const Check* c = find(v, "cudnn device 0");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, Level::Warn);
  EXPECT_NE(c->fix.find("nvidia-cudnn-cu12==9.10.*"), std::string::npos) << c->fix;
  f.cudnn = Version{9, 10, 2};
  v = diagnose(f);
  EXPECT_EQ(find(v, "cudnn device 0"), nullptr);
}

TEST(Doctor, NoDeviceFails) {
  EnvFacts f = healthy();
  f.gpus.clear();
  f.physical_gpus = 0;
  Verdict v = diagnose(f);
  ASSERT_NE(find(v, "devices"), nullptr);
  EXPECT_EQ(find(v, "devices")->level, Level::Fail);
  EXPECT_FALSE(v.gpu_usable);
  EXPECT_TRUE(v.can_train());
}

TEST(Doctor, VisibleDevicesTable) {
  struct Row {
    std::string value;
    int physical;
    std::optional<int> count;
  };
  const Row rows[] = {
      {"", 2, 0},        {"-1", 2, 0},      {"0", 2, 1},      {"0,1", 2, 2},  {"1,0", 2, 2},
      {"2", 2, 0},       {"0,5,1", 2, 1},   {"abc", 2, 0},    {"0, 1", 2, 2}, {"7", -1, 1},
      {"GPU-8f6c", 2, std::nullopt},
  };
  for (const Row& r : rows) EXPECT_EQ(visible_device_count(r.value, r.physical), r.count) << "'" << r.value << "'";

  for (std::string hide : {"", "-1", "3"}) {
    EnvFacts f = healthy();
    f.physical_gpus = 2;
    f.cuda_visible_devices = hide;
    f.gpus.clear();  // what CUDA shows when everything is hidden
    Verdict v = diagnose(f);
    const Check* c = find(v, "visible devices");
    ASSERT_NE(c, nullptr) << "'" << hide << "'";
    EXPECT_EQ(c->level, Level::Fail);
    EXPECT_NE(c->fix.find("unset CUDA_VISIBLE_DEVICES"), std::string::npos);
  }
}

// An entry naming no device ("0,3" on a 2-GPU machine) is named with what the runtime drops.
TEST(Doctor, VisibleDevicesEntryNamingNoDeviceWarns) {
  EnvFacts f = healthy();
  f.physical_gpus = 2;
  f.cuda_visible_devices = "0,3,1";
  Verdict v = diagnose(f);
  const Check* c = find(v, "visible devices");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, Level::Warn);
  EXPECT_NE(c->message.find("'3' names no device (this machine has 2: 0..1), so CUDA ignores it and every entry "
                            "after it (1); 1 GPU(s) visible"), std::string::npos) << c->message;
  EXPECT_NE(c->fix.find("indices in 0..1"), std::string::npos) << c->fix;
  EXPECT_TRUE(v.gpu_usable);
  f.cuda_visible_devices = "1,0";
  v = diagnose(f);
  EXPECT_EQ(find(v, "visible devices"), nullptr);
}

TEST(Doctor, CpuOnlyBuildWarnsAndTrainsOnCpu) {
  EnvFacts f;
  f.cores = 2;
  f.driver_error = "libcuda.so.1 missing";
  Verdict v = diagnose(f);
  EXPECT_EQ(find(v, "build")->level, Level::Warn);
  EXPECT_EQ(v.training_device, "cpu");
  EXPECT_TRUE(v.can_train());
  EXPECT_EQ(find(v, "cudnn"), nullptr);  // not relevant without CUDA
}

TEST(Doctor, FailedCpuSmokeTestMeansNoTraining) {
  EnvFacts f;
  f.cpu_smoke_ok = false;
  f.cpu_smoke_error = "element (0,0) differs";
  Verdict v = diagnose(f);
  EXPECT_FALSE(v.can_train());
}

TEST(Doctor, ProbeThisMachine) {
  EnvFacts f = probe_environment();
  Verdict v = diagnose(f);
  EXPECT_TRUE(f.cpu_smoke_ok) << f.cpu_smoke_error;
  EXPECT_GT(f.cores, 0);
  EXPECT_TRUE(v.can_train());
  std::string text = format_report(f, v);
  EXPECT_NE(text.find("checks"), std::string::npos);
  EXPECT_NE(to_json(f, v).find("\"can_train\": true"), std::string::npos);
}

// Issue 22: the OpenBLAS build. The pthreads and OpenMP builds, kept to one thread of their own,
// pass; the serial build (ember must run its GEMMs one at a time), a pthreads build that kept its
// own threads, an unknown threading model, or a release too old for concurrent calls warns, with
// the command that switches to the OpenMP build.
TEST(Doctor, BlasBuildIsNamedAndJudged) {
  EnvFacts f = healthy();
  f.blas = "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64";
  f.blas_version = Version{0, 3, 21};
  f.blas_path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0";
  f.blas_build = "serial";
  f.blas_threads = 1;
  const Verdict serial_v = diagnose(f);
  const Check* serial = find(serial_v, "blas");
  ASSERT_NE(serial, nullptr);
  EXPECT_EQ(serial->level, Level::Warn) << serial->message;
  EXPECT_NE(serial->message.find("one at a time"), std::string::npos) << serial->message;
  EXPECT_NE(serial->fix.find("openblas-openmp"), std::string::npos) << serial->fix;
  for (const char* build : {"pthreads", "openmp"}) {
    f.blas_build = build;
    f.blas_threads = f.blas_build == "openmp" ? 2 : 1;
    const Verdict v = diagnose(f);
    const Check* c = find(v, "blas");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->level, Level::Pass) << build << ": " << c->message;
    EXPECT_NE(c->message.find(std::string(build) + " build"), std::string::npos) << c->message;
    EXPECT_NE(c->message.find(f.blas_path), std::string::npos) << c->message;
  }
  f.blas_build = "pthreads";
  f.blas_threads = 8;
  const Verdict kept_v = diagnose(f);
  const Check* kept = find(kept_v, "blas");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->level, Level::Warn);
  EXPECT_NE(kept->message.find("8 threads"), std::string::npos) << kept->message;
  EXPECT_NE(kept->fix.find("openblas-openmp"), std::string::npos) << kept->fix;
  f.blas_threads = 1;
  f.blas_version = Version{0, 3, 5};
  EXPECT_EQ(level_of(diagnose(f), "blas"), Level::Warn);
  f.blas_version = Version{0, 3, 21};
  f.blas_build.clear();
  EXPECT_EQ(level_of(diagnose(f), "blas"), Level::Warn);
}

// What this process loaded: the build is known and, unless it is the OpenMP one, pinned to 1.
TEST(Doctor, ProbedBlasIsPinnedToOneThread) {
  EnvFacts f = probe_environment(ProbeDepth::DriverOnly);
  ASSERT_FALSE(f.blas_build.empty()) << f.blas;
  EXPECT_FALSE(f.blas_path.empty());
  if (f.blas_build != "openmp") EXPECT_EQ(f.blas_threads, 1) << f.blas_build;
  const Verdict v = diagnose(f);
  const Check* c = find(v, "blas");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, f.blas_build == "serial" ? Level::Warn : Level::Pass) << c->message;
}

// The text report fits 80 columns whatever the messages (long paths, long fixes) and ends with
// the verdict and the first thing to do; the JSON carries its schema version and the same two.
TEST(Doctor, ReportFitsEightyColumnsAndEndsWithTheVerdict) {
  EnvFacts f = healthy();
  f.driver_version.clear();
  f.driver_cuda = Version{11, 8, 0};
  f.blas = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64";
  f.blas_path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/" + std::string(120, 'x') + "/libopenblas.so.0";
  f.blas_build = "pthreads";
  f.blas_threads = 8;
  for (const EnvFacts& facts : {f, healthy(), EnvFacts{}}) {
    const Verdict v = diagnose(facts);
    const std::string text = format_report(facts, v);
    std::vector<std::string> lines;
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) lines.push_back(line);
    for (const auto& line : lines) EXPECT_LE(line.size(), 80u) << line;
    ASSERT_GE(lines.size(), 2u);
    size_t verdict = lines.size();
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].starts_with("verdict: ")) verdict = i;
    ASSERT_LT(verdict, lines.size()) << text;
    EXPECT_NE(lines[verdict].find(v.summary), std::string::npos) << text;
    if (v.first_fix.empty()) {
      EXPECT_EQ(verdict, lines.size() - 1) << text;
    } else {
      EXPECT_TRUE(lines[verdict + 1].starts_with("first:   " + v.first_fix_check + ": ")) << text;
      for (size_t i = verdict + 2; i < lines.size(); ++i) EXPECT_TRUE(lines[i].starts_with("         ")) << text;
    }
    const auto j = nlohmann::json::parse(to_json(facts, v));
    EXPECT_EQ(j["schema"], kJsonSchema);
    EXPECT_EQ(j["verdict"]["summary"], v.summary);
    EXPECT_EQ(j["verdict"]["first_fix"], v.first_fix);
  }
  // The first thing to do is the first FAIL's fix.
  const Verdict v = diagnose(f);
  EXPECT_EQ(v.first_fix_check, "driver");
  EXPECT_NE(v.first_fix.find("550.54.14"), std::string::npos) << v.first_fix;
  EXPECT_EQ(diagnose(healthy()).first_fix, "");
}
