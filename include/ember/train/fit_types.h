// The values the training engine (fit.h) takes and gives: options, per-epoch statistics, the
// out-of-memory events and the result. Plain data; callbacks.h and fit.h build on them.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/transforms.h"
#include "ember/train/progress.h"

namespace ember::dist {
class ProcessGroup;
}

namespace ember::train {

// Thrown by code the caller put inside a run — the forward of a model it built itself (ember.fit's
// module defined in Python, whose exception python/src keeps to raise again) — to stop the run as a
// signal does: the optimizer step it interrupts is dropped (its gradients, its random draws and its
// loss sums; the weights are the last step's), and the run ends Interrupted at that step boundary
// with its checkpoint, or, in an epoch's evaluation, as a signal there does (the epoch is evaluated
// again on resume). In the final evaluation (run_end.h) it ends the run as EvaluationStopped.
// `error_type` names what the caller's code raised ("ShapeError", "ZeroDivisionError"); a
// `shape_mismatch` is an op refusing shapes (ember's ShapeError), which planning reports as the
// model not taking the data's input.
class CallerRaised : public Error {
 public:
  CallerRaised(const std::string& what, std::string error_type, bool shape_mismatch)
      : Error(what), error_type_(std::move(error_type)), shape_mismatch_(shape_mismatch) {}
  const std::string& error_type() const noexcept { return error_type_; }
  bool shape_mismatch() const noexcept { return shape_mismatch_; }

