// A Keras-Progbar-like progress line for one epoch:
//   "  120/938 [===>..........................] - ETA: 0:12 - loss: 0.4512 - acc: 0.8421 - 2310 samples/s"
// On a terminal it redraws in place with '\r', at most once every `interval` seconds (and always
// at the last step). When the output is not a terminal (CI logs, pipes) it prints nothing: the
// caller prints one summary line per epoch instead. Not thread-safe; drive it from one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace ember::train {

using NamedValues = std::vector<std::pair<std::string, double>>;

class ProgressBar {
 public:
  // target: number of steps in the epoch (> 0). interactive: redraw with '\r' (isatty(stdout)).
  ProgressBar(int64_t target, bool interactive, std::FILE* out = stdout, double interval = 0.05, int width = 30);

  // Reports that `step` (1-based) is done, `now` seconds after the epoch started. Redraws when
  // at least `interval` seconds have passed since the last draw, or step == target.
  // Returns true when it drew.
  bool update(int64_t step, const NamedValues& values, double samples_per_s, double now);
  // Ends the line (interactive only).
  void finish();

  // The line for a given state, without '\r' or newline (pure; tested).
  std::string render(int64_t step, const NamedValues& values, double samples_per_s, double now) const;

  static std::string format_duration(double seconds);  // "0:07", "1:02:03"

 private:
  int64_t target_;
  bool interactive_;
  std::FILE* out_;
  double interval_;
  int width_;
  double last_draw_ = -1e300;
  size_t last_len_ = 0;
  bool drew_ = false;
};

}  // namespace ember::train
