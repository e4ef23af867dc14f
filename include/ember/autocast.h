// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16) and torch.autocast("cuda"):
// inside an ember::autocast scope the ops of the policy table below that are safe and fast in half
// (conv2d, linear, matmul) multiply in the autocast dtype and accumulate in float32; the others
// stay float32. One table for every device: the CPU lowers to bfloat16 (oneDNN), CUDA to bfloat16
// or float16 (cuBLAS / cuDNN on the tensor cores; float16 training needs a loss scaler,
// ember/optim/loss_scaler.h). Parameters stay float32
// (the "master weights"): each op casts its float32 weight on the way in, once per scope (a cast
// cache like PyTorch's), and every gradient reaches the parameters in float32.
//
//   { ember::autocast ac;                        // CPU, bfloat16
//     loss = F::cross_entropy(model->forward(x), y); }
//   loss.backward();                              // the backward runs in the forward's precision
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "ember/core/device.h"
#include "ember/core/dtype.h"

namespace ember {

// What autocast does with an op's floating inputs.
enum class CastPolicy : uint8_t {
  Lower,    // multiply in the autocast dtype (bfloat16, float16), accumulate and return float32
  Float32,  // run in float32: half inputs are converted up first
};

// The ops autocast knows, each with one row in autocast_policy().
enum class AutocastOp : uint8_t {
  Conv2d, Linear, Matmul,
  Softmax, LogSoftmax, CrossEntropy, NllLoss, MseLoss, BatchNorm, Sum, Mean,
};

struct AutocastRule {
  AutocastOp op;
  std::string_view name;  // the ember function
  CastPolicy policy;
  std::string_view why;
};

// The mixed-precision policy: one row per op, the only place it is written.
std::span<const AutocastRule> autocast_policy();
const AutocastRule& autocast_rule(AutocastOp op);

// RAII, thread-local, nestable: autocast ac(DeviceType::CPU, DType::BFloat16, enabled). Leaving
// the outermost enabled scope empties the weight cast cache. Throws NotImplementedError for a
// combination ember has no half kernels for (float16 on the CPU); CUDA takes bfloat16 and float16.
class autocast {
 public:
  explicit autocast(DeviceType device = DeviceType::CPU, DType dtype = DType::BFloat16, bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

  // Whether autocast is on for this thread and device type, and with which dtype.
  static bool is_enabled(DeviceType device = DeviceType::CPU);
  static DType dtype(DeviceType device = DeviceType::CPU);
  // Entries in this thread's weight cast cache (for tests: one per parameter per scope).
  static size_t cache_size();

 private:
  DeviceType device_;
  bool enabled_ = false;
  bool prev_enabled_;
  DType prev_dtype_;
};

// Does this device run bfloat16 natively, and fast? `native`: bf16 instructions in hardware (CPU:
// AMX-BF16 or AVX512-BF16 with the OS saving their state; CUDA: sm_80+), so `--precision bf16` runs
// (without them it is refused, never emulated). `fast`: bf16 is measured faster than float32 there,
// so `--precision auto` picks it: AMX (when oneDNN may use it), AMD's AVX512-BF16 (Zen 4/5), a GPU of
// sm_80+ — not an Intel CPU's AVX512-BF16 without AMX (training ran at 0.74-0.85x of float32 on
// oneDNN 2.6's avx512_core_bf16 kernels, docs/benchmarks.md). `reason` says which, for the banner.
struct PrecisionSupport {
  bool fast = false;
  std::string reason;
  bool native = false;
};
PrecisionSupport bf16_support(Device device);
// The CPU answer from its facts (what bf16_support reads from cpuid, XGETBV and oneDNN), for tests.
struct CpuBf16Facts {
  std::string cpu;          // the brand string
  bool amd = false;         // vendor AuthenticAMD
  bool avx512_bf16 = false; // AVX512-BF16 with AVX-512 state saved by the OS
  bool amx_bf16 = false;    // AMX-BF16 in cpuid
  bool os_amx = false;      // the OS saves the AMX tile state
  bool onednn_amx = true;   // oneDNN's effective ISA includes AMX (ONEDNN_MAX_CPU_ISA may cap it)
  bool avx512 = false;      // AVX-512F with its state saved
  bool onednn_bf16 = true;  // oneDNN's effective ISA includes avx512_core_bf16 (ONEDNN_MAX_CPU_ISA may cap it)
};
PrecisionSupport cpu_bf16_support(const CpuBf16Facts& f);
// Does this device run float16 fast? CUDA devices of sm_70 or newer (float16 tensor cores); never
// the CPU (float16 is a GPU mode, with loss scaling).
PrecisionSupport fp16_support(Device device);
// The CUDA answers for a GPU of compute capability major.minor named `gpu` (what bf16_support and
// fp16_support ask the runtime for): bf16 from sm_80, fp16 from sm_70.
PrecisionSupport cuda_bf16_support(int major, int minor, const std::string& gpu);
PrecisionSupport cuda_fp16_support(int major, int minor, const std::string& gpu);

}  // namespace ember
