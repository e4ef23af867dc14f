// The deterministic fill of tests/golden/make_golden_torchvision.py, bit for bit: every value comes
// from an integer hash of a name and an element index, so a golden file can describe a 25 M
// parameter model without storing its weights. The file holds a few hash values
// (hash/bits, hash/uniform) that test_golden_torchvision.cpp checks this against.
//
//   u(name, i) = (splitmix64(fnv1a64(name) XOR i) >> 40) / 2^23 - 1        in [-1, 1), exact in float32
//
// A state_dict entry (key, shape), computed in double and rounded to float32 once:
//   dim >= 2            u * sqrt(3 / fan_in), fan_in = shape[1] * prod(shape[2:])
//   *running_mean       0.1 u;   *running_var   1 + 0.5 u;   other 1-d *weight  1 + 0.25 u
//   other 1-d *bias     0.1 u;   *num_batches_tracked   0 (int64)
#pragma once

#include <ember/ember.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ember::test {

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// splitmix64's output function applied to x (its state after adding the golden gamma).
inline uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t hash_bits(std::string_view name, uint64_t index) { return splitmix64(fnv1a64(name) ^ index); }

inline double hash_uniform(std::string_view name, uint64_t index) {
  return double(hash_bits(name, index) >> 40) / double(1 << 23) - 1.0;
}

// (shape) float32: u(name, i) * scale + offset per element, rounded to float32 from double.
inline Tensor hashed_tensor(std::string_view name, const Shape& shape, double scale = 1.0, double offset = 0.0) {
  const int64_t n = shape_numel(shape);
  const uint64_t h = fnv1a64(name);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = float(offset + scale * (double(splitmix64(h ^ uint64_t(i)) >> 40) / double(1 << 23) - 1.0));
  return from_blob_copy(v.data(), shape, DType::Float32);
}

// The value make_golden_torchvision.py gives state_dict entry `key` (its dtype: float32, or int64 for
// num_batches_tracked).
inline Tensor hashed_state_value(const std::string& key, const Tensor& like) {
  const Shape& s = like.sizes();
  if (key.ends_with("num_batches_tracked")) return zeros(s, {.dtype = DType::Int64});
  if (s.size() >= 2) {
    int64_t fan_in = 1;
    for (size_t d = 1; d < s.size(); ++d) fan_in *= s[d];
    return hashed_tensor(key, s, std::sqrt(3.0 / double(fan_in)));
  }
  if (key.ends_with("running_mean")) return hashed_tensor(key, s, 0.1);
  if (key.ends_with("running_var")) return hashed_tensor(key, s, 0.5, 1.0);
  if (key.ends_with("weight")) return hashed_tensor(key, s, 0.25, 1.0);
  if (key.ends_with("bias")) return hashed_tensor(key, s, 0.1);
  throw std::runtime_error("hash_fill: no rule for state_dict entry '" + key + "'");
}

// Loads the hashed values into every parameter and buffer of `m` (strict: same keys).
inline void fill_hashed(nn::Module& m) {
  StateDict sd;
  for (const auto& [key, t] : m.state_dict()) sd.insert(key, hashed_state_value(key, t));
  m.load_state_dict(sd);
}

}  // namespace ember::test
