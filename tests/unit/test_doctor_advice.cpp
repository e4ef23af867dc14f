// The doctor's advice, issues 45 and 48: a machine without an NVIDIA GPU has nothing to fix; the
// driver line fits the GPU (Kepler past support, the open or proprietary kernel modules, R580 the
// last for Maxwell to Volta) and the driver (the 11.x minor-version floor, 12.9, 13.2); WSL2 gets
// Windows driver numbers; `first:` names no WARN where training uses the GPU — the H200 run of
// docs/gpu.md replayed from its doctor.json; the text never cuts a file name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/compat.h"
#include "env/distro.h"
#include "env/probe_os.h"
#include "support/test_data.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
#define EXPECT_HASNT(text, part) EXPECT_EQ(std::string(text).find(part), std::string::npos) << (text)

const Check* find(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
const Check* find(Verdict&&, const std::string&) = delete;

EnvFacts cuda_build(Version cuda = Version{13, 0, 0}) {
  EnvFacts f;
  f.built_with_cuda = true;
  f.cuda_compiled = f.cuda_runtime = cuda;
  f.cudnn_compiled_major = 9;
  f.cuda_sass_archs = {80, 90};
  f.cuda_ptx_archs = {90};
  f.cudnn = Version{9, 13, 0};
  f.cudnn_cuda_major = cuda.major;
  f.cublas = Version{cuda.major, 0, 2};
  f.cores = 2;
  return f;
}

// A driver of `cuda` (its GA driver from the tables) showing one GPU of compute capability `cc`.
EnvFacts with_gpu(EnvFacts f, Version driver_cuda, int cc, const std::string& name = "GPU") {
  f.driver_found = true;
  f.driver_cuda = driver_cuda;
  f.driver_version = compat::min_driver_for(driver_cuda)->driver;
  f.kernel_module_loaded = true;
  f.physical_gpus = 1;
  f.nvidia_pci_gpus = 1;
  f.gpus = {GpuInfo{0, name, cc / 10, cc % 10, 16ull << 30}};
  return f;
}

int count(const Verdict& v, Level l) {
  return int(std::count_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.level == l; }));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<Version> version(const nlohmann::json& j) {
  if (!j.is_string()) return std::nullopt;
  Version v;
  if (std::sscanf(j.get<std::string>().c_str(), "%d.%d.%d", &v.major, &v.minor, &v.patch) < 2) return std::nullopt;
  return v;
}

