// What the CPU backend's vendor libraries report, for the layers above that may not include them
// (the autocast rules, bf16_support(), ember doctor): oneDNN's effective ISA and version, and the
// OpenBLAS this process loaded. Registered with core (core/runtime.h) by cpu::register_kernels().
#include "cpu/libraries.h"

#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <filesystem>
#include <string>

#include "cpu/gemm.h"

namespace ember::cpu {

CpuLibraryFacts library_facts() {
  CpuLibraryFacts f;
#if defined(__x86_64__)
  // What oneDNN will really run: ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA can cap it below AMX.
  const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const unsigned amx = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_amx);
  const unsigned bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  f.onednn_amx = (isa & amx) == amx;
  f.onednn_bf16 = (isa & bf16) == bf16;
#endif
  const dnnl_version_t* dv = dnnl_version();
  f.onednn_version = std::to_string(dv->major) + "." + std::to_string(dv->minor) + "." + std::to_string(dv->patch);

  f.blas_config = openblas_get_config();
  switch (blas_build()) {
    case BlasBuild::Serial: f.blas_parallel = 0; break;
    case BlasBuild::Pthreads: f.blas_parallel = 1; break;
    case BlasBuild::OpenMP: f.blas_parallel = 2; break;
    case BlasBuild::Unknown: f.blas_parallel = -1; break;
  }
  f.blas_threads = blas_threads();
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&openblas_get_config), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(info.dli_fname, ec);
    f.blas_path = ec ? std::string(info.dli_fname) : real.string();
  }
  return f;
}

}  // namespace ember::cpu
