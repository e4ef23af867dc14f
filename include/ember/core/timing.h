// Steady-state timing for the benchmarks (`ember bench train|matmul|bandwidth`): warm up until the
// time per call settles, then time a few repeats, each at least min_seconds and min_calls long, and
// report the median repeat with the spread of the others. One figure from a few milliseconds moves
// 2-10x with the OS's scheduling on a small shared machine; the median of three half-second repeats
// holds still, and the spread says how far to trust it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ember {

struct TimingPlan {
  int64_t warmup_calls = 1;         // untimed calls before the settling check (first-call costs)
  double max_warmup_seconds = 2.0;  // stop warming up after this long even if not settled; 0: warmup_calls only
  double settle_tolerance = 0.10;   // settled: the last 3 warm-up chunks within 10% of each other (range / median)
  double min_seconds = 0.5;         // each repeat times at least this long...
  int64_t min_calls = 10;           // ...and at least this many calls
  int repeats = 3;                  // the figure is the median repeat
};

// What time_steady_state measured. Times are seconds per call unless named otherwise.
struct Timing {
  std::vector<double> seconds_per_call;  // one per repeat, in the order run
  std::vector<int64_t> calls;            // timed calls per repeat
  std::vector<double> seconds;           // timed seconds per repeat (calls x seconds per call)
  int64_t warmup_calls = 0;              // untimed calls, the fixed ones and the settling chunks
  double warmup_seconds = 0;
  bool settled = false;                  // the warm-up ended settled (false when it hit max_warmup_seconds
                                         // or was off: max_warmup_seconds == 0)

  double median() const;  // the median repeat (the mean of the middle two for an even count)
  double min() const;
  double max() const;
  // max |repeat - median| / median: every repeat lies within +-spread of the median (0.03 = 3%).
  double spread() const;
  int64_t total_calls() const;
  double total_seconds() const;
};

// Times `run`, where run(n) makes n calls of the thing measured and returns the seconds they took
// by the caller's clock (wall time around calls that synchronise with their device, or CUDA events).
//
// Warm-up: plan.warmup_calls calls, then chunks of calls, each chunk doubling until it takes at
// least min_seconds / 10 (so a 10 us call is not judged by one noisy sample); the warm-up has
// settled when the per-call times of the last 3 such chunks lie within settle_tolerance of their
// median, and gives up (settled = false) once it has taken max_warmup_seconds. Then plan.repeats
// repeats, each of at least min_calls calls and min_seconds (sized from the warm-up's per-call time,
// topped up when that was an underestimate). Throws ValueError for a plan out of range (repeats < 1,
// negative times or counts) and what run throws.
Timing time_steady_state(const std::function<double(int64_t)>& run, const TimingPlan& plan);

// time_steady_state of fn() with the host's steady clock around each batch of calls: for work
// that has finished when fn returns (CPU ops, or a step that reads its result back).
Timing time_steady_state_wall(const std::function<void()>& fn, const TimingPlan& plan);

}  // namespace ember
