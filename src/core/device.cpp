// Device parsing and printing; Device::best() asks the CUDA backend (when built) for a usable GPU.
#include "ember/core/device.h"

#include <charconv>

#include "ember/core/error.h"
#include "core/runtime.h"

namespace ember {

Device Device::parse(std::string_view s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.starts_with("cuda:")) {
    std::string_view num = s.substr(5);
    int idx = -1;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
    if (ec == std::errc() && p == num.data() + num.size() && idx >= 0 && !num.empty())
      return Device::cuda(idx);
  }
  throw ValueError(detail::cat("invalid device '", s, "'"),
                   "use 'cpu', 'cuda' or 'cuda:N' with N a device index (0, 1, ...)");
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device Device::best() {
  return cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu();
}

}  // namespace ember
