// Whole-file reading for the dataset readers (through io::read_user_file: regular files only, capped),
// with gzip detected by content (1f 8b) and decompressed by zlib in one pass over the bytes already
// in memory, into a buffer that grows with the output and stops where the format's header says.
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <new>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"

namespace ember::data {
namespace internal {

void throw_data_error(const std::string& msg, const std::string& hint) { throw DataError(msg, hint); }
void throw_io_error(const std::string& msg, const std::string& hint) { throw IOError(msg, hint); }
void throw_value_error(const std::string& msg, const std::string& hint) { throw ValueError(msg, hint); }

std::string hex_bytes(std::span<const uint8_t> bytes, size_t max_count) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < std::min(bytes.size(), max_count); ++i) {
    if (i) s += ' ';
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

namespace {

// Ends the inflate stream on every exit path, including throws.
struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};

// The next output buffer size: doubled, and at least twice the compressed size (a typical dataset
// file decompresses to 1-2x), so a normal file needs one or two resizes; never past the limit. Only
// data that really arrived makes the buffer grow, so a truncated file costs what it holds.
size_t grown_size(size_t current, size_t compressed, uint64_t limit) {
  const uint64_t want = std::max<uint64_t>(uint64_t{current} * 2, uint64_t{compressed} * 2);
  return static_cast<size_t>(std::min(want, limit));
}

constexpr size_t kFirstChunk = 64 * 1024;  // enough for any header; decided on before growing

}  // namespace

std::vector<uint8_t> gunzip(std::span<const uint8_t> in, const std::string& name, uint64_t max_output,
                            const SizePromiseFn& promise) {
  z_stream zs{};
  if (int rc = inflateInit2(&zs, 16 + MAX_WBITS); rc != Z_OK) {
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    throw InternalError(detail::cat("inflateInit2 failed: ", rc));
  }
  InflateGuard guard{&zs};

  uint64_t limit = max_output;
  std::string promised_by;  // non-empty once the header's promise is the limit
  bool decided = !promise;
  std::vector<uint8_t> out(static_cast<size_t>(std::min<uint64_t>(kFirstChunk, limit)));
  size_t used = 0;
  size_t member_start = 0;
  zs.next_in = const_cast<Bytef*>(in.data());
  for (;;) {
    const size_t pos = static_cast<size_t>(zs.next_in - in.data());
    if (used == out.size() && out.size() < limit) out.resize(grown_size(out.size(), in.size(), limit));
    // zlib counts in 32-bit uInt: feed huge buffers in slices.
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - pos, UINT_MAX));
    zs.next_out = out.data() + used;
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, UINT_MAX));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    used = static_cast<size_t>(zs.next_out - out.data());
    const size_t now = static_cast<size_t>(zs.next_in - in.data());
    if (!decided && used > 0 && (rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR)) {
      SizePromise p = promise(std::span<const uint8_t>(out.data(), used));
      if (p.status == SizePromise::Status::not_this_format) {
        out.resize(used);
        return out;
      }
      if (p.status == SizePromise::Status::known) {
        decided = true;
        if (p.bytes <= limit) {
          limit = p.bytes;
          promised_by = p.source;
        }
        if (used > limit) {
          throw_data_error(detail::cat(name, ": the decompressed data goes on past the ", limit, " bytes that ",
                                       promised_by, " promises (", used, " bytes or more)"),
                           kRedownloadHint);
        }
        if (out.size() > limit) out.resize(static_cast<size_t>(limit));
      }
    }
    switch (rc) {
      case Z_OK:
        continue;
      case Z_STREAM_END:
        if (now == in.size()) {
          out.resize(used);
          return out;
        }
        if (!is_gzip(in.subspan(now))) {
          throw_data_error(detail::cat(name, ": ", in.size() - now, " trailing bytes at byte offset ", now,
                                       " after the gzip member that starts at byte ", member_start,
                                       " are not another gzip member (expected 1f 8b, found ",
                                       hex_bytes(in.subspan(now), 2), ")"),
                           kRedownloadHint);
        }
        member_start = now;
        if (inflateReset(&zs) != Z_OK) throw InternalError("inflateReset failed");
        continue;
      case Z_BUF_ERROR:  // no progress possible: out of output room with input left, or out of input
        if (zs.avail_out == 0 && now < in.size() && !promised_by.empty()) {
          throw_data_error(detail::cat(name, ": the decompressed data goes on past the ", limit, " bytes that ",
                                       promised_by, " promises (more data at compressed byte offset ", now, ")"),
                           kRedownloadHint);
        }
        if (zs.avail_out == 0 && now < in.size()) {
          throw_data_error(detail::cat(name, ": decompressed data exceeds the limit of ", format_bytes(limit),
                                       " (", limit, " bytes); refusing to continue at compressed byte offset ",
                                       now),
                           "this is not a dataset file ember can read, or it was tampered with");
        }
        throw_data_error(detail::cat(name, ": truncated gzip data: the file ends at byte ", in.size(),
                                     " inside the gzip member that starts at byte ", member_start, " (", used,
                                     " bytes decompressed so far, expected more compressed data)"),
                         kRedownloadHint);
      case Z_MEM_ERROR:
        throw std::bad_alloc();
      case Z_DATA_ERROR:
      case Z_NEED_DICT:
      default: {
        std::string what = zs.msg ? zs.msg : "invalid data";
        if (what == "incorrect data check") what += " (CRC-32 of the decompressed data does not match the trailer)";
        if (what == "incorrect length check") what += " (decompressed size does not match the trailer)";
        throw_data_error(detail::cat(name, ": corrupt gzip data in the member that starts at byte ", member_start,
                                     ", detected near compressed byte offset ", now, ": ", what),
                         kRedownloadHint);
      }
    }
  }
}

FileBytes read_file(const std::filesystem::path& path, bool gunzip_if_gzip, const SizePromiseFn& promise) {
  const std::string name = path.string();
  io::UserFileKind kind = io::kDatasetFile;
  if (name.find("/usr/share/datasets/fashion-mnist") != std::string::npos)
    kind.missing_hint = "install the Debian package dataset-fashion-mnist (apt install dataset-fashion-mnist)";
  std::vector<uint8_t> buf = io::read_user_file(path, kind);
  FileBytes result;
  if (gunzip_if_gzip && is_gzip(buf)) {
    result.data = gunzip(buf, name, kMaxGunzipBytes, promise);
    result.was_gzip = true;
  } else {
    result.data = std::move(buf);
  }
  return result;
}

}  // namespace internal

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path, bool gunzip_if_gzip) {
  return internal::read_file(path, gunzip_if_gzip).data;
}

}  // namespace ember::data
