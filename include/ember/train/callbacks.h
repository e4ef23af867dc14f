// Callbacks of the training engine (fit.h): small objects called at fixed points of a run, and the
// built-in ones: the NaN guard, checkpointing, early stopping, metrics sinks, the progress bar and
// the per-epoch function. The engine calls them in the order they were added; its own list is
//   NanGuard, MetricsLogger, ProgressCallback, EpochFunction (Fitter::on_epoch), CheckpointCallback,
//   EarlyStopping, then the caller's (Fitter::add_callback),
// so a checkpoint never holds what the guard found non-finite.
//
// When each is called (one thread, the engine's):
//   on_train_begin   before the first step (after a resume was restored)
//   on_epoch_begin   before the epoch's first step
//   on_step_end      after each optimizer step; ctx holds host-side counts only (no device reads)
//   on_sync          at each read of the running metrics (every log_every steps, at the end of an
//                    epoch, and before an interrupted run's checkpoint): the interval's host values
//   on_oom           after the micro-batch was halved
//   on_epoch_end     after the epoch's evaluation
//   on_train_end     once, with the result (also after an interruption or a stop)
// A callback ends the run with ctx.stop(status, message); the engine stops at the next boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/train/fit_types.h"
#include "ember/train/metrics.h"
#include "ember/train/progress.h"

namespace ember::train {

struct FitContext {
  FitContext(const FitOptions& o, nn::Module& m, optim::Optimizer& opt) : options(o), model(m), optimizer(opt) {}
  const FitOptions& options;
  nn::Module& model;
  optim::Optimizer& optimizer;
  int64_t epoch = 0;             // 0-based epoch in progress
  int64_t step = 0;              // optimizer steps completed
  int64_t step_in_epoch = 0;     // optimizer steps of this epoch completed
  int64_t steps_per_epoch = 0;
  int64_t micro_batch = 0, accumulate = 0;
  int64_t epoch_samples = 0;     // training samples of this epoch so far
  double epoch_seconds = 0;      // training time of this epoch so far (whole epoch, across a resume)
  double seconds_per_epoch = 0;  // wall time of whole epochs in this invocation (0: none yet): the ETA
  double best_metric = 0;        // the selection metric's best, and its epoch (1-based; 0: none)
  int64_t best_epoch = 0;
  bool selects_on_val = false;
  int64_t resumed_at_batch = -1; // the checkpoint's data position when the run resumed, else -1
  FitStatus status = FitStatus::Completed;
  std::string message;
  int signal = 0;
  // Writes a checkpoint `tag` ("latest") at the current position: the engine's, set before the run.
  std::function<void(const std::string& tag)> save_checkpoint;

  void stop(FitStatus s, std::string why) {
    if (status != FitStatus::Completed) return;  // the first reason wins
    status = s;
    message = std::move(why);
  }
  bool stopping() const { return status != FitStatus::Completed; }
};

// The steps since the previous read of the running metrics.
struct IntervalStats {
  int64_t first_step = 0, last_step = 0;  // global optimizer steps (first_step .. last_step]
  int64_t samples = 0;
  double loss = NAN, acc = NAN;           // means over the interval (NAN when it had no samples)
  double epoch_loss = NAN, epoch_acc = NAN;  // means over the epoch so far
  double seconds = 0, samples_per_s = 0;
  double lr = 0;                          // the learning rate the interval's last step used
  double comm_seconds = 0;                // waiting on the gradient all-reduce in the interval (data-parallel)
  bool loss_finite = true, weights_finite = true;
  int64_t finite_through = 0;             // the last step a read or a probe between reads found finite
  int64_t skipped_steps = 0;              // steps the loss scaler skipped (inf/NaN gradients)
  double loss_scale = NAN;                // the scale now; NAN when the loss is not scaled
  bool epoch_end = false;                 // the read at the end of an epoch
  // false for the read an interrupt makes to checkpoint the epoch's sums: the interval was cut short,
  // so no "step" record is written (a resumed run logs the same steps as one that ran straight).
  bool logged = true;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(FitContext&) {}
  virtual void on_epoch_begin(FitContext&) {}
  virtual void on_step_end(FitContext&) {}
  virtual void on_sync(FitContext&, const IntervalStats&) {}
  virtual void on_oom(FitContext&, const OomEvent&) {}
  virtual void on_epoch_end(FitContext&, const EpochStats&) {}
  virtual void on_train_end(FitContext&, const FitResult&) {}
};

// Stops the run when the loss of an interval or any weight is inf/NaN (checked at every read,
// so before every checkpoint): FitStatus::NonFiniteLoss, with the steps and likely causes.
class NanGuard final : public Callback {
 public:
  void on_sync(FitContext& ctx, const IntervalStats& s) override;
};

// latest.json after each epoch (and best.json when the selection metric improved), and at an
// interruption. Never when the run is stopping for a non-finite loss or weights.
class CheckpointCallback final : public Callback {
 public:
  explicit CheckpointCallback(std::filesystem::path dir) : dir_(std::move(dir)) {}
  void on_epoch_end(FitContext& ctx, const EpochStats& s) override;
  void on_train_end(FitContext& ctx, const FitResult& r) override;

