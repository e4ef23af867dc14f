// Judges what each Python interpreter has installed (EnvFacts::pythons) against the driver's
// highest CUDA and each GPU's compute capability: a CPU-only build, a build for a newer CUDA than
// the driver, an arch list without the GPU, a cuDNN older than the build's. Each FAIL names the
// command for that interpreter and framework, and what to run after it. Pure: no I/O.
#include "env/verdict_python.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "env/compat.h"
#include "env/distro.h"

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
  bool has_gpu;
  void add(Level l, const std::string& name, const std::string& msg, const std::string& fix = {}) {
    out.push_back({l, name, msg, fix});
  }
  // A CPU-only framework blocks the GPU only where there is one.
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

// The command that installs the right CUDA PyTorch into this interpreter, and what to run after.
std::string torch_fix(const Ctx& c, const std::string& py) {
  const std::string after =
      fmt::format("; then check: {} -c \"import torch; print(torch.cuda.is_available())\" prints True", py);
  const std::string also = " (torchvision and torchaudio too, from the same index, if installed)";
  if (!c.f.driver_cuda)
    return fmt::format("install the NVIDIA driver first (see the driver line), then {} -m pip install "
                       "--force-reinstall torch --index-url https://download.pytorch.org/whl/cuXYZ for the CUDA "
                       "`nvidia-smi` shows{}", py, after);
  if (const compat::TorchWheel* w = compat::torch_wheel_for(*c.f.driver_cuda, c.ccs))
    return fmt::format("{} -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{}{}{}",
                       py, w->index, also, after);
  if (const compat::TorchWheel* w = compat::torch_wheel_for(Version{99, 0, 0}, c.ccs))
    return fmt::format("{}, then {} -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{}{}",
                       driver_upgrade(c.f, w->cuda), py, w->index, after);
  return fmt::format("no PyTorch wheel index in ember's tables ({}) carries this GPU: build PyTorch from source "
                     "with TORCH_CUDA_ARCH_LIST set to its compute capability", compat::tables().date);
}

// A framework built for `built` CUDA on a driver supporting `driver`: empty when fine, else the
// level and the words.
std::optional<std::pair<Level, std::string>> cuda_vs_driver(const Version& built, const std::optional<Version>& driver) {
  if (!driver) return std::nullopt;
  if (built.major > driver->major)
    return std::pair{Level::Fail, fmt::format("built for CUDA {}, but the driver supports CUDA {} at most: it cannot "
                                              "use the GPU", built.str(), driver->str())};
  if (built.major == driver->major && built.minor > driver->minor)
    return std::pair{Level::Warn, fmt::format("built for CUDA {}, newer than the driver's CUDA {}: it runs by "
                                              "minor-version compatibility, but kernels JIT-compiled from PTX fail",
                                              built.str(), driver->str())};
  return std::nullopt;
}