// The facts of an `ember doctor --json` report (schema 2), as far as the verdict reads them: a user's
// bug report, or the GPU run of docs/gpu.md, judged again by today's rules.
EnvFacts facts_from_report(const nlohmann::json& j) {
  EnvFacts f;
  const auto& b = j.at("build");
  f.built_with_cuda = b.at("cuda");
  f.cuda_compiled = version(b.at("cuda_compiled"));
  f.cuda_sass_archs = b.at("cuda_sass_archs").get<std::vector<int>>();
  f.cuda_ptx_archs = b.at("cuda_ptx_archs").get<std::vector<int>>();
  f.cudnn_compiled_major = 9;
  f.blas = b.at("blas");
  f.blas_build = b.at("blas_build");
  f.blas_path = b.at("blas_path");
  f.blas_threads = 1;  // ember pins it; the report shows the machine's default
  f.cores = j.at("host").at("cores");
  const auto& n = j.at("nvidia");
  f.driver_found = n.at("driver_found");
  f.driver_version = n.at("driver_version");
  f.driver_cuda = version(n.at("driver_cuda"));
  f.cuda_runtime = version(n.at("cuda_runtime"));
  f.cudnn = version(n.at("cudnn"));
  if (n.at("cudnn_cuda_major").is_number()) f.cudnn_cuda_major = n.at("cudnn_cuda_major").get<int>();
  f.cublas = version(n.at("cublas"));
  f.nccl = version(n.at("nccl"));
  f.physical_gpus = n.at("physical_gpus");
  f.kernel_module_loaded = n.at("kernel_module_loaded").get<bool>();
  f.wsl = n.at("wsl");
  f.libcuda_version = n.at("libcuda_version");
  f.driver_path = n.at("paths").at("libcuda");
  f.nccl_path = n.at("paths").at("nccl");
  for (const auto& g : n.at("gpus")) {
    const auto cc = version(g.at("compute_capability"));
    f.gpus.push_back(GpuInfo{g.at("index"), g.at("name"), cc->major, cc->minor, g.at("total_memory")});
  }
  const auto& os = j.at("os");
  f.os_release.id = os.at("id");
  f.os_release.version_id = os.at("version_id");
  f.container = os.at("container");
  f.container_hint = os.at("container_hint");
  for (const auto& d : os.at("device_nodes")) f.device_nodes.push_back({d.at("path"), d.at("exists"), d.at("usable"), d.at("owner")});
  for (const auto& c : j.at("library_copies"))
    f.library_copies.push_back({c.at("soname"), c.at("path"), c.at("real_path"), c.at("version"), c.at("source"),
                                c.at("loader_rank"), c.at("loaded")});
  for (const auto& g : j.at("nvml").at("gpus")) {
    NvmlGpu x;
    x.index = g.at("index");
    x.name = g.at("name");
    x.memory_total = g.at("memory_total");
    x.memory_used = g.at("memory_used");
    x.mig_mode = g.at("mig_mode");
    x.ecc_uncorrected = g.at("ecc_uncorrected");
    f.nvml_gpus.push_back(x);
  }
  f.nvml_path = j.at("nvml").at("path");
  for (const auto& p : j.at("pythons")) {
    PythonEnv e;
    e.path = p.at("path");
    e.found_by = p.at("found_by");
    e.python_version = p.at("python");
    if (p.at("torch").is_object()) {
      const auto& t = p.at("torch");
      e.torch = TorchBuild{.version = t.at("version"), .cuda = t.at("cuda"), .cudnn = t.at("cudnn"),
                           .cudnn_compiled = t.at("cudnn_compiled"), .arch_list = t.at("arch_list")};
    }
    if (p.at("jax").is_object()) {
      JaxBuild jb{.jax = p.at("jax").at("jax"), .jaxlib = p.at("jax").at("jaxlib")};
      for (const auto& [k, v] : p.at("jax").at("cuda_plugins").items()) jb.cuda_plugins.emplace_back(k, v);
      e.jax = jb;
    }
    if (p.at("onnxruntime").is_object())
      e.onnxruntime = OnnxruntimeBuild{p.at("onnxruntime").at("version"), p.at("onnxruntime").at("providers")};
    for (const auto& w : p.at("nvidia_wheels")) e.nvidia_wheels.push_back({w.at("name"), w.at("version"), w.at("lib_dirs")});
    f.pythons.push_back(e);
  }
  return f;
}

}  // namespace

