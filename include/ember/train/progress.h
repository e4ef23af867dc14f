// What a run shows while it trains (progress_rule: one rule for `ember train` and ember.fit, as
// Keras's fit(verbose=)), and the Keras-Progbar-like progress line for one epoch, fitted to the
// terminal's width:
//   "epoch 3/15 120/469 [=====>........] ETA 0:12 (run ETA 2:41) - loss: 0.4512 - acc: 0.8421 - 2310 samples/s"
// On a terminal it redraws in place with '\r', at most once every `interval` seconds (and always
// at the last step), and never wraps: when the terminal is narrow it drops fields, least important
// first (the GPU status, samples/s, acc and further values, the bar, loss, the run's ETA). When the
// output is not a terminal (CI logs, pipes, nohup, `| tee`) it prints a plain line (no bar, no '\r')
// every `plain_every` seconds within the epoch, so a log never goes silent for long; the caller
// prints one summary line per epoch. Not thread-safe; drive it from one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ember::train {

using NamedValues = std::vector<std::pair<std::string, double>>;

// How much a run prints, as Keras's Model.fit(verbose=): 0 silent, 1 a progress bar, 2 one line per
// epoch.
enum class Verbosity { Silent = 0, ProgressBar = 1, EpochLines = 2 };
// The verbose setting's values: "auto" (1, as Keras's "auto" outside a parameter-server strategy),
// "0", "1", "2". ValueError for anything else (the settings table checks its choices first).
Verbosity parse_verbosity(const std::string& value);
std::vector<std::string> verbosity_names();  // {"auto", "0", "1", "2"}

// Seconds between the plain progress lines within an epoch when the output is not a terminal.
inline constexpr double kPlainProgressSeconds = 20;

// What a run prints for a verbosity, to an output that is or is not a terminal:
//   0      nothing (warnings and errors still go to stderr, the end of the run is still said)
//   1      the banner, a line per epoch, and within the epoch: on a terminal the redrawn bar, else a
//          plain progress line every kPlainProgressSeconds
//   2      the banner and a line per epoch
struct ProgressRule {
  bool banner = true;        // the run's banner (device, data, model, ...)
  bool epoch_lines = true;   // a line per epoch (the CLI's table row; ember.fit's epoch line)
  bool redraw = false;       // the bar redrawn in place with '\r'
  double plain_every = 0;    // > 0: a plain progress line at most this often within an epoch
};
ProgressRule progress_rule(Verbosity verbosity, bool terminal);

// Where progress lines go: the text as it is ("\r..." redraws, "...\n" lines). Empty: stdout.
using ProgressWriter = std::function<void(const std::string&)>;

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
  // plain_every: when not interactive, a plain line at most this often (0: none; ProgressRule).
  ProgressBar(int64_t target, bool interactive, std::FILE* out = stdout, double interval = 0.05, int bar_width = 30,
              int columns = 0, double plain_every = 0);
  // Sends the text to `write` instead of `out` (ember.fit: Python's sys.stdout).
  void set_writer(ProgressWriter write) { write_ = std::move(write); }

  void set_position(const RunPosition& pos) { pos_ = pos; }
  // A status field shown last ("GPU 87% 12.1/80G 312W 61C", gpu_monitor.h) and dropped first when
  // the terminal is narrow; "" shows none.
  void set_status(std::string status) { status_ = std::move(status); }

  // Reports that `step` (1-based) is done, `now` seconds after the epoch started. Redraws when
  // at least `interval` seconds have passed since the last draw, or step == target. Not
  // interactive: a plain line once `plain_every` seconds have passed since the epoch started or
  // the last plain line (never at the last step: the epoch's own line follows). Returns true when
  // it wrote.
  bool update(int64_t step, const NamedValues& values, double samples_per_s, double now);
  // Ends the line (interactive only).
  void finish();

  // The line for a given state, without '\r' or newline, at most columns - 1 characters (the last
  // column is left free: many terminals wrap when it is written). Pure; tested.
  std::string render(int64_t step, const NamedValues& values, double samples_per_s, double now, int columns) const;

  // The plain line for a given state: render's fields at full width, without the bar.
  std::string plain(int64_t step, const NamedValues& values, double samples_per_s, double now) const;

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
  double plain_every_ = 0, last_plain_ = 0;
  ProgressWriter write_;
  void emit(const std::string& text);
  size_t last_len_ = 0;
  bool drew_ = false;
};

}  // namespace ember::train
