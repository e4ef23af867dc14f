// What the backends' runtimes and vendor libraries can tell the layers above them, as tables each
// backend registers with core at registration time (cpu::register_kernels, cuda::register_kernels).
// Nothing above a backend calls it or includes its vendor's headers for these answers: the layers
// above read them through src/backends/runtime.h, which registers the backends first.
#pragma once

#include <functional>
#include <string>

#include "ember/cuda.h"  // CopyBandwidth

namespace ember {

// Compute capability and name of a CUDA device (e.g. 9.0, "NVIDIA H200"); all zero / empty when the
// device is not usable.
struct CudaDeviceArch {
  int major = 0, minor = 0;
  std::string name;
  std::string uuid;  // "GPU-8932f937-…" as `nvidia-smi -L` prints it (NVML finds the device by it)
};

// The CUDA runtime's answers, registered by the CUDA backend (src/cuda/runtime.cpp). Contracts:
// src/backends/runtime.h, whose functions of the same names call these.
struct CudaRuntime {
  int (*runtime_version)() = nullptr;
  int (*device_count)() = nullptr;
  std::string (*unavailable_reason)() = nullptr;
  CudaDeviceArch (*device_arch)(int device) = nullptr;
  double (*time_ms)(int device, const std::function<void()>& fn, int reps) = nullptr;
  CopyBandwidth (*copy_bandwidth)(int device, size_t bytes, const TimingPlan& plan) = nullptr;
  void (*synchronize)(int device) = nullptr;
  int (*cudnn_version)() = nullptr;
};
void register_cuda_runtime(const CudaRuntime& runtime);
// Null unless the CUDA backend has registered (a CPU-only build never does).
const CudaRuntime* registered_cuda_runtime();

// What the CPU backend's vendor libraries report (src/cpu/libraries.cpp): oneDNN's effective ISA
// (after ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA) and version, and the OpenBLAS this process loaded.
struct CpuLibraryFacts {
  bool onednn_amx = false;   // the effective ISA includes avx512_core_amx
  bool onednn_bf16 = false;  // ... avx512_core_bf16
  std::string onednn_version;  // "2.7.3"
  std::string blas_config;     // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  int blas_parallel = -1;      // openblas_get_parallel(): 0 serial, 1 pthreads, 2 OpenMP
  int blas_threads = 0;        // openblas_get_num_threads()
  std::string blas_path;       // the loaded library file, symlinks resolved ("" when unknown)
};
using CpuLibraryQuery = CpuLibraryFacts (*)();
void register_cpu_libraries(CpuLibraryQuery query);
// Null until the CPU backend has registered.
CpuLibraryQuery registered_cpu_libraries();

}  // namespace ember
