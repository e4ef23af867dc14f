// io::read_user_file, the one way ember reads a path a user gave: regular files only (a FIFO, a
// symlink to /dev/zero, a directory or a symlink loop is refused with what it is, without blocking
// or reading), under a cap per kind; and every reader of user paths goes through it (each case is
// run in a child with a time limit, so a regression fails instead of hanging or eating memory).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/readers.h"
#include "ember/io/safetensors.h"
#include "ember/io/user_file.h"
#include "ember/nn/spec.h"
#include "ember/train/checkpoint.h"
#include "ember/train/metrics.h"
#include "support/child_process.h"
#include "support/errors.h"
#include "support/files.h"

namespace fs = std::filesystem;
using ember::io::PathType;
using ember::test::ChildResult;
using ember::test::run_in_child;
using ember::test::TempDir;

namespace {

constexpr double kTimeoutS = 20;  // a FIFO that blocks would block forever: anything finite will do
constexpr ember::io::UserFileKind kTiny{"test file", 10};

bool contains(const std::string& s, const std::string& piece) { return s.find(piece) != std::string::npos; }

// The IOError message of f(), or what else happened ("no error", another exception's type).
std::string io_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ember::IOError& e) {
    return e.what() + std::string("\nhint: ") + e.hint();
  } catch (const std::exception& e) {
    return std::string("not an IOError: ") + e.what();
  }
  return "no error";
}

// f() run in a child with the time limit: the IOError message it threw, checked to be prompt.
std::string io_error_in_child(const std::function<void()>& f) {
  ChildResult r = run_in_child([&] { return io_error_of(f); }, kTimeoutS);
  EXPECT_FALSE(r.timed_out) << "blocked for " << kTimeoutS << " s (killed)";
  EXPECT_EQ(r.signal, 0) << "child died of signal " << r.signal;
  return r.output;
}

void make_fifo(const fs::path& p) {
  fs::create_directories(p.parent_path());
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
}

}  // namespace

TEST(UserFile, ReadsARegularFileWhole) {
  TempDir dir("user_file");
  const ember::test::Bytes bytes = {0, 1, 2, 255, 10, 13};
  ember::test::write_bytes(dir.path() / "f.bin", bytes);
  EXPECT_EQ(ember::io::read_user_file(dir.path() / "f.bin", ember::io::kDatasetFile), bytes);
  ember::test::write_bytes(dir.path() / "empty", {});
  EXPECT_TRUE(ember::io::read_user_file(dir.path() / "empty", ember::io::kDatasetFile).empty());
  // A regular file whose size stat reports as 0 although it has content (procfs): read to EOF.
  EXPECT_TRUE(contains(ember::io::read_user_text("/proc/self/status", ember::io::kConfigFile), "VmRSS"));
}

TEST(UserFile, FifoIsRefusedWithoutBlocking) {
  TempDir dir("user_file");
  const fs::path fifo = dir.path() / "train-images-idx3-ubyte.gz";
  make_fifo(fifo);
  const std::string msg =
      io_error_in_child([&] { ember::io::read_user_file(fifo, ember::io::kDatasetFile); });
  EXPECT_TRUE(contains(msg, fifo.string() + " is a FIFO (named pipe), not a regular file: expected a dataset file"))
      << msg;
  EXPECT_TRUE(contains(msg, "hint: give the path of a regular file")) << msg;
  const std::string check = io_error_in_child([&] { ember::io::check_user_file(fifo, ember::io::kImageFile); });
  EXPECT_TRUE(contains(check, "is a FIFO (named pipe), not a regular file: expected an image")) << check;
}

TEST(UserFile, SymlinkToDevZeroIsRefusedNotRead) {
  TempDir dir("user_file");
  const fs::path link = dir.path() / "latest.json";
  fs::create_symlink("/dev/zero", link);
  // The child's address space is capped: a reader that read /dev/zero would fail there, not here.
  ChildResult r = run_in_child(
      [&] { return io_error_of([&] { ember::io::read_user_file(link, ember::io::kManifestFile); }); }, kTimeoutS);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(contains(r.output, link.string() +
                                     " is a character device (it resolves to /dev/zero), not a regular file: "
                                     "expected a checkpoint manifest"))
      << r.output;
  EXPECT_LT(r.rss_growth_kb, 16 * 1024) << "read something from /dev/zero";
}

