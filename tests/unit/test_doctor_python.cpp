// The framework audit (issues 28, 45, 48): fake torch / tensorflow / jax packages on PYTHONPATH that
// report chosen builds — and, for TensorFlow 1.14, a real shared object that needs libcudart.so.10.0 —
// run by the real python3 through audit_pythons, then judged against a driver and GPUs; the fix is the
// framework or the CUDA version that fits; a hung and a crashing interpreter (shell scripts) are
// named, and the hung one is not waited on.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ember/env/doctor.h"
#include "env/compat.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
#define EXPECT_HASNT(text, part) EXPECT_EQ(std::string(text).find(part), std::string::npos) << (text)

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
  // torch reporting these; cuda "None" for a CPU-only build; compiled = "" for no compile version;
  // available: what torch.cuda.is_available() answers, warning: what it warns while answering.
  void torch(const std::string& version, const std::string& cuda, int cudnn, const std::string& archs,
             const std::string& compiled = "", bool available = false, const std::string& warning = "") const {
    write("torch/__init__.py", "__version__ = '" + version + "'\nfrom . import version, backends, cuda, _C\n");
    write("torch/version.py", "cuda = " + cuda + "\n");
    write("torch/backends/__init__.py", "from . import cudnn\n");
    write("torch/backends/cudnn/__init__.py", "def version():\n    return " + std::to_string(cudnn) + "\n");
    write("torch/cuda/__init__.py",
          "import warnings\ndef get_arch_list():\n    return [" + archs + "]\ndef is_available():\n" +
              (warning.empty() ? "" : "    warnings.warn('" + warning + "')\n") + "    return " +
              (available ? "True" : "False") + "\ndef device_count():\n    return " + (available ? "1" : "0") + "\n");
    write("torch/_C/__init__.py", compiled.empty() ? "" : "from . import _cudnn\n");
    if (!compiled.empty()) write("torch/_C/_cudnn.py", "def getCompileVersion():\n    return (" + compiled + ")\n");
  }
  // TensorFlow 2.x with this build info, seeing `gpus` GPUs (tf.config.list_physical_devices).
  void tensorflow(const std::string& version, bool cuda, const std::string& cuda_version, const std::string& cudnn,
                  int gpus = 0) const {
    write("tensorflow/__init__.py", "__version__ = '" + version + "'\nfrom . import sysconfig, config\n");
    write("tensorflow/sysconfig.py", std::string("def get_build_info():\n    return {'is_cuda_build': ") +
                                         (cuda ? "True" : "False") + ", 'cuda_version': '" + cuda_version +
                                         "', 'cudnn_version': '" + cudnn + "'}\n");
    write("tensorflow/config.py", "def list_physical_devices(kind=None):\n    return ['GPU'] * " +
                                      std::to_string(gpus) + "\n");
  }
  // TensorFlow 1.14 as pip installs it: tensorflow-gpu whose native library needs libcudart.so.10.0
  // (a real ELF object, tests/fakes/fake_tf114_pywrap.c); importing it raises TF's own ImportError.
  void tensorflow_114() const {
    write("tensorflow/__init__.py",
          "import ctypes, os\n"
          "try:\n"
          "    ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'python', '_pywrap_tensorflow_internal.so'))\n"
          "except OSError as e:\n"
          "    raise ImportError(str(e) + '\\n\\nFailed to load the native TensorFlow runtime.')\n"
          "__version__ = '1.14.0'\n");
    fs::create_directories(dir / "tensorflow/python");
    fs::copy_file(std::string(EMBER_FAKE_LIBS_DIR) + "/tf114/_pywrap_tensorflow_internal.so",
                  dir / "tensorflow/python/_pywrap_tensorflow_internal.so", fs::copy_options::overwrite_existing);
    wheel("tensorflow-gpu", "1.14.0");
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

// A machine whose driver is the GA driver of `driver_cuda` (the tables') with one GPU of `cc`.
EnvFacts machine(Version driver_cuda, int cc) {
  EnvFacts f;
  f.driver_found = true;
  f.driver_version = compat::min_driver_for(driver_cuda)->driver;
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
  site.torch("2.0.1+cu118", "'11.8'", 8700, "'sm_37', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90'",
             "", /*available=*/true);
  EnvFacts f = machine(Version{12, 2, 0}, 86);
  f.pythons = audit();
  ASSERT_EQ(f.pythons.size(), 1u);
  ASSERT_TRUE(f.pythons[0].error.empty()) << f.pythons[0].error;
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_EQ(f.pythons[0].torch->cuda, "11.8");
  Verdict v = diagnose(f);
  ASSERT_NE(named(v, "torch"), nullptr);
  EXPECT_EQ(named(v, "torch")->level, Level::Pass) << named(v, "torch")->message;
  EXPECT_HAS(named(v, "torch")->message, "torch 2.0.1+cu118 (CUDA 11.8, cuDNN 8.7.0");

  f = machine(Version{11, 8, 0}, 120);  // a CUDA 11.8 driver: no index carries Blackwell for it
  f.pythons = audit();
  f.gpus = {GpuInfo{0, "NVIDIA RTX 5090", 12, 0, 32ull << 30}};
  v = diagnose(f);
  const Check* t = named(v, "torch");
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "has no kernels for sm_120 (NVIDIA RTX 5090, cuda:0)");
  EXPECT_HAS(t->fix, "upgrade the NVIDIA driver to 580.65.06 or newer (CUDA 13.0)");
  EXPECT_HAS(t->fix, std::string(kPython) + " -m pip install --force-reinstall torch --index-url "
                                            "https://download.pytorch.org/whl/cu130");
  EXPECT_HAS(t->fix, "print(torch.cuda.is_available())\" prints True");
  f = machine(Version{12, 8, 0}, 120);  // a driver that has an index Blackwell runs: cu128, torch <= 2.11
  f.pythons = audit();
  v = diagnose(f);
  EXPECT_HAS(named(v, "torch")->fix, "--index-url https://download.pytorch.org/whl/cu128 (it carries torch 2.7 to "
                                     "2.11: the newest that runs on this driver and GPU)");
  EXPECT_HAS(named(v, "torch")->fix, "or, for the newest torch, upgrade the NVIDIA driver to 580.65.06 or newer "
                                     "(CUDA 13.0) and use the cu130 index");
}

