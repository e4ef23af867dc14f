// The doctor's verdict: a pure function from EnvFacts to PASS/WARN/FAIL checks. No I/O here, so
// each rule is tested over tables of versions (tests/unit/test_doctor.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/compat.h"
#include "env/verdict_nvml.h"
#include "env/verdict_python.h"
#include "env/distro.h"
#include "env/verdict_os.h"

namespace ember::env {

std::string Version::str() const {
  return patch ? fmt::format("{}.{}.{}", major, minor, patch) : fmt::format("{}.{}", major, minor);
}

const char* level_name(Level l) {
  switch (l) {
    case Level::Pass: return "PASS";
    case Level::Warn: return "WARN";
    case Level::Fail: return "FAIL";
  }
  return "?";
}

std::optional<int> visible_device_count(const std::string& value, int physical_gpus) {
  int count = 0;
  std::stringstream ss(value);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (tok.starts_with("GPU-") || tok.starts_with("MIG-")) return std::nullopt;
    int idx = -1;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), idx);
    // The runtime stops at the first entry it cannot use: everything after it is hidden too.
    if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size() || idx < 0) break;
    if (physical_gpus >= 0 && idx >= physical_gpus) break;
    ++count;
  }
  return count;
}

bool arch_supported(int cc_major, int cc_minor, const std::vector<int>& sass, const std::vector<int>& ptx) {
  const int cc = cc_major * 10 + cc_minor;
  // SASS is binary-compatible within a major version, for an equal or newer minor.
  for (int a : sass)
    if (a / 10 == cc_major && a % 10 <= cc_minor) return true;
  for (int a : ptx)
    if (a <= cc) return true;  // the driver JIT-compiles PTX for newer GPUs
  return false;
}

namespace {

// "the NVIDIA driver 550.54.14" or, when /proc/driver/nvidia/version could not be read, words that
// say so (never "driver supports ..." with a hole where the version goes).
std::string driver_label(const EnvFacts& f) {
  return f.driver_version.empty() ? "the NVIDIA driver (its version unknown: /proc/driver/nvidia/version unreadable)"
                                  : "the NVIDIA driver " + f.driver_version;
}

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

Verdict evaluate(const EnvFacts& f) {
  Verdict v;
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    v.checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };

  // ---- CPU: always a training device unless the smoke test failed ----
  if (f.cpu_smoke_ok) {
    std::string isa = f.avx512_bf16 ? "AVX-512 + bf16" : f.avx512f ? "AVX-512" : f.avx2 ? "AVX2" : "no AVX2";
    add(Level::Pass, "cpu", fmt::format("{} cores, {}; CPU training works", f.cores, isa));
    v.cpu_usable = true;
  } else {
    add(Level::Fail, "cpu", "a small matmul on the CPU gave a wrong result: " + f.cpu_smoke_error,
        "run the test suite (ctest) and report this with `ember doctor --json`");
  }

  // ---- the build ----
  if (!f.built_with_cuda) {
    add(Level::Warn, "build", "this ember was built without CUDA: it trains on the CPU only",
        "rebuild with -DEMBER_CUDA=ON on a machine with the CUDA toolkit (nvcc)");
  }

