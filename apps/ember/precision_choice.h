// --precision auto|fp32|bf16|fp16: which arithmetic a run's forward pass uses on its device, and
// why (for the banner). bf16 runs under ember::autocast (ember/autocast.h); fp32 is plain.
#pragma once

#include <string>

#include "ember/core/device.h"

namespace ember::cli {

struct PrecisionChoice {
  std::string name;  // "fp32" or "bf16"
  std::string why;   // the banner's reason ("" for plain fp32 on a device without fast bf16)
};

// `auto`: bf16 where the device does it fast (a CPU with AMX-BF16 or AVX512-BF16), else fp32.
// `bf16` on a device without fast bf16, and `fp16` (a GPU mode with loss scaling that ember's CUDA
// backend does not have yet), are refused with the reason (UsageError), never emulated slowly.
PrecisionChoice choose_precision(const std::string& flag, Device device);

}  // namespace ember::cli