TEST_F(DoctorPython, CpuOnlyTorchWithAGpuIsAFailWithTheWheelIndex) {
  FakeSite site;
  site.torch("1.13.1+cpu", "None", 0, "");
  EnvFacts f = machine(Version{12, 2, 0}, 86);
  f.pythons = audit();
  const Verdict v = diagnose(f);
  const Check* t = named(v, "torch");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "is a CPU-only build");
  // cu126 carries the newest torch and runs on this 535 driver (CUDA 12.2) through minor-version
  // compatibility: not cu121 (torch 2.5 at most), the newest index at or below the driver's CUDA.
  EXPECT_HAS(t->fix, "--index-url https://download.pytorch.org/whl/cu126");
  // No driver and no PCI bus to tell: a WARN (there may be no GPU), and the driver first.
  EnvFacts none;
  none.pythons = f.pythons;
  const Verdict w = diagnose(none);
  EXPECT_EQ(named(w, "torch")->level, Level::Warn);
  EXPECT_HAS(named(w, "torch")->fix, "install the NVIDIA driver first");
  // No NVIDIA GPU on the PCI bus: a CPU-only torch is right; nothing to do (issue 48).
  none.nvidia_pci_gpus = 0;
  const Verdict n = diagnose(none);
  EXPECT_EQ(named(n, "torch")->level, Level::Pass);
  EXPECT_HAS(named(n, "torch")->message, "a CPU-only build: right for this machine, which has no NVIDIA GPU");
}

TEST_F(DoctorPython, TorchForANewerCudaMajorThanTheDriverFails) {
  FakeSite site;
  site.torch("2.7.0+cu128", "'12.8'", 90701, "'sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120'");
  EnvFacts f = machine(Version{11, 4, 0}, 80);
  f.pythons = audit();
  Verdict v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "built for CUDA 12.8, but the driver supports CUDA 11.4 at most");
  EXPECT_HAS(named(v, "torch")->fix, "upgrade the NVIDIA driver to");
  f = machine(Version{12, 4, 0}, 80);  // same major, older minor: minor-version compatibility
  f.pythons = audit();
  v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Warn);
  EXPECT_HAS(named(v, "torch")->fix, "whl/cu126");  // current torch on any driver >= 525.60.13
}

