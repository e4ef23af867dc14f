// metrics.jsonl: one JSON object per line, appended and flushed as training runs, so a crashed or
// interrupted run keeps everything up to its last line. Every record has "kind" ("step" for a
// step interval (the last one of an epoch may be shorter), "epoch" for an epoch summary, "resume"
// where a resumed run picked up, "oom" where an out-of-memory error halved the micro-batch, "test"
// ...), "epoch", "step" and "time" (wall-clock unix seconds,
// when it was written); the rest are numbers. Non-finite numbers are written as null (JSON has no
// NaN) and read back as NaN. A writer can also send each record to TensorBoard (TensorBoardMetrics).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ember/train/progress.h"

namespace ember::train {

struct MetricRecord {
  std::string kind;
  int64_t epoch = 0;
  int64_t step = 0;
  NamedValues values;
  double time = 0;  // unix seconds; 0: MetricsWriter::write stamps it with the current time
  double get(const std::string& name, double fallback = 0.0) const;  // fallback when absent
};

// The TensorBoard tag a metrics.jsonl field is plotted under, "" for fields that are not:
//   step records:  loss -> train/loss, acc -> train/acc, lr -> lr, samples_per_s -> samples_per_s
//   epoch records: train_loss -> epoch/train_loss, train_acc -> epoch/train_acc, test_loss/test_acc ->
//                  test/loss, test/acc, val_loss/val_acc -> val/loss, val/acc, data_wait -> data_wait,
//                  samples_per_s -> epoch/samples_per_s, seconds -> epoch/seconds, lr -> epoch/lr
//   data-parallel: step comm_ms_per_step -> dist/comm_ms_per_step, epoch comm_wait -> dist/comm_wait
//   CUDA runs:     gpu records (gpu_monitor.h) -> gpu/utilization, gpu/memory_used_gib, gpu/power_w, ...
//   other kinds:   <kind>/<field> ("resume" records are not plotted: they become a SessionLog START
//                  one step after the checkpoint's, so TensorBoard drops the points a resumed run
//                  logs again instead of showing them twice)
std::string tensorboard_tag(const std::string& kind, const std::string& field);

// Sends records to a TensorBoard event file in `dir` (io::TensorBoardWriter): every plotted field
// of a record becomes one scalar at the record's step and time, flushed per record. A metrics sink.
class TensorBoardMetrics {
 public:
  explicit TensorBoardMetrics(const std::filesystem::path& dir);  // IOError naming the file
  ~TensorBoardMetrics();
  void write(const MetricRecord& r);
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class MetricsWriter {
 public:
  // Opens `path` for appending (creating it); with `tensorboard`, also starts an event file next to
  // it (TensorBoardMetrics), so `tensorboard --logdir runs` shows the run. Throws IOError naming the path.
  explicit MetricsWriter(const std::filesystem::path& path, bool tensorboard = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const MetricRecord& r);  // one line, flushed (and the TensorBoard scalars)

 private:
  std::FILE* f_ = nullptr;
  std::unique_ptr<TensorBoardMetrics> tensorboard_;
  std::filesystem::path path_;
};

std::string to_json_line(const MetricRecord& r);  // without the newline; "time" when r.time > 0
double unix_time();  // now, unix seconds
// Reads a metrics file (none: no records; a FIFO, a device or more than io::kMetricsFile's cap:
// IOError); malformed lines (a crash mid-write) are skipped. Records whose step is
// not above an earlier one of the same kind replace it (a resumed run rewrites the tail).
std::vector<MetricRecord> read_metrics(const std::filesystem::path& path);

}  // namespace ember::train
