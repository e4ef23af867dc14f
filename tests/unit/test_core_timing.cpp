// Steady-state timing (src/core/timing.cpp), the harness behind `ember bench`: the warm-up waits for
// the time per call to settle (and gives up at its limit), every repeat reaches the minimum time and
// call count, and the figure is the median repeat with the spread of the others. A fake clock (each
// call's time a function of its index) makes every case exact; one case times real sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include <ember/ember.h>

#include "support/errors.h"

using namespace ember;
using ember::test::message_of;

namespace {

// run(n) for time_steady_state: the i-th call overall takes per_call(i) seconds; `batch_factor`
// scales the b-th run() as a whole (a repeat the OS slowed down).
struct FakeClock {
  std::function<double(int64_t)> per_call;
  std::function<double(int64_t)> batch_factor = [](int64_t) { return 1.0; };
  int64_t calls = 0;
  std::vector<int64_t> batches;  // n of each run(n), in order
  double operator()(int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += per_call(calls++);
    const double f = batch_factor(int64_t(batches.size()));
    batches.push_back(n);
    return s * f;
  }
  std::function<double(int64_t)> fn() {
    return [this](int64_t n) { return (*this)(n); };
  }
};

TimingPlan plan(double min_seconds, int64_t min_calls, int repeats, double max_warmup) {
  TimingPlan p;
  p.min_seconds = min_seconds;
  p.min_calls = min_calls;
  p.repeats = repeats;
  p.max_warmup_seconds = max_warmup;
  return p;
}

}  // namespace

TEST(Timing, MedianMinMaxAndSpreadOfTheRepeats) {
  Timing t;
  t.seconds_per_call = {4e-3, 1e-3, 2e-3};
  EXPECT_DOUBLE_EQ(t.median(), 2e-3);
  EXPECT_DOUBLE_EQ(t.min(), 1e-3);
  EXPECT_DOUBLE_EQ(t.max(), 4e-3);
  EXPECT_DOUBLE_EQ(t.spread(), 1.0);  // the slowest repeat is 100% above the median
  t.seconds_per_call = {1e-3, 3e-3};  // an even count: the mean of the middle two
  EXPECT_DOUBLE_EQ(t.median(), 2e-3);
  EXPECT_DOUBLE_EQ(t.spread(), 0.5);
  EXPECT_DOUBLE_EQ(Timing{}.spread(), 0);
}

// A step that starts 5x slow and decays to 1 ms (caches, allocator, kernel selection): the warm-up
// runs until it has settled, so even the first repeat measures the steady 1 ms. With settling off,
// the first repeat still carries the slow calls.
TEST(Timing, WarmupWaitsUntilTheCallTimeSettles) {
  auto decaying = [](int64_t i) { return 1e-3 * (1 + 4 * std::pow(0.8, double(i))); };
  FakeClock clock{decaying};
  const Timing t = time_steady_state(clock.fn(), plan(0.02, 10, 3, 10.0));
  EXPECT_TRUE(t.settled);
  EXPECT_GT(t.warmup_calls, 10);
  EXPECT_LT(t.warmup_seconds, 10.0);
  ASSERT_EQ(t.seconds_per_call.size(), 3u);
  EXPECT_NEAR(t.seconds_per_call[0], 1e-3, 0.1e-3);
  EXPECT_NEAR(t.median(), 1e-3, 0.1e-3);
  EXPECT_EQ(clock.calls, t.warmup_calls + t.total_calls());  // every call counted once

  FakeClock cold{decaying};
  const Timing off = time_steady_state(cold.fn(), plan(0.02, 10, 3, 0));
  EXPECT_FALSE(off.settled);
  EXPECT_EQ(off.warmup_calls, 1);  // only the fixed warm-up call
  EXPECT_GT(off.seconds_per_call[0], 1.2e-3);
}

// Calls that alternate 1 ms and 3 ms never settle: the warm-up stops at its time limit and says so.
TEST(Timing, WarmupGivesUpAtItsTimeLimit) {
  FakeClock clock{[](int64_t i) { return i % 2 ? 3e-3 : 1e-3; }};
  const Timing t = time_steady_state(clock.fn(), plan(0.001, 2, 1, 0.05));
  EXPECT_FALSE(t.settled);
  EXPECT_GE(t.warmup_seconds, 0.05);
  EXPECT_LT(t.warmup_seconds, 0.05 + 3e-3 + 1e-9);  // stopped at the first chunk past the limit
  EXPECT_EQ(t.seconds_per_call.size(), 1u);
}

// A 10 us call is judged by chunks of at least a tenth of a repeat, not by single noisy calls.
TEST(Timing, WarmupChunksGrowUntilLongEnoughToJudge) {
  FakeClock clock{[](int64_t) { return 10e-6; }};
  const Timing t = time_steady_state(clock.fn(), plan(0.1, 10, 1, 5.0));
  EXPECT_TRUE(t.settled);
  // batches: the fixed warm-up call, chunks 1, 2, 4, ... up to >= 10 ms (1024 calls), three of those.
  ASSERT_GE(clock.batches.size(), 4u);
  const int64_t judged = clock.batches[clock.batches.size() - 2];
  EXPECT_GE(double(judged) * 10e-6, 0.01 - 1e-12);
  EXPECT_LT(double(judged) * 10e-6, 0.02);
}

