// `ember train`'s run-directory safety: what --resume may point at, the lock that makes one process
// own a run, and the model spec copy a run keeps. (The run's settings read back from a checkpoint
// are ember/train/settings.h's adopt_run_settings.) Nothing here writes before it is asked to.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "ember/core/generator.h"
#include "ember/io/run_dir.h"
#include "ember/nn/module.h"
#include "ember/train/resume.h"
#include "ember/train/wording.h"

namespace ember::train {

// --resume PATH: the run and manifest to continue (see train::find_resume_point). A resume
// continues its run in place, so a --run-dir or --name naming another directory is refused
// (SettingError with the reason and the fix) instead of rewriting that directory's checkpoints.
train::ResumePoint resume_point(const std::string& resume, const std::string& run_dir_flag, const std::string& name_flag);

// Owns `run_dir` for this process (io::RunDirLock); another live owner is a SettingError (exit 2)
// naming its pid.
std::unique_ptr<io::RunDirLock> lock_run_dir(const std::filesystem::path& run_dir);

// A fresh run may not start in a directory that already holds one (SettingError; the hint names
// the resume and the settings that pick another directory as `front_end` spells them).
void refuse_existing_run(const std::filesystem::path& run_dir, FrontEnd front_end = FrontEnd::Cli);

// A new run's directory: `run_dir` when given, else runs/<name>, else runs/<model>-<data>-<time>
// (`generated_name`), with "-2", "-3", ... added to a generated name whose directory exists (as
// Lightning numbers its version_N), so every run gets its own directory; a directory given by
// name or path that holds a run is refused (refuse_existing_run). `name` is set to the run's name.
std::filesystem::path new_run_dir(std::string& name, const std::string& run_dir, const std::string& generated_name,
                                  FrontEnd front_end = FrontEnd::Cli);

// The model of a run: a zoo name, or a spec file read once, so that the model built and the copy
// kept in the run directory are the same bytes. `name` is what the run records: the zoo name, or
// the spec's file name (the copy's, resolved against the run directory by eval, predict, resume).
struct ModelSource {
  std::string name;
  std::string spec_text;    // empty for a zoo model
  std::string spec_origin;  // where the spec was read from (for messages)
  bool is_spec() const { return !spec_origin.empty(); }
  // For run names: the zoo name, or the spec file's stem ("my_net" for path/to/my_net.toml), or a
  // caller's model's class ("Net" for "python:Net").
  std::string label() const;
};
// `model` as given or recorded; `run_dir` (on --resume) is where a recorded spec's copy lives.
// IOError when a spec file cannot be read.
ModelSource model_source(const std::string& model, const std::filesystem::path& run_dir);
std::shared_ptr<nn::Module> build_model(const ModelSource& m, int64_t num_classes, int64_t channels, int64_t image_size,
                                        Generator* gen);
// Writes the spec copy into the run directory (atomically); nothing for a zoo model.
void keep_spec_copy(const ModelSource& m, const std::filesystem::path& run_dir);

}  // namespace ember::train
