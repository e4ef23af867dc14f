// Device choice (device_choice.h): "auto" and explicit devices, with the reason the banner prints,
// the devices a benchmark compares, and the compute threads of a run.
#include "ember/train/device_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "ember/core/threads.h"
#include "ember/cuda.h"
#include "ember/ops.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::train {

DeviceChoice decide_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag) {
  const int n = cuda::device_count();
  const std::string reason = n ? std::string() : cuda::unavailable_reason();
  if (spec == "auto") {
    if (n > 0) return {Device::cuda(0), fmt::format("best device ({} CUDA device{})", n, n > 1 ? "s" : ""), false, ""};
    if (require_gpu)
      throw DeviceError("--require-gpu: no usable CUDA device: " + reason, "run `ember doctor` to see what to fix");
    return {Device::cpu(), reason, false, ""};  // auto's choice, not a fallback: the CPU's rules apply
  }
  Device d;
  try {
    d = Device::parse(spec);
  } catch (const ValueError& e) {
    throw SettingError(fmt::format("--device: invalid device '{}'", spec), "use auto, cpu, cuda or cuda:N");
  }
  if (d.is_cpu()) {
    if (require_gpu) throw SettingError("--require-gpu conflicts with --device cpu", "drop one of the two flags");
    return {d, "requested with --device cpu", false, ""};
  }
  if (d.index < n) return {d, "requested with --device " + spec, false, ""};
  if (spec.find(':') != std::string::npos && d.index > 0)
    throw DeviceError(fmt::format("--device {}: there is no CUDA device {} ({})", spec, d.index,
                                  n ? fmt::format("this machine has {}: cuda:0..cuda:{}", n, n - 1) : reason),
                      n ? fmt::format("use an index below {}, or --device auto", n) : "use --device cpu or auto; `ember doctor` shows what is missing");
  if (require_gpu)
    throw DeviceError(fmt::format("--device {} with --require-gpu: no usable CUDA device: {}", spec, reason),
                      "run `ember doctor` to see what to fix, or drop --require-gpu to fall back to the CPU");
  return {Device::cpu(), "fallback: " + reason, /*fell_back_to_cpu=*/true,
          fmt::format("--device {}: no usable CUDA device ({}); falling back to the CPU{}", spec, reason,
                      has_require_gpu_flag ? " (add --require-gpu to make this an error)"
                                           : "; run `ember doctor` to see what is missing")};
}

DeviceChoice choose_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag) {
  DeviceChoice c = decide_device(spec, require_gpu, has_require_gpu_flag);
  if (!c.warning.empty()) warn(c.warning);
  return c;
}

std::vector<Device> devices_to_compare(const std::string& spec) {
  if (spec == "all") {
    std::vector<Device> devices{Device::cpu()};
    for (int g = 0; g < cuda::device_count(); ++g) devices.push_back(Device::cuda(g));
    return devices;
  }
  const DeviceChoice c = decide_device(spec, /*require_gpu=*/false);
  if (c.warning.empty()) return {c.device};
  const int n = cuda::device_count();
  throw DeviceError(fmt::format("no CUDA device {}: {}", Device::parse(spec).str(),
                                n ? fmt::format("this machine has {}", n) : cuda::unavailable_reason()),
                    "use --device cpu, or run `ember doctor`");
}


void warn_if_oversubscribed(int threads) {
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0 && threads > int(hw))
    warn(fmt::format("--threads {} is more than this machine's {}: compute will be slower than with --threads {}",
                     threads, plural(hw, "hardware thread"), hw));
}

void set_compute_threads(int threads, int workers) {
  const int compute = threads > 0 ? threads : get_num_threads();
  std::string what = threads > 0 ? fmt::format("--threads {}", threads) : plural(compute, "compute thread");
  if (workers > 0) what += fmt::format(" and --workers {}", workers);
  const int more = compute - 1 + std::max(workers, 0);  // OpenMP's workers beside this thread, the loader's
  if (workers > 0 || threads > 1) what += fmt::format(" ({} beside this one)", plural(more, "thread"));
  check_can_start_threads(more, what, workers > 0 ? "pass a smaller --threads or --workers" : "pass a smaller --threads");
  if (threads > 0) set_num_threads(threads), warn_if_oversubscribed(threads);
}

}  // namespace ember::train
