// write_file_atomic (src/io/atomic_file.cpp): bytes written whole, no temporary files left, relative
// paths, errors that name the path and errno, a full disk that keeps the old file, concurrent writers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/atomic_file.h"
#include "support/files.h"

namespace fs = std::filesystem;
using namespace ember::io;
using ember::test::Bytes;
using ember::test::read_bytes;
using ember::test::TempDir;

TEST(AtomicFile, WritesBytes) {
  TempDir dir;
  fs::path p = dir.path() / "x.bin";
  Bytes data = {0, 1, 2, 255};
  write_file_atomic(p, data);
  EXPECT_EQ(read_bytes(p), data);
  write_file_atomic(dir.path() / "empty.bin", {});
  EXPECT_EQ(fs::file_size(dir.path() / "empty.bin"), 0u);
}

TEST(AtomicFile, OverwriteLeavesNoTempFiles) {
  TempDir dir;
  fs::path p = dir.path() / "ckpt.safetensors";
  write_file_atomic(p, Bytes(1000, 1));
  write_file_atomic(p, Bytes(10, 2));
  EXPECT_EQ(read_bytes(p), Bytes(10, 2));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(AtomicFile, RelativePathInCurrentDirectory) {
  TempDir dir;
  fs::path old = fs::current_path();
  fs::current_path(dir.path());
  write_file_atomic("rel.bin", Bytes{9});
  fs::current_path(old);
  EXPECT_EQ(read_bytes(dir.path() / "rel.bin"), Bytes{9});
}

TEST(AtomicFile, MissingDirectoryNamesPathAndErrno) {
  TempDir dir;
  fs::path p = dir.path() / "no_such_dir" / "x.bin";
  try {
    write_file_atomic(p, Bytes{1});
    ADD_FAILURE() << "no error";
  } catch (const ember::IOError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
}

TEST(AtomicFile, ReadOnlyLocationNamesPath) {
  TempDir dir;
  fs::path p;
  if (::geteuid() == 0) {
    p = "/proc/ember_atomic_test.bin";  // root ignores permission bits; /proc refuses new files
  } else {
    fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
    p = dir.path() / "x.bin";
  }
  try {
    write_file_atomic(p, Bytes{1});
    ADD_FAILURE() << "no error";
  } catch (const ember::IOError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(p));
}

TEST(AtomicFile, DiskFullKeepsOldFileAndCleansUp) {
  TempDir dir;
  fs::path p = dir.path() / "ckpt.safetensors";
  const Bytes old_bytes(3000, 0x5A);
  write_file_atomic(p, old_bytes);

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: a 4 KiB file-size limit makes write() fail with EFBIG, as a full disk would fail.
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(3);
    try {
      write_file_atomic(p, Bytes(64 * 1024, 0xAB));
    } catch (const ember::IOError& e) {
      std::string msg = e.what();
      bool ok = msg.find(p.string()) != std::string::npos && msg.find("File too large") != std::string::npos;
      ::_exit(ok ? 0 : 4);
    } catch (...) {
      ::_exit(5);
    }
    ::_exit(6);  // the write should not have succeeded
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: setrlimit failed, 4: bad message, 5: wrong type, 6: no error";
  EXPECT_EQ(read_bytes(p), old_bytes);
  EXPECT_EQ(dir.names(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(AtomicFile, ConcurrentWritersLastCompleteOneWins) {
  TempDir dir;
  fs::path p = dir.path() / "shared.bin";
  const size_t size = 256 * 1024;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < 5; ++i) write_file_atomic(p, Bytes(size, static_cast<uint8_t>(w + 1)));
    });
  for (auto& t : threads) t.join();
  Bytes got = read_bytes(p);
  ASSERT_EQ(got.size(), size);
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](uint8_t b) { return b == got[0]; }));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"shared.bin"});
}

// `ember export RUN -o link.onnx` replaced the symlink with a regular file (issue 22): the write
// goes through the link to its target, the temp file beside the target, and the link stays.
TEST(AtomicFile, WritesThroughASymlinkAndKeepsIt) {
  TempDir dir, elsewhere;
  const fs::path target = elsewhere.path() / "model.onnx", link = dir.path() / "link.onnx";
  write_file_atomic(target, Bytes{1, 2, 3});
  fs::create_symlink(target, link);
  write_file_atomic(link, Bytes{4, 5});
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_bytes(target), (Bytes{4, 5}));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"link.onnx"});
  EXPECT_EQ(elsewhere.names(), std::vector<std::string>{"model.onnx"});
  // A relative link through a second one; a dangling link creates the file it names.
  fs::create_symlink("link.onnx", dir.path() / "again.onnx");
  write_file_atomic(dir.path() / "again.onnx", Bytes{6});
  EXPECT_EQ(read_bytes(target), Bytes{6});
  fs::create_symlink("new.bin", dir.path() / "dangling");
  write_file_atomic(dir.path() / "dangling", Bytes{7});
  EXPECT_TRUE(fs::is_symlink(dir.path() / "dangling"));
  EXPECT_EQ(read_bytes(dir.path() / "new.bin"), Bytes{7});
}

// `-o /dev/stdout` run as root renamed a 6.3 MB file over /dev/stdout itself: a device, FIFO,
// socket or directory (or a link to one) is refused before anything is created.
TEST(AtomicFile, RefusesDevicesFifosAndDirectories) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/null", dir.path() / "null_link");
  fs::create_directories(dir.path() / "sub");
  struct Case {
    fs::path path;
    const char* what;
  };
  for (const Case& c : {Case{dir.path() / "fifo", "is a FIFO (named pipe), not a regular file"},
                        Case{dir.path() / "null_link", "(it resolves to /dev/null) is a character device"},
                        Case{dir.path() / "sub", "is a directory"}, Case{"/dev/null", "is a character device"}}) {
    try {
      write_file_atomic(c.path, Bytes{1});
      ADD_FAILURE() << c.path << ": no error";
    } catch (const ember::IOError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
      EXPECT_EQ(msg.find("write_file_atomic"), std::string::npos) << msg;  // no function names for users
    }
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(dir.path() / "null_link"));
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"fifo", "null_link", "sub"}));
  EXPECT_TRUE(names_stdout("-") && names_stdout("/dev/stdout") && !names_stdout("out.onnx"));
}
