// The photo cache's reader checks; see photo_cache_format.h.
#include "data/photo_cache_format.h"

#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/io/sha256.h"

namespace ember::data {
namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw DataError(name + ": " + what, "write it again with `ember data cache FOLDER -o " + name + "`");
}

}  // namespace

// SHA-256 as raw bytes from its hex form.
std::vector<uint8_t> sha256_raw(std::span<const uint8_t> bytes) {
  const std::string hex = io::sha256_hex(bytes);
  std::vector<uint8_t> out(32);
  for (size_t i = 0; i < 32; ++i) out[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

// Every check of the layout, on the whole file's bytes.
PhotoCacheIndex parse_photo_cache(std::span<const uint8_t> b, const std::string& name) {
  if (b.size() < 8 || std::memcmp(b.data(), kMagic, 8) != 0)
    throw DataError(name + " is not an ember photo cache (it does not start with \"EMBDSET1\")",
                    "pass a file written by `ember data cache`, or the folder of photos itself");
  if (b.size() < kHeader + kFooter) bad(name, "truncated: " + std::to_string(b.size()) + " bytes, less than a header and footer");
  const uint32_t version = get_u32(b.data() + 8);
  if (version != kVersion)
    throw DataError(name + ": cache format version " + std::to_string(version) + ", this ember reads version 1",
                    "write it again with this ember's `ember data cache`");
  const uint8_t* foot = b.data() + b.size() - kFooter;
  if (std::memcmp(foot, kEndMagic, 8) != 0)
    bad(name, "truncated or unfinished (no end marker; an interrupted `ember data cache` leaves a .partial file, "
              "which a rerun completes)");
  const uint64_t count = get_u64(b.data() + 16), data_off = get_u64(b.data() + 24), index_off = get_u64(b.data() + 32),
                 meta_off = get_u64(b.data() + 40), meta_size = get_u64(b.data() + 48);
  const uint64_t body = b.size() - kFooter;
  if (data_off != kHeader || index_off < data_off || index_off > body || count > (body - index_off) / kEntry ||
      index_off + count * kEntry != meta_off || meta_off > body || meta_size != body - meta_off)
    bad(name, "its header's offsets do not fit the file (" + std::to_string(b.size()) + " bytes)");
  const std::vector<uint8_t> sum = sha256_raw(b.subspan(0, body));
  if (std::memcmp(sum.data(), foot + 8, 32) != 0) bad(name, "the checksum does not match: the file is damaged");
  PhotoCacheIndex p;
  const auto meta = nlohmann::json::parse(b.begin() + std::ptrdiff_t(meta_off), b.begin() + std::ptrdiff_t(body),
                                          nullptr, false);
  if (!meta.is_object() || !meta.contains("classes") || !meta["classes"].is_array())
    bad(name, "its metadata is not the JSON object a cache holds");
  for (const auto& c : meta["classes"]) {
    if (!c.is_string()) bad(name, "a class name in its metadata is not a string");
    p.classes.push_back(c.get<std::string>());
  }
  const auto side = meta.find("max_side");  // value() would throw a json type_error on a string
  p.max_side = side != meta.end() && side->is_number_integer() ? side->get<int64_t>() : 0;
  if (p.classes.empty()) bad(name, "it names no classes");
  p.entries.reserve(size_t(count));
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = b.data() + index_off + i * kEntry;
    const uint64_t off = get_u64(e), size = get_u32(e + 8), label = get_u32(e + 12), w = get_u32(e + 16),
                   h = get_u32(e + 20), enc = get_u32(e + 24), source_channels = get_u32(e + 28);
    if (off < data_off || off > index_off || size > index_off - off || label >= p.classes.size() || enc > 1 ||
        w == 0 || h == 0 || (enc == 1 && uint64_t(size) != w * h * 3))
      bad(name, "index entry " + std::to_string(i) + " does not fit its data region");
    p.entries.push_back({off, size, label, w, h, enc, source_channels == 1 || source_channels == 3 ? source_channels : 0});
  }
  return p;
}

}  // namespace ember::data
