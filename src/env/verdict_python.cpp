// Judges what each Python interpreter has installed (EnvFacts::pythons) against the driver, the
// GPUs and the libraries the frameworks loaded for real: a CPU-only build, a build for a newer CUDA
// than the driver, an arch list without the GPU, a cuDNN older than the build's, a framework that
// cannot load the CUDA it was built for (TensorFlow 1.14 wanting libcudart.so.10.0), one that does
// not see the GPU. The fix for a framework that needs another CUDA is the framework version or the
// CUDA version, chosen from the compatibility tables for this driver and these GPUs — never a
// reinstall of the same thing; on a machine without an NVIDIA GPU a CPU build is simply right.
// Pure: no I/O.
#include "env/verdict_python.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "env/compat.h"
#include "env/distro.h"
#include "env/verdict_parts.h"

namespace ember::env::detail {
namespace {

std::optional<Version> parse_mm(const std::string& s) {
  Version v;
  const int n = std::sscanf(s.c_str(), "%d.%d", &v.major, &v.minor);
  if (n < 1) return std::nullopt;
  if (n == 1) v.minor = -1;  // "9": a major only
  return v;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

struct Ctx {
  const EnvFacts& f;
  std::vector<Check>& out;
  std::vector<int> ccs;  // every GPU's compute capability, 86 = 8.6
  bool has_gpu;          // CUDA or the PCI bus shows an NVIDIA GPU
  bool no_gpu;           // the machine has none for sure
  void add(Level l, const std::string& name, const std::string& msg, const std::string& fix = {}) {
    out.push_back({l, name, msg, fix});
  }
  // A framework without GPU support blocks the GPU only where there is one; where one cannot be ruled
  // out it is worth a WARN; where there is none it is right.
  Level cpu_only_level() const { return has_gpu ? Level::Fail : Level::Warn; }
};

// Whether an arch list ("sm_80", "compute_90", "sm_90a") runs on compute capability cc.
bool arch_list_runs_on(const std::vector<std::string>& list, int cc) {
  for (const auto& a : list) {
    int n = 0;
    if (std::sscanf(a.c_str(), "sm_%d", &n) == 1 && n / 10 == cc / 10 && n % 10 <= cc % 10) return true;
    if (std::sscanf(a.c_str(), "compute_%d", &n) == 1 && n <= cc) return true;
  }
  return false;
}

// The GPUs' families the tables no longer support at all ("Tesla K40 (Kepler, sm_35)"), for "past
// support" lines; "" when every GPU is current or unknown.
std::string gpus_named(const Ctx& c, const std::vector<int>& which) {
  std::vector<std::string> names;
  for (const GpuInfo& g : c.f.gpus) {
    const int cc = g.cc_major * 10 + g.cc_minor;
    if (std::find(which.begin(), which.end(), cc) == which.end()) continue;
    const compat::ArchRow* a = compat::arch(cc);
    names.push_back(fmt::format("{} ({}sm_{})", g.name, a ? a->family + ", " : "", cc));
  }
  return join(names);
}

// The lowest "last driver branch" among the GPUs (R470 for a Kepler); 0 when every GPU is current.
int last_branch(const Ctx& c) {
  int last = 0;
  for (int cc : c.ccs)
    if (const compat::ArchRow* a = compat::arch(cc); a && a->last_driver_branch)
      last = last == 0 ? *a->last_driver_branch : std::min(last, *a->last_driver_branch);
  return last;
}

// The driver a wheel of CUDA `cuda` needs, in the words of a fix: the toolkit's own driver, or — for
// a GPU whose last branch is older than that — the major's minor-version floor on that last branch.
std::string upgrade_for(const Ctx& c, const Version& cuda) {
  const int last = last_branch(c);
  const compat::MinorCompatRow* floor = compat::minor_compat(cuda.major);
  if (last > 0 && compat::driver_branch_for(cuda) > last && floor != nullptr)
    return fmt::format("upgrade the NVIDIA driver to {} or newer within R{} (the last branch for this GPU: it runs "
                       "CUDA {}.x through minor-version compatibility)",
                       floor->linux_driver, last, cuda.major);
  return driver_upgrade(c.f, cuda);
}

// The command that installs the right CUDA PyTorch into this interpreter, and what to run after.
std::string torch_fix(const Ctx& c, const std::string& py) {
  const std::string after =
      fmt::format("; then check: {} -c \"import torch; print(torch.cuda.is_available())\" prints True", py);
  const std::string also = " (torchvision and torchaudio too, from the same index, if installed)";
  auto install = [&](const compat::TorchWheel& w) {
    return fmt::format("{} -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{}{}{}",
                       py, w.index,
                       w.last_torch ? fmt::format(" (it carries torch {}: the newest that runs on this driver and GPU)",
                                                  compat::torch_releases(w))
                                    : std::string(),
                       also);
  };
  const compat::TorchWheel* later = compat::torch_wheel_after_upgrade(c.ccs);
  if (!c.f.driver_cuda) {
    if (later == nullptr)
      return fmt::format("no PyTorch wheel index in ember's tables ({}) carries this GPU: build PyTorch from source "
                         "with TORCH_CUDA_ARCH_LIST set to its compute capability, or train on the CPU",
                         compat::tables().date);
    return fmt::format("install the NVIDIA driver first (the driver line), then {}{}", install(*later), after);
  }
  const compat::TorchWheel* now = compat::torch_wheel_for(c.f.driver_version, c.f.driver_cuda, c.ccs);
  if (now != nullptr) {
    std::string fix = install(*now) + after;
    // An index of older torch releases: a driver upgrade would bring the newest.
    if (now->last_torch && later != nullptr && !later->last_torch) {
      const compat::MinorCompatRow* floor = compat::minor_compat(later->cuda.major);
      const int last = last_branch(c);
      if (last == 0 || (floor != nullptr && compat::driver_branch(floor->linux_driver) <= last))
        fix += fmt::format("; or, for the newest torch, {} and use the {} index", upgrade_for(c, later->cuda),
                           later->index);
    }
    return fix;
  }
  if (later != nullptr) {
    const int last = last_branch(c);
    const compat::MinorCompatRow* floor = compat::minor_compat(later->cuda.major);
    if (last > 0 && floor != nullptr && compat::driver_branch(floor->linux_driver) > last)
      return fmt::format("this GPU is past support for PyTorch's current wheels ({} needs CUDA {}.x, a driver of R{} or "
                         "newer; R{} is its last): train on the CPU, or build PyTorch from source for it",
                         later->index, later->cuda.major, compat::driver_branch(floor->linux_driver), last);
    return fmt::format("{}, then {}{}", upgrade_for(c, later->cuda), install(*later), after);
  }
  std::vector<int> uncovered;
  for (int cc : c.ccs) {
    bool any = false;
    for (const compat::TorchWheel& w : compat::tables().torch_wheels) any |= compat::wheel_runs_on(w, cc);
    if (!any) uncovered.push_back(cc);
  }
  return fmt::format("no PyTorch wheel index in ember's tables ({}) carries {}: {}", compat::tables().date,
                     gpus_named(c, uncovered),
                     std::any_of(uncovered.begin(), uncovered.end(),
                                 [](int cc) { return compat::arch(cc) != nullptr; })
                         ? "current PyTorch no longer supports it (past support): train on the CPU, or build PyTorch "
                           "from source with TORCH_CUDA_ARCH_LIST set to its compute capability"
                         : "it is newer than the tables: try the newest index (" +
                               compat::tables().torch_wheels.back().index + ") or PyTorch's nightly builds");
}

// A framework built for `built` CUDA on a driver supporting `driver`: empty when fine, else the
// level and the words. Minor-version compatibility covers a newer minor of the same major (from
// CUDA 11, and a driver at least the major's floor), without PTX JIT.
std::optional<std::pair<Level, std::string>> cuda_vs_driver(const Ctx& c, const Version& built) {
  const std::optional<Version>& driver = c.f.driver_cuda;
  if (!driver) return std::nullopt;
  if (!compat::driver_runs(c.f.driver_version, driver, built))
    return std::pair{Level::Fail, fmt::format("built for CUDA {}, but the driver supports CUDA {} at most: it cannot "
                                              "use the GPU", built.str(), driver->str())};
  if (built.major == driver->major && built.minor > driver->minor)
    return std::pair{Level::Warn, fmt::format("built for CUDA {}, newer than the driver's CUDA {}: it runs by "
                                              "minor-version compatibility, but kernels JIT-compiled from PTX fail",
                                              built.str(), driver->str())};
  return std::nullopt;
}

// The pip wheel that ships a CUDA soname for CUDA `major` ("libcudnn.so.9" -> "nvidia-cudnn-cu12").
std::string pip_for(const std::string& soname, int major) {
  const compat::PipWheels& w = compat::pip_wheels(major);
  if (soname.starts_with("libcudnn")) return w.cudnn;
  if (soname.starts_with("libcublas")) return w.cublas;
  if (soname.starts_with("libnccl")) return w.nccl;
  if (soname.starts_with("libcudart")) return w.cudart;
  return "";
}

std::string failed_loads(const std::vector<LibraryLoad>& loads) {
  std::vector<std::string> parts;
  for (const LibraryLoad& l : loads)
    if (!l.error.empty()) parts.push_back(l.soname + " (" + l.error + ")");
  return join(parts, "; ");
}

// The CUDA major the environment's own nvidia-* wheels bring (nvidia-cuda-runtime 13.0.96 -> 13); 0 none.
int wheel_cuda_major(const PythonEnv& p) {
  for (const PipWheel& w : p.nvidia_wheels)
    if (w.name.starts_with("nvidia-cuda-runtime")) return std::atoi(w.version.c_str());
  return 0;
}

void judge_torch(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const TorchBuild& t = *p.torch;
  const std::string what = fmt::format("{}: torch {}", py, t.version.empty() ? "(version unknown)" : t.version);
  if (!t.imported) {
    const auto err = p.import_errors.find("torch");
    const std::string missing = failed_loads(t.libraries);
    int major = 0;
    if (auto at = t.version.find("+cu"); at != std::string::npos) major = std::atoi(t.version.c_str() + at + 3) / 10;
    std::vector<std::string> wheels;
    for (const LibraryLoad& l : t.libraries)
      if (!l.error.empty() && major > 0)
        if (std::string w = pip_for(l.soname, major); !w.empty() && std::find(wheels.begin(), wheels.end(), w) == wheels.end())
          wheels.push_back(w);
    c.add(Level::Fail, "torch",
          fmt::format("{}: import torch failed{}{}", what, err == p.import_errors.end() ? "" : ": " + err->second,
                      missing.empty() ? "" : "; the CUDA libraries it needs that do not load here: " + missing),
          !wheels.empty()
              ? fmt::format("install the CUDA {} libraries it was built with into this environment: {} -m pip install "
                            "{} (`{} -m pip check` lists what its wheel depends on and is missing)",
                            major, py, join(wheels, " "), py)
              : fmt::format("run {} -c \"import torch\" to see the whole error; {}", py, torch_fix(c, py)));
    return;
  }
  if (t.cuda.empty()) {
    if (c.no_gpu) {
      c.add(Level::Pass, "torch", what + ", a CPU-only build: right for this machine, which has no NVIDIA GPU");
      return;
    }
    c.add(c.cpu_only_level(), "torch",
          what + " is a CPU-only build (torch.version.cuda is None): torch.cuda.is_available() is False",
          torch_fix(c, py));
    return;
  }
  bool warned = false;  // a WARN stands for the framework; no PASS line after it
  if (const std::optional<Version> built = parse_mm(t.cuda)) {
    if (auto bad = cuda_vs_driver(c, *built)) {
      c.add(bad->first, "torch", what + " is " + bad->second, torch_fix(c, py));
      if (bad->first == Level::Fail) return;
      warned = true;
    }
  }
  for (const GpuInfo& g : c.f.gpus) {
    const int cc = g.cc_major * 10 + g.cc_minor;
    if (!t.arch_list.empty() && !arch_list_runs_on(t.arch_list, cc)) {
      c.add(Level::Fail, "torch",
            fmt::format("{} has no kernels for sm_{} ({}, cuda:{}): it was built for {}", what, cc, g.name, g.index,
                        join(t.arch_list, " ")),
            torch_fix(c, py));
      return;
    }
  }
  if (!t.cudnn_error.empty()) {
    c.add(Level::Fail, "torch", what + ": asking its cuDNN version failed: " + t.cudnn_error,
          torch_fix(c, py) + "; and keep other cuDNN libraries off LD_LIBRARY_PATH");
    return;
  }
  if (t.cudnn > 0 && t.cudnn_compiled > 0 && t.cudnn < t.cudnn_compiled) {
    c.add(Level::Fail, "torch",
          fmt::format("{} loads cuDNN {}, older than the cuDNN {} it was built with: convolutions fail", what,
                      cudnn_int_str(t.cudnn), cudnn_int_str(t.cudnn_compiled)),
          torch_fix(c, py) + "; and keep the older libcudnn off LD_LIBRARY_PATH");
    return;
  }
  // Asked for real: a build that fits on paper may still not reach the GPU (a driver it cannot start).
  if (t.cuda_available == false && c.has_gpu && !warned) {
    c.add(Level::Fail, "torch",
          fmt::format("{} (CUDA {}) does not see the GPU: torch.cuda.is_available() is False{}", what, t.cuda,
                      t.cuda_error.empty() ? "" : " (" + t.cuda_error + ")"),
          c.f.driver_found && c.f.driver_error.empty()
              ? fmt::format("run {} -c \"import torch; torch.cuda.init()\" to see CUDA's own error; {}", py,
                            torch_fix(c, py))
              : "fix the driver line first; " + torch_fix(c, py));
    return;
  }
  if (warned) return;
  const std::string available =
      !t.cuda_available ? std::string()
      : *t.cuda_available ? fmt::format("; torch.cuda.is_available() is True, {} device(s)", t.device_count)
      : c.no_gpu ? std::string("; torch.cuda.is_available() is False here: this machine has no NVIDIA GPU")
                 : std::string("; torch.cuda.is_available() is False here");
  c.add(Level::Pass, "torch",
        fmt::format("{} (CUDA {}{}{}){}", what, t.cuda, t.cudnn ? ", cuDNN " + cudnn_int_str(t.cudnn) : "",
                    t.arch_list.empty() ? "" : ", " + join(t.arch_list, " "), available));
}

// The cuDNN TensorFlow would load: the nvidia-cudnn wheel of its environment, else the system's.
std::optional<std::pair<Version, std::string>> cudnn_for(const Ctx& c, const PythonEnv& p) {
  for (const PipWheel& w : p.nvidia_wheels)
    if (w.name.starts_with("nvidia-cudnn"))
      if (auto v = parse_mm(w.version)) return std::pair{*v, "the " + w.name + " " + w.version + " wheel"};
  if (c.f.cudnn) return std::pair{*c.f.cudnn, "the system's libcudnn " + c.f.cudnn->str()};
  return std::nullopt;
}

// How to get TensorFlow `t` its CUDA, or another TensorFlow that fits the CUDA here: the two fixes
// for a framework built for another CUDA (the tables' tested configurations).
std::string tensorflow_fix(const Ctx& c, const PythonEnv& p, const TensorflowBuild& t, const Version& cuda,
                           const std::string& cudnn) {
  const std::string py = p.path;
  const std::string after = fmt::format(
      "; then check: {} -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\" lists the GPU", py);
  const auto version = parse_mm(t.version);
  const compat::TensorflowRow* row = version ? compat::tensorflow_row(*version) : nullptr;
  // (a) the CUDA this TensorFlow was built for.
  std::string own;
  if (row != nullptr && row->and_cuda)
    own = fmt::format("{} -m pip install 'tensorflow[and-cuda]=={}' (it installs the CUDA {} and cuDNN {} wheels this "
                      "release was built for, beside the others)",
                      py, t.version, row->cuda.str(), row->cudnn.str());
  else
    own = fmt::format("install CUDA {} with cuDNN {} for TensorFlow {} ({}: NVIDIA's CUDA {} from "
                      "https://developer.nvidia.com/cuda-toolkit-archive{}) and put their lib64 on LD_LIBRARY_PATH",
                      cuda.str(), cudnn.empty() ? std::string("(its cuDNN)") : cudnn, t.version,
                      "libcudart.so." + (cuda.major >= 11 ? std::to_string(cuda.major) : cuda.str()), cuda.str(),
                      cuda.major >= 11 ? ", or the " + compat::pip_wheels(cuda.major).cudart + " and " +
                                             compat::pip_wheels(cuda.major).cudnn + " wheels"
                                       : ": NVIDIA publishes no pip wheels for it");
  // (b) the newest TensorFlow whose CUDA this driver runs.
  const compat::TensorflowRow* newest = compat::newest_tensorflow_for_driver(c.f.driver_version, c.f.driver_cuda);
  const int here = wheel_cuda_major(p);
  std::string other;
  if (newest != nullptr && (row == nullptr || row->version < newest->version)) {
    const bool old_python = !p.python_version.empty() && parse_mm(p.python_version) &&
                            *parse_mm(p.python_version) < Version{3, 9, 0};
    other = fmt::format("a TensorFlow built for a CUDA this driver runs: {} -m pip install -U 'tensorflow[and-cuda]' "
                        "(TensorFlow {} and later: CUDA {}, cuDNN {}{}{})",
                        py, newest->version.str(), newest->cuda.str(),
                        newest->cudnn.str(),
                        t.package == "tensorflow-gpu" ? fmt::format("; uninstall {} first", t.package) : "",
                        old_python ? fmt::format("; it needs Python 3.9 or newer, this one is {}", p.python_version)
                                   : "");
    if (here > 0 && compat::tensorflow_for(here) == nullptr)
      other += fmt::format(" — no TensorFlow in ember's tables is built for the CUDA {} this environment has", here);
  }
  std::string fix = "the fix is the framework version or the CUDA version: " + own +
                    (other.empty() ? std::string() : "; or " + other) + after;
  if (t.package == "tensorflow-gpu" || (version && version->major == 1))
    fix += fmt::format(". For the CPU only, TensorFlow 1.x's CPU package is `tensorflow` ({} -m pip install "
                       "tensorflow=={})",
                       py, t.version);
  return fix;
}

void judge_tensorflow(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const TensorflowBuild& t = *p.tensorflow;
  const std::string pkg = t.package.empty() || t.package == "tensorflow" ? "tensorflow" : t.package;
  const std::string what = fmt::format("{}: {} {}", py, pkg, t.version.empty() ? "(version unknown)" : t.version);
  const auto version = parse_mm(t.version);
  const compat::TensorflowRow* row = version ? compat::tensorflow_row(*version) : nullptr;
  // What it was built for: its build info, the sonames its shared objects need (TF 1.x), the tables.
  std::optional<Version> built = parse_mm(t.cuda);
  if (built && built->minor < 0) built->minor = 0;
  if (!built && row != nullptr) built = row->cuda;
  const std::string cudnn = !t.cudnn.empty() ? t.cudnn : row != nullptr ? row->cudnn.str() : std::string();
  const std::string missing = failed_loads(t.libraries);
  if (!t.imported) {
    const auto err = p.import_errors.find("tensorflow");
    const std::string why = err == p.import_errors.end() ? "" : ": " + err->second;
    if (!missing.empty() && built) {
      c.add(Level::Fail, "tensorflow",
            fmt::format("{} cannot be imported{}; it was built for CUDA {}{} and these do not load here: {}", what, why,
                        built->str(), cudnn.empty() ? "" : " and cuDNN " + cudnn, missing),
            tensorflow_fix(c, p, t, *built, cudnn));
    } else {
      c.add(Level::Fail, "tensorflow", fmt::format("{}: import tensorflow failed{}", what, why),
            fmt::format("run {} -c \"import tensorflow\" to see the whole error; if it names a missing library, "
                        "install what it was built for (TensorFlow's tested build configurations: "
                        "https://www.tensorflow.org/install/source#gpu)",
                        py));
    }
    return;
  }
  const std::string after = fmt::format(
      "; then check: {} -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\" lists the GPU", py);
  if (!t.cuda_build) {
    if (c.no_gpu) {
      c.add(Level::Pass, "tensorflow", what + ", a CPU-only build: right for this machine, which has no NVIDIA GPU");
      return;
    }
    c.add(c.cpu_only_level(), "tensorflow", what + " is a CPU-only build (is_cuda_build is False)",
          fmt::format("{} -m pip install 'tensorflow[and-cuda]' (Linux and WSL2, TensorFlow 2.14 and later: it brings "
                      "the CUDA and cuDNN wheels it was built for; TensorFlow 2.11 and later have no GPU support on "
                      "native Windows){}",
                      py, after));
    return;
  }
  if (c.no_gpu) {  // its CUDA libraries would have no GPU to serve: nothing to judge or fix here
    c.add(Level::Pass, "tensorflow",
          fmt::format("{} (CUDA {}, cuDNN {}): a GPU build on a machine without an NVIDIA GPU: it runs on the CPU",
                      what, t.cuda, t.cudnn));
    return;
  }
  bool warned = false;
  if (built) {
    if (auto bad = cuda_vs_driver(c, *built)) {
      c.add(bad->first, "tensorflow", what + " is " + bad->second,
            fmt::format("{}, or install a TensorFlow built for CUDA {} (https://www.tensorflow.org/install/source#gpu "
                        "lists each release's){}",
                        driver_upgrade(c.f, *built), c.f.driver_cuda ? c.f.driver_cuda->str() : "?", after));
      if (bad->first == Level::Fail) return;
      warned = true;
    }
  }
  // The libraries it names, loaded for real (when it saw no GPU): the CUDA or cuDNN it was built for missing.
  if (!missing.empty() && built) {
    c.add(c.has_gpu ? Level::Fail : Level::Warn, "tensorflow",
          fmt::format("{} was built for CUDA {}{}, but {}: it cannot use the GPU{}", what, built->str(),
                      cudnn.empty() ? "" : " and cuDNN " + cudnn, "these do not load here: " + missing,
                      t.gpus == 0 ? " (tf.config.list_physical_devices('GPU') is [])" : ""),
          tensorflow_fix(c, p, t, *built, cudnn));
    return;
  }
  if (auto want = parse_mm(t.cudnn)) {
    if (auto have = cudnn_for(c, p)) {
      const Version& v = have->first;
      const bool other_major = v.major != want->major;
      const bool older = v.major == want->major && want->minor >= 0 && v.minor < want->minor;
      if (other_major || older) {
        c.add(Level::Fail, "tensorflow",
              fmt::format("{} was built for cuDNN {}, but the cuDNN it loads is {}{}: it cannot use the GPU", what,
                          t.cudnn, have->second,
                          other_major ? fmt::format(" (libcudnn.so.{} is another library than libcudnn.so.{})", v.major,
                                                    want->major)
                                      : ""),
              built ? tensorflow_fix(c, p, t, *built, t.cudnn)
                    : fmt::format("install the cuDNN {} it was built for{}", t.cudnn, after));
        return;
      }
    }
  }
  if (t.gpus == 0 && c.has_gpu && !warned) {
    c.add(Level::Fail, "tensorflow",
          fmt::format("{} (CUDA {}, cuDNN {}) sees no GPU: tf.config.list_physical_devices('GPU') is []{}", what,
                      t.cuda, t.cudnn, t.gpu_error.empty() ? "" : " (" + t.gpu_error + ")"),
          fmt::format("run {} -c \"import tensorflow as tf; tf.config.list_physical_devices('GPU')\" without "
                      "TF_CPP_MIN_LOG_LEVEL: its log names the library it could not load; fix the driver line first "
                      "if it has a FAIL",
                      py));
    return;
  }
  if (warned) return;
  c.add(Level::Pass, "tensorflow",
        fmt::format("{} (CUDA {}, cuDNN {}){}", what, t.cuda, t.cudnn,
                    t.gpus > 0    ? fmt::format("; it sees {} GPU(s)", t.gpus)
                    : t.gpus == 0 ? std::string(c.no_gpu ? "; no GPU to see here" : "; it sees no GPU")
                                  : std::string()));
}

void judge_jax(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const JaxBuild& j = *p.jax;
  const std::string what = fmt::format("{}: jax {} / jaxlib {}", py, j.jax.empty() ? "-" : j.jax,
                                       j.jaxlib.empty() ? "-" : j.jaxlib);
  const std::string after = fmt::format("; then check: {} -c \"import jax; print(jax.devices())\" lists CudaDevice", py);
  // The extra that fits this driver and every GPU (JAX's install guide: CUDA 12 from SM 5.2, CUDA 13 from 7.5).
  const compat::JaxRow* fits = compat::jax_extra_for(c.f.driver_version, c.f.driver_cuda, c.ccs);
  std::string install;
  if (fits != nullptr) {
    install = fmt::format("{} -m pip install -U 'jax[{}]'{}", py, fits->extra, after);
  } else {
    std::vector<int> too_old;
    for (int cc : c.ccs)
      if (cc < compat::tables().jax.front().min_cc) too_old.push_back(cc);
    if (!too_old.empty()) {
      install = fmt::format("no JAX CUDA build supports {} (JAX's CUDA 12 builds need compute capability {}.{}): "
                            "this GPU is past support for JAX; use it on the CPU (`pip install -U jax`)",
                            gpus_named(c, too_old), compat::tables().jax.front().min_cc / 10,
                            compat::tables().jax.front().min_cc % 10);
    } else {
      // The driver is the obstacle: the newest extra every GPU can take, after its driver.
      const compat::JaxRow* best = nullptr;
      for (const compat::JaxRow& r : compat::tables().jax)
        if (std::all_of(c.ccs.begin(), c.ccs.end(), [&](int cc) { return cc >= r.min_cc; })) best = &r;
      if (best != nullptr && c.f.driver_found)
        install = fmt::format("{} (JAX's CUDA {} wheels need a driver of R{} or newer), then {} -m pip install -U "
                              "'jax[{}]'{}",
                              upgrade_for(c, Version{best->cuda_major, 0, 0}), best->cuda_major,
                              best->min_driver_branch, py, best->extra, after);
      else if (best != nullptr)
        install = fmt::format("install the NVIDIA driver first (the driver line), then {} -m pip install -U 'jax[{}]'{}",
                              py, best->extra, after);
      else
        install = "install JAX for the CPU (`pip install -U jax`)";
    }
  }
  if (j.cuda_plugins.empty()) {
    if (c.no_gpu) {
      c.add(Level::Pass, "jax", what + ", CPU only: right for this machine, which has no NVIDIA GPU");
      return;
    }
    c.add(c.cpu_only_level(), "jax", what + " has no CUDA plugin (jax-cuda12-plugin / jax-cuda13-plugin): CPU only",
          install);
    return;
  }
  const int driver_major = c.f.driver_cuda ? c.f.driver_cuda->major : 0;
  for (const auto& [name, version] : j.cuda_plugins) {
    int major = 0;
    std::sscanf(name.c_str(), "jax-cuda%d", &major);
    if (const compat::JaxRow* row = compat::jax_row(major)) {
      std::vector<int> below;
      for (int cc : c.ccs)
        if (cc < row->min_cc) below.push_back(cc);
      if (!below.empty()) {
        c.add(Level::Fail, "jax",
              fmt::format("{}: {} {} needs compute capability {}.{} or newer; {} is older", what, name, version,
                          row->min_cc / 10, row->min_cc % 10, gpus_named(c, below)),
              fits != nullptr && fits->cuda_major != major
                  ? fmt::format("{} -m pip uninstall -y {} && {}", py, name, install)
                  : install);
        return;
      }
    }
    if (c.f.driver_cuda && major > driver_major) {
      c.add(Level::Fail, "jax",
            fmt::format("{}: {} {} needs a CUDA {} driver; the driver supports CUDA {}", what, name, version, major,
                        c.f.driver_cuda->str()),
            install);
      return;
    }
    if (!j.jaxlib.empty() && version != j.jaxlib && name.ends_with("-plugin")) {
      c.add(Level::Fail, "jax", fmt::format("{}: {} {} does not match jaxlib {}", what, name, version, j.jaxlib), install);
      return;
    }
  }
  std::vector<std::string> names;
  for (const auto& pl : j.cuda_plugins) names.push_back(pl.first + " " + pl.second);
  // Asked for real: jax.devices() lists a CUDA device where the plugin works.
  const bool asked = !j.devices.empty() || !j.devices_error.empty();
  const bool sees_gpu = std::any_of(j.devices.begin(), j.devices.end(),
                                    [](const std::string& d) { return d == "cuda" || d == "gpu"; });
  if (asked && !sees_gpu && c.has_gpu) {
    c.add(Level::Fail, "jax",
          fmt::format("{} ({}) does not see the GPU: jax.devices() {}", what, join(names),
                      j.devices_error.empty() ? "lists " + join(j.devices) : "raised " + j.devices_error),
          fmt::format("run {} -c \"import jax; print(jax.devices())\" to see JAX's own warning (it names the library "
                      "or driver it could not use); fix the driver line first if it has a FAIL",
                      py));
    return;
  }
  c.add(Level::Pass, "jax",
        what + " (" + join(names) + ")" + (asked ? "; jax.devices(): " + join(j.devices) : std::string()));
}

void judge_onnxruntime(Ctx& c, const PythonEnv& p) {
  const OnnxruntimeBuild& o = *p.onnxruntime;
  const std::string what = fmt::format("{}: onnxruntime {}", p.path, o.version);
  if (std::find(o.providers.begin(), o.providers.end(), "CUDAExecutionProvider") == o.providers.end()) {
    if (c.no_gpu) {  // onnxruntime-gpu would bring nothing here
      c.add(Level::Pass, "onnxruntime",
            fmt::format("{} ({}): the CPU build, right for this machine, which has no NVIDIA GPU", what,
                        join(o.providers)));
      return;
    }
    c.add(Level::Warn, "onnxruntime",
          fmt::format("{} has no CUDAExecutionProvider (providers: {}): inference runs on the CPU", what, join(o.providers)),
          fmt::format("{0} -m pip uninstall -y onnxruntime && {0} -m pip install onnxruntime-gpu; then check: {0} -c "
                      "\"import onnxruntime as o; print(o.get_available_providers())\" lists CUDAExecutionProvider",
                      p.path));
    return;
  }
  c.add(Level::Pass, "onnxruntime", what + " (" + join(o.providers) + ")");
}

}  // namespace

std::string cudnn_int_str(int v) {
  const Version x = v >= 90000 ? Version{v / 10000, v % 10000 / 100, v % 100} : Version{v / 1000, v % 1000 / 100, v % 100};
  return fmt::format("{}.{}.{}", x.major, x.minor, x.patch);
}

void judge_pythons(const EnvFacts& f, std::vector<Check>& checks) {
  const bool no_gpu = no_nvidia_gpu(f);
  Ctx c{f, checks, {}, !f.gpus.empty() || f.physical_gpus > 0 || f.nvidia_pci_gpus.value_or(0) > 0, no_gpu};
  for (const GpuInfo& g : f.gpus) c.ccs.push_back(g.cc_major * 10 + g.cc_minor);
  for (const PythonEnv& p : f.pythons) {
    const std::string who = fmt::format("{} (found by {})", p.path, p.found_by);
    if (!p.error.empty()) {
      const bool hung = p.error.starts_with("did not answer");
      c.add(hung ? Level::Warn : Level::Fail, "python",
            fmt::format("{} could not be audited: it {}", who, p.error),
            fmt::format("run {} -c \"import torch\" (or the framework you use) by hand to see {}; audit others with "
                        "--python PATH", p.path, hung ? "what hangs" : "the error"));
      continue;
    }
    c.add(Level::Pass, "python",
          fmt::format("{}: Python {}, {} nvidia-* wheel(s)", who, p.python_version, p.nvidia_wheels.size()));
    for (const auto& [module, error] : p.import_errors) {
      // A framework whose import failed is judged with what it needs (its own line below).
      if ((module == "torch" && p.torch) || (module == "tensorflow" && p.tensorflow)) continue;
      c.add(Level::Fail, module, fmt::format("{}: import {} failed: {}", p.path, module, error),
            fmt::format("run {} -c \"import {}\" to see the whole error; reinstall it only if the error names none "
                        "of its libraries",
                        p.path, module));
    }
    if (p.torch) judge_torch(c, p);
    if (p.tensorflow) judge_tensorflow(c, p);
    if (p.jax) judge_jax(c, p);
    if (p.onnxruntime) judge_onnxruntime(c, p);
  }
}

}  // namespace ember::env::detail
