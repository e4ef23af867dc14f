// The framework audit (issue 28): fake torch / tensorflow / jax packages on PYTHONPATH that report
// chosen builds, run by the real python3 through audit_pythons, then judged against a driver and
// GPUs; a hung and a crashing interpreter (shell scripts) are named, and the hung one is not waited on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ember/env/doctor.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

const char* const kPython = "/usr/bin/python3";

// A scratch directory of fake packages, put first on PYTHONPATH while the test runs.
struct FakeSite {
  fs::path dir = fs::temp_directory_path() / ("ember-fake-site-" + std::to_string(getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string old_path;
  bool had_path = false;
  FakeSite() {
    fs::create_directories(dir);
    if (const char* p = std::getenv("PYTHONPATH")) had_path = true, old_path = p;
    setenv("PYTHONPATH", dir.c_str(), 1);
  }
  ~FakeSite() {
    if (had_path)
      setenv("PYTHONPATH", old_path.c_str(), 1);
    else
      unsetenv("PYTHONPATH");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
  // torch reporting these; cuda "None" for a CPU-only build; compiled = "" for no compile version.
  void torch(const std::string& version, const std::string& cuda, int cudnn, const std::string& archs,
             const std::string& compiled = "") const {
    write("torch/__init__.py", "__version__ = '" + version + "'\nfrom . import version, backends, cuda, _C\n");
    write("torch/version.py", "cuda = " + cuda + "\n");
    write("torch/backends/__init__.py", "from . import cudnn\n");
    write("torch/backends/cudnn/__init__.py", "def version():\n    return " + std::to_string(cudnn) + "\n");
    write("torch/cuda/__init__.py", "def get_arch_list():\n    return [" + archs + "]\n");
    write("torch/_C/__init__.py", compiled.empty() ? "" : "from . import _cudnn\n");
    if (!compiled.empty()) write("torch/_C/_cudnn.py", "def getCompileVersion():\n    return (" + compiled + ")\n");
  }
  void tensorflow(const std::string& version, bool cuda, const std::string& cuda_version, const std::string& cudnn) const {
    write("tensorflow/__init__.py", "__version__ = '" + version + "'\nfrom . import sysconfig\n");
    write("tensorflow/sysconfig.py", std::string("def get_build_info():\n    return {'is_cuda_build': ") +
                                         (cuda ? "True" : "False") + ", 'cuda_version': '" + cuda_version +
                                         "', 'cudnn_version': '" + cudnn + "'}\n");
  }
  // An installed distribution (dist-info) with one library file.
  void wheel(const std::string& name, const std::string& version, const std::string& lib = "") const {
    std::string dist = name;
    std::replace(dist.begin(), dist.end(), '-', '_');
    const std::string info = dist + "-" + version + ".dist-info/";
    write(info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
    write(info + "RECORD", lib.empty() ? "" : lib + ",,\n");
    if (!lib.empty()) write(lib, "");
  }
};

EnvFacts machine(Version driver_cuda, int cc) {
  EnvFacts f;
  f.driver_found = true;
  f.driver_version = "535.54.03";
  f.driver_cuda = driver_cuda;
  f.physical_gpus = 1;
  f.gpus = {GpuInfo{0, "GPU", cc / 10, cc % 10, 16ull << 30}};
  return f;
}

// The probe imports the real Debian torch of /usr/bin/python3 too (the fake site does not shadow
// it): seconds when the machine is quiet, over a minute on two loaded cores under ASan.
std::vector<PythonEnv> audit(int timeout_ms = 300000, const std::string& path = kPython) {
  std::vector<PythonEnv> p = find_pythons({path});
  audit_pythons(p, timeout_ms);
  return p;
}

const Check* named(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
const Check* named(Verdict&&, const std::string&) = delete;

class DoctorPython : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not installed";
  }
};

}  // namespace

// A CUDA 11.8 PyTorch on a 535 driver (CUDA 12.2) runs on an sm_86 GPU, but has no kernels for an
// sm_120 one: the fix is the driver Blackwell needs and the cu128 wheel index.
TEST_F(DoctorPython, Cuda118TorchOn535Driver) {
  FakeSite site;
  site.torch("2.0.1+cu118", "'11.8'", 8700, "'sm_37', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90'");
  EnvFacts f = machine(Version{12, 2, 0}, 86);
  f.pythons = audit();
  ASSERT_EQ(f.pythons.size(), 1u);
  ASSERT_TRUE(f.pythons[0].error.empty()) << f.pythons[0].error;
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_EQ(f.pythons[0].torch->cuda, "11.8");
  Verdict v = evaluate(f);
  ASSERT_NE(named(v, "torch"), nullptr);
  EXPECT_EQ(named(v, "torch")->level, Level::Pass) << named(v, "torch")->message;
  EXPECT_HAS(named(v, "torch")->message, "torch 2.0.1+cu118 (CUDA 11.8, cuDNN 8.7.0");

  f.gpus = {GpuInfo{0, "NVIDIA RTX 5090", 12, 0, 32ull << 30}};
  v = evaluate(f);
  const Check* t = named(v, "torch");
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "has no kernels for sm_120 (NVIDIA RTX 5090, cuda:0)");
  EXPECT_HAS(t->fix, "upgrade the NVIDIA driver to 580.65.06 or newer (CUDA 13.0)");
  EXPECT_HAS(t->fix, std::string(kPython) + " -m pip install --force-reinstall torch --index-url "
                                            "https://download.pytorch.org/whl/cu130");
  EXPECT_HAS(t->fix, "print(torch.cuda.is_available())\" prints True");
  f.driver_cuda = Version{12, 8, 0};  // a driver that has the wheel Blackwell needs
  v = evaluate(f);
  EXPECT_HAS(named(v, "torch")->fix, "--index-url https://download.pytorch.org/whl/cu128");
  EXPECT_EQ(named(v, "torch")->fix.find("upgrade the NVIDIA driver"), std::string::npos);
}

TEST_F(DoctorPython, CpuOnlyTorchWithAGpuIsAFailWithTheWheelIndex) {
  FakeSite site;
  site.torch("1.13.1+cpu", "None", 0, "");
  EnvFacts f = machine(Version{12, 2, 0}, 86);
  f.pythons = audit();
  const Verdict v = evaluate(f);
  const Check* t = named(v, "torch");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "is a CPU-only build");
  EXPECT_HAS(t->fix, "--index-url https://download.pytorch.org/whl/cu121");
  // No GPU at all: a WARN (it could not use one anyway), and no driver means "the driver first".
  EnvFacts none;
  none.pythons = f.pythons;
  const Verdict w = evaluate(none);
  EXPECT_EQ(named(w, "torch")->level, Level::Warn);
  EXPECT_HAS(named(w, "torch")->fix, "install the NVIDIA driver first");
}

