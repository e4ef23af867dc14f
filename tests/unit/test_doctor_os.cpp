// The doctor's OS layer, distribution-aware fixes and provenance (issue 28), on fake roots: a
// temporary directory holding the /proc, /sys, /dev and /etc files each case needs, fake libcuda
// and libnccl builds (tests/fakes/), and directories of library copies. Each failure mode asserts
// its verdict and its fix text.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/env/doctor.h"
#include "env/compat.h"
#include "env/distro.h"
#include "env/probe_libraries.h"
#include "env/probe_nvidia.h"
#include "env/probe_os.h"

using namespace ember::env;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)
#define EXPECT_HASNT(text, part) EXPECT_EQ(std::string(text).find(part), std::string::npos) << (text)

const std::string kFakes = EMBER_FAKE_LIBS_DIR;
// The fake libraries are built beside the tests; a bundle copied to another machine (the GPU
// check's) has none, and the tests that load them say so instead of failing.
#define REQUIRE_FAKES() \
  if (!fs::exists(kFakes + "/libcuda/libcuda.so.1")) GTEST_SKIP() << "fake NVIDIA libraries not built at " << kFakes

// A fake root (<tmp>/proc, /sys, /dev, /etc, ...) as the test writes it; removed when it ends.
struct FakeRoot {
  fs::path dir = fs::temp_directory_path() / ("ember-os-root-" + std::to_string(getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  FakeRoot() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~FakeRoot() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string root() const { return dir.string(); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::binary) << text;
  }
  void nvidia_module(const std::string& version, int gpus) const {
    write("proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version + "  Thu Oct  2 00:00:00 UTC 2025\n");
    for (int i = 0; i < gpus; ++i)
      write("proc/driver/nvidia/gpus/0000:0" + std::to_string(i) + ":00.0/information",
            "Model: \t\t Fake H200\nDevice Minor: \t " + std::to_string(i) + "\n");
  }
  void device_nodes(int gpus, bool uvm = true) const {
    write("dev/nvidiactl", "");
    if (uvm) write("dev/nvidia-uvm", "");
    for (int i = 0; i < gpus; ++i) write("dev/nvidia" + std::to_string(i), "");
  }
  void secure_boot(bool on) const {
    write("sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
          std::string("\x06\0\0\0", 4) + (on ? '\1' : '\0'));
  }
  // A libcuda.so.1 link to libcuda.so.<version>, a copy of the fake driver: its file names the version.
  std::string libcuda(const std::string& version) const {
    fs::create_directories(dir / "lib");
    fs::copy_file(kFakes + "/libcuda/libcuda.so.1", dir / "lib" / ("libcuda.so." + version),
                  fs::copy_options::overwrite_existing);
    fs::create_symlink("libcuda.so." + version, dir / "lib/libcuda.so.1");
    return (dir / "lib/libcuda.so.1").string();
  }
};

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

EnvFacts cuda13_build() {
  EnvFacts f;
  f.built_with_cuda = true;
  f.cuda_compiled = f.cuda_runtime = Version{13, 0, 0};
  f.cudnn_compiled_major = 9;
  f.cuda_sass_archs = {90};
  f.cuda_ptx_archs = {90};
  f.cudnn = Version{9, 13, 0};
  f.cudnn_cuda_major = 13;
  f.cublas = Version{13, 0, 2};
  return f;
}

// Probes the fake root as `ember doctor` probes this machine: module, driver, then the OS layer.
EnvFacts probe(const FakeRoot& r, const std::vector<std::string>& libcuda, const detail::AccessCheck& rw = {}) {
  EnvFacts f = cuda13_build();
  detail::probe_kernel_module(f, r.root());
  detail::probe_driver(f, libcuda, /*isolated=*/true);
  detail::probe_os_release(f, r.root());
  detail::probe_modules(f, r.root());
  detail::probe_secure_boot(f, r.root());
  detail::probe_container(f, r.root(), nullptr);
  detail::probe_device_nodes(f, r.root(), rw ? rw : [](const std::string&) { return true; });
  return f;
}

const Check* find(const Verdict& v, const std::string& name) {
  auto it = std::find_if(v.checks.begin(), v.checks.end(), [&](const Check& c) { return c.name == name; });
  return it == v.checks.end() ? nullptr : &*it;
}
const Check* find(Verdict&&, const std::string&) = delete;

const char* const kOsRelease[] = {
    "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
    "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\nVERSION_ID=\"24.04\"\nID=ubuntu\nID_LIKE=debian\n",
    "NAME=\"Rocky Linux\"\nVERSION_ID=\"9.4\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n",
    "NAME=\"Fedora Linux\"\nVERSION_ID=42\nID=fedora\n",
    "NAME=\"Arch Linux\"\nID=arch\nBUILD_ID=rolling\n",
    "NAME=\"openSUSE Tumbleweed\"\nID=\"opensuse-tumbleweed\"\nID_LIKE=\"opensuse suse\"\n",
};

}  // namespace

// ---------------------------------------------------------------- the OS layer

TEST(DoctorOs, KernelModuleOlderThanLibcudaIsTheRebootCase) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.nvidia_module("570.86.15", 1);
  r.device_nodes(1);
  FakeCuda cuda("803", "13000", "");  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, as a mismatched module makes cuInit fail
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  EXPECT_EQ(f.libcuda_version, "580.95.05");
  EXPECT_EQ(f.driver_version, "570.86.15");
  const Verdict v = diagnose(f);
  const Check* k = find(v, "kernel module");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->level, Level::Fail);
  EXPECT_HAS(k->message, "570.86.15 but libcuda is 580.95.05");
  EXPECT_HAS(k->message, "the old module is still loaded");
  EXPECT_HAS(k->fix, "reboot");
  EXPECT_HAS(k->fix, "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia");
  EXPECT_FALSE(v.gpu_usable);
}

