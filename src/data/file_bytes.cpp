// Whole-file reading for the dataset readers, with gzip detected by content (1f 8b) and
// decompressed by zlib in one pass over the bytes already in memory (the file is read once).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"

namespace ember::data {
namespace internal {

void throw_data_error(const std::string& msg, const std::string& hint) { throw DataError(msg, hint); }
void throw_io_error(const std::string& msg, const std::string& hint) { throw IOError(msg, hint); }
void throw_value_error(const std::string& msg, const std::string& hint) { throw ValueError(msg, hint); }

std::string format_bytes(uint64_t n) {
  if (n < 1024) return detail::cat(n, " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  std::ostringstream os;
  os.precision(v < 10 ? 2 : 3);
  os << v << ' ' << units[u];
  return os.str();
}

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

// A first guess at the output size so a single-member file is decompressed without regrowing:
// ISIZE (the last 4 bytes, little-endian) is the size mod 2^32 of the last member. It is only a
// hint: bounded by deflate's maximum ratio (1032:1) and the cap, since a forged header must not
// make us allocate.
size_t initial_output_guess(std::span<const uint8_t> in, uint64_t max_output) {
  uint64_t guess = 64 * 1024;
  if (in.size() >= 18) {
    const uint8_t* t = in.data() + in.size() - 4;
    uint64_t isize = uint64_t{t[0]} | uint64_t{t[1]} << 8 | uint64_t{t[2]} << 16 | uint64_t{t[3]} << 24;
    guess = std::max<uint64_t>(guess, std::min<uint64_t>(isize, uint64_t{in.size()} * 1032));
  }
  return static_cast<size_t>(std::min(guess, max_output));
}

}  // namespace

std::vector<uint8_t> gunzip(std::span<const uint8_t> in, const std::string& name, uint64_t max_output) {
  z_stream zs{};
  if (int rc = inflateInit2(&zs, 16 + MAX_WBITS); rc != Z_OK) {
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    throw InternalError(detail::cat("inflateInit2 failed: ", rc));
  }
  InflateGuard guard{&zs};

  std::vector<uint8_t> out(initial_output_guess(in, max_output));
  size_t used = 0;
  size_t member_start = 0;
  zs.next_in = const_cast<Bytef*>(in.data());
  for (;;) {
    const size_t pos = static_cast<size_t>(zs.next_in - in.data());
    if (used == out.size() && out.size() < max_output) {
      uint64_t grown = std::max<uint64_t>(uint64_t{out.size()} * 2, 64 * 1024);
      out.resize(static_cast<size_t>(std::min(grown, max_output)));
    }
    // zlib counts in 32-bit uInt: feed huge buffers in slices.
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - pos, UINT_MAX));
    zs.next_out = out.data() + used;
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, UINT_MAX));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    used = static_cast<size_t>(zs.next_out - out.data());
    const size_t now = static_cast<size_t>(zs.next_in - in.data());
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
      case Z_BUF_ERROR:  // no progress possible
        if (zs.avail_out == 0) {
          throw_data_error(detail::cat(name, ": decompressed data exceeds the limit of ", format_bytes(max_output),
                                       " (", max_output, " bytes); refusing to continue at compressed byte offset ",
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

namespace {

std::string errno_text(int err) { return std::strerror(err); }

struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileBytes read_file(const std::filesystem::path& path, bool gunzip_if_gzip) {
  const std::string name = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string hint;
    if (err == ENOENT) {
      hint = name.find("/usr/share/datasets/fashion-mnist") != std::string::npos
                 ? "install the Debian package dataset-fashion-mnist (apt install dataset-fashion-mnist)"
                 : "check the path; `ember data fetch <dataset>` downloads MNIST, Fashion-MNIST and CIFAR-10";
    } else if (err == EACCES) {
      hint = "check the permissions of the file and of its directories (ls -l)";
    }
    throw_io_error(detail::cat(name, ": cannot open for reading: ", errno_text(err), " (errno ", err, ")"), hint);
  }
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    throw_io_error(detail::cat(name, ": cannot stat: ", errno_text(err)));
  }
  if (S_ISDIR(st.st_mode)) {
    throw_io_error(detail::cat(name, ": is a directory, expected a dataset file"),
                   "give the path of the file itself, e.g. .../train-images-idx3-ubyte.gz");
  }

  // Regular files are read with one read() plus the EOF read; pipes and devices grow the buffer.
  std::vector<uint8_t> buf(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{64} * 1024);
  size_t used = 0;
  for (;;) {
    if (used == buf.size()) buf.resize(buf.size() * 2);
    const ssize_t r = ::read(fd, buf.data() + used, buf.size() - used);
    if (r < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw_io_error(detail::cat(name, ": read failed at byte offset ", used, ": ", errno_text(err), " (errno ", err,
                                 ")"));
    }
    if (r == 0) break;
    used += static_cast<size_t>(r);
  }
  buf.resize(used);

  FileBytes result;
  if (gunzip_if_gzip && is_gzip(buf)) {
    result.data = gunzip(buf, name);
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
