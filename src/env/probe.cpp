// Reads what this machine offers: ember's build, the CPU (/proc/cpuinfo, /proc/meminfo), and the
// NVIDIA stack through dlopen() (env/probe_nvidia.cpp) — libcuda, libcudnn, libcublas are loaded
// only to ask their versions, never linked, so a CPU-only build can still report a GPU it cannot use.
#include <sched.h>
#include <sys/utsname.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "backends/runtime.h"
#include "ember/env/doctor.h"
#include "env/probe_libraries.h"
#include "env/probe_nvidia.h"
#include "env/probe_os.h"
#include "ember/ops.h"

#ifndef EMBER_CUDA_ARCHS
#define EMBER_CUDA_ARCHS ""
#endif
#ifndef EMBER_CUDA_TOOLKIT_VERSION
#define EMBER_CUDA_TOOLKIT_VERSION ""
#endif
#ifndef EMBER_BUILD_TYPE
#define EMBER_BUILD_TYPE ""
#endif
#ifndef EMBER_CUDNN_MAJOR
#define EMBER_CUDNN_MAJOR 0
#endif

namespace ember::env {
namespace {

void probe_cpu(EnvFacts& f) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (f.cpu_model.empty() && line.starts_with("model name")) f.cpu_model = line.substr(line.find(':') + 2);
    if (line.starts_with("flags")) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      std::string flag;
      while (ss >> flag) {
        if (flag == "avx2") f.avx2 = true;
        if (flag == "avx512f") f.avx512f = true;
        if (flag == "avx512_bf16") f.avx512_bf16 = true;
        if (flag == "amx_tile") f.amx = true;
      }
      break;
    }
  }
  cpu_set_t set;
  f.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::ifstream mem("/proc/meminfo");
  while (std::getline(mem, line))
    if (line.starts_with("MemTotal:")) f.memory_bytes = std::strtoull(line.c_str() + 9, nullptr, 10) * 1024;
  utsname u{};
  if (uname(&u) == 0) f.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::string pretty;
  std::ifstream osr("/etc/os-release");
  while (std::getline(osr, line))
    if (line.starts_with("PRETTY_NAME=")) pretty = line.substr(13, line.size() - 14);
  if (!pretty.empty()) f.os = pretty + ", " + f.os;
}

void cpu_smoke_test(EnvFacts& f) {
  try {
    const int n = 24;
    std::vector<float> a(n * n), b(n * n);
    for (int i = 0; i < n * n; ++i) a[i] = float((i * 7) % 11) - 5, b[i] = float((i * 5) % 13) - 6;
    Tensor c = matmul(tensor(a, {n, n}), tensor(b, {n, n}));
    auto got = c.to_vector<float>();
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double ref = 0;
        for (int k = 0; k < n; ++k) ref += double(a[i * n + k]) * b[k * n + j];
        if (std::abs(ref - got[i * n + j]) > 1e-3) {
          f.cpu_smoke_ok = false;
          f.cpu_smoke_error = "element (" + std::to_string(i) + "," + std::to_string(j) + ") differs";
          return;
        }
      }
  } catch (const std::exception& e) {
    f.cpu_smoke_ok = false;
    f.cpu_smoke_error = e.what();
  }
}

void probe_build(EnvFacts& f) {
  f.ember_version = version();
#if defined(__clang__)
  f.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  f.compiler = "g++ " __VERSION__;
#endif
  f.build_type = EMBER_BUILD_TYPE;
#ifdef EMBER_WITH_CUDA
  f.built_with_cuda = true;
  f.cudnn_compiled_major = EMBER_CUDNN_MAJOR;
  std::string tk = EMBER_CUDA_TOOLKIT_VERSION;  // "13.0.48"
  if (!tk.empty()) {
    Version v;
    std::sscanf(tk.c_str(), "%d.%d.%d", &v.major, &v.minor, &v.patch);
    v.patch = 0;
    f.cuda_compiled = v;
  }
  // CMAKE_CUDA_ARCHITECTURES syntax, comma-separated: "80,90", "80-real,90-virtual", "90" (= real + PTX).
  std::stringstream ss(EMBER_CUDA_ARCHS);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) continue;
    int a = std::atoi(tok.c_str());
    if (a <= 0) continue;
    bool real = tok.find("-virtual") == std::string::npos, virt = tok.find("-real") == std::string::npos;
    if (real) f.cuda_sass_archs.push_back(a);
    if (virt) f.cuda_ptx_archs.push_back(a);
  }
#endif
  f.onednn_version = cpu_library_facts().onednn_version;  // the CPU backend's oneDNN (core/runtime.h)
}

void probe_blas(EnvFacts& f) {
  // The OpenBLAS the CPU backend loaded, as it reports it (core/runtime.h: CpuLibraryFacts).
  const CpuLibraryFacts libs = cpu_library_facts();
  const std::string& cfg = libs.blas_config;  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  f.blas = cfg.starts_with("OpenBLAS ") ? cfg : "OpenBLAS " + cfg;
  switch (libs.blas_parallel) {
    case 0: f.blas_build = "serial"; break;
    case 1: f.blas_build = "pthreads"; break;
    case 2: f.blas_build = "openmp"; break;
    default: f.blas_build.clear();
  }
  f.blas_threads = libs.blas_threads;
  Version v;
  if (std::sscanf(f.blas.c_str(), "OpenBLAS %d.%d.%d", &v.major, &v.minor, &v.patch) >= 2) f.blas_version = v;
  f.blas_path = libs.blas_path;
}

void probe_nvidia(EnvFacts& f, bool libraries) {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) f.cuda_visible_devices = v;
  detail::probe_kernel_module(f, "");

  // The driver, isolated in a child process for the doctor; in-process for a run's report, which
  // may already be using CUDA (a forked copy of a CUDA process must not call the driver).
  const detail::NvidiaSearch search = detail::NvidiaSearch::defaults();
  detail::probe_driver(f, search.cuda, libraries);
  detail::probe_os(f, "");  // after the driver: its first cuInit may create /dev/nvidia-uvm

  // The libraries are only opened when asked, each in a child process: opening libcublas maps
  // libcublasLt (~150 MB resident), and a broken install may abort (a run's report needs the
  // driver only).
  if (!libraries) return;
#ifdef EMBER_WITH_CUDA
  // This build carries its CUDA runtime (linked statically): ask it, through the CUDA backend.
  if (const int rt = cuda_runtime_version(); rt > 0) f.cuda_runtime = Version::from_cuda_int(rt);
  f.cudart_path = "linked statically into libember";
#else
  detail::probe_cudart(f, search.cudart);
#endif
  detail::probe_cudnn(f, search.cudnn);
  if (f.driver_found) detail::probe_nvml(f, {"libnvidia-ml.so.1"});
  detail::probe_cublas(f, search.cublas);
  detail::probe_nccl(f, detail::nccl_search_names());
}

}  // namespace

EnvFacts probe_environment(ProbeDepth depth) {
  EnvFacts f;
  probe_build(f);
  probe_cpu(f);
  probe_nvidia(f, depth == ProbeDepth::Full);  // before the smoke test starts worker threads, as it forks
  cpu_smoke_test(f);
  probe_blas(f);  // after the smoke test's first tensor: the CPU backend has pinned OpenBLAS by then
  return f;
}

}  // namespace ember::env
