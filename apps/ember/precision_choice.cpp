// --precision: the choice between fp32 and bf16 autocast for a device (precision_choice.h).
#include "precision_choice.h"

#include <fmt/format.h>

#include "cli.h"
#include "ember/autocast.h"

namespace ember::cli {

PrecisionChoice choose_precision(const std::string& flag, Device device) {
  if (flag == "fp16")
    throw UsageError(device.is_cpu() ? "--precision fp16: float16 is a GPU mode (with loss scaling); this run is on the cpu"
                                     : "--precision fp16: ember's CUDA backend has no float16 kernels yet",
                     device.is_cpu() ? "use --precision bf16 (or auto) on a CPU with AMX-BF16/AVX512-BF16, else fp32"
                                     : "use --precision fp32");
  const PrecisionSupport bf16 = bf16_support(device);
  // ember::autocast runs bf16 on the CPU only (the CUDA backend has no bf16 kernels yet).
  const bool usable = bf16.fast && device.is_cpu();
  if (flag == "fp32")
    return {"fp32", usable ? "this device has fast bf16: --precision auto" : ""};
  if (flag == "bf16") {
    if (!usable)
      throw UsageError(fmt::format("--precision bf16: {} does not run bfloat16 fast ({})", device.str(), bf16.reason),
                       "use --precision fp32 (bf16 emulated without the hardware would be several times slower)");
    return {"bf16", "--precision bf16: " + bf16.reason};
  }
  if (usable) return {"bf16", "auto: " + bf16.reason};
  return {"fp32", "auto: " + bf16.reason};
}

}  // namespace ember::cli
