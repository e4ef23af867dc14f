// The checkpoint a path names (ember/train/open_weights.h): chosen (best or last of a run),
// verified and read, with what the file says of itself and the run it belongs to.
#include "ember/train/open_weights.h"

#include "ember/train/settings.h"

namespace ember::train {

OpenedWeights open_weights(const std::string& path, const std::string& which) {
  OpenedWeights w;
  try {
    w.chosen = choose_checkpoint(path, which);
  } catch (const ValueError& e) {  // a choice that cannot apply (--checkpoint with a file): a usage error
    throw SettingError(e.what(), e.hint());
  }
  w.checkpoint = load_checkpoint(w.chosen.path);
  // A weights file copied out of its run describes itself (__metadata__, train/weights_info.h).
  w.info = weights_info_from_metadata(w.checkpoint.metadata, w.checkpoint.weights_path.string());
  w.run_dir = run_dir_of(w.chosen.path);
  return w;
}

}  // namespace ember::train
