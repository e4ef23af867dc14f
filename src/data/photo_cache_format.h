// The photo cache's file format (photo_cache.h has the layout): its constants, the little-endian
// field helpers the writer and the reader share, and the reader's checks of a whole file's bytes,
// kept apart from the writer's threads and encoders so a fuzz target can link the reader alone
// (fuzz/fuzz_photo_cache.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace ember::data {

inline constexpr char kMagic[8] = {'E', 'M', 'B', 'D', 'S', 'E', 'T', '1'};
inline constexpr char kEndMagic[8] = {'E', 'M', 'B', 'D', 'S', 'E', 'N', 'D'};
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeader = 64, kEntry = 32, kFooter = 40;

inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + 8);
}
inline void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + 4);
}

// SHA-256 as its 32 raw bytes.
std::vector<uint8_t> sha256_raw(std::span<const uint8_t> bytes);

struct PhotoCacheIndex {
  // offset, size, label, width, height, encoding, the source picture's channels (1 grey, 3 colour, 0
  // unknown: a cache written before they were recorded)
  std::vector<std::array<uint64_t, 7>> entries;
  std::vector<std::string> classes;
  int64_t max_side = 0;
};

// Every check of the layout on a whole file's bytes: the magic, the version, the end marker, the
// header's offsets against the size, the checksum, the metadata, each index entry against the data
// region. Throws DataError naming `name` and what is wrong, with how to fix it.
PhotoCacheIndex parse_photo_cache(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ember::data
