// The one way ember opens a file a user named: open without blocking, fstat the descriptor, refuse
// anything but a regular file (saying what it is), then read at most the cap of its kind. Every
// reader of user paths (datasets, checkpoints, manifests, specs, configs, images) goes through here.
#include "ember/io/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "ember/core/error.h"

namespace ember::io {
namespace fs = std::filesystem;

std::string format_bytes(uint64_t n) {
  if (n < 1024) return detail::cat(n, n == 1 ? " byte" : " bytes");
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

namespace {

const char* file_type_name(mode_t m) {
  if (S_ISDIR(m)) return "directory";
  if (S_ISFIFO(m)) return "FIFO (named pipe)";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  if (S_ISSOCK(m)) return "socket";
  return "special file";
}

// " (it resolves to /dev/zero)" when the last component is a symlink: the user typed a file name
// and should see what it really is.
std::string resolved_note(const fs::path& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return {};
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return {};
  std::string note = detail::cat(" (it resolves to ", real, ")");
  std::free(real);
  return note;
}

// "a dataset file", "an image"
std::string with_article(const char* name) {
  const bool vowel = std::strchr("aeiouAEIOU", name[0]) != nullptr && name[0] != '\0';
  return detail::cat(vowel ? "an " : "a ", name);
}

[[noreturn]] void throw_lookup_error(const fs::path& path, int err, const char* action, const UserFileKind* kind) {
  const std::string name = path.string();
  if (err == ELOOP) {
    throw IOError(detail::cat("too many levels of symbolic links: ", name,
                              " (a symlink on this path points back to itself, directly or through other links)"),
                  detail::cat("look at the links with `namei -l ", name, "` and fix or remove the loop"));
  }
  std::string hint;
  if (err == ENOENT) {
    hint = kind && *kind->missing_hint ? kind->missing_hint : "check the path";
  } else if (err == EACCES) {
    hint = "check the permissions of the file and of its directories (ls -l)";
  } else if (err == ENOTDIR) {
    hint = "a component of the path is a file, not a directory: check the path";
  }
  throw IOError(detail::cat(name, ": cannot ", action, ": ", std::strerror(err), " (errno ", err, ")"), hint);
}

[[noreturn]] void throw_not_regular(const fs::path& path, mode_t mode, const UserFileKind& kind) {
  const std::string what = detail::cat(path.string(), " is a ", file_type_name(mode), resolved_note(path),
                                       ", not a regular file: expected ", with_article(kind.name));
  if (S_ISDIR(mode)) throw IOError(what, detail::cat("give the path of the ", kind.name, " itself, not of a directory"));
  throw IOError(what, detail::cat("give the path of a regular file: ember does not read ", with_article(kind.name),
                                  " from a pipe or a device (copy the data into a file first)"));
}

[[noreturn]] void throw_too_big(const fs::path& path, uint64_t size, bool grew, const UserFileKind& kind) {
  const std::string limit = detail::cat(format_bytes(kind.max_bytes), " limit for ", with_article(kind.name));
  throw IOError(grew ? detail::cat(path.string(), " grew past the ", limit, " while it was read")
                     : detail::cat(path.string(), " is ", format_bytes(size),
                                   size >= 1024 ? detail::cat(" (", size, " bytes)") : "", ", over the ", limit),
                detail::cat("check that this is the ", kind.name, " you meant"));
}

struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` for reading and checks what it is, before any read: returns the descriptor of a
// regular file within the cap, and its size. Throws the IOErrors documented in the header.
int open_regular(const fs::path& path, const UserFileKind& kind, uint64_t* size_out) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  // O_NOCTTY: a terminal device must not become our controlling terminal.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_lookup_error(path, errno, "open for reading", &kind);
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_lookup_error(path, errno, "stat", &kind);
  if (!S_ISREG(st.st_mode)) throw_not_regular(path, st.st_mode, kind);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > kind.max_bytes) throw_too_big(path, size, false, kind);
  // Blocking reads from here on (a regular file ignores the flag, but say what we mean).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size_out = size;
  guard.fd = -1;
  return fd;
}

}  // namespace

void check_user_file(const fs::path& path, const UserFileKind& kind) {
  uint64_t size = 0;
  FdGuard guard{open_regular(path, kind, &size)};
}

std::vector<uint8_t> read_user_file(const fs::path& path, const UserFileKind& kind) {
  uint64_t size = 0;
  const int fd = open_regular(path, kind, &size);
  FdGuard guard{fd};

  // One read() of the whole file plus the EOF read. The buffer grows only for a file that grew
  // since fstat or that reports size 0 (/proc), and never past the cap plus the one byte that
  // proves the cap was passed.
  const uint64_t most = kind.max_bytes + 1;
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(size + 1, most)));
  size_t used = 0;
  for (;;) {
    if (used == buf.size()) {
      if (used >= most) throw_too_big(path, used, true, kind);
      buf.resize(static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(uint64_t{buf.size()} * 2, 4096), most)));
    }
    const ssize_t r = ::read(fd, buf.data() + used, std::min<size_t>(buf.size() - used, SSIZE_MAX));
    if (r < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      throw IOError(detail::cat(path.string(), ": read failed at byte offset ", used, ": ", std::strerror(err),
                                " (errno ", err, ")"));
    }
    if (r == 0) break;
    used += static_cast<size_t>(r);
  }
  if (used > kind.max_bytes) throw_too_big(path, used, true, kind);
  buf.resize(used);
  return buf;
}

std::string read_user_text(const fs::path& path, const UserFileKind& kind) {
  std::vector<uint8_t> bytes = read_user_file(path, kind);
  return std::string(bytes.begin(), bytes.end());
}

PathType path_type(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return PathType::regular;
    if (S_ISDIR(st.st_mode)) return PathType::directory;
    return PathType::other;
  }
  const int err = errno;
  if (err == ENOENT || err == ENOTDIR) return PathType::missing;
  throw_lookup_error(path, err, "look up", nullptr);
}

}  // namespace ember::io