// Issue 48: a machine with no NVIDIA GPU on its PCI bus has nothing to fix: no driver FAIL, no
// install line, a PASS that says why, the CPU as the plain verdict and no `first:`.
TEST(DoctorAdvice, NoNvidiaGpuIsNothingToFix) {
  EnvFacts f = cuda_build();
  f.cpu_smoke_ok = true;
  f.driver_error = "libcuda.so.1: cannot open shared object file";
  f.nvidia_pci_gpus = 0;
  f.container = "docker";  // this machine: a container on a host without a GPU
  f.container_hint = "/.dockerenv";
  const Verdict v = diagnose(f);
  const Check* gpu = find(v, "nvidia gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->level, Level::Pass);
  EXPECT_HAS(gpu->message, "no NVIDIA GPU in this machine");
  EXPECT_HAS(gpu->message, "training uses the CPU; nothing to fix");
  EXPECT_EQ(find(v, "driver"), nullptr);
  EXPECT_EQ(count(v, Level::Fail), 0);
  EXPECT_EQ(count(v, Level::Warn), 0);
  EXPECT_EQ(v.summary, "training will use the CPU (this machine has no NVIDIA GPU)");
  EXPECT_TRUE(v.first_fix.empty());
  for (const Check& c : v.checks) EXPECT_HASNT(c.fix, "driver") << c.name;
  // A CPU-only build there is simply right.
  f.built_with_cuda = false;
  const Verdict cpu = diagnose(f);
  EXPECT_EQ(find(cpu, "build")->level, Level::Pass);
  // A GPU on the bus without a driver: the FAIL names it.
  f = cuda_build();
  f.nvidia_pci_gpus = 1;
  const Verdict missing = diagnose(f);
  EXPECT_EQ(find(missing, "driver")->level, Level::Fail);
  EXPECT_HAS(find(missing, "driver")->message, "the PCI bus shows 1 NVIDIA GPU(s); no NVIDIA driver found");
  // Where one cannot be ruled out (WSL2; a container without /sys), the driver advice stays.
  f.nvidia_pci_gpus.reset();
  f.wsl = true;
  const Verdict wsl = diagnose(f);
  EXPECT_NE(find(wsl, "driver"), nullptr);
  f.wsl = false;
  f.container = "docker";
  f.container_hint = "/.dockerenv";
  const Verdict unknown = diagnose(f);
  ASSERT_NE(find(unknown, "driver"), nullptr);
  EXPECT_HAS(find(unknown, "driver")->fix, "--gpus all");
}

// The PCI bus read from a fake /sys: NVIDIA's display-class functions count, its audio does not;
// WSL2, a Jetson and a missing /sys/bus/pci cannot tell.
TEST(DoctorAdvice, PciBusSaysWhetherThereIsAnNvidiaGpu) {
  const fs::path root = fs::temp_directory_path() / ("ember-pci-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto device = [&](const std::string& slot, const char* vendor, const char* cls) {
    const fs::path d = root / "sys/bus/pci/devices" / slot;
    fs::create_directories(d);
    std::ofstream(d / "vendor") << vendor << "\n";
    std::ofstream(d / "class") << cls << "\n";
  };
  EnvFacts f;
  detail::probe_pci_gpus(f, root.string());
  EXPECT_FALSE(f.nvidia_pci_gpus) << "no /sys/bus/pci: cannot tell";
  fs::create_directories(root / "etc");
  device("0000:00:00.0", "0x8086", "0x060000");  // a host bridge
  device("0000:01:00.1", "0x10de", "0x040300");  // an NVIDIA GPU's HDMI audio
  detail::probe_pci_gpus(f, root.string());
  EXPECT_EQ(f.nvidia_pci_gpus, 0);
  device("0000:01:00.0", "0x10de", "0x030000");  // its VGA function
  device("0000:02:00.0", "0x10de", "0x030200");  // a data-centre GPU (3D controller)
  detail::probe_pci_gpus(f, root.string());
  EXPECT_EQ(f.nvidia_pci_gpus, 2);
  EnvFacts wsl;
  wsl.wsl = true;
  detail::probe_pci_gpus(wsl, root.string());
  EXPECT_FALSE(wsl.nvidia_pci_gpus) << "WSL2's bus shows a virtual GPU whatever Windows has";
  std::ofstream(root / "etc/nv_tegra_release") << "# R36 (release)\n";
  EnvFacts jetson;
  detail::probe_pci_gpus(jetson, root.string());
  EXPECT_FALSE(jetson.nvidia_pci_gpus) << "a Jetson's GPU is not on the PCI bus";
  fs::remove_all(root);
}

// A Kepler GPU under R470 (its last branch) with a CUDA 13 ember: no driver runs CUDA 13 on it, said
// plainly — never "install the driver 580.65.06". PyTorch's cu118 wheels (torch 2.7 at most) still
// run there through minor-version compatibility.
TEST(DoctorAdvice, KeplerIsPastSupport) {
  EnvFacts f = with_gpu(cuda_build(), Version{11, 4, 0}, 37, "Tesla K80");
  f.driver_version = "470.256.02";
  f.os_release = detail::parse_os_release("ID=ubuntu\nVERSION_ID=\"22.04\"\n");
  PythonEnv p;
  p.path = "/usr/bin/python3";
  p.torch = TorchBuild{.version = "2.3.0+cpu"};
  f.pythons = {p};
  const Verdict v = diagnose(f);
  const Check* d = find(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_HAS(d->fix, "Tesla K80 (Kepler, sm_37: its last driver branch is R470, which runs CUDA 11.4 at most)");
  EXPECT_HAS(d->fix, "This GPU is past support for this ember");
  EXPECT_HASNT(d->fix, "580.65.06");
  EXPECT_HASNT(d->fix, "apt install");
  const Check* t = find(v, "torch");
  ASSERT_NE(t, nullptr);
  EXPECT_HAS(t->fix, "--index-url https://download.pytorch.org/whl/cu118 (it carries torch 2.0 to 2.7");
  EXPECT_HASNT(t->fix, "upgrade the NVIDIA driver");
  // sm_35 (K40): no index carries it at all.
  f.gpus[0] = GpuInfo{0, "Tesla K40", 3, 5, 12ull << 30};
  const Verdict k40 = diagnose(f);
  EXPECT_HAS(find(k40, "torch")->fix, "no PyTorch wheel index in ember's tables");
  EXPECT_HAS(find(k40, "torch")->fix, "past support");
}

// The kernel modules fit the GPU: Blackwell needs the open ones, Maxwell to Volta the proprietary
// ones (R580 their last: the AUR's nvidia-580xx-dkms on Arch); and a CUDA whose driver is past R580
// is past support for them.
TEST(DoctorAdvice, DriverLineFitsTheGpu) {
  auto fix_for = [](int cc, const char* os_release, Version cuda = Version{13, 0, 0}) {
    EnvFacts f = with_gpu(cuda_build(cuda), Version{12, 2, 0}, cc);
    f.os_release = detail::parse_os_release(os_release);
    const Verdict v = diagnose(f);
    return find(v, "driver") ? find(v, "driver")->fix : std::string();
  };
  const char* ubuntu = "ID=ubuntu\nVERSION_ID=\"24.04\"\n";
  const char* arch = "ID=arch\n";
  const char* rocky = "ID=rocky\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\n";
  EXPECT_HAS(fix_for(120, ubuntu), "`sudo apt install nvidia-driver-580-open` (this GPU needs the open kernel modules");
  EXPECT_HAS(fix_for(61, ubuntu), "`sudo apt install nvidia-driver-580` (the proprietary modules: this GPU predates "
                                  "Turing");
  EXPECT_HAS(fix_for(70, arch), "the AUR's `nvidia-580xx-dkms`");
  EXPECT_HASNT(fix_for(70, arch), "pacman -Syu nvidia-open");
  EXPECT_HAS(fix_for(90, arch), "sudo pacman -Syu nvidia-open");
  EXPECT_HAS(fix_for(100, rocky), "`sudo dnf module enable nvidia-driver:open-dkms && sudo dnf install nvidia-open`");
  EXPECT_HAS(fix_for(61, rocky), "`sudo dnf module install nvidia-driver:580-dkms`");
  EXPECT_HAS(fix_for(120, "ID=rhel\nVERSION_ID=\"10.0\"\n"), "`sudo dnf install nvidia-open`");
  EXPECT_HASNT(fix_for(120, "ID=rhel\nVERSION_ID=\"10.0\"\n"), "dnf module");
  // A CUDA 13.2 ember on a Volta GPU: 13.2 needs R595, Volta's last is R580.
  const std::string volta = fix_for(70, ubuntu, Version{13, 2, 0});
  EXPECT_HAS(volta, "no driver for CUDA 13.2 (branch R595 or newer) supports it");
  EXPECT_HAS(volta, "its last driver branch is R580");
  EXPECT_HASNT(volta, "apt install");
  // The Secure Boot key: Ubuntu keeps it with shim-signed, Debian in DKMS's directory.
  EnvFacts f = cuda_build();
  f.secure_boot = true;
  f.os_release = detail::parse_os_release(ubuntu);
  EXPECT_HAS(detail::driver_install_fix(f, Version{13, 0, 0}), "mokutil --import /var/lib/shim-signed/mok/MOK.der");
  f.os_release = detail::parse_os_release("ID=debian\nVERSION_ID=\"12\"\n");
  EXPECT_HAS(detail::driver_install_fix(f, Version{13, 0, 0}), "mokutil --import /var/lib/dkms/mok.pub");
}

// Drivers against the CUDA ember needs, by the tables: the 11.x floor (450.80.02), a 12.9 and a 13.2
// driver, and a driver newer than the tables, which says so.
TEST(DoctorAdvice, DriverAgainstTheCudaEmberNeeds) {
  struct Row {
    const char* driver;
    Version driver_cuda, runtime;
    Level expect;
    const char* says;
  };
  const Row rows[] = {
      {"450.51.06", {11, 0}, {11, 8}, Level::Fail, "older than 450.80.02, the lowest driver that runs every CUDA 11.x"},
      {"450.80.02", {11, 0}, {11, 8}, Level::Warn, "minor-version compatibility"},
      {"575.51.03", {12, 9}, {12, 4}, Level::Pass, "supports CUDA 12.9"},
      {"595.45.04", {13, 2}, {13, 2}, Level::Pass, "supports CUDA 13.2"},
      {"595.45.04", {13, 2}, {13, 0}, Level::Pass, "supports CUDA 13.2"},
      {"580.65.06", {13, 0}, {13, 2}, Level::Warn, "minor-version compatibility"},
      {"620.10", {13, 6}, {13, 0}, Level::Pass, "newer than ember's tables of 2026-12-04"},
  };
  for (const Row& r : rows) {
    EnvFacts f = with_gpu(cuda_build(r.runtime), r.driver_cuda, 90);
    f.driver_version = r.driver;
    f.cuda_sass_archs = {90};
    const Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->level, r.expect) << r.driver << ": " << d->message;
    EXPECT_HAS(d->message, r.says);
    if (r.expect == Level::Warn) EXPECT_HAS(d->fix, compat::driver_requirement(r.runtime));
  }
  // 13.2's install line names its own branch (595), not 13.1's (590).
  EnvFacts f = cuda_build(Version{13, 2, 0});
  f.nvidia_pci_gpus = 1;
  f.os_release = detail::parse_os_release("ID=ubuntu\nVERSION_ID=\"24.04\"\n");
  const Verdict v = diagnose(f);
  EXPECT_HAS(find(v, "driver")->fix, "install the NVIDIA driver 595.45.04 or newer (CUDA 13.2)");
  EXPECT_HAS(find(v, "driver")->fix, "nvidia-driver-595");
}

// WSL2 runs the Windows driver: its Windows number, and a warning against a Linux driver inside.
TEST(DoctorAdvice, WslNamesTheWindowsDriver) {
  struct Row {
    Version cuda;
    const char* windows;
  };
  const Row rows[] = {{{12, 4}, "for CUDA 12.4: 551.61 or newer, or 527.41 or newer through CUDA 12.x minor-version "
                                "compatibility"},
                      {{11, 8}, "520.06 or newer, or 452.39 or newer through CUDA 11.x"},
                      {{13, 0}, "a driver of branch R580 or newer (NVIDIA names no Windows number for CUDA 13.0)"}};
  for (const Row& r : rows) {
    EnvFacts f = cuda_build(r.cuda);
    f.wsl = true;
    const Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_HAS(d->fix, "on Windows");
    EXPECT_HAS(d->fix, r.windows);
    EXPECT_HAS(d->fix, "never install a Linux NVIDIA driver inside WSL");
    EXPECT_HASNT(d->fix, compat::min_driver_for(r.cuda)->driver) << "a Linux number";
  }
}

// `first:` names a WARN only where training does not reach a GPU this machine has: on a working GPU
// the WARN lines are advice (the H200's first line named two libcudnn copies).
TEST(DoctorAdvice, FirstFixNamesNoWarnOnAWorkingGpu) {
  EnvFacts f = with_gpu(cuda_build(), Version{13, 0, 0}, 90, "NVIDIA H200");
  PythonEnv p;
  p.path = "/venv/bin/python3";
  p.onnxruntime = OnnxruntimeBuild{"1.30.0", {"CPUExecutionProvider"}};
  f.pythons = {p};
  Verdict v = diagnose(f);
  EXPECT_TRUE(v.gpu_usable);
  EXPECT_EQ(find(v, "onnxruntime")->level, Level::Warn);
  EXPECT_TRUE(v.first_fix.empty());
  EXPECT_TRUE(v.first_fix_check.empty());
  EXPECT_HAS(format_report(f, v), "first:   nothing blocks training; the WARN line above is advice");
  // The GPU not usable (a PTX-only GPU is fine, a missing cuBLAS is not): the first FAIL.
  f.cublas.reset();
  v = diagnose(f);
  EXPECT_EQ(v.first_fix_check, "cublas");
  // CUDA reaches the GPU only through a WARN (the driver's minor-version compatibility) and no FAIL:
  // not usable is not the case, so nothing is first either. A machine whose GPU is not used and has
  // only a WARN: the WARN is the first thing to do.
  f = with_gpu(cuda_build(), Version{13, 0, 0}, 90);
  f.cuda_sass_archs = {80};
  f.cuda_ptx_archs = {};
  v = diagnose(f);
  EXPECT_FALSE(v.gpu_usable);
  EXPECT_EQ(v.first_fix_check, "device 0");
}

// The H200 run of docs/gpu.md (2026-12-04, driver 580.159.04 with the open kernel module, in
// docker), replayed from its doctor.json: the GPU trains, the two libcudnn / libnccl copies are the
// newest first on the loader's path (PASS, not WARN), and `first:` names nothing.
TEST(DoctorAdvice, TheH200RunHasNothingToDoFirst) {
  const std::string text = slurp(ember::test::data_dir() + "/fixtures/doctor/h200-2026-12-04.json");
  ASSERT_FALSE(text.empty()) << "tests/fixtures/doctor/h200-2026-12-04.json";
  const nlohmann::json report = nlohmann::json::parse(text);
  EXPECT_EQ(report["verdict"]["first_fix_check"], "libcudnn.so.9") << "the run's own report, before issue 45";
  const EnvFacts f = facts_from_report(report);
  ASSERT_EQ(f.gpus.size(), 1u);
  ASSERT_EQ(f.library_copies.size(), 10u);
  const Verdict v = diagnose(f);
  EXPECT_TRUE(v.gpu_usable);
  EXPECT_EQ(v.summary, "training will use the GPU (cuda:0)");
  ASSERT_NE(find(v, "libcudnn.so.9"), nullptr);
  EXPECT_EQ(find(v, "libcudnn.so.9")->level, Level::Pass);
  EXPECT_HAS(find(v, "libcudnn.so.9")->message, "(9.19.0, the one ember loaded), the newest");
  EXPECT_EQ(find(v, "libnccl.so.2")->level, Level::Pass);
  EXPECT_EQ(count(v, Level::Fail), 0);
  EXPECT_TRUE(v.first_fix.empty()) << v.first_fix_check << ": " << v.first_fix;
  // torch 2.11.0+cu130 on the H200: fine; onnxruntime without CUDA: still a WARN, advice only.
  EXPECT_EQ(find(v, "torch")->level, Level::Pass);
  EXPECT_EQ(find(v, "onnxruntime")->level, Level::Warn);
  const std::string out = format_report(f, v);
  EXPECT_HAS(out, "first:   nothing blocks training");
  EXPECT_HAS(out, "compat tables");
}

// The text report: within 80 columns, a long path broken after a '/', never inside a file name
// (issue 48: "libopenblas\n.so.0"); a copy whose version is unknown says so, not "?".
TEST(DoctorAdvice, TextNeverCutsAFileName) {
  EnvFacts f = cuda_build();
  f.nvidia_pci_gpus = 1;
  f.blas = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Prescott MAX_THREADS=64";
  f.blas_build = "openmp";
  f.blas_threads = 1;
  f.blas_path = "/tmp/ember-gpu-check.PsIGeE/bundle-root/lib/libopenblas.so.0";
  f.cudnn_path = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
  f.library_copies = {{"libcudart.so.13", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
                       "", "", "LD_LIBRARY_PATH", 0, false}};
  const std::string out = format_report(f, diagnose(f));
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 80u) << line;
  for (const char* name : {"libopenblas.so.0", "libcudnn.so.9", "libcudart.so.13"}) {
    bool whole = false;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) whole |= line.find(name) != std::string::npos;
    EXPECT_TRUE(whole) << name << " is cut across lines:\n" << out;
  }
  EXPECT_HAS(out, "libcudart.so.13       (version unknown)");
  EXPECT_HASNT(out, " ? /opt");
  EXPECT_HAS(out, "driver                not found (libcuda.so.1 missing)");
}