// The open kernel module's version line (seen on the lent H200, 2026-12-04): "Open Kernel Module for x86_64"
// put "for" where the version was read, and the doctor called a working GPU unusable.
TEST(DoctorOs, OpenKernelModuleVersionLineIsRead) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.write("proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
          "(dvs-builder@U22-I3-AE18-23-3)  Thu Oct  2 00:00:00 UTC 2025\nGCC version:  gcc version 12.3.0\n");
  r.write("proc/driver/nvidia/gpus/0000:00:00.0/information", "Model: \t\t Fake H200\n");
  r.device_nodes(1);
  FakeCuda cuda("0", "13000", "90:Fake H200");
  EnvFacts f = probe(r, {r.libcuda("580.159.04")});
  EXPECT_EQ(f.driver_version, "580.159.04");
  const Verdict v = diagnose(f);
  ASSERT_NE(find(v, "kernel module"), nullptr);
  EXPECT_EQ(find(v, "kernel module")->level, Level::Pass);
  EXPECT_TRUE(v.gpu_usable);
}

// Versions that differ while cuInit succeeded cannot be the 803 case: a warning, and the GPU stays usable.
TEST(DoctorOs, KernelModuleDifferingWhileCudaStartsIsAWarning) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.nvidia_module("570.86.15", 1);
  r.device_nodes(1);
  FakeCuda cuda("0", "13000", "90:Fake H200");
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  const Verdict v = diagnose(f);
  const Check* k = find(v, "kernel module");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->level, Level::Warn);
  EXPECT_HAS(k->message, "CUDA started anyway");
  EXPECT_TRUE(v.gpu_usable);
}

TEST(DoctorOs, KernelModuleMatchingLibcudaPasses) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.nvidia_module("580.95.05", 1);
  r.device_nodes(1);
  FakeCuda cuda("0", "13000", "90:Fake H200");
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  const Verdict v = diagnose(f);
  ASSERT_NE(find(v, "kernel module"), nullptr);
  EXPECT_EQ(find(v, "kernel module")->level, Level::Pass);
  ASSERT_NE(find(v, "device files"), nullptr);
  EXPECT_EQ(find(v, "device files")->level, Level::Pass);
  EXPECT_HAS(find(v, "device files")->message, "/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia0");
  EXPECT_TRUE(v.gpu_usable);
  EXPECT_EQ(v.training_device, "cuda:0");
}

TEST(DoctorOs, NouveauHoldingTheGpuIsBlacklistedPerDistribution) {
  REQUIRE_FAKES();
  struct Row {
    const char* os_release;
    const char* initramfs;
  };
  const Row rows[] = {{kOsRelease[0], "sudo update-initramfs -u"},
                      {kOsRelease[2], "sudo dracut --force"},
                      {kOsRelease[4], "sudo mkinitcpio -P"}};
  for (const Row& row : rows) {
    FakeRoot r;
    r.write("etc/os-release", row.os_release);
    r.write("proc/modules", "nouveau 2711552 1 - Live 0x0000000000000000\nvideo 69632 1 nouveau, Live 0x0\n");
    FakeCuda cuda("100", "13000", "");
    EnvFacts f = probe(r, {r.libcuda("580.95.05")});  // the driver is installed, its module not loaded
    ASSERT_EQ(f.conflicting_modules, std::vector<std::string>{"nouveau"});
    const Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->level, Level::Fail);
    EXPECT_HAS(d->message, "kernel module is not loaded");
    EXPECT_HAS(d->fix, "nouveau holds the GPU");
    EXPECT_HAS(d->fix, "blacklist nouveau");
    EXPECT_HAS(d->fix, "options nouveau modeset=0");
    EXPECT_HAS(d->fix, row.initramfs);
    EXPECT_EQ(find(v, "nouveau"), nullptr) << "said once, by the driver line";
    EXPECT_EQ(v.first_fix_check, "driver");
    EXPECT_HAS(v.first_fix, "blacklist nouveau");
  }
  // No NVIDIA driver installed yet: the nouveau line stands on its own, beside the install line.
  FakeRoot r;
  r.write("etc/os-release", kOsRelease[1]);
  r.write("proc/modules", "nova_core 65536 0 - Live 0x0\n");
  EnvFacts f = probe(r, {"/nonexistent/libcuda.so.1"});
  const Verdict v = diagnose(f);
  ASSERT_NE(find(v, "nouveau"), nullptr);
  EXPECT_EQ(find(v, "nouveau")->level, Level::Fail);
  EXPECT_HAS(find(v, "nouveau")->fix, "blacklist nova_core");
  EXPECT_HAS(find(v, "driver")->fix, "nvidia-driver-580");
}

