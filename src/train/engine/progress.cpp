// What a run prints for a verbosity (progress_rule), and ProgressBar: Keras-style '\r' redraws,
// rate-limited, fitted to the terminal's width by dropping the least important fields first; a
// plain line every so often when not on a terminal.
#include "ember/train/progress.h"

#include "ember/core/error.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ember::train {

Verbosity parse_verbosity(const std::string& v) {
  if (v == "auto" || v == "1") return Verbosity::ProgressBar;
  if (v == "0") return Verbosity::Silent;
  if (v == "2") return Verbosity::EpochLines;
  throw ValueError(fmt::format("verbose must be auto, 0, 1 or 2 (got '{}')", v),
                   "0 silent, 1 a progress bar (the default), 2 one line per epoch, as Keras's fit(verbose=)");
}

std::vector<std::string> verbosity_names() { return {"auto", "0", "1", "2"}; }

ProgressRule progress_rule(Verbosity v, bool terminal) {
  ProgressRule r;
  switch (v) {
    case Verbosity::Silent:
      r.banner = r.epoch_lines = false;
      break;
    case Verbosity::ProgressBar:
      r.redraw = terminal;
      r.plain_every = terminal ? 0 : kPlainProgressSeconds;
      break;
    case Verbosity::EpochLines:
      break;
  }
  return r;
}

ProgressBar::ProgressBar(int64_t target, bool interactive, std::FILE* out, double interval, int bar_width, int columns,
                         double plain_every)
    : target_(std::max<int64_t>(target, 1)),
      interactive_(interactive),
      out_(out),
      interval_(interval),
      bar_width_(std::max(bar_width, 1)),
      columns_(columns),
      plain_every_(plain_every) {}

void ProgressBar::emit(const std::string& text) {
  if (write_) return write_(text);
  fmt::print(out_, "{}", text);
  std::fflush(out_);
}

std::string ProgressBar::format_duration(double s) {
  // Beyond ~31 years an ETA means nothing, and llround of a value past 2^63 is undefined.
  if (!std::isfinite(s) || s < 0 || s >= 1e9) return "?";
  auto t = int64_t(std::llround(s));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

int ProgressBar::terminal_columns(std::FILE* out) {
  winsize ws{};
  if (out && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return int(ws.ws_col);
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0 && v < 100000) return int(v);
  }
  return 80;
}

namespace {
// render's width for the plain line: every field, no bar, no width limit.
constexpr int kPlainColumns = -1;

// The pieces of a line, most important first; `level` says how many of the optional ones to drop.
struct Parts {
  std::string epoch, steps, eta, run_eta, rate, status;
  std::vector<std::string> values;
};

std::string bar_text(int width, int64_t step, int64_t target) {
  std::string bar(size_t(width), '.');
  const int done = int(double(width) * double(step) / double(target));
  for (int i = 0; i < done; ++i) bar[size_t(i)] = '=';
  if (step < target && done < width) bar[size_t(done)] = '>';
  return "[" + bar + "]";
}

// Levels of degradation: 0 everything; 1 no status (the GPU's figures); 2 no samples/s; 3 only the
// first value (the loss); 4 no bar; 5 no values; 6 the run's ETA unlabelled ("(run 4:15)" for
// "(run ETA 4:15)"); 7 no run ETA.
std::string compose(const Parts& p, int full_level, const std::string& bar) {
  const bool status = full_level == 0 && !p.status.empty();
  const int level = std::max(0, full_level - 1);
  std::string line = p.epoch.empty() ? "" : p.epoch + " ";
  line += p.steps;
  if (level < 3 && !bar.empty()) line += " " + bar;
  line += " " + p.eta;
  if (level < 6 && !p.run_eta.empty()) line += level < 5 ? " (run ETA " + p.run_eta + ")" : " (run " + p.run_eta + ")";
  const size_t nv = level < 2 ? p.values.size() : level < 4 ? std::min<size_t>(1, p.values.size()) : 0;
  for (size_t i = 0; i < nv; ++i) line += " - " + p.values[i];
  if (level < 1 && !p.rate.empty()) line += " - " + p.rate;
  if (status) line += " - " + p.status;
  return line;
}
}  // namespace

std::string ProgressBar::render(int64_t step, const NamedValues& values, double samples_per_s, double now,
                                int columns) const {
  step = std::clamp<int64_t>(step, 0, target_);
  const int digits = int(std::to_string(target_).size());
  Parts p;
  if (pos_.epoch > 0) {
    const int edigits = int(std::to_string(std::max(pos_.epochs, pos_.epoch)).size());
    p.epoch = fmt::format("epoch {:>{}}/{}", pos_.epoch, edigits, std::max(pos_.epochs, pos_.epoch));
  }
  p.steps = fmt::format("{:>{}}/{}", step, digits, target_);
  const double per_step = step > 0 ? now / double(step) : NAN;
  const double epoch_eta = step < target_ ? per_step * double(target_ - step) : 0.0;
  p.eta = step < target_ ? "ETA " + format_duration(epoch_eta) : "in " + format_duration(now);
  if (pos_.epoch > 0 && pos_.epochs > pos_.epoch) {
    const double per_epoch = pos_.seconds_per_epoch > 0 ? pos_.seconds_per_epoch : per_step * double(target_);
    p.run_eta = format_duration(epoch_eta + double(pos_.epochs - pos_.epoch) * per_epoch);
  }
  for (const auto& [k, v] : values) p.values.push_back(fmt::format("{}: {:.4f}", k, v));
  if (samples_per_s > 0) p.rate = fmt::format("{:.0f} samples/s", samples_per_s);
  p.status = status_;

  if (columns == kPlainColumns) return compose(p, 0, "");
  const size_t room = size_t(std::max(columns, 2) - 1);
  constexpr int kMinBar = 10;
  for (int level = 0; level <= 7; ++level) {
    if (level < 4) {
      // The bar takes what is left, up to its full width; below kMinBar it is not worth showing.
      const size_t without = compose(p, level, "[]").size();
      if (without + kMinBar <= room)
        return compose(p, level, bar_text(int(std::min<size_t>(size_t(bar_width_), room - without)), step, target_));
      continue;
    }
    std::string line = compose(p, level, "");
    if (line.size() <= room) return line;
  }
  return compose(p, 7, "").substr(0, room);
}

std::string ProgressBar::plain(int64_t step, const NamedValues& values, double samples_per_s, double now) const {
  return render(step, values, samples_per_s, now, kPlainColumns);
}

bool ProgressBar::update(int64_t step, const NamedValues& values, double samples_per_s, double now) {
  if (!interactive_) {
    if (plain_every_ <= 0 || step >= target_ || now - last_plain_ < plain_every_) return false;
    emit(plain(step, values, samples_per_s, now) + "\n");
    last_plain_ = now;
    return true;
  }
  if (step < target_ && now - last_draw_ < interval_) return false;
  const int columns = columns_ > 0 ? columns_ : terminal_columns(out_);
  std::string line = render(step, values, samples_per_s, now, columns);
  // Pad with spaces so a shorter line fully covers the previous one, never past the last column
  // but one (a terminal narrowed since the last draw must not wrap either).
  const size_t len = line.size();
  const size_t cover = std::min(last_len_, size_t(std::max(columns, 2) - 1));
  if (len < cover) line.append(cover - len, ' ');
  emit("\r" + line);
  last_len_ = len;
  last_draw_ = now;
  drew_ = true;
  return true;
}

void ProgressBar::finish() {
  if (interactive_ && drew_) emit("\n");
  drew_ = false;
}

}  // namespace ember::train
