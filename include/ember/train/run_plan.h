// A training run planned from its settings (the table of ember/train/settings.h), the same for every
// caller — `ember train`, a C++ program, the Python package: which device and precision and why,
// the resume point, the run directory (named, checked, claimed and locked), the data and its
// validation split, the model (with --init-from and fine-tuning), optimizer and schedule, and the
// FitOptions the engine runs with. The caller parses its arguments, calls plan_run, shows the plan
// (the CLI's banner reads its fields), and runs it to its end (run_end.h: run_to_end); nothing is
// written before the run directory is claimed there. A plan is not changed once made: what only
// the caller knows (its stop signal, a terminal, its callbacks) goes in RunControls.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/io/run_dir.h"
#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/train/checkpoint.h"
#include "ember/train/device_choice.h"
#include "ember/train/fit.h"
#include "ember/train/precision_choice.h"
#include "ember/train/run_data.h"
#include "ember/train/run_dir.h"
#include "ember/train/run_report.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::train {

// The data-parallel job a run belongs to. The default is one process; train::DataParallelWorld
// (ember/train/run_world.h: torchrun/mpirun variables, gloo or nccl) is the job `ember train` runs.
class RunWorld {
 public:
  virtual ~RunWorld() = default;
  virtual bool leader() const { return true; }  // rank 0: owns and writes the run directory
  virtual int size() const { return 1; }
  // This rank's device, from the one chosen for the job.
  virtual Device rank_device(Device chosen, const std::string& spec) { return chosen; }
  // Meets the other ranks once the device and thread count are known.
  virtual void join(Device device, int threads) {}
  // Rank 0's run directory, for every rank (rank 0 passes its own).
  virtual std::filesystem::path shared_run_dir(const std::filesystem::path& mine) { return mine; }
  // Refuses ranks whose settings, data or build differ from rank 0's.
  virtual void check_same_run(const TrainSettings& s, const data::Dataset& train, const data::Dataset& test) {}
  // config.json's "distributed" object as JSON text ("" for one process).
  virtual std::string config_json() const { return ""; }
  // The engine's process group and its all-reduce options.
  virtual void configure(FitOptions& fit) {}
  // This process's rank (0 for one process), for messages.
  virtual int rank() const { return 0; }
  // The command that continues the run in `run_dir` after a stop.
  virtual std::string resume_command(const std::filesystem::path& run_dir) const;
  // The end of this rank's run (the others wait for rank 0's store to outlive their last collective).
  virtual void finish() {}
};

// What the caller of a planned run adds: what only it knows. The plan itself is not changed.
struct RunControls {
  // Non-zero: finish the step (or the evaluation batch), checkpoint and stop (the CLI's SIGINT /
  // SIGTERM handler, ember.fit's Ctrl-C or a raising callback). Not owned; outlives the run.
  const std::atomic<int>* stop_signal = nullptr;
  bool terminal = false;     // the progress goes to a terminal (the bar redraws in place)
  ProgressWriter progress_out;  // where progress lines go (empty: stdout; ember.fit: sys.stdout)
  std::function<void(const EpochStats&)> on_epoch;     // after each epoch (the CLI's table row)
  std::function<void(const OomEvent&)> on_oom;         // the micro-batch was halved
  std::function<void(int64_t epoch, int64_t trainable)> on_unfreeze;  // --unfreeze-after
  std::vector<std::shared_ptr<Callback>> callbacks;    // after the built-in ones, in this order
};

// What the caller of plan_run knows beyond the settings.
struct PlanInputs {
  // Whether the caller gave a setting (a flag or a --config key; a keyword argument), rather than
  // leaving its default: a default may be adapted (no flips for digits, --log-every from the run's
  // length), a given value never is.
  std::function<bool(const Setting&)> given = [](const Setting&) { return false; };
  // Given directly (on the command line, as a keyword), not from the config file; and that file.
  std::function<bool(const Setting&)> given_directly = [](const Setting&) { return false; };
  std::string config_file;
  // --resume: the run directory or one of its manifests ("" for a new run).
  std::string resume;
  RunWorld* world = nullptr;  // null: one process
  FrontEnd front_end = FrontEnd::Cli;  // whose words the plan's hints use (flags or keyword arguments)
  // A model the caller built itself (ember.fit(model=net): a module defined in Python, or a C++
  // program's own), trained instead of one built from the `model` setting, by the same rules:
  // placed on the run's device (to(): its tensors converted in place), the precision's autocast,
  // the optimizer of the settings over its parameters, checkpoints of its state_dict() by name, the
  // report and the final evaluation (which leaves the selected epoch's weights in it, as the run's
  // best checkpoint holds them). `model_name` is what the run records for it, caller_model_name()'s
  // "python:Net" (ember/train/caller_model.h): no command rebuilds it from the run's files. A resume
  // is given the same model again (a new instance of the class): the checkpoint's names and shapes
  // must fit it. It must take a (N, C, H, W) float32 batch of the data's images and give (N, classes)
  // logits (ShapeError naming the data's input otherwise); one process only.
  std::shared_ptr<nn::Module> model;
  std::string model_name;
};