  // ---- the BLAS build (issue 22) ----
  // ember calls OpenBLAS single-threaded and tiles its GEMMs over its own OpenMP threads, so the
  // pthreads and OpenMP builds run alike — provided a pthreads build kept the one thread ember gave
  // it, and the library is new enough for calls from several threads at once. The serial build is
  // not safe for concurrent calls: ember runs its tiles one at a time there (src/cpu/gemm.cpp).
  if (!f.blas.empty()) {
    const std::string where = f.blas_path.empty() ? "" : " (" + f.blas_path + ")";
    const std::string ver = f.blas_version ? "OpenBLAS " + f.blas_version->str() : f.blas;
    const std::string to_openmp =
        "use the OpenMP build: `sudo apt install libopenblas0-openmp && sudo update-alternatives --set "
        "libopenblas.so.0-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0`, or for "
        "one command `LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp ember ...`";
    if (f.blas_build.empty()) {
      add(Level::Warn, "blas", ver + where + ": its threading model is unknown (openblas_get_parallel() gave no "
          "answer); GEMM speed and determinism are unchecked with it", to_openmp);
    } else if (f.blas_build != "openmp" && f.blas_threads != 1) {
      add(Level::Warn, "blas", fmt::format("{}, {} build{}: it reports {} threads although ember set it to 1; its "
          "threads would compete with ember's OpenMP threads (training speed can drop 10x or more)",
          ver, f.blas_build, where, f.blas_threads), to_openmp);
    } else if (f.blas_build == "serial") {
      add(Level::Warn, "blas", fmt::format("{}, serial build{}: it is not safe to call from several threads at once, "
          "so ember runs its GEMMs one at a time on one core (same bits, slower linear layers on {} cores)",
          ver, where, f.cores), to_openmp);
    } else if (f.blas_build != "openmp" && f.blas_version && *f.blas_version < Version{0, 3, 7}) {
      add(Level::Warn, "blas", fmt::format("{}, {} build{}: releases before 0.3.7 are not safe to call from several "
          "threads at once, as ember's tiled GEMMs do", ver, f.blas_build, where),
          "upgrade OpenBLAS to 0.3.7 or newer, or " + to_openmp);
    } else {
      add(Level::Pass, "blas", fmt::format("{}, {} build{}: called single-threaded, ember tiles the GEMMs over its own "
          "threads (same speed and bits with every build)", ver, f.blas_build, where));
    }
  }

  // ---- driver ----
  const std::string want_cuda = f.cuda_runtime ? f.cuda_runtime->str()
                                : f.cuda_compiled ? f.cuda_compiled->str() : std::string();
  const int want_major = f.cuda_runtime ? f.cuda_runtime->major : f.cuda_compiled ? f.cuda_compiled->major : 0;
  bool gpu_possible = f.built_with_cuda;
  if (!f.driver_found) {
    const std::optional<Version> want = f.cuda_runtime ? f.cuda_runtime : f.cuda_compiled;
    // The install line fits the system: the distribution's packages, the Windows driver on WSL2,
    // the host's driver and --gpus all in a container (detail::driver_install_fix).
    std::string fix = detail::driver_install_fix(f, want);
    std::string why = f.driver_error.empty() ? "libcuda.so.1 missing" : f.driver_error;
    const std::string where =
        f.container.empty() ? "" : " in this " + f.container + " container (" + f.container_hint + "): no GPU was passed in";
    add(Level::Fail, "driver", "no NVIDIA driver found (" + why + ")" + where + "; training will use the CPU", fix);
    gpu_possible = false;
  } else {
    std::string drv = f.driver_version.empty() ? "" : f.driver_version + ", ";
    std::string supports = f.driver_cuda ? "supports CUDA " + f.driver_cuda->str() : "CUDA support unknown";
    if (f.kernel_module_loaded == false && (!f.driver_error.empty() || f.gpus.empty())) {
      // libcuda answers, but without its kernel half no GPU exists for it: say that, not "no device".
      add(Level::Fail, "driver",
          "libcuda.so.1 is installed but the NVIDIA kernel module is not loaded (no /proc/driver/nvidia/version)" +
              (f.driver_error.empty() ? std::string() : "; " + f.driver_error),
          detail::module_not_loaded_fix(f));
      gpu_possible = false;
    } else if (!f.driver_error.empty()) {
      // Too old for this CUDA (35, 36): the install line for this system, not a generic "upgrade".
      const bool too_old = f.driver_error_code == 35 || f.driver_error_code == 36;
      const std::optional<Version> want = f.cuda_runtime ? f.cuda_runtime : f.cuda_compiled;
      add(Level::Fail, "driver", "NVIDIA driver " + drv + "unusable: " + f.driver_error,
          too_old && want ? detail::driver_install_fix(f, want)
          : f.driver_fix.empty() ? "check `nvidia-smi` and `dmesg`; reinstall the driver or reboot after an upgrade"
                                 : f.driver_fix);
      gpu_possible = false;
    } else if (f.driver_cuda && f.cuda_runtime && *f.driver_cuda < *f.cuda_runtime) {
      if (f.driver_cuda->major == f.cuda_runtime->major && f.cuda_runtime->major >= 11) {
        add(Level::Warn, "driver",
            fmt::format("{} supports CUDA {}, older than the CUDA {} runtime: it runs through minor-version "
                        "compatibility, but PTX JIT and newer runtime features may fail",
                        driver_label(f), f.driver_cuda->str(), f.cuda_runtime->str()),
            detail::driver_install_fix(f, f.cuda_runtime));
      } else {
        add(Level::Fail, "driver",
            fmt::format("{} supports CUDA {} at most, too old for the CUDA {} runtime; training will use the CPU",
                        driver_label(f), f.driver_cuda->str(), f.cuda_runtime->str()),
            detail::driver_install_fix(f, f.cuda_runtime));
        gpu_possible = false;
      }
    } else {
      add(Level::Pass, "driver", "NVIDIA driver " + drv + supports);
    }
  }

