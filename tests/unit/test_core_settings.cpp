// Process-wide settings (src/core/settings.cpp): the thread count, deterministic mode and TF32,
// their defaults and round trips.
#include <gtest/gtest.h>

#include <cstdlib>

#include <ember/ember.h>

using namespace ember;

// set_num_threads() before the first op must stick: kernel registration (run lazily by the first
// op) sets the default thread count and used to overwrite it. A fresh process is needed, so this
// re-executes the test binary for the statement (threadsafe death-test style).
TEST(Threads, SetNumThreadsBeforeFirstOpSticks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        set_num_threads(1);
        Tensor t = ones({4});
        std::exit(get_num_threads() == 1 && t.sum().item<float>() == 4.0f ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Settings, DeterministicFlagDefaultsOffAndRoundTrips) {
  EXPECT_FALSE(deterministic());
  set_deterministic(true);
  EXPECT_TRUE(deterministic());
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
}

TEST(Settings, AllowTf32DefaultsOffAndRoundTrips) {
  EXPECT_FALSE(allow_tf32());
  set_allow_tf32(true);
  EXPECT_TRUE(allow_tf32());
  set_allow_tf32(false);
  EXPECT_FALSE(allow_tf32());
}