TEST_F(DoctorPython, TorchForANewerCudaMajorThanTheDriverFails) {
  FakeSite site;
  site.torch("2.7.0+cu128", "'12.8'", 90701, "'sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120'");
  EnvFacts f = machine(Version{11, 4, 0}, 80);
  f.pythons = audit();
  Verdict v = evaluate(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "built for CUDA 12.8, but the driver supports CUDA 11.4 at most");
  EXPECT_HAS(named(v, "torch")->fix, "upgrade the NVIDIA driver to");
  f.driver_cuda = Version{12, 4, 0};  // same major, older minor: minor-version compatibility
  v = evaluate(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Warn);
  EXPECT_HAS(named(v, "torch")->fix, "whl/cu124");
}

TEST_F(DoctorPython, TorchLoadingAnOlderCudnnThanItsBuildFails) {
  FakeSite site;
  site.torch("2.5.1+cu121", "'12.1'", 8902, "'sm_80', 'sm_90'", "9, 1, 0");
  EnvFacts f = machine(Version{12, 4, 0}, 80);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_EQ(f.pythons[0].torch->cudnn_compiled, 90100);
  const Verdict v = evaluate(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "loads cuDNN 8.9.2, older than the cuDNN 9.1.0 it was built with");
}

// TensorFlow built for cuDNN 9.3 in an environment whose cuDNN wheel is 8.9.
TEST_F(DoctorPython, TensorflowBuiltForCudnn93WithCudnn8Loaded) {
  FakeSite site;
  site.tensorflow("2.18.0", true, "12.5.1", "9.3");
  site.wheel("nvidia-cudnn-cu11", "8.9.2.26", "nvidia/cudnn/lib/libcudnn.so.8");
  EnvFacts f = machine(Version{12, 8, 0}, 89);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].tensorflow);
  auto wheel = std::find_if(f.pythons[0].nvidia_wheels.begin(), f.pythons[0].nvidia_wheels.end(),
                            [](const PipWheel& w) { return w.name == "nvidia-cudnn-cu11"; });
  ASSERT_NE(wheel, f.pythons[0].nvidia_wheels.end());
  ASSERT_EQ(wheel->lib_dirs.size(), 1u);
  EXPECT_HAS(wheel->lib_dirs[0], "nvidia/cudnn/lib");
  const Verdict v = evaluate(f);
  const Check* t = named(v, "tensorflow");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "was built for cuDNN 9.3, but the cuDNN it loads is the nvidia-cudnn-cu11 8.9.2.26 wheel");
  EXPECT_HAS(t->fix, "-m pip install --force-reinstall 'tensorflow[and-cuda]==2.18.0'");
  EXPECT_HAS(t->fix, "list_physical_devices('GPU')");
}

