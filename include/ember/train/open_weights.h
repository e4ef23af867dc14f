// The checkpoint a path names, by the one rule every reader shares: `ember eval`, `predict`,
// `export`, ember.load and `ember train --init-from`. A run directory (or its checkpoints/) gives
// its best checkpoint or its last; a manifest or a weights file is read as it is.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"
#include "ember/train/weights_info.h"

namespace ember::train {

// The weights a path names: a run directory (or its checkpoints/) gives its best checkpoint
// (`which` "best" or "") or its last ("last"); a manifest or a weights file is read as it is.
// Verified and parsed (load_checkpoint); SettingError for a `which` that cannot apply (a file given
// with --checkpoint), IOError/FormatError from the reader.
struct OpenedWeights {
  ChosenCheckpoint chosen;
  Checkpoint checkpoint;
  WeightsInfo info;  // what the weights file says of itself (__metadata__)
  std::optional<std::filesystem::path> run_dir;  // the run it belongs to, when inside one
};
OpenedWeights open_weights(const std::string& path, const std::string& which = "");

}  // namespace ember::train
