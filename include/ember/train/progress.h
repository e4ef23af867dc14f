// A Keras-Progbar-like progress line for one epoch of a run, fitted to the terminal's width:
//   "epoch 3/15 120/469 [=====>........] ETA 0:12 (run ETA 2:41) - loss: 0.4512 - acc: 0.8421 - 2310 samples/s"
// On a terminal it redraws in place with '\r', at most once every `interval` seconds (and always
// at the last step), and never wraps: when the terminal is narrow it drops fields, least important
// first (the GPU status, samples/s, acc and further values, the bar, loss, the run's ETA). When the output is not
// a terminal (CI logs, pipes) it prints nothing: the caller prints one summary line per epoch
// instead. Not thread-safe; drive it from one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace ember::train {

using NamedValues = std::vector<std::pair<std::string, double>>;

// Where this epoch sits in the run, for "epoch i/N" and the ETA of the whole run.
struct RunPosition {
  int64_t epoch = 0;                // 1-based; 0: unknown (no "epoch i/N", no run ETA)
  int64_t epochs = 0;               // of the whole run
  double seconds_per_epoch = 0;     // measured wall time of a whole epoch (with its evaluation) so
                                    // far in this run; 0: estimate from this epoch's step rate
};

class ProgressBar {
 public:
  // target: number of steps in the epoch (> 0). interactive: redraw with '\r' (isatty(stdout)).
  // columns: the width to fit; 0 = the terminal's (terminal_columns(out)), asked at every redraw
  // so a resized terminal is followed. bar_width: the bar's width when there is room.
  ProgressBar(int64_t target, bool interactive, std::FILE* out = stdout, double interval = 0.05, int bar_width = 30,
              int columns = 0);

  void set_position(const RunPosition& pos) { pos_ = pos; }
  // A status field shown last ("GPU 87% 12.1/80G 312W 61C", gpu_monitor.h) and dropped first when
  // the terminal is narrow; "" shows none.
  void set_status(std::string status) { status_ = std::move(status); }

  // Reports that `step` (1-based) is done, `now` seconds after the epoch started. Redraws when
  // at least `interval` seconds have passed since the last draw, or step == target.
  // Returns true when it drew.
  bool update(int64_t step, const NamedValues& values, double samples_per_s, double now);
  // Ends the line (interactive only).
  void finish();

  // The line for a given state, without '\r' or newline, at most columns - 1 characters (the last
  // column is left free: many terminals wrap when it is written). Pure; tested.
  std::string render(int64_t step, const NamedValues& values, double samples_per_s, double now, int columns) const;

  static std::string format_duration(double seconds);  // "0:07", "1:02:03"
  // The width of the terminal `out` writes to: ioctl(TIOCGWINSZ), else $COLUMNS, else 80.
  static int terminal_columns(std::FILE* out);

 private:
  int64_t target_;
  bool interactive_;
  std::FILE* out_;
  double interval_;
  int bar_width_;
  int columns_;
  RunPosition pos_;
  std::string status_;
  double last_draw_ = -1e300;
  size_t last_len_ = 0;
  bool drew_ = false;
};

}  // namespace ember::train
