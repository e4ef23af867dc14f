// Central-directory reader for torch.save's zip archives. Why by hand and not libzip/minizip: torch
// stores every entry uncompressed (PyTorchStreamWriter aligns each entry's data to 64 bytes so it
// can be memory-mapped, which rules out compression), so reading one is locating the end record,
// walking the central directory and bounds-checking each local header: ~150 lines with no
// decompressor (no zip-bomb surface), no new dependency for the CI images and the fuzz build, and
// every check in one place the fuzzer reaches. A compressed entry is refused with what to do.
// The writer (zip_write_stored) is the same format the other way: stored entries, 64-byte aligned.
#include "zip_stored.h"

#include <array>

#include "ember/io/pth.h"

namespace ember::io {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kEnd64LocatorSig = 0x07064b50;
constexpr size_t kEndSize = 22, kCentralSize = 46, kLocalSize = 30, kLocatorSize = 20, kEnd64Size = 56;

template <class... Args>
[[noreturn]] void fail(const std::string& source, const Args&... args) {
  throw PthError(PthErrorKind::Archive, detail::cat(source, ": not a readable torch.save archive: ", args...),
                 std::string("the file is damaged (copy it again) or not a torch.save archive; ") + kPthStateDictHint);
}

uint64_t le(std::span<const uint8_t> b, uint64_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}

// [at, at + n) lies inside a buffer of `size` bytes (overflow-safe).
bool inside(uint64_t at, uint64_t n, uint64_t size) { return at <= size && n <= size - at; }

struct EndRecord {
  uint64_t entries = 0, cd_size = 0, cd_offset = 0;
};

EndRecord find_end(std::span<const uint8_t> b, const std::string& source) {
  if (b.size() < kEndSize) fail(source, "file of ", b.size(), " bytes is too short for a zip archive (truncated?)");
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes: scan back for it.
  const uint64_t lowest = b.size() >= kEndSize + 0xffff ? b.size() - kEndSize - 0xffff : 0;
  uint64_t at = b.size() - kEndSize;
  for (;; --at) {
    if (le(b, at, 4) == kEndSig && at + kEndSize + le(b, at + 20, 2) == b.size()) break;
    if (at == lowest) fail(source, "no end-of-central-directory record (the archive is truncated)");
  }
  EndRecord r{le(b, at + 10, 2), le(b, at + 12, 4), le(b, at + 16, 4)};
  if (le(b, at + 4, 2) != 0 || le(b, at + 6, 2) != 0) fail(source, "multi-disk archives are not supported");
  // Zip64 (torch's writer asks miniz for it): a locator just before the end record points at the
  // zip64 end record, whose 64-bit fields replace the 0xffff/0xffffffff placeholders.
  if (at >= kLocatorSize && le(b, at - kLocatorSize, 4) == kEnd64LocatorSig) {
    const uint64_t e64 = le(b, at - kLocatorSize + 8, 8);
    if (!inside(e64, kEnd64Size, at - kLocatorSize) || le(b, e64, 4) != kEnd64Sig)
      fail(source, "the zip64 end record at offset ", e64, " is missing or out of bounds");
    r = {le(b, e64 + 32, 8), le(b, e64 + 40, 8), le(b, e64 + 48, 8)};
  }
  if (!inside(r.cd_offset, r.cd_size, b.size()))
    fail(source, "central directory [", r.cd_offset, ", +", r.cd_size, ") runs past the end of the ", b.size(),
         "-byte file (truncated?)");
  if (r.entries > r.cd_size / kCentralSize)
    fail(source, r.entries, " entries cannot fit a ", r.cd_size, "-byte central directory");
  return r;
}

}  // namespace

std::map<std::string, ZipEntry> zip_list(std::span<const uint8_t> b, const std::string& source) {
  const EndRecord end = find_end(b, source);
  std::map<std::string, ZipEntry> out;
  uint64_t at = end.cd_offset;
  const uint64_t cd_end = end.cd_offset + end.cd_size;
  for (uint64_t i = 0; i < end.entries; ++i) {
    if (!inside(at, kCentralSize, cd_end) || le(b, at, 4) != kCentralSig)
      fail(source, "central directory entry ", i, " at offset ", at, " is damaged");
    const uint64_t flags = le(b, at + 8, 2), name_len = le(b, at + 28, 2), extra_len = le(b, at + 30, 2),
                   comment_len = le(b, at + 32, 2);
    if (!inside(at + kCentralSize, name_len + extra_len + comment_len, cd_end))
      fail(source, "central directory entry ", i, " runs past the directory");
    std::string name(reinterpret_cast<const char*>(b.data() + at + kCentralSize), name_len);
    ZipEntry e;
    e.method = static_cast<uint16_t>(le(b, at + 10, 2));
    uint64_t csize = le(b, at + 20, 4), usize = le(b, at + 24, 4), local = le(b, at + 42, 4);
    // Zip64 extra field (id 1): the 64-bit values of the fields set to 0xffffffff, in this order.
    for (uint64_t x = at + kCentralSize + name_len, xe = x + extra_len; x + 4 <= xe;) {
      const uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      if (x + 4 + len > xe) fail(source, "entry '", name, "': extra field runs past its entry");
      if (id == 1) {
        uint64_t p = x + 4;
        auto take = [&](uint64_t& field) {
          if (field != 0xffffffff) return;
          if (p + 8 > x + 4 + len) fail(source, "entry '", name, "': zip64 field too short");
          field = le(b, p, 8), p += 8;
        };
        take(usize), take(csize), take(local);
      }
      x += 4 + len;
    }
    if (flags & 1) fail(source, "entry '", name, "' is encrypted");
    if (e.method == 0 && csize != usize)
      fail(source, "stored entry '", name, "' has compressed size ", csize, " != size ", usize);
    if (!inside(local, kLocalSize, b.size()) || le(b, local, 4) != kLocalSig)
      fail(source, "entry '", name, "': local header at offset ", local, " is missing (truncated?)");
    const uint64_t data = local + kLocalSize + le(b, local + 26, 2) + le(b, local + 28, 2);
    if (!inside(data, csize, b.size()))
      fail(source, "entry '", name, "' (", csize, " bytes at offset ", data, ") runs past the end of the ",
           b.size(), "-byte file (truncated?)");
    e.offset = data;
    e.size = csize;
    if (!out.emplace(std::move(name), e).second)
      fail(source, "entry '", std::string(reinterpret_cast<const char*>(b.data() + at + kCentralSize), name_len),
           "' appears twice");
    at += kCentralSize + name_len + extra_len + comment_len;
  }
  return out;
}