TEST(DoctorOs, SecureBootRefusingTheModuleNamesMokEnrolment) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.secure_boot(true);
  FakeCuda cuda("100", "13000", "");
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  ASSERT_TRUE(f.secure_boot.has_value());
  EXPECT_TRUE(*f.secure_boot);
  const Verdict v = diagnose(f);
  const Check* d = find(v, "driver");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_HAS(d->fix, "Secure Boot is on");
  EXPECT_HAS(d->fix, "mokutil --sb-state");
  EXPECT_HAS(d->fix, "Key was rejected");
  EXPECT_HAS(d->fix, "sudo mokutil --import /var/lib/dkms/mok.pub");
  // Secure Boot off: modprobe, and the kernel log for the other reasons.
  FakeRoot off;
  off.secure_boot(false);
  EnvFacts g = probe(off, {off.libcuda("580.95.05")});
  EXPECT_EQ(g.secure_boot, false);
  const Verdict w = diagnose(g);
  EXPECT_HAS(find(w, "driver")->fix, "sudo modprobe nvidia");
  EXPECT_HASNT(find(w, "driver")->fix, "mokutil --import");
  // A BIOS machine: no EFI, Secure Boot unknown.
  FakeRoot bios;
  EnvFacts h;
  detail::probe_secure_boot(h, bios.root());
  EXPECT_FALSE(h.secure_boot.has_value());
  // Installing a driver with Secure Boot on: the install line says the key must be enrolled.
  FakeRoot fresh;
  fresh.secure_boot(true);
  fresh.write("etc/os-release", kOsRelease[1]);
  EnvFacts n = probe(fresh, {"/nonexistent/libcuda.so.1"});
  const Verdict u = diagnose(n);
  EXPECT_HAS(find(u, "driver")->fix, "Enroll MOK");
}

TEST(DoctorOs, MissingDeviceNodesNameNvidiaModprobe) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.nvidia_module("580.95.05", 2);
  r.device_nodes(1, /*uvm=*/false);  // /dev/nvidia1 and /dev/nvidia-uvm missing
  FakeCuda cuda("0", "13000", "90:Fake H200,90:Fake H200");
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  const Verdict v = diagnose(f);
  const Check* d = find(v, "device files");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_HAS(d->message, "/dev/nvidia-uvm, /dev/nvidia1 missing");
  EXPECT_HAS(d->fix, "sudo nvidia-modprobe -c 0 -u");
  EXPECT_FALSE(v.gpu_usable);
}

TEST(DoctorOs, DeviceNodesThisUserCannotOpenNameTheGroupFix) {
  REQUIRE_FAKES();
  FakeRoot r;
  r.nvidia_module("580.95.05", 1);
  r.device_nodes(1);
  FakeCuda cuda("0", "13000", "90:Fake H200");
  // The tests run as root, whom access(2) always lets through: the check is given instead.
  EnvFacts f = probe(r, {r.libcuda("580.95.05")}, [](const std::string& node) { return node != "/dev/nvidia0"; });
  const Verdict v = diagnose(f);
  const Check* d = find(v, "device files");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->level, Level::Fail);
  EXPECT_HAS(d->message, "/dev/nvidia0 (");
  EXPECT_HAS(d->message, "may not read and write");
  EXPECT_HAS(d->fix, "sudo usermod -aG <group> $USER");
  EXPECT_HAS(d->fix, "NVreg_DeviceFileMode");
  EXPECT_FALSE(v.gpu_usable);
  // The probe reports the node's owner and mode as `ls -l` does.
  const auto node = std::find_if(f.device_nodes.begin(), f.device_nodes.end(),
                                 [](const DeviceNode& n) { return n.path == "/dev/nvidia0"; });
  ASSERT_NE(node, f.device_nodes.end());
  EXPECT_FALSE(node->usable);
  EXPECT_HAS(node->owner, "root:");
}

