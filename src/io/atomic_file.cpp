// write_file_atomic: temp file in the target directory + fsync + rename + fsync(dir), POSIX only.
// The rename is what makes the replacement atomic; the two fsyncs are what make it durable. A
// symlink is written through (the temp file goes next to its target); a device, FIFO, socket or
// directory is refused before anything is created. Standard output as a stream: write_stdout.
#include "ember/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ember/core/error.h"

namespace ember::io {
namespace {

std::atomic<uint64_t> g_temp_counter{0};

[[noreturn]] void throw_io(const std::filesystem::path& path, const char* what, int err) {
  throw IOError(detail::cat("cannot ", what, " '", path.string(), "': ", std::strerror(err)),
                "check that the directory exists, is writable and has free space");
}

// What a non-regular file is, for messages.
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// The file a write to `path` must replace: `path` itself, or the end of its chain of symlinks
// (which may not exist yet: a dangling link names the file to create). Refuses what is not a
// regular file: renaming over a device (/dev/stdout run as root) or a FIFO would replace it.
std::filesystem::path write_target(const std::filesystem::path& path) {
  auto refuse = [&](mode_t mode, const std::string& resolves) {
    throw IOError(detail::cat("'", path.string(), "'", resolves, " is ", kind_of(mode),
                              ", not a regular file: ember writes its output only to regular files"),
                  "name a file to write (a symlink to a regular file is written through)");
  };
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file
    throw_io(path, "look up", errno);
  }
  if (!S_ISLNK(st.st_mode)) {
    if (!S_ISREG(st.st_mode)) refuse(st.st_mode, "");
    return path;
  }
  if (::stat(path.c_str(), &st) == 0) {
    char* real = ::realpath(path.c_str(), nullptr);  // through every symlink, to the file itself
    if (!real) throw_io(path, "resolve the symlink", errno);
    std::filesystem::path target(real);
    std::free(real);
    if (!S_ISREG(st.st_mode)) refuse(st.st_mode, detail::cat(" (it resolves to ", target.string(), ")"));
    return target;
  }
  if (errno != ENOENT) throw_io(path, "resolve the symlink", errno);
  // A dangling symlink: the file it names is created (its directory must exist).
  std::filesystem::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
    std::vector<char> buf(PATH_MAX + 1);
    const ssize_t n = ::readlink(at.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) throw_io(at, "read the symlink", errno);
    const std::filesystem::path link(std::string(buf.data(), size_t(n)));
    at = link.is_absolute() ? link : at.parent_path() / link;
  }
  throw_io(path, "resolve the symlink", ELOOP);
}

// Removes the temp file on every exit path except a successful rename.
class TempFile {
 public:
  TempFile(std::filesystem::path tmp, int fd) : tmp_(std::move(tmp)), fd_(fd) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return tmp_; }
  // close() reports deferred write errors (NFS, some FUSE), so its result matters.
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void commit() { committed_ = true; }

 private:
  std::filesystem::path tmp_;
  int fd_;
  bool committed_ = false;
};

}  // namespace

void write_file_atomic(const std::filesystem::path& named, std::span<const uint8_t> bytes) {
  EMBER_CHECK(!named.empty() && named.has_filename(), IOError, "'", named.string(), "' does not name a file to write");
  const std::filesystem::path path = write_target(named);
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");

  // O_EXCL + pid + a process-wide counter keeps concurrent writers (threads or processes) apart.
  std::filesystem::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = dir / (path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(g_temp_counter.fetch_add(1)));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) throw_io(path, "create a temp file for", errno);
  }
  if (fd < 0) throw_io(path, "create a temp file for", EEXIST);
  TempFile guard(tmp, fd);

  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(guard.fd(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io(path, "write", errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(guard.fd()) != 0) throw_io(path, "fsync", errno);
  if (guard.close() != 0) throw_io(path, "close", errno);
  if (::rename(guard.path().c_str(), path.c_str()) != 0) throw_io(path, "rename a temp file onto", errno);
  guard.commit();

  // Durability of the rename itself. Some filesystems cannot fsync a directory (EINVAL); the
  // data is already in place there, so that is not worth failing the save over.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw_io(path, "open the directory of", errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL && err != EROFS) throw_io(path, "fsync the directory of", err);
}

bool names_stdout(const std::filesystem::path& path) {
  const std::string p = path.string();
  return p == "-" || p == "/dev/stdout" || p == "/dev/fd/1" || p == "/proc/self/fd/1";
}

void write_stdout(std::span<const uint8_t> bytes, const std::string& what) {
  if (::isatty(STDOUT_FILENO))
    throw IOError(detail::cat("standard output is a terminal: ", what, " is binary and would garble it"),
                  "redirect it (-o - > FILE, or | into a program), or name a file with -o");
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IOError(detail::cat("cannot write ", what, " to standard output: ", std::strerror(errno)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ember::io