TEST(UserFile, SymlinkLoopIsNamed) {
  TempDir dir("user_file");
  fs::create_symlink("b", dir.path() / "a");
  fs::create_symlink("a", dir.path() / "b");
  const std::string msg = io_error_of([&] { ember::io::read_user_file(dir.path() / "a", ember::io::kDatasetFile); });
  EXPECT_TRUE(contains(msg, "too many levels of symbolic links: " + (dir.path() / "a").string())) << msg;
  EXPECT_TRUE(contains(msg, "namei -l")) << msg;
  // A loop in a directory component too.
  const std::string deep =
      io_error_of([&] { ember::io::read_user_file(dir.path() / "a" / "latest.json", ember::io::kManifestFile); });
  EXPECT_TRUE(contains(deep, "too many levels of symbolic links")) << deep;
}

TEST(UserFile, DirectoryIsRefused) {
  TempDir dir("user_file");
  fs::create_directories(dir.path() / "sub");
  const std::string msg = io_error_of([&] { ember::io::read_user_file(dir.path() / "sub", ember::io::kModelSpecFile); });
  EXPECT_TRUE(contains(msg, (dir.path() / "sub").string() + " is a directory, not a regular file: expected a model spec"))
      << msg;
  EXPECT_TRUE(contains(msg, "itself, not of a directory")) << msg;
}

TEST(UserFile, MissingAndPermissionErrorsNameThePath) {
  TempDir dir("user_file");
  const std::string msg = io_error_of([&] { ember::io::read_user_file(dir.path() / "nope", ember::io::kConfigFile); });
  EXPECT_TRUE(contains(msg, (dir.path() / "nope").string() + ": cannot open for reading: No such file or directory"))
      << msg;
  EXPECT_TRUE(contains(msg, "hint: check the --config path")) << msg;
  ember::test::write_bytes(dir.path() / "file", {1});
  const std::string notdir =
      io_error_of([&] { ember::io::read_user_file(dir.path() / "file" / "x", ember::io::kConfigFile); });
  EXPECT_TRUE(contains(notdir, "Not a directory")) << notdir;
}

TEST(UserFile, SizeCapIsEnforcedAndNamed) {
  TempDir dir("user_file");
  ember::test::write_bytes(dir.path() / "ten", ember::test::Bytes(10, 7));
  EXPECT_EQ(ember::io::read_user_file(dir.path() / "ten", kTiny).size(), 10u);  // at the cap: fine
  ember::test::write_bytes(dir.path() / "eleven", ember::test::Bytes(11, 7));
  const std::string msg = io_error_of([&] { ember::io::read_user_file(dir.path() / "eleven", kTiny); });
  EXPECT_TRUE(contains(msg, "eleven is 11 bytes, over the 10 bytes limit for a test file")) << msg;
  ember::test::write_bytes(dir.path() / "big", ember::test::Bytes(5000, 7));
  constexpr ember::io::UserFileKind kKiB{"image", 4096};
  const std::string big = io_error_of([&] { ember::io::read_user_file(dir.path() / "big", kKiB); });
  EXPECT_TRUE(contains(big, "big is 4.9 KiB (5000 bytes), over the 4 KiB limit for an image")) << big;
  // A size-0 regular file that goes on (procfs) is stopped at the cap too.
  const std::string proc = io_error_of([&] { ember::io::read_user_file("/proc/self/maps", kTiny); });
  EXPECT_TRUE(contains(proc, "grew past the 10 bytes limit for a test file while it was read")) << proc;
}

TEST(UserFile, PathTypeTellsMissingFromBroken) {
  TempDir dir("user_file");
  ember::test::write_bytes(dir.path() / "f", {1});
  fs::create_directories(dir.path() / "d");
  make_fifo(dir.path() / "p");
  fs::create_symlink("nowhere", dir.path() / "dangling");
  fs::create_symlink("loop", dir.path() / "loop");
  EXPECT_EQ(ember::io::path_type(dir.path() / "f"), PathType::regular);
  EXPECT_EQ(ember::io::path_type(dir.path() / "d"), PathType::directory);
  EXPECT_EQ(ember::io::path_type(dir.path() / "p"), PathType::other);
  EXPECT_EQ(ember::io::path_type(dir.path() / "none"), PathType::missing);
  EXPECT_EQ(ember::io::path_type(dir.path() / "f" / "under-a-file"), PathType::missing);
  EXPECT_EQ(ember::io::path_type(dir.path() / "dangling"), PathType::missing);
  const std::string msg = io_error_of([&] { ember::io::path_type(dir.path() / "loop"); });
  EXPECT_TRUE(contains(msg, "too many levels of symbolic links: " + (dir.path() / "loop").string())) << msg;
}