TEST(DoctorOs, ContainerWithoutGpusNamesGpusAllNeverADriverInside) {
  REQUIRE_FAKES();
  struct Row {
    const char* file;       // the file that marks the container
    const char* content;
    const char* kind;
    const char* pass_in;    // how the GPU is passed in for that runtime
  };
  const Row rows[] = {{".dockerenv", "", "docker", "docker run --gpus all"},
                      {"run/.containerenv", "engine=\"podman-5.0\"\n", "podman", "--device nvidia.com/gpu=all"},
                      {"proc/1/cgroup", "12:devices:/kubepods/burstable/pod1/abc\n", "kubernetes", "nvidia.com/gpu"},
                      {"proc/1/environ", std::string("HOME=/\0container=lxc\0", 22).c_str(), "lxc", "--gpus all"}};
  for (const Row& row : rows) {
    FakeRoot r;
    r.write(row.file, row.file == std::string("proc/1/environ") ? std::string("HOME=/\0container=lxc\0", 22)
                                                                 : std::string(row.content));
    r.write("etc/os-release", kOsRelease[1]);
    r.nvidia_module("580.95.05", 1);  // /proc/driver is the host's: its module shows through
    EnvFacts f = probe(r, {"/nonexistent/libcuda.so.1"});
    EXPECT_EQ(f.container, row.kind);
    const Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->level, Level::Fail);
    EXPECT_HAS(d->message, std::string("in this ") + row.kind + " container");
    EXPECT_HAS(d->fix, row.pass_in);
    EXPECT_HAS(d->fix, "NVIDIA Container Toolkit");
    EXPECT_HAS(d->fix, "never install a driver inside it");
    EXPECT_HAS(d->fix, "580.65.06");
    for (const char* wrong : {"apt install", "ubuntu-drivers", "dnf install", "pacman", ".run"}) EXPECT_HASNT(d->fix, wrong);
    EXPECT_FALSE(v.gpu_usable);
  }
  // libcuda baked into the image but no device passed in: the container line says it.
  FakeRoot r;
  r.write(".dockerenv", "");
  FakeCuda cuda("100", "13000", "");
  EnvFacts f = probe(r, {r.libcuda("580.95.05")});
  const Verdict v = diagnose(f);
  const Check* c = find(v, "container");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, Level::Fail);
  EXPECT_HAS(c->message, "no NVIDIA GPU passed in (no /dev/nvidiactl)");
  EXPECT_HAS(c->fix, "nvidia-ctk runtime configure --runtime=docker");
  EXPECT_HAS(c->fix, "docker run --gpus all");
  // GPUs passed in: a PASS line.
  FakeRoot ok;
  ok.write(".dockerenv", "");
  ok.nvidia_module("580.95.05", 1);
  ok.device_nodes(1);
  FakeCuda cuda2("0", "13000", "90:Fake H200");
  EnvFacts g = probe(ok, {ok.libcuda("580.95.05")});
  const Verdict w = diagnose(g);
  ASSERT_NE(find(w, "container"), nullptr);
  EXPECT_EQ(find(w, "container")->level, Level::Pass);
  EXPECT_TRUE(w.gpu_usable);
}

// ---------------------------------------------------------------- fixes that fit the distribution

TEST(DoctorOs, OsReleaseIsParsed) {
  const OsRelease d = detail::parse_os_release(kOsRelease[0]);
  EXPECT_EQ(d.id, "debian");
  EXPECT_EQ(d.version_id, "12");
  EXPECT_EQ(d.pretty_name, "Debian GNU/Linux 12 (bookworm)");
  const OsRelease rocky = detail::parse_os_release(kOsRelease[2]);
  EXPECT_EQ(rocky.id, "rocky");
  EXPECT_EQ(rocky.id_like, (std::vector<std::string>{"rhel", "centos", "fedora"}));
  EXPECT_EQ(detail::distro_of(rocky), detail::Distro::Rhel);
  EXPECT_EQ(detail::distro_of(detail::parse_os_release("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n")),
            detail::Distro::Ubuntu);
  EXPECT_EQ(detail::distro_of(detail::parse_os_release("ID=almalinux\nID_LIKE=\"rhel centos fedora\"\n")),
            detail::Distro::Rhel);
  EXPECT_EQ(detail::distro_of(detail::parse_os_release(kOsRelease[3])), detail::Distro::Fedora);
  EXPECT_EQ(detail::distro_of(detail::parse_os_release(kOsRelease[4])), detail::Distro::Arch);
  EXPECT_EQ(detail::distro_of(detail::parse_os_release(kOsRelease[5])), detail::Distro::Unknown);
  EXPECT_EQ(detail::distro_of(OsRelease{}), detail::Distro::Unknown);
  // Read from the root: /etc/os-release, else /usr/lib/os-release.
  FakeRoot r;
  r.write("usr/lib/os-release", kOsRelease[4]);
  EnvFacts f;
  detail::probe_os_release(f, r.root());
  EXPECT_EQ(f.os_release.id, "arch");
}

// Every driver line names a branch that supports the CUDA ember needs (from the tables) and the
// command of its distribution; none tells a WSL or container user to install a Linux driver.
TEST(DoctorOs, DriverFixFitsTheDistributionAndNamesASupportingBranch) {
  struct Row {
    int distro;  // index into kOsRelease
    const char* command;
  };
  const Row rows[] = {{1, "sudo ubuntu-drivers install"}, {1, "sudo apt install nvidia-driver-"},
                      {2, "cuda-rhel9.repo"},           {2, "sudo dnf install nvidia-open"},
                      {2, "nvidia-driver:open-dkms"},    {3, "cuda-fedora42.repo"},
                      {4, "sudo pacman -Syu nvidia-open"}, {5, "NVIDIA-Linux-x86_64-<version>.run"},
                      {0, "debian12"}};
  for (const Version cuda : {Version{12, 2, 0}, Version{12, 4, 0}, Version{12, 8, 0}, Version{13, 0, 0}, Version{13, 1, 0}}) {
    const int branch = compat::driver_branch_for(cuda);
    ASSERT_GT(branch, 0) << cuda.str();
    for (const Row& row : rows) {
      EnvFacts f = cuda13_build();
      f.cuda_compiled = f.cuda_runtime = cuda;
      f.os_release = detail::parse_os_release(kOsRelease[row.distro]);
      const Verdict v = diagnose(f);
      const Check* d = find(v, "driver");
      ASSERT_NE(d, nullptr);
      EXPECT_EQ(d->level, Level::Fail);
      EXPECT_HAS(d->fix, compat::min_driver_for(cuda)->driver + " or newer (CUDA " + cuda.str() + ")");
      if (!(row.distro == 0 && cuda < Version{13, 0, 0})) EXPECT_HAS(d->fix, std::to_string(branch));
      if (!(row.distro == 0 && cuda <= Version{12, 2, 0})) EXPECT_HAS(d->fix, row.command);
      EXPECT_HAS(d->fix, "nvidia-smi");
      // WSL2 and containers: never a Linux driver, whatever the distribution.
      f.wsl = true;
      const Verdict w = diagnose(f);
      EXPECT_HAS(find(w, "driver")->fix, "on Windows");
      EXPECT_HAS(find(w, "driver")->fix, "never install a Linux NVIDIA driver inside WSL");
      for (const char* linux_install : {"apt install", "ubuntu-drivers", "dnf ", "pacman", ".run", "cuda-drivers"})
        EXPECT_HASNT(find(w, "driver")->fix, linux_install);
    }
  }
}

