// Device: a small value type naming where a tensor's memory lives (cpu, or cuda:N).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // always 0 for the CPU

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(t == DeviceType::CPU ? 0 : i) {}
  static constexpr Device cpu() { return Device(DeviceType::CPU); }
  static constexpr Device cuda(int i = 0) { return Device(DeviceType::CUDA, i); }
  // "cpu", "cuda", "cuda:1". Throws ValueError on anything else.
  static Device parse(std::string_view s);
  // cuda:0 when a usable GPU is present in this build, else cpu.
  static Device best();

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
};
inline std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace ember
