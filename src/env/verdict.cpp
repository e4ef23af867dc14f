// The doctor's verdict: a pure function from EnvFacts to PASS/WARN/FAIL checks. No I/O here, so
// each rule is tested over tables of versions (tests/unit/test_doctor.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ember/env/doctor.h"

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

// Lowest driver branch for each CUDA major (NVIDIA's CUDA compatibility table).
std::string min_driver_for(int cuda_major) {
  switch (cuda_major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580";
    default: return "a driver that supports CUDA " + std::to_string(cuda_major);
  }
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
    std::string fix = want_major
        ? fmt::format("install the NVIDIA driver {} or newer (CUDA {}), e.g. `apt install nvidia-driver`, then check `nvidia-smi`",
                      min_driver_for(want_major), want_cuda)
        : "install the NVIDIA driver (e.g. `apt install nvidia-driver`), then check `nvidia-smi`";
    std::string why = f.driver_error.empty() ? "libcuda.so.1 missing" : f.driver_error;
    add(Level::Fail, "driver", "no NVIDIA driver found (" + why + "); training will use the CPU", fix);
    gpu_possible = false;
  } else {
    std::string drv = f.driver_version.empty() ? "" : f.driver_version + ", ";
    std::string supports = f.driver_cuda ? "supports CUDA " + f.driver_cuda->str() : "CUDA support unknown";
    if (!f.driver_error.empty()) {
      add(Level::Fail, "driver", "NVIDIA driver " + drv + "unusable: " + f.driver_error,
          f.driver_fix.empty() ? "check `nvidia-smi` and `dmesg`; reinstall the driver or reboot after an upgrade"
                               : f.driver_fix);
      gpu_possible = false;
    } else if (f.driver_cuda && f.cuda_runtime && *f.driver_cuda < *f.cuda_runtime) {
      if (f.driver_cuda->major == f.cuda_runtime->major && f.cuda_runtime->major >= 11) {
        add(Level::Warn, "driver",
            fmt::format("driver {}{} < CUDA runtime {}: runs through minor-version compatibility, "
                        "but PTX JIT and newer runtime features may fail",
                        drv, supports, f.cuda_runtime->str()),
            fmt::format("upgrade the NVIDIA driver to one that supports CUDA {}", f.cuda_runtime->str()));
      } else {
        add(Level::Fail, "driver",
            fmt::format("driver {}{} is too old for the CUDA {} runtime; training will use the CPU", drv, supports,
                        f.cuda_runtime->str()),
            fmt::format("install NVIDIA driver {} or newer (CUDA {})", min_driver_for(f.cuda_runtime->major),
                        f.cuda_runtime->str()));
        gpu_possible = false;
      }
    } else {
      add(Level::Pass, "driver", "NVIDIA driver " + drv + supports);
    }
  }

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
    const std::string install_dnn = fmt::format("cuDNN {} for CUDA {} with all of its libcudnn_*.so.{} parts (`pip install "
                                                "nvidia-cudnn-cu{}` and its lib directory on LD_LIBRARY_PATH, or "
                                                "`apt install cudnn{}-cuda-{}`)",
                                                dnn_major, cuda_m, dnn_major, cuda_m, dnn_major, cuda_m);
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
          fmt::format("install the cuDNN build for CUDA {} (e.g. `apt install cudnn9-cuda-{}`)", want_major, want_major));
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

  // ---- devices ----
  std::optional<int> visible;
  if (f.cuda_visible_devices) visible = visible_device_count(*f.cuda_visible_devices, f.physical_gpus);
  if (f.driver_found && f.driver_error.empty()) {
    if (f.cuda_visible_devices && visible && *visible == 0 && f.physical_gpus != 0) {
      add(Level::Fail, "visible devices",
          fmt::format("CUDA_VISIBLE_DEVICES='{}' hides every GPU{}", *f.cuda_visible_devices,
                      f.physical_gpus > 0 ? fmt::format(" (this machine has {})", f.physical_gpus) : ""),
          f.physical_gpus > 0 ? fmt::format("unset CUDA_VISIBLE_DEVICES or set it to indices in 0..{}", f.physical_gpus - 1)
                              : "unset CUDA_VISIBLE_DEVICES or list valid device indices");
      gpu_possible = false;
    } else if (f.gpus.empty()) {
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
    const bool archs_known = !f.cuda_sass_archs.empty() || !f.cuda_ptx_archs.empty();
    if (f.built_with_cuda && archs_known && !arch_supported(g.cc_major, g.cc_minor, f.cuda_sass_archs, f.cuda_ptx_archs)) {
      add(Level::Fail, name,
          fmt::format("{}: ember has no kernels for sm_{}{} (compiled: {}; PTX: {})", what, g.cc_major, g.cc_minor,
                      join_archs(f.cuda_sass_archs), join_archs(f.cuda_ptx_archs)),
          fmt::format("rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{}", g.cc_major, g.cc_minor));
    } else if (f.built_with_cuda && archs_known && !std::any_of(f.cuda_sass_archs.begin(), f.cuda_sass_archs.end(), [&](int a) {
                 return a / 10 == g.cc_major && a % 10 <= g.cc_minor;
               })) {
      add(Level::Warn, name, what + ": runs from PTX (JIT-compiled at start-up, slow first launch)",
          fmt::format("rebuild with -DCMAKE_CUDA_ARCHITECTURES={}{} for native code", g.cc_major, g.cc_minor));
      any_gpu_ok = true;
    } else {
      add(Level::Pass, name, what);
      any_gpu_ok = true;
    }
  }

  v.gpu_usable = gpu_possible && any_gpu_ok;
  v.training_device = v.gpu_usable ? "cuda:0" : "cpu";
  if (v.gpu_usable)
    add(Level::Pass, "verdict", "training will use the GPU (cuda:0)");
  else if (v.cpu_usable)
    add(f.built_with_cuda ? Level::Warn : Level::Pass, "verdict", "training will use the CPU",
        f.built_with_cuda ? "fix the FAIL lines above to train on the GPU" : "");
  else
    add(Level::Fail, "verdict", "no device can train", "fix the FAIL lines above");
  return v;
}

}  // namespace ember::env
