// Judges the OS layer (verdict_os.h). Each finding names the file that says so and the command that
// fixes it on this system: a kernel module older than libcuda is the reboot case, nouveau is
// blacklisted, Secure Boot needs the module's key enrolled, a container needs --gpus all on the host.
#include "env/verdict_os.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "env/compat.h"
#include "env/distro.h"

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

std::string secure_boot_fix() {
  return "Secure Boot is on and refuses the unsigned nvidia module (`mokutil --sb-state`; `sudo dmesg | grep 'Key "
         "was rejected'` shows the refusal): enroll the key DKMS signs it with, `sudo mokutil --import "
         "/var/lib/dkms/mok.pub`, reboot and choose \"Enroll MOK\"; or install the distribution's signed driver, or "
         "turn Secure Boot off in the firmware";
}

}  // namespace

std::string module_not_loaded_fix(const EnvFacts& f) {
  if (!f.conflicting_modules.empty())
    return join(f.conflicting_modules) + " holds the GPU, so the nvidia module cannot bind it: " + blacklist_fix(f);
  if (f.secure_boot == true) return secure_boot_fix();
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
    if (container_without_gpu && !f.driver_found) {
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

void judge_libraries(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  // ---- NCCL: only multi-GPU training needs it ----
  if (f.built_with_cuda) {
    const std::string cuda_m = f.cuda_compiled ? std::to_string(f.cuda_compiled->major) : std::string("13");
    const std::string install = "`pip install nvidia-nccl-cu" + cuda_m + "` and its lib directory on LD_LIBRARY_PATH, "
                                "or the libnccl2 package of NVIDIA's CUDA repository";
    if (!f.nccl_error.empty())
      add(f.gpus.size() > 1 ? Level::Warn : Level::Pass, "nccl",
          f.nccl_error + (f.gpus.size() > 1 ? "; multi-GPU training would fail" : "; only multi-GPU training uses it"),
          f.gpus.size() > 1 ? "reinstall NCCL: " + install : "");
    else if (f.nccl)
      add(Level::Pass, "nccl", "NCCL " + f.nccl->str() + (f.nccl_path.empty() ? "" : ", " + f.nccl_path));
    else if (f.gpus.size() > 1)
      add(Level::Warn, "nccl",
          fmt::format("libnccl.so.2 not found: training on the {} GPUs together (ember train --nproc) needs it",
                      f.gpus.size()),
          "install NCCL: " + install);
  }

  // ---- the same library in several places with different versions ----
  std::map<std::string, std::vector<const LibraryCopy*>> by_soname;
  std::vector<std::string> order;
  for (const LibraryCopy& c : f.library_copies) {
    if (!by_soname.count(c.soname)) order.push_back(c.soname);
    by_soname[c.soname].push_back(&c);
  }
  // Versions compare on the components both give ("9.1.0.70" from a wheel is "9.1.0" from a file).
  auto same = [](const std::string& a, const std::string& b) {
    size_t i = 0, dots = 0;
    for (; i < a.size() && i < b.size() && a[i] == b[i]; ++i) dots += a[i] == '.';
    if (i == a.size() && i == b.size()) return true;
    const bool a_end = i == a.size() || a[i] == '.', b_end = i == b.size() || b[i] == '.';
    return a_end && b_end && dots >= 1;
  };
  for (const std::string& soname : order) {
    const auto& copies = by_soname[soname];
    std::vector<const LibraryCopy*> known;
    for (const LibraryCopy* c : copies)
      if (!c->version.empty()) known.push_back(c);
    bool differ = false;
    for (const LibraryCopy* c : known) differ |= !same(c->version, known.front()->version);
    if (!differ) continue;
    std::string where;
    for (const LibraryCopy* c : known)
      where += fmt::format("{}{} {} ({})", where.empty() ? "" : "; ", c->version, c->path, c->source);
    // The loader's pick: the copy ember's probe loaded, else the first in the loader's order.
    const LibraryCopy* pick = nullptr;
    for (const LibraryCopy* c : copies)
      if (c->loaded) pick = c;
    if (pick == nullptr)
      for (const LibraryCopy* c : copies)
        if (c->loader_rank >= 0 && (pick == nullptr || c->loader_rank < pick->loader_rank)) pick = c;
    const std::string picks =
        pick != nullptr ? fmt::format("the dynamic loader picks {} ({}{})", pick->path,
                                      pick->version.empty() ? "version unknown" : pick->version,
                                      pick->loaded ? ", the one ember loaded"
                                      : pick->source == "LD_LIBRARY_PATH" ? ", first on LD_LIBRARY_PATH"
                                                                          : ", from the ld.so cache")
                        : std::string("none is on the loader's path (each program loads the copy it names)");
    // They compete when a copy on LD_LIBRARY_PATH differs from another (it shadows the others,
    // a framework's wheel included: LD_LIBRARY_PATH comes before a library's RUNPATH), or when two
    // differing copies are both on the loader's path. Otherwise each program loads its own copy (a
    // framework its wheel through RUNPATH, ember the loader's) and the copies are only named.
    bool compete = false;
    for (const LibraryCopy* a : known)
      for (const LibraryCopy* b : known)
        if (a != b && !same(a->version, b->version) && a->loader_rank >= 0 &&
            (a->source == "LD_LIBRARY_PATH" || b->loader_rank >= 0))
          compete = true;
    if (!compete) {
      add(Level::Pass, soname,
          fmt::format("{} copies: {}; {}; none shadows another (each program loads the one it names)", known.size(),
                      where, picks));
      continue;
    }
    add(Level::Warn, soname,
        fmt::format("{} copies with different versions: {}; {}; a framework loads its own wheel's copy unless "
                    "LD_LIBRARY_PATH puts another first",
                    known.size(), where, picks),
        "keep one version on the library path: take the other directories off LD_LIBRARY_PATH or uninstall the "
        "older copy (`ldconfig -p | grep " + soname + "` lists the ld.so cache's)");
  }
}

}  // namespace ember::env::detail
