// Where the tests read their data (golden/*.bin, fixtures/pth): one answer for the build tree and for
// the GPU check's bundle. The bundle packs ember_tests from a build (scripts/gpu-bundle.sh, also
// --from-build), so the folder the build was configured with (EMBER_TEST_DATA_DIR_CONFIGURED,
// tests/CMakeLists.txt) is an absolute path of the build machine there: it must not win.
#pragma once


#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace ember::test {

// In order: $EMBER_TEST_DATA_DIR when set; the folder above the test binary when it holds golden/
// (an unpacked bundle: bin/ember_tests beside golden/); else the configured folder (the source
// tree's tests/, or "." in a bundle built by scripts/gpu-bundle.sh).
inline const std::string& data_dir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("EMBER_TEST_DATA_DIR"); env && *env) return std::string(env);
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const std::filesystem::path root = exe.parent_path().parent_path();
      if (std::filesystem::is_directory(root / "golden", ec)) return root.string();
    }
    return std::string(EMBER_TEST_DATA_DIR_CONFIGURED);
  }();
  return dir;
}

// data_dir() + "/" + relative, e.g. data_path("golden/ops_v1.bin").
inline std::string data_path(const std::string& relative) { return data_dir() + "/" + relative; }

}  // namespace ember::test