// The JSON carries the PCI bus and the frameworks' own answers (schema 2.3).
TEST(DoctorAdvice, JsonCarriesThePciBusAndTheFrameworksAnswers) {
  EnvFacts f = cuda_build();
  f.nvidia_pci_gpus = 0;
  PythonEnv p;
  p.path = "/usr/bin/python3";
  p.torch = TorchBuild{.version = "2.9.0+cu126", .cuda = "12.6", .cuda_available = false};
  p.tensorflow = TensorflowBuild{.version = "1.14.0", .package = "tensorflow-gpu", .imported = false,
                                 .libraries = {{"libcudart.so.10.0", "", "not found"}}};
  p.jax = JaxBuild{.jax = "0.8.0", .devices = {"cpu"}};
  f.pythons = {p};
  const nlohmann::json j = nlohmann::json::parse(to_json(f, diagnose(f)));
  EXPECT_EQ(j["schema"], 2);
  EXPECT_EQ(j["schema_minor"], 3);
  EXPECT_EQ(j["nvidia"]["pci_gpus"], 0);
  EXPECT_EQ(j["pythons"][0]["torch"]["cuda_available"], false);
  EXPECT_EQ(j["pythons"][0]["tensorflow"]["imported"], false);
  EXPECT_EQ(j["pythons"][0]["tensorflow"]["package"], "tensorflow-gpu");
  EXPECT_EQ(j["pythons"][0]["tensorflow"]["libraries"][0]["soname"], "libcudart.so.10.0");
  EXPECT_EQ(j["pythons"][0]["jax"]["devices"][0], "cpu");
  EXPECT_EQ(j["compat_tables"], compat::tables().date);
}
