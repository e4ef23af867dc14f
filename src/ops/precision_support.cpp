// bf16_support(): does this device run bfloat16 matrix work natively, and fast? On x86-64 from cpuid
// (vendor, AMX-BF16, AVX512-BF16), XGETBV (the OS saves the AVX-512 and AMX tile state) and oneDNN's
// effective ISA; CUDA from the GPU's compute capability (bf16 tensor cores from sm_80, fp16 from
// sm_70). `native` allows `--precision bf16`; `fast` makes `--precision auto` pick it.
#include <string>

#include "ember/autocast.h"
#include "backends/runtime.h"
#include "ember/core/tensor.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ember {

namespace {

#if defined(__x86_64__)
std::string cpu_brand() {
  unsigned regs[12] = {};
  unsigned max = __get_cpuid_max(0x80000000u, nullptr);
  if (max < 0x80000004u) return "unknown CPU";
  for (unsigned i = 0; i < 3; ++i) __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  std::string s(reinterpret_cast<const char*>(regs), sizeof regs);
  s = s.c_str();
  const size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "unknown CPU" : s.substr(b);
}
uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}
PrecisionSupport cpu_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return {false, "the CPU reports no extended features (cpuid leaf 7)"};
  CpuBf16Facts f;
  __get_cpuid(0, &a, &b, &c, &d);
  f.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  __get_cpuid(1, &a, &b, &c, &d);
  const bool osxsave = c & (1u << 27);
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  const bool avx512f = b & (1u << 16), amx_tile = d & (1u << 24);
  f.amx_bf16 = (d & (1u << 22)) && amx_tile;
  __get_cpuid_count(7, 1, &a, &b, &c, &d);
  const bool avx512_bf16 = a & (1u << 5);
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;            // SSE, AVX, opmask, ZMM state
  f.os_amx = (xcr0 & (3u << 17)) == (3u << 17);             // XTILECFG, XTILEDATA
  f.avx512 = avx512f && os_avx512;
  f.avx512_bf16 = avx512_bf16 && f.avx512;
  f.amx_bf16 = f.amx_bf16 && f.avx512;
  // What oneDNN will really run (ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA can cap it below AMX), as
  // the CPU backend reports it.
  const CpuLibraryFacts libs = cpu_library_facts();
  f.onednn_amx = libs.onednn_amx;
  f.onednn_bf16 = libs.onednn_bf16;
  f.cpu = cpu_brand();
  return cpu_bf16_support(f);
}
#endif

std::string cuda_unusable(Device device) {
  const std::string why = cuda_unavailable_reason();
  return device.str() + " is not available: " +
         (why.empty() ? "this process sees " + std::to_string(cuda_device_count()) + " CUDA device(s)" : why);
}

}  // namespace

PrecisionSupport cpu_bf16_support(const CpuBf16Facts& f) {
  const std::string& cpu = f.cpu;
  if (f.amx_bf16 && f.os_amx && f.onednn_amx)
    return {true, "AMX-BF16 on " + cpu + " (oneDNN's AMX bf16 kernels)", true};
  // bf16 without AMX: oneDNN's avx512_core_bf16 kernels. Measured on Zen 5 (AMD): an inner product at
  // 1.8x its float32 (the project's hardware notes, 2026-11-29). Measured on this project's Intel Xeon with
  // oneDNN capped to that ISA: training 0.74-0.85x and inference 0.53-0.73x of float32 (mlp, lenet5,
  // mnistnet; docs/benchmarks.md), so auto keeps float32 on Intel.
  std::string without_amx = !f.amx_bf16 ? ""
                            : !f.os_amx ? " (its AMX-BF16 is unusable: the OS does not enable the AMX tile state, XCR0)"
                                        : " (its AMX is not used: oneDNN is capped below it by ONEDNN_MAX_CPU_ISA or "
                                          "DNNL_MAX_CPU_ISA)";
  // Capped below avx512_core_bf16 (ONEDNN_MAX_CPU_ISA=AVX2, AVX512_CORE, ...), oneDNN runs no bf16
  // instruction: its bf16 primitives emulate or are missing (ember then runs im2col on rounded values).
  if ((f.avx512_bf16 || f.amx_bf16) && !f.onednn_bf16)
    return {false, cpu + " has " + (f.amx_bf16 ? "AMX-BF16 and " : "") +
                       "AVX512-BF16, but oneDNN is capped below avx512_core_bf16 (ONEDNN_MAX_CPU_ISA or "
                       "DNNL_MAX_CPU_ISA): bfloat16 would be emulated, slower than float32"};
  if (f.avx512_bf16 && f.amd)
    return {true, "AVX512-BF16 on " + cpu + " (oneDNN's avx512_core_bf16 kernels)", true};
  if (f.avx512_bf16)
    return {false,
            "AVX512-BF16 without AMX on " + cpu + without_amx +
                ": oneDNN's avx512_core_bf16 kernels trained at 0.74-0.85x of float32 on an Intel CPU, so auto "
                "keeps fp32 (--precision bf16 runs it)",
            true};
  if (f.amx_bf16 && !f.os_amx)
    return {false, cpu + " has AMX-BF16 but the OS does not enable the AMX tile state (XCR0)"};
  if (f.avx512)
    return {false, cpu + " has AVX-512 but neither AVX512-BF16 nor AMX-BF16: bfloat16 would be emulated, "
                   "slower than float32"};
  return {false, cpu + " has neither AVX512-BF16 nor AMX-BF16: bfloat16 would be emulated, slower than float32"};
}

PrecisionSupport bf16_support(Device device) {
  if (device.is_cpu()) {
#if defined(__x86_64__)
    return cpu_bf16();
#else
    return {false, "bfloat16 detection is written for x86-64 CPUs only"};
#endif
  }
  if (device.is_cuda()) {
    const CudaDeviceArch a = cuda_device_arch(device.index);
    if (a.major == 0) return {false, cuda_unusable(device)};
    return cuda_bf16_support(a.major, a.minor, a.name);
  }
  return {false, "no bfloat16 kernels for " + device.str()};
}

PrecisionSupport fp16_support(Device device) {
  if (device.is_cuda()) {
    const CudaDeviceArch a = cuda_device_arch(device.index);
    if (a.major == 0) return {false, cuda_unusable(device)};
    return cuda_fp16_support(a.major, a.minor, a.name);
  }
  return {false, "float16 is a GPU mode (tensor cores with loss scaling); " + device.str() +
                     " has no fast float16 kernels in ember"};
}

PrecisionSupport cuda_bf16_support(int major, int minor, const std::string& gpu) {
  const std::string sm = "sm_" + std::to_string(major) + std::to_string(minor) + " (" + gpu + ")";
  if (major >= 8) return {true, sm + ": bf16 tensor cores (cuBLAS and cuDNN, float32 accumulation)", true};
  return {false, sm + " has no bfloat16 tensor cores (they start with sm_80, Ampere)"};
}
PrecisionSupport cuda_fp16_support(int major, int minor, const std::string& gpu) {
  const std::string sm = "sm_" + std::to_string(major) + std::to_string(minor) + " (" + gpu + ")";
  if (major >= 7) return {true, sm + ": fp16 tensor cores (cuBLAS and cuDNN, float32 accumulation)", true};
  return {false, sm + " has no float16 tensor cores (they start with sm_70, Volta)"};
}

}  // namespace ember