TEST_F(DoctorPython, TorchLoadingAnOlderCudnnThanItsBuildFails) {
  FakeSite site;
  site.torch("2.5.1+cu121", "'12.1'", 8902, "'sm_80', 'sm_90'", "9, 1, 0");
  EnvFacts f = machine(Version{12, 4, 0}, 80);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_EQ(f.pythons[0].torch->cudnn_compiled, 90100);
  const Verdict v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "loads cuDNN 8.9.2, older than the cuDNN 9.1.0 it was built with");
}

// TensorFlow built for cuDNN 9.3 in an environment whose cuDNN wheel is 8.9.
TEST_F(DoctorPython, TensorflowBuiltForCudnn93WithCudnn8Loaded) {
  FakeSite site;
  site.tensorflow("2.18.0", true, "12.5.1", "9.3", /*gpus=*/1);
  site.wheel("nvidia-cudnn-cu11", "8.9.2.26", "nvidia/cudnn/lib/libcudnn.so.8");
  EnvFacts f = machine(Version{12, 8, 0}, 89);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].tensorflow);
  auto wheel = std::find_if(f.pythons[0].nvidia_wheels.begin(), f.pythons[0].nvidia_wheels.end(),
                            [](const PipWheel& w) { return w.name == "nvidia-cudnn-cu11"; });
  ASSERT_NE(wheel, f.pythons[0].nvidia_wheels.end());
  ASSERT_EQ(wheel->lib_dirs.size(), 1u);
  EXPECT_HAS(wheel->lib_dirs[0], "nvidia/cudnn/lib");
  const Verdict v = diagnose(f);
  const Check* t = named(v, "tensorflow");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "was built for cuDNN 9.3, but the cuDNN it loads is the nvidia-cudnn-cu11 8.9.2.26 wheel "
                         "(libcudnn.so.8 is another library than libcudnn.so.9)");
  // The CUDA it was built for, not a reinstall of the same TensorFlow.
  EXPECT_HAS(t->fix, "-m pip install 'tensorflow[and-cuda]==2.18.0' (it installs the CUDA 12.5 and cuDNN 9.3 wheels");
  EXPECT_HASNT(t->fix, "--force-reinstall");
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
  Verdict v = diagnose(f);
  ASSERT_NE(named(v, "tensorflow"), nullptr);
  ASSERT_NE(named(v, "jax"), nullptr);
  EXPECT_EQ(named(v, "tensorflow")->level, Level::Fail);
  EXPECT_HAS(named(v, "tensorflow")->fix, "-m pip install 'tensorflow[and-cuda]'");
  EXPECT_EQ(named(v, "jax")->level, Level::Fail);
  EXPECT_HAS(named(v, "jax")->fix, "-m pip install -U 'jax[cuda13]'");
  f.driver_cuda = Version{12, 4, 0};
  f.driver_version = "550.54.14";
  v = diagnose(f);
  EXPECT_HAS(named(v, "jax")->fix, "'jax[cuda12]'");
  // A plugin of another version than jaxlib does not load.
  site.wheel("jax-cuda12-plugin", "0.7.1");
  f.pythons = audit();
  v = diagnose(f);
  EXPECT_EQ(named(v, "jax")->level, Level::Fail);
  EXPECT_HAS(named(v, "jax")->message, "jax-cuda12-plugin 0.7.1 does not match jaxlib 0.7.2");
}

