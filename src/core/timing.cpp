// Steady-state timing (ember/core/timing.h): the warm-up that waits for the time per call to settle,
// the repeats sized to a minimum time and call count, and the median/spread of the repeats.
#include "ember/core/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "ember/core/error.h"

namespace ember {

namespace {
// A run(n) that reports no time for this many calls has a clock that does not advance.
constexpr int64_t kMaxCalls = int64_t(1) << 40;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void check_plan(const TimingPlan& p) {
  EMBER_CHECK(p.repeats >= 1, ValueError, "timing: repeats must be at least 1 (got ", p.repeats, ")");
  EMBER_CHECK(p.min_calls >= 1, ValueError, "timing: min_calls must be at least 1 (got ", p.min_calls, ")");
  EMBER_CHECK(p.warmup_calls >= 0, ValueError, "timing: warmup_calls must be at least 0 (got ", p.warmup_calls, ")");
  EMBER_CHECK(std::isfinite(p.min_seconds) && p.min_seconds >= 0, ValueError,
              "timing: min_seconds must be a finite number >= 0 (got ", p.min_seconds, ")");
  EMBER_CHECK(std::isfinite(p.max_warmup_seconds) && p.max_warmup_seconds >= 0, ValueError,
              "timing: max_warmup_seconds must be a finite number >= 0 (got ", p.max_warmup_seconds, ")");
  EMBER_CHECK(std::isfinite(p.settle_tolerance) && p.settle_tolerance > 0, ValueError,
              "timing: settle_tolerance must be a finite number > 0 (got ", p.settle_tolerance, ")");
}
}  // namespace

double Timing::median() const { return median_of(seconds_per_call); }
double Timing::min() const {
  return seconds_per_call.empty() ? 0 : *std::min_element(seconds_per_call.begin(), seconds_per_call.end());
}
double Timing::max() const {
  return seconds_per_call.empty() ? 0 : *std::max_element(seconds_per_call.begin(), seconds_per_call.end());
}
double Timing::spread() const {
  const double med = median();
  if (!(med > 0)) return 0;
  return std::max(max() - med, med - min()) / med;
}
int64_t Timing::total_calls() const {
  int64_t n = 0;
  for (int64_t c : calls) n += c;
  return n;
}
double Timing::total_seconds() const {
  double s = 0;
  for (double x : seconds) s += x;
  return s;
}

Timing time_steady_state(const std::function<double(int64_t)>& run, const TimingPlan& plan) {
  check_plan(plan);
  Timing t;
  double per_call = 0;  // the latest estimate, sizes the repeats
  auto warm = [&](int64_t n) {
    const double s = run(n);
    t.warmup_calls += n;
    t.warmup_seconds += s;
    per_call = s / double(n);
    return s;
  };
  // The fixed calls carry the one-time costs (allocations, kernel selection, primitive creation):
  // never judged.
  if (plan.warmup_calls > 0) warm(plan.warmup_calls);
  if (plan.max_warmup_seconds > 0) {
    // A chunk shorter than a tenth of a repeat is mostly clock and scheduling noise: grow it first.
    const double chunk_target = plan.min_seconds / 10;
    std::vector<double> judged;  // per-call times of the chunks long enough to judge
    int64_t k = 1;
    while (t.warmup_seconds < plan.max_warmup_seconds) {
      const double s = warm(k);
      if (s < chunk_target && k < kMaxCalls) {
        k *= 2;
        continue;
      }
      judged.push_back(per_call);
      if (judged.size() < 3) continue;
      const auto last = judged.end() - 3;
      const double lo = *std::min_element(last, judged.end()), hi = *std::max_element(last, judged.end());
      if (hi - lo <= plan.settle_tolerance * median_of({last, judged.end()})) {
        t.settled = true;
        break;
      }
    }
  }
  for (int r = 0; r < plan.repeats; ++r) {
    int64_t n = plan.min_calls;
    if (per_call > 0) n = std::max(n, int64_t(std::min(std::ceil(plan.min_seconds / per_call), double(kMaxCalls))));
    double s = run(n);
    int64_t done = n;
    while (s < plan.min_seconds) {
      // The estimate was low (the machine slowed down, or the warm-up was off): top up to the minimum
      // time from this repeat's own rate, or double while it has measured nothing yet.
      const double rate = s > 0 ? s / double(done) : 0;
      const int64_t more =
          rate > 0 ? std::max<int64_t>(1, int64_t(std::ceil((plan.min_seconds - s) / rate * 1.05))) : done;
      EMBER_ASSERT(done + more < kMaxCalls, "the clock passed to time_steady_state reported no time for ", done,
                   " calls");
      s += run(more);
      done += more;
    }
    t.calls.push_back(done);
    t.seconds.push_back(s);
    t.seconds_per_call.push_back(s / double(done));
    per_call = s / double(done);
  }
  return t;
}

Timing time_steady_state_wall(const std::function<void()>& fn, const TimingPlan& plan) {
  return time_steady_state(
      [&](int64_t n) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < n; ++i) fn();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      },
      plan);
}

}  // namespace ember
