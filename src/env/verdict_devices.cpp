// The devices' part of the doctor's verdict: CUDA_VISIBLE_DEVICES (hiding every GPU, or cut at an
// entry that names none), the devices CUDA shows, and for each GPU whether ember carries kernels
// for its architecture (SASS, or PTX a new enough driver can JIT-compile) and whether the loaded cuDNN
// still supports it; each fix a rebuild line that is possible (the toolkit builds every arch it lists).
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "env/compat.h"
#include "env/distro.h"
#include "env/verdict_parts.h"

namespace ember::env::detail {
namespace {

Version major_minor(const Version& v) { return {v.major, v.minor, 0}; }

// The -DEMBER_CUDA_ARCHS value that keeps what this build carries (as far as toolkit `tk` builds
// it) and adds `cc` as SASS, in CMAKE_CUDA_ARCHITECTURES syntax: "80-real;90-real;90-virtual;86-real".
std::string archs_with(const EnvFacts& f, int cc, const Version& tk) {
  std::string s;
  auto add = [&](int a, const char* kind) {
    if (!compat::toolkit_builds_for(tk, a)) return;
    const std::string item = fmt::format("{}-{}", a, kind);
    if (s.find(item) != std::string::npos) return;
    s += (s.empty() ? "" : ";") + item;
  };
  for (int a : f.cuda_sass_archs) add(a, "real");
  add(cc, "real");
  for (int a : f.cuda_ptx_archs) add(a, "virtual");
  return s;
}

// How to get native kernels for `cc`: rebuild with EMBER_CUDA_ARCHS (the variable CMakeLists.txt
// reads), with this toolkit when it builds for `cc`, else with the toolkit the tables name.
std::string rebuild_for(const EnvFacts& f, int cc) {
  const std::string sm = fmt::format("sm_{}", cc);
  if (f.cuda_compiled && compat::toolkit_builds_for(*f.cuda_compiled, cc))
    return fmt::format("rebuild ember for {}: cmake -B build -DEMBER_CUDA_ARCHS=\"{}\" && ninja -C build", sm,
                       archs_with(f, cc, *f.cuda_compiled));
  const compat::ArchRow* a = compat::arch(cc);
  const std::optional<Version> newest = compat::newest_toolkit_for(cc);
  if (a == nullptr || !newest)
    return fmt::format("{} is not in ember's compatibility tables ({}): find a CUDA toolkit that builds for it at "
                       "https://developer.nvidia.com/cuda-gpus, then rebuild with -DEMBER_CUDA_ARCHS={}-real",
                       sm, compat::tables().date, cc);
  const std::string built = f.cuda_compiled ? "CUDA " + major_minor(*f.cuda_compiled).str() : "this toolkit";
  if (f.cuda_compiled && a->last_cuda && *a->last_cuda < major_minor(*f.cuda_compiled))
    return fmt::format("{} no longer builds for {} ({}): rebuild ember with CUDA {}, the last toolkit for it "
                       "(NVIDIA driver {}), and -DEMBER_CUDA_ARCHS=\"{}\"",
                       built, sm, a->family, a->last_cuda->str(), compat::driver_requirement(*a->last_cuda),
                       archs_with(f, cc, *a->last_cuda));
  return fmt::format("{} cannot build for {} ({}, first in CUDA {}): rebuild ember with CUDA {} (NVIDIA driver {}) "
                     "and -DEMBER_CUDA_ARCHS=\"{}\"",
                     built, sm, a->family, a->first_cuda.str(), newest->str(), compat::driver_requirement(*newest),
                     archs_with(f, cc, *newest));
}

std::string join_archs(const std::vector<int>& a) {
  std::string s;
  for (int x : a) {
    s += s.empty() ? "sm_" : ", sm_";
    s += std::to_string(x);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

bool judge_devices(const EnvFacts& f, std::vector<Check>& checks, bool& any_gpu_ok) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  bool visible_ok = true;
  // ---- devices ----
  std::optional<int> visible;
  if (f.cuda_visible_devices) visible = visible_device_count(*f.cuda_visible_devices, f.physical_gpus);
  // (A driver without a GPU to drive: the "nvidia gpu" line has said so.)
  if (f.driver_found && f.driver_error.empty() && f.kernel_module_loaded != false && !no_nvidia_gpu(f)) {
    if (f.cuda_visible_devices && visible && *visible == 0 && f.physical_gpus != 0) {
      add(Level::Fail, "visible devices",
          fmt::format("CUDA_VISIBLE_DEVICES='{}' hides every GPU{}", *f.cuda_visible_devices,
                      f.physical_gpus > 0 ? fmt::format(" (this machine has {})", f.physical_gpus) : ""),
          f.physical_gpus > 0 ? fmt::format("unset CUDA_VISIBLE_DEVICES or set it to indices in 0..{}", f.physical_gpus - 1)
                              : "unset CUDA_VISIBLE_DEVICES or list valid device indices");
      visible_ok = false;
    } else if (f.cuda_visible_devices && visible && *visible > 0) {
      // The runtime stops at the first entry naming no device: name it, and what it hides.
      std::vector<std::string> entries;
      std::stringstream ss(*f.cuda_visible_devices);
      for (std::string tok; std::getline(ss, tok, ',');) entries.push_back(tok);
      if (size_t(*visible) < entries.size()) {
        std::string hidden;
        for (size_t i = size_t(*visible) + 1; i < entries.size(); ++i) hidden += (hidden.empty() ? "" : ",") + entries[i];
        add(Level::Warn, "visible devices",
            fmt::format("CUDA_VISIBLE_DEVICES='{}': '{}' names no device{}, so CUDA ignores it{}; {} GPU(s) visible",
                        *f.cuda_visible_devices, entries[size_t(*visible)],
                        f.physical_gpus > 0 ? fmt::format(" (this machine has {}: 0..{})", f.physical_gpus,
                                                          f.physical_gpus - 1)
                                            : "",
                        hidden.empty() ? "" : " and every entry after it (" + hidden + ")", *visible),
            f.physical_gpus > 0
                ? fmt::format("set CUDA_VISIBLE_DEVICES to indices in 0..{}, or to the UUIDs `nvidia-smi -L` lists",
                              f.physical_gpus - 1)
                : "set CUDA_VISIBLE_DEVICES to valid indices, or to the UUIDs `nvidia-smi -L` lists");
      }
    }
    if (f.gpus.empty() && !(f.cuda_visible_devices && visible && *visible == 0 && f.physical_gpus != 0)) {
      add(Level::Fail, "devices", "the driver is loaded but shows no CUDA device",
          "check `nvidia-smi`; in a container pass the GPU through (--gpus all); check CUDA_VISIBLE_DEVICES");
      visible_ok = false;
    }
  }
  any_gpu_ok = false;
  for (const GpuInfo& g : f.gpus) {
    std::string what = fmt::format("{} (sm_{}{}, {:.1f} GiB)", g.name, g.cc_major, g.cc_minor,
                                   double(g.total_memory) / double(1ull << 30));
    std::string name = "device " + std::to_string(g.index);
    const int cc = g.cc_major * 10 + g.cc_minor;
    const bool archs_known = !f.cuda_sass_archs.empty() || !f.cuda_ptx_archs.empty();
    const bool native = std::any_of(f.cuda_sass_archs.begin(), f.cuda_sass_archs.end(), [&](int a) {
      return a / 10 == g.cc_major && a % 10 <= g.cc_minor;
    });
    // PTX is JIT-compiled by the driver, which must know the PTX of the toolkit that wrote it.
    const bool jit_too_old = f.driver_cuda && f.cuda_compiled && *f.driver_cuda < major_minor(*f.cuda_compiled);
    if (f.built_with_cuda && archs_known && !arch_supported(g.cc_major, g.cc_minor, f.cuda_sass_archs, f.cuda_ptx_archs)) {
      add(Level::Fail, name,
          fmt::format("{}: ember has no kernels for sm_{} (compiled: {}; PTX: {})", what, cc,
                      join_archs(f.cuda_sass_archs), join_archs(f.cuda_ptx_archs)),
          rebuild_for(f, cc));
    } else if (f.built_with_cuda && archs_known && !native && jit_too_old) {
      add(Level::Fail, name,
          fmt::format("{}: ember has only PTX for it, which the driver must JIT-compile, but {} supports CUDA {} "
                      "and the PTX is from CUDA {}: the JIT fails (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
                      what, driver_label(f), f.driver_cuda->str(), major_minor(*f.cuda_compiled).str()),
          fmt::format("{}, or {}", driver_upgrade(f, *f.cuda_compiled), rebuild_for(f, cc)));
    } else if (f.built_with_cuda && archs_known && !native) {
      add(Level::Warn, name, what + ": runs from PTX (JIT-compiled at start-up, slow first launch)",
          rebuild_for(f, cc) + " for native code");
      any_gpu_ok = true;
    } else {
      add(Level::Pass, name, what);
      any_gpu_ok = true;
    }
    // cuDNN drops old GPUs before CUDA does (9.10 is the last for Maxwell, Pascal and Volta).
    const compat::ArchRow* row = compat::arch(cc);
    if (f.built_with_cuda && f.cudnn && row != nullptr && row->last_cudnn && *row->last_cudnn < major_minor(*f.cudnn))
      add(Level::Warn, "cudnn " + name,
          fmt::format("cuDNN {} no longer supports sm_{} ({}; the last release for it is {}): convolutions on "
                      "this GPU fail", f.cudnn->str(), cc, row->family, row->last_cudnn->str()),
          fmt::format("install cuDNN {} (`pip install '{}=={}.*'`) and put its lib directory first on "
                      "LD_LIBRARY_PATH", row->last_cudnn->str(),
                      compat::pip_wheels(row->last_cudnn->major >= 9 ? f.cudnn_cuda_major.value_or(12) : 11).cudnn,
                      row->last_cudnn->str()));
  }

  return visible_ok;
}

}  // namespace ember::env::detail