struct RunPlan {
  TrainSettings settings;  // as the run uses them: adopted from a checkpoint, defaults adapted
  DeviceChoice device;
  PrecisionChoice precision;
  std::optional<Checkpoint> checkpoint;  // the resume point (a resumed run)
  std::filesystem::path run_dir;
  ModelSource model_source;

  // The data: the training samples (without those held out), the validation set (an image
  // folder's val/, a seeded --val-split share, or empty), the test set.
  data::Dataset train, val, test;
  int64_t loaded_train = 0;  // training samples before the validation split
  bool val_from_folder = false;  // the validation set is the image folder's val/
  std::string data_dir;      // where the data was read
  std::string data_details;  // an image folder's layout, size, val/ and classes ('\n' between lines)
  std::string image_folder_json;  // config.json's "image_folder" (JSON text; "" for a named dataset)
  std::string no_validation_why;  // why there is no validation set ("" when there is one)
  bool digits_unflipped = false;  // a new MNIST run without --hflip: the default flips turned off

  std::shared_ptr<nn::Module> model;
  std::string model_summary;  // the layers and shapes, for the banner
  std::string init_lines;     // --init-from: what was loaded ("" without it)
  std::string transfer_lines; // --freeze-backbone, --lr-backbone ("" without them)
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;  // null without a schedule
  bool per_step_schedule = false;
  int64_t steps_per_epoch = 0;
  int64_t schedule_epochs = 0;  // the epochs the schedule was planned over (kept by every resume)
  std::string schedule_lines;   // a resumed run's schedule against its new --epochs ("" when the same)
  // Defaults taken from the model and data (run_defaults.h): the model an image folder gets, the
  // model's recipe (optimizer, lr, weight decay), each line saying where from ("" when none).
  std::string defaults_lines;

  std::string config_json;  // config.json (one line); the engine puts it into every manifest
  FitOptions fit;           // the engine's options (RunControls add the caller's)
  RunWorld* world = nullptr;
  FrontEnd front_end = FrontEnd::Cli;

  RunPlan() = default;
  RunPlan(const RunPlan&) = delete;  // fit.val points into the plan
  RunPlan& operator=(const RunPlan&) = delete;

  // The Fitter for the plan with the caller's controls: the precision installed (autocast; fp16:
  // dynamic loss scaling), the backbone unfrozen at --unfreeze-after, the checkpoint's state
  // restored on a resume (a state that does not fit fails here, before anything is written).
  std::unique_ptr<Fitter> make_fitter(const RunControls& controls) const;
  // A new run's directory created and locked, refused when another run is there; the model spec's
  // copy and config.json written. Rank 0 only; call it once the Fitter is made.
  void claim_run_dir() const;
  // The final evaluation's options (with the micro-batch that fitted, after an out-of-memory
  // halving; `stop_signal` skips it).
  EvalOptions final_eval_options(const FitResult& r, const std::atomic<int>* stop_signal) const;
  // The report's "precision" line.
  std::string precision_summary() const;
  // What report.html shows of the run after `r` (run_report.h: write_run_report), `wall_seconds`
  // of training and final evaluation.
  RunReportInput report_input(const FitResult& r, double wall_seconds) const;

 private:
  friend std::unique_ptr<const RunPlan> plan_run(TrainSettings settings, const struct PlanInputs& inputs);
  mutable std::unique_ptr<io::RunDirLock> lock_;  // the run directory, owned while the plan lives
};

// Plans the run of `settings` (checked like their flags: SettingError with the flag's sentence).
// A resume reads its checkpoint and adopts the run's identity settings (warnings through
// ember/train/wording.h's sink); a run that has already trained its epochs is refused (nothing to
// do: the hint says how to extend it). Loads the data and builds the model; writes nothing.
std::unique_ptr<const RunPlan> plan_run(TrainSettings settings, const PlanInputs& inputs);

// Steps per metrics.jsonl step record when --log-every is not given: about 200 points on the
// report's per-step curves, however short the run, and at most 50 steps apart.
int64_t default_log_every(int64_t total_steps);

}  // namespace ember::train
