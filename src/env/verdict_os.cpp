// Judges the OS layer (verdict_os.h). Each finding names the file that says so and the command that
// fixes it on this system: a kernel module older than libcuda is the reboot case, nouveau is
// blacklisted, Secure Boot needs the module's key enrolled, a container needs --gpus all on the host.
// Library provenance (NCCL, copies of one library) is judged in verdict_libraries.cpp.
#include "env/verdict_os.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "env/compat.h"
#include "env/distro.h"
#include "env/verdict_parts.h"

namespace ember::env::detail {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Blacklisting nouveau: a modprobe.d file, the initramfs rebuilt (it loads nouveau early), a reboot.
std::string blacklist_fix(const EnvFacts& f) {
  const std::vector<std::string>& mods = f.conflicting_modules;
  std::string lines;
  for (const auto& m : mods) lines += fmt::format("blacklist {}\\n", m);
  if (std::find(mods.begin(), mods.end(), "nouveau") != mods.end()) lines += "options nouveau modeset=0\\n";
  const Distro d = distro_of(f.os_release);
  const char* initramfs = d == Distro::Rhel || d == Distro::Fedora ? "sudo dracut --force"
                          : d == Distro::Arch                       ? "sudo mkinitcpio -P"
                                                                    : "sudo update-initramfs -u";
  return fmt::format("blacklist it: `printf '{}' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf && {}`, reboot, "
                     "then `sudo modprobe nvidia` and check `nvidia-smi` (the distribution's NVIDIA driver packages "
                     "install this file themselves)",
                     lines, initramfs);
}

std::string secure_boot_fix(const EnvFacts& f) {
  return "Secure Boot is on and refuses the unsigned nvidia module (`mokutil --sb-state`; `sudo dmesg | grep 'Key "
         "was rejected'` shows the refusal): enroll the key DKMS signs it with, `sudo mokutil --import " +
         mok_key_path(f) + "`, reboot and choose \"Enroll MOK\"; or install the distribution's signed driver, or turn "
         "Secure Boot off in the firmware";
}

}  // namespace

std::string module_not_loaded_fix(const EnvFacts& f) {
  if (!f.conflicting_modules.empty())
    return join(f.conflicting_modules) + " holds the GPU, so the nvidia module cannot bind it: " + blacklist_fix(f);
  if (f.secure_boot == true) return secure_boot_fix(f);
  return "load it: `sudo modprobe nvidia`, then check `nvidia-smi`; if modprobe fails, `sudo dmesg | grep -i nvidia` "
         "tells why (\"Key was rejected\": Secure Boot refuses the unsigned module; enroll its key with mokutil or "
         "install the distribution's signed driver)";
}