// Debian: its own nvidia-driver where the release ships one new enough (the tables' distro_drivers,
// read with apt-cache policy), NVIDIA's CUDA repository (cuda-drivers) where it does not.
TEST(DoctorOs, DebianFixSaysWhichDriverTheReleaseShips) {
  struct Row {
    const char* version_id;
    Version cuda;
    const char* expect;
    const char* never;
  };
  const Row rows[] = {
      {"12", Version{12, 2, 0}, "`sudo apt install nvidia-driver linux-headers-amd64` from Debian 12", "older than"},
      {"12", Version{12, 4, 0}, "Debian 12's own nvidia-driver is 535.309.01 (bookworm-security; backports: "
                                "535.216.03), older than 550.54.14", "sudo apt install nvidia-driver linux"},
      {"12", Version{13, 0, 0}, "repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb", "sudo apt install nvidia-driver linux"},
      {"13", Version{12, 4, 0}, "it ships 550.163.01 in trixie, enough for CUDA 12.4", "older than"},
      {"13", Version{13, 0, 0}, "Debian 13's own nvidia-driver is 550.163.01", "sudo apt install nvidia-driver linux"},
      {"", Version{13, 0, 0}, "NVIDIA's CUDA repository for your Debian", "debian12"},
  };
  for (const Row& row : rows) {
    EnvFacts f = cuda13_build();
    f.cuda_compiled = f.cuda_runtime = row.cuda;
    f.os_release.id = "debian";
    f.os_release.version_id = row.version_id;
    const Verdict v = diagnose(f);
    const Check* d = find(v, "driver");
    ASSERT_NE(d, nullptr);
    EXPECT_HAS(d->fix, row.expect);
    EXPECT_HASNT(d->fix, row.never);
    const bool own = std::string(row.never) == "older than";  // the release's own driver is enough
    EXPECT_HAS(d->fix, own ? std::string("cuda-drivers") : "cuda-drivers-" + std::to_string(compat::driver_branch_for(row.cuda)));
  }
}

// A driver too old for ember's CUDA (the FAIL by version, and cuInit's error 36) gets the same
// distribution's line; cuDNN's apt line only where NVIDIA's repository has the package.
TEST(DoctorOs, TooOldDriverAndCudnnFixesFitTheDistribution) {
  EnvFacts f = cuda13_build();
  f.os_release = detail::parse_os_release(kOsRelease[2]);  // Rocky 9
  f.driver_found = true;
  f.driver_version = "535.54.03";
  f.driver_cuda = Version{12, 2, 0};
  f.kernel_module_loaded = true;
  const Verdict v = diagnose(f);
  EXPECT_EQ(find(v, "driver")->level, Level::Fail);
  EXPECT_HAS(find(v, "driver")->fix, "cuda-rhel9.repo");
  EXPECT_HAS(find(v, "driver")->fix, "branch 580 or newer");
  // cuInit said CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER.
  f.driver_cuda.reset();
  f.driver_error = "cuInit failed: CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER (36): ...";
  f.driver_error_code = 36;
  f.os_release = detail::parse_os_release(kOsRelease[4]);  // Arch
  const Verdict w = diagnose(f);
  EXPECT_HAS(find(w, "driver")->fix, "sudo pacman -Syu nvidia-open");
  EXPECT_HAS(find(w, "driver")->fix, "580.65.06 or newer");
  // cuDNN missing: pip everywhere; the apt / dnf / pacman package where there is one.
  struct Row {
    int distro;
    const char* package;
  };
  for (const Row row : {Row{1, "sudo apt install cudnn9-cuda-13"}, Row{2, "sudo dnf install cudnn9-cuda-13"},
                        Row{4, "sudo pacman -S cudnn"}, Row{5, ""}}) {
    EnvFacts g = cuda13_build();
    g.cudnn.reset();
    g.os_release = detail::parse_os_release(kOsRelease[row.distro]);
    const Verdict u = diagnose(g);
    const Check* c = find(u, "cudnn");
    ASSERT_NE(c, nullptr);
    EXPECT_HAS(c->fix, "pip install nvidia-cudnn-cu13");
    if (*row.package) EXPECT_HAS(c->fix, row.package);
    else
      for (const char* none : {"apt install", "dnf install", "pacman"}) EXPECT_HASNT(c->fix, none);
  }
}

