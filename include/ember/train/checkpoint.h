// Checkpoints: tensors in a safetensors file plus a JSON manifest that names it.
//
// Layout in a checkpoint directory:
//   step-000000123.safetensors   model parameters/buffers ("model/<name>") and optimizer state
//                                ("optim/<name>/<slot>"), written with write_file_atomic
//   latest.json / best.json      manifests; each names its weights file and that file's SHA-256
// A manifest is written only after its weights file is complete, and weights files no manifest
// names are deleted afterwards, so a crash at any point leaves latest.json naming a complete,
// verified checkpoint (the previous one, or the new one). Every weights file carries `__metadata__`
// (train/weights_info.h) so it can be evaluated on its own, copied out of its run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::train {

// The training loop's own state at a checkpoint (fit.h's engine), besides the position fields of the
// manifest: written as the manifest's "fit_state" object (format 2). A format-1 manifest kept these
// as doubles among the "optimizer" scalars under "fit." (64-bit seeds as 32-bit halves); they are
// read into this struct, so older checkpoints resume as before.
struct FitState {
  // The micro-batch and accumulation steps in use (after an out-of-memory halving); 0: the run's own.
  int64_t micro_batch = 0, accumulate = 0;
  double val_split = 0;               // the --val-split share the run selected on (0: none)
  std::optional<int64_t> val_size;    // validation samples (absent in the oldest checkpoints)
  std::optional<int64_t> best_epoch;  // the epoch of best_metric (absent: the manifest's epoch)
  std::optional<double> best_test_acc;  // that epoch's test accuracy (absent: best_metric)
  int64_t world_size = 1;             // data-parallel ranks that wrote it
  struct Rng {
    uint64_t seed = 0, offset = 0;
    bool operator==(const Rng&) const = default;
  };
  std::vector<Rng> rank_rng;          // ranks 1 .. world_size-1 (rank 0's is the manifest's "rng")
  // Mid-epoch only: the epoch's running sums so far (absent at an epoch's end).
  struct EpochSums {
    double loss_sum = 0;
    int64_t correct = 0;              // correctly classified samples so far (older files: a whole double)
    double data_time = 0, train_time = 0;
    int64_t seen = 0, skipped = 0;    // samples so far; optimizer steps the loss scaler skipped
    bool operator==(const EpochSums&) const = default;
  };
  std::optional<EpochSums> epoch;
  std::map<std::string, double> loss_scaler;  // the loss scaler's state (step.h: "loss_scale", ...)
  bool operator==(const FitState&) const = default;
};

struct CheckpointManifest {
  int format = 2;  // 2: "fit_state" (FitState); 1: the loop's state among the "optimizer" scalars
  std::string ember_version;
  std::string device;          // where it was trained, "cpu" or "cuda:0"
  std::string model;           // zoo name
  std::string dataset;
  int64_t epoch = 0;           // epochs completed
  int64_t step = 0;            // optimizer steps completed
  int64_t batch_in_epoch = 0;  // data position: batches of epoch `epoch` already consumed
  uint64_t seed = 0;           // run seed (shuffles derive from it and the epoch)
  uint64_t rng_seed = 0, rng_offset = 0;  // ember::default_generator() state (dropout, ...)
  int threads = 0;
  // The selection metric: the validation accuracy when the run holds a validation split, else the
  // test accuracy. best_metric is its best so far (the epoch is "fit.best_epoch" below), last_metric
  // its value at the last completed epoch.
  double best_metric = 0.0;
  double last_metric = 0.0;
  // The optimizer's scalars, written as "optimizer": "lr" (its current rate).
  std::map<std::string, double> optimizer_scalars;
  FitState fit;  // the training loop's own state
  std::string config_json;     // the resolved run config
  std::string weights;         // file name of the safetensors file, relative to the manifest
  std::string weights_sha256;
  // Written as the weights file's safetensors `__metadata__` (train/weights_info.h), not into the
  // manifest; ember_version, model and dataset are added from the fields above when absent.
  std::map<std::string, std::string> weights_metadata;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct Checkpoint {
  CheckpointManifest manifest;
  NamedTensors tensors;  // in file order (safetensors: sorted by name; .pth: the dict's order), on the CPU
  std::filesystem::path weights_path;  // the weights file the tensors came from (for messages)
  // How a file that is not safetensors was read ("PyTorch torch.save zip archive, the state dict
  // under key 'state_dict'"); empty for safetensors.
  std::string source_note;
  std::map<std::string, std::string> metadata;  // the weights file's `__metadata__` (empty for old files)
  const Tensor* find(const std::string& name) const;  // nullptr when absent
};

// Writes weights then `<tag>.json` (tag "latest" or "best") atomically into `dir` (created if
// missing). Fills manifest.weights/weights_sha256. Throws IOError naming the path.
void save_checkpoint(const std::filesystem::path& dir, const std::string& tag, CheckpointManifest manifest,
                     const NamedTensors& tensors);
// Marks the checkpoint a manifest already names as `tag` too (e.g. the latest is also the best).
void tag_checkpoint(const std::filesystem::path& dir, const std::string& from_tag, const std::string& to_tag);
// Deletes step-*.safetensors files that no *.json manifest in `dir` names, and stale *.tmp.* files.
void prune_checkpoints(const std::filesystem::path& dir);

// Loads a manifest (`.../latest.json`), a checkpoint directory (its latest.json), a run directory
// (its checkpoints/latest.json) or a bare weights file (empty manifest): safetensors, or PyTorch's
// torch.save .pth/.pt (zip or legacy; io/pth.h, told apart by content). Verifies the SHA-256
// and parses the weights. Throws FormatError (corrupt/truncated, naming the file and what is
// wrong, with a hint; a PyTorch pickle, ONNX model or other known non-safetensors file is named
// as such, with how to convert it) or IOError (missing).
Checkpoint load_checkpoint(const std::filesystem::path& path);

// Copies the checkpoint's tensors into `dst` by name, checking each exists with the same shape and
// dtype; `prefix` selects ("model/"). Throws FormatError naming the first missing, extra or
// mismatched tensor.
void restore_tensors(const Checkpoint& ckpt, const std::string& prefix, const NamedTensors& dst);

std::string manifest_to_json(const CheckpointManifest& m);
CheckpointManifest manifest_from_json(const std::string& text, const std::string& source);  // FormatError

}  // namespace ember::train
