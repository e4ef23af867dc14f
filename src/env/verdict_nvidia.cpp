// The NVIDIA part of the doctor's verdict: is there an NVIDIA GPU at all (the PCI bus), the driver
// (missing, its kernel module not loaded, too old for the CUDA ember needs — natively or through
// minor-version compatibility — or past support for the GPU it drives) and the CUDA libraries ember
// loads (runtime, cuDNN, cuBLAS) with the install line for this system. Pure: no I/O.
#include <fmt/format.h>

#include "env/compat.h"
#include "env/distro.h"
#include "env/verdict_os.h"
#include "env/verdict_parts.h"

namespace ember::env::detail {
namespace {

Version major_minor(const Version& v) { return {v.major, v.minor, 0}; }

}  // namespace

bool no_nvidia_gpu(const EnvFacts& f) {
  return f.nvidia_pci_gpus == 0 && !f.wsl && f.gpus.empty() && f.physical_gpus <= 0;
}

std::optional<Version> wanted_cuda(const EnvFacts& f) { return f.cuda_runtime ? f.cuda_runtime : f.cuda_compiled; }

std::string driver_label(const EnvFacts& f) {
  return f.driver_version.empty() ? "the NVIDIA driver (its version unknown: /proc/driver/nvidia/version unreadable)"
                                  : "the NVIDIA driver " + f.driver_version;
}

std::string past_support(const EnvFacts& f, const Version& cuda) {
  const int needed = compat::driver_branch_for(cuda);
  std::string out;
  for (const GpuInfo& g : f.gpus) {
    const compat::ArchRow* a = compat::arch(g.cc_major * 10 + g.cc_minor);
    if (a == nullptr || !a->last_driver_branch || needed == 0 || *a->last_driver_branch >= needed) continue;
    const auto newest = compat::newest_toolkit_for_branch(*a->last_driver_branch);
    out += fmt::format("{}{} ({}, sm_{}{}: its last driver branch is R{}{})", out.empty() ? "" : "; ", g.name, a->family,
                       g.cc_major, g.cc_minor, *a->last_driver_branch,
                       newest ? fmt::format(", which runs CUDA {} at most", newest->str()) : std::string());
  }
  return out;
}

bool judge_driver(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  const std::optional<Version> want = wanted_cuda(f);
  // No NVIDIA device on the bus and none the driver knows: there is nothing to install (issue 48).
  if (no_nvidia_gpu(f)) {
    add(Level::Pass, "nvidia gpu",
        "no NVIDIA GPU in this machine (no device of vendor 0x10de under /sys/bus/pci/devices" +
            std::string(f.driver_found ? "; the NVIDIA driver is installed but has no GPU to drive" : "") +
            "): training uses the CPU; nothing to fix");
    return false;
  }
  const std::string on_bus =
      f.nvidia_pci_gpus && *f.nvidia_pci_gpus > 0 ? fmt::format("the PCI bus shows {} NVIDIA GPU(s); ", *f.nvidia_pci_gpus)
                                                  : std::string();
  if (!f.driver_found) {
    // The install line fits the system: the distribution's packages, the Windows driver on WSL2,
    // the host's driver and --gpus all in a container (driver_install_fix).
    const std::string why = f.driver_error.empty() ? "libcuda.so.1 missing" : f.driver_error;
    const std::string where =
        f.container.empty() ? "" : " in this " + f.container + " container (" + f.container_hint + "): no GPU was passed in";
    add(Level::Fail, "driver", on_bus + "no NVIDIA driver found (" + why + ")" + where + "; training will use the CPU",
        driver_install_fix(f, want));
    return false;
  }
  const std::string drv = f.driver_version.empty() ? "" : f.driver_version + ", ";
  if (f.kernel_module_loaded == false && (!f.driver_error.empty() || f.gpus.empty())) {
    // libcuda answers, but without its kernel half no GPU exists for it: say that, not "no device".
    add(Level::Fail, "driver",
        "libcuda.so.1 is installed but the NVIDIA kernel module is not loaded (no /proc/driver/nvidia/version)" +
            (f.driver_error.empty() ? std::string() : "; " + f.driver_error),
        module_not_loaded_fix(f));
    return false;
  }
  // A GPU the needed driver no longer supports: no install line can help, say so plainly.
  const std::string past = want ? past_support(f, *want) : std::string();
  const std::string past_fix =
      past.empty() || !want
          ? std::string()
          : fmt::format("no driver for CUDA {} (branch R{} or newer) supports it: {}. This GPU is past support for this "
                        "ember: it trains on the CPU (nothing to do for that); frameworks with older CUDA builds may "
                        "still use it on its last driver (see their lines)",
                        major_minor(*want).str(), compat::driver_branch_for(*want), past);
  if (!f.driver_error.empty()) {
    // Too old for this CUDA: CUresult 36 (CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER). 35 is the
    // runtime's cudaErrorInsufficientDriver, which cuInit never returns (CUresult has no 35).
    const bool too_old = f.driver_error_code == 36;
    add(Level::Fail, "driver", "NVIDIA driver " + drv + "unusable: " + f.driver_error,
        too_old && want ? (past_fix.empty() ? driver_install_fix(f, want) : past_fix)
        : f.driver_fix.empty() ? "check `nvidia-smi` and `dmesg`; reinstall the driver or reboot after an upgrade"
                               : f.driver_fix);
    return false;
  }
  if (f.driver_cuda && want && !compat::driver_runs(f.driver_version, f.driver_cuda, *want)) {
    const bool same_major = f.driver_cuda->major == want->major;
    const compat::MinorCompatRow* floor = compat::minor_compat(want->major);
    const std::string why =
        same_major && floor != nullptr
            ? fmt::format("{} supports CUDA {}, and is older than {}, the lowest driver that runs every CUDA {}.x "
                          "(minor-version compatibility): too old for the CUDA {} runtime; training will use the CPU",
                          driver_label(f), f.driver_cuda->str(), floor->linux_driver, want->major, want->str())
            : fmt::format("{} supports CUDA {} at most, too old for the CUDA {} runtime; training will use the CPU",
                          driver_label(f), f.driver_cuda->str(), want->str());
    add(Level::Fail, "driver", why, past_fix.empty() ? driver_install_fix(f, want) : past_fix);
    return false;
  }
  if (f.driver_cuda && want && *f.driver_cuda < major_minor(*want)) {
    add(Level::Warn, "driver",
        fmt::format("{} supports CUDA {}, older than the CUDA {} runtime: it runs through minor-version "
                    "compatibility, but PTX JIT and newer runtime features may fail",
                    driver_label(f), f.driver_cuda->str(), want->str()),
        past_fix.empty() ? driver_install_fix(f, want) : past_fix);
    return true;
  }
  std::string supports = f.driver_cuda ? "supports CUDA " + f.driver_cuda->str() : "CUDA support unknown";
  if (f.driver_cuda && compat::newer_than_tables(*f.driver_cuda))
    supports += fmt::format(" (newer than ember's tables of {}: what CUDA {} needs is not known to them)",
                            compat::tables().date, f.driver_cuda->str());
  add(Level::Pass, "driver", "NVIDIA driver " + drv + supports);
  return true;
}

bool judge_cuda_libraries(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  if (!f.built_with_cuda) return false;
  if (no_nvidia_gpu(f)) {  // nothing would load them: listed in the report, not judged
    add(Level::Pass, "cuda libraries", "not needed here: this machine has no NVIDIA GPU (the versions found are "
        "listed above)");
    return false;
  }
  bool ok = true;
  const std::optional<Version> want = wanted_cuda(f);
  const std::string want_cuda = want ? want->str() : std::string();
  const int want_major = want ? want->major : 0;
  // ---- the CUDA runtime ----
  if (!f.cuda_runtime) {
    add(Level::Fail, "cuda runtime", "libcudart could not be loaded",
        "install the CUDA runtime ember was built with" +
            (f.cuda_compiled ? " (" + f.cuda_compiled->str() + ")" : std::string()) +
            " and add its lib directory to LD_LIBRARY_PATH or /etc/ld.so.conf.d");
    ok = false;
  } else if (f.cuda_compiled && f.cuda_compiled->major != f.cuda_runtime->major) {
    add(Level::Fail, "cuda runtime",
        fmt::format("loaded CUDA runtime {} but ember was compiled with CUDA {}", f.cuda_runtime->str(),
                    f.cuda_compiled->str()),
        fmt::format("put the CUDA {} libraries first on LD_LIBRARY_PATH, or rebuild ember", f.cuda_compiled->major));
    ok = false;
  } else {
    add(Level::Pass, "cuda runtime", "CUDA runtime " + f.cuda_runtime->str());
  }

  // ---- cuDNN and cuBLAS (loadable, and built for our CUDA major) ----
  const int dnn_major = f.cudnn_compiled_major ? f.cudnn_compiled_major : 9;
  const int cuda_m = want_major ? want_major : 13;
  const compat::PipWheels& pip = compat::pip_wheels(cuda_m);
  // The pip wheel works everywhere; the distribution's package only where it has one that fits.
  const std::string dnn_package = cudnn_package_hint(f, dnn_major, cuda_m);
  const std::string install_dnn =
      fmt::format("cuDNN {} for CUDA {} with all of its libcudnn_*.so.{} parts (`pip install {}` and its lib directory "
                  "on LD_LIBRARY_PATH{})",
                  dnn_major, cuda_m, dnn_major, pip.cudnn, dnn_package.empty() ? "" : ", or " + dnn_package);
  if (!f.cudnn_error.empty()) {
    add(Level::Fail, "cudnn", f.cudnn_error + "; convolutions on the GPU would fail", "reinstall " + install_dnn);
    ok = false;
  } else if (!f.cudnn) {
    add(Level::Warn, "cudnn",
        fmt::format("libcudnn.so.{} not loadable: convolutions on the GPU will fail (models without them still train)",
                    dnn_major),
        "install " + install_dnn);
  } else if (f.cudnn_compiled_major && f.cudnn->major != f.cudnn_compiled_major) {
    add(Level::Fail, "cudnn",
        fmt::format("found cuDNN {}, but this ember loads cuDNN {} (libcudnn.so.{}): convolutions on the GPU would fail",
                    f.cudnn->str(), f.cudnn_compiled_major, f.cudnn_compiled_major),
        "install " + install_dnn);
    ok = false;
  } else if (f.cudnn_cuda_major && want_major && *f.cudnn_cuda_major != want_major) {
    const std::string p = cudnn_package_hint(f, f.cudnn->major, want_major);
    add(Level::Fail, "cudnn",
        fmt::format("cuDNN {} was built for CUDA {}, but the CUDA runtime is {}", f.cudnn->str(), *f.cudnn_cuda_major,
                    want_cuda),
        fmt::format("install the cuDNN build for CUDA {} (`pip install {}`{})", want_major,
                    compat::pip_wheels(want_major).cudnn, p.empty() ? "" : ", or " + p));
    ok = false;
  } else {
    add(Level::Pass, "cudnn",
        "cuDNN " + f.cudnn->str() +
            (f.cudnn_cuda_major ? fmt::format(" (for CUDA {})", *f.cudnn_cuda_major) : std::string()));
  }
  const std::string cm = std::to_string(cuda_m);
  if (!f.cublas_error.empty()) {
    add(Level::Fail, "cublas", f.cublas_error,
        "reinstall cuBLAS for CUDA " + cm + " (libcublas.so." + cm + " and libcublasLt.so." + cm +
            " from the same release: `pip install " + pip.cublas + "` or the CUDA toolkit)");
    ok = false;
  } else if (!f.cublas) {
    add(Level::Fail, "cublas", "libcublas could not be loaded: GPU matmul needs it",
        "install cuBLAS for CUDA " + want_cuda + " (`pip install " + pip.cublas +
            "`, or the CUDA toolkit) and add its lib directory to the library path");
    ok = false;
  } else if (want_major && f.cublas->major != want_major) {
    add(Level::Fail, "cublas",
        fmt::format("cuBLAS {} belongs to CUDA {}, but the runtime is {}", f.cublas->str(), f.cublas->major, want_cuda),
        fmt::format("install cuBLAS for CUDA {} (`pip install {}`) or fix LD_LIBRARY_PATH", want_major, pip.cublas));
    ok = false;
  } else {
    add(Level::Pass, "cublas", "cuBLAS " + f.cublas->str());
  }
  return ok;
}

}  // namespace ember::env::detail
