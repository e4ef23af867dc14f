// metrics.jsonl: one JSON object per line, appended and flushed as training runs, so a crashed or
// interrupted run keeps everything up to its last line. Every record has "kind" ("step" for a
// step interval (the last one of an epoch may be shorter), "epoch" for an epoch summary, "resume"
// where a resumed run picked up, "oom" where an out-of-memory error halved the micro-batch, "test"
// ...), "epoch", "step" and "time" (wall clock, unix seconds); the rest are numbers. Non-finite
// numbers are written as null (JSON has no NaN) and read back as NaN.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/train/progress.h"

namespace ember::train {

struct MetricRecord {
  std::string kind;
  int64_t epoch = 0;
  int64_t step = 0;
  NamedValues values;
  double time = 0;  // unix seconds; 0: not recorded (written as the time of writing)
  double get(const std::string& name, double fallback = 0.0) const;  // fallback when absent
};

class MetricsWriter {
 public:
  // Opens `path` for appending (creating it). Throws IOError naming the path.
  explicit MetricsWriter(const std::filesystem::path& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const MetricRecord& r);  // one line, flushed

 private:
  std::FILE* f_ = nullptr;
  std::filesystem::path path_;
};

std::string to_json_line(const MetricRecord& r);  // without the newline; "time" when r.time > 0
double unix_time();  // now, unix seconds
// Reads a metrics file (none: no records; a FIFO, a device or more than io::kMetricsFile's cap:
// IOError); malformed lines (a crash mid-write) are skipped. Records whose step is
// not above an earlier one of the same kind replace it (a resumed run rewrites the tail).
std::vector<MetricRecord> read_metrics(const std::filesystem::path& path);

}  // namespace ember::train
