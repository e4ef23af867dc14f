// Whether the tests can use a GPU, and why not: the one place the tests ask the runtime (today the
// private backends/runtime.h; the public API once it says why there is no GPU). EMBER_REQUIRE_GPU()
// skips a test, printing the reason.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "backends/runtime.h"

namespace ember::test {

inline int gpu_count() { return cuda_device_count(); }
// Empty when cuda:0 is usable.
inline std::string gpu_unavailable_reason() {
  return cuda_device_count() > 0 ? std::string() : "no usable CUDA device: " + cuda_unavailable_reason();
}

}  // namespace ember::test

#define EMBER_REQUIRE_GPU()                                                    \
  do {                                                                         \
    if (const std::string why = ::ember::test::gpu_unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << why;                                                     \
  } while (0)
