// The training engine: epochs of shuffled batches, each optimizer step run stage by stage
// (step.h: micro-batches of forward, loss and backward, gradient hooks, unscale and check, the
// update), then the scheduler and the callbacks (callbacks.h: NaN guard, metrics sinks, progress
// bar, checkpoints, early stopping). The CLI (`ember train`) builds the pieces and prints; the
// benchmarks run the same TrainStep.
//
// Steps: `step` counts OPTIMIZER steps. One step consumes `accumulate` micro-batches of
// `batch_size` samples (effective batch E = batch_size x accumulate); each micro-batch's loss is
// weighted by its share of the step's samples, so the gradients are those of the big batch's mean.
// An epoch of N samples has ceil(N / E) steps; its last step takes what is left (fewer or smaller
// micro-batches, weighted by their true sizes: PyTorch's "step with what you have", drop_last=False).
//
// Device->host reads: the loss and accuracy are summed on the device and read back once per
// log_every steps (with a finiteness probe of the weights), at the end of each epoch and before
// an interrupted run's checkpoint: never per step. Between reads the loss and the weights are
// probed for inf/NaN about once a second (finite_check_seconds), so a diverging run stops within
// about a second of its first non-finite value.
//
// Signals (stop_signal): the run stops at the next optimizer-step boundary, or after the current
// batch of an epoch's evaluation (the checkpoint then resumes at that evaluation: the per-epoch
// schedule steps after it), and checkpoints there.
//
// The run directory is watched (io::DirWatch): removed or replaced while training, the run stops
// with FitStatus::RunDirLost at the next read instead of writing into unlinked files, and a
// checkpoint is never written into a re-created directory (IOError).
//
// Model selection: "best" and early stopping use the validation set (FitOptions::val, else a
// seeded val_split share of the training set, validation.h); the test set is evaluated each epoch
// and reported (EpochStats::test_*), never selected on, unless there is no validation set.
//
// Out of memory: an OutOfMemoryError in the forward, loss or backward of a step (or in assembling
// its batches) empties the allocator caches, halves the micro-batch (to the largest divisor of E
// at most half of it) and raises accumulate to keep E, says so (on_oom callbacks, an "oom" record
// in metrics.jsonl, FitResult::oom_events) and redoes the step from its first micro-batch (the
// dropout generator rewound). At micro-batch 1, or in the optimizer step (its state does not shrink
// with the batch), the run ends with FitStatus::OutOfMemory and the sizes in the message.
// BatchNorm running statistics keep the updates of the failed attempt's micro-batches.
//
// Checkpoints only at optimizer-step boundaries, with the data position (micro-batches of the
// recorded micro-batch size), the running sums, the micro-batch and accumulate in use (a run
// halved by an out-of-memory error resumes halved) and the validation split's fraction and size.
// Data-parallel (FitOptions::process_group of W > 1 ranks; docs/distributed.md): every rank
// starts from rank 0's parameters and buffers; rank r trains on every W-th sample of each epoch's
// order from r on (PyTorch's DistributedSampler without padding), so step k of W ranks with batch
// B holds exactly the samples of step k of one process with batch W x B. Each micro-batch's loss is
// weighted by its share of the GLOBAL step and the gradients are summed (GradBucketer buckets
// launched during the last micro-batch's backward; none for the micro-batches before it), so an
// epoch's short last step, where ranks hold unequal shares (or none), still averages over exactly
// its samples. Batch norm normalises per rank; its running statistics are rank 0's (broadcast
// before each step and each evaluation, as PyTorch's broadcast_buffers). Evaluation is sharded
// and its sums gathered; the interval's sums, the NaN probe and stop signals too, so every rank
// stops, selects and early-stops alike. Rank 0 alone writes metrics and checkpoints (with every
// rank's dropout stream); a checkpoint resumes only with the world size that wrote it. An
// out-of-memory error ends a data-parallel run (no halving on one rank alone).
//
// Determinism: the batch order of an epoch depends only on (seed, epoch), dropout draws from
// default_generator() whose state is checkpointed, so on the CPU with the same thread count a run
// stopped and resumed ends with bitwise the same weights as one that ran straight through.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/loader.h"
#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/train/callbacks.h"
#include "ember/train/checkpoint.h"
#include "ember/train/evaluate.h"
#include "ember/train/fit_types.h"
#include "ember/train/progress.h"
#include "ember/train/step.h"