TEST_F(DoctorPython, CpuOnlyTensorflowAndJaxNameTheirCudaInstalls) {
  FakeSite site;
  site.tensorflow("2.21.0", false, "", "");
  site.wheel("jax", "0.7.2");
  site.wheel("jaxlib", "0.7.2");
  EnvFacts f = machine(Version{13, 0, 0}, 90);
  f.pythons = audit();
  ASSERT_EQ(f.pythons.size(), 1u);
  ASSERT_TRUE(f.pythons[0].error.empty()) << f.pythons[0].error;
  Verdict v = evaluate(f);
  ASSERT_NE(named(v, "tensorflow"), nullptr);
  ASSERT_NE(named(v, "jax"), nullptr);
  EXPECT_EQ(named(v, "tensorflow")->level, Level::Fail);
  EXPECT_HAS(named(v, "tensorflow")->fix, "-m pip install 'tensorflow[and-cuda]'");
  EXPECT_EQ(named(v, "jax")->level, Level::Fail);
  EXPECT_HAS(named(v, "jax")->fix, "-m pip install -U 'jax[cuda13]'");
  f.driver_cuda = Version{12, 4, 0};
  v = evaluate(f);
  EXPECT_HAS(named(v, "jax")->fix, "'jax[cuda12]'");
  // A plugin of another version than jaxlib does not load.
  site.wheel("jax-cuda12-plugin", "0.7.1");
  f.pythons = audit();
  v = evaluate(f);
  EXPECT_EQ(named(v, "jax")->level, Level::Fail);
  EXPECT_HAS(named(v, "jax")->message, "jax-cuda12-plugin 0.7.1 does not match jaxlib 0.7.2");
}

// A wheel whose arch list lacks the GPU's sm: the arch list itself is quoted.
TEST_F(DoctorPython, WheelWithoutTheGpusArchFails) {
  FakeSite site;
  site.torch("2.9.0+cu130", "'13.0'", 91300, "'sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120'");
  EnvFacts f = machine(Version{13, 0, 0}, 70);
  f.pythons = audit();
  const Verdict v = evaluate(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "has no kernels for sm_70");
  EXPECT_HAS(named(v, "torch")->message, "sm_75 sm_80");
  EXPECT_HAS(named(v, "torch")->fix, "whl/cu126");  // the last index with Volta kernels
}

// A hung interpreter is killed at its timeout and named; a crashing one is named with its signal.
TEST_F(DoctorPython, HungAndCrashingInterpretersAreNamed) {
  const fs::path dir = fs::temp_directory_path() / ("ember-fake-python-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto script = [&](const char* name, const char* body) {
    const fs::path p = dir / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  };
  const std::string hung = script("python-hung", "sleep 60"), crash = script("python-crash", "kill -SEGV $$"),
                    fails = script("python-fails", "echo 'ImportError: no module named encodings' >&2; exit 1");
  std::vector<PythonEnv> p = find_pythons({hung, crash, fails});
  ASSERT_EQ(p.size(), 3u);
  const auto start = std::chrono::steady_clock::now();
  audit_pythons(p, 1000);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 15.0) << "the hung interpreter was waited on";
  EXPECT_HAS(p[0].error, "did not answer within 1 s (killed)");
  EXPECT_HAS(p[1].error, "crashed (SIGSEGV");
  EXPECT_HAS(p[2].error, "exited with status 1; it said: \"ImportError: no module named encodings\"");
  EnvFacts f = machine(Version{12, 4, 0}, 80);
  f.pythons = p;
  const Verdict v = evaluate(f);
  int named_hung = 0, named_crash = 0;
  for (const Check& c : v.checks) {
    if (c.name != "python") continue;
    if (c.message.find(hung) != std::string::npos) named_hung += c.level == Level::Warn;
    if (c.message.find(crash) != std::string::npos) named_crash += c.level == Level::Fail;
  }
  EXPECT_EQ(named_hung, 1);
  EXPECT_EQ(named_crash, 1);
  fs::remove_all(dir);
}

// Discovery: --python alone when given; otherwise the active venv and python3 on PATH, once each.
TEST_F(DoctorPython, FindsTheVenvAndPathInterpretersOnce) {
  const fs::path venv = fs::temp_directory_path() / ("ember-fake-venv-" + std::to_string(getpid()));
  fs::create_directories(venv / "bin");
  fs::create_symlink(kPython, venv / "bin" / "python");
  fs::create_symlink(kPython, venv / "bin" / "python3");
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("VIRTUAL_ENV", venv.c_str(), 1);
  setenv("PATH", ((venv / "bin").string() + ":/usr/bin:" + old_path).c_str(), 1);
  std::vector<PythonEnv> p = find_pythons({});
  setenv("PATH", old_path.c_str(), 1);
  unsetenv("VIRTUAL_ENV");
  fs::remove_all(venv);
  ASSERT_EQ(p.size(), 1u) << "the venv's python and python3 are one environment";
  EXPECT_EQ(p[0].found_by, "VIRTUAL_ENV");
  EXPECT_EQ(p[0].path, (venv / "bin" / "python").string());
  p = find_pythons({kPython, kPython});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].found_by, "--python");
}
