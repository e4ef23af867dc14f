// The framework audit against real interpreters (issue 28): venvs with a real tensorflow-cpu and a
// real CUDA PyTorch wheel (it imports on a machine without a GPU), made once and cached between
// runs under $HOME/.cache/ember-test-venvs (EMBER_TEST_VENV_CACHE to move it). Making them
// downloads gigabytes from PyPI, so a test whose venv is not cached is skipped, naming the reason,
// unless EMBER_TEST_MAKE_VENVS=1; EMBER_TEST_TORCH_VENV may point at an existing CUDA PyTorch venv
// instead (e.g. /work/venvs/torch2). The fake-package tests (test_doctor_python.cpp) cover the
// version combinations; these check that the probe reads what real builds report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/probe_libraries.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

fs::path cache_root() {
  if (const char* c = std::getenv("EMBER_TEST_VENV_CACHE"); c != nullptr && *c != '\0') return c;
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "/tmp") / ".cache" / "ember-test-venvs";
}

std::string tail_of(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// The interpreter of the cached venv `name` holding `packages`; made here when
// EMBER_TEST_MAKE_VENVS=1. `skip` says why there is none.
struct Venv {
  std::string python, skip;
};
Venv cached_venv(const std::string& name, const std::string& packages, const char* override_env = nullptr) {
  if (override_env != nullptr)
    if (const char* dir = std::getenv(override_env); dir != nullptr && *dir != '\0') {
      const fs::path py = fs::path(dir) / "bin" / "python";
      if (access(py.c_str(), X_OK) == 0) return {py.string(), ""};
      return {"", std::string(override_env) + "=" + dir + " has no bin/python"};
    }
  const fs::path dir = cache_root() / name, ready = dir / ".ember-test-ready", py = dir / "bin" / "python";
  if (fs::exists(ready) && access(py.c_str(), X_OK) == 0) return {py.string(), ""};
  const char* make = std::getenv("EMBER_TEST_MAKE_VENVS");
  if (make == nullptr || std::string(make) != "1")
    return {"", "no cached venv at " + dir.string() + " (set EMBER_TEST_MAKE_VENVS=1 to make it: pip downloads " +
                    packages + " from PyPI)"};
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir.parent_path());
  const fs::path log = dir.string() + ".log";
  const std::string cmd = "python3 -m venv '" + dir.string() + "' && '" + py.string() +
                          "' -m pip install --quiet --disable-pip-version-check " + packages + " > '" + log.string() +
                          "' 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return {"", "could not make the venv (PyPI not reachable?): " + cmd + ": " + tail_of(log)};
  std::ofstream(ready) << packages << "\n";
  return {py.string(), ""};
}

// A machine with one GPU of compute capability `cc` and a driver for `driver_cuda`.
EnvFacts machine(Version driver_cuda, int cc) {
  EnvFacts f;
  f.driver_found = true;
  f.driver_version = "580.95.05";
  f.driver_cuda = driver_cuda;
  f.physical_gpus = 1;
  f.gpus = {GpuInfo{0, "GPU", cc / 10, cc % 10, 16ull << 30}};
  return f;
}

const Check* named(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
const Check* named(Verdict&&, const std::string&) = delete;

// TensorFlow's first import compiles its .pyc files: minutes on a busy two-core machine.
constexpr int kImportTimeoutMs = 600000;

}  // namespace

TEST(DoctorVenvs, RealTensorflowCpuIsACpuBuildWithTheCudaInstall) {
  const Venv venv = cached_venv("tensorflow-cpu", "tensorflow-cpu");
  if (venv.python.empty()) GTEST_SKIP() << venv.skip;
  std::vector<PythonEnv> p = find_pythons({venv.python});
  audit_pythons(p, kImportTimeoutMs);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(p[0].error.empty()) << p[0].error;
  ASSERT_TRUE(p[0].tensorflow) << "tensorflow not found; import errors: " << p[0].import_errors.size();
  EXPECT_TRUE(p[0].tensorflow->version.starts_with("2.")) << p[0].tensorflow->version;
  EXPECT_FALSE(p[0].tensorflow->cuda_build);
  EXPECT_FALSE(p[0].torch);
  EnvFacts f = machine(Version{13, 0, 0}, 90);
  f.pythons = p;
  const Verdict v = diagnose(f);
  const Check* tf = named(v, "tensorflow");
  ASSERT_NE(tf, nullptr);
  EXPECT_EQ(tf->level, Level::Fail);
  EXPECT_HAS(tf->message, "CPU-only build");
  EXPECT_HAS(tf->fix, venv.python + " -m pip install 'tensorflow[and-cuda]'");
}

TEST(DoctorVenvs, RealCudaTorchWheelIsReadWithoutAGpu) {
  const Venv venv = cached_venv("torch-cuda", "torch", "EMBER_TEST_TORCH_VENV");
  if (venv.python.empty()) GTEST_SKIP() << venv.skip;
  std::vector<PythonEnv> p = find_pythons({venv.python});
  audit_pythons(p, kImportTimeoutMs);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(p[0].error.empty()) << p[0].error;
  ASSERT_TRUE(p[0].torch);
  const TorchBuild& t = *p[0].torch;
  ASSERT_FALSE(t.cuda.empty()) << "a CUDA wheel reports torch.version.cuda";
  // get_arch_list() is [] without a GPU; the probe reads the build's own arch flags instead.
  ASSERT_FALSE(t.arch_list.empty());
  EXPECT_NE(std::find(t.arch_list.begin(), t.arch_list.end(), "sm_90"), t.arch_list.end());
  EXPECT_GT(t.cudnn_compiled, 0);
  // Its nvidia-* wheels are listed with their library directories.
  const auto cudnn = std::find_if(p[0].nvidia_wheels.begin(), p[0].nvidia_wheels.end(),
                                  [](const PipWheel& w) { return w.name.starts_with("nvidia-cudnn"); });
  ASSERT_NE(cudnn, p[0].nvidia_wheels.end());
  ASSERT_FALSE(cudnn->lib_dirs.empty());

  Version built{};
  ASSERT_EQ(std::sscanf(t.cuda.c_str(), "%d.%d", &built.major, &built.minor), 2);
  // A driver of its CUDA and an H100: usable.
  EnvFacts f = machine(built, 90);
  f.pythons = p;
  Verdict v = diagnose(f);
  ASSERT_NE(named(v, "torch"), nullptr);
  EXPECT_EQ(named(v, "torch")->level, Level::Pass) << named(v, "torch")->message;
  // A driver of an older CUDA major: FAIL, with a wheel index that driver supports.
  f.driver_cuda = Version{built.major - 1, 2, 0};
  v = diagnose(f);
  EXPECT_EQ(named(v, "torch")->level, Level::Fail);
  EXPECT_HAS(named(v, "torch")->fix, "--index-url https://download.pytorch.org/whl/cu");
  EXPECT_HAS(named(v, "torch")->fix, "print(torch.cuda.is_available())");
  // The wheel's copies of the libraries are found with their versions (provenance).
  f.library_copies = detail::scan_library_copies(detail::library_places(f, "/nonexistent-root"));
  const auto copy = std::find_if(f.library_copies.begin(), f.library_copies.end(), [&](const LibraryCopy& c) {
    return c.soname.starts_with("libcudnn.so.") && c.source.starts_with("pip nvidia-cudnn");
  });
  ASSERT_NE(copy, f.library_copies.end());
  EXPECT_FALSE(copy->version.empty());
}
