// Device parsing and printing. Device::best(), which needs the backends registered to ask the CUDA
// runtime, is defined above them (src/backends/runtime.cpp).
#include "ember/core/device.h"

#include <charconv>

#include "ember/core/error.h"

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

}  // namespace ember
