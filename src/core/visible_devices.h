// CUDA_VISIBLE_DEVICES, parsed the way the CUDA runtime reads it, as a pure function so every build
// (with or without CUDA, with or without a GPU) can test it and explain a hidden GPU.
//
// Rules (CUDA's, as documented for CUDA_VISIBLE_DEVICES):
//   - unset: every device the driver sees is visible (all = true).
//   - a comma-separated list of entries; cuda:i is the i-th entry. Spaces around entries are ignored.
//   - an entry is a non-negative decimal ordinal ("0", "3") or a device UUID ("GPU-8932f937-…",
//     also "MIG-…" for MIG instances). UUIDs can only be mapped to devices by the driver, so they
//     are returned as strings; a list that mixes ordinals and UUIDs stops at the first entry of
//     the other kind (we do not guess an order between them).
//   - the first invalid entry ends the list, and the entries after it are ignored: "0,-1,2" -> [0],
//     "-1" -> none, "0,x" -> [0], "0,,1" -> [0]; a repeated ordinal is invalid too ("1,1" -> [1]).
//   - "" (set but empty) -> no visible device.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ember {

struct VisibleDevices {
  bool all = true;                  // the variable is unset: no restriction
  std::vector<int> ordinals;        // physical ordinals in order (when !all)
  std::vector<std::string> uuids;   // "GPU-…" / "MIG-…" entries in order (when !all)
  std::string stopped_at;           // the invalid entry that ended the list ("" if none)
  // Number of visible devices the list names (-1 when all are visible).
  int count() const { return all ? -1 : int(ordinals.size() + uuids.size()); }
};

// `value` is the variable's value, std::nullopt when unset.
VisibleDevices parse_visible_devices(const std::optional<std::string>& value);
// The ordinals only (the form most callers want): [] when nothing numeric is visible, and also
// when the variable is unset -- check parse_visible_devices(...).all for that case.
std::vector<int> visible_device_ordinals(const std::optional<std::string>& value);

}  // namespace ember