 private:
  std::string error_type_;
  bool shape_mismatch_ = false;
};

struct FitOptions {
  int64_t epochs = 1;
  int64_t batch_size = 64;          // micro-batch: samples per forward/backward
  int64_t accumulate = 1;           // micro-batches per optimizer step (effective batch = batch_size x accumulate)
  Device device = Device::cpu();
  uint64_t seed = 0;
  // The compute threads are the process's (set_num_threads, ember/ops.h); checkpoints record them.
  int workers = 1;                  // data-loading threads (0: batches assembled on this thread)
  data::TransformOptions transforms;  // per-sample augmentation and normalisation
  double label_smoothing = 0.0;     // training loss only (the test loss is plain cross-entropy)
  // Model selection ("best", early stopping) uses a validation set, never the test set: `val` when
  // given (an image folder's val/), else a seeded `val_split` share of the training set; with
  // neither (or a set too small to hold a sample of any class out), the test set (--val-split 0).
  double val_split = 0.0;
  const data::Dataset* val = nullptr;
  int64_t early_stop_patience = 0;  // epochs without a validation improvement before stopping (0: off)
  bool device_resident = false;     // the whole dataset uploaded to the device once (LoaderOptions)
  int64_t log_every = 50;           // optimizer steps per "step" record in metrics.jsonl, and per
                                    // device->host read of the running loss (0: once per epoch)
  int64_t eval_batch_size = 0;      // 0: max(batch_size, 256)
  bool recover_oom = true;          // halve the micro-batch on OutOfMemoryError (see fit.h)
  // What the progress callback prints within an epoch (progress.h: progress_rule) and where to
  // (empty: stdout). The default prints nothing.
  ProgressRule progress{false, false, false, 0};
  ProgressWriter progress_out;
  // A CUDA run samples its GPU through NVML this often on a background thread (gpu_monitor.h): the
  // progress line, "gpu" records in metrics.jsonl / TensorBoard, one hint when it idles. 0: off.
  double gpu_sample_seconds = 5;
  std::filesystem::path run_dir;    // metrics.jsonl and checkpoints/ go here (empty: no files)
  std::string model_name, dataset_name, config_json;
  int64_t stop_after_steps = 0;     // > 0: behave as if interrupted after this many optimizer steps (tests)
  // Non-zero: finish the step (or stop the epoch's evaluation after its batch), checkpoint, return.
  const std::atomic<int>* stop_signal = nullptr;
  // Between metric reads (log_every), the loss and the weights are checked for inf/NaN at most
  // this often, so a diverging run stops within about this long of its first non-finite value
  // however long the log interval is (0: only at reads; data-parallel runs check at reads only).
  double finite_check_seconds = 1.0;
  // Data-parallel training (data_parallel.h) when a group of more than one rank is given: every
  // rank calls run() with the same options; batch_size is per rank (the global batch is
  // world x batch_size x accumulate). Rank 0 alone writes run_dir. Not owned; outlives the Fitter.
  dist::ProcessGroup* process_group = nullptr;
  bool overlap_grad_reduce = true;  // all-reduce buckets during backward (false: after it)
  size_t first_bucket_bytes = size_t(1) << 20, bucket_bytes = size_t(25) << 20;  // GradBucketer's
};

struct EpochStats {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0;
  double val_loss = NAN, val_acc = NAN;  // NAN when the run selects on the test set
  double samples_per_s = 0, data_wait = 0 /* fraction */, seconds = 0;
  double lr = 0;          // the learning rate the epoch's last optimizer step used
  double comm_wait = 0;  // fraction of the training time waiting on the gradient all-reduce (data-parallel)
  bool improved = false;  // the selection metric (val_acc, else test_acc) reached a new best
  // Dynamic loss scaling (fp16, loss_scaling.h): optimizer steps of the epoch skipped for inf/NaN
  // gradients, and the scale at its end (NAN when the loss is not scaled).
  int64_t skipped_steps = 0;
  double loss_scale = NAN;
};

enum class FitStatus {
  Completed,
  Interrupted,    // a signal or stop_after_steps: checkpointed at an optimizer-step boundary
  NonFiniteLoss,  // the loss or the weights became inf/NaN; nothing non-finite was checkpointed
  EarlyStopped,   // early_stop_patience epochs without a validation improvement (a normal end)
  OutOfMemory,    // out of memory at micro-batch 1 (or outside the recoverable stages)
  RunDirLost,     // run_dir was removed or replaced while training: nothing more was written there
};

// The micro-batch was halved after an OutOfMemoryError (accumulation doubled: same effective batch).
struct OomEvent {
  int64_t epoch = 0;       // 1-based
  int64_t step = 0;        // optimizer steps completed when it happened
  int64_t micro_batch = 0, accumulate = 0;          // before
  int64_t new_micro_batch = 0, new_accumulate = 0;  // after
  std::string what;        // the allocator's message
};

struct FitResult {
  FitStatus status = FitStatus::Completed;
  int signal = 0;                   // the signal that interrupted it (SIGINT/SIGTERM), 0 for stop_after_steps
  std::vector<EpochStats> epochs;   // of this invocation
  int64_t step = 0;                 // optimizer steps completed
  int64_t epoch = 0;                // epochs completed
  std::string message;              // NonFiniteLoss, EarlyStopped, OutOfMemory, RunDirLost: what happened (and why)
  double best_test_acc = 0;         // the test accuracy of the selected epoch
  double best_metric = 0;           // the selection metric's best value (val_acc, or test_acc without val)
  int64_t best_epoch = 0;           // 1-based; 0: none yet
  std::string selected_on = "test"; // "val" or "test"
  int64_t val_size = 0;             // validation samples (0: selection on the test set)
  int64_t micro_batch = 0, accumulate = 0;  // at the end (after any out-of-memory halving)
  std::vector<OomEvent> oom_events;
  int64_t host_reads = 0;           // device->host reads of training metrics in this invocation
  int world_size = 1;               // ranks that trained (data-parallel)
  double comm_seconds = 0;          // this rank's time waiting on gradient all-reduces, this invocation
  int64_t skipped_steps = 0;        // optimizer steps skipped by the loss scaler in this invocation
  double loss_scale = NAN;          // the loss scale at the end (NAN when the loss is not scaled)
};

}  // namespace ember::train