// A wheel whose arch list lacks the GPU's sm: the arch list itself is quoted.
TEST_F(DoctorPython, WheelWithoutTheGpusArchFails) {
  FakeSite site;
  site.torch("2.9.0+cu130", "'13.0'", 91300, "'sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120'");
  EnvFacts f = machine(Version{13, 0, 0}, 70);
  f.pythons = audit();
  const Verdict v = diagnose(f);
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
  const Verdict v = diagnose(f);
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

// ---------------------------------------------------------------- the libraries, loaded for real (issue 45)

namespace {
bool loadable(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}
}  // namespace

// The failure the GPU guides are written around: TensorFlow 1.14 was built for CUDA 10.0 and its
// native library needs libcudart.so.10.0; with a newer CUDA only, `import tensorflow` fails. The
// doctor names the soname and the loader's words, and the fix is the framework or the CUDA version —
// never `pip install --force-reinstall tensorflow` (for TF 1.x that is the CPU-only package).
TEST_F(DoctorPython, Tensorflow114NeedsCuda100AndSaysSo) {
  if (loadable("libcudart.so.10.0")) GTEST_SKIP() << "this machine has CUDA 10.0's runtime";
  FakeSite site;
  site.tensorflow_114();
  EnvFacts f = machine(Version{13, 0, 0}, 86);
  f.pythons = audit();
  ASSERT_EQ(f.pythons.size(), 1u);
  ASSERT_TRUE(f.pythons[0].tensorflow);
  const TensorflowBuild& tf = *f.pythons[0].tensorflow;
  EXPECT_FALSE(tf.imported);
  EXPECT_EQ(tf.version, "1.14.0");
  EXPECT_EQ(tf.package, "tensorflow-gpu");
  EXPECT_EQ(tf.cuda, "10.0");  // from the DT_NEEDED entry: TF 1.x has no build info
  ASSERT_EQ(tf.libraries.size(), 1u);
  EXPECT_EQ(tf.libraries[0].soname, "libcudart.so.10.0");
  EXPECT_HAS(tf.libraries[0].error, "libcudart.so.10.0: cannot open shared object file");
  EXPECT_HAS(f.pythons[0].import_errors.at("tensorflow"), "Failed to load the native TensorFlow runtime");
  const Verdict v = diagnose(f);
  int tf_lines = 0;
  for (const Check& c : v.checks) tf_lines += c.name == "tensorflow";
  EXPECT_EQ(tf_lines, 1) << "one line for the framework, not an import line besides";
  const Check* t = named(v, "tensorflow");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "tensorflow-gpu 1.14.0 cannot be imported");
  EXPECT_HAS(t->message, "it was built for CUDA 10.0 and cuDNN 7.4 and these do not load here: libcudart.so.10.0 "
                         "(libcudart.so.10.0: cannot open shared object file");
  EXPECT_HAS(t->fix, "the fix is the framework version or the CUDA version");
  EXPECT_HAS(t->fix, "install CUDA 10.0 with cuDNN 7.4 for TensorFlow 1.14.0 (libcudart.so.10.0");
  EXPECT_HAS(t->fix, "NVIDIA publishes no pip wheels for it");
  EXPECT_HAS(t->fix, "-m pip install -U 'tensorflow[and-cuda]' (TensorFlow 2.19 and later: CUDA 12.5, cuDNN 9.3; "
                     "uninstall tensorflow-gpu first");
  EXPECT_HAS(t->fix, "TensorFlow 1.x's CPU package is `tensorflow`");
  EXPECT_HASNT(t->fix, "--force-reinstall");
}

// TensorFlow 2.15, built for CUDA 12.2 and cuDNN 8, in an environment that has only CUDA 13's and
// cuDNN 9's wheels: it imports, sees no GPU, and the libraries it names do not load. Before issue 45
// this was a PASS (the version numbers were never checked against what loads).
TEST_F(DoctorPython, TensorflowForCuda12WithOnlyCuda13Present) {
  if (loadable("libcudart.so.12") || loadable("libcudnn.so.8")) GTEST_SKIP() << "this machine has CUDA 12 or cuDNN 8";
  FakeSite site;
  site.tensorflow("2.15.0", true, "12.2", "8", /*gpus=*/0);
  site.wheel("nvidia-cuda-runtime", "13.0.96", "nvidia/cu13/lib/libcudart.so.13");
  site.wheel("nvidia-cudnn-cu13", "9.19.0.56", "nvidia/cudnn/lib/libcudnn.so.9");
  EnvFacts f = machine(Version{13, 0, 0}, 90);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].tensorflow);
  EXPECT_EQ(f.pythons[0].tensorflow->gpus, 0);
  ASSERT_EQ(f.pythons[0].tensorflow->libraries.size(), 2u);
  EXPECT_EQ(f.pythons[0].tensorflow->libraries[0].soname, "libcudart.so.12");
  EXPECT_EQ(f.pythons[0].tensorflow->libraries[1].soname, "libcudnn.so.8");
  const Verdict v = diagnose(f);
  const Check* t = named(v, "tensorflow");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "tensorflow 2.15.0 was built for CUDA 12.2 and cuDNN 8, but these do not load here: "
                         "libcudart.so.12 (");
  EXPECT_HAS(t->message, "libcudnn.so.8 (");
  EXPECT_HAS(t->message, "(tf.config.list_physical_devices('GPU') is [])");
  EXPECT_HAS(t->fix, "-m pip install 'tensorflow[and-cuda]==2.15.0' (it installs the CUDA 12.2 and cuDNN 8.9 wheels");
  EXPECT_HAS(t->fix, "-m pip install -U 'tensorflow[and-cuda]' (TensorFlow 2.19 and later: CUDA 12.5, cuDNN 9.3");
  EXPECT_HAS(t->fix, "no TensorFlow in ember's tables is built for the CUDA 13 this environment has");
  // On a machine without an NVIDIA GPU the missing CUDA 12 libraries matter to nobody.
  EnvFacts none;
  none.nvidia_pci_gpus = 0;
  none.pythons = f.pythons;
  const Verdict n = diagnose(none);
  EXPECT_EQ(named(n, "tensorflow")->level, Level::Pass);
  EXPECT_HAS(named(n, "tensorflow")->message, "a GPU build on a machine without an NVIDIA GPU");
  // Where it sees the GPU, nothing is loaded and it passes, saying so.
  FakeSite seeing;
  seeing.tensorflow("2.18.0", true, "12.5.1", "9", /*gpus=*/2);
  f.pythons = audit();
  EXPECT_TRUE(f.pythons[0].tensorflow->libraries.empty());
  const Verdict w = diagnose(f);
  EXPECT_EQ(named(w, "tensorflow")->level, Level::Pass) << named(w, "tensorflow")->message;
  EXPECT_HAS(named(w, "tensorflow")->message, "it sees 2 GPU(s)");
}