  // ---- the OS layer: kernel module against libcuda, nouveau, device files, a container ----
  if (!detail::judge_os(f, v.checks)) gpu_possible = false;

  // ---- CUDA runtime ----
  if (f.built_with_cuda) {
    if (!f.cuda_runtime) {
      add(Level::Fail, "cuda runtime", "libcudart could not be loaded",
          "install the CUDA runtime ember was built with" +
              (f.cuda_compiled ? " (" + f.cuda_compiled->str() + ")" : std::string()) +
              " and add its lib directory to LD_LIBRARY_PATH or /etc/ld.so.conf.d");
      gpu_possible = false;
    } else if (f.cuda_compiled && f.cuda_compiled->major != f.cuda_runtime->major) {
      add(Level::Fail, "cuda runtime",
          fmt::format("loaded CUDA runtime {} but ember was compiled with CUDA {}", f.cuda_runtime->str(),
                      f.cuda_compiled->str()),
          fmt::format("put the CUDA {} libraries first on LD_LIBRARY_PATH, or rebuild ember", f.cuda_compiled->major));
      gpu_possible = false;
    } else {
      add(Level::Pass, "cuda runtime", "CUDA runtime " + f.cuda_runtime->str());
    }
  }

  // ---- cuDNN and cuBLAS (loadable, and built for our CUDA major) ----
  if (f.built_with_cuda) {
    const int dnn_major = f.cudnn_compiled_major ? f.cudnn_compiled_major : 9;
    const std::string cuda_m = want_major ? std::to_string(want_major) : std::string("13");
    // The pip wheel works everywhere; the distribution's package only where NVIDIA's repository has one.
    const std::string dnn_package = detail::cudnn_package_hint(f, dnn_major, std::stoi(cuda_m));
    const std::string install_dnn = fmt::format("cuDNN {} for CUDA {} with all of its libcudnn_*.so.{} parts (`pip install "
                                                "nvidia-cudnn-cu{}` and its lib directory on LD_LIBRARY_PATH{})",
                                                dnn_major, cuda_m, dnn_major, cuda_m,
                                                dnn_package.empty() ? "" : ", or " + dnn_package);
    if (!f.cudnn_error.empty()) {
      add(Level::Fail, "cudnn", f.cudnn_error + "; convolutions on the GPU would fail", "reinstall " + install_dnn);
      gpu_possible = false;
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
      gpu_possible = false;
    } else if (f.cudnn_cuda_major && want_major && *f.cudnn_cuda_major != want_major) {
      add(Level::Fail, "cudnn",
          fmt::format("cuDNN {} was built for CUDA {}, but the CUDA runtime is {}", f.cudnn->str(),
                      *f.cudnn_cuda_major, want_cuda),
          fmt::format("install the cuDNN build for CUDA {} (`pip install nvidia-cudnn-cu{}`{})", want_major, want_major,
                      [&] {
                        const std::string p = detail::cudnn_package_hint(f, f.cudnn->major, want_major);
                        return p.empty() ? std::string() : ", or " + p;
                      }()));
      gpu_possible = false;
    } else {
      add(Level::Pass, "cudnn",
          "cuDNN " + f.cudnn->str() +
              (f.cudnn_cuda_major ? fmt::format(" (for CUDA {})", *f.cudnn_cuda_major) : std::string()));
    }
    if (!f.cublas_error.empty()) {
      add(Level::Fail, "cublas", f.cublas_error,
          "reinstall cuBLAS for CUDA " + cuda_m + " (libcublas.so." + cuda_m + " and libcublasLt.so." + cuda_m +
              " from the same release: `pip install nvidia-cublas` or the CUDA toolkit)");
      gpu_possible = false;
    } else if (!f.cublas) {
      add(Level::Fail, "cublas", "libcublas could not be loaded: GPU matmul needs it",
          "install cuBLAS from the CUDA toolkit " + want_cuda + " and add it to the library path");
      gpu_possible = false;
    } else if (want_major && f.cublas->major != want_major) {
      add(Level::Fail, "cublas",
          fmt::format("cuBLAS {} belongs to CUDA {}, but the runtime is {}", f.cublas->str(), f.cublas->major, want_cuda),
          fmt::format("install cuBLAS for CUDA {} or fix LD_LIBRARY_PATH", want_major));
      gpu_possible = false;
    } else {
      add(Level::Pass, "cublas", "cuBLAS " + f.cublas->str());
    }
  }