// ---------------------------------------------------------------- provenance and NCCL

TEST(DoctorOs, NcclIsProbedInAChildWithPathAndVersion) {
  REQUIRE_FAKES();
  EnvFacts f = cuda13_build();
  detail::probe_nccl(f, {"/nonexistent/libnccl.so.2", kFakes + "/nccl/libnccl.so.2"});
  ASSERT_TRUE(f.nccl) << f.nccl_error;
  EXPECT_EQ(f.nccl->str(), "2.28.9");
  EXPECT_EQ(f.nccl_path, kFakes + "/nccl/libnccl.so.2");
  f.gpus = {GpuInfo{0, "Fake H200", 9, 0, 1ull << 30}};
  const Verdict v = diagnose(f);
  ASSERT_NE(find(v, "nccl"), nullptr);
  EXPECT_EQ(find(v, "nccl")->level, Level::Pass);
  EXPECT_HAS(find(v, "nccl")->message, "NCCL 2.28.9");
  // The pre-2.9 encoding (X*1000+Y*100+Z), and a failing ncclGetVersion.
  setenv("FAKE_NCCL_VERSION", "2708", 1);
  EnvFacts old = cuda13_build();
  detail::probe_nccl(old, {kFakes + "/nccl/libnccl.so.2"});
  EXPECT_EQ(old.nccl->str(), "2.7.8");
  setenv("FAKE_NCCL_RC", "3", 1);
  EnvFacts broken = cuda13_build();
  detail::probe_nccl(broken, {kFakes + "/nccl/libnccl.so.2"});
  unsetenv("FAKE_NCCL_VERSION");
  unsetenv("FAKE_NCCL_RC");
  EXPECT_HAS(broken.nccl_error, "ncclGetVersion failed with 3");
  // Missing: a WARN only where there are GPUs to train together.
  EnvFacts none = cuda13_build();
  detail::probe_nccl(none, {"/nonexistent/libnccl.so.2"});
  EXPECT_FALSE(none.nccl);
  EXPECT_TRUE(none.nccl_error.empty());
  none.gpus = {GpuInfo{0, "A", 9, 0, 1}, GpuInfo{1, "B", 9, 0, 1}};
  const Verdict w = diagnose(none);
  ASSERT_NE(find(w, "nccl"), nullptr);
  EXPECT_EQ(find(w, "nccl")->level, Level::Warn);
  EXPECT_HAS(find(w, "nccl")->fix, "pip install nvidia-nccl-cu13");
  none.gpus.resize(1);
  const Verdict one = diagnose(none);
  EXPECT_EQ(find(one, "nccl"), nullptr);
}

