// CUDA_VISIBLE_DEVICES parsing (rules in visible_devices.h). Pure: reads no environment itself.
#include "core/visible_devices.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace ember {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
bool is_uuid(std::string_view s) {
  return (s.starts_with("GPU-") || s.starts_with("MIG-")) && s.size() > 4;
}
}  // namespace

VisibleDevices parse_visible_devices(const std::optional<std::string>& value) {
  VisibleDevices r;
  if (!value) return r;
  r.all = false;
  std::string_view rest = *value;
  if (trim(rest).empty()) return r;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    if (is_uuid(entry)) {
      if (!r.ordinals.empty()) { r.stopped_at = std::string(entry); break; }
      r.uuids.emplace_back(entry);
    } else {
      int idx = -1;
      auto [p, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), idx);
      bool ok = !entry.empty() && ec == std::errc() && p == entry.data() + entry.size() && idx >= 0 &&
                r.uuids.empty() && std::find(r.ordinals.begin(), r.ordinals.end(), idx) == r.ordinals.end();
      if (!ok) { r.stopped_at = std::string(entry); break; }
      r.ordinals.push_back(idx);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return r;
}

std::vector<int> visible_device_ordinals(const std::optional<std::string>& value) {
  return parse_visible_devices(value).ordinals;
}

}  // namespace ember