  // ---- provenance: NCCL, and the same library found with different versions ----
  if (f.built_with_cuda || !f.library_copies.empty()) detail::judge_libraries(f, v.checks);

  // ---- devices ----
  std::optional<int> visible;
  if (f.cuda_visible_devices) visible = visible_device_count(*f.cuda_visible_devices, f.physical_gpus);
  if (f.driver_found && f.driver_error.empty() && f.kernel_module_loaded != false) {
    if (f.cuda_visible_devices && visible && *visible == 0 && f.physical_gpus != 0) {
      add(Level::Fail, "visible devices",
          fmt::format("CUDA_VISIBLE_DEVICES='{}' hides every GPU{}", *f.cuda_visible_devices,
                      f.physical_gpus > 0 ? fmt::format(" (this machine has {})", f.physical_gpus) : ""),
          f.physical_gpus > 0 ? fmt::format("unset CUDA_VISIBLE_DEVICES or set it to indices in 0..{}", f.physical_gpus - 1)
                              : "unset CUDA_VISIBLE_DEVICES or list valid device indices");
      gpu_possible = false;
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
      gpu_possible = false;
    }
  }
  bool any_gpu_ok = false;
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
          fmt::format("{}, or {}", detail::driver_upgrade(f, *f.cuda_compiled), rebuild_for(f, cc)));
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
          fmt::format("install cuDNN {} (`pip install 'nvidia-cudnn-cu{}=={}.*'`) and put its lib directory first "
                      "on LD_LIBRARY_PATH", row->last_cudnn->str(), f.cudnn_cuda_major.value_or(12),
                      row->last_cudnn->str()));
  }

  // ---- NVML: what stops training on a GPU the driver shows (verdict_nvml.cpp) ----
  detail::judge_nvml(f, v.checks);

  // ---- the Python frameworks (issue 28): judged, but ember's own verdict stands on its checks ----
  detail::judge_pythons(f, v.checks);

  v.gpu_usable = gpu_possible && any_gpu_ok;
  v.training_device = v.gpu_usable ? "cuda:0" : "cpu";
  if (v.gpu_usable)
    add(Level::Pass, "verdict", "training will use the GPU (cuda:0)");
  else if (v.cpu_usable)
    add(f.built_with_cuda ? Level::Warn : Level::Pass, "verdict", "training will use the CPU",
        f.built_with_cuda ? "fix the FAIL lines above to train on the GPU" : "");
  else
    add(Level::Fail, "verdict", "no device can train", "fix the FAIL lines above");
  v.summary = v.checks.back().message;
  for (Level want : {Level::Fail, Level::Warn}) {
    auto it = std::find_if(v.checks.begin(), v.checks.end() - 1,
                           [&](const Check& c) { return c.level == want && !c.fix.empty(); });
    if (it != v.checks.end() - 1) {
      v.first_fix = it->fix;
      v.first_fix_check = it->name;
      break;
    }
  }
  return v;
}

}  // namespace ember::env