// torch.cuda.is_available() asked for real: False with a GPU is a FAIL with torch's own warning;
// True says how many devices; False on a machine without an NVIDIA GPU says that (issue 48).
TEST_F(DoctorPython, TorchSaysWhetherItSeesTheGpu) {
  FakeSite site;
  site.torch("2.9.0+cu126", "'12.6'", 91000, "'sm_80', 'sm_90'", "", /*available=*/false,
             "CUDA initialization: The NVIDIA driver on your system is too old");
  EnvFacts f = machine(Version{12, 8, 0}, 80);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_EQ(f.pythons[0].torch->cuda_available, false);
  Verdict v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->message, "does not see the GPU: torch.cuda.is_available() is False (CUDA "
                                         "initialization: The NVIDIA driver on your system is too old)");
  EXPECT_HAS(named(v, "torch")->fix, "torch.cuda.init()");
  FakeSite good;
  good.torch("2.9.0+cu126", "'12.6'", 91000, "'sm_80', 'sm_90'", "", /*available=*/true);
  f.pythons = audit();
  v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Pass);
  EXPECT_HAS(named(v, "torch")->message, "torch.cuda.is_available() is True, 1 device(s)");
  FakeSite cpu_here;
  cpu_here.torch("2.9.0+cu126", "'12.6'", 91000, "'sm_80', 'sm_90'", "", /*available=*/false);
  EnvFacts none;
  none.nvidia_pci_gpus = 0;
  none.pythons = audit();
  v = diagnose(none);
  EXPECT_EQ(named(v, "torch")->level, Level::Pass);
  EXPECT_HAS(named(v, "torch")->message, "torch.cuda.is_available() is False here: this machine has no NVIDIA GPU");
}

// A torch whose import fails on a missing CUDA library: the soname, and the wheel of its CUDA major.
TEST_F(DoctorPython, TorchImportFailureNamesTheMissingLibrary) {
  if (loadable("libcudart.so.10.0")) GTEST_SKIP() << "this machine has CUDA 10.0's runtime";
  FakeSite site;
  site.write("torch/__init__.py", "raise ImportError('libcudart.so.10.0: cannot open shared object file')\n");
  fs::create_directories(site.dir / "torch/lib");
  fs::copy_file(std::string(EMBER_FAKE_LIBS_DIR) + "/tf114/_pywrap_tensorflow_internal.so",
                site.dir / "torch/lib/libtorch_cuda.so");
  site.wheel("torch", "2.5.1+cu121");
  EnvFacts f = machine(Version{12, 4, 0}, 80);
  f.pythons = audit();
  ASSERT_TRUE(f.pythons[0].torch);
  EXPECT_FALSE(f.pythons[0].torch->imported);
  const Verdict v = diagnose(f);
  const Check* t = named(v, "torch");
  EXPECT_EQ(t->level, Level::Fail);
  EXPECT_HAS(t->message, "torch 2.5.1+cu121: import torch failed: ImportError: libcudart.so.10.0");
  EXPECT_HAS(t->message, "the CUDA libraries it needs that do not load here: libcudart.so.10.0");
  EXPECT_HAS(t->fix, "-m pip install nvidia-cuda-runtime-cu12");
}

