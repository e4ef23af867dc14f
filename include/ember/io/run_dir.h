// Run-directory ownership and creation: one ember process trains in a run directory at a time
// (an advisory lock), and a directory a failed start created is removed again, so neither a second
// process nor a failed start can leave a run directory damaged or empty.
#pragma once

#include <filesystem>
#include <string>

#include "ember/core/error.h"

namespace ember::io {

// Another live process holds the run directory; the message names its pid.
class RunDirInUse : public Error {
 public:
  using Error::Error;
};

// An exclusive advisory lock (flock) on `<run_dir>/.lock`, held for this object's lifetime; the
// file holds the owner's pid, for the message a second process gets. The kernel releases the lock
// when its owner dies, even by kill -9, so a stale .lock file never blocks the next run: it just
// takes the lock over. Release unlinks the file. Not for network file systems without lock
// support (the open or flock then fails with IOError).
class RunDirLock {
 public:
  // Takes the lock on an existing directory without waiting. Throws RunDirInUse (naming the
  // owner's pid, with a hint) when another process holds it, IOError when the file cannot be made.
  explicit RunDirLock(const std::filesystem::path& run_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// The directory now at a path, remembered by its device and inode, so that a run notices when
// its directory is removed or replaced while it trains (`rm -rf RUN_DIR`): files opened before
// that go on accepting writes into unlinked inodes, so nothing else would fail.
class DirWatch {
 public:
  // IOError (naming the path) when `dir` is not a directory that can be stat'ed.
  explicit DirWatch(const std::filesystem::path& dir);
  // Empty while the path still names the directory first seen; otherwise what became of it:
  // "was removed" or "was replaced by another directory" (or "by a file").
  std::string change() const;
  const std::filesystem::path& path() const { return dir_; }

 private:
  std::filesystem::path dir_;
  unsigned long long dev_ = 0, ino_ = 0;
};

// Creates `dir` with its missing parents. Unless keep() is called, the destructor removes what
// this object created (the topmost missing directory and everything since written into it); a
// directory that already existed is never removed. Throws IOError (naming the path, with a hint)
// when the directory cannot be created or is not writable.
class NewRunDir {
 public:
  explicit NewRunDir(const std::filesystem::path& dir);
  ~NewRunDir();
  NewRunDir(const NewRunDir&) = delete;
  NewRunDir& operator=(const NewRunDir&) = delete;
  void keep() { keep_ = true; }
  bool created() const { return !top_.empty(); }

 private:
  std::filesystem::path top_;  // the topmost directory created here; empty when `dir` existed
  bool keep_ = false;
};

}  // namespace ember::io