// ---- every reader of a user path goes through read_user_file ------------------------------------

namespace {

struct Reader {
  const char* name;
  // Reads through the public API with `bad` (a FIFO, a /dev/zero link or a symlink loop) in the
  // place of the file the reader opens; `dir` is a scratch directory laid out around it.
  std::function<void(const fs::path& dir, const fs::path& bad)> read;
  const char* file;  // where `bad` goes, relative to dir
};

std::vector<Reader> readers() {
  using namespace ember;
  return {
      {"read_file_bytes", [](auto&, auto& bad) { data::read_file_bytes(bad); }, "x-idx1-ubyte"},
      {"read_idx", [](auto&, auto& bad) { data::read_idx(bad); }, "x-idx1-ubyte.gz"},
      {"load_dataset(mnist)",
       [](auto& dir, auto&) {
         ember::test::write_bytes(dir / "train-labels-idx1-ubyte", ember::test::make_idx({1}, {0}));
         data::load_dataset("mnist", {.data_dir = dir, .train = true});
       },
       "train-images-idx3-ubyte.gz"},
      {"load_cifar10", [](auto& dir, auto&) { data::load_cifar10(dir, false); }, "test_batch.bin"},
      {"st_load", [](auto&, auto& bad) { io::st_load(bad); }, "model.safetensors"},
      {"load_checkpoint(dir)", [](auto& dir, auto&) { train::load_checkpoint(dir); }, "checkpoints/latest.json"},
      {"load_checkpoint(.json)", [](auto&, auto& bad) { train::load_checkpoint(bad); }, "best.json"},
      {"load_model_spec", [](auto&, auto& bad) { nn::load_model_spec(bad, 10, 1, 28, nullptr); }, "net.toml"},
      {"read_metrics", [](auto&, auto& bad) { train::read_metrics(bad); }, "metrics.jsonl"},
      {"load_image", [](auto&, auto& bad) { data::load_image(bad, {}); }, "cat.png"},
  };
}

}  // namespace

TEST(UserFile, EveryReaderRefusesAFifoWithoutBlocking) {
  for (const Reader& r : readers()) {
    TempDir dir("user_file");
    const fs::path bad = dir.path() / r.file;
    make_fifo(bad);
    const std::string msg = io_error_in_child([&] { r.read(dir.path(), bad); });
    EXPECT_TRUE(contains(msg, bad.string() + " is a FIFO (named pipe), not a regular file")) << r.name << ": " << msg;
  }
}

TEST(UserFile, EveryReaderRefusesASymlinkToDevZero) {
  for (const Reader& r : readers()) {
    TempDir dir("user_file");
    const fs::path bad = dir.path() / r.file;
    fs::create_directories(bad.parent_path());
    fs::create_symlink("/dev/zero", bad);
    const std::string msg = io_error_in_child([&] { r.read(dir.path(), bad); });
    EXPECT_TRUE(contains(msg, bad.string() + " is a character device (it resolves to /dev/zero)"))
        << r.name << ": " << msg;
  }
}

TEST(UserFile, EveryReaderNamesASymlinkLoop) {
  for (const Reader& r : readers()) {
    TempDir dir("user_file");
    const fs::path bad = dir.path() / r.file;
    fs::create_directories(bad.parent_path());
    fs::create_symlink(bad.filename(), bad);  // points at itself
    const std::string msg = io_error_of([&] { r.read(dir.path(), bad); });
    EXPECT_TRUE(contains(msg, "too many levels of symbolic links: " + bad.string())) << r.name << ": " << msg;
  }
}

TEST(UserFile, EveryReaderRefusesADirectoryGivenAsAFile) {
  for (const Reader& r : readers()) {
    // load_checkpoint takes a directory on purpose (a run directory) and says what it lacks.
    if (std::string(r.name) == "load_checkpoint(.json)") continue;
    TempDir dir("user_file");
    const fs::path bad = dir.path() / r.file;
    fs::create_directories(bad);
    const std::string msg = io_error_of([&] { r.read(dir.path(), bad); });
    EXPECT_TRUE(contains(msg, bad.string() + " is a directory, not a regular file")) << r.name << ": " << msg;
  }
}
