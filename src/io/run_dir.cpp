// RunDirLock (flock on <run>/.lock holding the owner's pid), DirWatch (the directory's device and
// inode) and NewRunDir (create, and remove again unless kept), see include/ember/io/run_dir.h.
#include "ember/io/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace ember::io {
namespace fs = std::filesystem;

namespace {
std::string read_owner(int fd) {
  char buf[64] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? size_t(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

RunDirLock::RunDirLock(const fs::path& run_dir) : path_(run_dir / ".lock") {
  // Release unlinks the file, so a file opened just before its owner released it may be gone
  // from the directory by the time we lock it: lock, then check it is still the one at path_.
  for (int attempt = 0;; ++attempt) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw IOError(detail::cat("cannot create the lock file '", path_.string(), "': ", std::strerror(errno)),
                    "the run directory must be writable; pass another --run-dir");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        // The owner writes its pid just after taking the lock: give it a moment (at most ~0.2 s).
        std::string pid = read_owner(fd);
        for (int i = 0; pid.empty() && i < 20; ++i) {
          ::usleep(10000);
          pid = read_owner(fd);
        }
        ::close(fd);
        const std::string who = pid.empty() ? "another process" : "another process (pid " + pid + ")";
        throw RunDirInUse(
            detail::cat("run directory '", run_dir.string(), "' is in use by ", who,
                        ": two runs in one directory would overwrite each other's checkpoints"),
            pid.empty() ? "wait for that run to finish, or pass another --run-dir / --name"
                        : "wait for that run to finish or stop it (`kill " + pid +
                              "` checkpoints and exits), or pass another --run-dir / --name");
      }
      ::close(fd);
      throw IOError(detail::cat("cannot lock '", path_.string(), "': ", std::strerror(err)),
                    "the file system must support file locks (flock); use a local --run-dir");
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino) {
      fd_ = fd;
      break;
    }
    ::close(fd);
    if (attempt > 100)
      throw IOError(detail::cat("cannot lock '", path_.string(), "': the file keeps being replaced"),
                    "another program is deleting files in the run directory");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // The lock is held; only the pid for others' messages is missing. Not worth failing the run.
  }
}

DirWatch::DirWatch(const fs::path& dir) : dir_(dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw IOError(detail::cat("cannot stat the run directory '", dir.string(), "': ", std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) throw IOError(detail::cat("the run directory '", dir.string(), "' is not a directory"));
  dev_ = st.st_dev, ino_ = st.st_ino;
}

std::string DirWatch::change() const {
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) return "was removed";
  if (st.st_dev == dev_ && st.st_ino == ino_) return "";
  return S_ISDIR(st.st_mode) ? "was replaced by another directory" : "was replaced by a file";
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: nobody can be holding the lock on this file
  ::close(fd_);
}

NewRunDir::NewRunDir(const fs::path& dir) {
  // Each missing level is made with mkdir(2), and only a level whose mkdir succeeded here is ours:
  // two processes starting in one new directory both saw it missing, but only one made it, and the
  // other must never remove it (it held the winner's checkpoints: CliRunDir.TwoRunsStartedAtOnce...).
  std::vector<fs::path> levels;  // dir and its parents, deepest first
  for (fs::path p = dir.lexically_normal(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (!p.filename().empty()) levels.push_back(p);  // skip a trailing separator
    if (!p.has_parent_path()) break;
  }
  fs::path top;
  int err = 0;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      if (top.empty()) top = *it;
    } else if (errno != EEXIST) {
      err = errno;
      break;
    }
  }
  if (err == 0 && ::access(dir.c_str(), W_OK) != 0) err = errno;
  if (err != 0) {
    std::error_code ec;
    if (!top.empty()) fs::remove_all(top, ec);
    throw IOError("cannot create or write the run directory '" + dir.string() + "': " + std::strerror(err),
                  "pass a writable --run-dir (or --name to create runs/<name> in the current directory)");
  }
  top_ = top;
}

NewRunDir::~NewRunDir() {
  if (keep_ || top_.empty()) return;
  std::error_code ec;
  fs::remove_all(top_, ec);
}

}  // namespace ember::io
