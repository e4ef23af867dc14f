// For the whole-model golden tests: the GPU check's bundle leaves tests/golden/models_*.bin out
// (mnistnet's fc1 makes them 12.6 MB of xz that do not fit the bundle's 40 MiB with the libraries)
// and runs the CPU suite with EMBER_GOLDEN_LEFT_OUT=1; there a missing file is a skip with the
// reason. Everywhere else (CI, a developer's build) a missing golden file stays a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

// In a TEST body or a fixture's SetUp (GTEST_SKIP returns from the enclosing function).
#define EMBER_SKIP_IF_GOLDEN_LEFT_OUT(path)                                                              \
  do {                                                                                                   \
    const char* left_out_ = std::getenv("EMBER_GOLDEN_LEFT_OUT");                                         \
    if (left_out_ && std::string(left_out_) == "1" && !std::filesystem::exists(path))                     \
      GTEST_SKIP() << (path) << " is not here: the GPU bundle leaves the model golden files out (40 MiB " \
                   << "limit); CI runs this test";                                                       \
  } while (0)
