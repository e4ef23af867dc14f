// `--checkpoint best|last` of eval, predict and export: train::choose_checkpoint, with a choice that
// cannot apply (a checkpoint file given with --checkpoint) turned into a usage error (exit 2).
#pragma once

#include <filesystem>
#include <string>

#include "cli.h"
#include "ember/train/resume.h"

namespace ember::cli {

inline train::ChosenCheckpoint chosen_checkpoint(const std::filesystem::path& path, const std::string& which) {
  try {
    return train::choose_checkpoint(path, which);
  } catch (const ValueError& e) {
    throw UsageError(e.what(), e.hint());
  }
}

}  // namespace ember::cli