bool judge_os(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  bool gpu_ok = true;
  const std::optional<Version> want = f.cuda_runtime ? f.cuda_runtime : f.cuda_compiled;
  const bool module_loaded = f.kernel_module_loaded == true;

  // ---- a container: its GPUs are the ones the runtime passed in ----
  const bool container_without_gpu =
      !f.container.empty() && std::none_of(f.device_nodes.begin(), f.device_nodes.end(), [](const DeviceNode& d) {
        return d.path == "/dev/nvidiactl" && d.exists;
      });
  if (!f.container.empty()) {
    if (container_without_gpu && no_nvidia_gpu(f)) {
      gpu_ok = false;  // the host has no NVIDIA GPU to pass in: the "nvidia gpu" line says so
    } else if (container_without_gpu && !f.driver_found) {
      gpu_ok = false;  // the driver line says it, with the same fix (libcuda comes in with the GPU)
    } else if (container_without_gpu) {
      add(f.built_with_cuda ? Level::Fail : Level::Warn, "container",
          fmt::format("inside a {} container ({}) with no NVIDIA GPU passed in (no /dev/nvidiactl){}", f.container,
                      f.container_hint,
                      module_loaded ? fmt::format("; the host has the NVIDIA driver {} loaded", f.driver_version)
                                    : std::string()),
          container_gpu_fix(f, want));
      gpu_ok = false;
    } else {
      add(Level::Pass, "container", fmt::format("inside a {} container ({}), NVIDIA devices passed in", f.container,
                                                f.container_hint));
    }
  }

  // ---- the kernel module against libcuda: different versions are the "upgraded, not rebooted" case ----
  if (module_loaded && !f.driver_version.empty() && !f.libcuda_version.empty()) {
    if (f.driver_version != f.libcuda_version && !f.gpus.empty()) {
      // A mismatched module makes cuInit fail (803); CUDA started here and showed its devices, so the
      // two files disagree without stopping CUDA (a rebuilt module of another version, or an unusual
      // version line): said, not a reason to leave the GPU.
      add(Level::Warn, "kernel module",
          fmt::format("/proc/driver/nvidia/version says {} but libcuda is {} ({}); CUDA started anyway, so the GPU is "
                      "usable, but the next driver update may leave them mismatched",
                      f.driver_version, f.libcuda_version, f.driver_path),
          "check that `cat /proc/driver/nvidia/version` and `nvidia-smi` name the same driver; reboot after the next "
          "driver upgrade");
    } else if (f.driver_version != f.libcuda_version) {
      add(Level::Fail, "kernel module",
          fmt::format("the loaded NVIDIA kernel module is {} but libcuda is {} (/proc/driver/nvidia/version against "
                      "{}): the driver was upgraded and the old module is still loaded, so CUDA fails to start "
                      "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803; nvidia-smi: \"Driver/library version mismatch\")",
                      f.driver_version, f.libcuda_version, f.driver_path),
          "reboot; or, with nothing using the GPU, reload the module: `sudo rmmod nvidia_uvm nvidia_drm "
          "nvidia_modeset nvidia && sudo modprobe nvidia` (reinstall the driver if the versions still differ)");
      gpu_ok = false;
    } else {
      add(Level::Pass, "kernel module", fmt::format("nvidia {} loaded, the same version as libcuda", f.driver_version));
    }
  }

  // ---- nouveau / nova_core: said here unless the driver line already blames them ----
  if (!f.conflicting_modules.empty()) {
    const bool said_by_driver = f.driver_found && f.kernel_module_loaded == false;
    if (!said_by_driver)
      add(module_loaded ? Level::Warn : (f.built_with_cuda ? Level::Fail : Level::Warn), "nouveau",
          fmt::format("{} loaded (/proc/modules): the open-source driver holds the GPU the NVIDIA driver needs{}",
                      join(f.conflicting_modules),
                      module_loaded ? " (the nvidia module is loaded too: a GPU that nouveau took is not usable by CUDA)"
                                    : ""),
          blacklist_fix(f));
  }

  // ---- the device nodes CUDA opens ----
  if (module_loaded && !f.wsl && !container_without_gpu && !f.device_nodes.empty()) {
    std::vector<std::string> missing, denied;
    for (const DeviceNode& d : f.device_nodes) {
      if (!d.exists) missing.push_back(d.path);
      else if (!d.usable) denied.push_back(d.path + (d.owner.empty() ? "" : " (" + d.owner + ")"));
    }
    if (!missing.empty()) {
      add(Level::Fail, "device files",
          fmt::format("{} missing: the module is loaded but its device files were not created", join(missing)),
          "`sudo nvidia-modprobe -c 0 -u` creates /dev/nvidia0 and /dev/nvidia-uvm (install nvidia-modprobe if it is "
          "missing; the driver's udev rules create them at boot), `sudo modprobe nvidia-uvm` for /dev/nvidia-uvm; "
          "then check `ls -l /dev/nvidia*`");
      gpu_ok = false;
    } else if (!denied.empty()) {
      add(Level::Fail, "device files",
          fmt::format("{}: this user may not read and write it, so CUDA sees no device", join(denied)),
          "add yourself to the group that owns it (`sudo usermod -aG <group> $USER`, then log in again); if only "
          "root may open it, the module was loaded with a restrictive NVreg_DeviceFileMode (check /etc/modprobe.d "
          "and udev rules; the default is 0666)");
      gpu_ok = false;
    } else {
      std::vector<std::string> names;
      for (const DeviceNode& d : f.device_nodes) names.push_back(d.path);
      add(Level::Pass, "device files", join(names) + " present, read/write for this user");
    }
  }
  return gpu_ok;
}

}  // namespace ember::env::detail