// JAX's floors: a CUDA 13 plugin on a Volta GPU cannot run (SM 7.5 and newer): the CUDA 12 extra;
// Kepler is past support for JAX; a CPU-only JAX on a machine without a GPU is right.
TEST_F(DoctorPython, JaxExtraFitsTheGpu) {
  FakeSite site;
  site.wheel("jax", "0.8.0");
  site.wheel("jaxlib", "0.8.0");
  site.wheel("jax-cuda13-plugin", "0.8.0");
  EnvFacts f = machine(Version{13, 0, 0}, 70);
  f.gpus[0].name = "Tesla V100";
  f.pythons = audit();
  Verdict v = diagnose(f);
  EXPECT_EQ(named(v, "jax")->level, Level::Fail);
  EXPECT_HAS(named(v, "jax")->message, "jax-cuda13-plugin 0.8.0 needs compute capability 7.5 or newer; Tesla V100 "
                                       "(Volta, sm_70) is older");
  EXPECT_HAS(named(v, "jax")->fix, "-m pip uninstall -y jax-cuda13-plugin && /usr/bin/python3 -m pip install -U "
                                   "'jax[cuda12]'");
  FakeSite cpu;
  cpu.wheel("jax", "0.8.0");
  cpu.wheel("jaxlib", "0.8.0");
  f = machine(Version{11, 4, 0}, 37);
  f.pythons = audit();
  v = diagnose(f);
  EXPECT_HAS(named(v, "jax")->fix, "this GPU is past support for JAX");
  EnvFacts none;
  none.nvidia_pci_gpus = 0;
  none.pythons = f.pythons;
  v = diagnose(none);
  EXPECT_EQ(named(v, "jax")->level, Level::Pass);
}

// onnxruntime-gpu is advised only where there is a GPU (issue 48).
TEST_F(DoctorPython, OnnxruntimeGpuOnlyWhereThereIsAGpu) {
  FakeSite site;
  site.write("onnxruntime/__init__.py",
             "__version__ = '1.23.0'\ndef get_available_providers():\n    return ['CPUExecutionProvider']\n");
  EnvFacts none;
  none.nvidia_pci_gpus = 0;
  none.pythons = audit();
  Verdict v = diagnose(none);
  ASSERT_NE(named(v, "onnxruntime"), nullptr);
  EXPECT_EQ(named(v, "onnxruntime")->level, Level::Pass);
  EXPECT_HASNT(named(v, "onnxruntime")->fix, "onnxruntime-gpu");
  EnvFacts gpu = machine(Version{12, 4, 0}, 80);
  gpu.pythons = none.pythons;
  v = diagnose(gpu);
  EXPECT_EQ(named(v, "onnxruntime")->level, Level::Warn);
  EXPECT_HAS(named(v, "onnxruntime")->fix, "pip install onnxruntime-gpu");
}

// ember.doctor() audits the interpreter it runs in (sys.executable), which an unactivated venv's is
// not on PATH (issue 48): find_pythons takes it, once.
TEST_F(DoctorPython, TheRunningInterpreterIsAudited) {
  const fs::path empty = fs::temp_directory_path() / ("ember-empty-path-" + std::to_string(getpid()));
  fs::create_directories(empty);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  const char* venv = std::getenv("VIRTUAL_ENV");
  const std::string old_venv = venv ? venv : "";
  unsetenv("VIRTUAL_ENV");
  setenv("PATH", empty.c_str(), 1);
  std::vector<PythonEnv> p = find_pythons({}, kPython);
  setenv("PATH", "/usr/bin", 1);
  std::vector<PythonEnv> q = find_pythons({}, kPython);
  setenv("PATH", old_path.c_str(), 1);
  if (venv) setenv("VIRTUAL_ENV", old_venv.c_str(), 1);
  fs::remove_all(empty);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].path, kPython);
  EXPECT_EQ(p[0].found_by, "sys.executable");
  ASSERT_EQ(q.size(), 1u) << "python3 on PATH is the same interpreter: audited once";
  EXPECT_EQ(find_pythons({"/usr/bin/python3"}, kPython).front().found_by, "--python") << "--python alone when given";
}

