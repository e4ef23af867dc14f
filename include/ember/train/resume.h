// Where a run lives on disk, seen from a path a user gives: the run directory and the checkpoint
// manifest `ember train --resume` continues from, and the model spec a run keeps a copy of.
//
// A run directory holds config.json, metrics.jsonl, report.html, a copy of its model spec (when
// the model is a *.toml spec) and checkpoints/ with latest.json, best.json and step-N.safetensors.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace ember::train {

struct ResumePoint {
  std::filesystem::path run_dir;   // the run to continue (its checkpoints/ is rewritten)
  std::filesystem::path manifest;  // the checkpoint manifest to continue from
};

// Accepts a run directory (runs/<name>), its checkpoints/ directory, a manifest in it (latest.json,
// best.json) or a step-N.safetensors file there that one of its manifests names (continued through
// that manifest, so the run's settings and state come with it). Throws IOError when the path does
// not exist or holds no checkpoint, ValueError (with the reason and a hint) for anything else: a
// file outside a run's checkpoints/ directory, a weights file no manifest names any more.
ResumePoint find_resume_point(const std::filesystem::path& path);

// The run directory a checkpoint path (as find_resume_point accepts, or a bare .safetensors
// inside a run) belongs to; nullopt when the path is not inside a run.
std::optional<std::filesystem::path> run_dir_of(const std::filesystem::path& path);

// The run under `runs_dir` (runs/) whose last checkpoint (checkpoints/latest.json) was written most
// recently, for a hint that names a real run ("ember predict runs/mlp-... shirt.png"); nullopt when
// there is none.
std::optional<std::filesystem::path> latest_run(const std::filesystem::path& runs_dir = "runs");

// Which of a run's checkpoints `ember eval`, `predict` and `export` read (`--checkpoint best|last`):
// the best one (checkpoints/best.json: the epoch the validation set, or the test set without one,
// chose; Keras's restore_best_weights) by default, or the last one written (latest.json).
struct ChosenCheckpoint {
  std::filesystem::path path;  // what load_checkpoint reads
  std::string which;           // "best" or "last"; "" when `path` named one checkpoint file
  std::string summary;         // for the user: "the best epoch, 3 of 5 (validation accuracy 91.20%); ..."
};
// `path` as load_checkpoint accepts it. A run directory or its checkpoints/ directory resolves to
// best.json (which "best" or "") or latest.json (which "last"); a run with no best.json yet (stopped
// before its first epoch ended) gives latest.json and says so. A file is used as it is; `which`
// given with a file is a ValueError (the file is one checkpoint already). `which` other than "",
// "best" or "last" is a ValueError. Manifests are only read here, never verified (load_checkpoint does).
ChosenCheckpoint choose_checkpoint(const std::filesystem::path& path, const std::string& which);

// The file name a run keeps its model spec under: `--model path/to/my_net.toml` -> "my_net.toml".
std::string spec_copy_name(const std::string& spec_path);

// The model argument for models::create for a run's recorded model: a spec file name is the copy
// in `run_dir` when that exists (runs from before the copy recorded the path they were started
// with, which is returned unchanged); zoo names are returned unchanged.
std::string run_model(const std::string& model, const std::filesystem::path& run_dir);

// The run settings a checkpoint manifest carries (its "config" object, as `ember train` wrote it),
// read back with their types checked: a wrong-typed value is a FormatError naming the file, the key
// ("config.batch_size"), the type expected and what was found, never a JSON library exception.
class RunSettings {
 public:
  // `manifest` names the file in messages. With `required`, a missing or empty config is a
  // FormatError (the run's settings are unknown); without, it reads as having no keys.
  RunSettings(const std::string& config_json, const std::string& manifest, bool required = true);
  bool contains(const std::string& key) const;
  // T is std::string, bool, int, int64_t, uint64_t or double; integers must be integers in range.
  template <class T>
  T get(const std::string& key) const;
  // The value as a command-line flag would spell it: strings bare, numbers and booleans as JSON.
  std::string flag_text(const std::string& key) const;
  const std::string& where() const;  // "checkpoint manifest '<path>'"
  const std::string& hint() const;   // what to do about a damaged value

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ember::train