TEST(Timing, EveryRepeatReachesTheMinimumTimeAndCallCount) {
  FakeClock clock{[](int64_t) { return 1e-3; }};
  Timing t = time_steady_state(clock.fn(), plan(0.02, 5, 4, 1.0));
  ASSERT_EQ(t.calls.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_GE(t.calls[r], 20) << r;  // 0.02 s of 1 ms calls
    EXPECT_GE(t.seconds[r], 0.02 - 1e-12) << r;
    EXPECT_NEAR(t.seconds_per_call[r], 1e-3, 1e-12) << r;
  }
  EXPECT_NEAR(t.total_seconds(), t.seconds[0] + t.seconds[1] + t.seconds[2] + t.seconds[3], 1e-15);
  // No minimum time: exactly the minimum count, each repeat.
  FakeClock fixed{[](int64_t) { return 1e-3; }};
  t = time_steady_state(fixed.fn(), plan(0, 7, 3, 0));
  EXPECT_EQ(t.calls, (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(t.total_calls(), 21);
}

// The warm-up measured 1 ms calls, then they became 4x faster: a repeat sized from the estimate
// falls short of the minimum time and is topped up from its own rate.
TEST(Timing, ARepeatShortOfTheMinimumTimeIsToppedUp) {
  FakeClock clock{[](int64_t i) { return i < 40 ? 1e-3 : 0.25e-3; }};
  TimingPlan p = plan(0.02, 1, 2, 0);
  p.warmup_calls = 40;
  const Timing t = time_steady_state(clock.fn(), p);
  ASSERT_EQ(t.seconds.size(), 2u);
  EXPECT_GE(t.seconds[0], 0.02 - 1e-12);
  EXPECT_GE(t.calls[0], 80);
  EXPECT_NEAR(t.median(), 0.25e-3, 1e-12);
}

// One repeat slowed 3x by the OS moves neither the median nor the other repeats; the spread shows it.
TEST(Timing, TheMedianHoldsStillWhenOneRepeatIsSlow) {
  FakeClock clock{[](int64_t) { return 1e-3; }};
  clock.batch_factor = [](int64_t b) { return b == 2 ? 3.0 : 1.0; };  // batches: warm-up, repeat 1, 2, 3
  const Timing t = time_steady_state(clock.fn(), plan(0, 10, 3, 0));
  ASSERT_EQ(t.seconds_per_call.size(), 3u);
  EXPECT_NEAR(t.seconds_per_call[1], 3e-3, 1e-12);
  EXPECT_NEAR(t.median(), 1e-3, 1e-12);
  EXPECT_NEAR(t.max(), 3e-3, 1e-12);
  EXPECT_NEAR(t.spread(), 2.0, 1e-9);
}

TEST(Timing, APlanOutOfRangeIsAValueError) {
  FakeClock clock{[](int64_t) { return 1e-3; }};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  struct Case {
    TimingPlan p;
    const char* says;
  };
  TimingPlan r0 = plan(0, 1, 0, 0), c0 = plan(0, 0, 1, 0), neg = plan(-1, 1, 1, 0), nanp = plan(nan, 1, 1, 0),
             infw = plan(0, 1, 1, inf), w = plan(0, 1, 1, 0), tol = plan(0, 1, 1, 0);
  w.warmup_calls = -1;
  tol.settle_tolerance = 0;
  for (const Case& c : {Case{r0, "repeats must be at least 1 (got 0)"}, Case{c0, "min_calls must be at least 1"},
                        Case{neg, "min_seconds must be a finite number >= 0"},
                        Case{nanp, "min_seconds must be a finite number >= 0"},
                        Case{infw, "max_warmup_seconds must be a finite number >= 0"},
                        Case{w, "warmup_calls must be at least 0"}, Case{tol, "settle_tolerance"}}) {
    EXPECT_THROW(time_steady_state(clock.fn(), c.p), ValueError) << c.says;
    const std::string msg = message_of([&] { time_steady_state(clock.fn(), c.p); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
  EXPECT_EQ(clock.calls, 0);  // refused before anything ran
}

// The wall-clock form around real work: 1 ms sleeps take at least 1 ms each, every call is counted.
TEST(Timing, TheWallClockFormTimesRealCalls) {
  int64_t calls = 0;
  const Timing t = time_steady_state_wall(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      plan(0.01, 3, 2, 0));
  EXPECT_EQ(calls, t.warmup_calls + t.total_calls());
  EXPECT_GE(t.median(), 1e-3);
  EXPECT_GE(t.seconds[0], 0.01);
  EXPECT_GE(t.seconds[1], 0.01);
}
