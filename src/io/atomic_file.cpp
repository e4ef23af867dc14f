// write_file_atomic: temp file in the target directory + fsync + rename + fsync(dir), POSIX only.
// The rename is what makes the replacement atomic; the two fsyncs are what make it durable.
#include "ember/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "ember/core/error.h"

namespace ember::io {
namespace {

std::atomic<uint64_t> g_temp_counter{0};

[[noreturn]] void throw_io(const std::filesystem::path& path, const char* what, int err) {
  throw IOError(detail::cat("write_file_atomic: cannot ", what, " '", path.string(),
                            "': ", std::strerror(err)),
                "check that the directory exists, is writable and has free space");
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

void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  EMBER_CHECK(!path.empty() && path.has_filename(), IOError,
              "write_file_atomic: '", path.string(), "' does not name a file");
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

}  // namespace ember::io
