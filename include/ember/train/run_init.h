// `ember train --init-from FILE [--init-from-partial]` (rows of the settings table): the call that
// loads the weights into a freshly built model (library: ember/train/init_from.h), and the
// fine-tuning flags that go with it (library: ember/train/transfer.h).
#pragma once

#include <string>

#include "ember/nn/module.h"
#include "ember/train/init_from.h"
#include "ember/train/settings.h"

namespace ember::train {

// Loads the weights into `model` (before it moves to its device). Returns the banner lines (what
// was loaded, cast, reinitialised; "" without --init-from). SettingError with --resume or for
// --init-from-partial alone; FormatError/IOError from the loader (naming every key that does not
// fit, with a hint naming the zoo model or --channels/--image-size the weights fit, when one does).
// `geometry`: the run's classes and input shape.
std::string init_model_from(nn::Module& model, const train::TrainSettings& settings, bool resuming,
                            const train::RunGeometry& geometry);

// --freeze-backbone, --unfreeze-after N, --lr-backbone X: freezes the backbone unless the run starts
// (`start_epoch`, 0-based; a resume's) past its frozen epochs — the engine's UnfreezeAfter callback
// unfreezes it at the epoch it should — and returns the banner lines ("" without them). SettingError for --unfreeze-after without --freeze-backbone, for a model
// without a separate classifier, and with several ranks (the gradient all-reduce expects every
// parameter's gradient).
std::string fine_tune_setup(nn::Module& model, const train::TrainSettings& settings, bool distributed,
                            int64_t start_epoch);

}  // namespace ember::train