 private:
  std::filesystem::path dir_;
};

// Stops after `patience` epochs without a new best of the selection metric (FitStatus::EarlyStopped).
class EarlyStopping final : public Callback {
 public:
  explicit EarlyStopping(int64_t patience) : patience_(patience) {}
  void on_epoch_end(FitContext& ctx, const EpochStats& s) override;

 private:
  int64_t patience_;
};

// Where metric records go. Every record carries its wall-clock time (unix seconds).
class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  virtual void write(const MetricRecord& r) = 0;
};
// metrics.jsonl (metrics.h).
class JsonlSink final : public MetricsSink {
 public:
  explicit JsonlSink(const std::filesystem::path& path) : w_(path) {}
  void write(const MetricRecord& r) override { w_.write(r); }

 private:
  MetricsWriter w_;
};
// TensorBoard event files in the run directory (TensorBoardMetrics: the tags of metrics.h, a resume
// as a restart marker so TensorBoard drops the points logged again).
class TensorBoardSink final : public MetricsSink {
 public:
  explicit TensorBoardSink(const std::filesystem::path& dir) : w_(dir) {}
  void write(const MetricRecord& r) override { w_.write(r); }

 private:
  TensorBoardMetrics w_;
};
// A scalar writer such as TensorBoard's write_scalar(tag, step, value, wall_time): each value of a
// record becomes the scalar "<kind>/<name>" (e.g. "epoch/val_acc") at the record's step.
class ScalarSink final : public MetricsSink {
 public:
  using WriteScalar = std::function<void(const std::string& tag, int64_t step, double value, double wall_time)>;
  explicit ScalarSink(WriteScalar fn) : fn_(std::move(fn)) {}
  void write(const MetricRecord& r) override;

 private:
  WriteScalar fn_;
};

// The run's metric records: "resume" at a resumed start, "step" per interval, "epoch" per epoch,
// "oom" per halving, to every sink.
class MetricsLogger final : public Callback {
 public:
  void add_sink(std::shared_ptr<MetricsSink> s) { sinks_.push_back(std::move(s)); }
  void on_train_begin(FitContext& ctx) override;
  void on_sync(FitContext& ctx, const IntervalStats& s) override;
  void on_oom(FitContext& ctx, const OomEvent& e) override;
  void on_epoch_end(FitContext& ctx, const EpochStats& s) override;

 private:
  void write(MetricRecord r);
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
};

// The progress bar (progress.h) of each epoch: step counts every step, loss and accuracy as of the
// latest read; redrawn on a terminal, a plain line every so often elsewhere (the rule's).
class ProgressCallback final : public Callback {
 public:
  explicit ProgressCallback(ProgressRule rule, ProgressWriter out = {}) : rule_(rule), out_(std::move(out)) {}
  void on_epoch_begin(FitContext& ctx) override;
  void on_step_end(FitContext& ctx) override;
  void on_sync(FitContext& ctx, const IntervalStats& s) override;
  void on_epoch_end(FitContext&, const EpochStats&) override { finish(); }
  void on_train_end(FitContext&, const FitResult&) override { finish(); }
  // The status field of the line from now on (GpuMonitorCallback: the GPU's figures).
  void set_status(std::string status);

 private:
  void finish();
  ProgressRule rule_;
  ProgressWriter out_;
  std::unique_ptr<ProgressBar> bar_;
  NamedValues values_;
  std::string status_;
};

// Calls a function with each epoch's stats (the CLI's table row).
class EpochFunction final : public Callback {
 public:
  explicit EpochFunction(std::function<void(const EpochStats&)> fn) : fn_(std::move(fn)) {}
  void on_epoch_end(FitContext&, const EpochStats& s) override {
    if (fn_) fn_(s);
  }

 private:
  std::function<void(const EpochStats&)> fn_;
};

// Calls a function at each halving (the CLI says so).
class OomFunction final : public Callback {
 public:
  explicit OomFunction(std::function<void(const OomEvent&)> fn) : fn_(std::move(fn)) {}
  void on_oom(FitContext&, const OomEvent& e) override {
    if (fn_) fn_(e);
  }

 private:
  std::function<void(const OomEvent&)> fn_;
};

}  // namespace ember::train