TEST(DoctorOs, VersionsComeFromTheRealFileName) {
  EXPECT_EQ(detail::version_in_file_name("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "libcuda"), "580.95.05");
  EXPECT_EQ(detail::version_in_file_name("/opt/cudnn/lib/libcudnn.so.9.1.0", "libcudnn"), "9.1.0");
  EXPECT_EQ(detail::version_in_file_name("/venv/nvidia/cudnn/lib/libcudnn.so.9", "libcudnn"), "");
  EXPECT_EQ(detail::version_in_file_name("/x/libcudnn_ops.so.9.1.0", "libcudnn"), "");
  const std::string ldconfig =
      "1234 libs found in cache `/etc/ld.so.cache'\n"
      "\tlibnccl.so.2 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libnccl.so.2\n"
      "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudnn_ops.so.9\n"
      "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
      "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n"
      "\tlibcudnn.so.9 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudnn.so.9\n";
  EXPECT_EQ(detail::ld_cache_dirs(ldconfig),
            (std::vector<std::string>{"/usr/local/cuda-13.0/lib", "/usr/lib/x86_64-linux-gnu"}));
}

// The same library in three places with different versions: a WARN naming each copy, its place,
// and the one the loader picks (first on LD_LIBRARY_PATH).
TEST(DoctorOs, LibraryFoundTwiceWithDifferentVersionsIsNamed) {
  FakeRoot r;
  auto lib = [&](const std::string& dir, const std::string& real, const std::string& soname) {
    r.write(dir + "/" + real, "");
    if (real != soname) fs::create_symlink(real, r.dir / dir / soname);
    return (r.dir / dir).string();
  };
  const std::string ld = lib("opt/cudnn8.9/lib", "libcudnn.so.9.1.0", "libcudnn.so.9");
  const std::string cache = lib("usr/lib/x86_64-linux-gnu", "libcudnn.so.9.10.2", "libcudnn.so.9");
  lib("usr/lib/x86_64-linux-gnu", "libcuda.so.580.95.05", "libcuda.so.1");
  const std::string wheel = lib("venv/nvidia/cudnn/lib", "libcudnn.so.9", "libcudnn.so.9");
  const std::string same = lib("usr/local/cuda-13.0/lib64", "libcudnn.so.9.10.2", "libcudnn.so.9");
  const std::vector<detail::LibraryPlace> places = {
      {ld, "LD_LIBRARY_PATH", 0, "", ""},
      {cache, "ld.so cache", 1, "", ""},
      {same, (r.dir / "usr/local/cuda-13.0").string(), -1, "", ""},
      {wheel, "pip nvidia-cudnn-cu12 9.1.0.70 (/venv/bin/python)", -1, "9.1.0.70", "nvidia-cudnn-cu12"},
      {(r.dir / "nonexistent").string(), "LD_LIBRARY_PATH", 2, "", ""}};
  EnvFacts f = cuda13_build();
  f.library_copies = detail::scan_library_copies(places);
  ASSERT_EQ(f.library_copies.size(), 5u);
  EXPECT_EQ(f.library_copies[0].version, "9.1.0");
  EXPECT_EQ(f.library_copies[0].loader_rank, 0);
  EXPECT_EQ(f.library_copies[1].soname, "libcuda.so.1");
  EXPECT_EQ(f.library_copies[1].version, "580.95.05");
  EXPECT_EQ(f.library_copies[4].version, "9.1.0.70");
  const Verdict v = diagnose(f);
  const Check* c = find(v, "libcudnn.so.9");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, Level::Warn);
  EXPECT_HAS(c->message, "4 copies with different versions");
  EXPECT_HAS(c->message, "9.1.0 " + ld + "/libcudnn.so.9 (LD_LIBRARY_PATH)");
  EXPECT_HAS(c->message, "9.10.2 " + cache + "/libcudnn.so.9 (ld.so cache)");
  EXPECT_HAS(c->message, "pip nvidia-cudnn-cu12");
  EXPECT_HAS(c->message, "the dynamic loader picks " + ld + "/libcudnn.so.9 (9.1.0, first on LD_LIBRARY_PATH)");
  EXPECT_HAS(c->message, "older than 9.10.2");
  EXPECT_HAS(c->fix, "put " + cache + "/libcudnn.so.9's directory before " + ld + "/libcudnn.so.9's on LD_LIBRARY_PATH");
  EXPECT_HAS(c->fix, "ldconfig -p | grep libcudnn.so.9");
  EXPECT_EQ(find(v, "libcuda.so.1"), nullptr) << "one copy: nothing to compare";
  // The copy ember loaded is the loader's pick, whatever the order; the newest loaded is no WARN.
  f.library_copies[2].loaded = true;
  const Verdict w = diagnose(f);
  EXPECT_HAS(find(w, "libcudnn.so.9")->message, "picks " + cache + "/libcudnn.so.9 (9.10.2, the one ember loaded)");
  EXPECT_EQ(find(w, "libcudnn.so.9")->level, Level::Pass);
  // Versions that agree (a wheel's 4-part version against a file's 3) are no finding.
  f.library_copies = detail::scan_library_copies({places[0], places[3]});
  const Verdict u = diagnose(f);
  EXPECT_EQ(find(u, "libcudnn.so.9"), nullptr);
  // The loader picks the newest (the ld.so cache's 9.10.2 over a wheel's 9.1): programs built for the
  // older run on it, and PyTorch loads its wheel's through RPATH: named, not a WARN.
  f.library_copies = detail::scan_library_copies({places[1], places[3]});
  const Verdict s = diagnose(f);
  ASSERT_NE(find(s, "libcudnn.so.9"), nullptr);
  EXPECT_EQ(find(s, "libcudnn.so.9")->level, Level::Pass);
  EXPECT_HAS(find(s, "libcudnn.so.9")->message, "(9.10.2, from the ld.so cache), the newest");
  // A wheel directory shared by several wheels (CUDA 13's nvidia/cu13/lib): each file is taken with
  // its own wheel's version, never a neighbour's.
  r.write("venv/nvidia/cu13/lib/libcudart.so.13", "");
  r.write("venv/nvidia/cu13/lib/libcublas.so.13", "");
  const std::string cu13 = (r.dir / "venv/nvidia/cu13/lib").string();
  const auto shared = detail::scan_library_copies(
      {{cu13, "pip nvidia-cublas 13.4.1.3 (py)", -1, "13.4.1.3", "nvidia-cublas"},
       {cu13, "pip nvidia-cuda-runtime 13.2.86 (py)", -1, "13.2.86", "nvidia-cuda-runtime"}});
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].soname, "libcublas.so.13");
  EXPECT_EQ(shared[0].version, "13.4.1.3");
  EXPECT_EQ(shared[1].soname, "libcudart.so.13");
  EXPECT_EQ(shared[1].version, "13.2.86");
}

// Copies whose names carry no version (wheel-style files) are asked in a child, each in its own.
TEST(DoctorOs, UnversionedCopiesAreAskedTheirVersion) {
  REQUIRE_FAKES();
  FakeRoot r;
  for (const char* dir : {"a", "b"}) {
    fs::create_directories(r.dir / dir);
    fs::copy_file(kFakes + "/nccl/libnccl.so.2", r.dir / dir / "libnccl.so.2");
  }
  EnvFacts f = cuda13_build();
  f.library_copies = detail::scan_library_copies(
      {{(r.dir / "a").string(), "LD_LIBRARY_PATH", 0, "", ""}, {(r.dir / "b").string(), "CUDA_HOME", -1, "", ""}});
  ASSERT_EQ(f.library_copies.size(), 2u);
  EXPECT_EQ(f.library_copies[0].version, "2.28.9");
  EXPECT_EQ(f.library_copies[1].version, "2.28.9");
  const Verdict v = diagnose(f);
  EXPECT_EQ(find(v, "libnccl.so.2"), nullptr);
}

