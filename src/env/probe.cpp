// Reads what this machine offers: ember's build, the CPU (/proc/cpuinfo, /proc/meminfo), and the
// NVIDIA stack through dlopen() — libcuda, libcudart, libcudnn, libcublas are loaded only to ask
// their versions, never linked, so a CPU-only build can still report a GPU it cannot use.
#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <sched.h>
#include <sys/utsname.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/env/doctor.h"
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

namespace ember::env {
namespace {

// dlopen by soname, then from the usual CUDA install directories.
void* open_lib(const std::vector<std::string>& names) {
  std::vector<std::string> dirs = {""};
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("/usr/local/cuda/lib/");
  for (const auto& d : dirs)
    for (const auto& n : names)
      if (void* h = dlopen((d + n).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}
template <class F> F sym(void* lib, const char* name) { return reinterpret_cast<F>(dlsym(lib, name)); }

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

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
  const dnnl_version_t* dv = dnnl_version();
  f.onednn_version = std::to_string(dv->major) + "." + std::to_string(dv->minor) + "." + std::to_string(dv->patch);
  std::string cfg = openblas_get_config();
  f.blas = "OpenBLAS " + cfg.substr(0, cfg.find(' ', 9)) + " (" + std::to_string(openblas_get_num_threads()) + " threads)";
  if (cfg.starts_with("OpenBLAS ")) f.blas = cfg;
}

void probe_nvidia(EnvFacts& f, bool libraries) {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) f.cuda_visible_devices = v;
  std::string line = read_first_line("/proc/driver/nvidia/version");
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ..."
  if (auto p = line.find("Kernel Module"); p != std::string::npos) {
    std::istringstream ss(line.substr(p + 13));
    ss >> f.driver_version;
  }
  std::error_code ec;
  if (std::filesystem::is_directory("/proc/driver/nvidia/gpus", ec)) {
    f.physical_gpus = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      ++f.physical_gpus;
  } else if (!std::filesystem::exists("/proc/driver/nvidia", ec)) {
    f.physical_gpus = 0;  // no kernel module: no GPU this driver stack can see
  }

  if (void* cuda = open_lib({"libcuda.so.1", "libcuda.so"})) {
    f.driver_found = true;
    using IntFn = int (*)(int*);
    using InitFn = int (*)(unsigned);
    using ErrFn = int (*)(int, const char**);
    auto cu_init = sym<InitFn>(cuda, "cuInit");
    auto cu_ver = sym<IntFn>(cuda, "cuDriverGetVersion");
    auto cu_count = sym<IntFn>(cuda, "cuDeviceGetCount");
    auto cu_get = sym<int (*)(int*, int)>(cuda, "cuDeviceGet");
    auto cu_name = sym<int (*)(char*, int, int)>(cuda, "cuDeviceGetName");
    auto cu_attr = sym<int (*)(int*, int, int)>(cuda, "cuDeviceGetAttribute");
    auto cu_mem = sym<int (*)(size_t*, int)>(cuda, "cuDeviceTotalMem_v2");
    auto cu_err = sym<ErrFn>(cuda, "cuGetErrorName");
    int v = 0;
    if (cu_ver && cu_ver(&v) == 0 && v > 0) f.driver_cuda = Version::from_cuda_int(v);
    int rc = cu_init ? cu_init(0) : -1;
    if (rc != 0) {
      const char* name = nullptr;
      if (cu_err) cu_err(rc, &name);
      // CUDA_ERROR_NO_DEVICE (100) is reported as "no device", not as a broken driver.
      if (rc != 100) f.driver_error = std::string("cuInit failed: ") + (name ? name : std::to_string(rc));
    } else if (cu_count && cu_get) {
      int n = 0;
      if (cu_count(&n) == 0)
        for (int i = 0; i < n; ++i) {
          int dev = 0;
          if (cu_get(&dev, i) != 0) continue;
          GpuInfo g;
          g.index = i;
          char buf[256] = {};
          if (cu_name) cu_name(buf, sizeof buf - 1, dev);
          g.name = buf;
          if (cu_attr) cu_attr(&g.cc_major, 75, dev), cu_attr(&g.cc_minor, 76, dev);
          size_t mem = 0;
          if (cu_mem && cu_mem(&mem, dev) == 0) g.total_memory = mem;
          f.gpus.push_back(g);
        }
    }
  } else {
    f.driver_error = "libcuda.so.1 missing";
  }

  // The libraries are only opened when asked: opening libcublas maps libcublasLt, ~150 MB of
  // resident memory for the rest of the process (a training run's report needs the driver only).
  if (!libraries) return;
  if (void* rt = open_lib({"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"})) {
    int v = 0;
    if (auto fn = sym<int (*)(int*)>(rt, "cudaRuntimeGetVersion"); fn && fn(&v) == 0 && v > 0)
      f.cuda_runtime = Version::from_cuda_int(v);
  }
  if (void* dnn = open_lib({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"})) {
    auto get = sym<size_t (*)()>(dnn, "cudnnGetVersion");
    auto cudart = sym<size_t (*)()>(dnn, "cudnnGetCudartVersion");
    if (get) {
      size_t v = get();  // 9.x: major*10000 + minor*100 + patch; 8.x: major*1000 + minor*100 + patch
      Version ver = v >= 90000 ? Version{int(v / 10000), int(v % 10000 / 100), int(v % 100)}
                               : Version{int(v / 1000), int(v % 1000 / 100), int(v % 100)};
      f.cudnn = ver;
    }
    if (cudart) f.cudnn_cuda_major = int(cudart() / 1000);
  }
  if (void* blas = open_lib({"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"})) {
    if (auto prop = sym<int (*)(int, int*)>(blas, "cublasGetProperty")) {
      Version v;
      if (prop(0, &v.major) == 0 && prop(1, &v.minor) == 0 && prop(2, &v.patch) == 0) f.cublas = v;
    }
  }
}

}  // namespace

EnvFacts probe_environment(ProbeDepth depth) {
  EnvFacts f;
  probe_build(f);
  probe_cpu(f);
  cpu_smoke_test(f);
  probe_nvidia(f, depth == ProbeDepth::Full);
  return f;
}

}  // namespace ember::env