std::span<const uint8_t> zip_read(std::span<const uint8_t> bytes, const std::string& name, const ZipEntry& e,
                                  const std::string& source) {
  if (e.method != 0)
    throw PthError(PthErrorKind::Archive,
                   detail::cat(source, ": not a readable torch.save archive: entry '", name, "' is compressed (zip method ", e.method,
                               "); torch.save writes stored entries only"),
                   "the archive was repacked by another tool: load and save it again with torch.save");
  return bytes.subspan(e.offset, e.size);  // zip_list checked the bounds
}

namespace {
constexpr std::array<uint32_t, 256> make_crc32_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc32Table = make_crc32_table();

void put_le(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
}  // namespace

uint32_t zip_crc32(std::span<const uint8_t> data) {
  uint32_t c = 0xffffffffu;
  for (uint8_t b : data) c = kCrc32Table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::vector<uint8_t> zip_write_stored(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& entries) {
  constexpr uint64_t kAlign = 64;      // PyTorchStreamWriter's kFieldAlignment
  constexpr uint16_t kPadTag = 0x4246;  // "FB": the extra field torch pads with
  constexpr uint64_t kLimit = 0xffffffffu;
  std::vector<uint8_t> out;
  struct Written {
    uint64_t local = 0;
    uint32_t crc = 0;
    uint64_t size = 0;
  };
  std::vector<Written> written;
  for (const auto& [name, data] : entries) {
    Written w{out.size(), zip_crc32(data), data.size()};
    // The data starts after the header, the name and the extra field; pad that field to the alignment
    // (an extra field is a 4-byte tag and length, then the padding bytes).
    const uint64_t bare = out.size() + kLocalSize + name.size();
    uint64_t pad = (kAlign - (bare + 4) % kAlign) % kAlign;
    put_le(out, kLocalSig, 4);
    put_le(out, 20, 2);  // version needed: 2.0
    put_le(out, 0, 2);   // flags
    put_le(out, 0, 2);   // method: stored
    put_le(out, 0, 2);   // time
    put_le(out, 0x21, 2);  // date: 1980-01-01
    put_le(out, w.crc, 4);
    put_le(out, w.size, 4);
    put_le(out, w.size, 4);
    put_le(out, name.size(), 2);
    put_le(out, 4 + pad, 2);
    out.insert(out.end(), name.begin(), name.end());
    put_le(out, kPadTag, 2);
    put_le(out, pad, 2);
    out.insert(out.end(), size_t(pad), uint8_t('Z'));
    out.insert(out.end(), data.begin(), data.end());
    if (out.size() >= kLimit)
      throw ValueError(detail::cat("zip archive: '", name, "' ends past 4 GiB, which needs zip64 (not written)"),
                       "export a smaller model, or use the safetensors format");
    written.push_back(w);
  }
  const uint64_t cd_offset = out.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].first;
    put_le(out, kCentralSig, 4);
    put_le(out, 20, 2);  // made by
    put_le(out, 20, 2);  // needed
    put_le(out, 0, 2);
    put_le(out, 0, 2);
    put_le(out, 0, 2);
    put_le(out, 0x21, 2);
    put_le(out, written[i].crc, 4);
    put_le(out, written[i].size, 4);
    put_le(out, written[i].size, 4);
    put_le(out, name.size(), 2);
    put_le(out, 0, 2);  // extra
    put_le(out, 0, 2);  // comment
    put_le(out, 0, 2);  // disk
    put_le(out, 0, 2);  // internal attributes
    put_le(out, 0, 4);  // external attributes
    put_le(out, written[i].local, 4);
    out.insert(out.end(), name.begin(), name.end());
  }
  const uint64_t cd_size = out.size() - cd_offset;
  if (out.size() >= kLimit || entries.size() >= 0xffff)
    throw ValueError("zip archive: past 4 GiB or 65535 entries, which needs zip64 (not written)",
                     "export a smaller model, or use the safetensors format");
  put_le(out, kEndSig, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, entries.size(), 2);
  put_le(out, entries.size(), 2);
  put_le(out, cd_size, 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

}  // namespace ember::io
