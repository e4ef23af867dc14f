// Counter-based random numbers: Philox 4x32-10 (Salmon et al., SC'11), as cuRAND and PyTorch use.
//
// Stream layout (the CUDA backend reproduces it bit for bit):
//   A Generator holds (seed, offset). A fill of n elements starting at generator offset `o` draws,
//   for element i, word (i % 4) of philox4x32_10(counter = {lo32(o + i/4), hi32(o + i/4), 0, 0},
//   key = {lo32(seed), hi32(seed)}). The generator's offset then advances by ceil(n / 4).
//   Every element depends only on (seed, o, i): thread count and chunking never change the numbers.
//   - uniform float32/float64 in [lo, hi): u = (x >> 8) * 2^-24, value = lo + u * (hi - lo)
//   - normal: within one counter block, words (0,1) and (2,3) form Box–Muller pairs:
//       u1 = ((x_a >> 8) + 1) * 2^-24 (in (0, 1]), u2 = (x_b >> 8) * 2^-24,
//       r = sqrt(-2 ln u1), z_a = r cos(2 pi u2), z_b = r sin(2 pi u2); value = mean + std * z
//     (computed in double, then stored in the tensor's dtype)
//   - randint in [low, high): low + x % (high - low)
//   - bernoulli(p, kept): `kept` when u < p, else 0 (1 for torch.bernoulli; dropout's 1 / (1 - p))
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace ember {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void manual_seed(uint64_t seed) { seed_ = seed; offset_ = 0; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed; offset_ = offset; }
  // Reserves ceil(n/4) counter blocks and returns the first offset (thread-safe).
  uint64_t reserve(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t start = offset_;
    offset_ += (n + 3) / 4;
    return start;
  }

 private:
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
  std::mutex mu_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);  // seeds the default generator

}  // namespace ember
