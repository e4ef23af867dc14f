// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16): inside an ember::autocast scope
// the ops of the policy table below that are safe and fast in bfloat16 (conv2d, linear, matmul)
// multiply in bfloat16 and accumulate in float32; the others stay float32. Parameters stay float32
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
  Lower,    // multiply in the autocast dtype (bfloat16), accumulate and return float32
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
// combination ember has no half kernels for (float16 on the CPU, any half dtype on CUDA today).
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

// Does this device run bfloat16 fast? CPU: AMX-BF16 or AVX512-BF16 (cpuid, with the OS saving the
// AVX-512 / AMX state); CUDA: sm_80 or newer with ember's half kernels. `reason` says which
// instruction set (or what is missing), for `--precision auto` and its banner.
struct PrecisionSupport {
  bool fast = false;
  std::string reason;
};
PrecisionSupport bf16_support(Device device);

}  // namespace ember