TEST(DoctorOs, JsonCarriesTheOsLayerAndProvenance) {
  EnvFacts f = cuda13_build();
  f.os_release = detail::parse_os_release(kOsRelease[0]);
  f.container = "docker";
  f.container_hint = "/.dockerenv";
  f.secure_boot = true;
  f.conflicting_modules = {"nouveau"};
  f.device_nodes = {DeviceNode{"/dev/nvidiactl", true, false, "root:video crw-rw----"}};
  f.nccl = Version{2, 28, 9};
  f.nccl_path = "/usr/lib/libnccl.so.2";
  f.libcuda_version = "580.95.05";
  f.library_copies = {LibraryCopy{"libcudnn.so.9", "/a/libcudnn.so.9", "/a/libcudnn.so.9.1.0", "9.1.0",
                                  "LD_LIBRARY_PATH", 0, true}};
  const auto j = nlohmann::json::parse(to_json(f, diagnose(f)));
  EXPECT_EQ(j["schema"], kJsonSchema);
  EXPECT_EQ(j["schema_minor"], kJsonSchemaMinor);
  EXPECT_EQ(j["os"]["id"], "debian");
  EXPECT_EQ(j["os"]["version_id"], "12");
  EXPECT_EQ(j["os"]["container"], "docker");
  EXPECT_EQ(j["os"]["secure_boot"], true);
  EXPECT_EQ(j["os"]["conflicting_modules"][0], "nouveau");
  EXPECT_EQ(j["os"]["device_nodes"][0]["usable"], false);
  EXPECT_EQ(j["nvidia"]["nccl"], "2.28.9");
  EXPECT_EQ(j["nvidia"]["paths"]["nccl"], "/usr/lib/libnccl.so.2");
  EXPECT_EQ(j["nvidia"]["libcuda_version"], "580.95.05");
  EXPECT_EQ(j["library_copies"][0]["version"], "9.1.0");
  EXPECT_EQ(j["library_copies"][0]["loaded"], true);
  // The text report shows the copies and stays within 80 columns.
  const std::string text = format_report(f, diagnose(f));
  EXPECT_HAS(text, "library copies");
  EXPECT_HAS(text, "NCCL");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 80u) << line;
}

// WSL2: no fix anywhere in the report — driver, devices, PyTorch, TensorFlow, JAX — tells the user
// to install a Linux driver or names a Linux driver version; each points at the Windows driver.
TEST(DoctorOs, NoFixTellsAWslUserToInstallALinuxDriver) {
  auto wsl_machine = [] {
    EnvFacts f = cuda13_build();
    f.wsl = true;
    f.os_release = detail::parse_os_release(kOsRelease[1]);  // WSL's usual Ubuntu
    f.driver_found = true;
    f.driver_cuda = Version{12, 2, 0};                       // older than ember's CUDA 13.0
    f.cuda_sass_archs = {80};
    f.cuda_ptx_archs = {80};                                 // sm_90 runs from PTX only
    f.gpus = {GpuInfo{0, "GPU", 9, 0, 16ull << 30}};
    PythonEnv p;
    p.path = "/usr/bin/python3";
    p.torch = TorchBuild{.version = "2.9.0+cu130", .cuda = "13.0", .cudnn = 91000, .cudnn_compiled = 91000,
                         .arch_list = {"sm_80", "sm_90"}};
    p.tensorflow = TensorflowBuild{.version = "2.20.0", .cuda_build = true, .cuda = "13.0", .cudnn = "9"};
    f.pythons = {p};
    return f;
  };
  std::vector<EnvFacts> cases;
  cases.push_back(wsl_machine());
  {
    EnvFacts f = wsl_machine();  // no driver at all
    f.driver_found = false;
    f.driver_cuda.reset();
    f.gpus.clear();
    cases.push_back(f);
  }
  {
    EnvFacts f = wsl_machine();  // cuInit: too old
    f.driver_cuda.reset();
    f.driver_error = "cuInit failed: CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER (36)";
    f.driver_error_code = 36;
    cases.push_back(f);
  }
  {
    EnvFacts f = wsl_machine();  // a driver of CUDA 11: JAX's CUDA wheels need 12
    f.driver_cuda = Version{11, 8, 0};
    f.pythons[0].jax = JaxBuild{.jax = "0.7.2", .jaxlib = "0.7.2"};
    cases.push_back(f);
  }
  int driver_fixes = 0;
  for (const EnvFacts& f : cases) {
    const Verdict v = diagnose(f);
    for (const Check& c : v.checks) {
      for (const char* linux_install : {"apt install", "ubuntu-drivers", "dnf ", "pacman", ".run", "cuda-drivers",
                                        "modprobe", "driver to 5", "driver 5"})
        EXPECT_HASNT(c.fix, linux_install) << c.name;
      if (c.fix.find("NVIDIA driver") != std::string::npos) {
        ++driver_fixes;
        EXPECT_HAS(c.fix, "Windows") << c.name;
      }
    }
  }
  EXPECT_GE(driver_fixes, 6) << "the driver, device, torch, tensorflow and jax lines each name the driver";
}