namespace ember::train {
namespace detail {
class DataParallel;
}

// Everything that is checkpointed: model state ("model/..."), optimizer ("optim/..."), scheduler
// ("sched/...").
NamedTensors training_state(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched);
// Restores training_state() from a checkpoint; FormatError naming the first mismatched tensor.
void restore_training_state(const Checkpoint& ck, nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched);

// Restores the model's state alone ("model/...") from a checkpoint: the weights of that epoch for
// evaluation. FormatError naming the file and the model when it does not fit.
void restore_model_state(const Checkpoint& ck, nn::Module& model);

// A checkpoint resumes only with the number of ranks that wrote it (`world`): the data shards, the
// position in the epoch and each rank's dropout stream depend on it. ValueError otherwise, with
// `hint` (default: the --nproc-per-node to pass).
void check_checkpoint_world(const CheckpointManifest& m, int world, const std::string& hint = "");

// Optimizer steps in an epoch of `samples` (ceil(samples / (batch_size x accumulate))): what a
// per-step schedule (OneCycle) needs. With a val_split, pass the training part's size
// (validation_split(...).kept.size()).
int64_t optimizer_steps_per_epoch(int64_t samples, int64_t batch_size, int64_t accumulate = 1);

class Fitter {
 public:
  // `test` is evaluated after each epoch; selection uses options.val, the validation_split of
  // `train` (options.val_split, validation.h: the samples `ember train --val-split` holds out), or `test`.
  Fitter(nn::Module& model, optim::Optimizer& optimizer, optim::LRScheduler* sched, bool sched_per_step,
         const data::Dataset& train, const data::Dataset& test, FitOptions options);
  ~Fitter();
  // Restores the model, optimizer and schedule from `ck` now, so that a checkpoint that does not fit
  // fails (FormatError naming the file and the tensor) before the caller writes anything; run()
  // then continues from its epoch, step and data position. `ck` must outlive run().
  void resume_from(const Checkpoint& ck);
  // Starts from `resume` when given (as resume_from), else from the checkpoint given to
  // resume_from, else from scratch.
  FitResult run(const Checkpoint* resume = nullptr);

  // Called after each epoch with its stats (the CLI prints the table row).
  std::function<void(const EpochStats&)> on_epoch;
  // Called when an out-of-memory error halved the micro-batch (the CLI prints one line).
  std::function<void(const OomEvent&)> on_oom;
  // Called after the built-in callbacks, in the order added.
  void add_callback(std::shared_ptr<Callback> cb) { user_callbacks_.push_back(std::move(cb)); }
  // Metric records go to metrics.jsonl (when run_dir is set) and to these.
  void add_sink(std::shared_ptr<MetricsSink> sink) { sinks_.push_back(std::move(sink)); }
  // The step's seams: precision policy, loss scaler, gradient hooks.
  TrainStep& step() { return step_; }
  // The data the run trains and selects on (after the validation split).
  const data::Dataset& train_set() const { return train_; }
  const data::Dataset* val_set() const { return val_; }

 private:
  struct Run;
  friend struct Run;
  nn::Module& model_;
  optim::Optimizer& optimizer_;
  optim::LRScheduler* sched_;
  bool sched_per_step_;
  data::Dataset train_;            // the training part (after a val_split)
  const data::Dataset& test_;
  std::optional<data::Dataset> split_val_;  // the val_split part
  const data::Dataset* val_ = nullptr;      // what selection uses; nullptr: the test set
  FitOptions options_;
  TrainStep step_;
  const Checkpoint* resume_ = nullptr;  // restored by resume_from
  std::vector<std::shared_ptr<Callback>> user_callbacks_;
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::unique_ptr<detail::DataParallel> dp_;  // with a process group of W > 1; its hooks live in step_
};

}  // namespace ember::train
