// The driver and cuDNN install lines per system (distro.h). Every driver line names the branch the
// compatibility tables give for the CUDA ember needs and the kernel modules the GPU needs (open for
// Blackwell, proprietary before Turing); distribution facts (which driver and cuDNN Debian ships)
// come from the tables' distro_drivers, so a fix never promises a package that is too old.
#include "env/distro.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "env/compat.h"

namespace ember::env::detail {
namespace {

bool like(const OsRelease& os, const char* name) {
  return os.id == name || std::find(os.id_like.begin(), os.id_like.end(), name) != os.id_like.end();
}

std::string major_of(const std::string& version_id) { return version_id.substr(0, version_id.find('.')); }

const char* const kReboot = "; reboot, then check `nvidia-smi`";

// Secure Boot refuses an unsigned module: DKMS signs it with a key the firmware must learn once.
std::string secure_boot_note(const EnvFacts& f) {
  if (f.secure_boot != true) return "";
  return ". Secure Boot is on: the module must be signed — DKMS signs it and asks for a one-time password; "
         "at the next boot choose \"Enroll MOK\" and enter it (or `sudo mokutil --import " +
         mok_key_path(f) + "`)";
}

// Which kernel modules the GPUs CUDA shows need: "open" when one needs the open modules (Blackwell),
// "proprietary" when one cannot run them (older than Turing), "" when any do or the GPUs are unknown.
std::string modules_needed(const EnvFacts& f) {
  bool open = false, proprietary = false;
  for (const GpuInfo& g : f.gpus)
    if (const compat::ArchRow* a = compat::arch(g.cc_major * 10 + g.cc_minor)) {
      open |= a->kernel_modules == "open";
      proprietary |= a->kernel_modules == "proprietary";
    }
  return open && !proprietary ? "open" : proprietary && !open ? "proprietary" : "";
}

std::string debian_fix(const EnvFacts& f, const std::optional<Version>& cuda, int branch, const std::string& need) {
  const std::string ver = major_of(f.os_release.version_id);
  const compat::DistroDriver* d = compat::distro_driver("debian", ver);
  const std::string repo =
      ver.empty() ? "NVIDIA's CUDA repository for your Debian (the cuda-keyring package from "
                    "https://developer.download.nvidia.com/compute/cuda/repos/)"
                  : fmt::format("NVIDIA's CUDA repository: `wget https://developer.download.nvidia.com/compute/cuda/repos/"
                                "debian{0}/x86_64/cuda-keyring_1.1-1_all.deb && sudo dpkg -i cuda-keyring_1.1-1_all.deb "
                                "&& sudo apt update`",
                                ver);
  const std::string modules = modules_needed(f);
  const std::string package =
      modules == "open"          ? "`sudo apt install nvidia-open` (this GPU needs the open kernel modules)"
      : modules == "proprietary" ? fmt::format("`sudo apt install cuda-drivers-{}` (the proprietary modules: this GPU "
                                               "predates Turing, which the open ones need)", branch)
                                 : fmt::format("`sudo apt install nvidia-open` (the open kernel modules: Turing and "
                                               "newer, Blackwell needs them) or `cuda-drivers-{}` (proprietary, for "
                                               "GPUs older than Turing)", branch);
  const std::string from_repo = repo + ", then " + package;
  // The table's driver for this CUDA ("" past the table: no distribution package is known to fit).
  const auto advice = cuda ? compat::min_driver_for(*cuda) : std::nullopt;
  const std::string floor = advice && advice->exact ? advice->driver : need;
  if (d != nullptr && advice && advice->exact && compat::driver_at_least(d->version, advice->driver) &&
      modules != "open")
    return fmt::format("`sudo apt install {} linux-headers-amd64` from Debian {}'s contrib and non-free components "
                       "(it ships {} in {}, enough for CUDA {}; NVIDIA's CUDA repository has newer branches: "
                       "cuda-drivers)",
                       d->package, ver, d->version, d->suite, Version{cuda->major, cuda->minor, 0}.str());
  if (d != nullptr)
    return fmt::format("Debian {}'s own {} is {} ({}{}), older than {}: use {}", ver, d->package, d->version, d->suite,
                       d->backports.empty() ? "" : "; backports: " + d->backports, floor, from_repo);
  return "use " + from_repo;
}

}  // namespace

Distro distro_of(const OsRelease& os) {
  if (os.id == "ubuntu" || like(os, "ubuntu")) return Distro::Ubuntu;
  if (os.id == "debian" || like(os, "debian")) return Distro::Debian;
  if (os.id == "fedora") return Distro::Fedora;
  for (const char* rhel : {"rhel", "rocky", "almalinux", "centos", "ol"})
    if (like(os, rhel)) return Distro::Rhel;
  if (like(os, "fedora")) return Distro::Rhel;  // ID_LIKE="fedora" alone: a RHEL rebuild
  if (os.id == "arch" || like(os, "arch")) return Distro::Arch;
  return Distro::Unknown;
}

const char* distro_name(Distro d) {
  switch (d) {
    case Distro::Debian: return "Debian";
    case Distro::Ubuntu: return "Ubuntu";
    case Distro::Rhel: return "RHEL";
    case Distro::Fedora: return "Fedora";
    case Distro::Arch: return "Arch";
    case Distro::Unknown: return "unknown";
  }
  return "unknown";
}

std::string container_gpu_fix(const EnvFacts& f, const std::optional<Version>& cuda) {
  const std::string driver =
      cuda ? fmt::format("the NVIDIA driver {} (CUDA {})", compat::driver_requirement(*cuda),
                         Version{cuda->major, cuda->minor, 0}.str())
           : std::string("the NVIDIA driver");
  std::string pass;
  if (f.container == "podman")
    pass = "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, then start it with `podman run --device "
           "nvidia.com/gpu=all ...`";
  else if (f.container == "kubernetes")
    pass = "the NVIDIA device plugin (or GPU Operator) in the cluster, and `resources: limits: nvidia.com/gpu: 1` in "
           "the pod";
  else
    pass = "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`, then start it with "
           "`docker run --gpus all ...`";
  return fmt::format("this is a {} container: the GPU and its driver come from the host, so never install a driver "
                     "inside it. On the host install {} and the NVIDIA Container Toolkit, {}; then check `nvidia-smi` "
                     "in the container",
                     f.container, driver, pass);
}

std::string mok_key_path(const EnvFacts& f) {
  // The key DKMS signs modules with: Ubuntu keeps it with shim-signed, Debian (dkms 3) and the
  // others in DKMS's own directory (compat tables' issue 45 check; Debian wiki "SecureBoot").
  return distro_of(f.os_release) == Distro::Ubuntu ? "/var/lib/shim-signed/mok/MOK.der" : "/var/lib/dkms/mok.pub";
}

std::string driver_install_fix(const EnvFacts& f, const std::optional<Version>& cuda) {
  if (!f.container.empty()) return container_gpu_fix(f, cuda);
  const std::string mm = cuda ? Version{cuda->major, cuda->minor, 0}.str() : std::string();
  // WSL2 runs the Windows driver: a Linux driver installed inside it breaks CUDA there. Windows
  // numbers its drivers apart from Linux: the Windows column of the release notes.
  if (f.wsl)
    return fmt::format("install or update the NVIDIA driver on Windows{}; WSL2 reaches it through /usr/lib/wsl/lib, "
                       "so never install a Linux NVIDIA driver inside WSL (it replaces that libcuda and breaks CUDA "
                       "here); then check `nvidia-smi` here",
                       cuda ? fmt::format(" (for CUDA {}: {}; Windows numbers its drivers apart from Linux)", mm,
                                          compat::windows_driver_requirement(*cuda))
                            : std::string());
  const std::string need = cuda ? compat::driver_requirement(*cuda) : std::string("for your GPU");
  const int branch = cuda ? compat::driver_branch_for(*cuda) : 0;
  const std::string head = cuda ? fmt::format("install the NVIDIA driver {} (CUDA {}): ", need, mm)
                                : std::string("install the NVIDIA driver: ");
  const std::string b = branch > 0 ? std::to_string(branch) : std::string("<branch>");
  const std::string modules = modules_needed(f);
  std::string how;
  switch (distro_of(f.os_release)) {
    case Distro::Ubuntu: {
      const std::string pkg = modules == "open"          ? "nvidia-driver-" + b + "-open"
                              : modules == "proprietary" ? "nvidia-driver-" + b
                                                         : "nvidia-driver-" + b + "-open";
      how = fmt::format("`sudo ubuntu-drivers install` (the recommended driver; for CUDA {} it must be {} or newer: "
                        "`ubuntu-drivers list`) or `sudo apt install {}` ({}; if apt has no {}, NVIDIA's CUDA "
                        "repository: `sudo apt install cuda-drivers`)",
                        mm.empty() ? "ember" : mm, b, pkg,
                        modules == "open"          ? "this GPU needs the open kernel modules"
                        : modules == "proprietary" ? "the proprietary modules: this GPU predates Turing"
                                                   : "the open kernel modules, Turing and newer, which Blackwell "
                                                     "needs; `nvidia-driver-" + b + "` for GPUs older than Turing",
                        b);
      break;
    }
    case Distro::Debian:
      how = debian_fix(f, cuda, branch, need);
      break;
    case Distro::Rhel: {
      const std::string v = major_of(f.os_release.version_id);
      const bool modular = v.empty() || std::atoi(v.c_str()) < 10;  // RHEL 10 has no module streams
      const std::string open = modular ? "`sudo dnf module enable nvidia-driver:open-dkms && sudo dnf install "
                                         "nvidia-open`"
                                       : "`sudo dnf install nvidia-open`";
      const std::string proprietary = modular ? fmt::format("`sudo dnf module install nvidia-driver:{}-dkms`", b)
                                              : fmt::format("`sudo dnf install cuda-drivers-{}`", b);
      how = fmt::format("add NVIDIA's repository, `sudo dnf config-manager --add-repo https://developer.download.nvidia."
                        "com/compute/cuda/repos/rhel{0}/x86_64/cuda-rhel{0}.repo` (with EPEL for dkms), then {1}; "
                        "branch {2} or newer",
                        v.empty() ? "9" : v,
                        modules == "open" ? open + " (this GPU needs the open kernel modules)"
                        : modules == "proprietary"
                            ? proprietary + " (the proprietary modules: this GPU predates Turing)"
                            : open + " (the open kernel modules, Turing and newer) or " + proprietary +
                                  " (proprietary, for GPUs older than Turing)",
                        b);
      break;
    }
    case Distro::Fedora: {
      const std::string v = major_of(f.os_release.version_id);
      how = fmt::format("add NVIDIA's repository, `sudo dnf config-manager addrepo --from-repofile=https://developer."
                        "download.nvidia.com/compute/cuda/repos/fedora{0}/x86_64/cuda-fedora{0}.repo`, then {1}; "
                        "branch {2} or newer",
                        v.empty() ? "<release>" : v,
                        modules == "proprietary" ? "`sudo dnf install cuda-drivers` (the proprietary modules: this GPU "
                                                   "predates Turing; or RPM Fusion's `akmod-nvidia`)"
                                                 : "`sudo dnf install nvidia-open` (the open kernel modules, Turing and "
                                                   "newer; or RPM Fusion's `akmod-nvidia`)",
                        b);
      break;
    }
    case Distro::Arch:
      how = modules == "proprietary"
                ? fmt::format("this GPU predates Turing, so Arch's own packages (open modules only) do not drive it: "
                              "the AUR's `nvidia-{}xx-dkms` (`yay -S nvidia-{}xx-dkms`), branch {} or newer",
                              b == "<branch>" ? "580" : b, b == "<branch>" ? "580" : b, b)
                : fmt::format("`sudo pacman -Syu nvidia-open` (`nvidia-open-dkms` for other kernels; Arch ships the "
                              "current branch, {} or newer is needed; the open modules need Turing or newer: Maxwell "
                              "to Volta take the AUR's `nvidia-580xx-dkms`, R580 being their last branch)",
                              b);
      break;
    case Distro::Unknown:
      how = fmt::format("download the NVIDIA Linux x86_64 driver{} from https://www.nvidia.com/en-us/drivers/ and run "
                        "`sudo sh NVIDIA-Linux-x86_64-<version>.run` ({}), or your distribution's package of branch {}",
                        cuda ? " " + need : std::string(),
                        modules == "proprietary" ? "choose the proprietary modules: this GPU predates Turing"
                                                 : "the open kernel modules for Turing and newer, which Blackwell needs",
                        b);
      break;
  }
  return head + how + kReboot + secure_boot_note(f);
}

std::string driver_upgrade(const EnvFacts& f, const Version& cuda) {
  const std::string mm = Version{cuda.major, cuda.minor, 0}.str();
  if (f.wsl && f.container.empty())
    return fmt::format("update the NVIDIA driver on Windows (for CUDA {}: {}; Windows numbers its drivers apart "
                       "from Linux; never a Linux driver inside WSL)",
                       mm, compat::windows_driver_requirement(cuda));
  return fmt::format("upgrade the {}NVIDIA driver to {} (CUDA {})", f.container.empty() ? "" : "host's ",
                     compat::driver_requirement(cuda), mm);
}

std::string cudnn_package_hint(const EnvFacts& f, int cudnn_major, int cuda_major) {
  switch (distro_of(f.os_release)) {
    case Distro::Debian: {
      // Debian's own nvidia-cudnn (an installer of NVIDIA's cuDNN) where it brings this major for this CUDA.
      const compat::DistroDriver* d = compat::distro_driver("debian", major_of(f.os_release.version_id));
      const std::string own =
          d != nullptr && !d->cudnn_package.empty() && d->cudnn_cuda_major == cuda_major &&
                  std::atoi(d->cudnn_version.c_str()) == cudnn_major
              ? fmt::format("`sudo apt install {}` (Debian's {} component: cuDNN {}), or ", d->cudnn_package,
                            d->cudnn_component, d->cudnn_version)
              : std::string();
      return fmt::format("{}`sudo apt install cudnn{}-cuda-{}` from NVIDIA's CUDA repository (cuda-keyring)", own,
                         cudnn_major, cuda_major);
    }
    case Distro::Ubuntu:
      return fmt::format("`sudo apt install cudnn{}-cuda-{}` from NVIDIA's CUDA repository (cuda-keyring)", cudnn_major,
                         cuda_major);
    case Distro::Rhel:
    case Distro::Fedora:
      return fmt::format("`sudo dnf install cudnn{}-cuda-{}` from NVIDIA's CUDA repository", cudnn_major, cuda_major);
    case Distro::Arch:
      return "`sudo pacman -S cudnn` (built for Arch's own cuda package: check that its CUDA major is " +
             std::to_string(cuda_major) + ")";
    case Distro::Unknown: return "";
  }
  return "";
}

}  // namespace ember::env::detail
