// The fit loop: epochs of shuffled mini-batches, forward, cross-entropy, backward, optimizer step,
// evaluation on the test set after each epoch, metrics, checkpoints and a stop on request or on a
// non-finite loss. The CLI (`ember train`) builds the pieces and prints; this file does the work.
//
// Batches come from ember::data::DataLoader (worker threads, bounded prefetch, transforms), so
// data loading overlaps compute and the data-wait share of each epoch is measured.
// Determinism: the batch order of an epoch depends only on (seed, epoch), dropout draws from
// default_generator() whose state is checkpointed, and a checkpoint records the data position
// (batch_in_epoch). So on the CPU with the same thread count, a run stopped and resumed ends with
// bitwise the same weights as one that ran straight through.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/loader.h"
#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/train/checkpoint.h"
#include "ember/train/dataset.h"
#include "ember/train/progress.h"

namespace ember::train {

struct FitOptions {
  int64_t epochs = 1;
  int64_t batch_size = 64;          // micro-batch: samples per forward/backward
  int64_t accumulate = 1;           // micro-batches per optimizer step (effective batch = batch_size x accumulate)
  Device device = Device::cpu();
  uint64_t seed = 0;
  int threads = 1;
  int workers = 1;                  // data-loading threads (0: batches assembled on this thread)
  data::TransformOptions transforms;  // per-sample augmentation and normalisation
  double label_smoothing = 0.0;     // training loss only (the test loss is plain cross-entropy)
  // Model selection ("best", early stopping) uses a validation set, never the test set: `val` when
  // given (an image folder's val/), else a seeded `val_split` share of the training set; with
  // neither, the test set (the old behaviour, --val-split 0).
  double val_split = 0.0;
  const data::Dataset* val = nullptr;
  int64_t early_stop_patience = 0;  // epochs without a validation improvement before stopping (0: off)
  bool device_resident = false;     // the whole dataset uploaded to the device once (LoaderOptions)
  int64_t log_every = 50;           // steps per "step" record in metrics.jsonl
  bool interactive = false;         // progress bar with '\r' redraws (stdout is a terminal)
  std::filesystem::path run_dir;    // metrics.jsonl and checkpoints/ go here
  std::string model_name, dataset_name, config_json;
  int64_t stop_after_steps = 0;     // > 0: behave as if interrupted after this many steps (tests)
  const std::atomic<int>* stop_signal = nullptr;  // non-zero: finish the step, checkpoint, return
};

struct EpochStats {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0;
  double val_loss = NAN, val_acc = NAN;  // NAN when the run selects on the test set
  double samples_per_s = 0, data_wait = 0 /* fraction */, seconds = 0, lr = 0;
};

enum class FitStatus { Completed, Interrupted, NonFiniteLoss };

struct FitResult {
  FitStatus status = FitStatus::Completed;
  int signal = 0;                   // the signal that interrupted it (SIGINT/SIGTERM), 0 for stop_after_steps
  std::vector<EpochStats> epochs;   // of this invocation
  int64_t step = 0;                 // global step reached
  int64_t epoch = 0;                // epochs completed
  std::string message;              // for NonFiniteLoss: what happened and likely causes
  double best_test_acc = 0;
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t samples = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted]
  std::vector<double> per_class_accuracy;
};

// Everything that is checkpointed: model state ("model/..."), optimizer ("optim/..."), scheduler
// ("sched/...").
NamedTensors training_state(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched);
// Restores training_state() from a checkpoint; FormatError naming the first mismatched tensor.
void restore_training_state(const Checkpoint& ck, nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched);

// Evaluates in eval mode without autograd, batch by batch on `device`.
EvalResult evaluate(nn::Module& model, const data::Dataset& test, int64_t batch_size, Device device, int workers = 1);

class Fitter {
 public:
  Fitter(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched, bool sched_per_step,
         const data::Dataset& train, const data::Dataset& test, FitOptions opt_);
  // Restores the model, optimizer and schedule from `ck` now, so that a checkpoint that does not fit
  // fails (FormatError naming the file and the tensor) before the caller writes anything; run()
  // then continues from its epoch, step and data position. `ck` must outlive run().
  void resume_from(const Checkpoint& ck);
  // Starts from `resume` when given (as resume_from), else from the checkpoint given to
  // resume_from, else from scratch.
  FitResult run(const Checkpoint* resume = nullptr);
  // Called after each epoch with its stats (the CLI prints the table row).
  std::function<void(const EpochStats&)> on_epoch;

 private:
  void save(const std::string& tag, int64_t epoch, int64_t step, int64_t batch_in_epoch, double best, double last,
            const NamedValues& partial);
  nn::Module& model_;
  optim::Optimizer& opt_;
  optim::LRScheduler* sched_;
  bool sched_per_step_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  FitOptions o_;
  const Checkpoint* resume_ = nullptr;  // restored by resume_from
};

}  // namespace ember::train