void judge_torch(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const TorchBuild& t = *p.torch;
  const std::string what = fmt::format("{}: torch {}", py, t.version);
  if (t.cuda.empty()) {
    c.add(c.cpu_only_level(), "torch",
          what + " is a CPU-only build (torch.version.cuda is None): torch.cuda.is_available() is False",
          torch_fix(c, py));
    return;
  }
  bool warned = false;  // a WARN stands for the framework; no PASS line after it
  const std::optional<Version> built = parse_mm(t.cuda);
  if (built) {
    if (auto bad = cuda_vs_driver(*built, c.f.driver_cuda)) {
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
  if (warned) return;
  c.add(Level::Pass, "torch",
        fmt::format("{} (CUDA {}{}{})", what, t.cuda, t.cudnn ? ", cuDNN " + cudnn_int_str(t.cudnn) : "",
                    t.arch_list.empty() ? "" : ", " + join(t.arch_list, " ")));
}

// The cuDNN TensorFlow would load: the nvidia-cudnn wheel of its environment, else the system's.
std::optional<std::pair<Version, std::string>> cudnn_for(const Ctx& c, const PythonEnv& p) {
  for (const PipWheel& w : p.nvidia_wheels)
    if (w.name.starts_with("nvidia-cudnn"))
      if (auto v = parse_mm(w.version)) return std::pair{*v, "the " + w.name + " " + w.version + " wheel"};
  if (c.f.cudnn) return std::pair{*c.f.cudnn, "the system's libcudnn " + c.f.cudnn->str()};
  return std::nullopt;
}

void judge_tensorflow(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const TensorflowBuild& t = *p.tensorflow;
  const std::string what = fmt::format("{}: tensorflow {}", py, t.version);
  const std::string after = fmt::format(
      "; then check: {} -c \"import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))\" lists the GPU", py);
  const std::string install = fmt::format("{} -m pip install --force-reinstall 'tensorflow[and-cuda]=={}'", py, t.version);
  if (!t.cuda_build) {
    c.add(c.cpu_only_level(), "tensorflow", what + " is a CPU-only build (is_cuda_build is False)",
          fmt::format("{} -m pip install 'tensorflow[and-cuda]' (Linux; it brings the CUDA and cuDNN wheels it was "
                      "built for){}", py, after));
    return;
  }
  bool warned = false;
  if (auto built = parse_mm(t.cuda)) {
    if (built->minor < 0) built->minor = 0;
    if (auto bad = cuda_vs_driver(*built, c.f.driver_cuda)) {
      c.add(bad->first, "tensorflow", what + " is " + bad->second,
            fmt::format("{}, or install a TensorFlow built for CUDA {} "
                        "(https://www.tensorflow.org/install/source#gpu lists each release's){}",
                        driver_upgrade(c.f, *built), c.f.driver_cuda ? c.f.driver_cuda->str() : "?", after));
      if (bad->first == Level::Fail) return;
      warned = true;
    }
  }
  if (auto want = parse_mm(t.cudnn)) {
    if (auto have = cudnn_for(c, p)) {
      const Version& v = have->first;
      const bool older = v.major < want->major || (v.major == want->major && want->minor >= 0 && v.minor < want->minor);
      if (older) {
        c.add(Level::Fail, "tensorflow",
              fmt::format("{} was built for cuDNN {}, but the cuDNN it loads is {}: it cannot use the GPU", what,
                          t.cudnn, have->second),
              install + " (it installs the cuDNN it was built for); take the older cuDNN off LD_LIBRARY_PATH" + after);
        return;
      }
    }
  }
  if (!warned) c.add(Level::Pass, "tensorflow", fmt::format("{} (CUDA {}, cuDNN {})", what, t.cuda, t.cudnn));
}

void judge_jax(Ctx& c, const PythonEnv& p) {
  const std::string py = p.path;
  const JaxBuild& j = *p.jax;
  const std::string what = fmt::format("{}: jax {} / jaxlib {}", py, j.jax.empty() ? "-" : j.jax,
                                       j.jaxlib.empty() ? "-" : j.jaxlib);
  const std::string after = fmt::format("; then check: {} -c \"import jax; print(jax.devices())\" lists CudaDevice", py);
  const int driver_major = c.f.driver_cuda ? c.f.driver_cuda->major : 0;
  const std::string extra = driver_major >= 13 ? "cuda13" : "cuda12";
  std::string install = fmt::format("{} -m pip install -U 'jax[{}]'{}", py, extra, after);
  if (c.f.driver_cuda && driver_major < 12)
    install = fmt::format("{} (JAX's CUDA wheels need CUDA 12), then {}", driver_upgrade(c.f, Version{12, 0, 0}),
                          install);
  if (j.cuda_plugins.empty()) {
    c.add(c.cpu_only_level(), "jax", what + " has no CUDA plugin (jax-cuda12-plugin / jax-cuda13-plugin): CPU only",
          install);
    return;
  }
  for (const auto& [name, version] : j.cuda_plugins) {
    int major = 0;
    std::sscanf(name.c_str(), "jax-cuda%d", &major);
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
  c.add(Level::Pass, "jax", what + " (" + join(names) + ")");
}

void judge_onnxruntime(Ctx& c, const PythonEnv& p) {
  const OnnxruntimeBuild& o = *p.onnxruntime;
  const std::string what = fmt::format("{}: onnxruntime {}", p.path, o.version);
  if (std::find(o.providers.begin(), o.providers.end(), "CUDAExecutionProvider") == o.providers.end()) {
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
  Ctx c{f, checks, {}, !f.gpus.empty() || f.physical_gpus > 0};
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
    for (const auto& [module, error] : p.import_errors)
      c.add(Level::Fail, module, fmt::format("{}: import {} failed: {}", p.path, module, error),
            fmt::format("{} -m pip install --force-reinstall {} (or fix what the error names)", p.path, module));
    if (p.torch) judge_torch(c, p);
    if (p.tensorflow) judge_tensorflow(c, p);
    if (p.jax) judge_jax(c, p);
    if (p.onnxruntime) judge_onnxruntime(c, p);
  }
}

}  // namespace ember::env::detail
