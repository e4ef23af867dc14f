// Helpers for end-to-end tests of the `ember` binary: run a command line and capture its output
// and exit code, and write a tiny learnable IDX dataset. EMBER_TEST_BIN in the environment runs
// the tests against another binary (e.g. an older build, to see a test fail before a fix).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace e2e {
namespace fs = std::filesystem;

inline std::string ember_bin() {
  const char* env = std::getenv("EMBER_TEST_BIN");
  return env && *env ? env : EMBER_BIN;
}

struct Result {
  int code = -1;
  std::string out;  // stdout + stderr
};

// Runs `prefix ember args` through the shell; code is the exit status, or 128 + the signal.
inline Result run(const std::string& args, const std::string& prefix = "") {
  std::string cmd = prefix + ember_bin() + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

inline void be32(std::ofstream& f, uint32_t v) {
  unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  f.write(reinterpret_cast<char*>(b), 4);
}
// n images whose label decides which horizontal band is bright: learnable in a few steps.
inline void write_split(const fs::path& dir, const std::string& split, uint32_t n) {
  std::ofstream im(dir / (split + "-images-idx3-ubyte"), std::ios::binary),
      lb(dir / (split + "-labels-idx1-ubyte"), std::ios::binary);
  be32(im, 0x803), be32(im, n), be32(im, 28), be32(im, 28);
  be32(lb, 0x801), be32(lb, n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t label = uint8_t((i * 7 + 3) % 10);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) {
        uint8_t v = (r / 3 == label) ? uint8_t(200 + (i + c) % 50) : uint8_t((i * 31 + r * 7 + c) % 40);
        im.put(char(v));
      }
    lb.put(char(label));
  }
}

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// A scratch directory per test with data/ holding 256 training and 64 test images.
class Fixture : public ::testing::Test {
 protected:
  fs::path dir, data;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_e2e_" + std::to_string(getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    data = dir / "data";
    fs::create_directories(data);
    write_split(data, "train", 256);
    write_split(data, "t10k", 64);
  }
  void TearDown() override { fs::remove_all(dir); }
  // One quick epoch (8 steps of 32) into `dir/name`.
  std::string tiny(const std::string& name) const {
    return "train --model lenet5 --data-dir " + data.string() + " --epochs 1 --batch-size 32 --threads 2 --run-dir " +
           (dir / name).string();
  }
};

}  // namespace e2e

#define EXPECT_HAS(out, piece) EXPECT_NE((out).find(piece), std::string::npos) << "output:\n" << (out)
#define EXPECT_LACKS(out, piece) EXPECT_EQ((out).find(piece), std::string::npos) << "output:\n" << (out)
