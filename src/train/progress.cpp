// ProgressBar: Keras-style '\r' redraws, rate-limited, silent when not on a terminal.
#include "ember/train/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ember::train {

ProgressBar::ProgressBar(int64_t target, bool interactive, std::FILE* out, double interval, int width)
    : target_(std::max<int64_t>(target, 1)), interactive_(interactive), out_(out), interval_(interval), width_(width) {}

std::string ProgressBar::format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = int64_t(std::llround(s));
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

std::string ProgressBar::render(int64_t step, const NamedValues& values, double samples_per_s, double now) const {
  step = std::clamp<int64_t>(step, 0, target_);
  const int digits = int(std::to_string(target_).size());
  std::string bar(size_t(width_), '.');
  const int done = int(double(width_) * double(step) / double(target_));
  for (int i = 0; i < done; ++i) bar[size_t(i)] = '=';
  if (step < target_ && done < width_) bar[size_t(done)] = '>';
  std::string line = fmt::format("{:>{}}/{} [{}]", step, digits, target_, bar);
  if (step < target_) {
    double eta = step > 0 ? now / double(step) * double(target_ - step) : NAN;
    line += " - ETA: " + format_duration(eta);
  } else {
    line += " - " + format_duration(now);
  }
  for (const auto& [k, v] : values) line += fmt::format(" - {}: {:.4f}", k, v);
  if (samples_per_s > 0) line += fmt::format(" - {:.0f} samples/s", samples_per_s);
  return line;
}

bool ProgressBar::update(int64_t step, const NamedValues& values, double samples_per_s, double now) {
  if (!interactive_) return false;
  if (step < target_ && now - last_draw_ < interval_) return false;
  std::string line = render(step, values, samples_per_s, now);
  // Pad with spaces so a shorter line fully covers the previous one.
  size_t len = line.size();
  if (len < last_len_) line.append(last_len_ - len, ' ');
  fmt::print(out_, "\r{}", line);
  std::fflush(out_);
  last_len_ = len;
  last_draw_ = now;
  drew_ = true;
  return true;
}

void ProgressBar::finish() {
  if (interactive_ && drew_) {
    fmt::print(out_, "\n");
    std::fflush(out_);
  }
  drew_ = false;
}

}  // namespace ember::train
