// Device choice for train/eval/bench: "auto" picks cuda:0 when usable, else the CPU, and says why.
#pragma once

#include <fmt/format.h>

#include <string>

#include "cli.h"
#include "ember/core/device.h"
#include "ember/cuda.h"

namespace ember::cli {

struct DeviceChoice {
  Device device;
  std::string why;  // "no NVIDIA driver found (...)", "requested with --device cpu", ...
};

// Throws UsageError for a malformed spec, DeviceError when a GPU is required or an index that
// does not exist was asked for. A plain `cuda` without a usable GPU falls back to the CPU with a
// warning unless require_gpu; has_require_gpu_flag says whether the subcommand has --require-gpu,
// so the warning suggests it only where it exists (eval and predict do not have it).
inline DeviceChoice choose_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag = true) {
  const int n = cuda::device_count();
  const std::string reason = n ? std::string() : cuda::unavailable_reason();
  if (spec == "auto") {
    if (n > 0) return {Device::cuda(0), fmt::format("best device ({} CUDA device{})", n, n > 1 ? "s" : "")};
    if (require_gpu)
      throw DeviceError("--require-gpu: no usable CUDA device: " + reason, "run `ember doctor` to see what to fix");
    return {Device::cpu(), reason};
  }
  Device d;
  try {
    d = Device::parse(spec);
  } catch (const ValueError& e) {
    throw UsageError(fmt::format("--device: invalid device '{}'", spec), "use auto, cpu, cuda or cuda:N");
  }
  if (d.is_cpu()) {
    if (require_gpu) throw UsageError("--require-gpu conflicts with --device cpu", "drop one of the two flags");
    return {d, "requested with --device cpu"};
  }
  if (d.index < n) return {d, "requested with --device " + spec};
  if (spec.find(':') != std::string::npos && d.index > 0)
    throw DeviceError(fmt::format("--device {}: there is no CUDA device {} ({})", spec, d.index,
                                  n ? fmt::format("this machine has {}: cuda:0..cuda:{}", n, n - 1) : reason),
                      n ? fmt::format("use an index below {}, or --device auto", n) : "use --device cpu or auto; `ember doctor` shows what is missing");
  if (require_gpu)
    throw DeviceError(fmt::format("--device {} with --require-gpu: no usable CUDA device: {}", spec, reason),
                      "run `ember doctor` to see what to fix, or drop --require-gpu to fall back to the CPU");
  warn(fmt::format("--device {}: no usable CUDA device ({}); falling back to the CPU{}", spec, reason,
                   has_require_gpu_flag ? " (add --require-gpu to make this an error)"
                                        : "; run `ember doctor` to see what is missing"));
  return {Device::cpu(), "fallback: " + reason};
}

}  // namespace ember::cli
